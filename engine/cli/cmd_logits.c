// cmd_logits.c — logits: every position's logits of a text, as JSON lines.
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "io_check.h"
#include "models.h"
#include "output.h"
#include "process.h"
#include "prompts.h"
#include "workers.h"
#include "option_rows.h"

int cmd_logits(Options *o) {
    if (!o->prompt && !o->prompt_file) {
        msg_usage(o->cmd, "%s", "give the text with -p or -f");
        return EXIT_USAGE;
    }
    NlModel *model = NULL;
    NlState *state = NULL;
    OutFile out = {0};
    int *ids = NULL;
    char *text = NULL;
    float *logits = NULL;  // (n, V)
    size_t n = 0, len = 0;
    const char *outs[1] = {o->output};
    int rc = o->output ? check_outputs(o, outs, 1) : 0;
    if (!rc) rc = load_model(o, &model);
    if (!rc) rc = prompt_ids(o, model, NULL, &ids, &n, &text, &len, NULL);
    if (!rc) rc = make_state_as(o, model, 1, o->threads, 1, &state);
    if (!rc) rc = open_main_output(o, &out);
    if (rc) goto cleanup;
    size_t T = model_context(model), V = (size_t)model_desc(model).vocab_size;
    if (n > T) {
        msg_error("%s: %zu %ss, more than the model's context of %zu", o->prompt_file ? o->prompt_file : "the text", n,
                  token_unit(model), T);
        rc = EXIT_DATA;
        goto cleanup;
    }
    // A transformer's text fits one call; a recurrent model's goes through in chunks of the most logits
    // one call returns, all checked before any is printed.
    NlModelDesc desc;
    nl_model_describe(model, &desc);
    size_t chunk = n < desc.call_logits ? n : desc.call_logits;
    if (!(logits = malloc(n * V * sizeof *logits))) {
        msg_error("out of memory for %zu x %zu logits", n, V);
        rc = EXIT_DATA;
        goto cleanup;
    }
    for (size_t p = 0; p < n; p += chunk) {
        size_t k = n - p < chunk ? n - p : chunk;
        memcpy(logits + p * V, nl_forward(state, ids + p, k, p, k), k * V * sizeof *logits);
    }
    for (size_t i = 0; i < n * V; i++)
        if (!isfinite(logits[i])) {  // as generate and eval: a non-finite logit is an error, not a number
            msg_error("the logit of vocabulary index %zu at position %zu is not finite (%g)", i % V, i / V, logits[i]);
            rc = EXIT_DATA;
            goto cleanup;
        }
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        for (size_t v = 0; v < V; v++) ok &= fprintf(out.f, "%s%.9g", v ? ", " : "[", logits[i * V + v]) > 0;
        ok &= fprintf(out.f, "]\n") > 0;
    }
    if (!ok || fflush(out.f) == EOF) {
        msg_error("cannot write %s: %s", o->output ? o->output : "to stdout", strerror(errno));
        rc = EXIT_DATA;
    }
cleanup:
    if (out_finish(&out, rc == 0) != 0) rc = EXIT_DATA;
    free(logits);
    free(ids);
    free(text);
    nl_state_free(state);
    nl_model_free(model);
    return rc;
}

// ---- its options, declared once (the parser, help, the man page and completion read them;
// option_rows.h holds the rows several commands share), and the relations between them

const OptSpec LOGITS_OPTIONS[] = {
    OPT_HELP,
    OPT_MODEL,
    OPT_PROMPT,
    OPT_PROMPT_FILE,
    OPT_ESCAPE,
    {.name = "json",
     .type = OT_FLAG,
     .field = OPT_FIELD(json),
     .value = 1,
     .help = "accepted: the output is JSON lines already"},
    OPT_OUTPUT,
    OPT_THREADS("OpenBLAS threads for the matrix products"),
    OPT_NORM,
    OPT_PLACEMENT,
    OPT_QK_NORM,
    OPT_BN_STATS,
    OPT_SKIP_UNKNOWN,
    OPT_SPECIAL,
    OPT_QUANTIZE,
    OPT_QUANTIZE_ONLY,
    OPT_QUANTIZE_ACT,
    OPT_NO_MMAP,
    OPT_NO_REPACK,
    OPT_END,
};

const OptRelation LOGITS_RELATIONS[] = {QUANTIZE_ONLY(quantize), PROMPT_OR_FILE, REL_END};
