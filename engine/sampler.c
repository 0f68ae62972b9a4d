// sampler.c — seeded PRNG and the sampler's chain: penalties, then greedy or temperature -> top-k ->
// top-p -> min-p, with the top tokens of each draw recorded on request.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "sampler.h"
#include "sampler_fast.h"

typedef struct {
    double p;
    int id;
} Candidate;

struct NlSampler {
    int V;
    NlSamplerParams params;
    NlRng rng;
    Candidate *cands;  // (V) scratch: sorted by descending probability up to n_sorted
    Candidate *spare;  // (V) scratch for the radix sort
    int n_sorted;
    int *ids;  // (V) kept candidate ids, by descending probability
    double *probs;  // (V) their renormalised probabilities
    int penalties;  // the penalties are on: history, counts and pen below
    float *pen;  // (V) the penalized logits
    int *counts;  // (V) each token's occurrences in the history
    int *hist;  // (repeat_last_n) ring of the last tokens accepted, oldest at hist_head
    int hist_head, hist_len;
    int *top_ids;  // (n_probs) the last draw's most likely tokens, best first
    double *top_logprobs;  // (n_probs) theirs
    int n_top;  // recorded so far (0 before any draw)
    double drawn_logprob;  // the last drawn token's
    NlFastSampler *fast;  // the same draws without sorting the vocabulary (sampler_fast.c)
};

// The penalties' bounds keep them finite in float: a repeat penalty in [1e-3, 1e3] (or 0: off),
// presence and frequency within +-1e3.
#define PENALTY_MAX 1e3

static int penalty_ok(double r) { return r == 0.0 || (r >= 1.0 / PENALTY_MAX && r <= PENALTY_MAX); }

// The first parameter out of its range, named with its value ("a temperature in [0, 1e300], got
// -0.5") into buf; NULL when every one is in range. Each test is written so that NaN fails too.
static const char *params_bad(int vocab_size, const NlSamplerParams *p, char *buf, size_t cap) {
    if (!(vocab_size >= 1)) snprintf(buf, cap, "vocab_size >= 1, got %d", vocab_size);
    else if (!(p->temperature >= 0.0 && p->temperature <= 1e300))
        snprintf(buf, cap, "a temperature in [0, 1e300], got %g", p->temperature);
    else if (!(p->top_k >= 0)) snprintf(buf, cap, "top_k >= 0, got %d", p->top_k);
    else if (!(p->top_p > 0.0 && p->top_p <= 1.0)) snprintf(buf, cap, "top_p in (0, 1], got %g", p->top_p);
    else if (!(p->min_p >= 0.0 && p->min_p <= 1.0)) snprintf(buf, cap, "min_p in [0, 1], got %g", p->min_p);
    else if (!penalty_ok(p->repeat_penalty))
        snprintf(buf, cap, "a repeat penalty of 0 or in [1e-3, 1e3], got %g", p->repeat_penalty);
    else if (!(p->repeat_last_n >= 0)) snprintf(buf, cap, "repeat_last_n >= 0, got %d", p->repeat_last_n);
    else if (!(fabs(p->presence_penalty) <= PENALTY_MAX))
        snprintf(buf, cap, "a presence penalty in [-1e3, 1e3], got %g", p->presence_penalty);
    else if (!(fabs(p->frequency_penalty) <= PENALTY_MAX))
        snprintf(buf, cap, "a frequency penalty in [-1e3, 1e3], got %g", p->frequency_penalty);
    else if (!(p->n_probs >= 0 && p->n_probs <= NL_SAMPLER_PROBS_MAX))
        snprintf(buf, cap, "n_probs in [0, %d], got %d", NL_SAMPLER_PROBS_MAX, p->n_probs);
    else return NULL;
    return buf;
}

static int penalties_on(const NlSamplerParams *p) {
    return p->repeat_last_n > 0 && ((p->repeat_penalty != 0.0 && p->repeat_penalty != 1.0) ||
                                    p->presence_penalty != 0.0 || p->frequency_penalty != 0.0);
}

