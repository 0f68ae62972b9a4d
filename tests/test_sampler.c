// test_sampler.c — the kept sets of top-k and top-p, empirical frequencies, seeds, bad logits.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "normlab.h"

// Logits whose softmax is exactly-ish {0.5, 0.25, 0.15, 0.1} at ids {2, 0, 3, 1}.
static const float LOGITS[4] = {-1.3862944f, -2.3025851f, -0.6931472f, -1.8971200f};

static NlSampler *make(double temp, int k, double p, uint64_t seed) {
    NlSampler *s = NULL;
    NlError err;
    CHECK(nl_sampler_create(&s, 4, (NlSamplerParams){temp, k, p}, seed, &err) == 0, "%s", err.msg);
    return s;
}

static int kept(double temp, int k, double p, int *ids_out, double *probs_out) {
    NlSampler *s = make(temp, k, p, 1);
    const int *ids;
    const double *probs;
    int n = nl_sampler_candidates(s, LOGITS, &ids, &probs);
    for (int i = 0; i < n; i++) {
        ids_out[i] = ids[i];
        probs_out[i] = probs[i];
    }
    nl_sampler_free(s);
    return n;
}

static void top_k_keeps_exactly_the_k_most_likely(void) {
    int ids[4];
    double p[4];
    CHECK(kept(1.0, 2, 1.0, ids, p) == 2 && ids[0] == 2 && ids[1] == 0, "top-2 = {2, 0}");
    CHECK(fabs(p[0] - 2.0 / 3.0) < 1e-6 && fabs(p[1] - 1.0 / 3.0) < 1e-6, "renormalised %g %g", p[0], p[1]);
    CHECK(kept(1.0, 1, 1.0, ids, p) == 1 && ids[0] == 2 && p[0] == 1.0, "top-1 = argmax");
    CHECK(kept(1.0, 99, 1.0, ids, p) == 4, "k above V keeps all");
    CHECK(kept(1.0, 0, 1.0, ids, p) == 4, "k = 0 is off");
}

static void top_p_keeps_the_smallest_set_reaching_p(void) {
    int ids[4];
    double p[4];
    CHECK(kept(1.0, 0, 0.45, ids, p) == 1 && ids[0] == 2, "p=0.45 -> {2}");
    CHECK(kept(1.0, 0, 0.74, ids, p) == 2 && ids[1] == 0, "p=0.74 -> {2, 0}");
    CHECK(kept(1.0, 0, 0.76, ids, p) == 3 && ids[2] == 3, "p=0.76 -> {2, 0, 3}");
    CHECK(fabs(p[0] - 0.5 / 0.9) < 1e-6, "renormalised over 0.9: %g", p[0]);
    // top-k first, then top-p over the renormalised survivors: {2, 0} -> 2/3, 1/3; p = 0.6 keeps {2}.
    CHECK(kept(1.0, 2, 0.6, ids, p) == 1 && ids[0] == 2, "top-k then top-p");
    // A mass only the whole vocabulary reaches keeps every candidate (the last one is 0.1 of 1.0).
    CHECK(kept(1.0, 0, 0.95, ids, p) == 4 && ids[3] == 1, "p=0.95 -> all four, the least likely last");
    CHECK(kept(1.0, 3, 0.99, ids, p) == 3, "top-k 3 then p=0.99 -> all three survivors");
}

static void greedy_takes_argmax_lowest_id_on_ties(void) {
    NlSampler *s = make(0.0, 0, 1.0, 9);
    const float tie[4] = {0.5f, 2.0f, 2.0f, -1.0f};
    CHECK(nl_sampler_sample(s, LOGITS) == 2, "argmax");
    CHECK(nl_sampler_sample(s, tie) == 1, "lowest id among ties");
    nl_sampler_free(s);
}

static void empirical_frequencies_match_the_distribution(void) {
    const int N = 200000;
    const double want[4] = {0.25, 0.1, 0.5, 0.15};
    // temperature 0.5 squares the probabilities: p_i^2 / sum p^2
    double sq = 0.25 * 0.25 + 0.1 * 0.1 + 0.5 * 0.5 + 0.15 * 0.15;
    const double temps[2] = {1.0, 0.5};
    for (int t = 0; t < 2; t++) {
        NlSampler *s = make(temps[t], 0, 1.0, 42);
        int count[4] = {0};
        for (int i = 0; i < N; i++) count[nl_sampler_sample(s, LOGITS)]++;
        for (int i = 0; i < 4; i++) {
            double p = t == 0 ? want[i] : want[i] * want[i] / sq;
            double f = (double)count[i] / N, sigma = sqrt(p * (1 - p) / N);
            // 5 standard errors: a false alarm about once in 1.7 million runs.
            CHECK(fabs(f - p) < 5 * sigma, "T=%g id %d: frequency %.4f, probability %.4f", temps[t], i, f, p);
        }
        nl_sampler_free(s);
    }
}

