// normlab_lab.h — the lab around the engine: the per-layer profiler, hidden-state statistics and
// the invariance experiment, and `compare`'s rows. Embedders who only run models can ignore it;
// normlab.h is the engine. Objects here are attached to a state and borrowed by it: the caller
// keeps them alive while the state uses them and frees them after (profiler, statistics).
#ifndef NORMLAB_LAB_H
#define NORMLAB_LAB_H

#ifdef NL_BUILD_CORE
#error "normlab_lab.h is the lab's: the core (engine/, tokenizer/) may not include it"
#endif

#include "normlab.h"

// ---- quantization, simulated and real (quantize.c)
//
// Simulated (q8, q4): weights rounded once (nl_quantize_model), activations before each product
// (nl_quant_state_create), and stored back as float32, so the products run as fast as ever: this
// measures what the rounding costs in quality, not what it saves in time. q8: a float32 scale per
// row, max |x| / 127, x / scale rounded half away from zero (roundf) and clamped to [-127, 127]; q4:
// the same per group of 32 consecutive columns of a row, with 7 levels.
// Real (f16, bf16, q8_0, q4_0): the weights stored as that NlDType exactly as `normlab quantize`
// writes them (nl_model_quantize: positions, and rows that are not whole blocks, stay float32), run
// by its kernels: the model a quantized file holds, in memory.
typedef enum {
    NL_QUANT_NONE,
    NL_QUANT_Q8,
    NL_QUANT_Q4,
    NL_QUANT_F16,
    NL_QUANT_BF16,
    NL_QUANT_Q8_0,
    NL_QUANT_Q4_0
} NlQuant;
#define NL_QUANT_COUNT 7
const char *nl_quant_name(NlQuant q);  // "none", "q8", "q4", "f16", "bf16", "q8_0", "q4_0"
int nl_quant_parse(const char *name, NlQuant *out);  // any case; -1 when none
// "attn,mlp": the names of the NL_MATRIX_* classes set, comma-separated, into buf ("" for none).
const char *nl_quant_classes_name(unsigned classes, char *buf, size_t len);
// The classes of a comma-separated list of those names (any case); -1 for an unknown or empty one.
int nl_quant_classes_parse(const char *list, unsigned *out);
// Rounds the model's matrices of the classes `only` (NL_MATRIX_* bits; 0: all of them) under q, in
// place (nl_model_set_matrices: before any state is made from it); a head tied to wte is rounded
// once, by rows of wte, when either class is picked. Norm gains, biases and running statistics stay
// float32. *rounded: the classes of the matrices rounded. An error when none has those classes.
// A real type's matrices (q of NL_QUANT_F16 on) are stored as it, from their float32 values as the
// engine reads them (a matrix stored otherwise is widened first).
int nl_quantize_model(NlModel *model, NlQuant q, unsigned only, unsigned *rounded, NlError *err);
// nl_quantize_model on a new model *out on base's files, tokenizer and tensors (base stays as it
// is; free *out before base). On failure *out is NULL.
int nl_quantize_copy(NlModel **out, const NlModel *base, NlQuant q, unsigned only, unsigned *rounded, NlError *err);
// nl_state_create for a state that rounds every linear's input rows (one per position) under act
// before the product (NL_QUANT_NONE: a plain state).
int nl_quant_state_create(NlState **out, const NlModel *model, const NlRunOptions *opts, NlQuant act, NlError *err);

// ---- folding the norms (fold.c): TransformerLens's fold_ln, center_writing_weights, center_unembed

// Writes to `weights` the model.safetensors of model (loaded from a model directory) with its norms
// folded into the linears that read them (NlFoldOptions, NlFoldResult in normlab.h; which norms each
// placement allows: docs/lab.md), every tensor float32, and into *config (a new string: free it) its
// config.json, `config` (len bytes), with "tie_embeddings" false where the head was untied and
// "head_bias" true where it gained a bias. A recurrent model, or centering that is not exact without
// opts->force, is refused with the reason.
int nl_model_fold(const NlModel *model, const NlFoldOptions *opts, const char *config, size_t len, FILE *weights,
                  char **config_out, NlFoldResult *result, NlError *err);

