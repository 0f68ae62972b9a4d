// cli.h — what the command files share: the parsed options, the command table's row, and the
// steps every command takes (find and load a model, read a text, check outputs). The CLI is a
// client of the library like any embedder; only it prints diagnostics or chooses exit codes:
// 0 ok, 1 runtime or data error, 2 usage error.
#ifndef NL_CLI_H
#define NL_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "msg.h"
#include "normlab_lab.h"
#include "output.h"

#define TEXT_CAP ((size_t)1 << 30)
#define DEFAULT_MODEL "shakespeare-pre-ln"

// The OpenBLAS kernel family the process runs, and who chose it.
typedef struct {
    char reported[64];  // the family OpenBLAS picked by itself (before normlab asked for another)
    const char *source;  // "openblas", "environment" (OPENBLAS_CORETYPE was set) or "normlab"
} BlasChoice;

// A repeatable option's values, in the order given (items: room for every argument).
typedef struct {
    const char **items;
    int n;
} StrList;

typedef struct {
    const char *cmd;
    BlasChoice blas;
    const char *model;  // -m: a path, or a name looked up in the model search path
    const char *prompt;
    const char *prompt_file;  // -f for generate, profile, logits
    const char *start;  // --start (nanoGPT's): the prompt, or FILE:PATH its file
    int interactive;  // generate -i: turns of a line read, then text generated, on one cache
    int escape;  // -e: -p's text and --stop's with escapes (\n, \t, \\, \xHH, \uXXXX) processed
    StrList stops;  // --stop: a stream ends before the first of these in its new text
    char **owned;  // the texts -e rewrote (-p's and --stop's), freed by options_free
    int n_owned;
    const char *text_file;  // -f / --text for eval and compare
    const char *output;  // -o: the main result to this file ("-": stdout)
    const char *kl_base, *kl;  // eval: write the reference log-probabilities; compare with them
    const char *bench_prompt, *bench_gen, *bench_threads;  // bench: comma-separated lists (NULL: the defaults)
    int bench_format;  // BENCH_*
    long n_new;
    NlSamplerParams sampling;
    uint64_t seed;
    int has_seed;  // --seed given (and not -1)
    int norm, placement;  // -1: as configured
    int bn_stats;  // NlBnStats; compare also BN_STATS_BOTH (a row with each)
    int threads;  // engine worker threads; OpenBLAS threads for large sgemv
    int exact_window, skip_unknown, special, json, echo;
    long stride;  // 0: T/2
    long segments;  // eval of a recurrent model: independent parts run together (0: 1)
    int profile, counters;
    const char *trace_out, *csv_out, *plot_dir;
    int also_swap, invariance, repeats;
    int samples;  // generate: streams decoded together
    int batch;  // eval: windows per call; generate: streams per group (0: default)
    int no_mmap;  // read the weights into memory instead of mapping them
    int no_repack;  // no transposed copies of weights: the file's layout only
    int check_weights;  // info: read every weight (the non-finite check), as a run's load does
    int warmup;  // generate: one untimed pass over the prompt first
    int quantize;  // NlQuant of the weights at load (compare: the float32 rows only, see quantize_rows)
    int quantize_only;  // NL_MATRIX_* bits of the matrices rounded (0: all)
    int quantize_act;  // NlQuant of every linear's input rows (compare: adds a row per model)
    int quantize_rows;  // compare: bits (1 << NlQuant) of the weight quantizations to add rows for
    int lens;  // compare: the logit lens
    int outliers;  // compare: the outlier statistics
    const char **models;  // compare: the models, -m and positional, in the order given
    int n_models;
    int layers;  // profile --layers: the full layer x component table instead of the summary
    int closed_std;  // CLOSED_STDIN | CLOSED_STDOUT | CLOSED_STDERR: closed at start (now /dev/null)
} Options;

// The standard descriptors found closed when normlab started (main.c reopens them on /dev/null).
enum { CLOSED_STDIN = 1, CLOSED_STDOUT = 2, CLOSED_STDERR = 4 };

