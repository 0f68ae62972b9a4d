// test_compare.c — `compare` rows on fixtures with known properties: a model whose residual
// stream is exactly centred gives the same LayerNorm and RMSNorm rows; a batch of 16 and the KV
// cache agree with single-sequence prefill; bits/char equals eval's; the JSON rows parse.
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "ref_forward.h"
#include "normlab_lab.h"
#include "report_compare.h"

static const int TEXT[] = {2, 3, 1,  3, 2, 4, 1, 5, 2, 3, 6, 1, 7, 2, 8, 3,
                           0, 9, 10, 2, 3, 1, 4, 5, 6, 7, 8, 9, 2, 2, 3};
#define N_TEXT (sizeof TEXT / sizeof TEXT[0])

static int row(const char *name, NlNormType norm, NlPlacement place, int invariance, NlCompareRow *out,
               NlModel **keep) {
    NlModel *m = NULL;
    NlError err;
    NlCompareOptions o = {.repeats = 2, .invariance = invariance, .fault = NL_FAULT_NONE, .lens = 0, .outliers = 0};
    int rc = nl_model_load(&m, fixture(name), NULL, &err);
    if (rc == 0)
        rc = nl_compare_model(&(NlCompareJob){.model = m,
                                              .run = (NlRunOptions){.norm = norm,
                                                                    .placement = place,
                                                                    .batch = 1,
                                                                    .threads = 1,
                                                                    .bn_stats = NL_BN_RUNNING},
                                              .ids = TEXT,
                                              .n = N_TEXT,
                                              .reference = -1},
                              &o, out, &err);
    CHECK(rc == 0, "%s: %s", name, err.msg);
    if (keep) *keep = m;
    else nl_model_free(m);
    return rc;
}

static void centred_stream_makes_layernorm_and_rmsnorm_agree(void) {
    NlCompareRow ln, rms;
    if (row("centred.json", NL_NORM_LAYERNORM, NL_PLACE_PRE, 0, &ln, NULL) ||
        row("centred.json", NL_NORM_RMSNORM, NL_PLACE_PRE, 0, &rms, NULL))
        return;
    // The fixture's writes into the residual stream are zero-mean in float64 and rounded to float32,
    // so per-position means are ~1e-8: the two norms then agree to float rounding.
    for (int l = 0; l <= ln.n_layer; l++)
        CHECK(ln.residual_abs_mean[l] < 1e-6, "layer %d |mean| %g", l, ln.residual_abs_mean[l]);
    CHECK(fabs(ln.nats_per_char - rms.nats_per_char) <= 1e-6 * ln.nats_per_char, "LN %.9g vs RMS %.9g nats/char",
          ln.nats_per_char, rms.nats_per_char);
    NlCompareRow plain;
    nl_compare_row_free(&rms);  // measured again below
    if (row("ln-pre-bias.json", NL_NORM_LAYERNORM, NL_PLACE_PRE, 0, &plain, NULL) ||
        row("ln-pre-bias.json", NL_NORM_RMSNORM, NL_PLACE_PRE, 0, &rms, NULL))
        return;
    CHECK(fabs(plain.nats_per_char - rms.nats_per_char) > 1e-3, "an uncentred model does tell them apart: %.9g vs %.9g",
          plain.nats_per_char, rms.nats_per_char);
    nl_compare_row_free(&ln);
    nl_compare_row_free(&rms);
    nl_compare_row_free(&plain);
}

// With --quantize-act the batch and cache checks compare like with like: every state of the row
// rounds its activations (a batched state left unrounded differs by the rounding, 0.1 or more).
static void quantized_activations_agree_in_batch_and_cache(void) {
    const char *names[] = {"ln-pre-bias.json", "lstm-ln.json"};
    for (int i = 0; i < 2; i++) {
        NlModel *m = NULL;
        NlError err;
        NlCompareRow r = {0};
        NlCompareOptions o = {.repeats = 1, .fault = NL_FAULT_NONE};
        int rc = nl_model_load(&m, fixture(names[i]), NULL, &err);
        if (rc == 0)
            rc = nl_compare_model(&(NlCompareJob){.model = m,
                                                  .run = NL_RUN_DEFAULTS,
                                                  .quant_act = NL_QUANT_Q8,
                                                  .ids = TEXT,
                                                  .n = N_TEXT,
                                                  .reference = -1},
                                  &o, &r, &err);
        CHECK(rc == 0, "%s: %s", names[i], err.msg);
        if (rc == 0)
            CHECK(r.batch_diff <= 1e-5 && r.cache_diff <= 1e-5, "%s q8 activations: batch %g cache %g (tolerance 1e-5)",
                  names[i], r.batch_diff, r.cache_diff);
        nl_compare_row_free(&r);
        nl_model_free(m);
    }
}

