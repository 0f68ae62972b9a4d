// normlab_ext.h — the core's second public header: what a lab, a command line or a tool asks of a
// model and of a forward pass beyond running them (normlab.h). Implemented in the core
// (libnormlab.a); the lab (normlab_lab.h) and the command line use it like any embedder.
#ifndef NORMLAB_EXT_H
#define NORMLAB_EXT_H

#include <stddef.h>

#include "normlab.h"

// ---- what a model is (model.c, config.c)

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

// The logits (B, n_logits, V) of the last n_logits of n rows per sequence of a residual stream x
// (B*n, D), read out as a forward pass reads the stream leaving its last layer: the final norm as run
// (none in post placement; BatchNorm's batch statistics from all B*n rows), then the head. The logit
// lens (normlab_lab.h). The stream's rows replace the state's; its cache is untouched. NULL for a
// family without a residual stream (the recurrent models). Valid until the next call.
const float *nl_state_readout(NlState *state, const float *x, size_t B, size_t n, size_t n_logits);

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

// ---- the engine's pieces the lab reuses

// FLOPs and bytes of one call of comp on `batch` sequences of n positions whose attention sees ctx
// keys (pos + n), by the counting rules in docs/profiling.md: each family's own (its lab_cost,
// family.h). Deterministic: tests check them. (state.c)
void nl_profile_cost(const NlConfig *cfg, NlComponent comp, size_t batch, size_t n, size_t ctx, double *flops,
                     double *bytes);
// out (n, D) = the norm of type `type` over each row of x (n, D) with w's gain, bias and (BatchNorm)
// statistics, exactly as a forward pass runs it; NL_NORM_NONE copies x (out may equal x). The lab's
// invariance experiment runs it on perturbed inputs. (kernels.c)
void nl_norm(float *out, const float *x, NlNormWeights w, NlNormType type, size_t n, size_t D, float eps);
// Runs fn(ctx, worker) for every worker in [0, n_workers), each on its own thread (the caller's is
// worker 0), and returns when all are done; a worker whose thread could not be started runs on the
// caller's thread after worker 0. Returns the number of threads that ran workers (>= 1). (parallel.c)
typedef void (*NlWorkerFn)(void *ctx, int worker);
int nl_parallel_run(int n_workers, NlWorkerFn fn, void *ctx);
// The one clock behind every time normlab reports (generate's and eval's seconds, compare's speeds,
// the profiler's fallback): CLOCK_MONOTONIC, in seconds. (clock.c)
double nl_clock_seconds(void);

// ---- evaluation's windows (eval.c)

// The number of windows nl_eval scores a text of n characters in (0 when n < 2): a caller sizing
// states or profilers for it divides by the batch B to get the forward calls.
size_t nl_eval_windows(size_t n, size_t block_size, size_t stride);
// Window w of those: it runs inputs [*start, *end) and scores the targets of inputs [*begin, *end).
void nl_eval_window(size_t n, size_t block_size, size_t stride, size_t w, size_t *start, size_t *begin, size_t *end);
// -ln softmax(logits)[target] in double: the loss nl_eval sums.
double nl_nll(const float *logits, size_t V, int target);
// ln sum exp(logits) in double (max + ln sum exp(logits - max)): what a log-softmax subtracts.
double nl_logsumexp(const float *logits, size_t V);

// ---- a model's matrices (model.c; the lab's simulated quantization rounds them)

// The classes of a model's matrices: the attention's c_attn and c_proj, the MLP's c_fc and c_proj,
// the head (lm_head), the embeddings (wte, wpe), and a recurrent layer's weight_ih and weight_hh.
// A head tied to wte is one matrix of both classes, embed and head.
enum { NL_MATRIX_ATTN = 1, NL_MATRIX_MLP = 2, NL_MATRIX_HEAD = 4, NL_MATRIX_EMBED = 8, NL_MATRIX_RECURRENT = 16 };

typedef struct {
    const float *data;  // (rows, cols) as the file stores it
    size_t rows, cols;
    unsigned classes;  // NL_MATRIX_* bits
} NlMatrix;

// The model's matrices in its family's fixed order into out (NULL: only their count); returns the count.
size_t nl_model_matrices(const NlModel *model, NlMatrix *out);
// A second model on base's files, tokenizer and tensors (nothing copied but the family's table of
// pointers): its matrices can be replaced without touching base. Free it before base.
int nl_model_copy(NlModel **out, const NlModel *base, NlError *err);
// Points matrix k of model at data[k] ((rows, cols) floats) wherever data[k] is not NULL, and remakes
// the transposed copies the plan uses; before any state is made from the model. data stays the
// caller's, except `owned` (NULL or one allocation holding them), which the model frees.
int nl_model_set_matrices(NlModel *model, const float *const *data, void *owned, NlError *err);

#endif
