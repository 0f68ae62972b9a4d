// normlab.h — the public API of the normlab engine (libnormlab.a).
//
//   NlError err;
//   NlModel *model = NULL;
//   NlState *state = NULL;
//   if (nl_model_load(&model, "weights/shakespeare-pre-ln", &err) != 0) { puts(err.msg); ... }
//   if (nl_state_create(&state, model, NULL, &err) != 0) { ... }
//   const float *logits = nl_forward(state, ids, n, 0, 1);   // (1, V): next-token logits
//   nl_state_free(state);
//   nl_model_free(model);
//
// Ownership: *_create / *_load return objects the caller frees with the matching *_free, and every
// *_free accepts NULL. Pointers returned by accessors are borrowed and stay valid until the owning
// object is freed. A state borrows its model (free the state first); a sampler owns itself; a
// profiler or statistics object attached to a state (normlab_lab.h) is borrowed by it.
// Process-wide state the library touches: OpenBLAS's thread count (openblas_set_num_threads(1), set
// before each product, see NlRunOptions.threads) and nothing else; it has no globals of its own, so
// states may run on different threads at once (nl_eval and nl_generate do, given several).
// What a lab or a command line asks beyond running a model (names, observers, matrices) is in
// normlab_ext.h; the lab — profiler, hidden-state statistics, compare — is in normlab_lab.h. Functions that can
// fail return 0 on success and -1 on failure, with a one-line message naming the file, key or
// value in err->msg. The library never prints and never exits.
//
// Dimension letters, used in every comment: V vocabulary, T context (block_size), D width (n_embd),
// H heads, Dh head width (D/H), F MLP width, L layers, n positions in one forward call; recurrent
// models: E embedding width (n_input), S state width (n_hidden), G gate blocks (4 LSTM, 3 GRU).
#ifndef NORMLAB_H
#define NORMLAB_H

#include <stddef.h>
#include <stdint.h>

#include "nl_error.h"
#include "tokenizer.h"

#define NL_VERSION "0.1.0"
#define NL_FORMAT_NAME "normlab"
#define NL_FORMAT_VERSION 3  // the newest version read; versions 1 and 2 load unchanged

// The zero of each is "as the model is configured", so that a zero-initialised NlRunOptions never
// runs a model otherwise than it was trained. A model's own config never holds it.
typedef enum { NL_NORM_AS_CONFIGURED, NL_NORM_LAYERNORM, NL_NORM_RMSNORM, NL_NORM_BATCHNORM, NL_NORM_NONE } NlNormType;
typedef enum { NL_PLACE_AS_CONFIGURED, NL_PLACE_PRE, NL_PLACE_POST, NL_PLACE_PERI } NlPlacement;
// Which statistics BatchNorm normalises with: the running averages stored with the model (as at
// inference in PyTorch), or those of the rows of the current forward call: every position of
// every sequence in it (as in training). One-token decoding of one sequence is a call of one row,
// whose variance is 0: every feature becomes its bias.
typedef enum { NL_BN_RUNNING, NL_BN_BATCH } NlBnStats;
typedef enum { NL_ACT_GELU, NL_ACT_GELU_TANH, NL_ACT_RELU } NlActivation;
// A stack of transformer blocks, or of recurrent cells (format version 3): LSTM or GRU, each
// layer-normalised (Ba, Kiros & Hinton 2016) or plain, with no context window.
typedef enum { NL_ARCH_TRANSFORMER, NL_ARCH_LSTM, NL_ARCH_GRU } NlArch;

// Every family has arch, vocab_size, n_layer, norm and norm_eps; the other fields are one family's,
// and 0 in a model of the other (residual_scale 1). A recurrent model has n_input (E) and n_hidden (S), no context
// window (nl_forward takes any number of positions) and placement NL_PLACE_AS_CONFIGURED.
typedef struct {
    NlArch arch;
    int vocab_size;  // V
    int n_layer;  // L
    NlNormType norm;
    double norm_eps;
    // the transformer's
    int n_head;  // H
    int n_embd;  // D
    int block_size;  // T
    int n_inner;  // F (from n_inner, or mlp_ratio * D)
    NlPlacement placement;
    double residual_scale;  // alpha of post placement, x = N(alpha*x + Sublayer(x)); 1 but for DeepNorm
    NlActivation activation;
    int bias;  // linears have biases
    int tie_embeddings;  // lm_head is wte
    // the recurrent models'
    int n_input;  // E: the embedding width, config.json's "n_embd"
    int n_hidden;  // S: the state width
} NlConfig;