static void batch_and_cache_agree_with_single_prefill(void) {
    const char *names[] = {"ln-pre-bias.json", "ln-post-nobias.json", "rms-pre-bias.json", "rms-post-bias.json"};
    for (int i = 0; i < 4; i++) {
        NlCompareRow r;
        NlModel *m = NULL;
        // each fixture as trained: an rms/post model run as layernorm/pre would test another function
        if (row(names[i], NL_NORM_AS_CONFIGURED, NL_PLACE_AS_CONFIGURED, 0, &r, &m)) {
            nl_compare_row_free(&r);
            nl_model_free(m);
            continue;
        }
        CHECK(r.batch_diff <= 1e-5 && r.cache_diff <= 1e-5, "%s: batch %g cache %g (tolerance 1e-5)", names[i],
              r.batch_diff, r.cache_diff);
        NlState *s = NULL;
        NlError err;
        NlEvalResult e;
        int rc = nl_state_create(&s, m, &NL_RUN_DEFAULTS, &err);
        if (rc == 0) rc = nl_eval(&(s), 1, TEXT, N_TEXT, &(NlEvalOptions){.stride = 4}, &e, &err);
        CHECK(rc == 0, "%s: eval: %s", names[i], err.msg);
        if (rc != 0) {
            nl_compare_row_free(&r);
            nl_state_free(s);
            nl_model_free(m);
            continue;
        }
        // compare runs every row of the last layer for its statistics, eval only the scored ones:
        // products of other row counts round differently, so equal to float rounding (1e-6 relative).
        double nats = e.nll_sum / (double)e.count;
        CHECK(fabs(nats - r.nats_per_char) <= 1e-6 * nats && r.chars == e.count,
              "%s: compare's nats/char %.9g is eval's %.9g", names[i], r.nats_per_char, nats);
        CHECK(r.prefill_tok_s > 0 && r.decode_tok_s > 0 && r.prefill_tok_s_min <= r.prefill_tok_s &&
                  r.prefill_tok_s <= r.prefill_tok_s_max,
              "medians between min and max");
        double share = 0.0;
        for (int k = 0; k < NL_COMP_COUNT; k++) share += r.time_share[k];
        CHECK(fabs(share - 1.0) < 1e-9, "component shares sum to 1: %.12g", share);
        nl_compare_row_free(&r);
        nl_state_free(s);
        nl_model_free(m);
    }
}

static void invariance_experiment_separates_the_norms(void) {
    NlCompareRow r;
    if (row("rms-post-bias.json", NL_NORM_RMSNORM, NL_PLACE_POST, 1, &r, NULL)) return;
    // eps = 1e-5 against inputs of RMS ~0.5..5: scaling changes the output only through eps.
    for (int k = NL_INV_SCALE_HALF; k <= NL_INV_SCALE_10; k++)
        CHECK(r.invariance[0][k] < 1e-3 && r.invariance[1][k] < 1e-3, "%s: LN %g RMS %g",
              nl_invariance_name((NlInvarianceCase)k), r.invariance[0][k], r.invariance[1][k]);
    CHECK(r.invariance[0][NL_INV_SHIFT_1] < 1e-4, "LN ignores a shift: %g", r.invariance[0][NL_INV_SHIFT_1]);
    // without eps, doubling the input changes either norm's output by float rounding only
    CHECK(r.invariance[0][NL_INV_SCALE_2_EPS0] < 1e-5 && r.invariance[1][NL_INV_SCALE_2_EPS0] < 1e-5,
          "eps = 0: LN %g RMS %g", r.invariance[0][NL_INV_SCALE_2_EPS0], r.invariance[1][NL_INV_SCALE_2_EPS0]);
    CHECK(r.invariance[1][NL_INV_SHIFT_1] > 0.01, "RMSNorm does not: %g", r.invariance[1][NL_INV_SHIFT_1]);
    nl_compare_row_free(&r);
}

