// test_loader.c — one malformed model per loader rule, each expecting its own message; plus the
// positive cases (a valid directory model, an unaligned data section, inline .json models).
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "model.h"
#include "normlab.h"

// The smallest valid model: V=3, L=1, H=1, D=2, F=4, T=2, LayerNorm, pre, no linear biases, tied.
static const char *const CONFIG =
    "{\"format\": {\"name\": \"normlab\", \"version\": 1}, \"vocab_size\": 3, \"n_layer\": 1, \"n_head\": 1, "
    "\"n_embd\": 2, \"block_size\": 2, \"n_inner\": 4, \"norm\": \"layernorm\", \"placement\": \"pre\", "
    "\"norm_eps\": 1e-05, \"activation\": \"gelu\", \"bias\": false, \"tie_embeddings\": true}";
static const char *const TOKENIZER = "{\"type\": \"char\", \"vocab\": [\"a\", \"b\", \"c\"]}";
static const struct {
    const char *name;
    int d0, d1;
} TENSORS[] = {{"wte.weight", 3, 2},
               {"wpe.weight", 2, 2},
               {"h.0.ln_1.weight", 2, 0},
               {"h.0.ln_1.bias", 2, 0},
               {"h.0.attn.c_attn.weight", 6, 2},
               {"h.0.attn.c_proj.weight", 2, 2},
               {"h.0.ln_2.weight", 2, 0},
               {"h.0.ln_2.bias", 2, 0},
               {"h.0.mlp.c_fc.weight", 4, 2},
               {"h.0.mlp.c_proj.weight", 2, 4},
               {"ln_f.weight", 2, 0},
               {"ln_f.bias", 2, 0}};
#define N_TENSORS (sizeof TENSORS / sizeof TENSORS[0])
#define N_FLOATS 54

typedef enum { F_CONFIG, F_TOKENIZER, F_HEADER } Part;

typedef struct {
    char config[2048], tokenizer[1024], header[4096];
    float data[N_FLOATS + 4];
    size_t n_data;  // floats written
    size_t pad;  // spaces after the header JSON (changes data alignment)
    long long header_len;  // -1: the true length
    int truncate_to;  // >= 0: the safetensors file is cut to this many bytes
} Files;

static char dir[256];

static void default_files(Files *f) {
    memset(f, 0, sizeof *f);
    snprintf(f->config, sizeof f->config, "%s", CONFIG);
    snprintf(f->tokenizer, sizeof f->tokenizer, "%s", TOKENIZER);
    size_t at = 0;
    strcpy(f->header, "{\"__metadata__\": {\"source\": \"test\"}");
    for (size_t i = 0; i < N_TENSORS; i++) {
        size_t n = (size_t)TENSORS[i].d0 * (TENSORS[i].d1 ? (size_t)TENSORS[i].d1 : 1);
        char e[256];
        if (TENSORS[i].d1)
            snprintf(e, sizeof e, ", \"%s\": {\"dtype\": \"F32\", \"shape\": [%d, %d], \"data_offsets\": [%zu, %zu]}",
                     TENSORS[i].name, TENSORS[i].d0, TENSORS[i].d1, at * 4, (at + n) * 4);
        else
            snprintf(e, sizeof e, ", \"%s\": {\"dtype\": \"F32\", \"shape\": [%d], \"data_offsets\": [%zu, %zu]}",
                     TENSORS[i].name, TENSORS[i].d0, at * 4, (at + n) * 4);
        strcat(f->header, e);
        at += n;
    }
    strcat(f->header, "}");
    for (size_t i = 0; i < N_FLOATS; i++) f->data[i] = 0.1f * (float)((i * 7) % 11) - 0.4f;
    f->n_data = N_FLOATS;
    f->pad = (8 - strlen(f->header) % 8) % 8;
    f->header_len = -1;
    f->truncate_to = -1;
}

static void write_file(const char *name, const void *bytes, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(bytes, 1, len, fp) != len) CHECK(0, "cannot write %s", path);
    if (fp) fclose(fp);
}

static void write_model(const Files *f) {
    write_file("config.json", f->config, strlen(f->config));
    write_file("tokenizer.json", f->tokenizer, strlen(f->tokenizer));
    size_t hl = strlen(f->header) + f->pad, total = 8 + hl + f->n_data * 4;
    unsigned char *buf = malloc(total);
    unsigned long long n = f->header_len >= 0 ? (unsigned long long)f->header_len : hl;
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(n >> (8 * i));
    memcpy(buf + 8, f->header, strlen(f->header));
    memset(buf + 8 + strlen(f->header), ' ', f->pad);
    memcpy(buf + 8 + hl, f->data, f->n_data * 4);
    write_file("model.safetensors", buf, f->truncate_to >= 0 ? (size_t)f->truncate_to : total);
    free(buf);
}

static int replace(char *s, size_t cap, const char *from, const char *to) {
    char *p = strstr(s, from);
    if (!p || strlen(s) - strlen(from) + strlen(to) >= cap) return -1;
    memmove(p + strlen(to), p + strlen(from), strlen(p + strlen(from)) + 1);
    memcpy(p, to, strlen(to));
    return 0;
}

