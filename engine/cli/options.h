// options.h — the option rows (options_table.c) and the parser that reads them (options.c).
#ifndef NL_CLI_OPTIONS_H
#define NL_CLI_OPTIONS_H

#include <stddef.h>

#include "cli.h"
#include "commands.h"

// What an option's value is, and where it goes (OptSpec.field, an offset into Options).
typedef enum {
    OT_HELP,  // -h, --help: prints the command's help
    OT_FLAG,  // no value: stores OptSpec.value into an int
    OT_STRING,  // a const char *
    OT_MODELS,  // compare's -m: appended to the models, beside the positional ones
    OT_LIST,  // repeatable: appended to the StrList at field
    OT_INT,  // an int in [lo, hi] (a larger hi is accepted and stored as INT_MAX)
    OT_LONG,  // a long in [lo, hi]
    OT_DOUBLE,  // a double in [dlo, dhi] (OPT_MIN_OPEN: above dlo; OPT_ZERO_OK: 0 too)
    OT_SEED,  // -1 (random) or a uint64_t: Options.seed and has_seed
    OT_CHOICE  // a word of OptSpec.choices, any case, through OptSpec.choose into an int
} OptType;
enum { OPT_MIN_OPEN = 1, OPT_ZERO_OK = 2 };

// One row of the option table (options_table.c): parsing, `normlab help CMD`, the man page, the
// completion and docs/cli.md all read these rows. A name may have several rows for disjoint sets of
// commands (-f is the prompt of generate and the text of eval).
typedef struct {
    const char *name;  // the long name, without "--"
    const char *alias;  // other exact long names, space-separated (llama.cpp's "temp"), or NULL
    char letter;  // the short option, or 0
    OptType type;
    const char *arg;  // the value's name in help ("N", "FILE"), NULL for flags
    long long lo, hi;  // OT_INT, OT_LONG: the accepted range
    double dlo, dhi;  // OT_DOUBLE
    int flags;  // OPT_MIN_OPEN, OPT_ZERO_OK
    const char *range;  // the accepted values in words: "an integer in [1, 256]"
    const char *def;  // the default as a value, applied before parsing; NULL: none (or def_text)
    const char *def_text;  // the default in words where it is not a value ("every CPU"), or NULL
    unsigned commands;  // CMD_* bits
    size_t field;  // offsetof(Options, ...)
    int value;  // OT_FLAG: the value stored
    int (*choose)(const char *word, int *out);  // OT_CHOICE: 0 and *out, or -1
    const char *choices;  // OT_CHOICE: the words, space-separated (help, completion)
    const char *help;  // one sentence or a few; help wraps it
} OptSpec;

extern const OptSpec OPTIONS[];
extern const size_t N_OPTIONS;

// Parses argv (argv[0] is the command) into o for cmd, after the table's defaults; returns 0, -1 for
// --help, or EXIT_USAGE with the message printed (with a "did you mean" for a near miss). o->models
// is a new array (free it) holding compare's models, -m and positional, in the order given.
int options_parse(Options *o, const Command *cmd, int argc, char **argv);
void options_free(Options *o);  // what options_parse allocated
// The row of the long option `name` (exact name or alias) for cmd, or NULL.
const OptSpec *option_find(unsigned cmd, const char *name, size_t len);

#endif
