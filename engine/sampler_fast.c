// sampler_fast.c — the sampler's chain decided on float weights without sorting the vocabulary: the
// same token as the exact chain in sampler.c, or word that only the exact chain can tell.
//
// The exact chain weighs each candidate by libm's exp in double and walks them in rank order (the
// larger logit first, ties by the lower id). Here the weights come from nl_exp_weights in float, 8
// lanes at a time; the candidates are those within e^-24 of the most likely (a prefix of the rank
// order), and the one where the running mass crosses the draw is found by a selection on mass, O(n),
// as llama.cpp's samplers avoid a full sort. Every decision (the top-p boundary, the min-p floor, the
// drawn token) compares two sums of weights; where they are within the float weights' error of each
// other, the decision goes back to the exact chain, so the token drawn is always the exact chain's.
//
// The error: each weight is within 1e-7 of e^x (nl_exp_weights: 8.4e-8 measured, 2.4e-7 allowed by
// the tests), and nl_mass_split's sums, of 16 floats at a time added in double, are within 9e-7 of
// themselves more: TOL_WEIGHTS (2.5e-7) bounds sums of weights in double, TOL_SPLIT (1.2e-6) those
// with nl_mass_split's. The exact chain's own running sum in double is within 1e-11 of
// the whole. Weights below e^-87.3, which float cannot hold, add at most V e^-87.3 of the whole.
#include <math.h>
#include <stdlib.h>

#include "kernels.h"
#include "sampler_fast.h"

#define TOL_WEIGHTS 2.5e-7
#define TOL_SPLIT 1.2e-6
#define TAIL_X (-24.0)  // candidates within e^TAIL_X of the most likely
#define BAND_MAX 32  // the plain draw narrows its band to this many candidates
static const double FIRST_X[3] = {-1.5, -4.0, -9.0};
// Outside these temperatures x = (logit - max) / t loses the float range; the exact chain runs.
#define FAST_T_MIN 1e-2
#define FAST_T_MAX 1e2

typedef struct {
    float logit, w;
    int id;
} FastCand;

struct NlFastSampler {
    int V;
    float *w;  // (V) each token's weight
    FastCand *cands;  // (V) the candidates kept so far
    int *heap;  // (V) top-k's selection
};

int nl_fast_sampler_create(NlFastSampler **out, int V) {
    NlFastSampler *f = calloc(1, sizeof *f);
    *out = NULL;
    if (!f) return -1;
    f->V = V;
    f->w = malloc((size_t)V * sizeof *f->w);
    f->cands = malloc((size_t)V * sizeof *f->cands);
    f->heap = malloc((size_t)V * sizeof *f->heap);
    if (!f->w || !f->cands || !f->heap) {
        nl_fast_sampler_free(f);
        return -1;
    }
    *out = f;
    return 0;
}

void nl_fast_sampler_free(NlFastSampler *f) {
    if (!f) return;
    free(f->w);
    free(f->cands);
    free(f->heap);
    free(f);
}

// Rank order: the larger logit first, ties by the lower id (a total order: ids are distinct).
static int before(const FastCand *a, const FastCand *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int before_id(const float *l, int a, int b) { return l[a] > l[b] || (l[a] == l[b] && a < b); }

static void swap_cands(FastCand *c, int i, int j) {
    FastCand t = c[i];
    c[i] = c[j], c[j] = t;
}

static void sort_cands(FastCand *c, int n) {  // insertion sort: n is small
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && before(&c[j], &c[j - 1]); j--) swap_cands(c, j, j - 1);
}

// Moves c[lo..hi)'s median of three (by rank) to hi - 1.
static void pivot_last(FastCand *c, int lo, int hi) {
    int a = lo, b = lo + (hi - lo) / 2, z = hi - 1;
    if (before(&c[b], &c[a])) swap_cands(c, a, b);
    if (before(&c[z], &c[a])) swap_cands(c, a, z);
    if (before(&c[z], &c[b])) swap_cands(c, b, z);
    swap_cands(c, b, z);  // the median of the three
}