static void json_rows_parse_with_stable_fields(void) {
    NlCompareRow rows[2];
    if (row("ln-pre-bias.json", NL_NORM_LAYERNORM, NL_PLACE_PRE, 1, &rows[0], NULL) ||
        row("ln-pre-bias.json", NL_NORM_RMSNORM, NL_PLACE_PRE, 1, &rows[1], NULL))
        return;
    const char *labels[2] = {"a", "a"};
    CompareInfo info = {
        .text = "text", .threads = 1, .repeats = 2, .invariance = 1, .quantize = 0, .lens = 0, .outliers = 0};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(report_compare_json(f, rows, labels, 2, &info) == 0, "written");
    fclose(f);
    cJSON *root = cJSON_Parse(buf);
    CHECK(cJSON_GetArraySize(root) == 2, "one object per row");
    static const char *const FIELDS[] = {"model",
                                         "norm",
                                         "placement",
                                         "override",
                                         "parameters",
                                         "weight_bytes",
                                         "chars",
                                         "nats_per_char",
                                         "bits_per_char",
                                         "perplexity",
                                         "prefill_tok_s",
                                         "decode_tok_s",
                                         "norm_time_share",
                                         "time_share",
                                         "residual_rms",
                                         "residual_abs_mean",
                                         "norm_std",
                                         "batch16_max_logit_diff",
                                         "cache_max_logit_diff",
                                         "invariance"};
    for (const cJSON *r = root ? root->child : NULL; r; r = r->next)
        for (size_t k = 0; k < sizeof FIELDS / sizeof FIELDS[0]; k++)
            CHECK(cJSON_HasObjectItem(r, FIELDS[k]), "row has %s", FIELDS[k]);
    const cJSON *second = cJSON_GetArrayItem(root, 1);
    CHECK(second && strcmp(cJSON_GetObjectItem(second, "override")->valuestring, "norm") == 0,
          "the RMS row is marked as a norm override");
    // cJSON 1.7.15 prints 15 significant digits where they read back within DBL_EPSILON of the value
    // (its compare_double), else 17: a number comes back within one part in 2^52, not always exactly.
    CHECK(second && fabs(cJSON_GetObjectItem(second, "bits_per_char")->valuedouble - rows[1].bits_per_char) <=
                        DBL_EPSILON * fabs(rows[1].bits_per_char),
          "bits/char round-trips to within DBL_EPSILON, cJSON's printing");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(second, "residual_rms")) == 3, "L + 1 residual values");
    const cJSON *first = cJSON_GetArrayItem(root, 0);
    const cJSON *unit = cJSON_GetObjectItem(first, "unit"), *tokens = cJSON_GetObjectItem(first, "tokens");
    const cJSON *per_token = cJSON_GetObjectItem(first, "bits_per_token");
    CHECK(cJSON_IsString(unit) && strcmp(unit->valuestring, "char") == 0 && cJSON_IsNumber(tokens) &&
              tokens->valuedouble == (double)rows[0].chars && cJSON_IsNumber(per_token) &&
              fabs(per_token->valuedouble - rows[0].bits_per_char) <= DBL_EPSILON * fabs(rows[0].bits_per_char) &&
              cJSON_HasObjectItem(first, "nats_per_token"),
          "a character row: unit char, tokens and bits_per_token its chars and bits_per_char");
    cJSON_Delete(root);
    // The same rows as if the second were a BPE model's (its own, smaller counts): its unit is token,
    // and the table gives each row its own tokens and bytes.
    rows[1].bpe = 1;
    rows[1].chars = rows[0].chars / 2;
    rows[1].bytes = rows[0].bytes - 1;
    rows[1].bits_per_byte = rows[1].bits_per_char * (double)rows[1].chars / (double)rows[1].bytes;
    free(buf);
    f = open_memstream(&buf, &len);
    CHECK(report_compare_json(f, rows, labels, 2, &info) == 0, "written, with a BPE row");
    fclose(f);
    root = cJSON_Parse(buf);
    second = cJSON_GetArrayItem(root, 1);
    unit = cJSON_GetObjectItem(second, "unit");
    CHECK(cJSON_IsString(unit) && strcmp(unit->valuestring, "token") == 0 &&
              cJSON_GetObjectItem(second, "tokens")->valuedouble == (double)rows[1].chars &&
              cJSON_GetObjectItem(second, "chars")->valuedouble == (double)rows[1].chars &&
              fabs(cJSON_GetObjectItem(second, "bits_per_token")->valuedouble *
                       cJSON_GetObjectItem(second, "tokens")->valuedouble /
                       cJSON_GetObjectItem(second, "bytes")->valuedouble -
                   cJSON_GetObjectItem(second, "bits_per_byte")->valuedouble) <= 1e-9,
          "a BPE row: unit token, tokens (chars kept), bits_per_token x tokens / bytes = bits_per_byte");
    cJSON_Delete(root);
    free(buf);
    f = open_memstream(&buf, &len);
    CHECK(report_compare_text(f, rows, labels, 2, &info) == 0, "text written, with a BPE row");
    fclose(f);
    char want[2][64];
    for (int i = 0; i < 2; i++) snprintf(want[i], sizeof want[i], " %9zu %9zu ", rows[i].chars, rows[i].bytes);
    CHECK(strstr(buf, "tokens, bytes: what each row scored") && strstr(buf, "bits/byte    tokens     bytes ") &&
              strstr(buf, want[0]) && strstr(buf, want[1]) && !strstr(buf, "bytes scored"),
          "the table: each row's own tokens and bytes (%s|%s)", want[0], want[1]);
    nl_compare_row_free(&rows[0]);
    nl_compare_row_free(&rows[1]);
    free(buf);
}

