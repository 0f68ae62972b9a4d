// option_rows.h — the option rows more than one command shares, one macro each, as git's OPT_*
// macros: a command's array (in its cmd_*.c) lists them beside its own rows, so that an option
// shared by several commands is still declared once. Ends with OPT_END, the arrays' last row.
#ifndef NL_CLI_OPTION_ROWS_H
#define NL_CLI_OPTION_ROWS_H

#include <limits.h>
#include <stddef.h>

#include "option_choices.h"
#include "options.h"

#define OPT_FIELD(x) offsetof(Options, x)
#define NORM_WORDS "layernorm, rmsnorm, batchnorm, dyt or none (any case)"
#define OPT_END \
    { .name = NULL }

// generate, eval, info, list, logits, profile, compare, bench, tokenize
#define OPT_HELP \
    { .name = "help", .letter = 'h', .type = OT_HELP, .help = "this help" }

// eval, info, logits, profile, tokenize
#define OPT_MODEL                                                                                 \
    {                                                                                             \
        .name = "model", .letter = 'm', .type = OT_STRING, .arg = "NAME|PATH",                    \
        .def_text = "$NORMLAB_MODEL, else shakespeare-pre-ln", .field = OPT_FIELD(model),         \
        .help = "a model by name ('normlab list') or path (a directory, a .gguf or a .json file)" \
    }

// generate, logits, tokenize
#define OPT_PROMPT                                                                                                   \
    {                                                                                                                \
        .name = "prompt", .letter = 'p', .type = OT_STRING, .arg = "TEXT", .field = OPT_FIELD(prompt),               \
        .help = "the prompt (logits, tokenize: the text); empty starts from a newline; absent: a standard input "    \
                "that is a pipe or a file is read whole as the prompt (as -f -), else a newline. With -p, standard " \
                "input is not read"                                                                                  \
    }

// generate, profile
#define OPT_START                                                                              \
    {                                                                                          \
        .name = "start", .type = OT_STRING, .arg = "TEXT", .field = OPT_FIELD(start),          \
        .help = "nanoGPT's prompt: TEXT, or with FILE:PATH the text of that file (as -f PATH)" \
    }

// generate, logits, profile, tokenize
#define OPT_PROMPT_FILE                                                                                   \
    {                                                                                                     \
        .name = "file", .letter = 'f', .type = OT_STRING, .arg = "FILE", .field = OPT_FIELD(prompt_file), \
        .help = "read the prompt (logits, tokenize: the text) from FILE ('-': standard input)"            \
    }

// eval, compare
#define OPT_TEXT_FILE                                                                                          \
    {                                                                                                          \
        .name = "file", .letter = 'f', .type = OT_STRING, .arg = "FILE", .field = OPT_FIELD(text_file),        \
        .help = "the UTF-8 text to score ('-': standard input; compare: every model must know its characters)" \
    }

// eval, compare
#define OPT_TEXT \
    { .name = "text", .type = OT_STRING, .arg = "FILE", .field = OPT_FIELD(text_file), .help = "the same as -f" }

// generate, profile
#define OPT_STEPS                                                                                                     \
    {                                                                                                                 \
        .name = "steps", .alias = "n-predict max-new-tokens", .letter = 'n', .type = OT_LONG, .arg = "N", .lo = -1,   \
        .hi = 1000000000, .range = "an integer in [-1, 1000000000]", .def = "256", .field = OPT_FIELD(n_new),         \
        .help =                                                                                                       \
            "tokens to generate: characters for a character model, BPE tokens for a BPE one (0 generates "            \
            "nothing; the prompt is still processed and timed; with -i, -1 runs each turn until the window is full; " \
            "--n-predict: llama.cpp's name, --max-new-tokens: nanoGPT's)"                                             \
    }

// generate, profile
#define OPT_TEMPERATURE                                                                                 \
    {                                                                                                   \
        .name = "temperature", .alias = "temp", .type = OT_DOUBLE, .arg = "T", .dlo = 1e-4, .dhi = 1e4, \
        .flags = OPT_ZERO_OK, .range = "0 or a number in [1e-4, 1e4]", .def = "0.8",                    \
        .field = OPT_FIELD(sampling.temperature),                                                       \
        .help = "0 = greedy; the default is nanoGPT's (-temp: llama.cpp's name)"                        \
    }