// The most logits one call on a recurrent model returns per sequence (n_logits <= this).
#define NL_RNN_LOGITS 128

typedef struct NlModel NlModel;
typedef struct NlState NlState;

// ---- model (model.c)

// Loads a model directory (config.json, tokenizer.json, model.safetensors; the weights are
// memory-mapped, not copied) or a single .json file with inline tensors. Every file is validated.
int nl_model_load(NlModel **out, const char *path, NlError *err);
typedef struct {
    int no_mmap;  // 1: read model.safetensors into memory instead of mapping it (llama.cpp's --no-mmap)
    int no_repack;  // 1: no transposed copies of weights (llama.cpp's --no-repack): memory is the file's
    // 1: for a model that is described, not run (normlab info, tokenize, list): the files, names and
    // shapes are checked as always, but no weight is read: no NaN/Inf check, no copies (so a mapped
    // file's pages stay on disk). nl_model_transposed_bytes still says what a run's load would copy.
    // nl_state_create refuses such a model.
    int shapes_only;
} NlLoadOptions;
// nl_model_load with options (NULL: the defaults above). A mapped file that another program
// truncates or rewrites in place while it is mapped kills the process (SIGBUS); normlab's own
// tools replace model files by renaming, which is safe. no_mmap costs the weights' size in memory.
int nl_model_load_with(NlModel **out, const char *path, const NlLoadOptions *opts, NlError *err);
void nl_model_free(NlModel *model);
const NlConfig *nl_model_config(const NlModel *model);
// The positions one sequence of the model holds: a transformer's block_size; SIZE_MAX for a
// recurrent model, which has no window (its state carries any length). Generation shifts a full
// window; evaluation scores windows of it, or the whole text through one state when unlimited.
size_t nl_model_window(const NlModel *model);
// The bytes one sequence's state takes: a transformer's KV cache (block_size rounded up to a multiple
// of 32), a recurrent model's h of every layer and the LSTM's c.
size_t nl_model_state_bytes(const NlModel *model);
const NlTokenizer *nl_model_tokenizer(const NlModel *model);
size_t nl_model_parameters(const NlModel *model);  // number of distinct weights (tied counted once)

// ---- state and forward pass (state.c, through the family tables)

// A linear's input rows x (rows, cols), copied where the hook may rewrite them (in place) before they
// enter the product; called from the thread running the forward call, with the hook's ctx.
typedef struct {
    void (*fn)(void *ctx, float *x, size_t rows, size_t cols);
    void *ctx;  // borrowed for the state's life
} NlLinearInputHook;

typedef struct {
    NlNormType norm;  // run the norms as this type; NL_NORM_AS_CONFIGURED (0): the model's
    NlPlacement placement;  // run the blocks with this placement; NL_PLACE_AS_CONFIGURED (0): the model's
    int batch;  // independent sequences per forward call, at most (0 means 1)
    int threads;  // threads a matrix-vector product's output rows are split over (0 means 1; at most
        // the CPUs): the state keeps them for its life, and with one a CPU binds them and the creating
        // thread (until nl_state_free); each row is one OpenBLAS call, so results do not depend on it
    NlBnStats bn_stats;  // BatchNorm's statistics (NL_BN_RUNNING: the model's running averages)
    NlLinearInputHook linear_input;  // called on every linear's input rows before the product (the lab's
        // --quantize-act); fn NULL: none, and no copy
} NlRunOptions;
// Every default spelled out: the model's norm and placement, one sequence, one OpenBLAS thread,
// BatchNorm with running statistics, no input hook. A zero-initialised NlRunOptions means the same.
#define NL_RUN_DEFAULTS                                  \
    ((NlRunOptions){.norm = NL_NORM_AS_CONFIGURED,       \
                    .placement = NL_PLACE_AS_CONFIGURED, \
                    .batch = 1,                          \
                    .threads = 1,                        \
                    .bn_stats = NL_BN_RUNNING,           \
                    .linear_input = {NULL, NULL}})