static void same_seed_same_stream_and_seed_zero_is_valid(void) {
    NlSampler *a = make(1.0, 0, 1.0, 0), *b = make(1.0, 0, 1.0, 0), *c = make(1.0, 0, 1.0, 1);
    int same = 1, differs = 0;
    for (int i = 0; i < 1000; i++) {
        int x = nl_sampler_sample(a, LOGITS), y = nl_sampler_sample(b, LOGITS), z = nl_sampler_sample(c, LOGITS);
        same &= x == y;
        differs |= x != z;
    }
    CHECK(same, "seed 0 twice gives the same stream");
    CHECK(differs, "seeds 0 and 1 give different streams");
    nl_sampler_free(a);
    nl_sampler_free(b);
    nl_sampler_free(c);
}

static void non_finite_logits_are_reported_not_sampled(void) {
    NlSampler *s = make(1.0, 0, 1.0, 3);
    float bad[4] = {0.0f, NAN, 1.0f, 2.0f};
    CHECK(nl_sampler_sample(s, bad) == -1, "NaN gives -1");
    bad[1] = INFINITY;
    CHECK(nl_sampler_sample(s, bad) == -1, "Inf gives -1");
    nl_sampler_free(s);
    NlSampler *one = NULL;
    NlError err;
    CHECK(nl_sampler_create(&one, 1, (NlSamplerParams){1.0, 5, 0.5}, 1, &err) == 0, "V = 1");
    float l = 3.0f;
    CHECK(nl_sampler_sample(one, &l) == 0, "one-token vocabulary samples id 0");
    nl_sampler_free(one);
}

// The sampler sorts only as far as each draw reaches (selection for the first 16, or 2 in a large
// vocabulary, then a full sort): every draw must equal the inverse CDF walked over the fully sorted
// candidate list, with the same uniform number. Vocabularies of 300 (qsort) and 2000 (radix sort)
// with flat, peaked and quarter-rounded logits (exact ties) push walks past the selected prefix.
static void lazy_sort_draws_equal_the_inverse_cdf_over_all_candidates(void) {
    const NlSamplerParams params[] = {{1.0, 0, 1.0}, {0.7, 40, 1.0}, {1.3, 0, 0.9}, {1.0, 25, 0.95}, {4.0, 0, 1.0}};
    float logits[2000];
    NlRng gen;  // the logits' own generator
    nl_rng_seed(&gen, 5);
    int mismatches = 0, deep = 0, draws = 0;
    for (int V = 300; V <= 2000; V += 1700)
        for (size_t c = 0; c < sizeof params / sizeof params[0]; c++) {
            NlSampler *lazy = NULL, *full = NULL;
            NlError err;
            CHECK(nl_sampler_create(&lazy, V, params[c], 77 + c, &err) == 0 &&
                      nl_sampler_create(&full, V, params[c], 1, &err) == 0,
                  "%s", err.msg);
            NlRng rng;
            nl_rng_seed(&rng, 77 + c);
            for (int d = 0; d < 300; d++, draws++) {
                double spread = d % 4 == 0 ? 0.3 : 6.0;  // flat, peaked, peaked and rounded, one big tie
                for (int i = 0; i < V; i++) {
                    double l = spread * (2.0 * nl_rng_uniform(&gen) - 1.0);
                    logits[i] = (float)(d % 4 == 2 ? 0.25 * floor(4.0 * l) : d % 4 == 3 ? 0.0 : l);
                }
                if (d % 4 == 3) logits[V - 1] = logits[V - 2] = 0.5f;  // selected first, from the end
                const int *ids;
                const double *probs;
                int n = nl_sampler_candidates(full, logits, &ids, &probs), want = ids[n - 1], at = n - 1;
                double u = nl_rng_uniform(&rng), cum = 0.0;
                for (int i = 0; i < n; i++) {
                    cum += probs[i];
                    if (u < cum) {
                        want = ids[i];
                        at = i;
                        break;
                    }
                }
                deep += at >= 16;
                mismatches += nl_sampler_sample(lazy, logits) != want;
            }
            nl_sampler_free(lazy);
            nl_sampler_free(full);
        }
    printf("     %d draws, %d of them past the 16th candidate\n", draws, deep);
    CHECK(mismatches == 0, "%d of %d draws differ from the inverse CDF over the sorted candidates", mismatches, draws);
    CHECK(deep > 300, "only %d draws went past the selected prefix", deep);
}