// The same case through the command line, when NORMLAB_BIN names the binary: `normlab info -m dir`
// must exit 1 with empty stdout and the message on stderr (or exit 0 for a valid model).
static void expect_cli(const char *label, const char *expect) {
    const char *bin = getenv("NORMLAB_BIN");
    if (!bin) return;
    char cmd[1024], out[4096] = "", err[4096] = "";
    snprintf(cmd, sizeof cmd, "'%s' info -m '%s' >'%s/out' 2>'%s/err'", bin, dir, dir, dir);
    int status = system(cmd);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const char *names[2] = {"out", "err"};
    char *bufs[2] = {out, err};
    for (int i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(bufs[i], 1, 4095, f);
            bufs[i][n] = '\0';
            fclose(f);
        }
        unlink(path);
    }
    if (!expect) {
        CHECK(code == 0 && out[0], "%s (CLI): exit %d, stderr %s", label, code, err);
        return;
    }
    CHECK(code == 1 && out[0] == '\0' && strstr(err, expect) && strchr(err, '\n') == strrchr(err, '\n'),
          "%s (CLI): exit %d, stdout '%.40s', stderr '%s'", label, code, out, err);
}

// Loads dir and expects failure with `expect` in the message (or success when expect is NULL).
static void expect_load(const char *label, const char *expect) {
    expect_cli(label, expect);
    NlModel *m = NULL;
    NlError err = {NL_OK, ""};
    int rc = nl_model_load(&m, dir, &err);
    if (!expect) CHECK(rc == 0 && m != NULL, "%s: should load, got: %s", label, err.msg);
    else
        CHECK(rc != 0 && m == NULL && strstr(err.msg, expect) != NULL, "%s: expected '%s', got rc=%d '%s'", label,
              expect, rc, err.msg);
    CHECK(strchr(err.msg, '\n') == NULL, "%s: message is one line", label);
    nl_model_free(m);
}

typedef struct {
    const char *label;
    Part part;
    const char *from, *to, *expect;
} Case;