// The commands, as bits: an option row names the commands it applies to.
enum {
    CMD_GENERATE = 1,
    CMD_EVAL = 2,
    CMD_INFO = 4,
    CMD_LIST = 8,
    CMD_LOGITS = 16,
    CMD_PROFILE = 32,
    CMD_COMPARE = 64,
    CMD_TOKENIZE = 128,
    CMD_BENCH = 256,
    CMD_ALL = 511
};
enum { BENCH_MD, BENCH_TEXT, BENCH_CSV, BENCH_JSON };  // bench --format
enum { BN_STATS_BOTH = 2 };  // --bn-stats both (compare)

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

// One row of the command table: dispatch and help read it.
typedef struct {
    const char *name;
    unsigned bit;  // CMD_*
    const char *summary;  // one line, for `normlab --help`
    const char *usage;  // after "usage: normlab NAME "
    const char *about;  // the paragraph of `normlab help NAME`
    const char *positional;  // compare: "MODEL" (and its help below); NULL: none taken
    const char *positional_help;
    int (*run)(Options *o);
} Command;

extern const Command COMMANDS[];
extern const size_t N_COMMANDS;
const Command *find_command(const char *name);

// options.c
// Parses argv (argv[0] is the command) into o for cmd, after the table's defaults; returns 0, -1 for
// --help, or EXIT_USAGE with the message printed (with a "did you mean" for a near miss). o->models
// is a new array (free it) holding compare's models, -m and positional, in the order given.
int options_parse(Options *o, const Command *cmd, int argc, char **argv);
void options_free(Options *o);  // what options_parse allocated
size_t edit_distance(const char *a, const char *b);
// The row of the long option `name` (exact name or alias) for cmd, or NULL.
const OptSpec *option_find(unsigned cmd, const char *name, size_t len);

// help.c
int help_main(FILE *f);  // `normlab --help`: the commands from the table
int help_command(FILE *f, const Command *c);  // `normlab help CMD`: its usage, paragraph and rows
int help_options_table(FILE *f);  // `normlab help --options-table`: every row, tab-separated
int help_markdown(FILE *f);  // `normlab help --markdown`: docs/cli.md
int help_man(FILE *f);  // `normlab help --man`: the man page's COMMANDS section, in roff (tools/dev/make_man.sh)