// generate, profile
#define OPT_TOP_K                                                                                                     \
    {                                                                                                                 \
        .name = "top-k", .type = OT_INT, .arg = "K", .lo = 0, .hi = LONG_MAX, .range = "an integer >= 0", .def = "0", \
        .field = OPT_FIELD(sampling.top_k), .help = "keep the K most likely tokens (0 = off; K > V keeps all)"        \
    }

// generate, profile
#define OPT_TOP_P                                                                                  \
    {                                                                                              \
        .name = "top-p", .type = OT_DOUBLE, .arg = "P", .dlo = 0, .dhi = 1, .flags = OPT_MIN_OPEN, \
        .range = "in (0, 1]", .def = "1", .field = OPT_FIELD(sampling.top_p),                      \
        .help = "keep the smallest set with mass >= P (1 = off)"                                   \
    }

// generate, profile
#define OPT_MIN_P                                                                                             \
    {                                                                                                         \
        .name = "min-p", .type = OT_DOUBLE, .arg = "P", .dlo = 0, .dhi = 1, .range = "in [0, 1]", .def = "0", \
        .field = OPT_FIELD(sampling.min_p),                                                                   \
        .help = "after top-p, keep the tokens at least P times as likely as the most likely (0 = off)"        \
    }

// generate, profile
#define OPT_REPEAT_PENALTY                                                                                           \
    {                                                                                                                \
        .name = "repeat-penalty", .type = OT_DOUBLE, .arg = "R", .dlo = 1e-3, .dhi = 1e3,                            \
        .range = "a number in [1e-3, 1e3]", .def = "1", .field = OPT_FIELD(sampling.repeat_penalty),                 \
        .help = "llama.cpp's: the logit l of a token seen in the last --repeat-last-n becomes l / R if l > 0, else " \
                "l * R, before the other samplers (1 = off)"                                                         \
    }

// generate, profile
#define OPT_REPEAT_LAST_N                                                                                            \
    {                                                                                                                \
        .name = "repeat-last-n", .type = OT_INT, .arg = "N", .lo = -1, .hi = 1048576,                                \
        .range = "an integer in [-1, 1048576]", .def = "64", .field = OPT_FIELD(sampling.repeat_last_n),             \
        .help = "the tokens the penalties look back on, the prompt's included (0 = none, -1 = the model's context; " \
                "a recurrent model's: 1048576)"                                                                      \
    }

// generate, profile
#define OPT_PRESENCE_PENALTY                                                                                   \
    {                                                                                                          \
        .name = "presence-penalty", .type = OT_DOUBLE, .arg = "A", .dlo = -1e3, .dhi = 1e3,                    \
        .range = "a number in [-1e3, 1e3]", .def = "0", .field = OPT_FIELD(sampling.presence_penalty),         \
        .help = "llama.cpp's: A is subtracted from the logit of each token seen in the last --repeat-last-n, " \
                "after the repeat penalty (0 = off)"                                                           \
    }

// generate, profile
#define OPT_FREQUENCY_PENALTY                                                                                       \
    {                                                                                                               \
        .name = "frequency-penalty", .type = OT_DOUBLE, .arg = "A", .dlo = -1e3, .dhi = 1e3,                        \
        .range = "a number in [-1e3, 1e3]", .def = "0", .field = OPT_FIELD(sampling.frequency_penalty),             \
        .help = "llama.cpp's: A times its count there is subtracted from the logit of each token seen in the last " \
                "--repeat-last-n, with the presence penalty (0 = off)"                                              \
    }

// generate, profile: the sampler's chain and penalties (NlSamplerParams), in the order help lists them
#define OPT_SAMPLING                                                                                               \
    OPT_TEMPERATURE, OPT_TOP_K, OPT_TOP_P, OPT_MIN_P, OPT_REPEAT_PENALTY, OPT_REPEAT_LAST_N, OPT_PRESENCE_PENALTY, \
        OPT_FREQUENCY_PENALTY

