// jsonout.c — JSON printed as valid UTF-8 (jsonout.h).
#include "jsonout.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "normlab.h"
#include "utf8.h"

// Copies text into a new string with each byte that is not part of valid UTF-8 as U+FFFD.
static char *utf8_repaired(const char *text) {
    size_t len = strlen(text);
    char *out = malloc(3 * len + 1);  // U+FFFD takes 3 bytes where the byte took 1
    if (out) utf8_repair(text, len, out);
    return out;
}

cJSON *nl_jsonx_bytes(const char *s, size_t len) {
    char *fixed = malloc(3 * len + 1), *quoted = malloc(18 * len + 3);  // (U+FFFD, or \u00XX a byte)
    cJSON *item = NULL;
    if (fixed && quoted) {
        size_t n = utf8_repair(s, len, fixed), at = 0;
        quoted[at++] = '"';
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)fixed[i];
            const char *named = c == '"'    ? "\\\""
                                : c == '\\' ? "\\\\"
                                : c == '\b' ? "\\b"
                                : c == '\f' ? "\\f"
                                : c == '\n' ? "\\n"
                                : c == '\r' ? "\\r"
                                : c == '\t' ? "\\t"
                                            : NULL;  // (cJSON's escapes)
            if (named) at += (size_t)sprintf(quoted + at, "%s", named);
            else if (c < 0x20) at += (size_t)sprintf(quoted + at, "\\u%04x", c);
            else quoted[at++] = (char)c;
        }
        quoted[at++] = '"';
        quoted[at] = '\0';
        item = cJSON_CreateRaw(quoted);
    }
    free(fixed);
    free(quoted);
    return item;
}

char *nl_jsonx_print(const cJSON *item, int formatted) {
    char *text = formatted ? cJSON_Print(item) : cJSON_PrintUnformatted(item);
    char *out = text ? utf8_repaired(text) : NULL;
    cJSON_free(text);
    return out;
}
