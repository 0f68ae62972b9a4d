// commands_table.c — the command table: every command declared once (name, summary, usage, help,
// handler, and its options array, which each command's file declares beside it). The dispatcher
// (main.c), `normlab help`, the man page, the completion and docs/cli.md read these rows, as they
// read the options; tests/options_test.sh checks that they agree.
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "commands.h"
#include "options.h"

const Command COMMANDS[] = {
    {"generate", CMD_GENERATE, "sample text from a model, streamed to stdout",
     "[-m MODEL]... [-p TEXT | -f FILE] [-n N] [options]",
     "Streams the prompt and N sampled tokens (characters, or BPE tokens: a character cut between tokens waits "
     "for its end) to stdout (timing goes to stderr). With several -m, the same "
     "prompt, seed and sampling run through each model in turn, one block per model.",
     NULL, NULL, cmd_generate, GENERATE_OPTIONS, GENERATE_RELATIONS},
    {"eval", CMD_EVAL, "bits per character (and per byte) of a model on a text file", "[-m MODEL] -f FILE [options]",
     "Average negative log-likelihood of every token of FILE after the first (a character, or a BPE token), given "
     "those before it within the context window, as nats, bits and perplexity per token, each with its standard "
     "error, then per byte of the scored tokens (bits/byte, which character and BPE models share); progress (rate, "
     "time left) on a terminal and the elapsed time go to stderr.",
     NULL, NULL, cmd_eval, EVAL_OPTIONS, EVAL_RELATIONS},
    {"info", CMD_INFO, "a model's configuration, parameters and memory", "[-m MODEL] [--json] [-o FILE]",
     "Prints the model's configuration, parameter count, bytes of weights and of the KV cache, the OpenBLAS "
     "kernel family in use, and the provenance stored with the weights.",
     NULL, NULL, cmd_info, INFO_OPTIONS, INFO_RELATIONS},
    {"list", CMD_LIST, "every model found by name, with its norm, size and validation loss",
     "[-m NAME] [--json] [-o FILE]",
     "Every model found by name, folder by folder in search order: $NORMLAB_MODELS (':'-separated), weights/ "
     "beside the normlab binary, and the installed share/normlab/models. For each: its name, path, norm, "
     "placement, parameters and the validation loss stored in its metadata, shown in bits per character "
     "(--json: val_loss in nats) with whose estimate it is ('est. val bits/char (by)': train.py's "
     "final_val_loss, else a nanoGPT checkpoint's best_val_loss, both on sampled batches; 'normlab eval -f' "
     "over the whole validation split is the measured figure the README's table gives). A name found again "
     "in a later folder is marked shadowed: -m NAME loads the first.",
     NULL, NULL, cmd_list, LIST_OPTIONS, NO_RELATIONS},
    {"logits", CMD_LOGITS, "the logits of every position of a text, as JSON lines",
     "[-m MODEL] (-p TEXT | -f FILE) [options]",
     "Prints the logits of every position of the text (at most block_size tokens: characters, or a BPE "
     "model's tokens; any length for a recurrent model) as one JSON array of V numbers per line, from one "
     "batched prefill. For checking the engine against other implementations (tools/reference/parity.py). A "
     "non-finite logit is an error.",
     NULL, NULL, cmd_logits, LOGITS_OPTIONS, LOGITS_RELATIONS},
    {"profile", CMD_PROFILE, "where the time and FLOPs of a forward pass go, layer by layer",
     "[-m MODEL] [-p TEXT | -f FILE] [-n N] [--json] [-o FILE] [--trace FILE]",
     "Generates N tokens (characters, or BPE tokens) after the prompt and prints where the time went: prefill (the "
     "prompt, one "
     "batched pass) and decode (one token at a time) apart, every layer x component, with calls, time, share, "
     "FLOPs, GFLOP/s, bytes and GB/s, then per-layer and per-component totals and the part of the wall time no "
     "row covers. The generated text is not printed.",
     NULL, NULL, cmd_profile, PROFILE_OPTIONS, PROFILE_RELATIONS},
    {"compare", CMD_COMPARE, "models that differ in normalization, side by side on one text",
     "MODEL... -f FILE [--json] [-o FILE] [--csv FILE] [--plot-dir DIR] [--also-swap] [--invariance] "
     "[--lens] [--outliers] [--attention [--attention-pattern L.H]] [--quantize LIST] [--quantize-act Q] "
     "[--repeats N] [--threads N]",
     "The same text through every model: one row per model with norm type, placement, parameters, bits/char "
     "(bits/token for a BPE model, each row in its own unit) and perplexity, prefill and decode tokens/s (medians), "
     "the share of forward time in normalization, "
     "per-layer hidden-state statistics, and the largest logit difference between a sequence alone and in a "
     "batch of 16, and between prefill and KV-cache decoding. Recurrent models (lstm, gru) share the table; "
     "their hidden states are the norms of h_t (and the LSTM's c_t) over the text, from one unbroken pass. "
     "The lab's options add the logit lens, outlier statistics, attention statistics and quantized rows "
     "(docs/lab.md).",
     "MODEL", "a model by name ('normlab list') or path; -m MODEL is the same", cmd_compare, COMPARE_OPTIONS,
     COMPARE_RELATIONS},
    {"bench", CMD_BENCH, "prompt-processing and generation speed, as llama-bench measures it",
     "[-m MODEL]... [-p N,...] [-n N,...] [-t N,...] [-r N] [--format md|text|csv|json] [-o FILE]",
     "For every model x thread count: ppN, N random tokens in one forward pass, and tgN, N tokens decoded "
     "one at a time from an empty context; each test runs once untimed, then -r times, and its row gives the "
     "mean and standard deviation of the tokens per second. No Python is needed; make bench keeps the "
     "comparisons with PyTorch and ggml. Speed varies with what else the machine runs: compare rows of one run.",
     NULL, NULL, cmd_bench, BENCH_OPTIONS, NO_RELATIONS},
    {"quantize", CMD_QUANTIZE, "a model folder with its matrices stored in 16, 8 or 4 bits",
     "[-m MODEL] --type f32|f16|bf16|q8_0|q4_0 -o DIR [--keep NAME,...]",
     "Writes the model again into the folder DIR with every matrix (the linears, the embedding, the head) stored "
     "as TYPE, as llama-quantize does: q8_0 and q4_0 are ggml's blocks, the bytes llama.cpp writes for the same "
     "weights (docs/quantization.md). The other files are copied. Every command runs the new model; 'normlab "
     "info' shows each matrix's type and the bits a weight.",
     NULL, NULL, cmd_quantize, QUANTIZE_OPTIONS, NO_RELATIONS},
    {"fold", CMD_FOLD, "a model folder with its norms folded into the linears that read them",
     "[-m MODEL] -o DIR [--center [--force]]",
     "Writes an equivalent model into the folder DIR, as TransformerLens's fold_ln does: each norm's gain (and "
     "LayerNorm's bias, BatchNorm's running statistics) moves into the linear that reads it, and the norm is left "
     "as the identity; a head tied to wte gets its own matrix, and a bias where a norm's bias moves into it. "
     "Pre placement folds every norm; peri keeps its output norms; post folds only its last; each placement's "
     "rule is its recipe's (docs/lab.md). --center also centres the matrices writing into the residual stream "
     "and the unembedding (center_writing_weights, center_unembed), exact with LayerNorm where only norms read "
     "the stream (pre, peri, parallel, parallel-shared, sub). Every tensor is "
     "written float32; 'normlab compare --fold' measures the difference.",
     NULL, NULL, cmd_fold, FOLD_OPTIONS, FOLD_RELATIONS},
    {"patch", CMD_PATCH, "activation patching: the logit difference each residual-stream cell recovers",
     "[-m MODEL] --clean TEXT --corrupt TEXT [--target ID --foil ID] [--json] [-o FILE] [--plot-dir DIR]",
     "Runs the clean and the corrupted text (the same number of tokens), then the corrupted one again once per "
     "layer boundary and position with the clean run's residual-stream row put in there, as TransformerLens's "
     "patching does, and prints the (layer x position) map of the share of logit[target] - logit[foil] at the "
     "last position that each patch recovers: (patched - corrupted) / (clean - corrupted). Layer l is the "
     "stream entering layer l, and the last row the stream leaving the last layer; the target and foil are by "
     "default the clean and the corrupted run's top tokens. One forward pass a cell; transformers only "
     "(docs/lab.md).",
     NULL, NULL, cmd_patch, PATCH_OPTIONS, PATCH_RELATIONS},
    {"tokenize", CMD_TOKENIZE, "a text's token ids and their pieces", "[-m MODEL] (-p TEXT | -f FILE) [--json]",
     "Prints the ids the model's tokenizer gives the text, one 'ID -> 'PIECE'' a line (as llama.cpp's "
     "llama-tokenize does; control characters and bytes that are not valid UTF-8 escaped), for a character "
     "model or a BPE one (GPT-2's byte-level BPE: a piece may be part of a character).",
     NULL, NULL, cmd_tokenize, TOKENIZE_OPTIONS, TOKENIZE_RELATIONS},
};
const size_t N_COMMANDS = sizeof COMMANDS / sizeof COMMANDS[0];

const OptRelation NO_RELATIONS[] = {REL_END};  // list, bench, quantize: none between their options