static const Case CASES[] = {
    {"config n_embd not divisible by n_head", F_CONFIG, "\"n_head\": 1", "\"n_head\": 3",
     "n_embd 2 is not divisible by n_head 3"},
    {"config n_layer zero", F_CONFIG, "\"n_layer\": 1", "\"n_layer\": 0", "\"n_layer\": 0 is outside [1, 256]"},
    {"config fractional width", F_CONFIG, "\"n_embd\": 2", "\"n_embd\": 2.5",
     "\"n_embd\": expected an integer, found 2.5"},
    {"config huge context", F_CONFIG, "\"block_size\": 2", "\"block_size\": 1e9",
     "\"block_size\": 1000000000 is outside"},
    {"config unknown norm", F_CONFIG, "\"layernorm\"", "\"groupnorm\"",
     "\"norm\" = \"groupnorm\" is not one of: layernorm, rmsnorm, batchnorm, none"},
    {"config unknown placement", F_CONFIG, "\"pre\"", "\"middle\"", "is not one of: pre, post, peri"},
    {"config batchnorm in version 1", F_CONFIG, "\"layernorm\"", "\"batchnorm\"",
     "norm \"batchnorm\" needs format version 2 (the file says version 1)"},
    {"config peri in version 1", F_CONFIG, "\"pre\"", "\"peri\"", "placement \"peri\" needs format version 2"},
    {"config residual_scale in version 1", F_CONFIG, "\"pre\"", "\"post\", \"residual_scale\": 2",
     "\"residual_scale\" needs format version 2"},
    {"config unknown activation", F_CONFIG, "\"gelu\"", "\"swish\"", "is not one of: gelu, gelu_tanh, relu"},
    {"config missing key", F_CONFIG, "\"vocab_size\": 3, ", "", "missing key \"vocab_size\""},
    {"config unknown key", F_CONFIG, "\"n_layer\"", "\"dropout\": 0.1, \"n_layer\"", "unknown key \"dropout\""},
    {"config duplicate key", F_CONFIG, "\"n_layer\": 1,", "\"n_layer\": 1, \"n_layer\": 2,",
     "duplicate key \"n_layer\""},
    {"config trailing garbage", F_CONFIG, "true}", "true} x", "unexpected data after the JSON value"},
    {"config invalid JSON", F_CONFIG, "\"n_head\": 1,", "\"n_head\": ,", "invalid JSON"},
    {"config format version", F_CONFIG, "\"version\": 1", "\"version\": 4",
     "version 4 is not supported (this build reads versions 1 to 3)"},
    {"config unknown arch", F_CONFIG, "\"n_layer\"", "\"arch\": \"mamba\", \"n_layer\"",
     "\"arch\" = \"mamba\" is not one of: transformer, lstm, gru"},
    {"config format name", F_CONFIG, "\"normlab\"", "\"gguf\"", "name must be \"normlab\""},
    {"config eps zero", F_CONFIG, "1e-05", "0", "\"norm_eps\" = 0 is outside"},
    {"config bias not bool", F_CONFIG, "\"bias\": false", "\"bias\": \"no\"", "\"bias\" must be true or false"},
    {"config both mlp sizes", F_CONFIG, "\"n_inner\": 4", "\"n_inner\": 4, \"mlp_ratio\": 2",
     "exactly one of \"mlp_ratio\" and \"n_inner\""},
    {"config NUL escape", F_CONFIG, "\"layernorm\"", "\"layer\\u0000norm\"",
     "a string in \"norm\" has a NUL character"},
    {"config NUL in a key", F_CONFIG, "\"n_head\"", "\"n_head\\u0000x\"",
     "the key \"n_head\\u0000x\" has a NUL character"},
    {"config raw newline in a value", F_CONFIG, "\"layernorm\"", "\"layer\nnorm\"",
     "an unescaped control character U+000A"},
    {"config raw escape in a key", F_CONFIG, "\"n_head\"", "\"n_he\x1b[2Jad\"",
     "an unescaped control character U+001B"},
    {"config case-sensitive keys", F_CONFIG, "\"n_head\"", "\"N_HEAD\"", "unknown key \"N_HEAD\""},
    {"config not an object", F_CONFIG, CONFIG, "[1, 2]", "config must be a JSON object"},
    {"tokenizer duplicate entry", F_TOKENIZER, "\"c\"]", "\"a\"]", "entries 0 and 2 are the same character"},
    {"tokenizer too many entries", F_TOKENIZER, "\"c\"]", "\"c\", \"d\"]",
     "tokenizer has 4 entries, config vocab_size is 3, wte.weight has 3 rows"},
    {"tokenizer two-char entry", F_TOKENIZER, "\"b\"", "\"bb\"", "entry 1 is not exactly one valid UTF-8 character"},
    {"tokenizer empty entry", F_TOKENIZER, "\"b\"", "\"\"", "entry 1 is not exactly one"},
    {"tokenizer NUL entry", F_TOKENIZER, "\"b\"", "\"\\u0000\"", "a string in \"vocab\" has a NUL character"},
    {"header NUL in a tensor name", F_HEADER, "\"wpe.weight\"", "\"wpe.weight\\u0000\"",
     "the key \"wpe.weight\\u0000\" has a NUL"},
    {"header NUL in metadata", F_HEADER, "\"wpe.weight\"", "\"__metadata__\": {\"a\": \"b\\u0000\"}, \"wpe.weight\"",
     "a string in \"a\" has a NUL"},
    {"tokenizer wrong type", F_TOKENIZER, "\"char\"", "\"bpe\"", "\"type\" must be \"char\""},
    {"tokenizer non-string entry", F_TOKENIZER, "\"b\"", "7", "vocab[1] is not a string"},
    {"header unsupported dtype", F_HEADER, "\"F32\"", "\"F16\"", "dtype F16 is not supported (only F32)"},
    {"header unknown dtype", F_HEADER, "\"F32\"", "\"Q4\"", "unknown dtype \"Q4\""},
    {"header wrong shape", F_HEADER, "[2, 2], \"data_offsets\": [24", "[4, 1], \"data_offsets\": [24",
     "\"wpe.weight\" has shape (4, 1), expected (2, 2)"},
    {"header length mismatch", F_HEADER, "[3, 2]", "[3, 3]", "span 24 bytes but shape x 4 bytes is 36"},
    {"header offsets past data", F_HEADER, "[208, 216]", "[208, 220]", "past the data section (216 bytes)"},
    {"header offsets reversed", F_HEADER, "[208, 216]", "[216, 208]", "begin 216 > end 208"},
    {"header overlapping tensors", F_HEADER, "[24, 40]", "[0, 16]", "must be contiguous and must not overlap"},
    {"header negative dimension", F_HEADER, "[3, 2]", "[-3, 2]", "shape[0]: -3 is outside"},
    {"header shape overflow", F_HEADER, "[3, 2]", "[4294967296, 4294967296, 4]", "shape product overflows"},
    {"header fractional offset", F_HEADER, "[208, 216]", "[208.5, 216]", "expected an integer"},
    {"header missing offsets", F_HEADER, "\"shape\": [3, 2], \"data_offsets\": [0, 24]", "\"shape\": [3, 2]",
     "\"data_offsets\" must be [begin, end]"},
    {"header unknown entry field", F_HEADER, "\"dtype\": \"F32\"", "\"dtype\": \"F32\", \"extra\": 1",
     "unknown key \"extra\""},
    {"header duplicate tensor", F_HEADER, "\"wpe.weight\"", "\"wte.weight\"", "duplicate key \"wte.weight\""},
    {"header metadata not string", F_HEADER, "\"test\"", "3", "__metadata__ \"source\" must be a string"},
    {"header missing tensor", F_HEADER, "\"ln_f.bias\"", "\"ln_f.beta\"", "missing tensor \"ln_f.bias\""},
    {"header too many dims", F_HEADER, "[3, 2]", "[1, 1, 1, 1, 1, 1, 1, 1, 3, 2]", "shape has 10 dimensions"},
};

static void every_malformed_file_gets_its_own_message(void) {
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        Files f;
        default_files(&f);
        char *target = CASES[i].part == F_CONFIG ? f.config : CASES[i].part == F_TOKENIZER ? f.tokenizer : f.header;
        size_t cap = CASES[i].part == F_CONFIG      ? sizeof f.config
                     : CASES[i].part == F_TOKENIZER ? sizeof f.tokenizer
                                                    : sizeof f.header;
        if (replace(target, cap, CASES[i].from, CASES[i].to) != 0) {
            CHECK(0, "%s: pattern not found", CASES[i].label);
            continue;
        }
        if (CASES[i].part == F_HEADER) f.pad = (8 - strlen(f.header) % 8) % 8;
        write_model(&f);
        expect_load(CASES[i].label, CASES[i].expect);
    }
}