// Where a fraction u of the mass is crossed: the candidate x where the running mass in rank order first
// exceeds u times the whole (`head`, a mass ranked before c[0..n), then c, then `tail`, a mass ranked
// after them all). Afterwards c[0..pos)
// are the candidates ranked before x (in some order); *before and *after are the masses ranked before
// and after x, each summed from its own weights (never as a difference, which would carry the
// whole's error). Returns pos, or -1 if the walk ran off the end (rounding, or u within the tail).
static int crossing(FastCand *c, int n, double head, double tail, double u, double *before_mass, double *after_mass) {
    double whole = head + tail;
    for (int i = 0; i < n; i++) whole += c[i].w;
    int lo = 0, hi = n, rounds = 0;
    double mass = u * whole, acc = head, after = tail;  // acc: ranked before c[lo..hi), after: after it
    while (hi - lo > 16 && rounds++ < 64) {
        pivot_last(c, lo, hi);
        FastCand p = c[hi - 1];
        int i = lo;
        double ahead = 0.0, behind = 0.0;  // the masses ranked before and after the pivot
        for (int j = lo; j < hi - 1; j++) {
            if (before(&c[j], &p)) {
                ahead += c[j].w;
                swap_cands(c, i++, j);
            } else {
                behind += c[j].w;
            }
        }
        swap_cands(c, i, hi - 1);
        if (acc + ahead > mass) {
            after += p.w + behind;
            hi = i;
        } else if (acc + ahead + p.w > mass) {
            *before_mass = acc + ahead, *after_mass = after + behind;
            return i;
        } else {
            acc += ahead + p.w;
            lo = i + 1;
        }
    }
    sort_cands(c + lo, hi - lo);  // (64 rounds: a pathological order, sorted whole; never seen)
    for (int i = lo; i < hi; i++) {
        if (acc + c[i].w > mass) {
            *before_mass = acc, *after_mass = after;
            for (int j = i + 1; j < hi; j++) *after_mass += c[j].w;
            return i;
        }
        acc += c[i].w;
    }
    return -1;
}

// Whether a < b beyond both sums' error (and the exact chain's rounding of its running sum in double,
// 1e-11 of the whole).
static int surely_below(double a, double b, double whole, double tol) { return b - a > tol * (a + b) + 1e-11 * whole; }

// Whether the exact chain, walking in rank order with the running mass B before candidate x (mass X)
// and A after it, surely stops at x for the fraction u: B < u (B + X + A) < B + X, that is (1 - u) B <
// u (X + A) and u A < (1 - u) (B + X), both sides sums of weights. The most likely candidate (pos 0)
// has nothing before it.
static int stops_at(const FastCand *c, int pos, double B, double A, double u, double tol) {
    if (pos < 0) return 0;
    double X = c[pos].w, whole = B + X + A;
    return (pos == 0 || surely_below((1.0 - u) * B, u * (X + A), whole, tol)) &&
           surely_below(u * A, (1.0 - u) * (B + X), whole, tol);
}

// Top-k: the k candidates ranked first, by a heap whose worst is on top (O(V log k)).
static int top_k(NlFastSampler *f, const float *l, int k) {
    int *h = f->heap, n = 0;
    for (int id = 0; id < f->V; id++) {
        if (n == k && !before_id(l, id, h[0])) continue;
        int i = n < k ? n++ : 0;
        h[i] = id;
        if (i > 0) {  // sift up
            for (int p; i > 0 && before_id(l, h[p = (i - 1) / 2], h[i]); i = p) {
                int t = h[p];
                h[p] = h[i], h[i] = t;
            }
        } else {  // sift down
            for (int ch; (ch = 2 * i + 1) < n; i = ch) {
                if (ch + 1 < n && before_id(l, h[ch], h[ch + 1])) ch++;
                if (!before_id(l, h[i], h[ch])) break;
                int t = h[i];
                h[i] = h[ch], h[ch] = t;
            }
        }
    }
    return n;
}