// Every statistic compare reports, against the same statistics recomputed in double by the naive
// reference (tests/ref_forward.c) on one window of the text: residual RMS and |mean| per layer,
// norm output std per layer (and the final norm), the invariance figures, and time shares that sum
// to 1. Tolerance 1e-5 absolute + 1e-4 relative (the engine runs in float).
static void statistics_match_a_double_recomputation(void) {
    const char *names[] = {"ln-pre-bias.json",   "ln-post-nobias.json", "rms-pre-bias.json",
                           "rms-post-bias.json", "bn-pre-bias.json",    "bn-peri-bias.json",
                           "ln-peri-bias.json",  "deepnorm.json",       "nonorm.json"};
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        NlModel *m = load_fixture(names[f]);
        if (!m) continue;
        NlError err;
        const NlConfig *c = nl_model_config(m);
        size_t n = (size_t)c->block_size + 1;  // T inputs: one eval window, every position scored
        NlCompareRow r;
        NlCompareOptions o = {.repeats = 1, .invariance = 1, .fault = NL_FAULT_NONE, .lens = 0, .outliers = 0};
        if (nl_compare_model(&(NlCompareJob){.model = m,
                                             .run = (NlRunOptions){.norm = c->norm,
                                                                   .placement = c->placement,
                                                                   .batch = 1,
                                                                   .threads = 1,
                                                                   .bn_stats = NL_BN_RUNNING},
                                             .ids = TEXT,
                                             .n = n,
                                             .reference = -1},
                             &o, &r, &err) != 0) {
            CHECK(0, "%s: %s", names[f], err.msg);
            nl_compare_row_free(&r);
            nl_model_free(m);
            continue;
        }
        RefStats ref;
        double *logits = malloc(n * (size_t)c->vocab_size * sizeof *logits);
        CHECK(logits && ref_forward_stats(logits, c, nl_model_transformer_weights(m), TEXT, n - 1, &ref) == 0,
              "reference ran");
        free(logits);
        double worst = 0.0;
#define NEAR(got, want) (fabs((got) - (want)) <= 1e-5 + 1e-4 * fabs(want))
        for (int l = 0; l <= c->n_layer; l++) {
            CHECK(NEAR(r.residual_rms[l], ref.rms[l]), "%s layer %d: residual RMS %.9g, reference %.9g", names[f], l,
                  r.residual_rms[l], ref.rms[l]);
            CHECK(NEAR(r.residual_abs_mean[l], ref.abs_mean[l]), "%s layer %d: |mean| %.9g, reference %.9g", names[f],
                  l, r.residual_abs_mean[l], ref.abs_mean[l]);
            if (ref.norm_positions[l] > 0)
                CHECK(NEAR(r.norm_std[l], ref.norm_std[l]), "%s layer %d: norm std %.9g, reference %.9g", names[f], l,
                      r.norm_std[l], ref.norm_std[l]);
            worst = fmax(worst, fabs(r.residual_rms[l] - ref.rms[l]));
            if (l == c->n_layer) break;
            CHECK(NEAR(r.branch_rms[l], ref.branch_rms[l]) && ref.branch_positions[l] > 0,
                  "%s layer %d: branch RMS %.9g, reference %.9g", names[f], l, r.branch_rms[l], ref.branch_rms[l]);
            CHECK(NEAR(r.norm_post_std[l], ref.norm_post_std[l]) &&
                      (ref.norm_post_positions[l] > 0) == (c->placement == NL_PLACE_PERI),
                  "%s layer %d: output norm std %.9g, reference %.9g", names[f], l, r.norm_post_std[l],
                  ref.norm_post_std[l]);
        }
        CHECK(r.has_final_norm == (ref.norm_positions[c->n_layer] > 0), "%s: has_final_norm %d", names[f],
              r.has_final_norm);
        for (int t = 0; t < 2; t++)
            for (int k = 0; k < NL_INV_COUNT; k++)
                CHECK(NEAR(r.invariance[t][k], ref.invariance[t][k]), "%s invariance %s %s: %.9g, reference %.9g",
                      names[f], t ? "rmsnorm" : "layernorm", nl_invariance_name((NlInvarianceCase)k),
                      r.invariance[t][k], ref.invariance[t][k]);
#undef NEAR
        double share = 0.0;
        for (int k = 0; k < NL_COMP_COUNT; k++) share += r.time_share[k];
        CHECK(fabs(share - 1.0) < 1e-9, "%s: time shares sum to %.12g", names[f], share);
        CHECK(fabs(r.norm_share -
                   (r.time_share[NL_COMP_NORM1] + r.time_share[NL_COMP_NORM2] + r.time_share[NL_COMP_NORM1_POST] +
                    r.time_share[NL_COMP_NORM2_POST] + r.time_share[NL_COMP_FINAL_NORM])) < 1e-12,
              "%s: norm share is the norms' shares", names[f]);
        nl_compare_row_free(&r);
        nl_model_free(m);
    }
}

