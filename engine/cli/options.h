// options.h — the option rows (each command's in its cmd_*.c) and the parser that reads them (options.c).
#ifndef NL_CLI_OPTIONS_H
#define NL_CLI_OPTIONS_H

#include <stddef.h>

#include "cli.h"

typedef struct Command Command;  // commands.h

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
    OT_CHOICE,  // a word of OptSpec.choices, any case, through OptSpec.choose into an int
    OT_INT_LIST  // integers in [lo, hi], comma-separated, at most INT_LIST_MAX: an IntList
} OptType;
// OPT_VALUE_OPTIONAL: a value-taking row that may also stand bare (the last argument, or an option
// next), as llama-perplexity's --kl-divergence does: then the int at bare_field is set to 1.
enum { OPT_MIN_OPEN = 1, OPT_ZERO_OK = 2, OPT_VALUE_OPTIONAL = 4 };

// One row of a command's options (its cmd_*.c, option_rows.h): parsing, `normlab help CMD`, the
// man page, the completion and docs/cli.md all read these rows. A name may have different rows in
// different commands (-f is the prompt of generate and the text of eval).
typedef struct {
    const char *name;  // the long name, without "--"
    const char *alias;  // other exact long names, space-separated (llama.cpp's "temp"), or NULL
    char letter;  // the short option, or 0
    OptType type;
    const char *arg;  // the value's name in help ("N", "FILE"), NULL for flags
    long long lo, hi;  // OT_INT, OT_LONG, OT_INT_LIST: the accepted range
    double dlo, dhi;  // OT_DOUBLE
    int flags;  // OPT_MIN_OPEN, OPT_ZERO_OK, OPT_VALUE_OPTIONAL
    const char *range;  // the accepted values in words: "an integer in [1, 256]"
    const char *def;  // the default as a value, applied before parsing; NULL: none (or def_text)
    const char *def_text;  // the default in words where it is not a value ("every CPU"), or NULL
    size_t field;  // offsetof(Options, ...)
    size_t bare_field;  // OPT_VALUE_OPTIONAL: offsetof(Options, an int) set to 1 when the option stands bare
    int value;  // OT_FLAG: the value stored
    int (*choose)(const char *word, int *out);  // OT_CHOICE: 0 and *out, or -1
    const char *choices;  // OT_CHOICE: the words, space-separated (help, completion)
    // OT_CHOICE whose words are a table's (the placements): writes them into buf, as range's words
    // (as_range 1) or as choices'; range and choices are then NULL
    void (*words)(char *buf, size_t cap, int as_range);
    const char *help;  // one sentence or a few; help wraps it
} OptSpec;
// s's range and choices in words, from its words function where it has one (buf: room for them).
const char *option_range(const OptSpec *s, char *buf, size_t cap);
const char *option_choices(const OptSpec *s, char *buf, size_t cap);

// Each command's rows, ending in a row with no name (OPT_END).
extern const OptSpec GENERATE_OPTIONS[], EVAL_OPTIONS[], INFO_OPTIONS[], LIST_OPTIONS[], LOGITS_OPTIONS[],
    PROFILE_OPTIONS[], COMPARE_OPTIONS[], BENCH_OPTIONS[], TOKENIZE_OPTIONS[], QUANTIZE_OPTIONS[], FOLD_OPTIONS[],
    PATCH_OPTIONS[];

// When an option counts as given for a relation, from its field in the parsed Options.
typedef enum {
    WHEN_TEXT,  // a const char * that is set (and with .text, equal to it: "-f -")
    WHEN_ABOVE,  // an int above .bound (0: set; 1: --samples 2 and up)
    WHEN_LONG_ABOVE,  // a long above .bound (0: set: --stride, --chunk)
    WHEN_BELOW  // a long below .bound (-n -1)
} OptWhenKind;
typedef struct {
    OptWhenKind kind;
    size_t field;  // offsetof(Options, ...)
    long bound;
    const char *text;
} OptWhen;
#define GIVEN_TEXT(f) \
    { WHEN_TEXT, offsetof(Options, f), 0, NULL }
#define GIVEN_AS(f, t) \
    { WHEN_TEXT, offsetof(Options, f), 0, t }
#define GIVEN_INT(f) \
    { WHEN_ABOVE, offsetof(Options, f), 0, NULL }
#define GIVEN_LONG(f) \
    { WHEN_LONG_ABOVE, offsetof(Options, f), 0, NULL }
#define GIVEN_ABOVE(f, n) \
    { WHEN_ABOVE, offsetof(Options, f), n, NULL }
#define GIVEN_BELOW(f, n) \
    { WHEN_BELOW, offsetof(Options, f), n, NULL }

// A relation between two of a command's options, checked after parsing (options_check), as git's
// parse-options checks incompatible options: REL_CONFLICTS, a and b not both; REL_REQUIRES, a only
// with b. The message is the usage error; a "%d" in it stands for b's value (a count).
typedef enum { REL_CONFLICTS, REL_REQUIRES } OptRelKind;
typedef struct {
    OptRelKind kind;
    OptWhen a, b;
    const char *message;  // NULL: the end of a command's relations
} OptRelation;
#define CONFLICTS(a, b, message) \
    { REL_CONFLICTS, a, b, message }
#define REQUIRES(a, b, message) \
    { REL_REQUIRES, a, b, message }
#define REL_END \
    { REL_CONFLICTS, GIVEN_INT(json), GIVEN_INT(json), NULL }

extern const OptRelation GENERATE_RELATIONS[], EVAL_RELATIONS[], INFO_RELATIONS[], LOGITS_RELATIONS[],
    PROFILE_RELATIONS[], COMPARE_RELATIONS[], TOKENIZE_RELATIONS[], FOLD_RELATIONS[], PATCH_RELATIONS[], NO_RELATIONS[];

// Parses argv (argv[0] is the command) into o for cmd, after the table's defaults; returns 0, -1 for
// --help, or EXIT_USAGE with the message printed (with a "did you mean" for a near miss). o->models
// is a new array (free it) holding compare's models, -m and positional, in the order given.
int options_parse(Options *o, const Command *cmd, int argc, char **argv);
void options_free(Options *o);  // what options_parse allocated
// The row of the long option `name` (exact name or alias) for cmd, or NULL.
const OptSpec *option_find(const Command *cmd, const char *name, size_t len);
// The first of the command's relations that the options break, its message printed: EXIT_USAGE; else 0.
int options_check(const Options *o, const Command *cmd);

#endif