// ---- activation patching (patch.c)

// TransformerLens's residual-stream patching: a clean and a corrupted text of n tokens each run
// through the model; then, for every layer boundary l (0..L: the stream entering layer l, and at L
// leaving the last) and position p, the corrupted text again with the clean run's stream row p put
// in at l. Each run's metric is logit[target] - logit[foil] at the last position; a cell's recovered
// share is (patched - corrupted) / (clean - corrupted): 0 where the patch changes nothing, exactly 1
// at (L, n - 1). One forward pass a cell, every run on the same code path.
typedef struct {
    int target, foil;  // token ids; -1: the clean run's top token (target), the corrupted run's (foil)
    NlProgressFn progress;  // after each layer of cells (NULL: none)
    void *progress_ctx;
} NlPatchOptions;

typedef struct {
    size_t layers, positions;  // L + 1 and n
    int target, foil;  // as measured (the defaults resolved)
    double clean_diff, corrupt_diff;  // each run's logit[target] - logit[foil], last position
    double *diff;  // (layers, positions) the patched runs' difference
    double *recovered;  // (layers, positions) (diff - corrupt_diff) / (clean_diff - corrupt_diff)
    double seconds;  // wall time of the patched runs, all cells
} NlPatchMap;

// Fills *map (free it with nl_patch_map_free, also after a failure) on the state (its batch and
// observer are kept; its cache is overwritten). Refused in one line: a model without a residual
// stream, n of 0 or past the window, a target or foil outside the vocabulary, target == foil, and
// runs whose differences are equal (nothing to recover).
int nl_patch(NlState *state, const int *clean, const int *corrupt, size_t n, const NlPatchOptions *opts,
             NlPatchMap *map, NlError *err);
void nl_patch_map_free(NlPatchMap *map);

// ---- profiling (profile.c)

// The components (NlComponent) and phases (NlPhase) are the engine's (normlab.h): the profiler and
// the statistics attach to a state as its observer (NlObserver), each filling its own half.

// Totals for one (phase, layer, component). Layer -1 holds the per-model components (embedding,
// final norm, LM head, sampling).
typedef struct {
    uint64_t calls;
    uint64_t tokens;  // positions processed, summed over calls
    double seconds;
    double flops, bytes;  // counted by nl_profile_cost's rules
    uint64_t cycles, instructions;  // 0 when hardware counters are unavailable
} NlProfileCell;

// One timed call, for the Chrome trace. comp == NL_COMP_COUNT marks a whole layer.
typedef struct {
    double start, duration;  // seconds since the profiler was created
    int16_t layer;
    uint8_t comp, phase;
} NlProfileEvent;

typedef struct NlProfiler NlProfiler;
#define NL_TRACE_MAX_EVENTS ((size_t)1 << 24)

// Creates a profiler for models of cfg's shape, keeping at most max_events trace events (at most
// NL_TRACE_MAX_EVENTS, 24 bytes each; later ones are counted as dropped). The event buffer grows as
// events arrive, so a large max_events costs nothing until used. hw_counters asks for cycles and
// instructions via perf_event_open; when the platform refuses, nl_profiler_hw_available() says so
// and nothing fails.
int nl_profiler_create(NlProfiler **out, const NlConfig *cfg, size_t max_events, int hw_counters, NlError *err);
void nl_profiler_free(NlProfiler *prof);
// Attaches prof (or NULL: profiling off, no clock reads) to a state.
void nl_state_set_profiler(NlState *state, NlProfiler *prof);
NlProfiler *nl_state_profiler(const NlState *state);
void nl_profiler_set_phase(NlProfiler *prof, NlPhase phase);
// Brackets a stretch of wall time that belongs to the current phase (rows should cover it).
double nl_profiler_begin(NlProfiler *prof);  // returns a timestamp; 0 and no clock read when prof is NULL
void nl_profiler_add_wall(NlProfiler *prof, double begin);
void nl_profiler_record(NlProfiler *prof, double begin, int layer, NlComponent comp, size_t batch, size_t n,
                        size_t ctx);