// Allocates activations and the KV cache for `batch` sequences of T positions. opts NULL runs the
// model as configured, one sequence at a time. A norm the run needs and the model lacks (ln_f of
// a post model run as pre, ln_*_post of a model run as peri, every norm of a norm-free model run
// with one) has unit gain and no bias; a model's norms run as another type keep their gain and
// bias (a missing bias is zero). BatchNorm with running statistics needs them in the model: run
// on a model without them it fails, naming the tensor (batch statistics need none).
int nl_state_create(NlState **out, const NlModel *model, const NlRunOptions *opts, NlError *err);
void nl_state_free(NlState *state);
size_t nl_state_batch(const NlState *state);  // sequences per forward call, at most
// The config the state runs: the model's, with the run options applied.
const NlConfig *nl_state_config(const NlState *state);

// Runs tokens[0..n) at positions pos..pos+n-1 (requires 1 <= n, pos + n <= T, ids < V), reading
// keys and values of positions 0..pos-1 from the cache and writing those of the new positions.
// Returns the logits of the last n_logits positions, (n_logits, V), valid until the next call.
// n == 1 is decoding (matrix-vector products); n > 1 is a batched prefill (matrix-matrix).
// Never allocates.
const float *nl_forward(NlState *state, const int *tokens, size_t n, size_t pos, size_t n_logits);
// A recurrent model's state has no window and no cache: any n, pos 0 starts from the zero state,
// any other pos must be where the previous call ended (pos + n of it), and n_logits <= NL_RNN_LOGITS.
// nl_state_copy_cache then copies sequence from's state (h, c) to sequence to, whatever n.
// The same for B <= batch independent sequences at once: tokens (B, n), each sequence with its own
// KV cache, all at positions pos..pos+n-1. Rows of all sequences share each matrix product.
// Returns logits (B, n_logits, V).
const float *nl_forward_batch(NlState *state, const int *tokens, size_t B, size_t n, size_t pos, size_t n_logits);

// Copies the cached keys and values of positions 0..n-1 from sequence `from` to sequence `to` (both
// < batch): streams that share a prompt are prefilled once. Whole tiles of 32 positions are copied,
// so positions n.. up to the next multiple of 32 in `to` are overwritten too.
void nl_state_copy_cache(NlState *state, size_t from, size_t to, size_t n);

// ---- sampler (sampler.c)

// The chain, in order: penalties on the logits (llama.cpp's definitions, in float as llama.cpp
// computes them: for each token seen c > 0 times in the last repeat_last_n, a logit l becomes
// l * r if l <= 0 else l / r, then l - c * frequency - presence), then greedy, or temperature,
// top-k, top-p and min-p. A zero field is off, so {T, K, P} is plain sampling.
typedef struct {
    double temperature;  // 0 = greedy (argmax of the penalized logits, lowest id on ties)
    int top_k;  // 0 = off; values above V keep everything
    double top_p;  // in (0, 1]; 1 = off
    double min_p;  // in [0, 1]: keep the tokens whose probability is at least min_p times the largest (0 = off)
    double repeat_penalty;  // r > 0 (1 or 0 = off)
    int repeat_last_n;  // the tokens the penalties look back on (0 = none: penalties off)
    double presence_penalty, frequency_penalty;  // 0 = off
    int n_probs;  // in [0, NL_SAMPLER_PROBS_MAX]: each draw records the top n_probs of the model's softmax
} NlSamplerParams;
#define NL_SAMPLER_PROBS_MAX 100

