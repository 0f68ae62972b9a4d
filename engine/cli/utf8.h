// utf8.h — UTF-8 as the command line writes it: a streamed token's unfinished character held back,
// and bytes that are not UTF-8 shown as U+FFFD (text and JSON output).
#ifndef NL_CLI_UTF8_H
#define NL_CLI_UTF8_H

#include <stddef.h>

// How many of s[0..len)'s last bytes (0 to 3) begin a UTF-8 character that more bytes could still
// complete: a stream of tokens holds them back until the character is whole.
size_t utf8_pending(const char *s, size_t len);

// s[0..len) with each byte that is not part of valid UTF-8 as U+FFFD, into out (room for 3 len + 1
// bytes), NUL-terminated; returns the length written.
size_t utf8_repair(const char *s, size_t len, char *out);

#endif
