// jsonout.c — JSON printed as valid UTF-8 (jsonout.h).
#include "jsonout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

// Copies text into a new string with each byte that is not part of valid UTF-8 as U+FFFD.
static char *utf8_repaired(const char *text) {
    size_t len = strlen(text), bad = 0, n;
    uint32_t cp;
    for (size_t i = 0; i < len; i += n ? n : 1)
        if ((n = nl_utf8_decode(text + i, len - i, &cp)) == 0) bad++;
    char *out = malloc(len + 2 * bad + 1), *o = out;  // U+FFFD takes 3 bytes where the byte took 1
    if (!out) return NULL;
    for (size_t i = 0; i < len; i += n ? n : 1) {
        n = nl_utf8_decode(text + i, len - i, &cp);
        memcpy(o, n ? text + i : "\xef\xbf\xbd", n ? n : 3);
        o += n ? n : 3;
    }
    *o = '\0';
    return out;
}

char *nl_jsonx_print(const cJSON *item, int formatted) {
    char *text = formatted ? cJSON_Print(item) : cJSON_PrintUnformatted(item);
    char *out = text ? utf8_repaired(text) : NULL;
    cJSON_free(text);
    return out;
}
