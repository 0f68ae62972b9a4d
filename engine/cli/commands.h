// commands.h — the command table (commands_table.c) and each command's entry point.
#ifndef NL_CLI_COMMANDS_H
#define NL_CLI_COMMANDS_H

#include <stddef.h>

#include "cli.h"
#include "options.h"

// One row of the command table: dispatch and help read it.
typedef struct Command {
    const char *name;
    unsigned bit;  // CMD_*
    const char *summary;  // one line, for `normlab --help`
    const char *usage;  // after "usage: normlab NAME "
    const char *about;  // the paragraph of `normlab help NAME`
    const char *positional;  // compare: "MODEL" (and its help below); NULL: none taken
    const char *positional_help;
    int (*run)(Options *o);
    const OptSpec *options;  // its rows, ending in OPT_END
    const OptRelation *relations;  // ending in REL_END
} Command;

extern const Command COMMANDS[];
extern const size_t N_COMMANDS;
const Command *find_command(const char *name);

// The commands (one file per family).
int cmd_generate(Options *o);
int cmd_eval(Options *o);
int cmd_logits(Options *o);
int cmd_compare(Options *o);
int cmd_tokenize(Options *o);
int cmd_info(Options *o);
int cmd_list(Options *o);
int cmd_profile(Options *o);
int cmd_bench(Options *o);
int cmd_quantize(Options *o);
int cmd_fold(Options *o);
int cmd_patch(Options *o);

#endif