void nl_profiler_record_layer(NlProfiler *prof, double begin, int layer);

const NlProfileCell *nl_profiler_cell(const NlProfiler *prof, NlPhase phase, int layer, NlComponent comp);
void nl_profile_cell_add(NlProfileCell *sum, const NlProfileCell *cell);  // every field of cell into sum
double nl_profiler_wall(const NlProfiler *prof, NlPhase phase);
uint64_t nl_profiler_tokens(const NlProfiler *prof, NlPhase phase);  // positions through the forward pass
// The tokens a phase produced (generate's decode: the tokens decoded; eval: the tokens scored), which
// per-token figures divide by; 0 (unset): they divide by the positions.
void nl_profiler_set_produced(NlProfiler *prof, NlPhase phase, uint64_t tokens);
uint64_t nl_profiler_produced(const NlProfiler *prof, NlPhase phase);
size_t nl_profiler_events(const NlProfiler *prof, const NlProfileEvent **events, size_t *dropped);
int nl_profiler_hw_available(const NlProfiler *prof);
// Adds other's totals (cells, wall time, positions) into prof, for a run on several engine threads
// with one profiler each (same config): times then are summed over threads. other's trace events
// are not copied (a trace shows the first thread).
void nl_profiler_merge(NlProfiler *prof, const NlProfiler *other);
int nl_profiler_threads(const NlProfiler *prof);  // 1 + the threads merged in
const NlConfig *nl_profiler_config(const NlProfiler *prof);  // the run's config, for nl_component_in_run
int nl_profiler_layers(const NlProfiler *prof);  // L of the run's model
const NlFamilyInfo *nl_profiler_family(const NlProfiler *prof);  // its family's answers
const char *nl_component_name(NlComponent comp);
const char *nl_phase_name(NlPhase phase);
// Whether a run of cfg has component comp (peri's output norms, a recurrent layer's own four): the
// rows a report shows.
int nl_component_in_run(const NlConfig *cfg, NlComponent comp);
// The windows nl_eval scores a text of n positions in (0 when n < 2), with a window of block_size
// moving by stride: a caller sizing profilers for an eval divides by the batch to get the calls.
size_t nl_profile_eval_windows(size_t n, size_t block_size, size_t stride);

// ---- hidden-state statistics and the invariance experiment (stats.c)

// The perturbations of the invariance experiment; the last one runs with eps = 0, which shows
// what is left of scale invariance once eps is out of the way.
typedef enum {
    NL_INV_SCALE_HALF,
    NL_INV_SCALE_2,
    NL_INV_SCALE_10,
    NL_INV_SHIFT_1,
    NL_INV_SCALE_2_EPS0,
    NL_INV_COUNT
} NlInvarianceCase;

// What the statistics collect (nl_stats_create's `what`, bits).
// NL_STATS_NO_STREAM leaves out what is collected otherwise (the stream's RMS and |mean|, the norms'
// output std, the sublayers' RMS, a recurrent layer's state norms): for a caller that wants only the others.
enum { NL_STATS_INVARIANCE = 1, NL_STATS_OUTLIERS = 2, NL_STATS_ATTENTION = 4, NL_STATS_NO_STREAM = 8 };

// One head's attention over the queries a pass ran (every position of every window), means over the
// queries: the entropy of the distribution over the keys in bits and the distance attended, sum_j
// p_j (t - j) for the query at t, over every query; the share on the window's first position (the
// sink) and on the query's own over the queries past a window's first (t >= 1: the first query sees
// only itself, so both its shares are 1 by construction), beside `uniform`, what a head spreading
// evenly over its keys scores on either share over the same queries, the mean of 1/(t + 1).
typedef struct {
    double entropy_bits, sink, self, distance;
    double uniform;  // the sink and self shares of uniform attention over the same queries
    uint64_t queries;  // every query: entropy_bits and distance
    uint64_t queries_past_first;  // the queries at t >= 1: sink, self and uniform
} NlAttentionStats;