// generate, logits, profile, tokenize
#define OPT_ESCAPE                                                                                               \
    {                                                                                                            \
        .name = "escape", .letter = 'e', .type = OT_FLAG, .field = OPT_FIELD(escape), .value = 1,                \
        .help = "process escapes in -p's text and --stop's: \\n, \\t, \\r, \\\\, \\', \\\", \\xHH (a byte) and " \
                "\\uXXXX (a character, UTF-8); not in a file's text"                                             \
    }

// generate, eval, info, list, logits, profile, compare, bench, tokenize
#define OPT_OUTPUT                                                                                     \
    {                                                                                                  \
        .name = "output", .letter = 'o', .type = OT_STRING, .arg = "FILE", .field = OPT_FIELD(output), \
        .help = "write the result to FILE instead of stdout ('-': stdout), whole or not at all"        \
    }

// generate, profile
#define OPT_SAMPLES                                                                                                    \
    {                                                                                                                  \
        .name = "samples", .alias = "num-samples", .type = OT_INT, .arg = "N", .lo = 1, .hi = 256,                     \
        .range = "an integer in [1, 256]", .def = "1", .field = OPT_FIELD(samples),                                    \
        .help =                                                                                                        \
            "N continuations decoded together; stream i samples with seed S+i; printed one after another "             \
            "under '--- sample i, seed S+i ---', each echoing the prompt, or as JSON lines with --json; with several " \
            "-m, each model's under its header line, all printed once every model is done"                             \
    }

// generate, profile
#define OPT_BATCH                                                                                               \
    {                                                                                                           \
        .name = "batch", .type = OT_INT, .arg = "N", .lo = 1, .hi = 256, .range = "an integer in [1, 256]",     \
        .def_text = "8", .field = OPT_FIELD(batch),                                                             \
        .help = "with --samples: streams decoded together in one forward call; the groups of N streams run on " \
                "the engine threads"                                                                            \
    }

// generate, eval, logits, profile
#define OPT_NORM                                                                                            \
    {                                                                                                       \
        .name = "norm", .type = OT_CHOICE, .arg = "NAME", .range = NORM_WORDS, .def_text = "as configured", \
        .field = OPT_FIELD(norm), .choose = choose_norm, .choices = "layernorm rmsnorm batchnorm dyt none", \
        .help = "run the norms as NAME (overrides the config; none removes them)"                           \
    }

// generate, eval, logits, profile
#define OPT_PLACEMENT                                                                                                 \
    {                                                                                                                 \
        .name = "placement", .type = OT_CHOICE, .arg = "NAME", .words = placement_words, .def_text = "as configured", \
        .field = OPT_FIELD(placement), .choose = choose_placement,                                                    \
        .help = "run the blocks with placement NAME, each a recipe of steps (overrides the config; "                  \
                "docs/comparing.md gives their equations)"                                                            \
    }

// generate, eval, logits, profile
#define OPT_QK_NORM                                                                                              \
    {                                                                                                            \
        .name = "qk-norm", .type = OT_CHOICE, .arg = "S", .range = "on or off (any case)",                       \
        .def_text = "as configured", .field = OPT_FIELD(qk_norm), .choose = choose_qk_norm, .choices = "on off", \
        .help = "a llama model: normalise q and k per head before RoPE (on: its gains, unit gains where it has " \
                "none) or not (off)"                                                                             \
    }

// generate, eval, logits, profile
#define OPT_BN_STATS                                                                                          \
    {                                                                                                         \
        .name = "bn-stats", .type = OT_CHOICE, .arg = "S", .range = "running or batch (any case)",            \
        .def_text = "running", .field = OPT_FIELD(bn_stats), .choose = choose_bn, .choices = "running batch", \
        .help = "BatchNorm with its running statistics, or those of the rows of each forward call (batch)"    \
    }

// generate, profile
#define OPT_EXACT_WINDOW                                                                                        \
    {                                                                                                           \
        .name = "exact-window", .type = OT_FLAG, .field = OPT_FIELD(exact_window), .value = 1,                  \
        .help = "recompute the last block_size positions for every token (nanoGPT) instead of shifting the "    \
                "context by half a window when it is full; transformers only (a recurrent model has no window)" \
    }

// generate, eval, logits, profile, compare
#define OPT_SKIP_UNKNOWN                                                                                           \
    {                                                                                                              \
        .name = "skip-unknown", .type = OT_FLAG, .field = OPT_FIELD(skip_unknown), .value = 1,                     \
        .help = "drop characters outside a character model's vocabulary (with a warning that counts them); a BPE " \
                "model has a token for every byte and drops none"                                                  \
    }

