// options_table.c — the option table: every option is declared once here (every command, in
// commands_table.c). The parser (options.c), `normlab help CMD`, the man page and the bash
// completion (tools/dev/make_man.sh, tools/dev/make_completion.sh, from `normlab help --options-table`)
// and docs/cli.md (`normlab help --markdown`) all read these rows; tests/options_test.sh checks that
// they agree and runs every numeric option at the edges of its range.
#define _GNU_SOURCE
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "options.h"

static int choose_norm(const char *w, int *out) {
    NlNormType v;
    if (nl_config_norm_parse(w, &v) != 0) return -1;
    *out = (int)v;
    return 0;
}

static int choose_placement(const char *w, int *out) {
    NlPlacement v;
    if (nl_config_placement_parse(w, &v) != 0) return -1;
    *out = (int)v;
    return 0;
}

static int choose_bn(const char *w, int *out) {
    NlBnStats v;
    if (nl_config_bn_stats_parse(w, &v) != 0) return -1;
    *out = (int)v;
    return 0;
}

static int choose_bn_or_both(const char *w, int *out) {
    static const char both[] = "both";
    size_t i = 0;
    while (w[i] && both[i] && (w[i] | 0x20) == both[i]) i++;
    if (!w[i] && !both[i]) {
        *out = BN_STATS_BOTH;
        return 0;
    }
    return choose_bn(w, out);
}

static int choose_quant(const char *w, int *out) {
    NlQuant v;
    if (nl_quant_parse(w, &v) != 0) return -1;
    *out = (int)v;
    return 0;
}

static int choose_act_quant(const char *w, int *out) {
    return choose_quant(w, out) != 0 || *out == NL_QUANT_Q4 ? -1 : 0;  // q4 activations: not offered
}

// q8, q4 or both, comma-separated, into bits (1 << NlQuant); "none" is the float32 row itself.
static int choose_quant_rows(const char *w, int *out) {
    *out = 0;
    for (const char *at = w;; at++) {
        size_t len = strcspn(at, ",");
        char word[8];
        NlQuant q;
        snprintf(word, sizeof word, "%.*s", (int)(len < 7 ? len : 7), at);
        if (len > 7 || nl_quant_parse(word, &q) != 0 || q == NL_QUANT_NONE) return -1;
        *out |= 1 << q;
        at += len;
        if (!*at) return 0;
    }
}

static int choose_format(const char *w, int *out) {
    static const char *const names[] = {"md", "text", "csv", "json"};
    for (int i = 0; i < 4; i++)
        if (strcasecmp(w, names[i]) == 0) return *out = i, 0;
    return -1;
}

static int choose_quant_only(const char *w, int *out) {
    unsigned classes;
    if (nl_quant_classes_parse(w, &classes) != 0) return -1;
    *out = (int)classes;
    return 0;
}

#define F(x) offsetof(Options, x)
#define GEN CMD_GENERATE
#define PROF CMD_PROFILE
#define RUNS (CMD_GENERATE | CMD_PROFILE | CMD_EVAL | CMD_LOGITS)  // commands that run a model's forward pass
#define NORM_WORDS "layernorm, rmsnorm, batchnorm or none (any case)"

