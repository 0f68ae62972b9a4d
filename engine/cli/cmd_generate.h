// cmd_generate.h — the run generate and profile share (cmd_generate.c), and generate -i's entry (cmd_interactive.c).
#ifndef NL_CLI_CMD_GENERATE_H
#define NL_CLI_CMD_GENERATE_H

#include "cli.h"

int generate_interactive(Options *o);  // generate -i (cmd_interactive.c)
// How a run of generate's path presents itself. generate: its text is the result, a seed drawn from
// the OS is said, --profile reports on stderr. profile: the text is decoded and dropped, the seed is
// 0 unless given, and the profile is the result, after a "prompt:" line saying where the prompt
// came from (the default_prompt when none is given and the vocabulary has its characters).
typedef struct {
    int keep_text;  // the generated text goes to the output (0: decoded, then dropped)
    int draw_seed;  // without --seed, a seed from the OS, said on stderr (0: seed 0)
    int profile_result;  // the profile is the result, on the main output (0: on stderr with --profile)
    const char *default_prompt;  // the prompt when -p and -f are not given (NULL: a newline)
} RunMode;
int generate_run(Options *o, const RunMode *mode);

#endif