// generate, eval, logits, profile, compare, tokenize
#define OPT_SPECIAL                                                                                                 \
    {                                                                                                               \
        .name = "special", .type = OT_FLAG, .field = OPT_FIELD(special), .value = 1,                                \
        .help = "a BPE model: a special token (\"<|endoftext|>\", \"<|im_start|>\") in the text is that token (by " \
                "default it is plain text, as in GPT-2's encoder and tiktoken's encode_ordinary; an added token "   \
                "that is not special always is one); a sentencepiece model: <s>, </s> and <unk> (plain text by "    \
                "default, as in sentencepiece); a character model has none"                                         \
    }

// generate, eval
#define OPT_PROFILE                                                                                                   \
    {                                                                                                                 \
        .name = "profile", .type = OT_FLAG, .field = OPT_FIELD(profile), .value = 1,                                  \
        .help = "print the per-layer profile (see 'normlab help profile') to stderr (generate: of one model, so not " \
                "with several -m)"                                                                                    \
    }

// generate, eval, profile
#define OPT_COUNTERS                                                                                               \
    {                                                                                                              \
        .name = "counters", .type = OT_FLAG, .field = OPT_FIELD(counters), .value = 1,                             \
        .help = "instructions per cycle from Linux perf counters, when available (generate, eval: with --profile)" \
    }

// generate, eval, info, logits, profile
#define OPT_QUANTIZE                                                                                                   \
    {                                                                                                                  \
        .name = "quantize", .type = OT_CHOICE, .arg = "Q",                                                             \
        .range = "none, q8, q4, f16, bf16, q8_0 or q4_0 (any case)", .def_text = "none", .field = OPT_FIELD(quantize), \
        .choose = choose_quant, .choices = "none q8 q4 f16 bf16 q8_0 q4_0",                                            \
        .help = "round the weight matrices once at load: q8 and q4 simulated (stored back as float32, so this "        \
                "measures quality, not speed), q8 per row to 127 levels a side of max|w|/127, q4 per 32 columns of "   \
                "a row to 7; f16, bf16, q8_0 and q4_0 stored as 'normlab quantize' stores them and run by their "      \
                "kernels; norms and biases stay float32 (docs/lab.md, docs/quantization.md)"                           \
    }

// generate, eval, info, logits, profile, compare
#define OPT_QUANTIZE_ONLY                                                                                            \
    {                                                                                                                \
        .name = "quantize-only", .type = OT_CHOICE, .arg = "CLASSES",                                                \
        .range = "attn, mlp, head, embed or recurrent, or several joined by commas (any case)",                      \
        .def_text = "every matrix", .field = OPT_FIELD(quantize_only), .choose = choose_quant_only,                  \
        .choices = "attn mlp head embed recurrent",                                                                  \
        .help = "with --quantize: round only these matrices (attn: c_attn, c_proj; mlp: c_fc, c_proj; head: "        \
                "lm_head; embed: wte, wpe; recurrent: weight_ih, weight_hh), so that the loss can be attributed; a " \
                "tied head is wte, rounded when either head or embed is named"                                       \
    }

// generate, eval, logits, profile
#define OPT_QUANTIZE_ACT                                                                                             \
    {                                                                                                                \
        .name = "quantize-act", .type = OT_CHOICE, .arg = "Q", .range = "none or q8 (any case)", .def_text = "none", \
        .field = OPT_FIELD(quantize_act), .choose = choose_act_quant, .choices = "none q8",                          \
        .help = "round every linear's input rows (one per position) as q8 rounds a weight row, before each "         \
                "product (simulated)"                                                                                \
    }

// generate, eval, info, list, logits, profile, compare, bench, tokenize
#define OPT_NO_MMAP                                                                                                \
    {                                                                                                              \
        .name = "no-mmap", .type = OT_FLAG, .field = OPT_FIELD(no_mmap), .value = 1,                               \
        .help = "read the weights into memory instead of mapping them: a file rewritten in place under a mapping " \
                "kills the process"                                                                                \
    }

