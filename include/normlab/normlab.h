// normlab.h — the public API of the normlab engine (libnormlab.a).
//
//   NlError err;
//   NlModel *model = NULL;
//   NlState *state = NULL;
//   if (nl_model_load(&model, "weights/shakespeare-pre-ln", NULL, &err) != 0) { puts(err.msg); ... }
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
// The lab — profiler, hidden-state statistics, compare — is in normlab_lab.h. Functions that can
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
#include <stdio.h>

#define NL_VERSION "0.1.0"
#define NL_FORMAT_NAME "normlab"
#define NL_FORMAT_VERSION 7  // the newest version read; versions 1 to 6 load unchanged

#include "normlab_error.h"
#include "normlab_tokenizer.h"

// The zero of each is "as the model is configured", so that a zero-initialised NlRunOptions never
// runs a model otherwise than it was trained. A model's own config never holds it.
// NL_NORM_DYT: no statistics, gain * tanh(alpha x) + bias (Zhu et al. 2025, "Transformers without
// Normalization"), alpha one learned scalar per norm.
typedef enum {
    NL_NORM_AS_CONFIGURED,
    NL_NORM_LAYERNORM,
    NL_NORM_RMSNORM,
    NL_NORM_BATCHNORM,
    NL_NORM_NONE,
    NL_NORM_DYT
} NlNormType;
// Where a block's norms sit: each placement is a recipe of steps (normlab_lab.h's nl_placement_info; docs/comparing.md
// gives their equations and sources); NL_PLACE_CUSTOM is a model's own, config.json's "block".
typedef enum {
    NL_PLACE_AS_CONFIGURED,
    NL_PLACE_PRE,
    NL_PLACE_POST,
    NL_PLACE_PERI,
    NL_PLACE_POST_SUBLAYER,
    NL_PLACE_PARALLEL,
    NL_PLACE_PARALLEL_SHARED,
    NL_PLACE_MIX,
    NL_PLACE_SUB,
    NL_PLACE_CUSTOM
} NlPlacement;
// A placement as its recipe describes it (recipe.c's table; normlab_lab.h's nl_placement_info).
typedef struct {
    const char *name;  // nl_name(NL_NAMES_PLACEMENT, p)
    const char *equations;  // the block, one line
    const char *source;  // the paper or model family it comes from
    int final_norm;  // ln_f before the head
    int output_norms;  // its norms on the branches' outputs (ln_1_post, ln_2_post)
    NlPlacement swap;  // compare --also-swap's other placement
} NlPlacementInfo;
// Which statistics BatchNorm normalises with: the running averages stored with the model (as at
// inference in PyTorch), or those of the rows of the current forward call: every position of
// every sequence in it (as in training). One-token decoding of one sequence is a call of one row,
// whose variance is 0: every feature becomes its bias.
typedef enum { NL_BN_RUNNING, NL_BN_BATCH } NlBnStats;
// QK-norm (a family with NlFamilyInfo.qk_norm: the Llama family's q and k normalised per head over
// Dh before RoPE, with the run's norm type): as the model has it, on (its gains, or unit gains where
// it has none), or off.
typedef enum { NL_QK_NORM_AS_CONFIGURED, NL_QK_NORM_ON, NL_QK_NORM_OFF } NlQkNorm;
// The MLP's activation; Llama's SiLU (x sigmoid(x)) gates its MLP: down(silu(gate x) * up x).
typedef enum { NL_ACT_GELU, NL_ACT_GELU_TANH, NL_ACT_RELU, NL_ACT_SILU } NlActivation;
// A stack of transformer blocks, or of recurrent cells (format version 3): LSTM or GRU, each
// layer-normalised (Ba, Kiros & Hinton 2016) or plain, with no context window; or (format version 4)
// Llama's blocks: RoPE in place of learned positions, a gated SiLU MLP, grouped key/value heads.
typedef enum { NL_ARCH_TRANSFORMER, NL_ARCH_LSTM, NL_ARCH_GRU, NL_ARCH_LLAMA } NlArch;
// How a weight matrix is stored (docs/format.md): float32; IEEE half or bfloat16; or ggml's Q8_0 and
// Q4_0, blocks of 32 weights along a row with one F16 scale each (8.5 and 4.5 bits a weight).
typedef enum { NL_DTYPE_F32, NL_DTYPE_F16, NL_DTYPE_BF16, NL_DTYPE_Q8_0, NL_DTYPE_Q4_0, NL_DTYPE_COUNT } NlDType;