// The outlier statistics of the rows one place (NlSite) of one layer saw over a run (LLM.int8()'s
// questions): RMS is each row's (one position's) sqrt(mean x^2).
typedef struct {
    uint64_t rows, values;
    double max_ratio;  // the largest max |x| / RMS of a row
    // The largest |x| of all (a "massive activation" where it is hundreds of times the mean |x|): its
    // value, its channel, and its row in the forward call that saw it first (in compare and eval,
    // whose calls are one window each, its position in that window: 0 the window's first token).
    double max_abs, max_over_mean_abs;
    int max_channel;
    size_t max_position;
    double share_6;  // the share of values with |x| >= 6 (LLM.int8()'s threshold)
    double share_6rms;  // the share of values with |x| >= 6 RMS of their row
    double kurtosis;  // of all the values seen together: E(x - mean)^4 / var^2 (3 for a Gaussian)
    int top[3];  // the channels of largest mean |x|, largest first (ties: the lower channel)
    double top_mean_abs[3];  // their mean |x|
    int has_gain;  // a norm's gain goes with the place (NlSite says which)
    int gain_top[3];  // the channels of largest |gain|, largest first
    int gain_overlap;  // how many of top are among gain_top (0 to 3), when has_gain
} NlOutlierStats;

typedef struct NlStats NlStats;
// Collects, over every position a forward pass runs: the RMS and the |mean| of the residual stream
// entering each block (layer L: leaving the last one), the std of each norm's output and the RMS of
// each sublayer's output as it joins the stream. With
// NL_STATS_INVARIANCE in `what`, every norm input x is also normalised as x*0.5, x*2, x*10 and x+1 by
// both LayerNorm and RMSNorm (with the model's gains), recording the largest change of the output;
// and once more as x*2 with eps = 0 on both sides. With NL_STATS_OUTLIERS, the outlier statistics of
// every place NlSite names. With NL_STATS_ATTENTION (a transformer), every query's attention in every
// layer and head (the probabilities recomputed beside the forward's own, nl_stats_attention).
int nl_stats_create(NlStats **out, const NlConfig *cfg, size_t max_rows, int what, NlError *err);
// The outlier statistics of one place of layer (0..L; the head and the stream leaving the last layer
// are layer L); -1 when it saw no rows or outliers were not collected.
int nl_stats_outliers(const NlStats *stats, int layer, NlSite site, NlOutlierStats *out);
const char *nl_site_name(NlSite site);  // "residual", "qkv_in", ...
// The attention statistics of head of layer (0..L-1); -1 when they were not collected.
int nl_stats_attention(const NlStats *stats, int layer, int head, NlAttentionStats *out);
// The mean share on the first position of the queries at position t of their window; NaN when none.
double nl_stats_attention_sink_at(const NlStats *stats, int layer, int head, size_t t);
// Keeps head's full pattern in layer on the first window the pass runs (with NL_STATS_ATTENTION).
int nl_stats_keep_pattern(NlStats *stats, int layer, int head, NlError *err);
// That pattern (rows, rows): row i query i's probabilities over keys 0..i, 0 beyond; NULL when none.
const float *nl_stats_pattern(const NlStats *stats, size_t *rows);
void nl_stats_free(NlStats *stats);
void nl_state_set_stats(NlState *state, NlStats *stats);
double nl_stats_residual_rms(const NlStats *stats, int layer);  // mean over positions, layer 0..L
double nl_stats_residual_abs_mean(const NlStats *stats, int layer);  // mean |per-position mean|
double nl_stats_norm_std(const NlStats *stats, int layer);  // layer L: the final norm
double nl_stats_norm_post_std(const NlStats *stats, int layer);  // peri's output norms, layer 0..L-1
// Mean RMS of the sublayers' outputs (both) as they are added to the stream (after peri's output
// norms; before DeepNorm's scaled add), layer 0..L-1.
double nl_stats_branch_rms(const NlStats *stats, int layer);
double nl_stats_invariance(const NlStats *stats, NlNormType type, NlInvarianceCase c);
// Recurrent models: the mean Euclidean norm of layer l's state over the positions t of time bucket
// k, 2^k - 1 <= t < 2^(k+1) - 1 (so bucket 0 is the first position); cell 0 for h, 1 for the LSTM's
// c. NaN when no position fell in the bucket. For these models nl_stats_residual_rms(l + 1) is the
// mean RMS of layer l's h and nl_stats_residual_rms(0) that of the embeddings.
#define NL_STATE_BUCKETS 24
double nl_stats_state_norm(const NlStats *stats, int layer, int cell, int bucket);
const char *nl_invariance_name(NlInvarianceCase c);

