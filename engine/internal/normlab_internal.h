// normlab_internal.h — the core's internal header for the lab (ggml's ggml-impl.h): what the lab
// (engine/lab/) asks of a forward pass beyond the public API (normlab.h): observing it, reading a
// residual stream out, the loss and window arithmetic, a model's matrices, and the kernels the lab
// reuses. Only the core and the lab see it (their -I; the command line is compiled without it), and it
// is not installed: an embedder uses normlab.h and normlab_lab.h.
#ifndef NORMLAB_INTERNAL_H
#define NORMLAB_INTERNAL_H

#ifndef NL_INTERNAL
#error "normlab_internal.h is the core's and the lab's: use normlab.h (or normlab_lab.h)"
#pragma GCC visibility pop

#endif

#include <stddef.h>

#include "normlab.h"

// Internal: hidden from the symbols a shared object built from the library would export.
#include "recipe.h"

#pragma GCC visibility push(hidden)

// ---- a config's fields (normlab.h has NlConfig opaque; NlModelDesc describes it to embedders)

// Every family has arch, vocab_size, n_layer, norm and norm_eps; the other fields are one family's,
// and 0 in a model of the other (residual_scale 1). A recurrent model has n_input (E) and n_hidden (S), no context
// window (nl_forward takes any number of positions) and no placement (0, "as configured").
struct NlConfig {
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
    NlPlacement placement;  // its name; the block it runs is recipe
    NlRecipe recipe;  // the steps of each layer's block and the final norm (recipe.h)
    int mix_post_layers;  // mix: the leading post layers (config.json's, default L/4)
    double residual_scale;  // the scaled adds' alpha, x = N(alpha*x + Sublayer(x)) (post); 1 but for DeepNorm
    NlActivation activation;
    int bias;  // linears have biases
    int tie_embeddings;  // lm_head is wte
    int head_bias;  // lm_head has a bias (V): a folded model's (normlab fold)
    // the Llama family's (a GPT-style transformer: n_kv_head = n_head, the rest 0)
    int n_kv_head;  // KVH: key/value heads, dividing H (H: multi-head attention, 1: multi-query)
    int rope;  // 1: rotary positions (interleaved pairs, Meta's and llama2.c's), no wpe
    double rope_theta;  // RoPE's base
    int gated_mlp;  // c_fc holds gate and up rows (2F, D): c_proj(act(gate x) * up x)
    int qk_norm;  // NL_QK_OVER_*: q and k normalised before RoPE, per head (Qwen3) or over the projection (OLMo 2)
    int head_dim;  // Dh where it is not n_embd / n_head (config.json's "head_dim", Qwen3's), else 0
    int rope_dims;  // the dims of a head RoPE turns, from the first (partial rotary: GPT-NeoX, Phi), else 0: Dh
    double embed_scale;  // the embeddings' factor (Gemma's sqrt(D), rounded to float as it multiplies), else 0: 1
    double attn_scale;  // the attention scores' factor (Gemma 2's query_pre_attn_scalar^-1/2), else 0: 1/sqrt(Dh)
    double attn_softcap, final_softcap;  // scores and logits as cap tanh(s / cap) (Gemma 2), else 0: none
    int sliding_window;  // W: a local layer's query sees its last W positions (Mistral, Gemma 2 and 3), else 0
    int sliding_window_pattern;  // k: layer i is global when (i + 1) % k == 0, the others local; 0: all local
    double rope_local_theta;  // the local layers' RoPE base (Gemma 3's rope_local_base_freq), else 0: rope_theta
    int attn_bias;  // c_attn alone has a bias (Qwen2's)
    // the recurrent models'
    int n_input;  // E: the embedding width, config.json's "n_embd"
    int n_hidden;  // S: the state width
};

// NlConfig.qk_norm: none, RMS- or LayerNorm of each head's Dh values of q and k (gains (Dh)), or of the
// whole projection, q's H Dh and k's KVH Dh values (gains (H Dh) and (KVH Dh)).
enum { NL_QK_OVER_NONE = 0, NL_QK_OVER_HEAD = 1, NL_QK_OVER_PROJECTION = 2 };