static void container_level_faults(void) {
    Files f;
    default_files(&f);
    f.truncate_to = 5;
    write_model(&f);
    expect_load("file shorter than the length prefix", "too short for a safetensors header");
    default_files(&f);
    f.header_len = 1LL << 40;
    write_model(&f);
    expect_load("header length past the file", "header length 1099511627776 is invalid");
    default_files(&f);
    f.header_len = 1;
    write_model(&f);
    expect_load("header length 1", "header length 1 is invalid");
    default_files(&f);
    f.n_data = N_FLOATS + 1;
    write_model(&f);
    expect_load("trailing bytes", "4 trailing bytes after the last tensor");
    default_files(&f);
    f.n_data = N_FLOATS - 2;
    write_model(&f);
    expect_load("truncated data", "past the data section");
    default_files(&f);
    memmove(f.header + 1, f.header, strlen(f.header) + 1);
    f.header[0] = ' ';
    write_model(&f);
    expect_load("header not starting with {", "header does not start with '{'");
    default_files(&f);
    f.data[5] = NAN;
    write_model(&f);
    expect_load("NaN weight", "tensor \"wte.weight\" has a non-finite value");
    default_files(&f);
    f.data[53] = INFINITY;
    write_model(&f);
    expect_load("Inf weight", "tensor \"ln_f.bias\" has a non-finite value");
    default_files(&f);
    replace(f.config, sizeof f.config, "\"pre\"", "\"post\"");
    write_model(&f);
    expect_load("tensor the config does not use", "unexpected tensor \"ln_f.weight\"");
}

// Next-token logits of tokens {2, 0} under the model in dir, into out (3).
static int logits_of_dir(float *out) {
    NlModel *m = NULL;
    NlState *st = NULL;
    NlError err;
    int ids[2] = {2, 0}, rc = -1;
    if (nl_model_load(&m, dir, &err) == 0 && nl_state_create(&st, m, NULL, &err) == 0) {
        memcpy(out, nl_forward(st, ids, 2, 0, 1), 3 * sizeof *out);
        rc = 0;
    } else {
        CHECK(0, "%s", err.msg);
    }
    nl_state_free(st);
    nl_model_free(m);
    return rc;
}

static void valid_and_unaligned_models_load_and_agree(void) {
    Files f;
    default_files(&f);
    write_model(&f);
    expect_load("valid model", NULL);
    NlModel *a = NULL;
    NlError err;
    nl_model_load(&a, dir, &err);
    CHECK(a && nl_model_parameters(a) == N_FLOATS, "parameters = %d", N_FLOATS);
    nl_model_free(a);
    float aligned[3], unaligned[3];
    int rc = logits_of_dir(aligned);
    f.pad = 1;  // the data section now starts at an odd offset
    write_model(&f);
    rc |= logits_of_dir(unaligned);
    CHECK(rc == 0 && memcmp(aligned, unaligned, sizeof aligned) == 0, "unaligned data gives bit-identical logits");
}

static void paths_that_are_not_models_are_rejected(void) {
    NlModel *m = NULL;
    NlError err;
    CHECK(nl_model_load(&m, "/nonexistent/model", &err) != 0 && strstr(err.msg, "no such model"), "%s", err.msg);
    Files f;
    default_files(&f);
    write_model(&f);
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(nl_model_load(&m, path, &err) != 0 && strstr(err.msg, "give the model directory"), "%s", err.msg);
    unlink(path);
    CHECK(nl_model_load(&m, dir, &err) != 0 && strstr(err.msg, "model.safetensors: cannot open"), "%s", err.msg);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    mkdir(path, 0700);
    CHECK(nl_model_load(&m, dir, &err) != 0 && strstr(err.msg, "config.json: not a regular file"), "%s", err.msg);
    rmdir(path);
    CHECK(m == NULL, "nothing returned on failure");
}

