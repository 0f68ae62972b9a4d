// test_golden.c — the shipped models against golden logits and eval losses written by the
// independent PyTorch reference (tools/reference/reference.py golden, float64) into
// tests/reference/pytorch_float64.json.
// Tolerances: max |delta logit| <= 1e-4 at every position; eval nats/char within 1e-5 relative.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "normlab.h"
#include "normlab_internal.h"

static cJSON *load_golden(void) {
    FILE *f = fopen("tests/reference/pytorch_float64.json", "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    cJSON *root = NULL;
    if (buf && got == (size_t)n) {
        buf[n] = '\0';
        root = cJSON_Parse(buf);
    }
    free(buf);
    return root;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    *len = buf ? fread(buf, 1, (size_t)n, f) : 0;
    if (buf) buf[*len] = '\0';
    fclose(f);
    return buf;
}

// Max |engine - reference| over every position of one prompt.
static double prompt_diff(NlState *st, const NlModel *m, const cJSON *prompt) {
    const char *text = cJSON_GetObjectItem(prompt, "text")->valuestring;
    const cJSON *rows = cJSON_GetObjectItem(prompt, "logits");
    int ids[1024];
    size_t n, skipped;
    NlError err;
    if (nl_tokenizer_encode(nl_model_tokenizer(m), text, strlen(text), 0, ids, &n, &skipped, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return INFINITY;
    }
    CHECK((size_t)cJSON_GetArraySize(rows) == n, "golden rows %d vs %zu positions", cJSON_GetArraySize(rows), n);
    size_t V = (size_t)nl_model_config(m)->vocab_size;
    const float *got = nl_forward(st, ids, n, 0, n);
    double worst = 0.0;
    size_t i = 0;
    for (const cJSON *row = rows->child; row && i < n; row = row->next, i++) {
        size_t v = 0;
        for (const cJSON *x = row->child; x && v < V; x = x->next, v++)
            worst = fmax(worst, fabs(got[i * V + v] - x->valuedouble));
    }
    return worst;
}

static void shipped_models_match_pytorch_reference(void) {
    cJSON *root = load_golden();
    CHECK(root != NULL, "tests/reference/pytorch_float64.json is missing or not JSON");
    if (!root) return;
    const cJSON *models = cJSON_GetObjectItem(root, "models");
    CHECK(cJSON_GetArraySize(models) == 13, "thirteen shipped models in the golden file");
    for (const cJSON *gm = models ? models->child : NULL; gm; gm = gm->next) {
        const char *path = cJSON_GetObjectItem(gm, "model")->valuestring;
        NlModel *m = NULL;
        NlState *st = NULL;
        NlError err;
        if (nl_model_load(&m, path, NULL, &err) != 0 || nl_state_create(&st, m, NULL, &err) != 0) {
            CHECK(0, "%s", err.msg);
            nl_model_free(m);
            continue;
        }
        double worst = 0.0;
        for (const cJSON *p = cJSON_GetObjectItem(gm, "prompts")->child; p; p = p->next)
            worst = fmax(worst, prompt_diff(st, m, p));
        printf("     %s: worst |delta logit| vs PyTorch = %.3g (tolerance 1e-4)\n", path, worst);
        CHECK(worst <= 1e-4, "%s: worst logit difference %.3g", path, worst);
        const cJSON *ev = cJSON_GetObjectItem(gm, "eval");
        size_t len = 0;
        char *text = read_all(cJSON_GetObjectItem(ev, "text")->valuestring, &len);
        int *ids = malloc((len + 1) * sizeof *ids);
        size_t n = 0, skipped;
        NlError terr;
        CHECK(text && ids && nl_tokenizer_encode(nl_model_tokenizer(m), text, len, 0, ids, &n, &skipped, &terr) == 0,
              "eval text");
        NlEvalResult r;
        size_t T = (size_t)nl_model_config(m)->block_size;
        if (nl_eval(&(st), 1, ids, n, &(NlEvalOptions){.stride = T / 2}, &r, &err) == 0) {
            double want = cJSON_GetObjectItem(ev, "nats_per_char")->valuedouble, got = r.nll_sum / (double)r.count;
            printf("     %s: eval %.7f nats/char, PyTorch %.7f (relative %.2g, tolerance 1e-5)\n", path, got, want,
                   fabs(got - want) / want);
            CHECK(fabs(got - want) <= 1e-5 * want, "%s eval %.9g vs %.9g", path, got, want);
            CHECK(r.count == (size_t)cJSON_GetObjectItem(ev, "chars")->valuedouble, "scored count");
        } else {
            CHECK(0, "%s", err.msg);
        }
        free(ids);
        free(text);
        nl_state_free(st);
        nl_model_free(m);
    }
    cJSON_Delete(root);
}

int main(void) {
    RUN(shipped_models_match_pytorch_reference);
    return check_summary("test_golden");
}