// A model's config as loaded, or as a state runs it: opaque here, because its fields are its
// family's (a new family adds its own without changing this header). What describes a model —
// its arch, vocabulary, layers, norm, placement and its family's own fields by config.json key —
// is in NlModelDesc (nl_model_describe); a state's config is a handle the lab's profiler takes.
typedef struct NlConfig NlConfig;

typedef struct NlModel NlModel;
typedef struct NlState NlState;

// ---- model (model.c)

typedef struct {
    int no_mmap;  // 1: read model.safetensors into memory instead of mapping it (llama.cpp's --no-mmap)
    int no_repack;  // 1: no transposed copies of weights (llama.cpp's --no-repack): memory is the file's
    // 1: for a model that is described, not run (normlab info, tokenize, list): the files, names and
    // shapes are checked as always, but no weight is read: no NaN/Inf check, no copies (so a mapped
    // file's pages stay on disk). NlModelDesc.transposed_bytes still says what a run's load would copy.
    // nl_state_create refuses such a model.
    int shapes_only;
} NlLoadOptions;
// Loads a model directory (config.json, tokenizer.json, model.safetensors; the weights are
// memory-mapped, not copied) or a single .json file with inline tensors, with opts (NULL: the
// defaults above, all 0). Every file is validated. A mapped file that another program truncates or
// rewrites in place while it is mapped kills the process (SIGBUS); normlab's own tools replace
// model files by renaming, which is safe. no_mmap costs the weights' size in memory.
int nl_model_load(NlModel **out, const char *path, const NlLoadOptions *opts, NlError *err);
void nl_model_free(NlModel *model);
const NlTokenizer *nl_model_tokenizer(const NlModel *model);

// ---- state and forward pass (state.c, through the family tables)

typedef struct {
    NlNormType norm;  // run the norms as this type; NL_NORM_AS_CONFIGURED (0): the model's
    NlPlacement placement;  // run the blocks with this placement; NL_PLACE_AS_CONFIGURED (0): the model's
    int batch;  // independent sequences per forward call, at most (0 means 1)
    int threads;  // threads a matrix-vector product's output rows are split over (0 means 1; at most
        // the CPUs): the state keeps them for its life, and with one a CPU binds them and the creating
        // thread (until nl_state_free); each row is one OpenBLAS call, so results do not depend on it
    NlBnStats bn_stats;  // BatchNorm's statistics (NL_BN_RUNNING: the model's running averages)
    NlQkNorm qk_norm;  // QK-norm on or off (NL_QK_NORM_AS_CONFIGURED: as the model has it)
} NlRunOptions;
// Every default spelled out: the model's norm and placement, one sequence, one OpenBLAS thread,
// BatchNorm with running statistics. A zero-initialised NlRunOptions means the same.
#define NL_RUN_DEFAULTS                                  \
    ((NlRunOptions){.norm = NL_NORM_AS_CONFIGURED,       \
                    .placement = NL_PLACE_AS_CONFIGURED, \
                    .batch = 1,                          \
                    .threads = 1,                        \
                    .bn_stats = NL_BN_RUNNING,           \
                    .qk_norm = NL_QK_NORM_AS_CONFIGURED})

// Allocates activations and the KV cache for `batch` sequences of T positions. opts NULL runs the
// model as configured, one sequence at a time. A norm the run needs and the model lacks (ln_f of
// a post model run as pre, ln_*_post of a model run as peri, every norm of a norm-free model run
// with one) has unit gain and no bias; a model's norms run as another type keep their gain and
// bias (a missing bias is zero). BatchNorm with running statistics needs them in the model: run
// on a model without them it fails, naming the tensor (batch statistics need none).
int nl_state_create(NlState **out, const NlModel *model, const NlRunOptions *opts, NlError *err);
void nl_state_free(NlState *state);
// The config the state runs: the model's, with the run options applied (a handle: normlab_lab.h's
// profiler takes it).
const NlConfig *nl_state_config(const NlState *state);

