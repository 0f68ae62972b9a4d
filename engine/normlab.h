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
// states may run on different threads at once (nl_eval_parallel, nl_generate_parallel do).
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
// The bytes one sequence's state takes: a transformer's KV cache (nl_state_kv_bytes), a recurrent
// model's h of every layer and the LSTM's c.
size_t nl_model_state_bytes(const NlModel *model);
const NlTokenizer *nl_model_tokenizer(const NlModel *model);
size_t nl_model_parameters(const NlModel *model);  // number of distinct weights (tied counted once)
size_t nl_model_weight_bytes(const NlModel *model);  // bytes of tensor data
// Bytes of the transposed copies of small weights the loader makes where the OpenBLAS kernels in use
// run a few-row product faster on them (weights of at most 512K elements, 2 MiB; none for recurrent
// models, nor where OpenBLAS's kernels are older than AVX2).
size_t nl_model_transposed_bytes(const NlModel *model);
// Provenance from safetensors __metadata__ (may be empty): n pairs of borrowed strings.
size_t nl_model_metadata(const NlModel *model, const char *const **keys, const char *const **values);
const char *nl_config_norm_name(NlNormType norm);
const char *nl_config_placement_name(NlPlacement placement);
const char *nl_config_activation_name(NlActivation activation);
const char *nl_config_bn_stats_name(NlBnStats bn_stats);
const char *nl_config_arch_name(NlArch arch);
// The norm type or placement a name stands for, compared without case ("RMSNorm"); -1 when none.
int nl_config_norm_parse(const char *name, NlNormType *out);
int nl_config_placement_parse(const char *name, NlPlacement *out);
int nl_config_bn_stats_parse(const char *name, NlBnStats *out);

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

typedef struct {
    int avx, avx2, fma, avx512f, avx512bw, avx512vl, avx512dq;
} NlCpuFeatures;
NlCpuFeatures nl_cpu_features(void);  // of the CPU running the process (cpuid)
const char *nl_blas_core(void);  // the family in use, e.g. "Haswell" (openblas_get_corename)
int nl_blas_is_generic(const char *family);  // 1 for the SSE-only families
// The family to ask for instead of `reported`, or NULL to keep it. A pure function: NULL when
// opt_out is set or env_coretype (the value of OPENBLAS_CORETYPE, NULL if unset) is non-empty, when
// `reported` is not a family of OpenBLAS 0.3.21, or when the CPU offers nothing wider than it;
// else "SkylakeX" for a CPU with AVX-512 F/BW/VL/DQ, "Haswell" for one with AVX2 and FMA.
const char *nl_blas_choose_core(const char *reported, NlCpuFeatures cpu, const char *env_coretype, int opt_out);

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
size_t nl_state_kv_bytes(const NlModel *model);  // per sequence, block_size rounded up to a multiple of 32
size_t nl_state_batch(const NlState *state);  // sequences per forward call, at most
// The config the state runs: the model's, with the run options applied.
const NlConfig *nl_state_config(const NlState *state);
size_t nl_state_window(const NlState *state);  // nl_model_window of the state's model

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

// The logits (B, n_logits, V) of the last n_logits of n rows per sequence of a residual stream x
// (B*n, D), read out as a forward pass reads the stream leaving its last layer: the final norm as run
// (none in post placement; BatchNorm's batch statistics from all B*n rows), then the head. The logit
// lens (normlab_lab.h). The stream's rows replace the state's; its cache is untouched. NULL for a
// family without a residual stream (the recurrent models). Valid until the next call.
const float *nl_state_readout(NlState *state, const float *x, size_t B, size_t n, size_t n_logits);

// ---- observing a forward pass (the lab's profiler and statistics attach here)

