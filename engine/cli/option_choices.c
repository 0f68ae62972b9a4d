// option_choices.c — the words of the options that take one (--norm layernorm, --format csv,
// --quantize q8): each read, in any case, into the int its option stores.
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "option_choices.h"

int choose_norm(const char *w, int *out) { return nl_name_parse(NL_NAMES_NORM, w, out); }

int choose_placement(const char *w, int *out) { return nl_name_parse(NL_NAMES_PLACEMENT, w, out); }

void placement_words(char *buf, size_t cap, int as_range) {
    size_t n = 0, at = 0;
    while (nl_placement_info((NlPlacement)(n + 1))) n++;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at < cap; i++) {
        const char *sep = i == 0 ? "" : !as_range ? " " : i + 1 == n ? " or " : ", ";
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", sep, nl_placement_info((NlPlacement)(i + 1))->name);
    }
    if (as_range && at < cap) snprintf(buf + at, cap - at, " (any case)");
}
int choose_qk_norm(const char *w, int *out) { return nl_name_parse(NL_NAMES_QK_NORM, w, out); }

int choose_bn(const char *w, int *out) { return nl_name_parse(NL_NAMES_BN_STATS, w, out); }

int choose_bn_or_both(const char *w, int *out) {
    static const char both[] = "both";
    size_t i = 0;
    while (w[i] && both[i] && (w[i] | 0x20) == both[i]) i++;
    if (!w[i] && !both[i]) {
        *out = BN_STATS_BOTH;
        return 0;
    }
    return choose_bn(w, out);
}

int choose_lens_scale(const char *w, int *out) {
    static const char *const WORDS[] = {"recompute", "final"};  // NlLensScale's order
    for (int i = 0; i < 2; i++)
        if (strcasecmp(w, WORDS[i]) == 0) {
            *out = i;
            return 0;
        }
    return -1;
}

int choose_dtype(const char *w, int *out) { return nl_name_parse(NL_NAMES_DTYPE, w, out); }

int choose_quant(const char *w, int *out) {
    NlQuant v;
    if (nl_quant_parse(w, &v) != 0) return -1;
    *out = (int)v;
    return 0;
}

int choose_act_quant(const char *w, int *out) {
    return choose_quant(w, out) != 0 || (*out != NL_QUANT_NONE && *out != NL_QUANT_Q8) ? -1 : 0;  // q8 only
}

// Schemes (q8, q4, f16, bf16, q8_0, q4_0), comma-separated, into bits (1 << NlQuant); "none" is the
// float32 row itself.
int choose_quant_rows(const char *w, int *out) {
    *out = 0;
    for (const char *at = w;; at++) {
        size_t len = strcspn(at, ",");
        char word[8];
        NlQuant q;
        snprintf(word, sizeof word, "%.*s", (int)(len < 7 ? len : 7), at);
        if (len > 7 || nl_quant_parse(word, &q) != 0 || q == NL_QUANT_NONE) return -1;
        *out |= 1 << q;
        at += len;
        if (!*at) return 0;
    }
}

int choose_format(const char *w, int *out) {
    static const char *const names[] = {"md", "text", "csv", "json"};
    for (int i = 0; i < 4; i++)
        if (strcasecmp(w, names[i]) == 0) return *out = i, 0;
    return -1;
}

int choose_quant_only(const char *w, int *out) {
    unsigned classes;
    if (nl_quant_classes_parse(w, &classes) != 0) return -1;
    *out = (int)classes;
    return 0;
}