// Runs tokens[0..n) at positions pos..pos+n-1 (requires 1 <= n, pos + n <= T, ids < V), reading
// keys and values of positions 0..pos-1 from the cache and writing those of the new positions.
// Returns the logits of the last n_logits positions, (n_logits, V), valid until the next call.
// n == 1 is decoding (matrix-vector products); n > 1 is a batched prefill (matrix-matrix).
// Never allocates.
const float *nl_forward(NlState *state, const int *tokens, size_t n, size_t pos, size_t n_logits);
// A recurrent model's state has no window and no cache: any n, pos 0 starts from the zero state,
// any other pos must be where the previous call ended (pos + n of it), and n_logits <= NlModelDesc.call_logits.
// The same for B <= batch independent sequences at once: tokens (B, n), each sequence with its own
// KV cache, all at positions pos..pos+n-1. Rows of all sequences share each matrix product.
// Returns logits (B, n_logits, V).
const float *nl_forward_batch(NlState *state, const int *tokens, size_t B, size_t n, size_t pos, size_t n_logits);

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
// T). A model with rotary positions (RoPE: the Llama family) shifts in place instead, as llama.cpp
// does: the first `keep` tokens stay (BOS), half of the rest after them go, and the cached keys of
// the others are turned back by as many positions, with no re-prefill (docs/llama.md); a feed that
// would still overflow re-prefills as above. With exact_window every feed recomputes the last T
// tokens from position 0 (nanoGPT's sampler). A recurrent model (NlModelDesc.window SIZE_MAX) never shifts:
// its state carries the whole text.
typedef struct NlContext NlContext;
typedef struct {
    size_t streams;  // B sequences fed side by side, on the state's sequences 0..B-1 (0 means 1; at most its batch)
    int exact_window;  // 1: nanoGPT's recompute instead of the shift (transformers only)
    size_t keep;  // RoPE's shift: the tokens at the start it never drops (llama.cpp's n_keep; 1 for a BOS)
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
    size_t keep;  // RoPE's shift keeps the first keep tokens (NlContextOptions.keep: 1 for a BOS)
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
// shift; a RoPE model's shifts in place, keeping opts->keep tokens: NlContext's rule) and decoding goes on;
// with exact_window, every token recomputes the last T positions.
// The streams go in groups of G = the states' NlRunOptions.batch (every state the same batch), shared
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
    size_t bytes;  // the bytes of the tokens scored (bits per byte's denominator)
    double seconds;  // the call's wall time
} NlEvalResult;

typedef void (*NlProgressFn)(size_t done, size_t total, double seconds, void *ctx);  // seconds since the call began
// Each scored input once: input p (it predicts ids[p + 1]) with its logits (V) and its loss, -ln
// softmax(logits)[ids[p + 1]]. Called from the thread that scored it, in no order across threads.
typedef void (*NlEvalScoredFn)(void *ctx, size_t input, const float *logits, double nll);