// Dh, a head's width: config.json's head_dim, else n_embd / n_head; and H Dh, the queries' width.
static inline size_t nl_head_width(const NlConfig *c) {
    return (size_t)(c->head_dim ? c->head_dim : c->n_embd / c->n_head);
}
static inline size_t nl_query_width(const NlConfig *c) { return (size_t)c->n_head * nl_head_width(c); }

// Layer l's attention window: W where it is a local layer, else 0 (every position).
static inline size_t nl_layer_window(const NlConfig *c, size_t l) {
    int k = c->sliding_window_pattern;
    return k && (l + 1) % (size_t)k == 0 ? 0 : (size_t)c->sliding_window;
}

// The model's config as loaded (borrowed for its lifetime). (model.c)
const NlConfig *nl_model_config(const NlModel *model);

// Sets err (when not NULL) to code and the formatted message; returns -1 for `return nl_error(...)`.
// The library's one error convention: a function that can fail returns -1 and fills an NlError with a
// code callers can act on and a one-line message naming the file, key or value (never a command-line
// flag: the library does not know how it is called). (nl_error.c)
int nl_error(NlError *err, NlErrorCode code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// ---- the lab's hooks on a state and on an evaluation

// A linear's input rows x (rows, cols), copied where the hook may rewrite them (in place) before they
// enter the product; called from the thread running the forward call, with the hook's ctx.
typedef struct {
    void (*fn)(void *ctx, float *x, size_t rows, size_t cols);
    void *ctx;  // borrowed for the state's life
} NlLinearInputHook;
// nl_state_create with hook called on every linear's input rows before the product (the lab's
// simulated quantization of activations); hook.fn NULL: none, and no copy. (state.c)
int nl_state_create_hooked(NlState **out, const NlModel *model, const NlRunOptions *opts, NlLinearInputHook hook,
                           NlError *err);
// After each forward call of a windowed model: `windows` windows from window `first` on
// (nl_eval_window) have just run in state, their logits scored: logits (windows, n_logits, V), each
// window's scored positions last in its n_logits rows, valid until the state runs again; the state
// may be used (nl_state_readout) until the hook returns. Called from the thread that ran the call.
typedef void (*NlEvalCallFn)(void *ctx, NlState *state, size_t first, size_t windows, const float *logits);
// nl_eval with call_done (NULL: none) called after each forward call of a windowed model (the lab's
// logit lens). (eval.c)
int nl_eval_calls(NlState *const *states, size_t n_states, const int *ids, size_t n, const NlEvalOptions *opts,
                  NlEvalCallFn call_done, void *call_ctx, NlEvalResult *out, NlError *err);

// ---- what describes a model, one by one (NlModelDesc's fields; describe.c, model.c, families.c)

// The positions one sequence of the model holds: a transformer's block_size; SIZE_MAX for a
// recurrent model, which has no window (its state carries any length). Generation shifts a full
// window; evaluation scores windows of it, or the whole text through one state when unlimited.
size_t nl_model_window(const NlModel *model);
// The bytes one sequence's state takes: a transformer's KV cache (block_size rounded up to a multiple
// of 32), a recurrent model's h of every layer and the LSTM's c.
size_t nl_model_state_bytes(const NlModel *model);
size_t nl_model_call_logits(const NlModel *model);  // NlModelDesc.call_logits
size_t nl_model_parameters(const NlModel *model);  // number of distinct weights (tied counted once)
size_t nl_model_weight_bytes(const NlModel *model);  // bytes of tensor data
// Bytes of the transposed copies of small weights the loader makes where the OpenBLAS kernels in use
// run a few-row product faster on them (weights of at most 512K elements, 2 MiB; none for recurrent
// models, nor where OpenBLAS's kernels are older than AVX2).
size_t nl_model_transposed_bytes(const NlModel *model);
// Provenance from safetensors __metadata__ (may be empty): n pairs of borrowed strings.
size_t nl_model_metadata(const NlModel *model, const char *const **keys, const char *const **values);
// The fields of cfg's own family (every family's arch, vocab_size and n_layer aside), in the order
// info shows them, into fields[0..NL_CONFIG_FIELDS_MAX); returns their count.
size_t nl_config_describe(const NlConfig *cfg, NlConfigField *fields);
// Whether a run of cfg has component comp (peri's output norms, a recurrent layer's own four).
int nl_config_has_component(const NlConfig *cfg, NlComponent comp);

// A second model on base's files, tokenizer and tensors (nothing copied but the family's table of
// pointers): its matrices can be replaced without touching base. Free it before base.
int nl_model_copy(NlModel **out, const NlModel *base, NlError *err);

// ---- a state's batch (state.c)

const NlModel *nl_state_model(const NlState *state);  // the model the state runs (borrowed)
// (tokenizer.c) The bytes of the text that ids[from..n) of the sequence ids[0..n) stand for: their
// pieces' bytes, less sentencepiece's dummy prefix, the space of a piece that begins a text (the
// sequence's first, or the first after a control piece: bos, eos, <unk>, a special added token), as
// its decoder drops it.
size_t nl_tokenizer_text_bytes(const NlTokenizer *tok, const int *ids, size_t n, size_t from);

size_t nl_state_batch(const NlState *state);  // sequences per forward call, at most (NlRunOptions.batch)
// Copies the cached keys and values of positions 0..n-1 from sequence `from` to sequence `to` (both
// < batch): streams that share a prompt are prefilled once. Whole tiles of 32 positions are copied,
// so positions n.. up to the next multiple of 32 in `to` are overwritten too.
void nl_state_copy_cache(NlState *state, size_t from, size_t to, size_t n);
// RoPE's context shift in place (llama.cpp's): of sequence seq's len cached positions, the first keep
// stay, the next drop go, and the rest move down by drop, their keys turned back by drop positions'
// angles; the sequence then holds len - drop. Returns -1, changing nothing, for a state that cannot
// (no RoPE) or arguments that do not fit (keep + drop > len); drop 0 only asks. (state.c)
int nl_state_shift(NlState *state, size_t seq, size_t keep, size_t drop, size_t len);

// ---- OpenBLAS's kernel family (blascore.c)

typedef struct {
    int avx, avx2, fma, avx512f, avx512bw, avx512vl, avx512dq;
} NlCpuFeatures;
NlCpuFeatures nl_cpu_features(void);  // of the CPU running the process (cpuid)
// nl_blas_choose_core's rule for a CPU with features cpu: a pure function (the tests give it CPUs).
const char *nl_blas_choose_core_for(const char *reported, NlCpuFeatures cpu, const char *env_coretype, int opt_out);
// 1 for OpenBLAS's SSE-only families (nl_blas_choose_core's rule).
int nl_blas_is_generic(const char *family);

// A norm's parameters as a forward pass runs it: gain and bias (D), BatchNorm's mean and var (D),
// DyT's alpha (1).
typedef struct {
    const float *gain;  // (D)
    const float *bias;  // (D), or NULL (RMSNorm or DyT without bias)
    const float *mean, *var;  // (D) BatchNorm's statistics (running, or of the call), else NULL
    const float *alpha;  // (1) DyT's scale, else NULL
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
    // the one callback that may change the pass (activation patching, a transformer's only): the stream
    // entering layer (L: leaving the last), rows of width D, before any other callback sees it
    void (*patch)(void *watcher, int layer, float *x, size_t rows, size_t width);
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
    // one query's attention in layer: head's probabilities p (len) over keys 0..len-1 for the query at
    // position len - 1 of sequence b, and their entropy in nats (nl_attention_probs: computed beside
    // the forward's own)
    void (*attention)(void *watcher, int layer, size_t b, size_t head, const float *p, size_t len, double entropy);
} NlObserver;

// Copies *obs into the state (NULL detaches everything); the objects it names stay the caller's.
void nl_state_set_observer(NlState *state, const NlObserver *obs);
const NlObserver *nl_state_observer(const NlState *state);  // never NULL: all-NULL when none

// The logits (B, n_logits, V) of the last n_logits of n rows per sequence of a residual stream x
// (B*n, D), read out as a forward pass reads the stream leaving its last layer: the final norm as run
// (none in post placement; BatchNorm's batch statistics from all B*n rows), then the head. The logit
// lens (normlab_lab.h). The stream's rows replace the state's; its cache is untouched. NULL for a
// family without a residual stream (the recurrent models). Valid until the next call.
const float *nl_state_readout(NlState *state, const float *x, size_t B, size_t n, size_t n_logits);
// The same with x (B*n, D) the head's input: the final norm not applied (the lens applies its own).
const float *nl_state_readout_head(NlState *state, const float *x, size_t B, size_t n, size_t n_logits);

// ---- the engine's pieces the lab reuses

// FLOPs and bytes of one call of comp of layer `layer` (-1: none) on `batch` sequences of n positions
// whose attention sees ctx keys (pos + n; a sliding-window layer's query its last W of them), by the
// counting rules in docs/profiling.md: each family's own (its lab_cost, family.h). Deterministic:
// tests check them. (state.c)
void nl_profile_cost(const NlConfig *cfg, int layer, NlComponent comp, size_t batch, size_t n, size_t ctx,
                     double *flops, double *bytes);
// out (n, D) = the norm of type `type` over each row of x (n, D) with w's gain, bias and (BatchNorm)
// statistics (DyT: w.alpha; eps unused), exactly as a forward pass runs it; NL_NORM_NONE copies x
// (out may equal x). The lab's invariance experiment runs it on perturbed inputs. (norms.c)
void nl_norm(float *out, const float *x, NlNormWeights w, NlNormType type, size_t n, size_t D, float eps);
// Runs fn(ctx, worker) for every worker in [0, n_workers), each on its own thread (the caller's is
// worker 0), and returns when all are done; a worker whose thread could not be started runs on the
// caller's thread after worker 0. Returns the number of threads that ran workers (>= 1). (parallel.c)
typedef void (*NlWorkerFn)(void *ctx, int worker);
int nl_parallel_run(int n_workers, NlWorkerFn fn, void *ctx);

// ---- evaluation's windows and losses (eval.c)

// The number of windows nl_eval scores a text of n characters in (0 when n < 2): a caller sizing
// states or profilers for it divides by the batch B to get the forward calls.
size_t nl_eval_windows(size_t n, size_t block_size, size_t stride);
// Window w of those: it runs inputs [*start, *end) and scores the targets of inputs [*begin, *end).
void nl_eval_window(size_t n, size_t block_size, size_t stride, size_t w, size_t *start, size_t *begin, size_t *end);
// -ln softmax(logits)[target] in double: the loss nl_eval sums.
double nl_nll(const float *logits, size_t V, int target);
// ln sum exp(logits) in double (max + ln sum exp(logits - max)): what a log-softmax subtracts.
double nl_logsumexp(const float *logits, size_t V);
// The entropy (nats) of softmax(logits), and their ln sum exp in *lse, from one pass of the
// exponentials nl_logsumexp uses (float, within 2 ulp), summed in double.
double nl_softmax_entropy(const float *logits, size_t V, double *lse);

// ---- a model's matrices (model.c; the lab's simulated quantization rounds them)

// A matrix as the model stores it (docs/format.md): float32, or the rows of another NlDType (the
// core's dtype.h: F16 and BF16 values, or Q8_0 and Q4_0 blocks of 32 along each row).
typedef struct {
    const void *data;  // (rows, cols) stored as type
    NlDType type;
} NlWeight;

// Its float32 values, or NULL where it is stored otherwise.
static inline const float *nl_weight_f32(NlWeight w) { return w.type == NL_DTYPE_F32 ? (const float *)w.data : NULL; }
// dst (rows, cols) = rows row0.. of w (cols wide), widened to float32 as the engine reads them. (dtype.c)
void nl_weight_rows(float *dst, NlWeight w, size_t row0, size_t rows, size_t cols);
// The bytes of w's rows (cols wide); 0 where cols is not whole blocks of its type. (dtype.c)
size_t nl_weight_bytes(NlDType type, size_t rows, size_t cols);
// dst = src (rows, cols) stored as type, as `normlab quantize` stores it (cols whole blocks). (dtype.c)
void nl_weight_store_rows(void *dst, const float *src, size_t rows, size_t cols, NlDType type);

typedef struct {
    NlWeight w;  // (rows, cols) as the model holds it
    size_t rows, cols;
    unsigned classes;  // NL_MATRIX_* bits
    int positions;  // a table of learned positions (wpe): normlab quantize keeps it float32, as ggml's gpt-2 does
    char name[64];  // its tensor in model.safetensors (a tied head's: wte.weight)
} NlMatrix;

// The model's matrices in its family's fixed order into out (NULL: only their count); returns the count.
size_t nl_model_matrices(const NlModel *model, NlMatrix *out);
// Points matrix k of model at data[k] ((rows, cols) stored as data[k].type) wherever data[k].data is
// not NULL, and remakes the transposed copies the plan uses; before any state is made from the model.
// data stays the caller's, except `owned` (NULL or one allocation holding them), which the model frees.
int nl_model_set_matrices(NlModel *model, const NlWeight *data, void *owned, NlError *err);

// ---- a model's tensors as float32, by name (fold.c; normlab fold rewrites them)

typedef struct {
    char name[64];  // as in model.safetensors
    int ndim;  // 1 or 2
    size_t rows, cols;  // (rows, cols); a vector's rows are 1
    float *data;  // (rows, cols), owned
} NlTensorF32;

typedef struct {
    NlTensorF32 *t;  // (n) in the file's order, then those added
    size_t n, cap;
} NlTensorSet;

// Every tensor of the model's model.safetensors widened to float32 as the engine reads it, into a new
// set (free it with nl_tensor_set_free, also after a failure). An error for a single .json file's model.
int nl_model_tensors(const NlModel *model, NlTensorSet *out, NlError *err);
void nl_tensor_set_free(NlTensorSet *set);
// The values of tensor `name` when it holds `count` of them; NULL when there is none (or another size).
float *nl_tensor_find(const NlTensorSet *set, const char *name, size_t count);
// A new tensor of zeros (rows, cols) (ndim 1: a vector of cols) at the set's end; NULL when out of memory.
float *nl_tensor_add(NlTensorSet *set, const char *name, int ndim, size_t rows, size_t cols);
// model.safetensors of set's tensors, all F32, in the set's order, with the model's metadata less
// its "quantization" and "folded" entries and those the n_extra pairs given replace, plus the pairs.
// *bytes: the file's.
int nl_tensors_write(FILE *out, const NlTensorSet *set, const NlModel *model, const char *const *extra_keys,
                     const char *const *extra_values, size_t n_extra, size_t *bytes, NlError *err);
// The model's family's fold rule applied to set (the model's tensors, nl_model_tensors): its norms
// moved into the linears that read them, and with opts->center the writing weights centred; an
// error for a family without one (the recurrent models), or centering that is not exact without force.
int nl_model_fold_rule(const NlModel *model, NlTensorSet *set, const NlFoldOptions *opts, NlFoldResult *r,
                       NlError *err);
// config.json's text with n boolean keys set (added where missing), in a new string (free it) in *out,
// pretty-printed; `what` names it in errors. (config.c)
int nl_config_json_set(const char *json, size_t len, const char *const *keys, const int *values, size_t n, char **out,
                       const char *what, NlError *err);

#pragma GCC visibility pop

#endif
