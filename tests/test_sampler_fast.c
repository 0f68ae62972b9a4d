// test_sampler_fast.c — the fast chain (engine/sampler_fast.c) draws the exact chain's tokens on
// 50,257-token vocabularies, and the vocabulary kernels it and eval's log-sum-exp use, against
// double-precision references written here.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "sampler.h"
#include "sampler_fast.h"

enum { V = 50257 };

// Logits of kind k: 0 flat (a random model), 1 peaked (a trained one: a few far above the rest),
// 2 peaked and rounded to quarters (many exact ties), 3 two tied maxima over a wide spread.
static void make_logits(float *l, int kind, NlRng *gen) {
    for (int i = 0; i < V; i++) {
        double u = nl_rng_uniform(gen), z = 2.0 * nl_rng_uniform(gen) - 1.0;
        double x = kind == 0 ? 1.5 * z : 3.0 * z - (u < 0.002 ? -9.0 * nl_rng_uniform(gen) : 4.0);
        l[i] = (float)(kind == 2 ? 0.25 * floor(4.0 * x) : kind == 3 ? 20.0 * z : x);
    }
    if (kind == 3) l[V - 1] = l[7] = 25.0f;
}

// The exact chain's draw with the number u: the inverse CDF over its sorted candidates.
static int inverse_cdf(NlSampler *exact, const float *l, double u, int *n_out) {
    const int *ids;
    const double *probs;
    int n = nl_sampler_candidates(exact, l, &ids, &probs);
    *n_out = n;
    double cum = 0.0;
    for (int i = 0; i < n; i++)
        if (u < (cum += probs[i])) return ids[i];
    return ids[n - 1];
}

// For each chain, 3 kinds of logits x 40 draws: nl_sampler_sample equals the inverse CDF over the
// exact chain's candidates with the same random numbers (drawn only where more than one candidate
// is kept, as the exact chain does), and the fast chain decides itself in nearly every draw.
static void fast_draws_are_the_exact_chains(void) {
#define CHAIN(t, k, p, ...) \
    { .temperature = (t), .top_k = (k), .top_p = (p), __VA_ARGS__ }
    const NlSamplerParams chains[] = {
        CHAIN(0.8, 0, 1.0, .min_p = 0),
        CHAIN(1.0, 40, 1.0, .min_p = 0),
        CHAIN(0.8, 0, 0.9, .min_p = 0),
        CHAIN(1.3, 0, 1.0, .min_p = 0.05),
        CHAIN(0.7, 20, 0.8, .min_p = 0.02),
        CHAIN(100.0, 0, 1.0, .min_p = 0),
        CHAIN(0.01, 0, 1.0, .min_p = 0),
        CHAIN(1.0, 1, 1.0, .min_p = 0),
        CHAIN(0.8, 0, 1.0, .repeat_penalty = 1.3, .repeat_last_n = 64),
    };
#undef CHAIN
    float *l = malloc(V * sizeof *l);
    NlRng gen;
    nl_rng_seed(&gen, 3);
    int draws = 0, wrong = 0, undecided = 0, peaked = 0;
    NlFastSampler *fast = NULL;
    CHECK(nl_fast_sampler_create(&fast, V) == 0, "out of memory");
    for (size_t c = 0; c < sizeof chains / sizeof chains[0]; c++) {
        NlSampler *s = NULL, *exact = NULL;
        NlError err;
        CHECK(nl_sampler_create(&s, V, chains[c], 100 + c, &err) == 0 &&
                  nl_sampler_create(&exact, V, chains[c], 1, &err) == 0,
              "%s", err.msg);
        NlRng rng, fast_rng;
        nl_rng_seed(&rng, 100 + c);
        nl_rng_seed(&fast_rng, 9);
        for (int d = 0; d < 120; d++, draws++) {
            make_logits(l, d % 4 == 3 ? 3 : d % 3, &gen);
            int got = nl_sampler_sample(s, l), n;
            NlRng before = rng;
            int want = inverse_cdf(exact, l, nl_rng_uniform(&rng), &n);
            if (n == 1) rng = before;  // no number drawn for one candidate
            nl_sampler_accept(exact, got);  // the same history for the penalties
            wrong += got != want;
            float max;
            double u;
            if (chains[c].repeat_last_n == 0 && chains[c].temperature <= 2.0 && d % 3 && nl_max_finite(l, V, &max)) {
                undecided += nl_fast_sample(fast, l, max, &chains[c], &fast_rng, &u) == NL_FAST_EXACT;
                peaked++;
            }
        }
        nl_sampler_free(s);
        nl_sampler_free(exact);
    }
    nl_fast_sampler_free(fast);
    free(l);
    printf("     %d draws on %d tokens; of %d on peaked logits, the fast chain handed %d back to the exact one\n",
           draws, V, peaked, undecided);
    CHECK(wrong == 0, "%d of %d draws differ from the exact chain's", wrong, draws);
    // (on flat logits at 50,257 tokens, each token's mass is near the sums' error: a few percent go back)
    CHECK(undecided <= peaked / 100, "%d of %d draws on peaked logits undecided by the fast chain", undecided, peaked);
}