typedef struct NlSampler NlSampler;
int nl_sampler_create(NlSampler **out, int vocab_size, NlSamplerParams params, uint64_t seed, NlError *err);
void nl_sampler_free(NlSampler *sampler);
// The candidates left after temperature, then top-k, then top-p, sorted by descending probability
// (ties by id), with probabilities renormalised to sum to 1. Returns their count, or -1 when a
// logit is NaN or infinite. *ids and *probs are borrowed until the next call.
int nl_sampler_candidates(NlSampler *sampler, const float *logits, const int **ids, const double **probs);
// Draws the next token from (V) logits and accepts it into the penalties' history; -1 when a logit
// is NaN or infinite.
int nl_sampler_sample(NlSampler *sampler, const float *logits);
// Adds a token to the penalties' history (the prompt's tokens, before the first draw), as llama.cpp's
// accept does; a token outside [0, V) is ignored.
void nl_sampler_accept(NlSampler *sampler, int token);
// With n_probs > 0, what the last draw recorded from its logits before the penalties, at temperature
// 1: *logprob the drawn token's natural log-probability, and the n_probs most likely tokens (ties by
// id) with theirs, borrowed until the next draw. Returns their count (0 before any draw, or off).
int nl_sampler_probs(const NlSampler *sampler, double *logprob, const int **ids, const double **logprobs);

// ---- sequence context (context.c)

// One state's sequences as text goes in (llama.cpp's context, llama2.c's generate loop): each feed
// runs ids after the tokens cached so far and returns the logits after them. A transformer's window
// of T that a feed would overflow shifts: its most recent T/2 tokens (the feed's last ones included)
// run again at positions 0..T/2-1, and the text goes on (a feed into an empty window keeps its last
// T). With exact_window every feed recomputes the last T tokens from position 0 (nanoGPT's sampler).
// A recurrent model (nl_model_window SIZE_MAX) never shifts: its state carries the whole text.
typedef struct NlContext NlContext;
typedef struct {
    size_t streams;  // B sequences fed side by side, on the state's sequences 0..B-1 (0 means 1; at most its batch)
    int exact_window;  // 1: nanoGPT's recompute instead of the shift (transformers only)
} NlContextOptions;
typedef struct {
    size_t len;  // positions each sequence holds: a window's tokens, or a recurrent model's text so far
    size_t shifts;  // context shifts so far
} NlContextPosition;
// The context borrows state (free the context first); opts NULL: one sequence, shifting.
int nl_context_create(NlContext **out, NlState *state, const NlContextOptions *opts, NlError *err);
void nl_context_free(NlContext *ctx);
// Feeds ids (rows, n), n >= 1: rows B, one row per sequence, or rows 1 into an empty context, the
// same ids for every sequence (run once, the cache copied). Returns the logits after them (B, V),
// valid until the next feed; *pos (when not NULL) gets where the context is now. Never allocates.
const float *nl_context_feed(NlContext *ctx, const int *ids, size_t rows, size_t n, NlContextPosition *pos);

// ---- generation (generate.c)

// Called with each stream's sampled token; returns NL_EMIT_CONTINUE, NL_EMIT_STOP to stop the whole
// generation (a write error, say; any other nonzero value too), or NL_EMIT_DONE to end this stream
// only: it gets no more tokens, and its group stops once all of its streams are done.
typedef int (*NlEmitFn)(int stream, int token, void *ctx);
enum { NL_EMIT_CONTINUE = 0, NL_EMIT_STOP = 1, NL_EMIT_DONE = 2 };

typedef struct {
    size_t n_new;  // tokens to generate per stream
    int exact_window;  // 1: recompute the last T positions for every token (nanoGPT's sampler)
    NlEmitFn emit;  // every token of every stream, as it is sampled (NULL: none)
    void *emit_ctx;
} NlGenerateOptions;

typedef struct {
    size_t prompt_used;  // prompt tokens fed (the last T when the prompt is longer)
    double prefill_seconds;
    size_t decode_tokens;  // forward passes after the prefill (steps, of each stream)
    double decode_seconds;  // those passes and the sampling of the tokens they produce (not emit)
    size_t context_shifts;
    double shift_seconds;  // of decode_seconds, the steps that shifted the context (re-prefilling T/2)
} NlGenerateStats;

