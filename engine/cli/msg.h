// msg.h — one-line messages that cannot lie. Every byte that came from outside (a path, a key, a
// prompt character) is shown, never obeyed: C0 and C1 controls, DEL, U+2028/2029 and the bidi
// controls U+202A-202E and U+2066-2069 as \n, \t, \r or \uXXXX, bytes that are not UTF-8 as \xNN.
// A message too long for the line keeps its start and its end and loses the middle ("…").
#ifndef NL_CLI_MSG_H
#define NL_CLI_MSG_H

#include <stddef.h>

// The exit statuses (docs/files.md): 0 ok, 1 a runtime or data error, 2 a usage error.
enum { EXIT_DATA = 1, EXIT_USAGE = 2, EXIT_INTERRUPTED = 130 };  // (130: 128 + SIGINT, as the shell says)

// Writes s escaped into out (cap bytes, NUL-terminated); when it does not fit, the middle of the
// escaped text is replaced by "…". Returns out.
char *msg_escape(char *out, size_t cap, const char *s);

// stderr: "normlab: " and the formatted message, escaped as one line, then a newline, in one write.
void msg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// The same with "normlab CMD: " and " (see 'normlab help CMD')" around it.
void msg_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