int nl_sampler_create(NlSampler **out, int vocab_size, NlSamplerParams params, uint64_t seed, NlError *err) {
    *out = NULL;
    char why[96];
    if (params_bad(vocab_size, &params, why, sizeof why)) {
        nl_error(err, NL_ERR_ARG, "sampler: need %s", why);
        return -1;
    }
    NlSampler *s = calloc(1, sizeof *s);
    size_t V = (size_t)vocab_size, n_hist = (size_t)params.repeat_last_n, n_top = (size_t)params.n_probs;
    int pen = penalties_on(&params), fail = !s;
    if (s) {
        s->cands = malloc(V * sizeof *s->cands);
        s->spare = malloc(V * sizeof *s->spare);
        s->ids = malloc(V * sizeof *s->ids);
        s->probs = malloc(V * sizeof *s->probs);
        fail = !s->cands || !s->spare || !s->ids || !s->probs || nl_fast_sampler_create(&s->fast, vocab_size) != 0;
    }
    if (s && pen) {
        s->pen = malloc(V * sizeof *s->pen);
        s->counts = calloc(V, sizeof *s->counts);
        s->hist = malloc(n_hist * sizeof *s->hist);
        fail |= !s->pen || !s->counts || !s->hist;
    }
    if (s && n_top) {
        s->top_ids = malloc(n_top * sizeof *s->top_ids);
        s->top_logprobs = malloc(n_top * sizeof *s->top_logprobs);
        fail |= !s->top_ids || !s->top_logprobs;
    }
    if (fail) {
        nl_sampler_free(s);
        nl_error(err, NL_ERR_NOMEM, "out of memory for the sampler");
        return -1;
    }
    s->V = vocab_size;
    s->penalties = pen;
    s->params = params;
    nl_rng_seed(&s->rng, seed);
    *out = s;
    return 0;
}

void nl_sampler_free(NlSampler *s) {
    if (!s) return;
    free(s->cands);
    free(s->spare);
    free(s->ids);
    free(s->probs);
    free(s->pen);
    free(s->counts);
    free(s->hist);
    free(s->top_ids);
    free(s->top_logprobs);
    nl_fast_sampler_free(s->fast);
    free(s);
}

void nl_sampler_accept(NlSampler *s, int token) {
    if (!s->penalties || token < 0 || token >= s->V) return;
    int cap = s->params.repeat_last_n;
    if (s->hist_len == cap) {  // full: the oldest leaves
        s->counts[s->hist[s->hist_head]]--;
        s->hist[s->hist_head] = token;
        s->hist_head = (s->hist_head + 1) % cap;
    } else {
        s->hist[(s->hist_head + s->hist_len++) % cap] = token;
    }
    s->counts[token]++;
}

// llama.cpp's penalties, in its float arithmetic, into s->pen: for a token seen c > 0 times, the
// repeat penalty r divides a positive logit and multiplies the others, then c * frequency + presence
// is subtracted.
static const float *penalize(NlSampler *s, const float *logits) {
    if (!s->penalties) return logits;
    float r = (float)s->params.repeat_penalty, freq = (float)s->params.frequency_penalty,
          present = (float)s->params.presence_penalty;
    int repeat = r != 0.0f && r != 1.0f;
    memcpy(s->pen, logits, (size_t)s->V * sizeof *s->pen);
    for (int i = 0; i < s->V; i++) {
        int c = s->counts[i];
        if (c == 0) continue;
        float l = s->pen[i];
        if (repeat) l = l <= 0.0f ? l * r : l / r;
        s->pen[i] = l - ((float)c * freq + present);
    }
    return s->pen;
}