const OptSpec OPTIONS[] = {
    {.name = "help", .letter = 'h', .type = OT_HELP, .commands = CMD_ALL, .help = "this help"},
    {.name = "model",
     .letter = 'm',
     .type = OT_STRING,
     .arg = "NAME|PATH",
     .def_text = "$NORMLAB_MODEL, else shakespeare-pre-ln",
     .commands = (RUNS & ~GEN) | CMD_INFO | CMD_TOKENIZE,
     .field = F(model),
     .help = "a model by name ('normlab list') or path (a directory or a .json file)"},
    {.name = "model",
     .letter = 'm',
     .type = OT_MODELS,
     .arg = "NAME|PATH",
     .def_text = "$NORMLAB_MODEL, else shakespeare-pre-ln",
     .commands = GEN,
     .help = "a model by name ('normlab list') or path (a directory or a .json file). Repeatable: the same "
             "prompt, seed and sampling through each model in the order given, each block under a line "
             "'=== MODEL (RUN) ===' (RUN: norm/placement, or family/norm for a recurrent model) and ending in a "
             "newline; every model must know the prompt's characters (checked before any output); one model "
             "with --profile"},
    {.name = "model",
     .letter = 'm',
     .type = OT_STRING,
     .arg = "NAME",
     .commands = CMD_LIST,
     .field = F(model),
     .help = "only the models of that name: the one -m NAME loads and those it shadows"},
    {.name = "model",
     .letter = 'm',
     .type = OT_MODELS,
     .arg = "NAME|PATH",
     .commands = CMD_COMPARE,
     .help = "a model to compare (repeatable; the same as a positional MODEL, in the order given)"},
    {.name = "model",
     .letter = 'm',
     .type = OT_MODELS,
     .arg = "NAME|PATH",
     .def_text = "$NORMLAB_MODEL, else shakespeare-pre-ln",
     .commands = CMD_BENCH,
     .help = "a model to measure (repeatable: each in the order given)"},
    {.name = "prompt",
     .letter = 'p',
     .type = OT_STRING,
     .arg = "TEXT",
     .commands = GEN | CMD_LOGITS | CMD_TOKENIZE,
     .field = F(prompt),
     .help = "the prompt (logits, tokenize: the text); empty starts from a newline; absent: a standard input "
             "that is a pipe or a file is read whole as the prompt (as -f -), else a newline. With -p, standard "
             "input is not read"},
    {.name = "prompt",
     .letter = 'p',
     .type = OT_STRING,
     .arg = "TEXT",
     .commands = PROF,
     .field = F(prompt),
     .help = "the prompt; absent: a built-in line (named in the report), or a newline if the vocabulary lacks "
             "its characters"},
    {.name = "start",
     .type = OT_STRING,
     .arg = "TEXT",
     .commands = GEN | PROF,
     .field = F(start),
     .help = "nanoGPT's prompt: TEXT, or with FILE:PATH the text of that file (as -f PATH)"},
    {.name = "file",
     .letter = 'f',
     .type = OT_STRING,
     .arg = "FILE",
     .commands = GEN | PROF | CMD_LOGITS | CMD_TOKENIZE,
     .field = F(prompt_file),
     .help = "read the prompt (logits, tokenize: the text) from FILE ('-': standard input)"},
    {.name = "file",
     .letter = 'f',
     .type = OT_STRING,
     .arg = "FILE",
     .commands = CMD_EVAL | CMD_COMPARE,
     .field = F(text_file),
     .help = "the UTF-8 text to score ('-': standard input; compare: every model must know its characters)"},
    {.name = "text",
     .type = OT_STRING,
     .arg = "FILE",
     .commands = CMD_EVAL | CMD_COMPARE,
     .field = F(text_file),
     .help = "the same as -f"},
    {.name = "steps",
     .alias = "n-predict max-new-tokens",
     .letter = 'n',
     .type = OT_LONG,
     .arg = "N",
     .lo = -1,
     .hi = 1000000000,
     .range = "an integer in [-1, 1000000000]",
     .def = "256",
     .commands = GEN | PROF,
     .field = F(n_new),
     .help = "tokens to generate: characters for a character model, BPE tokens for a BPE one (0 generates "
             "nothing; the prompt is still processed and timed; with -i, -1 runs each turn until the window is full; "
             "--n-predict: llama.cpp's name, --max-new-tokens: nanoGPT's)"},
    {.name = "temperature",
     .alias = "temp",
     .type = OT_DOUBLE,
     .arg = "T",
     .dlo = 1e-4,
     .dhi = 1e4,
     .flags = OPT_ZERO_OK,
     .range = "0 or a number in [1e-4, 1e4]",
     .def = "0.8",
     .commands = GEN | PROF,
     .field = F(sampling.temperature),
     .help = "0 = greedy; the default is nanoGPT's (-temp: llama.cpp's name)"},
    {.name = "top-k",
     .type = OT_INT,
     .arg = "K",
     .lo = 0,
     .hi = LONG_MAX,
     .range = "an integer >= 0",
     .def = "0",
     .commands = GEN | PROF,
     .field = F(sampling.top_k),
     .help = "keep the K most likely tokens (0 = off; K > V keeps all)"},
    {.name = "top-p",
     .type = OT_DOUBLE,
     .arg = "P",
     .dlo = 0,
     .dhi = 1,
     .flags = OPT_MIN_OPEN,
     .range = "in (0, 1]",
     .def = "1",
     .commands = GEN | PROF,
     .field = F(sampling.top_p),
     .help = "keep the smallest set with mass >= P (1 = off)"},
    {.name = "min-p",
     .type = OT_DOUBLE,
     .arg = "P",
     .dlo = 0,
     .dhi = 1,
     .range = "in [0, 1]",
     .def = "0",
     .commands = GEN | PROF,
     .field = F(sampling.min_p),
     .help = "after top-p, keep the tokens at least P times as likely as the most likely (0 = off)"},
    {.name = "repeat-penalty",
     .type = OT_DOUBLE,
     .arg = "R",
     .dlo = 1e-3,
     .dhi = 1e3,
     .range = "a number in [1e-3, 1e3]",
     .def = "1",
     .commands = GEN | PROF,
     .field = F(sampling.repeat_penalty),
     .help = "llama.cpp's: the logit l of a token seen in the last --repeat-last-n becomes l / R if l > 0, else "
             "l * R, before the other samplers (1 = off)"},
    {.name = "repeat-last-n",
     .type = OT_INT,
     .arg = "N",
     .lo = -1,
     .hi = 1048576,
     .range = "an integer in [-1, 1048576]",
     .def = "64",
     .commands = GEN | PROF,
     .field = F(sampling.repeat_last_n),
     .help = "the tokens the penalties look back on, the prompt's included (0 = none, -1 = the model's context; "
             "a recurrent model's: 1048576)"},
    {.name = "presence-penalty",
     .type = OT_DOUBLE,
     .arg = "A",
     .dlo = -1e3,
     .dhi = 1e3,
     .range = "a number in [-1e3, 1e3]",
     .def = "0",
     .commands = GEN | PROF,
     .field = F(sampling.presence_penalty),
     .help = "llama.cpp's: A is subtracted from the logit of each token seen in the last --repeat-last-n, "
             "after the repeat penalty (0 = off)"},
    {.name = "frequency-penalty",
     .type = OT_DOUBLE,
     .arg = "A",
     .dlo = -1e3,
     .dhi = 1e3,
     .range = "a number in [-1e3, 1e3]",
     .def = "0",
     .commands = GEN | PROF,
     .field = F(sampling.frequency_penalty),
     .help = "llama.cpp's: A times its count there is subtracted from the logit of each token seen in the last "
             "--repeat-last-n, with the presence penalty (0 = off)"},
    {.name = "n-probs",
     .type = OT_INT,
     .arg = "N",
     .lo = 0,
     .hi = NL_SAMPLER_PROBS_MAX,
     .range = "an integer in [0, 100]",
     .def = "0",
     .commands = GEN,
     .field = F(sampling.n_probs),
     .help = "with --json: each sample's \"completion_probabilities\", one {id, token, logprob, top_logprobs} per "
             "generated token, top_logprobs the N most likely {id, token, logprob} of the model's own distribution "
             "(temperature 1, no penalties), natural logs, as llama-server's"},
    {.name = "stop",
     .alias = "reverse-prompt",
     .letter = 'r',
     .type = OT_LIST,
     .arg = "TEXT",
     .commands = GEN,
     .field = F(stops),
     .help = "end a stream where its new text first holds TEXT, found across tokens; TEXT itself is not "
             "printed. Repeatable: the first of them to appear ends it (-r, --reverse-prompt: llama.cpp's names)"},
    {.name = "interactive",
     .letter = 'i',
     .type = OT_FLAG,
     .commands = GEN,
     .field = F(interactive),
     .value = 1,
     .help = "after the prompt's -n tokens (or a --stop text, which stays in the context unprinted), read a line "
             "from standard input (asked with '> ' on stderr) and continue the text after it with -n more, turn "
             "after turn on one KV cache (a full window shifts, keeping its last half); the end of input "
             "(Ctrl-D) ends it. llama-cli's -i"},
    {.name = "escape",
     .letter = 'e',
     .type = OT_FLAG,
     .commands = GEN | PROF | CMD_LOGITS | CMD_TOKENIZE,
     .field = F(escape),
     .value = 1,
     .help = "process escapes in -p's text and --stop's: \\n, \\t, \\r, \\\\, \\', \\\", \\xHH (a byte) and "
             "\\uXXXX (a character, UTF-8); not in a file's text"},
    {.name = "seed",
     .letter = 's',
     .type = OT_SEED,
     .arg = "S",
     .range = "-1 (random) or an integer in [0, 2^64-1]",
     .def = "-1",
     .commands = GEN,
     .help = "-1 draws a seed from the system and prints it to stderr; a given seed is not printed. With several -m, "
             "one seed for all (printed once): every model's sampler draws the same random numbers"},
    {.name = "seed",
     .letter = 's',
     .type = OT_SEED,
     .arg = "S",
     .range = "-1 (random) or an integer in [0, 2^64-1]",
     .def = "0",
     .commands = PROF,
     .help = "the sampler's seed (the run is repeatable by default)"},
    {.name = "echo",
     .type = OT_FLAG,
     .commands = GEN,
     .field = F(echo),
     .value = 1,
     .help = "print the prompt before the continuation (the default)"},
    {.name = "no-echo",
     .type = OT_FLAG,
     .commands = GEN,
     .field = F(echo),
     .value = 0,
     .help = "do not print the prompt before the continuation (for scripts)"},
    {.name = "json",
     .type = OT_FLAG,
     .commands = GEN,
     .field = F(json),
     .value = 1,
     .help = "one JSON object: {seed, prompt, text, prompt_tokens, prefill_seconds, decode_tokens, "
             "decode_seconds, decode_tok_s, context_shifts}; with --samples N > 1, one line per sample: "
             "{sample, seed, prompt, text}; with several -m, those lines for each model in turn, each starting with "
             "{model (as given), run (as in the text's header)}, all printed once every model is done"},
    {.name = "json",
     .type = OT_FLAG,
     .commands = PROF,
     .field = F(json),
     .value = 1,
     .help = "the report as JSON instead of the tables (every layer x component)"},
    {.name = "json",
     .type = OT_FLAG,
     .commands = CMD_EVAL,
     .field = F(json),
     .value = 1,
     .help = "one JSON object: {chars, nats_per_char, nats_per_char_stderr, bits_per_char, bits_per_char_stderr, "
             "perplexity, perplexity_stderr, bytes, bits_per_byte, bits_per_byte_stderr, skipped, unit (char), tokens, "
             "nats_per_token, nats_per_token_stderr, bits_per_token, bits_per_token_stderr, stride or segments}; a BPE "
             "model's has only the per-token keys, with unit token; "
             "with --kl, then {kl_divergence, kl_divergence_stderr, kl_divergence_median, kl_divergence_p99, "
             "kl_divergence_max, same_top, same_top_stderr, ln_ppl_ratio, ln_ppl_ratio_stderr}; into a file (-o "
             "FILE), then token_nll: each scored token's -ln p, in nats"},
    {.name = "json", .type = OT_FLAG, .commands = CMD_INFO, .field = F(json), .value = 1, .help = "one JSON object"},
    {.name = "check-weights",
     .type = OT_FLAG,
     .commands = CMD_INFO,
     .field = F(check_weights),
     .value = 1,
     .help = "also read every weight and refuse a non-finite one, as the commands that run a model do (info "
             "alone reads the files' headers and shapes only; the Python tools check what they write with it)"},
    {.name = "json",
     .type = OT_FLAG,
     .commands = CMD_TOKENIZE,
     .field = F(json),
     .value = 1,
     .help = "one JSON object: {tokenizer, ids, pieces}, each piece the token's bytes as text (a byte that is not "
             "part of valid UTF-8 as U+FFFD)"},
    {.name = "json",
     .type = OT_FLAG,
     .commands = CMD_LIST,
     .field = F(json),
     .value = 1,
     .help = "a JSON array of {name, path, norm, arch, placement, parameters, val_loss (nats/char), val_loss_by "
             "(\"train.py\" or \"nanoGPT\"), shadowed} (val_loss and val_loss_by only when stored; {name, path, "
             "error, shadowed} for a model that does not load)"},
    {.name = "json",
     .type = OT_FLAG,
     .commands = CMD_LOGITS,
     .field = F(json),
     .value = 1,
     .help = "accepted: the output is JSON lines already"},
    {.name = "json",
     .type = OT_FLAG,
     .commands = CMD_COMPARE,
     .field = F(json),
     .value = 1,
     .help = "the rows as a JSON array instead of the table"},
    {.name = "kl-base",
     .alias = "kl-divergence-base",
     .type = OT_STRING,
     .arg = "FILE",
     .commands = CMD_EVAL,
     .field = F(kl_base),
     .help = "write every scored position's log-probabilities to FILE, the reference for --kl (llama-perplexity's "
             "--kl-divergence-base; float32, V per position, whole or not at all)"},
    {.name = "kl",
     .alias = "kl-divergence",
     .type = OT_STRING,
     .arg = "FILE",
     .commands = CMD_EVAL,
     .field = F(kl),
     .help = "compare with a --kl-base FILE of the same text and vocabulary: the mean KL divergence from it with its "
             "error, median, 99th percentile and maximum, the share of positions with the same most likely token, "
             "and ln(PPL / PPL(base)) (llama-perplexity's --kl-divergence)"},
    {.name = "output",
     .letter = 'o',
     .type = OT_STRING,
     .arg = "FILE",
     .commands = CMD_ALL,
     .field = F(output),
     .help = "write the result to FILE instead of stdout ('-': stdout), whole or not at all"},
    {.name = "samples",
     .alias = "num-samples",
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 256,
     .range = "an integer in [1, 256]",
     .def = "1",
     .commands = GEN | PROF,
     .field = F(samples),
     .help = "N continuations decoded together; stream i samples with seed S+i; printed one after another "
             "under '--- sample i, seed S+i ---', each echoing the prompt, or as JSON lines with --json; with several "
             "-m, each model's under its header line, all printed once every model is done"},
    {.name = "batch",
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 256,
     .range = "an integer in [1, 256]",
     .def_text = "8",
     .commands = GEN | PROF,
     .field = F(batch),
     .help = "with --samples: streams decoded together in one forward call; the groups of N streams run on "
             "the engine threads"},
    {.name = "batch",
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 256,
     .range = "an integer in [1, 256]",
     .def_text = "1024 / block_size, at least 1",
     .commands = CMD_EVAL,
     .field = F(batch),
     .help = "windows per forward call; changes the order of float sums, so the last digits may differ (with "
             "--bn-stats batch the statistics are those of the call's windows)"},
    {.name = "threads",
     .letter = 't',
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 1024,
     .range = "an integer in [1, 1024]",
     .def_text = "every CPU this process may use",
     .commands = GEN,
     .field = F(threads),
     .help = "engine threads: sample groups run side by side; one stream's matrix-vector products and "
             "attention heads are split over N threads (at most the CPUs). The text is the same at any N"},
    {.name = "threads",
     .letter = 't',
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 1024,
     .range = "an integer in [1, 1024]",
     .def_text = "every CPU this process may use",
     .commands = PROF,
     .field = F(threads),
     .help = "as for generate; with several threads the times are summed over them"},
    {.name = "threads",
     .letter = 't',
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 1024,
     .range = "an integer in [1, 1024]",
     .def_text = "every CPU this process may use",
     .commands = CMD_EVAL,
     .field = F(threads),
     .help = "engine threads, each scoring its share of the windows (a recurrent model: its products split "
             "by rows); the result is the same at any N"},
    {.name = "threads",
     .letter = 't',
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 1024,
     .range = "an integer in [1, 1024]",
     .def_text = "every CPU this process may use",
     .commands = CMD_LOGITS,
     .field = F(threads),
     .help = "OpenBLAS threads for the matrix products"},
    {.name = "threads",
     .letter = 't',
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 1024,
     .range = "an integer in [1, 1024]",
     .def = "1",
     .commands = CMD_COMPARE,
     .field = F(threads),
     .help = "rows measured side by side on N threads (1: one at a time, so that the speed columns are those "
             "of an idle machine); the other columns are the same at any N"},
    {.name = "norm",
     .type = OT_CHOICE,
     .arg = "NAME",
     .range = NORM_WORDS,
     .def_text = "as configured",
     .commands = RUNS,
     .field = F(norm),
     .choose = choose_norm,
     .choices = "layernorm rmsnorm batchnorm none",
     .help = "run the norms as NAME (overrides the config; none removes them)"},
    {.name = "placement",
     .type = OT_CHOICE,
     .arg = "NAME",
     .range = "pre, post or peri (any case)",
     .def_text = "as configured",
     .commands = RUNS,
     .field = F(placement),
     .choose = choose_placement,
     .choices = "pre post peri",
     .help = "run the blocks pre, post or peri (overrides the config)"},
    {.name = "bn-stats",
     .type = OT_CHOICE,
     .arg = "S",
     .range = "running or batch (any case)",
     .def_text = "running",
     .commands = RUNS,
     .field = F(bn_stats),
     .choose = choose_bn,
     .choices = "running batch",
     .help = "BatchNorm with its running statistics, or those of the rows of each forward call (batch)"},
    {.name = "bn-stats",
     .type = OT_CHOICE,
     .arg = "S",
     .range = "running or batch or both (any case)",
     .def_text = "running",
     .commands = CMD_COMPARE,
     .field = F(bn_stats),
     .choose = choose_bn_or_both,
     .choices = "running batch both",
     .help = "BatchNorm rows with running or batch statistics, or a row with each"},
    {.name = "exact-window",
     .type = OT_FLAG,
     .commands = GEN | PROF,
     .field = F(exact_window),
     .value = 1,
     .help = "recompute the last block_size positions for every token (nanoGPT) instead of shifting the "
             "context by half a window when it is full; transformers only (a recurrent model has no window)"},
    {.name = "skip-unknown",
     .type = OT_FLAG,
     .commands = RUNS | CMD_COMPARE,
     .field = F(skip_unknown),
     .value = 1,
     .help = "drop characters outside a character model's vocabulary (with a warning that counts them); a BPE "
             "model has a token for every byte and drops none"},
    {.name = "special",
     .type = OT_FLAG,
     .commands = RUNS | CMD_COMPARE | CMD_TOKENIZE,
     .field = F(special),
     .value = 1,
     .help = "a BPE model: \"<|endoftext|>\" in the text is the special token (by default it is plain text, as in "
             "GPT-2's encoder and tiktoken's encode_ordinary); a character model has none"},
    {.name = "warmup",
     .type = OT_FLAG,
     .commands = GEN,
     .field = F(warmup),
     .value = 1,
     .help = "run the prompt once, untimed, before the timed run (benchmarks)"},
    {.name = "profile",
     .type = OT_FLAG,
     .commands = GEN | CMD_EVAL,
     .field = F(profile),
     .value = 1,
     .help = "print the per-layer profile (see 'normlab help profile') to stderr (generate: of one model, so not "
             "with several -m)"},
    {.name = "layers",
     .type = OT_FLAG,
     .commands = PROF,
     .field = F(layers),
     .value = 1,
     .help = "print the full layer x component table, as before"},
    {.name = "counters",
     .type = OT_FLAG,
     .commands = GEN | CMD_EVAL | PROF,
     .field = F(counters),
     .value = 1,
     .help = "instructions per cycle from Linux perf counters, when available (generate, eval: with --profile)"},
    {.name = "trace",
     .type = OT_STRING,
     .arg = "FILE",
     .commands = PROF,
     .field = F(trace_out),
     .help = "write a Chrome trace (Perfetto, chrome://tracing) to FILE"},
    {.name = "stride",
     .type = OT_LONG,
     .arg = "N",
     .lo = 1,
     .hi = 65536,
     .range = "an integer in [1, 65536]",
     .def_text = "block_size/2",
     .commands = CMD_EVAL,
     .field = F(stride),
     .help = "window step for texts longer than the context, at most block_size: each character is scored "
             "once, with at least block_size - N characters of context; the last window ends at the text's end"},
    {.name = "segments",
     .type = OT_LONG,
     .arg = "N",
     .lo = 1,
     .hi = 4096,
     .range = "an integer in [1, 4096]",
     .def_text = "1",
     .commands = CMD_EVAL,
     .field = F(segments),
     .help = "recurrent models (lstm, gru), which score the text through one unbroken state: cut it into N "
             "parts, each from the zero state, run together (faster; every cut loses its context, so the loss "
             "rises)"},
    {.name = "also-swap",
     .type = OT_FLAG,
     .commands = CMD_COMPARE,
     .field = F(also_swap),
     .value = 1,
     .help = "add, per model, rows with the other norm type (layernorm and rmsnorm each other's, batchnorm's "
             "layernorm), the other placement (pre and post each other's, peri's pre) and no norm at all; a "
             "recurrent model with LayerNorm: a row without it"},
    {.name = "invariance",
     .type = OT_FLAG,
     .commands = CMD_COMPARE,
     .field = F(invariance),
     .value = 1,
     .help = "the LayerNorm/RMSNorm invariance experiment on the text's activations"},
    {.name = "repeats",
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 1000,
     .range = "an integer in [1, 1000]",
     .def = "5",
     .commands = CMD_COMPARE,
     .field = F(repeats),
     .help = "timing repeats"},
    {.name = "n-prompt",
     .letter = 'p',
     .type = OT_STRING,
     .arg = "N,...",
     .def_text = "512, or the model's context if shorter",
     .commands = CMD_BENCH,
     .field = F(bench_prompt),
     .help = "prompt-processing tests: N tokens in one forward pass each (ppN); comma-separated, 0 for none"},
    {.name = "n-gen",
     .letter = 'n',
     .type = OT_STRING,
     .arg = "N,...",
     .def_text = "128, or the model's context if shorter",
     .commands = CMD_BENCH,
     .field = F(bench_gen),
     .help = "text-generation tests: N tokens decoded one at a time from an empty context (tgN); comma-separated, "
             "0 for none"},
    {.name = "threads",
     .letter = 't',
     .type = OT_STRING,
     .arg = "N,...",
     .def_text = "every CPU this process may use",
     .commands = CMD_BENCH,
     .field = F(bench_threads),
     .help = "the thread counts each test runs at (one stream's products split over N threads); comma-separated"},
    {.name = "repetitions",
     .letter = 'r',
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 1000,
     .range = "an integer in [1, 1000]",
     .def = "5",
     .commands = CMD_BENCH,
     .field = F(repeats),
     .help = "timed runs of each test, after one untimed warm-up"},
    {.name = "json",
     .type = OT_FLAG,
     .commands = CMD_BENCH,
     .field = F(bench_format),
     .value = BENCH_JSON,
     .help = "--format json, as every other command's --json"},
    {.name = "format",
     .type = OT_CHOICE,
     .arg = "F",
     .range = "md, text, csv or json (any case)",
     .def = "md",
     .commands = CMD_BENCH,
     .field = F(bench_format),
     .choose = choose_format,
     .choices = "md text csv json",
     .help = "the rows as a Markdown table (llama-bench's default), aligned text, CSV or a JSON array with each "
             "repetition's time (samples_ns)"},
    {.name = "csv",
     .type = OT_STRING,
     .arg = "FILE",
     .commands = CMD_COMPARE,
     .field = F(csv_out),
     .help = "also write the rows as CSV to FILE"},
    {.name = "plot-dir",
     .type = OT_STRING,
     .arg = "DIR",
     .commands = CMD_COMPARE,
     .field = F(plot_dir),
     .help = "PNG charts via tools/lab/plot_compare.py (needs python3-matplotlib)"},
    {.name = "quantize",
     .type = OT_CHOICE,
     .arg = "Q",
     .range = "none, q8 or q4 (any case)",
     .def_text = "none",
     .commands = RUNS | CMD_INFO,
     .field = F(quantize),
     .choose = choose_quant,
     .choices = "none q8 q4",
     .help = "round the weight matrices once at load (simulated: stored back as float32, so this measures "
             "quality, not speed): q8 per row to 127 levels a side of max|w|/127, q4 per 32 columns of a row to "
             "7; norms and biases stay float32 (docs/lab.md)"},
    {.name = "quantize",
     .type = OT_CHOICE,
     .arg = "LIST",
     .range = "q8, q4 or q8,q4 (any case)",
     .commands = CMD_COMPARE,
     .field = F(quantize_rows),
     .choose = choose_quant_rows,
     .choices = "q8 q4 q8,q4",
     .help = "add, per model, a row with its weights rounded so (simulated, as for eval), with the bits/char (a BPE "
             "model's bits/token) it costs against the float32 row"},
    {.name = "quantize-only",
     .type = OT_CHOICE,
     .arg = "CLASSES",
     .range = "attn, mlp, head, embed or recurrent, or several joined by commas (any case)",
     .def_text = "every matrix",
     .commands = RUNS | CMD_INFO | CMD_COMPARE,
     .field = F(quantize_only),
     .choose = choose_quant_only,
     .choices = "attn mlp head embed recurrent",
     .help = "with --quantize: round only these matrices (attn: c_attn, c_proj; mlp: c_fc, c_proj; head: "
             "lm_head; embed: wte, wpe; recurrent: weight_ih, weight_hh), so that the loss can be attributed; a "
             "tied head is wte, rounded when either head or embed is named"},
    {.name = "quantize-act",
     .type = OT_CHOICE,
     .arg = "Q",
     .range = "none or q8 (any case)",
     .def_text = "none",
     .commands = RUNS,
     .field = F(quantize_act),
     .choose = choose_act_quant,
     .choices = "none q8",
     .help = "round every linear's input rows (one per position) as q8 rounds a weight row, before each "
             "product (simulated)"},
    {.name = "quantize-act",
     .type = OT_CHOICE,
     .arg = "Q",
     .range = "none or q8 (any case)",
     .def_text = "none",
     .commands = CMD_COMPARE,
     .field = F(quantize_act),
     .choose = choose_act_quant,
     .choices = "none q8",
     .help = "add, per model, a row with every linear's input rows rounded (q8 per row), weights float32"},
    {.name = "lens",
     .type = OT_FLAG,
     .commands = CMD_COMPARE,
     .field = F(lens),
     .value = 1,
     .help = "the logit lens: bits/char (a BPE model's bits/token) of the text read after each layer through the "
             "model's own final norm "
             "and head (docs/lab.md)"},
    {.name = "outliers",
     .type = OT_FLAG,
     .commands = CMD_COMPARE,
     .field = F(outliers),
     .value = 1,
     .help = "outlier statistics per layer of the residual stream and of every linear's input: max |x| / RMS, "
             "the share of |x| >= 6 and >= 6 RMS, kurtosis, the top channels and the norm gains' (docs/lab.md)"},
    {.name = "no-mmap",
     .type = OT_FLAG,
     .commands = CMD_ALL,
     .field = F(no_mmap),
     .value = 1,
     .help = "read the weights into memory instead of mapping them: a file rewritten in place under a mapping "
             "kills the process"},
    {.name = "no-repack",
     .type = OT_FLAG,
     .commands = CMD_ALL,
     .field = F(no_repack),
     .value = 1,
     .help = "keep every weight in the file's layout: no transposed copies, which cost memory (GPT-2 small: its "
             "head, 154 MB, and with AVX-512 its tall matrices, 353 MB in all) and speed; products round as in that "
             "layout"},
};
const size_t N_OPTIONS = sizeof OPTIONS / sizeof OPTIONS[0];