// ---- the logit lens (lens.c)

// Bits per character of ids[0..n) when the prediction is read after each layer: bits[l] (l = 0..L;
// 0 is the embeddings) from the stream entering layer l (L: leaving the last) through the model's
// own final norm and head (nl_state_readout: ln_f as run in pre and peri, recomputed on each layer's
// stream as tuned-lens does (NL_LENS_RECOMPUTE), or with the last layer's scale at the position as
// TransformerLens's apply_ln_to_stack (NL_LENS_FINAL, nl_lens_set_scale); raw without norms; a
// BatchNorm ln_f with the run's statistics). Post placement and DeepNorm, whose stream is already a
// norm's output: with LayerNorm or RMSNorm, the affine of the norm that wrote layer l's stream is
// taken off and the last norm's put on, so that the exact fold (which moves the last affine into the
// head) leaves every layer's readout as it was; post BatchNorm: the head alone. It reads eval's own
// pass: attached to a state, it captures each call's stream and reads it out after the call
// (nl_lens_eval). bits[L] is bit for bit that
// eval's bits/char, since with the lens (or statistics) attached a forward pass computes every row
// of its last layer; a plain eval computes only the rows a logit needs, and its products of fewer
// rows may round differently in the last bits. Transformers only.
typedef struct NlLens NlLens;
// A lens for an eval of ids[0..n) (borrowed) with this stride, on states of cfg with batch B.
int nl_lens_create(NlLens **out, const NlConfig *cfg, size_t batch, const int *ids, size_t n, size_t stride,
                   NlError *err);
void nl_lens_free(NlLens *lens);
// nl_eval of the lens's ids on that one state with opts (the lens's stride replaces opts->stride) and
// the lens attached over the observer the state has (statistics and a profiler attached before see
// the pass as ever; the readouts are not timed); the state's observer is put back after.
int nl_lens_eval(NlLens *lens, NlState *state, const NlEvalOptions *opts, NlEvalResult *out, NlError *err);
// How a layer's stream is scaled by the final norm: NL_LENS_RECOMPUTE its own scale (tuned-lens's
// logit lens, the default), NL_LENS_FINAL the last layer's at the same position (TransformerLens).
typedef enum { NL_LENS_RECOMPUTE, NL_LENS_FINAL } NlLensScale;
// Sets it on a lens made for a model of config c; returns 1 where it changes the readout (pre or peri
// with LayerNorm or RMSNorm, and NL_LENS_FINAL), 0 where both are the same (no final norm to
// recompute: post, DeepNorm, no norm; BatchNorm's fixed statistics).
int nl_lens_set_scale(NlLens *lens, const NlConfig *c, NlLensScale scale);
// How the lens reads a layer, in a word (static): "recompute" or "final" (the final norm with the
// layer's own scale or the last layer's), "last affine" (post: the writing norm's affine off, the last
// one's on) or "head" (the head alone: no norm, post BatchNorm).
const char *nl_lens_reading(const NlLens *lens);
// bits[0..L] of the eval run with the lens; -1 naming the layer when one is not finite.
int nl_lens_bits(const NlLens *lens, double *bits, NlError *err);
// Layer l's prediction beside the final layer's, the statistics Belrose et al. 2023 report for a lens
// (here the logit lens: no translator is trained),
// means over the scored positions (the bits are nl_lens_bits's): kl_bits KL(final || layer l) in bits
// (exactly 0 at l = L) with its standard error; entropy_bits the layer's own; top1_agree the share of
// positions whose most likely token (ties: the lowest index) is the final layer's.
typedef struct {
    double kl_bits, kl_bits_stderr, entropy_bits, top1_agree;
} NlLensLayer;
// layers[0..L] of the eval run with the lens; -1 as nl_lens_bits (then for a KL divergence).
int nl_lens_layers(const NlLens *lens, NlLensLayer *layers, NlError *err);
// All of it: an eval of ids on state with the lens attached.
int nl_lens(NlState *state, const int *ids, size_t n, size_t stride, double *bits, NlError *err);