// nl_exp_scaled and nl_exp_weights against exp in double over the whole range, at several maxima
// and temperatures: within 2.4e-7 (2 ulp) of e^x, and the sum within that of the double sum.
static void exp_weights_are_within_two_ulp(void) {
    float *x = malloc(V * sizeof *x), *w = malloc(V * sizeof *w);
    const float maxes[] = {0.0f, 7.3f, -1234.5f, 30000.25f};
    const double temps[] = {1.0, 0.8, 0.013, 77.0};
    double worst = 0.0, worst_sum = 0.0;
    NlRng gen;
    nl_rng_seed(&gen, 4);
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) {
            double scale = 1.0 / temps[b], want_sum = 0.0;
            for (int i = 0; i < V; i++)  // x - max over [-90 t, 0]
                x[i] = maxes[a] - (float)(90.0 * temps[b] * nl_rng_uniform(&gen));
            x[0] = maxes[a];
            double sum = nl_exp_weights(w, x, V, maxes[a], scale);
            for (int i = 0; i < V; i++) {
                double want = exp(((double)x[i] - maxes[a]) * scale);
                want_sum += want < 1e-37 ? 0.0 : want;
                float one = nl_exp_scaled(x[i], maxes[a], scale);
                if (want < 1e-37) continue;  // (below float's normal range: 0 or a tiny value)
                double e = fmax(fabs(w[i] - want), fabs(one - want)) / want;
                worst = e > worst ? e : worst;
            }
            double e = fabs(sum - want_sum) / want_sum;
            worst_sum = e > worst_sum ? e : worst_sum;
        }
    printf("     largest relative error: weight %.3g, sum %.3g\n", worst, worst_sum);
    CHECK(worst <= 2.4e-7 && worst_sum <= 2.4e-7, "weights %.3g, sums %.3g of exp's", worst, worst_sum);
    free(x);
    free(w);
}

// nl_mass_split against sums in double, nl_collect_band against a plain scan, nl_max_finite against a
// plain max: on random values with ties, the masses within 9e-7 and the counts exact.
static void mass_split_band_and_max_equal_plain_loops(void) {
    float *x = malloc(V * sizeof *x), *w = malloc(V * sizeof *w);
    int *ids = malloc(V * sizeof *ids);
    NlRng gen;
    nl_rng_seed(&gen, 5);
    int bad = 0;
    for (int r = 0; r < 20; r++) {
        int n = r == 0 ? 1 : r == 1 ? 17 : V - r;
        for (int i = 0; i < n; i++) {
            x[i] = (float)floor(64.0 * nl_rng_uniform(&gen)) / 8.0f - 4.0f;
            w[i] = (float)nl_rng_uniform(&gen);
        }
        float th[3] = {x[0], -0.5f, -3.125f}, max;
        if (th[0] < th[1]) th[0] = th[1];
        double above[3], below[3];
        size_t count[3];
        nl_mass_split(x, w, (size_t)n, th, above, below, count);
        for (int k = 0; k < 3; k++) {
            double up = 0.0, down = 0.0;
            size_t c = 0;
            for (int i = 0; i < n; i++) x[i] >= th[k] ? (up += w[i], c++) : (down += w[i]);
            bad += count[k] != c || fabs(above[k] - up) > 9e-7 * up || fabs(below[k] - down) > 9e-7 * down;
        }
        size_t m = nl_collect_band(ids, (size_t)V, x, (size_t)n, -1.0f, 0.25f), j = 0;
        for (int i = 0; i < n; i++)
            if (x[i] >= -1.0f && x[i] < 0.25f) bad += j >= m || ids[j++] != i;
        bad += j != m;
        float want = x[0];
        for (int i = 1; i < n; i++) want = x[i] > want ? x[i] : want;
        bad += !nl_max_finite(x, (size_t)n, &max) || max != want;
        x[n / 2] = r % 2 ? NAN : -INFINITY;
        bad += nl_max_finite(x, (size_t)n, &max);
    }
    CHECK(bad == 0, "%d sums, counts, bands or maxima differ from the plain loops'", bad);
    free(x);
    free(w);
    free(ids);
}

// eval's log-sum-exp against one in double by libm: within 2.4e-7 absolute (the sum's relative
// error), on the four kinds of logits and a vocabulary of one.
static void logsumexp_is_within_its_bound(void) {
    float *l = malloc(V * sizeof *l);
    NlRng gen;
    nl_rng_seed(&gen, 6);
    double worst = 0.0;
    for (int r = 0; r < 12; r++) {
        make_logits(l, r % 4, &gen);
        double max = l[0], sum = 0.0;
        for (int i = 1; i < V; i++) max = l[i] > max ? l[i] : max;
        for (int i = 0; i < V; i++) sum += exp((double)l[i] - max);
        double want = max + log(sum), got = nl_logsumexp(l, V), nll = nl_nll(l, V, r);
        double e = fmax(fabs(got - want), fabs(nll - (want - l[r])));
        worst = e > worst ? e : worst;
    }
    float one = 3.5f;
    printf("     largest difference %.3g\n", worst);
    CHECK(worst <= 2.4e-7, "log-sum-exp off by %.3g", worst);
    CHECK(nl_logsumexp(&one, 1) == 3.5 && nl_nll(&one, 1, 0) == 0.0, "one token: %g", nl_logsumexp(&one, 1));
    l[5] = NAN;
    CHECK(isnan(nl_logsumexp(l, V)), "a NaN logit gives a NaN");
    free(l);
}

int main(void) {
    RUN(fast_draws_are_the_exact_chains);
    RUN(exp_weights_are_within_two_ulp);
    RUN(mass_split_band_and_max_equal_plain_loops);
    RUN(logsumexp_is_within_its_bound);
    return check_summary("test_sampler_fast");
}