// common.c
int exit_code(const NlError *err);  // NL_ERR_ARG: 2; every other code: 1
int fail(const NlError *err);  // prints err's message; returns exit_code(err)
const char *plural(size_t n);
int check_stdout(int ok);
// "cannot write to standard output: it is closed"; returns EXIT_DATA.
int stdout_closed(void);
// Before any work: EXIT_DATA with the message when the command's result is meant for a standard
// output that was closed at start, or its text for a closed standard input ("-f -", "--text -").
int check_std_streams(const Options *o);
int print_text(const char *text);
int available_cpus(void);
const char *beside_binary(const char *rel, char *buf, size_t len);
// The model the options name, resolved (docs/usage.md), into buf; the name itself when
// it is found nowhere (loading will say so). A buffer of 4400 bytes holds every path that loads.
const char *model_path(const Options *o, char *buf, size_t len);
// The path -m NAME loads, into buf; NULL when it is found nowhere or its path does not fit buf.
const char *resolve_model(const char *name, char *buf, size_t len);
// The folders searched for models by name, in order, ':'-separated: $NORMLAB_MODELS, weights/
// beside the binary, the installed share/normlab/models. A new string, or NULL out of memory.
char *model_search_path(void);
// A model found by name: what `list` shows, and what -m NAME loads unless shadowed.
typedef struct {
    char *name;  // as -m takes it: the folder's or the file's name, without ".json"
    char *path;  // the search folder's path and the entry's name
    int shadowed;  // an earlier entry has the same name: -m NAME loads that one
} ModelEntry;
// Every model in the search path, folder by folder in search order, each folder's in byte order of
// their names, as many as there are. Returns 0, or -1 out of memory; free *e with
// model_entries_free either way.
int model_entries(ModelEntry **e, size_t *n);
void model_entries_free(ModelEntry *e, size_t n);
int load_model(const Options *o, NlModel **model);
// A sampler of the options' parameters for model (--repeat-last-n -1: the model's context, at most
// 1048576 for a recurrent one), seeded so, its penalties' history starting with the prompt's
// ids[0..n) (llama.cpp's accept of the prompt). An exit status, the message printed.
int make_sampler(const Options *o, const NlModel *model, uint64_t seed, const int *ids, size_t n, NlSampler **out);
// What --quantize and --quantize-act round, in words ("weights q8 (attn,mlp), activations q8") into
// buf; NULL when nothing is rounded.
const char *rounding_text(const Options *o, char *buf, size_t cap);
// The same, with the NL_MATRIX_* classes --quantize rounded into *rounded (may be NULL).
int load_model_rounded(const Options *o, NlModel **model, unsigned *rounded);
// The same, with shapes_only 1 for a command that describes the model and runs nothing (info,
// tokenize, list): no weight is read (NlLoadOptions.shapes_only), so a NaN weight is not seen.
int load_model_as(const Options *o, NlModel **model, unsigned *rounded, int shapes_only);
int make_state_as(const Options *o, const NlModel *model, int batch, int product_threads, int warn, NlState **state);
// The most positions the model sees at once: block_size, or SIZE_MAX for a recurrent model (no window).
size_t model_context(const NlModel *model);
// Whether the model's family reads a window of positions (a transformer); 0: a state carries any length.
int model_windowed(const NlModel *model);
// What the model's tokens are, for messages: "character" (a char tokenizer) or "token" (BPE).
const char *token_unit(const NlModel *model);
// "layernorm/pre" (norm/placement) for a transformer run, "lstm/none" for a recurrent one, into buf.
const char *run_name(char *buf, size_t size, const NlConfig *model, NlNormType norm, NlPlacement placement);
int encode(const NlModel *model, const char *what, const char *text, size_t len, int flags, int **ids, size_t *n,
           size_t *skipped);
int read_text(const char *path, char **buf, size_t *len);
// The prompt as given (-p, or -f's file read whole) into a new buffer *text of *len bytes.
int prompt_read(const Options *o, char **text, size_t *len);
// Encodes *text (*len bytes, owned: it may be replaced) for model into a new *ids of *n: an empty
// prompt, or one with nothing known left after --skip-unknown, becomes "\n". Messages name it `what`.
int prompt_encode(const Options *o, const NlModel *model, const char *what, char **text, size_t *len, int **ids,
                  size_t *n);
// Reads the prompt (from -p or -f, else the command's default prompt when the vocabulary has its
// characters) and encodes it: prompt_read, then prompt_encode.
// With neither -p nor -f, default_prompt (when not NULL) is the prompt where the vocabulary has its
// characters; *fell_back (when not NULL) says when it did not, and the run starts from a newline.
int prompt_ids(const Options *o, const NlModel *model, const char *default_prompt, int **ids, size_t *n, char **text,
               size_t *len, int *fell_back);
int check_outputs(const Options *o, const char *const *outputs, size_t n_out);

// One run state per engine worker thread, and with profiling one profiler per state.
typedef struct {
    int n;
    NlState **states;  // (n)
    NlProfiler **profs;  // (n) NULL entries when not profiling
} Workers;
// Creates n states of `batch` sequences, each product's rows split over product_threads threads
// (NlRunOptions.threads; the first warns when the norm or placement are overridden); with profile,
// a profiler per state with room for n_forward forward calls each. Returns 0 or an exit status
// after printing the message; free with workers_free either way.
int workers_create(Workers *w, const Options *o, const NlModel *model, int n, int batch, int product_threads,
                   int profile, size_t n_forward);
