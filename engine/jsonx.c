// jsonx.c — strict JSON reading on top of cJSON (see jsonx.h for the rules and why).
#include "jsonx.h"

#include "fileio.h"
#include "tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...)                                  \
    do {                                           \
        nl_error(err, NL_ERR_FORMAT, __VA_ARGS__); \
        return -1;                                 \
    } while (0)

// Copies the string literal's text buf[start..end) into out (cap bytes), a raw NUL as "\u0000" so
// that it stays visible, cut with "..." when it does not fit.
static void literal_text(char *out, size_t cap, const char *buf, size_t start, size_t end) {
    size_t o = 0, i = start;
    for (; i < end && o + 6 + 4 < cap; i++) {  // room for a "\\u0000", then "..." and the NUL
        if (buf[i] == '\0') {
            memcpy(out + o, "\\u0000", 6);
            o += 6;
        } else out[o++] = buf[i];
    }
    if (i < end) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

// Finds, inside a string literal, a NUL (raw, or the escape \u0000) or another raw control
// character (JSON wants them escaped; cJSON keeps them, and a NUL cuts the string short). Returns
// its byte offset or -1; *code gets the character, `key` the key it belongs to: the string itself
// when it is a key, else the last key before it ("" when none), and *in_key which of the two.
static long find_bad_string_byte(const char *buf, size_t len, unsigned *code, char *key, size_t keylen, int *in_key) {
    long bad = -1;
    size_t start = 0;
    key[0] = '\0';
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != '"') continue;
        start = ++i;  // a string literal: scan it to its closing quote
        for (; i < len && buf[i] != '"'; i++) {
            unsigned char c = (unsigned char)buf[i];
            if (bad < 0 && c < 0x20) {
                bad = (long)i;
                *code = c;
            }
            if (c != '\\' || i + 1 >= len) continue;
            if (bad < 0 && buf[i + 1] == 'u' && i + 5 < len && memcmp(buf + i + 2, "0000", 4) == 0) {
                bad = (long)i;
                *code = 0;
            }
            i++;  // skip the escaped character (so \\ and \" do not end the literal)
        }
        size_t after = i + 1;
        while (after < len && strchr(" \t\r\n", buf[after]) && buf[after] != '\0') after++;
        int is_key = after < len && buf[after] == ':';
        if (bad >= 0 && (size_t)bad >= start) {  // found in this literal
            if (is_key) literal_text(key, keylen, buf, start, i);
            *in_key = is_key;
            return bad;
        }
        if (is_key) literal_text(key, keylen, buf, start, i);
    }
    return -1;
}

typedef struct {
    const char *key;
    size_t at;  // its place in the object
} KeyAt;

static int cmp_key_at(const void *x, const void *y) {
    const KeyAt *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->at > b->at) - (a->at < b->at);
}

// The first key of obj (in order) that occurs again, or NULL: its keys sorted, so that a vocabulary
// of 50,257 keys (GPT-2's) takes n log n comparisons, not n^2 / 2.
static const char *first_duplicate(const cJSON *obj, int *nomem) {
    size_t n = 0, best = SIZE_MAX;
    for (const cJSON *c = obj->child; c; c = c->next) n++;
    if (n < 2) return NULL;
    KeyAt *keys = malloc(n * sizeof *keys);
    if (!keys) {
        *nomem = 1;
        return NULL;
    }
    n = 0;
    for (const cJSON *c = obj->child; c; c = c->next, n++) keys[n] = (KeyAt){c->string, n};
    qsort(keys, n, sizeof *keys, cmp_key_at);
    const char *dup = NULL;
    for (size_t i = 0; i + 1 < n; i++)
        if (strcmp(keys[i].key, keys[i + 1].key) == 0 && keys[i].at < best &&
            (i == 0 || strcmp(keys[i - 1].key, keys[i].key) != 0)) {
            best = keys[i].at;  // (the group's first place: its entries are sorted by place)
            dup = keys[i].key;
        }
    free(keys);
    return dup;
}

// Rejects duplicate keys in every object, at any depth (cJSON would keep the first silently).
static int check_duplicates(const cJSON *node, const char *what, NlError *err) {
    int nomem = 0;
    const char *dup = cJSON_IsObject(node) ? first_duplicate(node, &nomem) : NULL;
    if (nomem) FAIL("%s: out of memory", what);
    if (dup) {
        char cut[NL_CUT_BUF];
        FAIL("%s: duplicate key \"%s\"", what, nl_cut(cut, dup));
    }
    for (const cJSON *c = node->child; c; c = c->next)
        if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && check_duplicates(c, what, err) != 0) return -1;
    return 0;
}

