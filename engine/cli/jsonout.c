// jsonout.c — JSON printed as valid UTF-8 (jsonout.h).
#include "jsonout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

// Copies text into a new string with each byte that is not part of valid UTF-8 as U+FFFD.
static char *utf8_repaired(const char *text) {
    size_t len = strlen(text);
    char *out = malloc(3 * len + 1);  // U+FFFD takes 3 bytes where the byte took 1
    if (out) nl_utf8_repair(text, len, out);
    return out;
}

char *nl_jsonx_print(const cJSON *item, int formatted) {
    char *text = formatted ? cJSON_Print(item) : cJSON_PrintUnformatted(item);
    char *out = text ? utf8_repaired(text) : NULL;
    cJSON_free(text);
    return out;
}
