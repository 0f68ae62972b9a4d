// test_sampler.c — the kept sets of top-k and top-p, empirical frequencies, seeds, bad logits.
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "normlab.h"
#include "sampler.h"

// Logits whose softmax is exactly-ish {0.5, 0.25, 0.15, 0.1} at ids {2, 0, 3, 1}.
// A sampler's parameters from the first three, the others off.
#define SP(t, k, p) \
    { .temperature = (t), .top_k = (k), .top_p = (p) }

static const float LOGITS[4] = {-1.3862944f, -2.3025851f, -0.6931472f, -1.8971200f};

static NlSampler *make(double temp, int k, double p, uint64_t seed) {
    NlSampler *s = NULL;
    NlError err;
    CHECK(nl_sampler_create(&s, 4, (NlSamplerParams){.temperature = temp, .top_k = k, .top_p = p}, seed, &err) == 0,
          "%s", err.msg);
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
    CHECK(nl_sampler_create(&one, 1, (NlSamplerParams){.temperature = 1.0, .top_k = 5, .top_p = 0.5}, 1, &err) == 0,
          "V = 1");
    float l = 3.0f;
    CHECK(nl_sampler_sample(one, &l) == 0, "one-token vocabulary samples id 0");
    nl_sampler_free(one);
}

// The sampler sorts only as far as each draw reaches (selection for the first 16, or 2 in a large
// vocabulary, then a full sort): every draw must equal the inverse CDF walked over the fully sorted
// candidate list, with the same uniform number. Vocabularies of 300 (qsort) and 2000 (radix sort)
// with flat, peaked and quarter-rounded logits (exact ties) push walks past the selected prefix.
static void lazy_sort_draws_equal_the_inverse_cdf_over_all_candidates(void) {
    const NlSamplerParams params[] = {SP(1.0, 0, 1.0), SP(0.7, 40, 1.0), SP(1.3, 0, 0.9), SP(1.0, 25, 0.95),
                                      SP(4.0, 0, 1.0)};
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
        CHECK(nl_sampler_create(&s, V, (NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = 1.0}, 1, &err) == 0,
              "%s", err.msg);
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
// (top_p = 0 used to return id 0 with a "probability" above 1); the message names the bad one and its value.
static void bad_parameters_are_refused(void) {
    const NlSamplerParams bad[] = {SP(1.0, 0, 0.0),  SP(1.0, 0, -0.5), SP(1.0, 0, NAN),      SP(1.0, 0, 1.5),
                                   SP(-1.0, 0, 1.0), SP(NAN, 0, 1.0),  SP(INFINITY, 0, 1.0), SP(1.0, -3, 1.0)};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        NlSampler *s = (NlSampler *)&s;  // must come back NULL
        NlError err = {NL_OK, ""};
        char want[96];  // the one bad parameter (top_p, then the temperature, then top_k) and its value
        snprintf(want, sizeof want, "sampler: need %s, got %g",
                 i < 4   ? "top_p in (0, 1]"
                 : i < 7 ? "a temperature in [0, 1e300]"
                         : "top_k >= 0",
                 i < 4   ? bad[i].top_p
                 : i < 7 ? bad[i].temperature
                         : bad[i].top_k);
        CHECK(nl_sampler_create(&s, 4, bad[i], 1, &err) != 0 && s == NULL && strcmp(err.msg, want) == 0,
              "params %zu accepted or unclear: '%s'", i, err.msg);
    }
    NlSampler *s = NULL;
    NlError err;
    CHECK(nl_sampler_create(&s, 0, (NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = 1.0}, 1, &err) != 0,
          "vocab_size 0 accepted");
    CHECK(nl_sampler_create(&s, 4, (NlSamplerParams){.temperature = 0.0, .top_k = 0, .top_p = 1e-9}, 1, &err) == 0,
          "tiny top_p refused: %s", err.msg);
    nl_sampler_free(s);
}

// ---- the bounds the sampler accepts (normlab.h: temperature 0 = greedy, else finite and at most
// 1e300 as nl_sampler_create checks; top_k >= 0, 0 off, above V everything; top_p in (0, 1], 1 off)