// The plain chain's draw (no top-k, top-p or min-p) over all V tokens, with the weights in f->w:
// the band of logits [lo, hi) that holds the crossing is narrowed, a quarter at a time, by the masses
// above three thresholds (vector passes over the vocabulary), until it holds a few candidates; those
// are collected and walked. The masses before and after the band are sums of their own weights.
static int banded_draw(NlFastSampler *f, const float *l, float max, double t, double whole, double u) {
    size_t V = (size_t)f->V, n_hi = 0, n_lo = V;  // the counts with l >= hi and with l >= lo
    float hi = INFINITY, lo = -INFINITY, floor = max + (float)(TAIL_X * t);
    double mass = u * whole, above_hi = 0.0, below_lo = 0.0;
    for (int pass = 0; pass < 16 && n_lo - n_hi > BAND_MAX; pass++) {
        float b = hi < max ? hi : max, a = lo > floor ? lo : floor, th[3];
        if (!(a < b)) break;
        for (int k = 0; k < 3; k++)  // the first pass at x = -1.5, -4, -9: most draws fall near the top
            th[k] = pass == 0 ? max + (float)(FIRST_X[k] * t) : b - (b - a) * 0.25f * (float)(k + 1);
        double above[3], below[3];
        size_t count[3];
        nl_mass_split(l, f->w, V, th, above, below, count);
        int k = 0;
        while (k < 3 && above[k] <= mass) k++;
        float new_hi = k == 0 ? hi : th[k - 1], new_lo = k == 3 ? lo : th[k];
        if (new_hi == hi && new_lo == lo) break;  // (ties: the band cannot narrow)
        if (k > 0) above_hi = above[k - 1], n_hi = count[k - 1];
        if (k < 3) below_lo = below[k], n_lo = count[k];
        hi = new_hi, lo = new_lo;
    }
    FastCand *c = f->cands;
    int m = (int)nl_collect_band(f->heap, V, l, V, lo, hi);
    for (int i = 0; i < m; i++) c[i] = (FastCand){l[f->heap[i]], f->w[f->heap[i]], f->heap[i]};
    double B, A;
    int pos = crossing(c, m, above_hi, below_lo, u, &B, &A);
    return stops_at(c, pos, B, A, u, TOL_SPLIT) ? c[pos].id : NL_FAST_EXACT;
}

int nl_fast_sample(NlFastSampler *f, const float *l, float max, const NlSamplerParams *p, NlRng *rng, double *u_drawn) {
    int V = f->V;
    *u_drawn = -1.0;
    if (!(p->temperature >= FAST_T_MIN && p->temperature <= FAST_T_MAX)) return NL_FAST_EXACT;
    double scale = 1.0 / p->temperature;
    FastCand *c = f->cands;
    int n_exact, m = 0;  // the exact chain's candidate count; those held in c
    double tail = 0.0;  // the mass of the candidates not held in c (ranked after them all)
    if (p->top_k > 0 && p->top_k < V) {
        n_exact = m = top_k(f, l, p->top_k);
        for (int i = 0; i < m; i++) {
            int id = f->heap[i];
            c[i] = (FastCand){l[id], nl_exp_scaled(l[id], max, scale), id};
        }
    } else if (p->top_p >= 1.0 && p->min_p <= 0.0) {
        double whole = nl_exp_weights(f->w, l, (size_t)V, max, scale);
        if (V == 1) return 0;
        double u = nl_rng_uniform(rng);
        *u_drawn = u;
        return banded_draw(f, l, max, p->temperature, whole, u);
    } else {
        n_exact = V;
        (void)nl_exp_weights(f->w, l, (size_t)V, max, scale);
        float floor = max + (float)(TAIL_X * p->temperature);
        for (int id = 0; id < V; id++) {
            if (l[id] >= floor) c[m++] = (FastCand){l[id], f->w[id], id};
            else tail += f->w[id];
        }
    }
    if (p->top_p < 1.0) {  // keeps the candidates with less than top_p of the whole before them
        double B, A;
        int pos = crossing(c, m, 0.0, tail, p->top_p, &B, &A);
        if (!stops_at(c, pos, B, A, p->top_p, TOL_WEIGHTS)) return NL_FAST_EXACT;
        n_exact = m = pos + 1;
        tail = 0.0;
    }
    if (p->min_p > 0.0) {  // keeps those at least min_p times the most likely (whose weight is 1)
        double floor = p->min_p;
        if (tail > 0.0 && 2.0 * exp(TAIL_X) >= floor) return NL_FAST_EXACT;  // the tail could stay
        int kept = 0;
        for (int i = 0; i < m; i++) {
            if (fabs(c[i].w - floor) <= 2.0 * TOL_WEIGHTS * floor) return NL_FAST_EXACT;
            if (c[i].w >= floor) swap_cands(c, kept++, i);
        }
        n_exact = m = kept;
        tail = 0.0;
    }
    if (n_exact == 1) return c[0].id;  // (the exact chain draws no number for one candidate)
    double u = nl_rng_uniform(rng), B, A;
    *u_drawn = u;
    int pos = crossing(c, m, 0.0, tail, u, &B, &A);
    return stops_at(c, pos, B, A, u, TOL_WEIGHTS) ? c[pos].id : NL_FAST_EXACT;
}