// Generates opts->n_new tokens for each of n_streams streams after the same prompt[0..n_prompt)
// (n_prompt >= 1): stream i samples with samplers[i], and opts->emit gets (i, token) for every
// stream after each step. The prompt is prefilled once per group of streams and its cache copied;
// each step shares every matrix product across a group. When the window of T positions is full,
// the most recent T/2 tokens are re-processed in one batched pass at positions 0..T/2-1 (a context
// shift) and decoding goes on; with exact_window, every token recomputes the last T positions.
// The streams go in groups of G = nl_state_batch(states[0]) (every state the same batch), shared
// among n_states worker threads, one state each: stream i is in group i / G, and each group runs
// alone on its state, so every stream's tokens are the same whatever n_states is. With several
// states, emit is called from the worker threads and must be safe to call concurrently for
// different streams; give those states NlRunOptions.threads 1 (the workers are the threads).
// decode_seconds is the run's wall time less one prefill (the longest). Returns 0 when done, 1
// when emit asked to stop, -1 on error (non-finite logits), with the first failed group's error in
// stream order.
int nl_generate(NlState *const *states, size_t n_states, NlSampler *const *samplers, size_t n_streams,
                const int *prompt, size_t n_prompt, const NlGenerateOptions *opts, NlGenerateStats *stats,
                NlError *err);

// ---- evaluation (eval.c)

typedef struct {
    double nll_sum;  // sum of -ln p(char | preceding chars), nats
    double nll_sq_sum;  // sum of their squares (for the standard error of the mean)
    size_t count;  // characters scored: every one after the first
    double seconds;  // the call's wall time
} NlEvalResult;

typedef void (*NlProgressFn)(size_t done, size_t total, double seconds, void *ctx);  // seconds since the call began
// After each forward call of a windowed model: `windows` windows from window `first` on
// (nl_eval_window, normlab_ext.h) have just run in state, their logits scored; the state may be used
// (nl_state_readout) until the hook returns. Called from the thread that ran the call.
typedef void (*NlEvalCallFn)(void *ctx, NlState *state, size_t first, size_t windows);
// Each scored input once: input p (it predicts ids[p + 1]) with its logits (V) and its loss, -ln
// softmax(logits)[ids[p + 1]]. Called from the thread that scored it, in no order across threads.
typedef void (*NlEvalScoredFn)(void *ctx, size_t input, const float *logits, double nll);

typedef struct {
    size_t stride;  // a windowed model's windows move this far (1 <= stride <= T); others ignore it
    size_t segments;  // a model without a window: parts of the text, each from the zero state (0 means 1)
    NlProgressFn progress;  // NULL: none; called from the calling thread only
    void *progress_ctx;
    NlEvalCallFn call_done;  // NULL: none (the lab's logit lens)
    void *call_ctx;
    NlEvalScoredFn scored;  // NULL: none (eval's per-token losses, its KL divergence)
    void *scored_ctx;
} NlEvalOptions;

// Scores ids[1..n) given the characters before each, on n_states worker threads, one state each
// (every state with the same batch B; a profiler or statistics attached to a state see that
// thread's share; give the states NlRunOptions.threads 1 when there are several: the workers are
// the threads).
// A windowed model (a transformer), within its context window: the first window covers inputs
// 0..T-1; each later one moves `stride` positions and scores only its last `stride` targets, so
// every character is scored once with at least T - stride characters of context (all of them,
// inside the first window). The last window ends at the text's end, so it may score fewer. Windows
// go B to a forward call; the losses are summed window by window within a call, and calls in text
// order, so the result is the same bit for bit whatever n_states is.
// A model without a window (the recurrent ones), on states[0]: every character after the first is
// scored through one unbroken state from the zero state. With segments K > 1 (K <= B) the n - 1
// inputs are cut into K contiguous parts, part k the inputs [k (n-1) / K, (k+1) (n-1) / K), each
// run from the zero state, all K in the same calls: K times fewer steps, each a product of K rows
// (sgemm) instead of one (sgemv), at the price of the context lost at every cut.
int nl_eval(NlState *const *states, size_t n_states, const int *ids, size_t n, const NlEvalOptions *opts,
            NlEvalResult *out, NlError *err);

#endif