// The workers' profiles merged into the first profiler, or NULL when not profiling.
NlProfiler *workers_profile(Workers *w);
void workers_free(Workers *w);
uint64_t seed_from_os(void);
int spawn_wait(char *const *argv);
// Opens -o (or stdout when absent) as *out for the command's main result.
int open_main_output(const Options *o, OutFile *out);

// stops.c: --stop's filter, one per stream. Set .stops (none: n 0, every byte passes at once).
typedef struct {
    const StrList *stops;  // --stop (none: n 0)
    char *text;  // (cap) text[out..n): new text held back while it may still begin a stop text
    size_t n, out, cap;  // text[0..out) went out at the last push
} StopFilter;
// A token's bytes through f: *out, *n_out the text that may now go out (borrowed until the next
// call). Returns 0; 1 when a stop text was found (the text out ends where it starts, *which is its
// index, and f starts over empty); -1 when out of memory.
int stop_filter_push(StopFilter *f, const char *bytes, size_t len, const char **out, size_t *n_out, int *which);
size_t stop_filter_held(const StopFilter *f);  // the bytes held back now
// The end of a stream: the text still held back, to go out (f starts over empty).
void stop_filter_flush(StopFilter *f, const char **out, size_t *n_out);
void stop_filter_free(StopFilter *f);

// stream.c: generated text to an output as it comes, flushed per token: never a broken UTF-8
// character (its start waits for the rest), never a --stop text (what may begin one waits).
#define HELD_MAX 3  // the start of a UTF-8 character: at most 3 of its 4 bytes
typedef struct {
    const NlTokenizer *tok;
    FILE *out;
    int write_failed;  // an errno once a write failed
    char held[HELD_MAX];  // the start of a UTF-8 character that a later token completes (BPE), not yet written
    size_t n_held;
    StopFilter stop;  // --stop's filter of the text (stop_filter_free it when done)
} EmitCtx;
// One token's bytes to e->out: NL_EMIT_CONTINUE, NL_EMIT_DONE when a stop text ended the stream (the
// text before it written), NL_EMIT_STOP when a write failed. An NlEmitFn's body.
int emit_token(int token, void *ctx);
// The end of a stream: the held-back text written, a character left unfinished as U+FFFD; 0 or 1 (failed).
int emit_end(EmitCtx *e);

// escape.c
// -e's escapes in text (a NUL-terminated argument) into a new *out of *len bytes; EXIT_USAGE with
// "WHAT: unknown escape ..." printed when one is not known.
int unescape(const char *what, const char *text, char **out, size_t *len);

// kl.c: eval's per-position record (the lab's, normlab_lab.h) and its --kl-base file
typedef struct {
    NlKlRecord pos;  // per-token losses, the base's rows, and against them the KL of each position
    uint64_t hash;  // of the text's token ids
    int segments;  // how the text was cut: 0 windows at a stride, 1 a recurrent model's segments
    size_t cut;  // that stride, or that count
} KlRecord;
// A record for n_ids tokens of a V-word model: per_token losses, this run's rows for base_out, or
// base_in's rows read and checked (its vocabulary, its text, finite). An exit status, the message
// printed; free with kl_record_free either way.
int kl_record_init(KlRecord *r, const char *base_out, const char *base_in, int per_token, size_t V, const int *ids,
                   size_t n_ids, int segments, size_t cut);
void kl_record_free(KlRecord *r);
int kl_base_read(KlRecord *r, const char *path);
int kl_base_write(FILE *f, const KlRecord *r);  // 0, or -1 when a write failed

// The commands (one file per family).
int cmd_generate(Options *o);
int cmd_eval(Options *o);
int cmd_logits(Options *o);
int cmd_compare(Options *o);
int cmd_tokenize(Options *o);
// The tokenizer flags the options ask for (--skip-unknown, --special).
int encode_flags(const Options *o);
int cmd_info(Options *o);
int cmd_list(Options *o);
int cmd_profile(Options *o);
int cmd_bench(Options *o);
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