static void inline_json_models_are_checked(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/inline.json", dir);
    const char *cases[][2] = {
        {"{\"config\": CFG, \"tokenizer\": TOK, \"tensors\": {\"wte.weight\": {\"shape\": [3, 2], \"data\": [1, 2, 3, "
         "4, 5]}}}",
         "data has 5 numbers, shape needs 6"},
        {"{\"config\": CFG, \"tokenizer\": TOK, \"tensors\": {\"wte.weight\": {\"shape\": [3, 2], \"data\": [1, 2, 3, "
         "4, 5, 6], \"dtype\": \"F32\"}}}",
         "unknown key \"dtype\""},
        {"{\"config\": CFG, \"tokenizer\": TOK, \"tensors\": {\"wte.weight\": {\"shape\": [3, 2], \"data\": [1, 2, 3, "
         "4, 5, \"x\"]}}}",
         "data[5] is not a number"},
        {"{\"config\": CFG, \"tokenizer\": TOK, \"tensors\": {\"wte.weight\": {\"shape\": [3, 2], \"data\": [1, 2, 3, "
         "4, 5, 6]}}}",
         "missing tensor \"wpe.weight\""},
        {"{\"config\": CFG, \"tokenizer\": TOK, \"tensors\": {}, \"extra\": 1}", "unknown key \"extra\""},
        {"{\"config\": CFG, \"tokenizer\": TOK}", "needs \"config\", \"tokenizer\" and a \"tensors\" object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char doc[4096];
        snprintf(doc, sizeof doc, "%s", cases[i][0]);
        replace(doc, sizeof doc, "CFG", CONFIG);
        replace(doc, sizeof doc, "TOK", TOKENIZER);
        FILE *fp = fopen(path, "w");
        fputs(doc, fp);
        fclose(fp);
        NlModel *m = NULL;
        NlError err = {NL_OK, ""};
        CHECK(nl_model_load(&m, path, &err) != 0 && strstr(err.msg, cases[i][1]), "inline %zu: expected '%s', got '%s'",
              i, cases[i][1], err.msg);
    }
    unlink(path);
}

// A recurrent model (tests/fixtures/lstm-ln.json: 3 layers, E 7, S 5) with one change each: the
// version gate, its own config keys, and every tensor named when missing, extra or misshapen.
static void recurrent_models_are_checked(void) {
    static const char *const cases[][3] = {
        {"\"version\": 3", "\"version\": 2", "arch \"lstm\" needs format version 3 (the file says version 2)"},
        {"\"n_layer\"", "\"block_size\": 8, \"n_layer\"", "unknown key \"block_size\""},
        {"\"layernorm\"", "\"rmsnorm\"", "\"norm\" = \"rmsnorm\" is not one of: layernorm, none"},
        {"\"n_hidden\": 5, ", "", "missing key \"n_hidden\""},
        {"\"n_hidden\": 5", "\"n_hidden\": 6", "tensor \"rnn.0.weight_ih\" has shape (20, 7), expected (24, 7)"},
        {"\"arch\": \"lstm\"", "\"arch\": \"gru\"", "tensor \"rnn.0.weight_ih\" has shape (20, 7), expected (15, 7)"},
        {"\"rnn.2.ln_cell.bias\"", "\"rnn.2.ln_cell.beta\"", "missing tensor \"rnn.2.ln_cell.bias\""},
        {"\"layernorm\"", "\"none\"", "unexpected tensor \"rnn.0.ln_ih.weight\" (not used by this config)"},
        {"\"lm_head.bias\"", "\"lm_head.b\"", "missing tensor \"lm_head.bias\""},
    };
    FILE *in = fopen(fixture("lstm-ln.json"), "rb");
    size_t cap = 1 << 16;
    char *base = calloc(cap, 1), *doc = malloc(cap), path[512];
    size_t len = in && base ? fread(base, 1, cap - 1, in) : 0;
    if (in) fclose(in);
    CHECK(len > 0 && len < cap - 256, "fixture read (%zu bytes)", len);
    snprintf(path, sizeof path, "%s/rnn.json", dir);
    for (size_t i = 0; doc && len > 0 && i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(doc, base, cap);
        if (replace(doc, cap, cases[i][0], cases[i][1]) != 0) {
            CHECK(0, "case %zu: pattern not found", i);
            continue;
        }
        FILE *fp = fopen(path, "w");
        fputs(doc, fp);
        fclose(fp);
        NlModel *m = NULL;
        NlError err = {NL_OK, ""};
        CHECK(nl_model_load(&m, path, &err) != 0 && m == NULL && strstr(err.msg, cases[i][2]),
              "recurrent %zu: expected '%s', got '%s'", i, cases[i][2], err.msg);
    }
    NlModel *m = NULL;
    NlError err;
    CHECK(nl_model_load(&m, fixture("lstm-ln.json"), &err) == 0 && nl_model_config(m)->arch == NL_ARCH_LSTM &&
              nl_model_config(m)->n_hidden == 5 && nl_model_config(m)->block_size == 0,
          "the fixture itself loads as an lstm of state width 5, with no context window");
    nl_model_free(m);
    unlink(path);
    free(base);
    free(doc);
}

// Every error carries a code callers can act on, besides its message.
static void errors_carry_codes(void) {
    NlModel *m = NULL;
    NlError err = {NL_OK, ""};
    CHECK(nl_model_load(&m, "/nonexistent/model", &err) != 0 && err.code == NL_ERR_IO, "missing: %d %s", err.code,
          err.msg);
    char tmp[] = "/tmp/normlab-codes-XXXXXX";
    if (!mkdtemp(tmp)) return;
    char path[300];
    snprintf(path, sizeof path, "%s/bad.json", tmp);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("{\"config\": ", f);
        fclose(f);
    }
    CHECK(nl_model_load(&m, path, &err) != 0 && err.code == NL_ERR_FORMAT, "bad JSON: %d %s", err.code, err.msg);
    remove(path);
    rmdir(tmp);
    if (nl_model_load(&m, fixture("ln-pre-bias.json"), &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    NlState *s = NULL;
    nl_state_create(&s, m, NULL, &err);
    int ids[] = {1, 2, 3};
    NlEvalResult r;
    CHECK(nl_eval(s, ids, 3, 999, &r, NULL, NULL, &err) != 0 && err.code == NL_ERR_ARG, "stride: %d %s", err.code,
          err.msg);
    nl_state_free(s);
    nl_model_free(m);
    if (nl_model_load(&m, fixture("overflow.json"), &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    nl_state_create(&s, m, NULL, &err);
    CHECK(nl_eval(s, ids, 3, 1, &r, NULL, NULL, &err) != 0 && err.code == NL_ERR_NUMERIC, "overflow: %d %s", err.code,
          err.msg);
    nl_state_free(s);
    nl_model_free(m);
    NlSampler *sp = NULL;
    CHECK(nl_sampler_create(&sp, 0, (NlSamplerParams){1, 0, 1}, 1, &err) != 0 && err.code == NL_ERR_ARG, "sampler: %d",
          err.code);
}

// ---- every documented bound and "only with" rule of config.json (docs/format.md)

// A buffer that grows: the generated configs and inline models.
typedef struct {
    char *s;
    size_t len, cap;
} Buf;

static void put(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = 2 * (b->len + (size_t)n + 1);
        b->s = realloc(b->s, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

// The smallest transformer (version 1) and LSTM (version 3), as key/value pairs in file order.
static const char *const BASE_T[][2] = {
    {"vocab_size", "3"},   {"n_layer", "1"},           {"n_head", "1"},           {"n_embd", "2"},
    {"block_size", "2"},   {"n_inner", "4"},           {"norm", "\"layernorm\""}, {"placement", "\"pre\""},
    {"norm_eps", "1e-05"}, {"activation", "\"gelu\""}, {"bias", "false"},         {"tie_embeddings", "true"}};
static const char *const BASE_R[][2] = {{"arch", "\"lstm\""}, {"vocab_size", "3"}, {"n_layer", "1"},
                                        {"n_embd", "2"},      {"n_hidden", "2"},   {"norm", "\"layernorm\""},
                                        {"norm_eps", "1e-05"}};

// config.json from a base and edits "key=value;...": a value replaces the base's, "-" removes the
// key, a new key is added at the end; "version=N" sets the format's version (1, or 3 for recurrent).
static void config_with(Buf *b, int rnn, const char *edits) {
    char keys[24][32], vals[24][64], ed[512];
    size_t n = rnn ? sizeof BASE_R / sizeof BASE_R[0] : sizeof BASE_T / sizeof BASE_T[0];
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], sizeof keys[i], "%s", rnn ? BASE_R[i][0] : BASE_T[i][0]);
        snprintf(vals[i], sizeof vals[i], "%s", rnn ? BASE_R[i][1] : BASE_T[i][1]);
    }
    char version[16] = "1";
    if (rnn) version[0] = '3';
    snprintf(ed, sizeof ed, "%s", edits);
    for (char *save = NULL, *e = strtok_r(ed, ";", &save); e; e = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(e, '=');
        *eq = '\0';
        if (strcmp(e, "version") == 0) {
            snprintf(version, sizeof version, "%s", eq + 1);
            continue;
        }
        size_t i = 0;
        while (i < n && strcmp(keys[i], e) != 0) i++;
        if (i == n) snprintf(keys[n++], sizeof keys[0], "%s", e);
        snprintf(vals[i], sizeof vals[i], "%s", eq + 1);
    }
    put(b, "{\"format\": {\"name\": \"normlab\", \"version\": %s}", version);
    for (size_t i = 0; i < n; i++)
        if (strcmp(vals[i], "-") != 0) put(b, ", \"%s\": %s", keys[i], vals[i]);
    put(b, "}");
}

// The parsed value a valid case pins: "field=value" of the NlConfig.
static int config_has(const NlConfig *c, const char *want) {
    char field[32];
    double v;
    if (sscanf(want, "%31[^=]=%lf", field, &v) != 2) return 0;
    double got = strcmp(field, "n_inner") == 0          ? c->n_inner
                 : strcmp(field, "residual_scale") == 0 ? c->residual_scale
                 : strcmp(field, "placement") == 0      ? (double)c->placement
                 : strcmp(field, "norm") == 0           ? (double)c->norm
                 : strcmp(field, "norm_eps") == 0       ? c->norm_eps
                 : strcmp(field, "arch") == 0           ? (double)c->arch
                 : strcmp(field, "activation") == 0     ? (double)c->activation
                 : strcmp(field, "n_hidden") == 0       ? c->n_hidden
                 : strcmp(field, "n_input") == 0        ? c->n_input
                 : strcmp(field, "vocab_size") == 0     ? c->vocab_size
                 : strcmp(field, "n_layer") == 0        ? c->n_layer
                 : strcmp(field, "n_head") == 0         ? c->n_head
                 : strcmp(field, "n_embd") == 0         ? c->n_embd
                 : strcmp(field, "block_size") == 0     ? c->block_size
                                                        : NAN;
    return got == v;
}

// One case of tests/fixtures/config_bounds.txt (its header says the format): the refused config's
// message, or the value an accepted one parses to.
static void config_case(const char *line) {
    char base[4], edits[256], expect[256];
    if (sscanf(line, "%3[^|]|%255[^|]|%255[^\n]", base, edits, expect) != 3) {
        CHECK(0, "config_bounds.txt: malformed line '%s'", line);
        return;
    }
    Buf b = {0};
    config_with(&b, base[0] == 'R', edits);
    NlConfig cfg;
    NlError err = {NL_OK, ""};
    int rc = nl_config_parse(&cfg, b.s, b.len, "config.json", &err);
    if (!strchr(expect, '"'))
        CHECK(rc == 0 && config_has(&cfg, expect), "%s|%s: should load with %s, got rc %d '%s'", base, edits, expect,
              rc, err.msg);
    else
        CHECK(rc != 0 && strstr(err.msg, expect) && err.code == NL_ERR_FORMAT, "%s|%s: expected '%s', got rc %d '%s'",
              base, edits, expect, rc, err.msg);
    free(b.s);
}

static void config_keys_at_every_bound_and_only_with_rule(void) {
    FILE *f = fopen(fixture("config_bounds.txt"), "r");
    char line[600];
    int cases = 0;
    while (f && fgets(line, sizeof line, f))
        if (line[0] != '#' && line[0] != '\n') config_case(line), cases++;
    if (f) fclose(f);
    CHECK(cases >= 90, "config_bounds.txt: %d cases read", cases);
}

// ---- which tensors each combination needs (docs/format.md, the tensor tables)

typedef struct {
    char name[48];
    int d0, d1;  // d1 0: one dimension
    int optional;  // RMSNorm's bias
} Need;

typedef struct {
    int rnn;  // 0 transformer, 1 lstm, 2 gru
    const char *norm, *placement;
    int bias, tie;
} Combo;

static int need_add(Need *n, int k, const char *name, int d0, int d1, int optional) {
    snprintf(n[k].name, sizeof n[k].name, "%s", name);
    n[k].d0 = d0, n[k].d1 = d1, n[k].optional = optional;
    return k + 1;
}

// A norm's tensors under `norm`, each (d): weight and bias; RMSNorm's bias optional; BatchNorm's
// running statistics too; none for norm none.
static int need_norm(Need *n, int k, const char *norm, const char *prefix, int d) {
    static const char *const SUFFIX[] = {"weight", "bias", "running_mean", "running_var"};
    int count = strcmp(norm, "none") == 0 ? 0 : strcmp(norm, "batchnorm") == 0 ? 4 : 2;
    for (int i = 0; i < count; i++) {
        char name[48];
        snprintf(name, sizeof name, "%s.%s", prefix, SUFFIX[i]);
        k = need_add(n, k, name, d, 0, i == 1 && strcmp(norm, "rmsnorm") == 0);
    }
    return k;
}

// The tensors of c with V 3, D 2 (E 3 for recurrent), T 2, F 4, S 2, one transformer layer or two
// recurrent ones (layer 1's input is S wide); returns their count.
static int needs_of(const Combo *c, Need *n) {
    int k = 0, V = 3, D = 2, F = 4, S = 2, E = 3;
    char p[48];
    if (c->rnn) {
        int lstm = c->rnn == 1, ln = strcmp(c->norm, "layernorm") == 0, G = lstm ? 4 : 3, gates = lstm ? 4 : 2;
        k = need_add(n, k, "wte.weight", V, E, 0);
        for (int i = 0; i < 2; i++) {
            const char *const LN[] = {"ln_ih", "ln_hh", lstm ? "ln_cell" : "ln_ih_cand", lstm ? NULL : "ln_hh_cand"};
            snprintf(p, sizeof p, "rnn.%d.weight_ih", i), k = need_add(n, k, p, G * S, i ? S : E, 0);
            snprintf(p, sizeof p, "rnn.%d.weight_hh", i), k = need_add(n, k, p, G * S, S, 0);
            if (lstm) snprintf(p, sizeof p, "rnn.%d.bias", i), k = need_add(n, k, p, 4 * S, 0, 0);
            if (!lstm && !ln) {
                snprintf(p, sizeof p, "rnn.%d.bias_ih", i), k = need_add(n, k, p, 3 * S, 0, 0);
                snprintf(p, sizeof p, "rnn.%d.bias_hh", i), k = need_add(n, k, p, 3 * S, 0, 0);
            }
            for (int j = 0; ln && j < 4 && LN[j]; j++) {
                snprintf(p, sizeof p, "rnn.%d.%s", i, LN[j]);
                k = need_norm(n, k, "layernorm", p, j < 2 ? gates * S : S);
            }
        }
        k = need_add(n, k, "lm_head.weight", V, S, 0);
        return need_add(n, k, "lm_head.bias", V, 0, 0);
    }
    k = need_add(n, k, "wte.weight", V, D, 0);
    k = need_add(n, k, "wpe.weight", 2, D, 0);
    const char *const LIN[] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
    const int out[] = {3 * D, D, F, D}, in[] = {D, D, D, F};
    for (int j = 0; j < 4; j++) {
        if (j == 0 || j == 2) k = need_norm(n, k, c->norm, j == 0 ? "h.0.ln_1" : "h.0.ln_2", D);
        snprintf(p, sizeof p, "h.0.%s.weight", LIN[j]), k = need_add(n, k, p, out[j], in[j], 0);
        if (c->bias) snprintf(p, sizeof p, "h.0.%s.bias", LIN[j]), k = need_add(n, k, p, out[j], 0, 0);
    }
    if (strcmp(c->placement, "peri") == 0)
        k = need_norm(n, need_norm(n, k, c->norm, "h.0.ln_1_post", D), c->norm, "h.0.ln_2_post", D);
    if (strcmp(c->placement, "post") != 0) k = need_norm(n, k, c->norm, "ln_f", D);
    if (!c->tie) k = need_add(n, k, "lm_head.weight", V, D, 0);
    return k;
}

// An inline model of c with the tensors n[0..k) but `skip` (-1: none), plus `extra` (NULL: none)
// of shape (1); every weight 0.5, but running_var's first value `var0`.
static void inline_model(Buf *b, const Combo *c, const Need *n, int k, int skip, const char *extra, float var0) {
    char edits[256];
    if (c->rnn)
        snprintf(edits, sizeof edits, "arch=\"%s\";n_layer=2;n_embd=3;norm=\"%s\"", c->rnn == 1 ? "lstm" : "gru",
                 c->norm);
    else
        snprintf(edits, sizeof edits, "version=2;norm=\"%s\";placement=\"%s\";bias=%s;tie_embeddings=%s", c->norm,
                 c->placement, c->bias ? "true" : "false", c->tie ? "true" : "false");
    put(b, "{\"config\": ");
    config_with(b, c->rnn != 0, edits);
    put(b, ", \"tokenizer\": %s, \"tensors\": {", TOKENIZER);
    if (extra) put(b, "\"%s\": {\"shape\": [1], \"data\": [0.5]}", extra);
    for (int i = 0, first = !extra; i < k; i++) {
        if (i == skip) continue;
        put(b, "%s\"%s\": {\"shape\": [%d", first ? "" : ", ", n[i].name, n[i].d0);
        if (n[i].d1) put(b, ", %d", n[i].d1);
        put(b, "], \"data\": [");
        int var = strstr(n[i].name, "running_var") != NULL;
        for (int j = 0; j < n[i].d0 * (n[i].d1 ? n[i].d1 : 1); j++) put(b, j ? ", %g" : "%g", var && !j ? var0 : 0.5);
        put(b, "]}");
        first = 0;
    }
    put(b, "}}");
}

// Loads an inline model of c (see inline_model); expects failure naming `expect`, or success.
static void expect_inline(const Combo *c, const Need *n, int k, int skip, const char *extra, float var0,
                          const char *expect, const char *label) {
    Buf b = {0};
    inline_model(&b, c, n, k, skip, extra, var0);
    NlModel *m = NULL;
    NlError err = {NL_OK, ""};
    int rc = nl_model_load_inline(&m, b.s, b.len, "inline.json", &err);
    if (!expect) CHECK(rc == 0 && m, "%s: should load, got '%s'", label, err.msg);
    else
        CHECK(rc != 0 && !m && strstr(err.msg, expect), "%s: expected '%s', got rc %d '%s'", label, expect, rc,
              err.msg);
    nl_model_free(m);
    free(b.s);
}

// Every transformer combination (norm x placement x bias x tie, norm none with pre only) and every
// recurrent one (lstm, gru x layernorm, none) loads with exactly its tensors: without any required
// one it fails naming it (RMSNorm's biases may go; wte.weight is named by the vocabulary check),
// and with any tensor that only another combination needs it fails naming that as unexpected.
// BatchNorm's running variance may be 0 (or -0), not below.
static const char *const NORM[] = {"layernorm", "rmsnorm", "batchnorm", "none"};
static const char *const PLACE[] = {"pre", "post", "peri"};

static void each_combination_needs_exactly_its_tensors(void) {
    Combo combos[48];
    int nc = 0;
    for (int nm = 0; nm < 4; nm++)
        for (int pl = 0; pl < (nm == 3 ? 1 : 3); pl++)
            for (int bt = 0; bt < 4; bt++) combos[nc++] = (Combo){0, NORM[nm], PLACE[pl], bt & 1, bt >> 1};
    for (int r = 1; r <= 2; r++)
        for (int nm = 0; nm < 4; nm += 3) combos[nc++] = (Combo){r, NORM[nm], "pre", 0, 0};
    Need mine[64], other[64];
    char label[160];
    for (int i = 0; i < nc; i++) {
        const Combo *c = &combos[i];
        int k = needs_of(c, mine);
        snprintf(label, sizeof label, "%s %s %s bias %d tie %d",
                 c->rnn ? (c->rnn == 1 ? "lstm" : "gru") : "transformer", c->norm, c->placement, c->bias, c->tie);
        expect_inline(c, mine, k, -1, NULL, 0.5f, NULL, label);
        for (int j = 0; j < k; j++) {
            char want[96], what[240];
            snprintf(want, sizeof want, "missing tensor \"%s\"", mine[j].name);
            if (j == 0) snprintf(want, sizeof want, "wte.weight has 0 rows");  // checked first, with the vocabulary
            snprintf(what, sizeof what, "%s without %s", label, mine[j].name);
            expect_inline(c, mine, k, j, NULL, 0.5f, mine[j].optional ? NULL : want, what);
        }
        char tried[128][48];  // each name that only other combinations need, once
        int nt = 0;
        for (int o = 0; o < nc; o++) {
            int ko = needs_of(&combos[o], other);
            for (int j = 0; j < ko; j++) {
                int have = 0;
                for (int q = 0; q < k && !have; q++) have = strcmp(mine[q].name, other[j].name) == 0;
                for (int q = 0; q < nt && !have; q++) have = strcmp(tried[q], other[j].name) == 0;
                if (have || nt == 128) continue;
                snprintf(tried[nt++], sizeof tried[0], "%s", other[j].name);
                char want[96], what[240];
                snprintf(want, sizeof want, "unexpected tensor \"%s\" (not used by this config)", other[j].name);
                snprintf(what, sizeof what, "%s with %s", label, other[j].name);
                expect_inline(c, mine, k, -1, other[j].name, 0.5f, want, what);
            }
        }
        if (strcmp(c->norm, "batchnorm") == 0 && c->bias && c->tie) {
            expect_inline(c, mine, k, -1, NULL, 0.0f, NULL, "running_var 0");
            expect_inline(c, mine, k, -1, NULL, -0.0f, NULL, "running_var -0");
            expect_inline(c, mine, k, -1, NULL, -FLT_TRUE_MIN, "has a negative variance", "running_var below 0");
        }
    }
}

int main(void) {
    RUN(errors_carry_codes);
    snprintf(dir, sizeof dir, "/tmp/normlab-loader-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(every_malformed_file_gets_its_own_message);
    RUN(container_level_faults);
    RUN(valid_and_unaligned_models_load_and_agree);
    RUN(paths_that_are_not_models_are_rejected);
    RUN(inline_json_models_are_checked);
    RUN(recurrent_models_are_checked);
    RUN(config_keys_at_every_bound_and_only_with_rule);
    RUN(each_combination_needs_exactly_its_tensors);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_loader");
}