// The full candidate list (qsort below 512 candidates, radix sort above) is a permutation of the
// vocabulary in descending probability, equal probabilities by ascending id. Logits rounded to
// quarters make many exact ties.
static void candidates_are_sorted_with_ties_by_id(void) {
    const int sizes[] = {300, 5000};
    NlRng gen;
    nl_rng_seed(&gen, 11);
    for (int c = 0; c < 2; c++) {
        int V = sizes[c], bad_order = 0, bad_perm = 0, ties = 0;
        NlSampler *s = NULL;
        NlError err;
        CHECK(nl_sampler_create(&s, V, (NlSamplerParams){1.0, 0, 1.0}, 1, &err) == 0, "%s", err.msg);
        float *logits = malloc((size_t)V * sizeof *logits);
        char *seen = calloc((size_t)V, 1);
        for (int round = 0; round < 4; round++) {
            for (int i = 0; i < V; i++)
                logits[i] = (float)(round % 2 ? 0.25 * floor(16.0 * nl_rng_uniform(&gen)) : 8.0 * nl_rng_uniform(&gen));
            const int *ids;
            const double *probs;
            int n = nl_sampler_candidates(s, logits, &ids, &probs);
            memset(seen, 0, (size_t)V);
            for (int i = 0; i < n; i++) {
                bad_perm += ids[i] < 0 || ids[i] >= V || seen[ids[i]]++;
                if (i + 1 < n) {
                    ties += probs[i] == probs[i + 1];
                    bad_order += probs[i] < probs[i + 1] || (probs[i] == probs[i + 1] && ids[i] > ids[i + 1]);
                }
            }
            bad_perm += n != V;
        }
        CHECK(bad_perm == 0 && bad_order == 0, "V=%d: %d not a permutation, %d out of order", V, bad_perm, bad_order);
        CHECK(ties > V, "V=%d: only %d ties exercised", V, ties);
        free(logits);
        free(seen);
        nl_sampler_free(s);
    }
}

// Parameters the command line already rejects must not reach the sampler through the API either
// (top_p = 0 used to return id 0 with a "probability" above 1).
static void bad_parameters_are_refused(void) {
    const NlSamplerParams bad[] = {{1.0, 0, 0.0},  {1.0, 0, -0.5}, {1.0, 0, NAN},      {1.0, 0, 1.5},
                                   {-1.0, 0, 1.0}, {NAN, 0, 1.0},  {INFINITY, 0, 1.0}, {1.0, -3, 1.0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        NlSampler *s = (NlSampler *)&s;  // must come back NULL
        NlError err = {NL_OK, ""};
        CHECK(nl_sampler_create(&s, 4, bad[i], 1, &err) != 0 && s == NULL && strstr(err.msg, "top_p in (0, 1]"),
              "params %zu accepted or unclear: '%s'", i, err.msg);
    }
    NlSampler *s = NULL;
    NlError err;
    CHECK(nl_sampler_create(&s, 0, (NlSamplerParams){1.0, 0, 1.0}, 1, &err) != 0, "vocab_size 0 accepted");
    CHECK(nl_sampler_create(&s, 4, (NlSamplerParams){0.0, 0, 1e-9}, 1, &err) == 0, "tiny top_p refused: %s", err.msg);
    nl_sampler_free(s);
}

int main(void) {
    RUN(top_k_keeps_exactly_the_k_most_likely);
    RUN(top_p_keeps_the_smallest_set_reaching_p);
    RUN(greedy_takes_argmax_lowest_id_on_ties);
    RUN(empirical_frequencies_match_the_distribution);
    RUN(same_seed_same_stream_and_seed_zero_is_valid);
    RUN(non_finite_logits_are_reported_not_sampled);
    RUN(lazy_sort_draws_equal_the_inverse_cdf_over_all_candidates);
    RUN(candidates_are_sorted_with_ties_by_id);
    RUN(bad_parameters_are_refused);
    return check_summary("test_sampler");
}