// The components of a forward pass, in the order they run in a peri-LN block (pre-LN without the
// two output norms); a recurrent model has embed, its four rnn components per layer and lm_head.
typedef enum {
    NL_COMP_EMBED,
    NL_COMP_NORM1,
    NL_COMP_QKV,
    NL_COMP_ATTENTION,
    NL_COMP_ATTN_PROJ,
    NL_COMP_NORM1_POST,  // peri placement's output norms
    NL_COMP_RESIDUAL,
    NL_COMP_NORM2,
    NL_COMP_MLP_UP,
    NL_COMP_ACTIVATION,
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

// A norm's parameters as a forward pass runs it: gain and bias (D), BatchNorm's mean and var (D).
typedef struct {
    const float *gain;  // (D)
    const float *bias;  // (D), or NULL (RMSNorm without bias)
    const float *mean, *var;  // (D) BatchNorm's statistics (running, or of the call), else NULL
} NlNormWeights;

// What a forward pass tells an observer: two groups of callbacks, each with its own borrowed object
// (NULL: that group is off and costs nothing, not even a clock read). A state holds a copy.
// - timer: begin() returns a timestamp; record() adds one call of comp in layer (-1: the model's
//   own components) over `batch` sequences of n positions, ctx keys or features (see NlComponent);
//   record_layer() a whole layer; add_wall() wall time of a phase; set_phase() what follows.
// - watcher: the hidden states, layer by layer (layer L is after the last layer), through whichever
//   of its callbacks are set (a NULL one is not called); with a watcher a forward pass computes
//   every row of its last layer, not just those it returns.
typedef struct {
    void *timer;
    double (*begin)(void *timer);
    void (*record)(void *timer, double begin, int layer, NlComponent comp, size_t batch, size_t n, size_t ctx);
    void (*record_layer)(void *timer, double begin, int layer);
    void (*add_wall)(void *timer, double begin);
    void (*set_phase)(void *timer, NlPhase phase);
    void *watcher;
    // the stream entering layer: rows of width (D; a recurrent model's embeddings, layer 0: E)
    void (*residual)(void *watcher, int layer, const float *x, size_t rows, size_t width);
    // a norm's input and output (post: peri's output norms ln_1_post, ln_2_post)
    void (*norm)(void *watcher, int layer, int post, const float *in, const float *out, NlNormWeights w, size_t rows);
    void (*branch)(void *watcher, int layer, const float *branch, size_t rows);  // a sublayer entering the stream
    // a recurrent layer's new state at position t for B sequences: h (B, S), the LSTM's c (B, S) or NULL
    void (*state)(void *watcher, int layer, size_t t, const float *h, const float *c, size_t B);
    // rows of width at one of NlSite's places in layer; gain (width) is that of the
    // norm NlSite names for the place, or NULL where there is none
    void (*site)(void *watcher, int layer, NlSite site, const float *x, size_t rows, size_t width, const float *gain);
} NlObserver;

// Copies *obs into the state (NULL detaches everything); the objects it names stay the caller's.
void nl_state_set_observer(NlState *state, const NlObserver *obs);
const NlObserver *nl_state_observer(const NlState *state);  // never NULL: all-NULL when none

// ---- model families (state.c; each family's table in its own file: transformer.c, rnn.c)
//
// What a family has, from its table: the command line, reports and the lab ask this, and never
// which arch a model is.
typedef struct {
    const char *name;  // nl_config_arch_name of its arch
    int windowed;  // its context is a window of block_size positions (a KV cache); 0: a state carries any length
    int has_placement;  // its norms sit pre, post or peri (a recurrent cell's have one place)
    int has_blocks;  // attention and MLP sublayers on a residual stream: branch RMS, norm outputs, invariance
    int state_vectors;  // vectors a layer carries from one position to the next: 0 (a KV cache), 1 or 2
    const char *state_names[2];  // their names: "h", and the LSTM's "c"
    const char *state_bytes_key;  // what nl_model_state_bytes counts: "kv_cache_bytes", "state_bytes"
    unsigned norms;  // the norm types it runs: bit (1u << t) for each NlNormType t
    int trace_events_per_layer;  // the most profiler events one layer records in a forward call
    int prunes_rows;  // its last layer goes on with only the rows a logit reads (the profile marks them)
    unsigned matrix_classes;  // the NL_MATRIX_* classes its matrices have (normlab_ext.h)
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
#define NL_CONFIG_FIELDS_MAX 16
// The fields of cfg's own family (every family's arch, vocab_size and n_layer aside), in the order
// info shows them, into fields[0..NL_CONFIG_FIELDS_MAX); returns their count.
size_t nl_config_describe(const NlConfig *cfg, NlConfigField *fields);
// Whether a run of cfg has component comp (peri's output norms, a recurrent layer's own four).
int nl_config_has_component(const NlConfig *cfg, NlComponent comp);

// ---- sampler (sampler.c)

// xoshiro256** seeded through splitmix64: every 64-bit seed, 0 included, gives its own stream.
typedef struct {
    uint64_t s[4];
} NlRng;
void nl_rng_seed(NlRng *rng, uint64_t seed);
uint64_t nl_rng_next(NlRng *rng);
double nl_rng_uniform(NlRng *rng);  // [0, 1) with 53 random bits

typedef struct {
    double temperature;  // 0 = greedy (argmax, lowest id on ties)
    int top_k;  // 0 = off; values above V keep everything
    double top_p;  // in (0, 1]; 1 = off
} NlSamplerParams;

typedef struct NlSampler NlSampler;
int nl_sampler_create(NlSampler **out, int vocab_size, NlSamplerParams params, uint64_t seed, NlError *err);
void nl_sampler_free(NlSampler *sampler);
// The candidates left after temperature, then top-k, then top-p, sorted by descending probability
// (ties by id), with probabilities renormalised to sum to 1. Returns their count, or -1 when a
// logit is NaN or infinite. *ids and *probs are borrowed until the next call.
int nl_sampler_candidates(NlSampler *sampler, const float *logits, const int **ids, const double **probs);
// Draws the next token from (V) logits; -1 when a logit is NaN or infinite.
int nl_sampler_sample(NlSampler *sampler, const float *logits);

// ---- generation (generate.c)

typedef struct {
    size_t n_new;  // characters to generate
    int exact_window;  // 1: recompute the last T positions for every token (nanoGPT's sampler)
} NlGenerateOptions;

typedef struct {
    size_t prompt_used;  // prompt tokens fed (the last T when the prompt is longer)
    double prefill_seconds;
    size_t decode_tokens;  // forward passes after the prefill
    double decode_seconds;  // those passes and the sampling of the tokens they produce (not emit)
    size_t context_shifts;
} NlGenerateStats;

// Called with each sampled token; return nonzero to stop generation (a write error, say).
typedef int (*NlEmitFn)(int token, void *ctx);

// Generates opts->n_new tokens after prompt[0..n_prompt) (n_prompt >= 1), calling emit for each.
// When the window of T positions is full, the most recent T/2 tokens are re-processed in one
// batched pass at positions 0..T/2-1 (a context shift) and decoding goes on; with exact_window,
// every token recomputes the last T positions instead. Returns 0 when done, 1 when emit asked to
// stop, -1 on error (non-finite logits).
int nl_generate(NlState *state, NlSampler *sampler, const int *prompt, size_t n_prompt, const NlGenerateOptions *opts,
                NlEmitFn emit, void *ctx, NlGenerateStats *stats, NlError *err);

// The same for B streams decoded together (state created with batch >= B): stream b samples with
// samplers[b] and every stream starts from the same prompt; each step shares every matrix product
// across the streams. emit gets (stream, token) for every stream after each step.
typedef int (*NlBatchEmitFn)(int stream, int token, void *ctx);
int nl_generate_batch(NlState *state, NlSampler *const *samplers, size_t B, const int *prompt, size_t n_prompt,
                      const NlGenerateOptions *opts, NlBatchEmitFn emit, void *ctx, NlGenerateStats *stats,
                      NlError *err);

// The same for B streams in groups of G = nl_state_batch(states[0]) (every state the same batch),
// the groups shared among n_states worker threads, one state each: stream i is in group i / G, and
// each group runs as nl_generate_batch would run it, so every stream's tokens are the same whatever
// n_states is. emit is called from the worker threads, with the stream's index among all B, so it
// must be safe to call concurrently for different streams. decode_tokens counts the steps (of each
// stream); decode_seconds is the run's wall time less one prefill (the longest). Returns as
// nl_generate_batch, with the error of the first failed group in stream order. Use one OpenBLAS
// thread per product for these states, as for nl_eval_parallel.
int nl_generate_parallel(NlState *const *states, size_t n_states, NlSampler *const *samplers, size_t B,
                         const int *prompt, size_t n_prompt, const NlGenerateOptions *opts, NlBatchEmitFn emit,
                         void *ctx, NlGenerateStats *stats, NlError *err);

// ---- evaluation (eval.c)

typedef struct {
    double nll_sum;  // sum of -ln p(char | preceding chars), nats
    double nll_sq_sum;  // sum of their squares (for the standard error of the mean)
    size_t count;  // characters scored: every one after the first
    double seconds;  // the call's wall time (nl_eval* set it)
} NlEvalResult;

typedef void (*NlProgressFn)(size_t done, size_t total, double seconds, void *ctx);  // seconds since the call began

// Scores ids[1..n) given the characters before each, within the context window: the first window
// covers inputs 0..T-1; each later window moves `stride` positions (1 <= stride <= T) and scores only
// its last `stride` targets, so every character is scored once with at least T - stride characters
// of context (all of them, inside the first window). The last window ends at the text's end, so
// it may score fewer. Windows go B = nl_state_batch(state) to one forward call; the per-window
// losses are summed window by window within a call, and calls in text order.
int nl_eval(NlState *state, const int *ids, size_t n, size_t stride, NlEvalResult *out, NlProgressFn progress,
            void *ctx, NlError *err);
// The same on n_states worker threads, one state each (every state with the same batch B; a
// profiler or statistics attached to a state see that thread's share). The calls are the same as
// nl_eval's on states[0], so the result is the same bit for bit whatever n_states is. progress is
// called from the calling thread only. Give these states NlRunOptions.threads 1: the workers are
// the threads.
int nl_eval_parallel(NlState *const *states, size_t n_states, const int *ids, size_t n, size_t stride,
                     NlEvalResult *out, NlProgressFn progress, void *ctx, NlError *err);
// A recurrent model (nl_eval and nl_eval_parallel call this with segments 1, on states[0], and
// ignore stride): every character after the first is scored through one unbroken state, from the
// zero state at the text's start. With segments K > 1 (K <= nl_state_batch(state)) the n - 1
// inputs are cut into K contiguous parts, part k the inputs [k (n-1) / K, (k+1) (n-1) / K), each
// run from the zero state, all K in the same calls: K times fewer steps, each a product of K rows
// (sgemm) instead of one (sgemv), at the price of the context lost at every cut.
int nl_eval_recurrent(NlState *state, const int *ids, size_t n, size_t segments, NlEvalResult *out,
                      NlProgressFn progress, void *ctx, NlError *err);
// The number of windows nl_eval scores a text of n characters in (0 when n < 2): a caller sizing
// states or profilers for it divides by the batch B to get the forward calls.
size_t nl_eval_windows(size_t n, size_t block_size, size_t stride);
// Window w of those: it runs inputs [*start, *end) and scores the targets of inputs [*begin, *end).
void nl_eval_window(size_t n, size_t block_size, size_t stride, size_t w, size_t *start, size_t *begin, size_t *end);
// -ln softmax(logits)[target] in double: the loss nl_eval sums.
double nl_nll(const float *logits, size_t V, int target);

#endif