// The consistency checks can fail: a wrong token slipped into the decoding, or into one window of
// the batch, must show as a logit difference far above rounding (> 1e-3), while the clean run
// stays below 1e-5.
static void consistency_checks_report_injected_faults(void) {
    NlModel *m = NULL;
    NlError err;
    if (nl_model_load(&m, fixture("ln-pre-bias.json"), NULL, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    const NlConfig *c = nl_model_config(m);
    NlRunOptions run = {
        .norm = c->norm, .placement = c->placement, .batch = 1, .threads = 1, .bn_stats = NL_BN_RUNNING};
    NlCompareRow clean, cache, batch;
    NlCompareOptions o = {.repeats = 1, .invariance = 0, .fault = NL_FAULT_NONE, .lens = 0, .outliers = 0};
    int rc = nl_compare_model(&(NlCompareJob){.model = m, .run = run, .ids = TEXT, .n = N_TEXT, .reference = -1}, &o,
                              &clean, &err);
    o.fault = NL_FAULT_CACHE;
    rc |= nl_compare_model(&(NlCompareJob){.model = m, .run = run, .ids = TEXT, .n = N_TEXT, .reference = -1}, &o,
                           &cache, &err);
    o.fault = NL_FAULT_BATCH;
    rc |= nl_compare_model(&(NlCompareJob){.model = m, .run = run, .ids = TEXT, .n = N_TEXT, .reference = -1}, &o,
                           &batch, &err);
    CHECK(rc == 0, "%s", err.msg);
    CHECK(clean.cache_diff < 1e-5 && clean.batch_diff < 1e-5, "clean: cache %g batch %g", clean.cache_diff,
          clean.batch_diff);
    CHECK(cache.cache_diff > 1e-3, "a wrong decoded token shows in the cache check: %g", cache.cache_diff);
    CHECK(batch.batch_diff > 1e-3, "a wrong token in the batch shows in the batch check: %g", batch.batch_diff);
    nl_compare_row_free(&clean);
    nl_compare_row_free(&cache);
    nl_compare_row_free(&batch);
    nl_model_free(m);
}

int main(void) {
    RUN(consistency_checks_report_injected_faults);
    RUN(statistics_match_a_double_recomputation);
    RUN(centred_stream_makes_layernorm_and_rmsnorm_agree);
    RUN(batch_and_cache_agree_with_single_prefill);
    RUN(quantized_activations_agree_in_batch_and_cache);
    RUN(invariance_experiment_separates_the_norms);
    RUN(json_rows_parse_with_stable_fields);
    return check_summary("test_compare");
}
