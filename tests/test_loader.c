// test_loader.c — one malformed model per loader rule, each expecting its own message; plus the
// positive cases (a valid directory model, an unaligned data section, inline .json models).
// config.json's bounds and each combination's tensors: test_config.c.
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

#include "bind.h"
#include "check.h"
#include "linear.h"
#include "model.h"
#include "normlab.h"
#include "normlab_internal.h"

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

// The same case through the command line, when NORMLAB_BIN names the binary: `normlab ARGS -m dir`
// (ARGS "info" unless a case needs the weights read: info reads no weight) must exit 1 with empty
// stdout and the message on stderr (or exit 0 for a valid model).
static void expect_cli(const char *label, const char *expect, const char *args) {
    const char *bin = getenv("NORMLAB_BIN");
    if (!bin) return;
    char cmd[1024], out[4096] = "", err[4096] = "";
    snprintf(cmd, sizeof cmd, "'%s' %s -m '%s' >'%s/out' 2>'%s/err'", bin, args, dir, dir, dir);
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

// Loads dir and expects failure with `expect` in the message (or success when expect is NULL), and
// the same of `normlab args` on it.
static void expect_load_as(const char *label, const char *expect, const char *args) {
    expect_cli(label, expect, args);
    NlModel *m = NULL;
    NlError err = {NL_OK, ""};
    int rc = nl_model_load(&m, dir, NULL, &err);
    if (!expect) CHECK(rc == 0 && m != NULL, "%s: should load, got: %s", label, err.msg);
    else
        CHECK(rc != 0 && m == NULL && strstr(err.msg, expect) != NULL, "%s: expected '%s', got rc=%d '%s'", label,
              expect, rc, err.msg);
    CHECK(strchr(err.msg, '\n') == NULL, "%s: message is one line", label);
    nl_model_free(m);
}

static void expect_load(const char *label, const char *expect) { expect_load_as(label, expect, "info"); }

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
    {"config unknown activation", F_CONFIG, "\"gelu\"", "\"swish\"", "is not one of: gelu, gelu_tanh, relu, silu"},
    {"config missing key", F_CONFIG, "\"vocab_size\": 3, ", "", "missing key \"vocab_size\""},
    {"config unknown key", F_CONFIG, "\"n_layer\"", "\"dropout\": 0.1, \"n_layer\"", "unknown key \"dropout\""},
    {"config duplicate key", F_CONFIG, "\"n_layer\": 1,", "\"n_layer\": 1, \"n_layer\": 2,",
     "duplicate key \"n_layer\""},
    {"config trailing garbage", F_CONFIG, "true}", "true} x", "unexpected data after the JSON value"},
    {"config invalid JSON", F_CONFIG, "\"n_head\": 1,", "\"n_head\": ,", "invalid JSON"},
    {"config format version", F_CONFIG, "\"version\": 1", "\"version\": 8",
     "version 8 is not supported (this build reads versions 1 to 7)"},
    {"config unknown arch", F_CONFIG, "\"n_layer\"", "\"arch\": \"mamba\", \"n_layer\"",
     "\"arch\" = \"mamba\" is not one of: transformer, lstm, gru, llama"},
    {"config format name", F_CONFIG, "\"normlab\"", "\"gguf\"", "name must be \"normlab\""},
    {"config: an HF GPT-2 snapshot", F_CONFIG, "\"format\": {\"name\": \"normlab\", \"version\": 1}, ",
     "\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\", ",
     "a Hugging Face GPT2LMHeadModel snapshot, not a normlab model: import it with tools/interop/import_hf_gpt2.py "},
    {"config: an HF snapshot of another model", F_CONFIG, "\"format\": {\"name\": \"normlab\", \"version\": 1}, ",
     "\"model_type\": \"llama\", ", "a Hugging Face llama snapshot, not a normlab model: tools/interop/import_hf.py "},
    {"config without format", F_CONFIG, "\"format\": {\"name\": \"normlab\", \"version\": 1}, ", "",
     "\"format\" must be {\"name\": \"normlab\", \"version\": V}, V 1 to 7"},
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
    {"header unsupported dtype", F_HEADER, "\"F32\"", "\"F64\"",
     "dtype F64 is not supported (F32, F16, BF16, or U8 blocks)"},
    {"header F16 of the wrong size", F_HEADER, "\"F32\"", "\"F16\"",
     "data_offsets span 24 bytes but shape x 2 bytes is 12"},
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
    expect_load_as("NaN weight", "tensor \"wte.weight\" has a non-finite value", "generate -n 1 -p a");
    default_files(&f);
    f.data[53] = INFINITY;
    write_model(&f);
    expect_load_as("Inf weight", "tensor \"ln_f.bias\" has a non-finite value", "eval --text /dev/null");
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
    if (nl_model_load(&m, dir, NULL, &err) == 0 && nl_state_create(&st, m, NULL, &err) == 0) {
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
    nl_model_load(&a, dir, NULL, &err);
    CHECK(a && nl_model_parameters(a) == N_FLOATS, "parameters = %d", N_FLOATS);
    nl_model_free(a);
    float aligned[3], unaligned[3];
    int rc = logits_of_dir(aligned);
    f.pad = 1;  // the data section now starts at an odd offset
    write_model(&f);
    rc |= logits_of_dir(unaligned);
    CHECK(rc == 0 && memcmp(aligned, unaligned, sizeof aligned) == 0, "unaligned data gives bit-identical logits");
}

// NlLoadOptions.shapes_only (info, tokenize, list): every file and shape is checked, no weight is
// read, so a NaN weight loads, with the parameters and the transposed bytes a full load counts, and
// the model cannot run.
static void shapes_only_reads_no_weight(void) {
    Files f;
    default_files(&f);
    f.data[5] = NAN;
    write_model(&f);
    NlLoadOptions shapes = {.shapes_only = 1};
    NlModel *m = NULL, *full = NULL, *bpe = NULL;
    NlState *s = NULL;
    NlError err = {NL_OK, ""};
    CHECK(nl_model_load(&m, dir, &shapes, &err) == 0 && nl_model_parameters(m) == N_FLOATS,
          "a NaN weight loads with shapes_only: %s", err.msg);
    CHECK(m && nl_state_create(&s, m, NULL, &err) != 0 && !s && err.code == NL_ERR_ARG && strstr(err.msg, "cannot run"),
          "its state is refused: '%s'", err.msg);
    expect_cli("info of a NaN weight", NULL, "info");
    nl_model_free(m);
    m = NULL;
    char twin[64];  // a model whose tall float32 head is copied (shakespeare-bpe's, widened)
    const char *bpe_f32 = float32_twin("weights/shakespeare-bpe", twin);
    if (!bpe_f32) return;
    if (nl_model_load(&m, bpe_f32, &shapes, &err) != 0 || nl_model_load(&full, bpe_f32, NULL, &err) != 0) {
        CHECK(0, "%s", err.msg);
    } else {
        CHECK(nl_model_transposed_bytes(m) == nl_model_transposed_bytes(full) &&
                  (nl_model_transposed_bytes(full) > 0) == (nl_blas_tier(nl_blas_core()) >= 2),
              "transposed bytes %zu, a full load's %zu", nl_model_transposed_bytes(m), nl_model_transposed_bytes(full));
        CHECK(nl_model_parameters(m) == nl_model_parameters(full), "the same parameters");
        NlLoadOptions both = {.shapes_only = 1, .no_repack = 1};
        CHECK(nl_model_load(&bpe, bpe_f32, &both, &err) == 0 && nl_model_transposed_bytes(bpe) == 0,
              "with no_repack too: no transposed bytes");
    }
    nl_model_free(m);
    nl_model_free(full);
    nl_model_free(bpe);
    remove_twin(twin);
}

static void paths_that_are_not_models_are_rejected(void) {
    NlModel *m = NULL;
    NlError err;
    CHECK(nl_model_load(&m, "/nonexistent/model", NULL, &err) != 0 && strstr(err.msg, "no such model"), "%s", err.msg);
    Files f;
    default_files(&f);
    write_model(&f);
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(nl_model_load(&m, path, NULL, &err) != 0 && strstr(err.msg, "give the model directory"), "%s", err.msg);
    unlink(path);
    CHECK(nl_model_load(&m, dir, NULL, &err) != 0 && strstr(err.msg, "model.safetensors: cannot open"), "%s", err.msg);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    mkdir(path, 0700);
    CHECK(nl_model_load(&m, dir, NULL, &err) != 0 && strstr(err.msg, "config.json: not a regular file"), "%s", err.msg);
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
        CHECK(nl_model_load(&m, path, NULL, &err) != 0 && strstr(err.msg, cases[i][1]),
              "inline %zu: expected '%s', got '%s'", i, cases[i][1], err.msg);
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
        CHECK(nl_model_load(&m, path, NULL, &err) != 0 && m == NULL && strstr(err.msg, cases[i][2]),
              "recurrent %zu: expected '%s', got '%s'", i, cases[i][2], err.msg);
    }
    NlModel *m = NULL;
    NlError err;
    CHECK(nl_model_load(&m, fixture("lstm-ln.json"), NULL, &err) == 0 && nl_model_config(m)->arch == NL_ARCH_LSTM &&
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
    CHECK(nl_model_load(&m, "/nonexistent/model", NULL, &err) != 0 && err.code == NL_ERR_IO, "missing: %d %s", err.code,
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
    CHECK(nl_model_load(&m, path, NULL, &err) != 0 && err.code == NL_ERR_FORMAT, "bad JSON: %d %s", err.code, err.msg);
    remove(path);
    rmdir(tmp);
    if (nl_model_load(&m, fixture("ln-pre-bias.json"), NULL, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    NlState *s = NULL;
    nl_state_create(&s, m, NULL, &err);
    int ids[] = {1, 2, 3};
    NlEvalResult r;
    CHECK(nl_eval(&(s), 1, ids, 3, &(NlEvalOptions){.stride = 999}, &r, &err) != 0 && err.code == NL_ERR_ARG,
          "stride: %d %s", err.code, err.msg);
    nl_state_free(s);
    nl_model_free(m);
    if (nl_model_load(&m, fixture("overflow.json"), NULL, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    nl_state_create(&s, m, NULL, &err);
    CHECK(nl_eval(&(s), 1, ids, 3, &(NlEvalOptions){.stride = 1}, &r, &err) != 0 && err.code == NL_ERR_NUMERIC,
          "overflow: %d %s", err.code, err.msg);
    nl_state_free(s);
    nl_model_free(m);
    NlSampler *sp = NULL;
    CHECK(nl_sampler_create(&sp, 0, (NlSamplerParams){.temperature = 1, .top_k = 0, .top_p = 1}, 1, &err) != 0 &&
              err.code == NL_ERR_ARG,
          "sampler: %d", err.code);
}

// nl_bind_norm for DyT, on a table of tensors (no config names the norm yet): weight, an optional bias
// and alpha of shape (1). A missing alpha is the binder's one-line error naming it, as is an alpha of
// another shape; LayerNorm takes no alpha, which the loader then refuses as unexpected.
static void dyt_norm_binds_its_alpha_or_names_it_missing(void) {
    float gain[4] = {1, 2, 3, 4}, bias[4] = {0}, alpha[2] = {0.5f, 0.5f};
    NlTensorRef refs[] = {
        {.name = "h.0.ln_1.weight", .ndim = 1, .shape = {4}, .data = gain, .type = NL_DTYPE_F32},
        {.name = "h.0.ln_1.bias", .ndim = 1, .shape = {4}, .data = bias, .type = NL_DTYPE_F32},
        {.name = "h.0.ln_1.alpha", .ndim = 1, .shape = {1}, .data = alpha, .type = NL_DTYPE_F32},
    };
    NlError err = {NL_OK, ""};
    NlBinder b = {refs, 3, "m/model.safetensors", &err};
    NlNormWeights w;
    CHECK(nl_bind_norm(&b, NL_NORM_DYT, 4, "h.0.ln_1", &w) == 0 && w.gain == gain && w.bias == bias &&
              w.alpha == alpha && !w.mean && !w.var && refs[2].used,
          "DyT with bias: %s", err.msg);
    NlTensorRef no_bias[] = {refs[0], refs[2]};
    b = (NlBinder){no_bias, 2, "m/model.safetensors", &err};
    CHECK(nl_bind_norm(&b, NL_NORM_DYT, 4, "h.0.ln_1", &w) == 0 && w.gain == gain && !w.bias && w.alpha == alpha,
          "DyT without bias (Zhu et al.'s Llama): %s", err.msg);
    b = (NlBinder){refs, 2, "m/model.safetensors", &err};
    CHECK(nl_bind_norm(&b, NL_NORM_DYT, 4, "h.0.ln_1", &w) != 0 && err.code == NL_ERR_FORMAT &&
              strcmp(err.msg, "m/model.safetensors: missing tensor \"h.0.ln_1.alpha\"") == 0,
          "no alpha: %d %s", err.code, err.msg);
    refs[2].shape[0] = 2;
    b = (NlBinder){refs, 3, "m/model.safetensors", &err};
    CHECK(nl_bind_norm(&b, NL_NORM_DYT, 4, "h.0.ln_1", &w) != 0 &&
              strcmp(err.msg, "m/model.safetensors: tensor \"h.0.ln_1.alpha\" has shape (2), expected (1)") == 0,
          "alpha of 2: %s", err.msg);
    refs[2].shape[0] = 1, refs[2].used = 0;
    CHECK(nl_bind_norm(&b, NL_NORM_LAYERNORM, 4, "h.0.ln_1", &w) == 0 && !w.alpha && !refs[2].used,
          "LayerNorm took an alpha: %s", err.msg);
}

int main(void) {
    RUN(errors_carry_codes);
    RUN(dyt_norm_binds_its_alpha_or_names_it_missing);
    snprintf(dir, sizeof dir, "/tmp/normlab-loader-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(every_malformed_file_gets_its_own_message);
    RUN(container_level_faults);
    RUN(valid_and_unaligned_models_load_and_agree);
    RUN(shapes_only_reads_no_weight);
    RUN(paths_that_are_not_models_are_rejected);
    RUN(inline_json_models_are_checked);
    RUN(recurrent_models_are_checked);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_loader");
}