cJSON *nl_jsonx_parse(const char *buf, size_t len, const char *what, NlError *err) {
    char key[96];
    unsigned code = 0;
    int in_key = 0;
    long bad = find_bad_string_byte(buf, len, &code, key, sizeof key, &in_key);
    if (bad >= 0) {
        char ch[40];
        if (code == 0) snprintf(ch, sizeof ch, "a NUL character (data corruption)");
        else snprintf(ch, sizeof ch, "an unescaped control character U+%04X", code);
        if (in_key) nl_error(err, NL_ERR_FORMAT, "%s: the key \"%s\" has %s at byte %ld", what, key, ch, bad + 1);
        else if (key[0])
            nl_error(err, NL_ERR_FORMAT, "%s: a string in \"%s\" has %s at byte %ld", what, key, ch, bad + 1);
        else nl_error(err, NL_ERR_FORMAT, "%s: a string has %s at byte %ld", what, ch, bad + 1);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!root) {
        size_t at = end && end >= buf ? (size_t)(end - buf) : 0;
        nl_error(err, NL_ERR_FORMAT, "%s: invalid JSON near byte %zu", what, at + 1);
        return NULL;
    }
    size_t at = (size_t)(end - buf);
    while (at < len && strchr(" \t\r\n", buf[at]) && buf[at] != '\0') at++;
    if (at < len) {
        nl_error(err, NL_ERR_FORMAT, "%s: unexpected data after the JSON value at byte %zu", what, at + 1);
        cJSON_Delete(root);
        return NULL;
    }
    if (check_duplicates(root, what, err) != 0) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

int nl_jsonx_only_keys(const cJSON *obj, const char *const *allowed, const char *what, NlError *err) {
    for (const cJSON *c = obj->child; c; c = c->next) {
        int known = 0;
        for (const char *const *a = allowed; *a && !known; a++) known = strcmp(*a, c->string) == 0;
        char cut[NL_CUT_BUF];
        if (!known) FAIL("%s: unknown key \"%s\"", what, nl_cut(cut, c->string));
    }
    return 0;
}

int nl_jsonx_as_int(const cJSON *item, double min, double max, int64_t *out, const char *what, NlError *err) {
    if (!cJSON_IsNumber(item)) FAIL("%s: expected an integer", what);
    double v = item->valuedouble;
    if (!isfinite(v) || v != floor(v)) FAIL("%s: expected an integer, found %g", what, v);
    if (v < min || v > max) FAIL("%s: %.0f is outside [%.0f, %.0f]", what, v, min, max);
    *out = (int64_t)v;
    return 0;
}

// Looks up a member; returns 1 found, 0 missing-but-optional, -1 error.
static int member(const cJSON *obj, const char *key, int required, const cJSON **item, const char *what, NlError *err) {
    *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (*item) return 1;
    if (required) FAIL("%s: missing key \"%s\"", what, key);
    return 0;
}

int nl_jsonx_int(const cJSON *obj, const char *key, int required, double min, double max, int64_t *out,
                 const char *what, NlError *err) {
    const cJSON *item;
    int found = member(obj, key, required, &item, what, err);
    if (found <= 0) return found;
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s: \"%s\"", what, key);
    if (nl_jsonx_as_int(item, min, max, out, ctx, err) != 0) return -1;
    return 0;
}

int nl_jsonx_number(const cJSON *obj, const char *key, int required, double min, double max, double *out,
                    const char *what, NlError *err) {
    const cJSON *item;
    int found = member(obj, key, required, &item, what, err);
    if (found <= 0) return found;
    if (!cJSON_IsNumber(item)) FAIL("%s: \"%s\" must be a number", what, key);
    double v = item->valuedouble;
    if (!isfinite(v) || v < min || v > max) FAIL("%s: \"%s\" = %g is outside [%g, %g]", what, key, v, min, max);
    *out = v;
    return 0;
}

int nl_jsonx_bool(const cJSON *obj, const char *key, int required, int *out, const char *what, NlError *err) {
    const cJSON *item;
    int found = member(obj, key, required, &item, what, err);
    if (found <= 0) return found;
    if (!cJSON_IsBool(item)) FAIL("%s: \"%s\" must be true or false", what, key);
    *out = cJSON_IsTrue(item);
    return 0;
}

int nl_jsonx_choice(const cJSON *obj, const char *key, const char *const *choices, int *index, const char *what,
                    NlError *err) {
    const cJSON *item;
    if (member(obj, key, 1, &item, what, err) < 0) return -1;
    if (!cJSON_IsString(item)) FAIL("%s: \"%s\" must be a string", what, key);
    for (int i = 0; choices[i]; i++) {
        if (strcmp(choices[i], item->valuestring) == 0) {
            *index = i;
            return 0;
        }
    }
    char list[200] = "";
    for (int i = 0; choices[i]; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, choices[i], sizeof list - strlen(list) - 1);
    }
    FAIL("%s: \"%s\" = \"%.60s\" is not one of: %s", what, key, item->valuestring, list);
}