// The candidates of params on logits (V), copied out; returns their count.
static int cands_of(NlSamplerParams params, const float *logits, int V, int *ids_out, double *probs_out) {
    NlSampler *s = NULL;
    NlError err;
    if (nl_sampler_create(&s, V, params, 1, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return -1;
    }
    const int *ids;
    const double *probs;
    int n = nl_sampler_candidates(s, logits, &ids, &probs);
    for (int i = 0; i < n; i++) {
        ids_out[i] = ids[i];
        probs_out[i] = probs[i];
    }
    nl_sampler_free(s);
    return n;
}

// Draws `draws` tokens with seeds 1.. (a sampler each) and counts how many differ from `want`.
static int draws_other_than(NlSamplerParams params, const float *logits, int V, int want, int draws) {
    int other = 0;
    for (int d = 0; d < draws; d++) {
        NlSampler *s = NULL;
        NlError err;
        if (nl_sampler_create(&s, V, params, (uint64_t)d + 1, &err) != 0) return draws;
        other += nl_sampler_sample(s, logits) != want;
        nl_sampler_free(s);
    }
    return other;
}

// The lowest positive temperatures the API accepts (the smallest subnormal, 1e-300, and the CLI's
// 1e-4) on logits of +-80 and +-1e4, whose exp(l / t) overflows unless the largest is subtracted
// first: every probability finite, the argmax's exactly 1, every draw the greedy token. Near-ties
// one float step apart (at 1e4) still separate at the two lowest; at 1e-4 they are the softmax's
// exp(-step / t) apart, as the formula says, not greedy.
static void lowest_temperatures_choose_as_greedy_without_overflow(void) {
    const float big[2][5] = {{-80.0f, 80.0f, 79.0f, 0.0f, -79.0f}, {1e4f, -1e4f, 9999.0f, 0.0f, -9999.0f}};
    const int argmax[2] = {1, 0};
    const double temps[3] = {4.9406564584124654e-324, 1e-300, 1e-4};
    int ids[5];
    double p[5];
    for (int t = 0; t < 3; t++)
        for (int l = 0; l < 2; l++) {
            NlSamplerParams params = SP(temps[t], 0, 1.0);
            int n = cands_of(params, big[l], 5, ids, p), finite = 1;
            for (int i = 0; i < n; i++) finite &= isfinite(p[i]) && (i == 0 ? p[i] == 1.0 : p[i] == 0.0);
            CHECK(n == 5 && ids[0] == argmax[l] && finite, "T=%g logits %d: %d candidates, first %d with p %g",
                  temps[t], l, n, n > 0 ? ids[0] : -1, n > 0 ? p[0] : -1.0);
            CHECK(draws_other_than(params, big[l], 5, argmax[l], 200) == 0, "T=%g logits %d: a draw was not greedy",
                  temps[t], l);
        }
    const float near[3] = {1e4f, nextafterf(1e4f, 0.0f), 0.0f};  // 1e4 and the float just below it
    for (int t = 0; t < 2; t++) {
        NlSamplerParams params = SP(temps[t], 0, 1.0);
        int n = cands_of(params, near, 3, ids, p);
        CHECK(n == 3 && ids[0] == 0 && p[0] == 1.0 && p[1] == 0.0, "T=%g: a one-step near-tie splits", temps[t]);
        CHECK(draws_other_than(params, near, 3, 0, 200) == 0, "T=%g: a near-tie draw was not greedy", temps[t]);
    }
    double ratio = exp(-(1e4 - (double)near[1]) / 1e-4);  // |got - want| <= 1e-12 * want: doubles throughout
    int n = cands_of((NlSamplerParams){.temperature = 1e-4, .top_k = 0, .top_p = 1.0}, near, 3, ids, p);
    CHECK(n == 3 && ids[0] == 0 && ids[1] == 1 && fabs(p[1] / p[0] - ratio) <= 1e-12 * ratio,
          "T=1e-4: p1/p0 = %.15g, exp(-step/T) = %.15g", n == 3 ? p[1] / p[0] : -1.0, ratio);
    // Exact ties at the maximum: greedy takes the lowest id; any temperature above 0, however small,
    // is the softmax's limit and splits the mass evenly between them (candidates in id order).
    const float tie[4] = {-1e4f, 1e4f, 1e4f, 0.0f};
    n = cands_of((NlSamplerParams){.temperature = temps[0], .top_k = 0, .top_p = 1.0}, tie, 4, ids, p);
    CHECK(n == 4 && ids[0] == 1 && ids[1] == 2 && p[0] == 0.5 && p[1] == 0.5 && p[2] == 0.0,
          "tied maxima at the lowest temperature: ids %d %d, p %g %g", ids[0], ids[1], p[0], p[1]);
    int other = draws_other_than((NlSamplerParams){.temperature = temps[0], .top_k = 0, .top_p = 1.0}, tie, 4, 1, 400);
    CHECK(other > 140 && other < 260, "tied maxima: id 2 drawn %d times of 400 (half, within 6 sigma)", other);
    const double zeros[2] = {0.0, -0.0};
    for (int z = 0; z < 2; z++) {
        n = cands_of((NlSamplerParams){.temperature = zeros[z], .top_k = 0, .top_p = 1.0}, tie, 4, ids, p);
        CHECK(n == 1 && ids[0] == 1 && p[0] == 1.0, "temperature %g is greedy, lowest id of the tie", zeros[z]);
    }
    const float extreme[3] = {-FLT_MAX, FLT_MAX, 0.0f};  // their difference overflows a float
    n = cands_of((NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = 1.0}, extreme, 3, ids, p);
    CHECK(n == 3 && ids[0] == 1 && p[0] == 1.0 && p[1] == 0.0 && p[2] == 0.0, "logits +-FLT_MAX: p %g %g %g", p[0],
          p[1], p[2]);
}

// The largest temperature accepted, 1e300, flattens logits of +-1e4 to the uniform distribution;
// the next double above it, and DBL_MAX, are refused with the sampler's message.
static void highest_temperature_is_uniform_and_the_next_is_refused(void) {
    const float logits[4] = {1e4f, -1e4f, 0.0f, 5.0f};
    int ids[4];
    double p[4], worst = 0.0;
    int n = cands_of((NlSamplerParams){.temperature = 1e300, .top_k = 0, .top_p = 1.0}, logits, 4, ids, p);
    for (int i = 0; i < n; i++) worst = fmax(worst, fabs(p[i] - 0.25));
    CHECK(n == 4 && worst <= 1e-12, "T=1e300: %d candidates, max |p - 1/4| = %g (tolerance 1e-12)", n, worst);
    const double above[2] = {nextafter(1e300, INFINITY), DBL_MAX};
    for (int i = 0; i < 2; i++) {
        NlSampler *s = (NlSampler *)&s;
        NlError err = {NL_OK, ""};
        CHECK(nl_sampler_create(&s, 4, (NlSamplerParams){.temperature = above[i], .top_k = 0, .top_p = 1.0}, 1, &err) !=
                      0 &&
                  s == NULL && err.code == NL_ERR_ARG && strstr(err.msg, "a temperature in [0, 1e300]"),
              "temperature %.17g: '%s'", above[i], err.msg);
    }
}

// Top-p keeps the shortest prefix whose mass reaches p; ties are ordered by id. Equal logits give
// masses k/V exactly in doubles, so p = k/V must keep exactly k (ids 0..k-1), p one double above
// must keep k + 1, and p one double below k. Candidates of zero mass (exp underflows) are never
// needed to reach p < 1; p = 1 is off and keeps the whole vocabulary, zero mass included.
static void top_p_at_an_exact_mass_on_tied_logits_keeps_the_lowest_ids(void) {
    const float flat[8] = {0}, half[8] = {-1e4f, 7.0f, 7.0f, -1e4f, 7.0f, 7.0f, -1e4f, -1e4f};
    int ids[1024];
    double p[1024];
    for (int k = 1; k < 8; k++) {
        double at = k / 8.0, up = nextafter(at, 1.0), down = nextafter(at, 0.0);
        int n = cands_of((NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = at}, flat, 8, ids, p), in_order = 1;
        for (int i = 0; i < n; i++) in_order &= ids[i] == i && p[i] == 1.0 / k;
        CHECK(n == k && in_order, "8 ties, p = %d/8: kept %d (want ids 0..%d, each 1/%d)", k, n, k - 1, k);
        CHECK(cands_of((NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = up}, flat, 8, ids, p) == k + 1,
              "8 ties, p just above %d/8", k);
        CHECK(cands_of((NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = down}, flat, 8, ids, p) == k,
              "8 ties, p just below %d/8", k);
    }
    // Four tied ids (1, 2, 4, 5) carry all the mass; the other four underflow to 0.
    int n = cands_of((NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = 0.5}, half, 8, ids, p);
    CHECK(n == 2 && ids[0] == 1 && ids[1] == 2 && p[0] == 0.5, "ties among others, p = 0.5: {1, 2}");
    n = cands_of((NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = 0.75}, half, 8, ids, p);
    CHECK(n == 3 && ids[2] == 4, "ties among others, p = 0.75: {1, 2, 4}");
    n = cands_of((NlSamplerParams)SP(1.0, 0, nextafter(1.0, 0.0)), half, 8, ids, p);
    CHECK(n == 4 && ids[3] == 5, "p just below 1 keeps the four with mass, not the zero-mass ones (%d)", n);
    CHECK(cands_of((NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = 1.0}, half, 8, ids, p) == 8 &&
              p[7] == 0.0,
          "p = 1 is off: all 8 kept");
    // Top-k first: 4 of 8 ties (the lowest ids), then p = 0.5 of their mass: ids 0 and 1.
    n = cands_of((NlSamplerParams){.temperature = 1.0, .top_k = 4, .top_p = 0.5}, flat, 8, ids, p);
    CHECK(n == 2 && ids[0] == 0 && ids[1] == 1 && p[1] == 0.5, "top-k 4 then p = 0.5 on ties: {0, 1}");
    // 1024 ties go through the radix sort: p = 0.5 keeps ids 0..511, and draws stay among them.
    static float wide[1024];
    n = cands_of((NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = 0.5}, wide, 1024, ids, p);
    int in_order = n == 512;
    for (int i = 0; in_order && i < n; i++) in_order = ids[i] == i;
    CHECK(in_order, "1024 ties, p = 0.5: kept %d, ids 0..511 in order", n);
    NlSampler *s = NULL;
    NlError err;
    int outside = 0, seen_high = 0;
    CHECK(nl_sampler_create(&s, 1024, (NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = 0.5}, 7, &err) == 0,
          "%s", err.msg);
    for (int d = 0; s && d < 2000; d++) {
        int id = nl_sampler_sample(s, wide);
        outside += id < 0 || id >= 512;
        seen_high |= id >= 256;
    }
    nl_sampler_free(s);
    CHECK(outside == 0 && seen_high, "draws under p = 0.5 of 1024 ties: %d outside ids 0..511", outside);
}

// The other ends: top-k 1 and top-p at its smallest positive value keep only the argmax (the lowest
// id of a tie); top-k V - 1 drops only the least likely; top-k V and INT_MAX keep everything.
static void top_k_and_top_p_at_their_extremes(void) {
    const float tie[4] = {1.0f, 3.0f, 3.0f, 2.0f};
    int ids[4];
    double p[4];
    const NlSamplerParams one[] = {SP(1.0, 1, 1.0), SP(1.0, 0, 4.9406564584124654e-324), SP(1.0, 0, 1e-300)};
    for (int i = 0; i < 3; i++) {
        int n = cands_of(one[i], tie, 4, ids, p);
        CHECK(n == 1 && ids[0] == 1 && p[0] == 1.0, "case %d (k %d, p %g): kept %d, first %d", i, one[i].top_k,
              one[i].top_p, n, ids[0]);
        CHECK(draws_other_than(one[i], tie, 4, 1, 100) == 0, "case %d: a draw was not id 1", i);
    }
    int n = cands_of((NlSamplerParams){.temperature = 1.0, .top_k = 3, .top_p = 1.0}, LOGITS, 4, ids, p);
    CHECK(n == 3 && ids[0] == 2 && ids[1] == 0 && ids[2] == 3, "top-k V - 1 drops id 1, the least likely");
    CHECK(cands_of((NlSamplerParams){.temperature = 1.0, .top_k = 4, .top_p = 1.0}, LOGITS, 4, ids, p) == 4 &&
              ids[3] == 1,
          "top-k V keeps all");
    CHECK(cands_of((NlSamplerParams){.temperature = 1.0, .top_k = INT_MAX, .top_p = 1.0}, LOGITS, 4, ids, p) == 4,
          "top-k INT_MAX keeps all");
}

// Seeds at both ends of uint64_t: 0 and UINT64_MAX (where splitmix64's first step wraps) give the
// streams of the published algorithms (splitmix64 seeding xoshiro256**), as computed by an
// independent Python implementation of both (Vigna's reference code, transcribed).
static void seeds_at_both_ends_give_the_reference_streams(void) {
    const uint64_t seeds[2] = {0, UINT64_MAX};
    const uint64_t want[2][3] = {{0x99EC5F36CB75F2B4ULL, 0xBF6E1F784956452AULL, 0x1A5F849D4933E6E0ULL},
                                 {0x8F5520D52A7EAD08ULL, 0xC476A018CAA1802DULL, 0x81DE31C0D260469EULL}};
    for (int i = 0; i < 2; i++) {
        NlRng rng;
        nl_rng_seed(&rng, seeds[i]);
        int same = 1;
        for (int k = 0; k < 3; k++) same &= nl_rng_next(&rng) == want[i][k];
        CHECK(same, "seed %llu: the first three outputs differ from the reference", (unsigned long long)seeds[i]);
    }
    NlSampler *s = NULL;
    NlError err;
    CHECK(nl_sampler_create(&s, 4, (NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = 1.0}, UINT64_MAX, &err) ==
              0,
          "seed UINT64_MAX: %s", err.msg);
    int id = s ? nl_sampler_sample(s, LOGITS) : -1;
    CHECK(id >= 0 && id < 4, "seed UINT64_MAX samples a token (%d)", id);
    nl_sampler_free(s);
}

// ---- penalties, min-p and the recorded probabilities

static NlSampler *make_with(int V, NlSamplerParams p, uint64_t seed) {
    NlSampler *s = NULL;
    NlError err;
    CHECK(nl_sampler_create(&s, V, p, seed, &err) == 0, "%s", err.msg);
    return s;
}

static void min_p_keeps_those_at_least_p_times_the_most_likely(void) {
    const int *ids;
    const double *probs;
    // {0.5, 0.25, 0.15, 0.1} at ids {2, 0, 3, 1}: the floor is min_p * 0.5
    const double min_p[] = {0.29, 0.31, 0.51, 1.0, 0.19, 0.21};
    const int want[] = {3, 2, 1, 1, 4, 3};
    for (int c = 0; c < 6; c++) {
        NlSampler *s = make_with(4, (NlSamplerParams){1.0, 0, 1.0, .min_p = min_p[c]}, 1);
        int n = nl_sampler_candidates(s, LOGITS, &ids, &probs);
        CHECK(n == want[c], "min-p %g keeps %d, want %d", min_p[c], n, want[c]);
        double sum = 0;
        for (int i = 0; i < n; i++) sum += probs[i];
        CHECK(fabs(sum - 1.0) < 1e-12 && ids[0] == 2, "min-p %g: renormalised (%g), the most likely first", min_p[c],
              sum);
        nl_sampler_free(s);
    }
    // after top-k: top-2 then min-p 0.6 of 0.5 (0.3) drops 0.25
    NlSampler *s = make_with(4, (NlSamplerParams){1.0, 2, 1.0, .min_p = 0.6}, 1);
    CHECK(nl_sampler_candidates(s, LOGITS, &ids, &probs) == 1 && ids[0] == 2 && probs[0] == 1.0, "top-k then min-p");
    nl_sampler_free(s);
}

static void penalties_follow_llama_cpp_by_hand(void) {
    // logits {2, -1, 0.5, 0}, history 0, 0, 1; r = 2, frequency 0.5, presence 0.25:
    // token 0 (twice): 2 / 2 - (2 * 0.5 + 0.25) = -0.25; token 1 (once): -1 * 2 - (0.5 + 0.25) = -2.75
    const float l[4] = {2.0f, -1.0f, 0.5f, 0.0f};
    NlSamplerParams p = {
        1.0, 0, 1.0, .repeat_penalty = 2, .repeat_last_n = 8, .presence_penalty = 0.25, .frequency_penalty = 0.5};
    NlSampler *s = make_with(4, p, 1);
    const int hist[3] = {0, 0, 1};
    for (int i = 0; i < 3; i++) nl_sampler_accept(s, hist[i]);
    nl_sampler_accept(s, -1);  // ignored: outside the vocabulary
    nl_sampler_accept(s, 4);
    const int *ids;
    const double *probs;
    int n = nl_sampler_candidates(s, l, &ids, &probs);
    double z = exp(0.5) + exp(0.0) + exp(-0.25) + exp(-2.75);
    CHECK(n == 4 && ids[0] == 2 && ids[1] == 3 && ids[2] == 0 && ids[3] == 1, "order 2, 3, 0, 1 (got %d %d %d %d)",
          ids[0], ids[1], ids[2], ids[3]);
    CHECK(fabs(probs[2] - exp(-0.25) / z) < 1e-7 && fabs(probs[3] - exp(-2.75) / z) < 1e-7, "penalized probs %g %g",
          probs[2], probs[3]);
    nl_sampler_free(s);
    // greedy sees the penalized logits: 2 / 2 = 1 < 1.5 for a token seen once
    p.temperature = 0, p.frequency_penalty = 0, p.presence_penalty = 0;
    const float g[2] = {2.0f, 1.5f};
    s = make_with(2, p, 1);
    CHECK(nl_sampler_sample(s, g) == 0, "greedy picks 0 before it is seen");
    CHECK(nl_sampler_sample(s, g) == 1, "greedy picks 1 once 0 is seen (its own draw accepted)");
    nl_sampler_free(s);
    // the window: with repeat_last_n 1 only the last token is penalized, so greedy alternates
    p.repeat_last_n = 1;
    s = make_with(2, p, 1);
    int seq[6];
    for (int i = 0; i < 6; i++) seq[i] = nl_sampler_sample(s, g);
    CHECK(seq[0] == 0 && seq[1] == 1 && seq[2] == 0 && seq[3] == 1 && seq[4] == 0 && seq[5] == 1,
          "last-1 alternates: %d %d %d %d %d %d", seq[0], seq[1], seq[2], seq[3], seq[4], seq[5]);
    nl_sampler_free(s);
    // repeat_last_n 0 turns them off, and so do r = 1 and r = 0 without the other two
    for (int c = 0; c < 3; c++) {
        NlSamplerParams off = {0.0, 0, 1.0, .repeat_penalty = c == 0 ? 2 : c == 1 ? 1 : 0, .repeat_last_n = c ? 4 : 0};
        s = make_with(2, off, 1);
        int a = nl_sampler_sample(s, g), b = nl_sampler_sample(s, g);
        CHECK(a == 0 && b == 0, "penalties off (case %d): greedy stays on 0", c);
        nl_sampler_free(s);
    }
}

// An independent reading of the definitions: llama.cpp's penalties in float over a plain count of
// the last n tokens, then temperature, a full sort (ties by id), top-k, top-p and min-p.
typedef struct {
    double p;
    int id;
} RefCand;

static int ref_order(const void *a, const void *b) {
    const RefCand *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->id - y->id;
}

static int ref_chain(const float *logits, int V, NlSamplerParams p, const int *hist, int n_hist, RefCand *out) {
    float *l = malloc((size_t)V * sizeof *l);
    memcpy(l, logits, (size_t)V * sizeof *l);
    int from = n_hist > p.repeat_last_n ? n_hist - p.repeat_last_n : 0;
    for (int id = 0; id < V && p.repeat_last_n > 0; id++) {
        int count = 0;
        for (int i = from; i < n_hist; i++) count += hist[i] == id;
        if (!count) continue;
        if (p.repeat_penalty != 0 && p.repeat_penalty != 1)
            l[id] = l[id] <= 0 ? l[id] * (float)p.repeat_penalty : l[id] / (float)p.repeat_penalty;
        l[id] -= (float)count * (float)p.frequency_penalty + (float)(count > 0) * (float)p.presence_penalty;
    }
    double max = l[0];
    for (int i = 1; i < V; i++) max = l[i] > max ? l[i] : max;
    for (int i = 0; i < V; i++) out[i] = (RefCand){exp(((double)l[i] - max) / p.temperature), i};
    free(l);
    qsort(out, (size_t)V, sizeof *out, ref_order);
    int n = p.top_k > 0 && p.top_k < V ? p.top_k : V;
    double total = 0;
    for (int i = 0; i < n; i++) total += out[i].p;
    if (p.top_p < 1) {
        double cum = 0;
        int m = 0;
        while (m < n && cum < p.top_p * total) cum += out[m++].p;
        n = m, total = cum;
    }
    int m = 1;
    while (p.min_p > 0 && m < n && out[m].p >= p.min_p * out[0].p) m++;
    if (p.min_p > 0) n = m;
    total = 0;
    for (int i = 0; i < n; i++) total += out[i].p;
    for (int i = 0; i < n; i++) out[i].p /= total;
    return n;
}

static void the_chain_equals_the_reference_on_random_cases(void) {
    enum { V = 700, CASES = 400 };
    float logits[V];
    int hist[300];
    RefCand ref[V];
    NlRng gen;
    nl_rng_seed(&gen, 11);
    int bad_n = 0, bad_p = 0;
    for (int c = 0; c < CASES; c++) {
        NlSamplerParams p = {0.3 + 2 * nl_rng_uniform(&gen),
                             c % 3 == 0 ? 0 : (int)(nl_rng_next(&gen) % 200),
                             c % 2 ? 1.0 : 0.5 + 0.5 * nl_rng_uniform(&gen),
                             .min_p = c % 4 ? 0.2 * nl_rng_uniform(&gen) : 0,
                             .repeat_penalty = c % 5 ? 0.5 + 1.5 * nl_rng_uniform(&gen) : 1,
                             .repeat_last_n = (int)(nl_rng_next(&gen) % 400),
                             .presence_penalty = c % 7 ? 2 * nl_rng_uniform(&gen) - 1 : 0,
                             .frequency_penalty = c % 3 ? nl_rng_uniform(&gen) - 0.25 : 0};
        int n_hist = (int)(nl_rng_next(&gen) % 300);
        for (int i = 0; i < n_hist; i++) hist[i] = (int)(nl_rng_next(&gen) % 60);  // many repeats
        for (int i = 0; i < V; i++) {
            logits[i] = (float)(8 * nl_rng_uniform(&gen) - 4);
            if (c % 6 == 0) logits[i] = roundf(logits[i] * 2) / 2;  // ties
        }
        NlSampler *s = make_with(V, p, 1);
        for (int i = 0; i < n_hist; i++) nl_sampler_accept(s, hist[i]);
        const int *ids;
        const double *probs;
        int n = nl_sampler_candidates(s, logits, &ids, &probs), want = ref_chain(logits, V, p, hist, n_hist, ref);
        if (n != want) bad_n++;
        for (int i = 0; i < n && n == want; i++)
            if (ids[i] != ref[i].id || fabs(probs[i] - ref[i].p) > 1e-12 * (1 + ref[i].p)) {
                bad_p++;
                break;
            }
        nl_sampler_free(s);
    }
    CHECK(bad_n == 0 && bad_p == 0, "%d of %d cases keep another count, %d others other tokens or probabilities", bad_n,
          CASES, bad_p);
}

static void recorded_probabilities_are_the_softmax_top_n(void) {
    enum { V = 3000, K = 100 };
    float logits[V];
    NlRng gen;
    nl_rng_seed(&gen, 3);
    for (int i = 0; i < V; i++) logits[i] = roundf((float)(10 * nl_rng_uniform(&gen)) * 4) / 4;  // many ties
    NlSampler *s =
        make_with(V, (NlSamplerParams){1.0, 0, 1.0, .n_probs = K, .repeat_penalty = 3, .repeat_last_n = 64}, 9);
    double lp;
    const int *ids;
    const double *lps;
    CHECK(nl_sampler_probs(s, &lp, &ids, &lps) == 0, "nothing recorded before a draw");
    int drawn = nl_sampler_sample(s, logits);
    int n = nl_sampler_probs(s, &lp, &ids, &lps);
    RefCand ref[V];
    double max = 0, sum = 0;
    for (int i = 0; i < V; i++) max = logits[i] > max ? logits[i] : max;
    for (int i = 0; i < V; i++) sum += exp((double)logits[i] - max);
    for (int i = 0; i < V; i++) ref[i] = (RefCand){logits[i], i};
    qsort(ref, V, sizeof *ref, ref_order);
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += ids[i] != ref[i].id || fabs(lps[i] - (ref[i].p - max - log(sum))) > 1e-9;
    CHECK(n == K && wrong == 0, "top %d: %d differ from the sorted softmax (ties by id)", n, wrong);
    CHECK(fabs(lp - ((double)logits[drawn] - max - log(sum))) < 1e-9, "the drawn token's logprob");
    nl_sampler_free(s);
    s = make_with(4, (NlSamplerParams){0.0, 0, 1.0, .n_probs = 100}, 1);  // a vocabulary smaller than n_probs
    drawn = nl_sampler_sample(s, LOGITS);
    n = nl_sampler_probs(s, &lp, &ids, &lps);
    CHECK(n == 4 && ids[0] == 2 && ids[3] == 1 && drawn == 2 && fabs(exp(lp) - 0.5) < 1e-6, "V = 4: %d recorded", n);
    nl_sampler_free(s);
}

static void new_parameters_are_refused_outside_their_bounds(void) {
    const NlSamplerParams bad[] = {{1, 0, 1, .min_p = -0.01},
                                   {1, 0, 1, .min_p = 1.01},
                                   {1, 0, 1, .min_p = NAN},
                                   {1, 0, 1, .repeat_penalty = 9e-4},
                                   {1, 0, 1, .repeat_penalty = 1001},
                                   {1, 0, 1, .repeat_penalty = -1},
                                   {1, 0, 1, .repeat_last_n = -1},
                                   {1, 0, 1, .presence_penalty = 1001},
                                   {1, 0, 1, .frequency_penalty = -1001},
                                   {1, 0, 1, .frequency_penalty = NAN},
                                   {1, 0, 1, .n_probs = -1},
                                   {1, 0, 1, .n_probs = 101}};
    const NlSamplerParams good[] = {{1, 0, 1, .min_p = 1},
                                    {1, 0, 1, .repeat_penalty = 1e-3},
                                    {1, 0, 1, .repeat_penalty = 1e3},
                                    {1, 0, 1, .presence_penalty = -1e3},
                                    {1, 0, 1, .frequency_penalty = 1e3, .repeat_last_n = 5},
                                    {1, 0, 1, .n_probs = 100}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        NlSampler *s = NULL;
        NlError err;
        CHECK(nl_sampler_create(&s, 4, bad[i], 1, &err) != 0 && !s && err.code == NL_ERR_ARG, "bad case %zu refused",
              i);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        NlSampler *s = make_with(4, good[i], 1);
        CHECK(s && nl_sampler_sample(s, LOGITS) >= 0, "edge case %zu accepted and samples", i);
        nl_sampler_free(s);
    }
    // a penalty that overflows a logit is a non-finite logit, not a draw
    NlSampler *s = make_with(2, (NlSamplerParams){1, 0, 1, .repeat_penalty = 1e-3, .repeat_last_n = 2}, 1);
    nl_sampler_accept(s, 0);
    const float huge[2] = {3e38f, 0.0f};
    CHECK(nl_sampler_sample(s, huge) == -1, "3e38 / 1e-3 overflows: -1");
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
    RUN(lowest_temperatures_choose_as_greedy_without_overflow);
    RUN(highest_temperature_is_uniform_and_the_next_is_refused);
    RUN(top_p_at_an_exact_mass_on_tied_logits_keeps_the_lowest_ids);
    RUN(top_k_and_top_p_at_their_extremes);
    RUN(seeds_at_both_ends_give_the_reference_streams);
    RUN(min_p_keeps_those_at_least_p_times_the_most_likely);
    RUN(penalties_follow_llama_cpp_by_hand);
    RUN(the_chain_equals_the_reference_on_random_cases);
    RUN(recorded_probabilities_are_the_softmax_top_n);
    RUN(new_parameters_are_refused_outside_their_bounds);
    return check_summary("test_sampler");
}