// ---- placements (the core's recipes: NlPlacementInfo in normlab.h)

// A placement as its recipe describes it: what the command line and reports ask of a placement, never
// which one it is. NULL for NL_PLACE_AS_CONFIGURED or a value outside the enum.
const NlPlacementInfo *nl_placement_info(NlPlacement p);
// The norms placement p's blocks run: bit k for each of ln_1, ln_2, ln_1_post, ln_2_post, ln_1_sub,
// ln_2_sub (k = 0..5), bit 6 for ln_f; 0 for a model's own "block" (custom) or none. A run whose
// placement needs norms the trained one lacks gets unit gains there, which DyT cannot (no alpha).
unsigned nl_placement_norms(NlPlacement p);

// ---- comparing norm placements (compare.c)

typedef struct {
    int repeats;  // timing repeats; medians are reported
    int invariance;  // run the invariance experiment
    int fault;  // tests only, to show the checks can fail: NL_FAULT_* (0: none)
    int lens;  // the logit lens (transformers)
    NlLensScale lens_scale;  // how the lens scales a layer's stream through the final norm
    int outliers;  // the outlier statistics (of rows whose weights and activations are float32)
    int attention;  // the attention statistics (transformers)
    int pattern;  // with attention: keep head pattern_head's full pattern in layer pattern_layer
    int pattern_layer, pattern_head;
} NlCompareOptions;
// A wrong value slipped into one consistency check: one decoded position's input token changed
// (the cache check must then report a difference), or one token of one window in the batch of 16.
enum { NL_FAULT_NONE, NL_FAULT_CACHE, NL_FAULT_BATCH };