typedef struct {
    size_t stride;  // a windowed model's windows move this far (1 <= stride <= T); others ignore it
    size_t segments;  // a model without a window: parts of the text, each from the zero state (0 means 1)
    NlProgressFn progress;  // NULL: none; called from the calling thread only
    void *progress_ctx;
    NlEvalScoredFn scored;  // NULL: none (eval's per-token losses, its KL divergence)
    void *scored_ctx;
    // A windowed model: 0 (windows at stride), or N: llama-perplexity's chunks of N instead (3 <= N <= T,
    // n >= 2N): chunk k holds ids[kN, kN + N) and scores only its second half's targets, inputs
    // kN + N/2 .. kN + N - 2; the n / N whole chunks, the rest of the text unscored.
    size_t chunk;
    int chunk_bos;  // with chunk: 1 puts the tokenizer's bos first in every chunk (llama-perplexity's add_bos)
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

// The words normlab and config.json use for a choice: a kind of choice and one of its values.
typedef enum {
    NL_NAMES_NORM,  // NlNormType: "layernorm", "rmsnorm", "batchnorm", "none"
    NL_NAMES_PLACEMENT,  // NlPlacement: "pre", "post", "peri", "post-sublayer", ..., "custom"
    NL_NAMES_BN_STATS,  // NlBnStats: "running", "batch"
    NL_NAMES_ACTIVATION,  // NlActivation: "gelu", "gelu_tanh", "relu", "silu"
    NL_NAMES_ARCH,  // NlArch: "transformer", "lstm", "gru", "llama"
    NL_NAMES_TOKENIZER,  // NlTokenizerKind: "char", "bpe", "sentencepiece"
    NL_NAMES_QK_NORM,  // NlQkNorm: "on", "off"
    NL_NAMES_DTYPE,  // NlDType: "f32", "f16", "bf16", "q8_0", "q4_0"
} NlNames;
// The name of value (a static string), "?" when it has none.
const char *nl_name(NlNames kind, int value);
// The value name stands for, compared without case ("RMSNorm"), into *value; -1 when none.
int nl_name_parse(NlNames kind, const char *name, int *value);

// Reads a whole regular file of at most cap bytes (a text to score, a prompt) into a new
// NUL-terminated buffer (*buf, free() it). A directory, FIFO or device is refused; errors name path.
int nl_read_file(const char *path, size_t cap, char **buf, size_t *len, NlError *err);

// ---- OpenBLAS's kernel family (blascore.c)
//
// OpenBLAS picks a family of kernels for the CPU when it loads, reading OPENBLAS_CORETYPE if set;
// Debian's 0.3.21 falls back to generic SSE kernels ("Prescott", 2.5x slower) on CPUs newer than
// it. The family cannot change once the library is loaded, so an embedder that wants the right one
// calls nl_blas_choose_core at start and, if it returns a name, sets OPENBLAS_CORETYPE to it and
// re-executes itself (what the normlab CLI does), or sets the variable in the launching
// environment.

const char *nl_blas_core(void);  // the family in use, e.g. "Haswell" (openblas_get_corename)
// The family to ask for instead of `reported` (the one OpenBLAS picked, nl_blas_core), or NULL to
// keep it, for the CPU running the process (cpuid): NULL when opt_out is set or env_coretype (the
// value of OPENBLAS_CORETYPE, NULL if unset) is non-empty, when `reported` is not a family of
// OpenBLAS 0.3.21, or when the CPU offers nothing wider than it; else "SkylakeX" for a CPU with
// AVX-512 F/BW/VL/DQ, "Haswell" for one with AVX2 and FMA.
const char *nl_blas_choose_core(const char *reported, const char *env_coretype, int opt_out);

// ---- observing a forward pass (the lab's profiler and statistics attach here)

// The components of a forward pass, in the order they run in a peri-LN block (pre-LN without the
// two output norms); a recurrent model has embed, its four rnn components per layer and lm_head.
typedef enum {
    NL_COMP_EMBED,
    NL_COMP_NORM1,
    NL_COMP_QKV,
    NL_COMP_ATTENTION,
    NL_COMP_NORM1_SUB,  // sub placement's inner norms (before attention's output projection, the MLP's down)
    NL_COMP_ATTN_PROJ,
    NL_COMP_NORM1_POST,  // peri placement's output norms
    NL_COMP_RESIDUAL,
    NL_COMP_NORM2,
    NL_COMP_MLP_UP,
    NL_COMP_ACTIVATION,
    NL_COMP_NORM2_SUB,
    NL_COMP_MLP_DOWN,
    NL_COMP_NORM2_POST,
    NL_COMP_RNN_INPUT,  // recurrent layers: input projections of a chunk (sgemm; `ctx` = input width)
    NL_COMP_RNN_RECURRENT,  // one step's W_hh h (sgemv for one sequence)
    NL_COMP_RNN_NORM,  // LayerNorms and bias adds (`ctx` = features normalised per row)
    NL_COMP_RNN_GATES,  // the cell's element-wise update
    NL_COMP_FINAL_NORM,
    NL_COMP_LM_HEAD,
    NL_COMP_SAMPLING,
    NL_COMP_COUNT
} NlComponent;
typedef enum { NL_PHASE_PREFILL, NL_PHASE_DECODE, NL_PHASE_COUNT } NlPhase;

// The places a watcher's site callback sees (the outlier statistics): a transformer's residual stream
// entering layer l (layer L: leaving the last one) and the input of each linear as it enters the
// product (before --quantize-act rounds it): c_attn's, c_proj's, c_fc's, the MLP c_proj's, and the
// head's (layer L); a recurrent layer's h and the LSTM's c after each step. The gain passed is that
// of the norm whose output the rows are (pre and peri: ln_1 for c_attn, ln_2 for c_fc, ln_f for the
// head; post: the previous layer's ln_2 for c_attn and the head, ln_1 for c_fc), and for the stream
// that of the norm it last passed through (post) or is about to (pre, peri: ln_1, at L ln_f).
typedef enum {
    NL_SITE_RESIDUAL,
    NL_SITE_QKV,
    NL_SITE_PROJ,
    NL_SITE_FC,
    NL_SITE_OUT,
    NL_SITE_HEAD,
    NL_SITE_H,
    NL_SITE_C,
    NL_SITE_COUNT
} NlSite;

// ---- model families (families.c, the registry; each family's table in its own file: transformer.c, rnn.c)
//
// What a family has, from its table: the command line, reports and the lab ask this, and never
// which arch a model is.
typedef struct {
    const char *name;  // nl_name(NL_NAMES_ARCH, arch)
    int windowed;  // its context is a window of block_size positions (a KV cache); 0: a state carries any length
    int has_placement;  // its norms sit pre, post or peri (a recurrent cell's have one place)
    int has_residual_stream;  // sublayers add into a residual stream: the lens, branch RMS, norm outputs, invariance
    int qk_norm;  // it can normalise q and k per head (NlRunOptions.qk_norm switches it)
    int state_vectors;  // vectors a layer carries from one position to the next: 0 (a KV cache), 1 or 2
    const char *state_names[2];  // their names: "h", and the LSTM's "c"
    const char *state_bytes_key;  // what NlModelDesc.state_bytes counts: "kv_cache_bytes", "state_bytes"
    unsigned norms;  // the norm types it runs: bit (1u << t) for each NlNormType t
    int trace_events_per_layer;  // the most profiler events one layer records in a forward call
    int prunes_rows;  // its last layer goes on with only the rows a logit reads (the profile marks them)
    unsigned matrix_classes;  // the NL_MATRIX_* classes its matrices have
} NlFamilyInfo;
const NlFamilyInfo *nl_family_info(NlArch arch);

// One config field as `info` shows it, named by its config.json key.
typedef enum { NL_FIELD_NUMBER, NL_FIELD_STRING, NL_FIELD_BOOL } NlFieldType;
typedef struct {
    const char *key;
    NlFieldType type;
    double number;  // NL_FIELD_NUMBER; NL_FIELD_BOOL: 0 or 1
    const char *string;  // NL_FIELD_STRING: a static name
} NlConfigField;
#define NL_CONFIG_FIELDS_MAX 28

// ---- describing a model (describe.c): what `normlab info` shows, as llama.h's llama_model_desc

// One weight matrix as the model stores it: its tensor in model.safetensors, its type, its shape in
// weights and its bytes.
typedef struct {
    char name[64];
    NlDType type;
    size_t rows, cols;
    size_t bytes;
} NlMatrixDesc;

typedef struct {
    const NlFamilyInfo *family;  // its family's answers (nl_family_info)
    // What every family has, as the model was trained.
    NlArch arch;
    int vocab_size;  // V
    int n_layer;  // L
    NlNormType norm;
    NlPlacement placement;  // NL_PLACE_AS_CONFIGURED for a family without placements (family->has_placement 0)
    double norm_eps;
    // The positions one sequence holds: a transformer's block_size; SIZE_MAX for a recurrent model,
    // which has no window (its state carries any length).
    size_t window;
    // The most positions whose logits one call returns per sequence (nl_forward's n_logits <= this):
    // a transformer's window; a recurrent model's chunk (128), which a call of more positions runs in.
    size_t call_logits;
    // The bytes one sequence's state takes (family->state_bytes_key names them): a transformer's KV
    // cache (block_size rounded up to a multiple of 32), a recurrent model's h of every layer and the LSTM's c.
    size_t state_bytes;
    size_t parameters;  // distinct weights (a tied head counted once)
    size_t weight_bytes;  // bytes of tensor data, as stored (bits per weight: 8 weight_bytes / parameters)
    // Bytes of the transposed copies of small weights the loader makes where the OpenBLAS kernels in use
    // run a few-row product faster on them (weights of at most 512K elements, 2 MiB; none for recurrent
    // models, nor where OpenBLAS's kernels are older than AVX2).
    size_t transposed_bytes;
    // The config fields of the model's own family (arch, vocab_size and n_layer aside), in the order
    // info shows them.
    size_t n_fields;
    NlConfigField fields[NL_CONFIG_FIELDS_MAX];
    // Provenance from safetensors __metadata__ (may be none): n_metadata pairs of strings, borrowed
    // for the model's lifetime.
    size_t n_metadata;
    const char *const *metadata_keys, *const *metadata_values;
    // Its weight matrices (the linears', the embeddings', the head's: a tied head is wte's) in its
    // family's order, borrowed for the model's lifetime; norm gains and biases are float32.
    size_t n_matrices;
    const NlMatrixDesc *matrices;
} NlModelDesc;
void nl_model_describe(const NlModel *model, NlModelDesc *out);

// ---- storing a model's matrices in another type (model_write.c): llama.cpp's llama_model_quantize

typedef struct {
    NlDType type;  // every matrix's type (the linears', the embedding's and the head's)
    const char *const *keep;  // names of matrices (NlMatrixDesc.name) kept float32: n_keep of them
    size_t n_keep;
} NlQuantizeParams;

typedef struct {
    size_t stored;  // matrices written as NlQuantizeParams.type
    size_t kept;  // written float32: named in keep
    size_t unblockable;  // written float32: Q8_0 or Q4_0 asked of rows that are not whole blocks of 32
    size_t positions;  // written float32: tables of learned positions (wpe), as ggml's gpt-2 keeps them
    char unblockable_name[64];  // the first unblockable one ("" for none)
    size_t bytes;  // the file's bytes
} NlQuantizeResult;

// Writes the model.safetensors of model (loaded from a model directory, not a single .json file)
// with its matrices stored as params->type, to out: each matrix widened to float32 as the engine
// reads it, then stored (Q8_0 and Q4_0 exactly as ggml's reference quantizers; docs/format.md); norm
// gains, biases and positions float32; the metadata kept, with "quantization" set to the type's name.
// Q8_0 and Q4_0 of a matrix whose rows are not whole blocks of 32 leave it float32 (counted in
// result). Fails on a name in keep that is no matrix of the model, or a write error.
int nl_model_quantize(const NlModel *model, const NlQuantizeParams *params, FILE *out, NlQuantizeResult *result,
                      NlError *err);

// ---- folding a model's norms into its linears (the lab's nl_model_fold, normlab_lab.h)

typedef struct {
    int center;  // also centre the writing weights and the unembedding (TransformerLens's centering)
    int force;  // centre where it is not exact (not LayerNorm, or post placement): the lab measures it
} NlFoldOptions;

typedef struct {
    size_t folded;  // norms whose gain (and bias, or BatchNorm's statistics) moved into the linear reading them
    size_t kept;  // norms left as they are: kept_reason says why the first was
    char kept_reason[200];
    size_t centered;  // matrices centred (center)
    int untied;  // the head was wte's and is now a matrix of its own
    int head_bias;  // the head has a bias (a norm's bias folded into it)
    int exact;  // 1: the folded model's log-probabilities are the model's up to rounding
    char inexact_reason[200];  // why not, when exact is 0
} NlFoldResult;

// ---- a model's matrices (model.c; the lab's simulated quantization rounds them)

// The classes of a model's matrices: the attention's c_attn and c_proj, the MLP's c_fc and c_proj,
// the head (lm_head), the embeddings (wte, wpe), and a recurrent layer's weight_ih and weight_hh.
// A head tied to wte is one matrix of both classes, embed and head.
enum { NL_MATRIX_ATTN = 1, NL_MATRIX_MLP = 2, NL_MATRIX_HEAD = 4, NL_MATRIX_EMBED = 8, NL_MATRIX_RECURRENT = 16 };

// ---- time

// The one clock behind every time normlab reports (generate's and eval's seconds, compare's speeds,
// the profiler's fallback): CLOCK_MONOTONIC, in seconds. (clock.c)
double nl_clock_seconds(void);

#endif