// generate, eval, info, list, logits, profile, compare, bench, tokenize
#define OPT_NO_REPACK                                                                                                \
    {                                                                                                                \
        .name = "no-repack", .type = OT_FLAG, .field = OPT_FIELD(no_repack), .value = 1,                             \
        .help =                                                                                                      \
            "keep every weight in the file's layout: no transposed copies, which cost memory (GPT-2 small: its "     \
            "head, 154 MB, and with AVX-512 its tall matrices, 353 MB in all) and speed; products round as in that " \
            "layout"                                                                                                 \
    }

// eval, compare
#define OPT_LENS                                                                                                      \
    {                                                                                                                 \
        .name = "lens", .type = OT_FLAG, .field = OPT_FIELD(lens), .value = 1,                                        \
        .help = "the logit lens: bits/char (a BPE model's bits/token) of the text read after each layer through the " \
                "model's own final norm and head, with the KL from the last layer, entropy and top-1 agreement "      \
                "(docs/lab.md)"                                                                                       \
    }

// eval, compare
#define OPT_LENS_SCALE                                                                                                 \
    {                                                                                                                  \
        .name = "lens-scale", .type = OT_CHOICE, .arg = "S", .range = "recompute or final (any case)",                 \
        .def_text = "recompute", .field = OPT_FIELD(lens_scale), .choose = choose_lens_scale,                          \
        .choices = "recompute final",                                                                                  \
        .help = "how --lens scales a layer's stream through the final norm: by its own scale, recomputed (as "         \
                "tuned-lens), or by the last layer's at the same position (final: TransformerLens's "                  \
                "apply_ln_to_stack); the same for models without a final norm to recompute (post, no norm, BatchNorm)" \
    }

// eval, compare
#define OPT_ATTENTION                                                                                           \
    {                                                                                                           \
        .name = "attention", .type = OT_FLAG, .field = OPT_FIELD(attention), .value = 1,                        \
        .help = "attention statistics per layer and head over eval's windows: entropy, the distance attended, " \
                "and past each window's first query the share on the first position (the sink) and on the "     \
                "query's own, beside uniform attention's (docs/lab.md)"                                         \
    }

// quantize, fold: -o DIR, the model folder written
#define OPT_OUTPUT_FOLDER                                                                                           \
    {                                                                                                               \
        .name = "output", .letter = 'o', .type = OT_STRING, .arg = "DIR", .field = OPT_FIELD(output),               \
        .help =                                                                                                     \
            "the model folder to write (required), whole or not at all: an existing one is replaced (it must be a " \
            "model folder; its other files are kept)"                                                               \
    }

// -t: the threads, as every command but bench (its -t is a list) takes them, with the command's own
// help, default and (generate: run.c's -t named) range in words
#define THREADS_RANGE "an integer in [1, 1024]"
#define THREADS_EVERY_CPU "every CPU this process may use"
#define OPT_THREADS_AS(range_words, default_value, default_words, help_text)                                     \
    {                                                                                                            \
        .name = "threads", .letter = 't', .type = OT_INT, .arg = "N", .lo = 1, .hi = 1024, .range = range_words, \
        .def = default_value, .def_text = default_words, .field = OPT_FIELD(threads), .help = help_text          \
    }
#define OPT_THREADS(help_text) OPT_THREADS_AS(THREADS_RANGE, NULL, THREADS_EVERY_CPU, help_text)

// ---- the relations several commands share (options.h's OptRelation), checked after parsing
#define QUANTIZE_ONLY(by)                             \
    REQUIRES(GIVEN_INT(quantize_only), GIVEN_INT(by), \
             "--quantize-only picks what --quantize rounds: give --quantize too")
#define START_ALONE                                                                          \
    CONFLICTS(GIVEN_TEXT(start), GIVEN_TEXT(prompt), "give --start, -p or -f, one of them"), \
        CONFLICTS(GIVEN_TEXT(start), GIVEN_TEXT(prompt_file), "give --start, -p or -f, one of them")
#define PROMPT_OR_FILE CONFLICTS(GIVEN_TEXT(prompt), GIVEN_TEXT(prompt_file), "give -p or -f, not both")
#define COUNTERS_NEED_PROFILE REQUIRES(GIVEN_INT(counters), GIVEN_INT(profile), "--counters needs --profile")

#endif