typedef struct {
    NlArch arch;  // the model's
    NlNormType norm;  // as run
    NlPlacement placement;  // NL_PLACE_AS_CONFIGURED for a recurrent model
    NlBnStats bn_stats;  // as run (BatchNorm rows)
    double residual_scale;  // as run (1 but where the recipe's adds are scaled: post, mix)
    int swapped_norm, swapped_placement;  // 1 when run otherwise than trained
    int qk_norm, swapped_qk_norm;  // QK-norm as run (a family with NlFamilyInfo.qk_norm), and 1 when switched
    size_t parameters, weight_bytes;
    size_t chars;  // tokens scored: characters (a character model), or BPE tokens (then bpe is set)
    double nats_per_char, bits_per_char, perplexity;  // per token
    int bpe;  // the model's tokenizer is GPT-2's byte-level BPE
    size_t bytes;  // the bytes of the scored tokens (every one after the first)
    double bits_per_byte;  // the text's bits per byte: what models of either tokenizer share
    double prefill_tok_s, decode_tok_s;  // medians over repeats
    double prefill_tok_s_min, prefill_tok_s_max, decode_tok_s_min, decode_tok_s_max;
    double time_share[NL_COMP_COUNT];  // share of forward time per component, during eval
    unsigned char in_run[NL_COMP_COUNT];  // 1: the run has the component (nl_component_in_run)
    int output_norms;  // its recipe has norms on the branches' outputs (ln_1_post, ln_2_post: peri's)
    double norm_share;  // every norm: norm1, norm2, their _post (peri), _sub (sub) and final_norm
    int n_layer;
    // The per-layer figures, sized to the model (nl_compare_row_free frees them):
    double *residual_rms;  // (L + 1) entering block l; [L] leaving the last
    double *residual_abs_mean;  // (L + 1)
    double *norm_std;  // (L + 1) [L]: the final norm (pre and peri, when there are norms)
    int has_final_norm;  // norm_std[L] is set
    double *norm_post_std;  // (L) peri's output norms
    double *branch_rms;  // (L) sublayer outputs as they join the stream
    // Recurrent models: the last layer's mean ||h_t|| ([0]) and the LSTM's ||c_t|| ([1]) per time bucket
    // of nl_stats_state_norm (NaN where no position fell); residual_rms[0] is then the embeddings' RMS
    // and residual_rms[l + 1] that of layer l's h. branch_rms, norm_std and invariance do not apply.
    double state_norm[2][NL_STATE_BUCKETS];
    double batch_diff;  // max |logit alone - logit in a batch of 16|
    double cache_diff;  // max |logit of full prefill - logit of KV-cache decoding|
    double invariance[2][NL_INV_COUNT];  // [LayerNorm, RMSNorm][case], when asked
    NlQuant quant;  // the model's weights (NlCompareJob)
    unsigned quant_classes;  // the matrices rounded
    NlQuant quant_act;  // the run's activations
    int reference;  // a quantized row's float32 row: its index among the rows; -1 for none
    int has_kl;  // a quantized row measured by nl_compare_models: the three below are set
    double kl_divergence, kl_divergence_stderr;  // mean KL(float32 row || this row) over the positions, nats
    double same_top;  // the share of positions whose most likely token is the float32 row's
    double max_dlogp;  // the largest |log-probability difference| from the float32 row, any position and token
    int folded;  // the reference's model folded (NlCompareJob.folded): 1, and 2 with its centering
    int has_lens;  // lens_bits_per_char is set (asked, and a transformer)
    const char *lens_reading;  // nl_lens_reading's word for how the lens read a layer (static)
    double *lens_bits_per_char;  // (L + 1) nl_lens: [l] read after l layers; [L] = bits_per_char
    // (L + 1) each, nl_lens_layers's (set with has_lens): KL(last layer || layer) in bits with its
    // standard error, the layer's entropy in bits, the share of positions whose top token is the last's
    double *lens_kl_bits, *lens_kl_bits_stderr, *lens_entropy_bits, *lens_top1_agree;
    int has_attention;  // the attention figures are set (asked, and a transformer)
    // What the sink share's position holds: 0 the text's token (the model adds no BOS), 1 BOS in the
    // first of eval's windows only (the later ones begin anywhere in the text), 2 BOS in every window
    int sink_bos;
    int n_head;
    size_t window;  // T: the query positions of attention_sink_at
    NlAttentionStats *attention;  // (L, n_head) nl_stats_attention over eval's windows
    double *attention_sink_at;  // (L, n_head, T) nl_stats_attention_sink_at (NaN where no query was)
    float *attention_pattern;  // (pattern_rows, pattern_rows) nl_stats_pattern of the kept head, or NULL
    size_t pattern_rows;
    int pattern_layer, pattern_head;
    int has_outliers;  // outliers is set (asked, and nothing rounded)
    NlOutlierStats (*outliers)[NL_SITE_COUNT];  // (L + 1) over eval's positions; rows 0: not seen
} NlCompareRow;

// What the attention sink's position holds in eval's windows of ids[0..n) at this stride (NlCompareRow's
// sink_bos): 0 the text's token (no BOS added), 1 BOS in the first window only, 2 BOS in every one.
int nl_attention_sink_bos(const NlModel *model, const int *ids, size_t n, size_t stride);

// Frees what nl_compare_model allocated in row (its per-layer arrays) and zeroes them; NULL-safe,
// and safe on a zeroed row.
void nl_compare_row_free(NlCompareRow *row);

// One row to measure: a model, how to run it, and its text; for a quantized row, what was rounded
// (the model's weights: by nl_quantize_model; the activations: rounded by the row itself) and the
// index of the float32 row it is measured against.
typedef struct {
    const NlModel *model;
    NlRunOptions run;
    const int *ids;
    size_t n;
    NlQuant quant;  // the weights' rounding (NL_QUANT_NONE: float32)
    unsigned quant_classes;  // the matrices it rounded
    NlQuant quant_act;  // every linear's input rows rounded so (nl_quant_state_create)
    int reference;  // the float32 row's index among the jobs; -1 for a float32 row
    int folded;  // the model is the reference's folded (nl_model_fold): 1, and 2 with its centering
} NlCompareJob;