static int by_prob_desc(const void *a, const void *b) {
    const Candidate *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

// Sorts c[0..n) in by_prob_desc order, in O(n): the candidates are put back in id order (their ids
// are distinct and below V), then a stable least-significant-digit radix sort on the bits of -p
// (p >= 0, so its bit pattern orders like the number) keeps equal p in id order.
enum { RADIX_BITS = 11, RADIX = 1 << RADIX_BITS };

static void radix_sort(NlSampler *s, Candidate *c, int n) {
    Candidate *a = c, *b = s->spare;
    for (int i = 0; i < s->V; i++) b[i].id = -1;  // back to id order: scatter by id, then gather
    for (int i = 0; i < n; i++) b[c[i].id] = c[i];
    for (int i = 0, k = 0; i < s->V; i++)
        if (b[i].id >= 0) a[k++] = b[i];
    for (int shift = 0; shift < 64; shift += RADIX_BITS) {
        size_t count[RADIX + 1] = {0};
        for (int i = 0; i < n; i++) {
            uint64_t key;
            memcpy(&key, &a[i].p, sizeof key);
            count[((~key) >> shift & (RADIX - 1)) + 1]++;
        }
        for (int d = 0; d < RADIX; d++) count[d + 1] += count[d];
        for (int i = 0; i < n; i++) {
            uint64_t key;
            memcpy(&key, &a[i].p, sizeof key);
            b[count[(~key) >> shift & (RADIX - 1)]++] = a[i];
        }
        Candidate *t = a;
        a = b;
        b = t;
    }
    if (a != c) memcpy(c, a, (size_t)n * sizeof *c);
}

// Makes cands[0..i] the i + 1 most likely in final order (descending probability, ties by id: a
// total order, so the result does not depend on how it is reached). Sampling usually stops after a
// few candidates, so the first ones are picked by selection, O(V) each, and the rest sorted at once
// (radix for many, qsort for few) only if the walk goes further. A large vocabulary selects only
// two: 16 selections over 50,257 candidates cost more than the radix sort.
enum { SELECT_SMALL = 16, SELECT_LARGE = 2, RADIX_MIN = 512 };

static void sort_through(NlSampler *s, int i) {
    if (i < s->n_sorted) return;
    if (i >= (s->V >= RADIX_MIN ? SELECT_LARGE : SELECT_SMALL)) {
        int rest = s->V - s->n_sorted;
        if (rest >= RADIX_MIN) radix_sort(s, s->cands + s->n_sorted, rest);
        else qsort(s->cands + s->n_sorted, (size_t)rest, sizeof *s->cands, by_prob_desc);
        s->n_sorted = s->V;
        return;
    }
    for (; s->n_sorted <= i; s->n_sorted++) {
        int best = s->n_sorted;
        for (int j = best + 1; j < s->V; j++)
            if (by_prob_desc(&s->cands[j], &s->cands[best]) < 0) best = j;
        Candidate t = s->cands[best];
        s->cands[best] = s->cands[s->n_sorted];
        s->cands[s->n_sorted] = t;
    }
}

// Min-p over the n kept candidates: those at least min_p times the most likely (at least one).
static int min_p_cut(NlSampler *s, int n, double *total) {
    sort_through(s, 0);
    double floor = s->params.min_p * s->cands[0].p, sum = s->cands[0].p;
    int m = 1;
    for (; m < n; m++) {
        sort_through(s, m);
        if (s->cands[m].p < floor) break;
        sum += s->cands[m].p;
    }
    if (m < n) *total = sum;
    return m;
}

// Applies the penalties, then temperature, top-k, top-p and min-p: cands[0..n) are the kept
// candidates (sorted as far as the cuts needed), total their probability mass. Returns n, or -1 on a
// non-finite logit (before or after the penalties).
static int keep(NlSampler *s, const float *logits, double *total_out) {
    int V = s->V, best = 0;
    logits = penalize(s, logits);  // (a penalty keeps a non-finite logit non-finite: the check below sees it)
    for (int i = 0; i < V; i++) {
        if (!isfinite(logits[i])) return -1;
        if (logits[i] > logits[best]) best = i;
    }
    s->n_sorted = 0;
    if (s->params.temperature == 0.0) {
        s->cands[0] = (Candidate){1.0, best};
        s->n_sorted = 1;
        *total_out = 1.0;
        return 1;
    }
    // Temperature: p_i proportional to exp((l_i - max) / t), in double.
    double max = logits[best], total = 0.0;
    for (int i = 0; i < V; i++) {
        s->cands[i] = (Candidate){exp(((double)logits[i] - max) / s->params.temperature), i};
        total += s->cands[i].p;
    }
    // Top-k keeps the k most likely; top-p then keeps the shortest prefix whose mass reaches p.
    int n = (s->params.top_k > 0 && s->params.top_k < V) ? s->params.top_k : V;
    if (n < V) {
        sort_through(s, n - 1);
        total = 0.0;
        for (int i = 0; i < n; i++) total += s->cands[i].p;
    }
    if (s->params.top_p < 1.0) {
        double cum = 0.0;
        int m = 0;
        while (m < n && cum < s->params.top_p * total) {
            sort_through(s, m);
            cum += s->cands[m++].p;
        }
        n = m > 0 ? m : 1;
        total = cum > 0.0 ? cum : s->cands[0].p;
    }
    if (s->params.min_p > 0.0) n = min_p_cut(s, n, &total);
    *total_out = total;
    return n;
}

// Whether token a ranks before token b: the larger logit, ties by the lower id.
static int ranks_before(const float *l, int a, int b) { return l[a] > l[b] || (l[a] == l[b] && a < b); }

// The heap h[0..n) keeps its worst-ranked token on top: sift h[i] up or down into place.
static void sift_up(const float *l, int *h, int i) {
    for (int p; i > 0 && ranks_before(l, h[p = (i - 1) / 2], h[i]); i = p) {
        int t = h[p];
        h[p] = h[i], h[i] = t;
    }
}

static void sift_down(const float *l, int *h, int n, int i) {
    for (int c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && ranks_before(l, h[c], h[c + 1])) c++;  // the worse child
        if (!ranks_before(l, h[i], h[c])) return;
        int t = h[i];
        h[i] = h[c], h[c] = t;
    }
}

