// cli.h — what every command file shares: the parsed options and the command bits. The CLI is a
// client of the library like any embedder; only it prints diagnostics or chooses exit codes:
// 0 ok, 1 runtime or data error, 2 usage error (msg.h). Each job has its own header: options.h,
// commands.h, models.h, prompts.h, workers.h, io_check.h, process.h and the rest.
#ifndef NL_CLI_H
#define NL_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "msg.h"
#include "normlab_lab.h"

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

// A comma-separated list of integers (bench's -p, -n, -t), validated by its option's row.
#define INT_LIST_MAX 32
typedef struct {
    long items[INT_LIST_MAX];
    int n;  // 0: not given
} IntList;

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
    int kl_from_base;  // eval --kl given bare: compare with the --kl-base file (llama-perplexity's form)
    IntList bench_prompt, bench_gen, bench_threads;  // bench: -p, -n, -t (n 0: the defaults)
    int bench_format;  // BENCH_*
    long n_new;
    NlSamplerParams sampling;
    uint64_t seed;
    int has_seed;  // --seed given (and not -1)
    int norm, placement;  // -1: as configured
    int qk_norm;  // NlQkNorm: 0 (NL_QK_NORM_AS_CONFIGURED) as configured
    int bn_stats;  // NlBnStats; compare also BN_STATS_BOTH (a row with each)
    int threads;  // engine worker threads; OpenBLAS threads for large sgemv
    int exact_window, skip_unknown, special, json, echo, ignore_eos;
    int ids_only, no_bos;  // tokenize --ids (the ids alone, as llama-tokenize prints them), --no-bos
    long stride;  // 0: T/2
    long chunk;  // eval: llama-perplexity's chunks of this many tokens (0: windows at the stride)
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
    int lens_scale;  // NlLensScale of the lens (eval, compare)
    int outliers;  // compare: the outlier statistics
    int attention;  // compare: the attention statistics
    const char *attention_pattern;  // compare: "LAYER.HEAD", the head whose full pattern is kept (NULL: none)
    const char **models;  // compare: the models, -m and positional, in the order given
    int n_models;
    int layers;  // profile --layers: the full layer x component table instead of the summary
    int qtype;  // quantize --type: the NlDType every matrix is stored as
    int allow_requantize;  // quantize --allow-requantize: a q8_0 or q4_0 model quantized again
    const char *keep;  // quantize --keep: comma-separated names of matrices kept float32
    int center, force;  // fold --center, --force; compare --center: a centred folded row too
    int fold;  // compare --fold: a folded row per transformer
    const char *clean, *corrupt;  // patch --clean, --corrupt: the two texts
    int target, foil;  // patch --target, --foil: token ids (-1: each run's top token)
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
    CMD_QUANTIZE = 512,
    CMD_FOLD = 1024,
    CMD_PATCH = 2048,
    CMD_ALL = 4095
};
enum { BENCH_MD, BENCH_TEXT, BENCH_CSV, BENCH_JSON };  // bench --format
enum { BN_STATS_BOTH = 2 };  // --bn-stats both (compare)

#endif