// Measures one job on the text ids[0..n) (n >= 2) into a new row (free it with
// nl_compare_row_free, also after a failure): eval (with statistics and a profile), prefill
// and decode throughput, batch and cache consistency. The speeds and the two checks use the text's
// first T positions (a recurrent model: the most logits one call returns, NlModelDesc.call_logits).
int nl_compare_model(const NlCompareJob *job, const NlCompareOptions *opts, NlCompareRow *row, NlError *err);

// Measures rows[i] of jobs[i] for every job (free each with nl_compare_row_free), on up to
// `threads` worker threads (job i on worker i mod threads). Every figure but the timings is the
// same whatever the thread count; rows measured side by side share the machine, so their speeds
// are those of a loaded machine. A quantized row is also measured against its float32 row's
// distribution (has_kl: the KL divergence and top-1 agreement, position by position, from one more
// pass of that row's model). On failure returns -1 with the first failed job's index in *failed
// and its error.
int nl_compare_models(const NlCompareJob *jobs, size_t n_jobs, int threads, const NlCompareOptions *opts,
                      NlCompareRow *rows, size_t *failed, NlError *err);

// ---- a distribution against a reference's (kldiv.c)

// The natural log-softmax of logits (V) into out (V); returns the most likely index (ties: the lowest).
size_t nl_log_softmax(const float *logits, size_t V, float *out);
// KL(base || softmax(logits)) in nats, from the base's log-probabilities (V), in double; *same is 1
// when the two most likely tokens (ties: the lowest index) are the same.
double nl_kl_from_logits(const float *base_logp, const float *logits, size_t V, int *same);
// The mean of x (n) and its standard error (the sample standard deviation over sqrt(n); 0 for n < 2).
void nl_mean_stderr(const double *x, size_t n, double *mean, double *se);

// One run's record of every position eval scores (eval --kl-base/--kl, compare's quantized rows):
// each loss, the reference's log-softmax rows (base), and against them each position's KL
// divergence, loss difference and top-1 agreement. nl_kl_scored, eval's NlEvalScoredFn on it, fills
// base from the run (compare 0) or compares the run with base (compare 1).
typedef struct {
    size_t n, V;  // the positions scored (the text's tokens but the first), the vocabulary
    const int *ids;  // (n + 1) the text's, borrowed
    double *nll;  // (n) each position's loss, or NULL
    float *base;  // (n, V) the reference's log-softmax, or NULL
    int compare;  // 1: base is the reference the run is compared with
    double *kl, *dnll;  // (n) compare: KL(base || run), and the loss less the base's
    unsigned char *same;  // (n) compare: the same most likely token
    double max_dlogp;  // compare: the largest |ln q - ln p| over every position and token
} NlKlRecord;
enum { NL_KL_LOSSES = 1, NL_KL_BASE = 2, NL_KL_COMPARE = 4 };  // what a record keeps: or'ed
typedef struct {
    double kl, kl_se, median, p99, max;  // nats
    double same_top, same_top_se;  // fractions
    double ln_ratio, ln_ratio_se;  // mean loss less the base's: ln(PPL / PPL(base))
    double max_dlogp;  // the record's
} NlKlSummary;
// A record for n_ids tokens of a V-word model keeping `what` (NL_KL_COMPARE: base too, and compare
// 1; the caller fills base, from a file or a reference run at compare 0). Free it either way.
int nl_kl_record_init(NlKlRecord *r, size_t V, const int *ids, size_t n_ids, int what, NlError *err);
void nl_kl_record_free(NlKlRecord *r);
void nl_kl_scored(void *ctx, size_t input, const float *logits, double nll);  // NlEvalScoredFn on a record
// The compared record's mean KL (and its standard error), median, 99th percentile (nearest rank) and
// largest; the top-1 agreement; the mean loss difference. -1 when out of memory.
int nl_kl_summary(const NlKlRecord *r, NlKlSummary *s, NlError *err);

#endif