// ln sum exp(logits) with libm's exp in double: the recorded probabilities are printed to 17 digits,
// which eval's faster nl_logsumexp (within 2.4e-7) would change.
static double logsumexp_exact(const float *logits, int V) {
    double max = logits[0], sum = 0.0;
    for (int i = 1; i < V; i++) max = logits[i] > max ? logits[i] : max;
    for (int i = 0; i < V; i++) sum += exp((double)logits[i] - max);
    return max + log(sum);
}

// The n_probs most likely tokens of logits, at temperature 1, best first, and the drawn one's
// log-probability: a heap of the best so far, worst on top (O(V log n)), then sorted.
static void record_probs(NlSampler *s, const float *logits, int drawn) {
    int k = s->params.n_probs, n = 0, *h = s->top_ids;
    double lse = logsumexp_exact(logits, s->V);
    for (int id = 0; id < s->V; id++) {
        if (n < k) {
            h[n] = id;
            sift_up(logits, h, n++);
        } else if (ranks_before(logits, id, h[0])) {
            h[0] = id;
            sift_down(logits, h, n, 0);
        }
    }
    for (int end = n - 1; end > 0; end--) {  // the worst left goes last each time
        int t = h[0];
        h[0] = h[end], h[end] = t;
        sift_down(logits, h, end, 0);
    }
    for (int i = 0; i < n; i++) s->top_logprobs[i] = (double)logits[h[i]] - lse;
    s->n_top = n;
    s->drawn_logprob = (double)logits[drawn] - lse;
}

int nl_sampler_probs(const NlSampler *s, double *logprob, const int **ids, const double **logprobs) {
    *logprob = s->drawn_logprob;
    *ids = s->top_ids;
    *logprobs = s->top_logprobs;
    return s->n_top;
}

int nl_sampler_candidates(NlSampler *s, const float *logits, const int **ids, const double **probs) {
    double total;
    int n = keep(s, logits, &total);
    if (n < 0) return -1;
    sort_through(s, n - 1);
    for (int i = 0; i < n; i++) {
        s->ids[i] = s->cands[i].id;
        s->probs[i] = s->cands[i].p / total;
    }
    *ids = s->ids;
    *probs = s->probs;
    return n;
}

// Inverse CDF over the kept candidates in sorted order, sorting only as far as the draw reaches; u is
// the number drawn for it, or negative to draw one here.
static int draw(NlSampler *s, int n, double total, double u) {
    if (n == 1) return s->cands[0].id;
    if (u < 0.0) u = nl_rng_uniform(&s->rng);
    double cum = 0.0;
    for (int i = 0; i < n; i++) {
        sort_through(s, i);
        cum += s->cands[i].p / total;
        if (u < cum) return s->cands[i].id;
    }
    return s->cands[n - 1].id;  // u within rounding of 1
}

// The chain's token: greedy's argmax, else the fast chain's draw (sampler_fast.c), which is the
// exact chain's where it can tell and hands back its random number where it cannot. -1 on a
// non-finite logit.
static int choose(NlSampler *s, const float *logits) {
    const float *l = penalize(s, logits);
    float max;
    if (!nl_max_finite(l, (size_t)s->V, &max)) return -1;
    if (!(s->params.temperature > 0.0)) {  // (0: the parameters allow no less)
        int best = 0;
        while (l[best] != max) best++;  // the lowest id of the max
        return best;
    }
    double u, total;
    int id = nl_fast_sample(s->fast, l, max, &s->params, &s->rng, &u);
    if (id != NL_FAST_EXACT) return id;
    int n = keep(s, logits, &total);
    return draw(s, n, total, u);
}

int nl_sampler_sample(NlSampler *s, const float *logits) {
    int id = choose(s, logits);
    if (id < 0) return -1;
    if (s->params.n_probs > 0) record_probs(s, logits, id);
    nl_sampler_accept(s, id);
    return id;
}
