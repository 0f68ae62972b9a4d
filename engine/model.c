// model.c — load and validate a model: config, tokenizer and tensors, from a directory
// (config.json + tokenizer.json + memory-mapped model.safetensors) or one inline .json file.
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE  // madvise
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cblas.h>

#include "bind.h"
#include "dtype.h"
#include "family.h"
#include "fileio.h"
#include "gguf_model.h"
#include "inline_tensors.h"
#include "jsonx.h"
#include "kernels.h"
#include "tokenizer.h"
#include "model.h"
#include "rnn.h"
#include "transformer_weights.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "safetensors.h"

#define CONFIG_CAP ((size_t)1 << 20)
#define INLINE_CAP ((size_t)1 << 30)
// Loads of a model folder that was replaced while it was read (a writer rewriting it faster than
// this can be tried again is told so by the last attempt's error).
#define LOAD_ATTEMPTS 16

#define FAIL(...)                                  \
    do {                                           \
        nl_error(err, NL_ERR_FORMAT, __VA_ARGS__); \
        goto cleanup;                              \
    } while (0)

struct NlModel {
    NlConfig config;
    const NlFamily *family;  // binds and runs the model
    void *weights;  // the family's struct of weights (model.h)
    NlTokenizer *tok;
    StFile st;  // safetensors table (directory models)
    const unsigned char *map;  // model.safetensors mapped (or read, with no_mmap), or NULL
    size_t map_len;
    int map_read;  // 1: map was read into memory (free), 0: mapped (munmap)
    float *owned;  // inline tensors, or an aligned copy of an unaligned data section
    float *transposed;  // the transposed weights nl_linear_plan uses (linear.h), mapped, or NULL
    size_t transposed_bytes;
    int no_repack;  // 1: no transposed copies (NlLoadOptions)
    int shapes_only;  // 1: no weight read: no non-finite check, copies counted, not made (NlLoadOptions)
    void *matrices;  // replacement matrices the model owns (nl_model_set_matrices), or NULL
    int borrowed;  // 1: a copy (nl_model_copy) that borrows tok, st and the file from its base
    size_t n_params;
    size_t other_bytes;  // of its tensors but the family's matrices (norms, biases): float32
    NlMatrixDesc *descs;  // (n_descs) its matrices as stored (NlModelDesc.matrices)
    size_t n_descs;
};

static size_t ref_elems(const NlTensorRef *r) {
    size_t n = 1;
    for (int k = 0; k < r->ndim; k++) n *= r->shape[k];  // products were overflow-checked at parse time
    return n;
}

// Source rows transposed at a time: the pages behind each such slice of a mapped file are handed
// back once it is copied, so a model's resident memory grows by a slice, not by the copies.
#define TRANSPOSE_SLICE_BYTES ((size_t)8 << 20)

// madvise on the whole pages inside [p, p + bytes): advice only.
static void advise(const void *p, size_t bytes, int advice) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + page - 1) / page * page, hi = ((uintptr_t)p + bytes) / page * page;
    if (hi > lo) (void)madvise((void *)lo, hi - lo, advice);
}

// dst (cols, rows) = src (rows, cols) transposed (OpenBLAS's out-of-place copy; alpha 1 is exact),
// a slice of rows at a time, each slice's source pages handed back where they are the mapped file
// (read again from it if they are used after all). dst takes huge pages where one slice is the
// whole matrix: a slice of a bigger one writes a little of every row of dst, which would fault in
// all of its huge pages at once.
static void transpose(const NlModel *m, float *dst, const float *src, size_t rows, size_t cols) {
    size_t slice = TRANSPOSE_SLICE_BYTES / (cols * sizeof(float)) + 1;
    const unsigned char *from = (const unsigned char *)src, *to = from + rows * cols * sizeof(float);
    int mapped = !m->map_read && m->map && from >= m->map && to <= m->map + m->map_len;
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
    advise(dst, rows * cols * sizeof(float), slice >= rows ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
    for (size_t r0 = 0; r0 < rows; r0 += slice) {
        size_t n = rows - r0 < slice ? rows - r0 : slice;
        cblas_somatcopy(CblasRowMajor, CblasTrans, (int)n, (int)cols, 1.0f, src + r0 * cols, (int)cols, dst + r0,
                        (int)rows);
        if (mapped) advise(src + r0 * cols, n * cols * sizeof(float), MADV_DONTNEED);
    }
}

static void free_transposed(NlModel *m) {
    if (m->transposed) munmap(m->transposed, m->transposed_bytes);
    m->transposed = NULL;
    m->transposed_bytes = 0;
}

// The family's matrices (family.h) in a new array (*slots, free() it); NULL: out of memory.
static size_t matrix_slots(NlModel *m, NlMatrixSlot **slots) {
    size_t n = m->family->matrices(m->weights, &m->config, NULL);
    *slots = calloc(n ? n : 1, sizeof **slots);
    return *slots ? m->family->matrices(m->weights, &m->config, *slots) : 0;
}

// Whether the plan wants a float32 copy of lin (a weight stored otherwise runs without one: linear.h).
static int wants_copy(const NlModel *m, const NlLinear *lin, int tier) {
    return !m->no_repack && lin->w.type == NL_DTYPE_F32 && nl_linear_wants_transposed(lin->n_out, lin->n_in, tier);
}

// Sets the plan of every matrix the family plans to the OpenBLAS kernels in use and makes the
// transposed copies the plan asks for (nl_linear_wants_transposed), in one allocation the model
// owns: the file's tensors stay as they are, mapped or read. With shapes_only, only their bytes.
static int make_transposed(NlModel *m, NlError *err) {
    NlMatrixSlot *slots;
    size_t n = matrix_slots(m, &slots), floats = 0;
    int tier = nl_blas_tier(nl_blas_core()), rc = -1;
    if (!slots) {
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    size_t bytes = 0;  // of every matrix: a decode step reads them all
    for (size_t k = 0; k < n; k++)
        bytes += slots[k].lin ? nl_weight_bytes(slots[k].lin->w.type, slots[k].lin->n_out, slots[k].lin->n_in) : 0;
    for (size_t k = 0; k < n; k++) {
        NlLinear *lin = slots[k].lin;
        if (!lin) continue;
        lin->tier = tier;
        lin->streamed = nl_linear_streamed(bytes);
        lin->wt = NULL;
        if (wants_copy(m, lin, tier)) floats += lin->n_out * lin->n_in;
    }
    if (floats && m->shapes_only) {
        m->transposed_bytes = floats * sizeof(float);
        floats = 0;
    }
    if (floats) {
        void *map = mmap(NULL, floats * sizeof(float), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED) {
            nl_error(err, NL_ERR_NOMEM, "out of memory for %zu bytes of transposed weights", floats * sizeof(float));
            goto cleanup;
        }
        m->transposed = map;
        m->transposed_bytes = floats * sizeof(float);
    }
    float *at = m->transposed;
    for (size_t k = 0; k < n; k++) {
        NlLinear *lin = slots[k].lin;
        if (!lin || m->shapes_only || !wants_copy(m, lin, tier)) continue;
        transpose(m, at, nl_weight_f32(lin->w), lin->n_out, lin->n_in);
        lin->wt = at;
        at += lin->n_out * lin->n_in;
    }
    rc = 0;
cleanup:
    free(slots);
    return rc;
}

// Refuses a tensor holding a value that is not finite: a weight, or a block's scale (dtype.h).
static int check_finite(const NlTensorRef *r, size_t count, const char *what, NlError *err) {
    size_t k = r->type == NL_DTYPE_F32 ? nl_first_nonfinite(r->data, count)
                                       : nl_dtype_first_nonfinite(r->data, 1, count, r->type);
    if (k == SIZE_MAX) return 0;
    if (nl_dtype_block(r->type) > 1)
        return nl_error(
            err, NL_ERR_NUMERIC,
            "%s: tensor \"%s\" (%s) has a block scale that is not finite (%g): the block of weights %zu..%zu", what,
            r->name, nl_name(NL_NAMES_DTYPE, r->type), nl_dtype_scale(r->data, r->type, k / NL_QBLOCK), k,
            k + NL_QBLOCK - 1);
    float value;
    nl_dtype_to_f32(&value, (const unsigned char *)r->data + k * nl_dtype_block_bytes(r->type), 1, r->type);
    return nl_error(err, NL_ERR_NUMERIC, "%s: tensor \"%s\" has a non-finite value (%g) at index %zu", what, r->name,
                    value, k);
}

// The bytes of the family's matrices as stored (a tied one once).
static size_t matrix_bytes(NlModel *m) {
    NlMatrixSlot *slots;
    size_t n = matrix_slots(m, &slots), bytes = 0;
    for (size_t k = 0; slots && k < n; k++)
        bytes += nl_weight_bytes(slots[k].at[0]->type, slots[k].rows, slots[k].cols);
    free(slots);
    return bytes;
}

// Lists the model's matrices as stored (NlModelDesc.matrices), again after any was replaced.
static int describe_matrices(NlModel *m, NlError *err) {
    NlMatrixSlot *slots;
    size_t n = matrix_slots(m, &slots);
    free(m->descs);
    m->n_descs = 0;
    m->descs = slots ? calloc(n ? n : 1, sizeof *m->descs) : NULL;
    if (!m->descs) {
        free(slots);
        return nl_error(err, NL_ERR_NOMEM, "out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        NlDType type = slots[k].at[0]->type;
        m->descs[k] =
            (NlMatrixDesc){"", type, slots[k].rows, slots[k].cols, nl_weight_bytes(type, slots[k].rows, slots[k].cols)};
        memcpy(m->descs[k].name, slots[k].name, sizeof m->descs[k].name);
    }
    m->n_descs = n;
    free(slots);
    return 0;
}

// Binds every tensor the config needs, then rejects leftovers and (unless shapes_only) non-finite values.
static int bind_weights(NlModel *m, NlTensorRef *refs, size_t n, const char *what, NlError *err) {
    const NlConfig *c = &m->config;
    NlBinder b = {refs, n, what, err};
    size_t V = (size_t)c->vocab_size, wte_rows = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(refs[i].name, "wte.weight") == 0 && refs[i].ndim >= 1) wte_rows = refs[i].shape[0];
    // A byte-level BPE smaller than the embedding (Qwen's rows past its vocabulary) is padded.
    int pad = nl_tokenizer_info(m->tok).kind == NL_TOKENIZER_BPE && (size_t)nl_tokenizer_size(m->tok) < V &&
              wte_rows == V && V <= INT_MAX;
    if (pad && nl_tokenizer_pad(m->tok, (int)V, err) != 0) return -1;
    if ((size_t)nl_tokenizer_size(m->tok) != V || wte_rows != V) {
        nl_error(err, NL_ERR_FORMAT,
                 "%s: vocabulary sizes disagree: tokenizer has %d entries, "
                 "config vocab_size is %zu, wte.weight has %zu rows",
                 what, nl_tokenizer_size(m->tok), V, wte_rows);
        return -1;
    }
    m->family = nl_family_of(c->arch);
    if (m->family->bind(&m->weights, c, &b) != 0) return -1;
    m->n_params = 0;
    for (size_t i = 0; i < n; i++) {
        if (!refs[i].used) {
            char cut[NL_CUT_BUF];
            nl_error(err, NL_ERR_FORMAT, "%s: unexpected tensor \"%s\" (not used by this config)", what,
                     nl_cut(cut, refs[i].name));
            return -1;
        }
        size_t count = ref_elems(&refs[i]);
        if (!m->shapes_only && check_finite(&refs[i], count, what, err) != 0) return -1;
        m->n_params += count;
        m->other_bytes += nl_weight_bytes(refs[i].type, 1, count);
    }
    m->other_bytes -= matrix_bytes(m);
    return describe_matrices(m, err) != 0 ? -1 : make_transposed(m, err);
}

// ---- directory models

// Reads and parses dir/file (dir open as dirfd); *what names it in messages: the model's short
// name and the file.
static int load_json_file(cJSON **root, int dirfd, const char *dir, const char *file, size_t cap, char *what,
                          size_t whatlen, NlError *err) {
    char *buf = NULL;
    size_t len;
    snprintf(what, whatlen, "%s/%s", dir, file);
    if (nl_file_read_all(dirfd, file, what, cap, &buf, &len, err) != 0) return -1;
    *root = nl_jsonx_parse(buf, len, what, err);
    free(buf);
    return *root ? 0 : -1;
}

// GPT-2's older pair of tokenizer files: vocab.json and merges.txt.
static int load_bpe_pair(NlModel *m, int dirfd, const char *dir, NlError *err) {
    char vocab_path[512], merges_path[512];
    snprintf(vocab_path, sizeof vocab_path, "%s/vocab.json", dir);
    snprintf(merges_path, sizeof merges_path, "%s/merges.txt", dir);
    if (faccessat(dirfd, "merges.txt", F_OK, 0) != 0) {
        nl_error(err, NL_ERR_FORMAT, "%s: has vocab.json but no merges.txt: a BPE needs its merges", dir);
        return -1;
    }
    const char *const names[2] = {"vocab.json", "merges.txt"}, *const whats[2] = {vocab_path, merges_path};
    return nl_tokenizer_bpe_files(&m->tok, dirfd, names, whats, dir, err);
}

// The tokenizer: tokenizer.json (normlab's "char", or Hugging Face's), or else, where there is none,
// the vocab.json + merges.txt of older GPT-2 snapshots.
static int load_tokenizer(NlModel *m, int dirfd, const char *dir, NlError *err) {
    if (faccessat(dirfd, "tokenizer.json", F_OK, 0) != 0 && errno == ENOENT &&
        faccessat(dirfd, "vocab.json", F_OK, 0) == 0)
        return load_bpe_pair(m, dirfd, dir, err);
    cJSON *root = NULL;
    char path[512];
    int rc = load_json_file(&root, dirfd, dir, "tokenizer.json", NL_TOKENIZER_CAP, path, sizeof path, err) != 0 ||
                     nl_tokenizer_from_json(&m->tok, root, path, err) != 0
                 ? -1
                 : 0;
    cJSON_Delete(root);
    return rc;
}

// Reads the weights' file (model.safetensors, a .gguf) whole into memory (no_mmap) or maps it.
static int load_weights_file(NlModel *m, int dirfd, const char *file, const char *what, int no_mmap, NlError *err) {
    if (!no_mmap) return nl_file_map(dirfd, file, what, &m->map, &m->map_len, err);
    char *buf = NULL;
    if (nl_file_read_all(dirfd, file, what, SIZE_MAX - 1, &buf, &m->map_len, err) != 0) return -1;
    m->map = (const unsigned char *)buf;
    m->map_read = 1;
    return 0;
}

static size_t round8(size_t n) { return (n + 7) / 8 * 8; }

// Whether t's values are not on a multiple of their size (4 bytes for float32, 2 for the others).
static int misaligned(const StTensor *t) {
    return (uintptr_t)t->data % (t->type == NL_DTYPE_F32 ? sizeof(float) : sizeof(uint16_t)) != 0;
}

// Whether the directory open as dirfd is no longer the one at path: a writer has swapped a new model
// in (tools/lib/nlformat.py write_model_dir) and may be deleting this one's files as they are read.
static int dir_replaced(int dirfd, const char *path) {
    struct stat held, now;
    if (fstat(dirfd, &held) != 0) return 0;
    return stat(path, &now) != 0 || now.st_dev != held.st_dev || now.st_ino != held.st_ino;
}

// The tensors of m->st bound by the model's family. (A GGUF's are aligned: m->owned is its joined ones.)
static int bind_file(NlModel *m, const char *path, NlError *err) {
    int rc = -1;
    NlTensorRef *refs = calloc(m->st.n + 1, sizeof *refs);
    if (!refs) FAIL("%s: out of memory", path);
    // A tensor whose values are not aligned for their type (a data section that starts unaligned) is
    // read through a copy, all such in one allocation, rather than through bad pointers.
    size_t copied = 0;
    for (size_t i = 0; i < m->st.n; i++) copied += misaligned(&m->st.tensors[i]) ? round8(m->st.tensors[i].nbytes) : 0;
    if (copied && !(m->owned = malloc(copied))) FAIL("%s: out of memory", path);
    unsigned char *at = (unsigned char *)m->owned;
    for (size_t i = 0; i < m->st.n; i++) {
        const StTensor *t = &m->st.tensors[i];
        refs[i] = (NlTensorRef){.name = t->name, .ndim = t->ndim, .data = t->data, .type = t->type};
        memcpy(refs[i].shape, t->shape, sizeof t->shape);
        if (!misaligned(t)) continue;
        refs[i].data = memcpy(at, t->data, t->nbytes);
        at += round8(t->nbytes);
    }
    rc = bind_weights(m, refs, m->st.n, path, err);
cleanup:
    free(refs);
    return rc;
}

// A model directory: its three files are opened through one descriptor of the directory, so they
// come from one directory even when it is replaced while they are read (tools rename a new
// directory into place). On a failure, *replaced says whether that directory was swapped away
// meanwhile, so that the caller reads the model again from the path.
static int load_dir(NlModel *m, const char *dir, const NlLoadOptions *opts, int *replaced, NlError *err) {
    cJSON *cfg = NULL;
    char path[512], cut[NL_CUT_BUF];
    const char *name = nl_cut(cut, dir);
    int rc = -1, dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) FAIL("%s: cannot open: %s", name, strerror(errno));
    if (load_json_file(&cfg, dirfd, name, "config.json", CONFIG_CAP, path, sizeof path, err) != 0 ||
        nl_config_from_json(&m->config, cfg, path, err) != 0)
        goto cleanup;
    if (load_tokenizer(m, dirfd, name, err) != 0) goto cleanup;
    snprintf(path, sizeof path, "%s/model.safetensors", name);
    if (load_weights_file(m, dirfd, "model.safetensors", path, opts && opts->no_mmap, err) != 0 ||
        nl_st_parse(&m->st, m->map, m->map_len, path, err) != 0 || bind_file(m, path, err) != 0)
        goto cleanup;
    rc = 0;
cleanup:
    *replaced = rc != 0 && dirfd >= 0 && dir_replaced(dirfd, dir);
    if (dirfd >= 0) close(dirfd);
    cJSON_Delete(cfg);
    return rc;
}

// A GGUF file (llama.cpp's, gguf_model.h): mapped, its parts bound as a folder's tensors are.
static int load_gguf(NlModel *m, const char *path, const NlLoadOptions *opts, NlError *err) {
    char cut[NL_CUT_BUF];
    const char *what = nl_cut(cut, path);
    NlGgufParts g;
    if (load_weights_file(m, AT_FDCWD, path, what, opts && opts->no_mmap, err) != 0 ||
        nl_gguf_model(&g, m->map, m->map_len, what, err) != 0)
        return -1;
    m->config = g.config;
    m->tok = g.tok;
    m->st = g.st;
    m->owned = g.owned;
    return bind_file(m, what, err);
}

// ---- single-file models with inline tensors

static int parse_inline(NlModel *m, const char *buf, size_t len, const char *what, NlError *err) {
    static const char *const KEYS[] = {"config", "tokenizer", "tensors", NULL};
    cJSON *root = NULL;
    NlTensorRef *refs = NULL;
    int rc = -1;
    if (!(root = nl_jsonx_parse(buf, len, what, err))) goto cleanup;
    if (!cJSON_IsObject(root)) FAIL("%s: must be a JSON object with config, tokenizer and tensors", what);
    if (nl_jsonx_only_keys(root, KEYS, what, err) != 0) goto cleanup;
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(root, "config");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, "tokenizer");
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    if (!cfg || !tok || !cJSON_IsObject(tensors))
        FAIL("%s: needs \"config\", \"tokenizer\" and a \"tensors\" object", what);
    if (nl_config_from_json(&m->config, cfg, what, err) != 0 || nl_tokenizer_from_json(&m->tok, tok, what, err) != 0)
        goto cleanup;
    size_t n;
    if (nl_inline_tensors_read(tensors, &refs, &n, &m->owned, what, err) != 0) goto cleanup;
    if (bind_weights(m, refs, n, what, err) != 0) goto cleanup;
    rc = 0;
cleanup:
    cJSON_Delete(root);
    free(refs);
    return rc;
}

static int load_inline(NlModel *m, const char *path, NlError *err) {
    char *buf = NULL, cut[NL_CUT_BUF];
    size_t len;
    const char *what = nl_cut(cut, path);
    if (nl_file_read_all(AT_FDCWD, path, what, INLINE_CAP, &buf, &len, err) != 0) return -1;
    int rc = parse_inline(m, buf, len, what, err);
    free(buf);
    return rc;
}

// ---- entry points on bytes in memory (fuzzing, tests)

int nl_model_load_inline(NlModel **out, const char *buf, size_t len, const char *what, NlError *err) {
    NlModel *m = calloc(1, sizeof *m);
    *out = NULL;
    if (!m) return nl_error(err, NL_ERR_NOMEM, "out of memory");
    if (parse_inline(m, buf, len, what, err) != 0) {
        nl_model_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

// ---- public API

int nl_model_load(NlModel **out, const char *path, const NlLoadOptions *opts, NlError *err) {
    *out = NULL;
    struct stat st;
    char cut[NL_CUT_BUF];
    const char *name = nl_cut(cut, path);
    if (strlen(path) + sizeof "/model.safetensors" > PATH_MAX)
        return nl_error(err, NL_ERR_ARG, "%s: path too long (%zu bytes; at most %zu with the file names inside)", name,
                        strlen(path), (size_t)PATH_MAX - sizeof "/model.safetensors");
    if (stat(path, &st) != 0)
        return nl_error(err, NL_ERR_IO, "%s: no such model (expected a model directory, a .gguf or a .json file)",
                        name);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t blen = strlen(base);
    if (S_ISREG(st.st_mode) && (strcmp(base, "config.json") == 0 || strcmp(base, "tokenizer.json") == 0 ||
                                (blen >= 12 && strcmp(base + blen - 12, ".safetensors") == 0))) {
        nl_error(err, NL_ERR_IO, "%s: give the model directory that holds this file, not the file", name);
        return -1;
    }
    if (S_ISREG(st.st_mode) && blen >= 4 && strcmp(base + blen - 4, ".bin") == 0) {  // what llama2.c users try
        nl_error(err, NL_ERR_FORMAT,
                 "%s: a .bin file, not a normlab model: llama2.c's? tools/interop/import_llama2c.py %s --tokenizer "
                 "tokenizer.bin --out MODEL_DIR brings one in",
                 name, name);
        return -1;
    }
    int gguf = S_ISREG(st.st_mode) && (nl_gguf_is_file(path) || (blen >= 5 && !strcmp(base + blen - 5, ".gguf")));
    if (S_ISDIR(st.st_mode)) {
        char cfg[PATH_MAX + 16];
        snprintf(cfg, sizeof cfg, "%s/config.json", path);
        if (access(cfg, F_OK) != 0) {
            nl_error(err, NL_ERR_IO, "%s: not a model directory (it has no config.json)", name);
            return -1;
        }
    }
    // A folder swapped for a new model while it was read is read again from its path, so a reader
    // gets the old model or the new one, never a failure the swap caused (docs/files.md).
    for (int attempt = 1;; attempt++) {
        NlModel *m = calloc(1, sizeof *m);
        if (!m) return nl_error(err, NL_ERR_NOMEM, "out of memory");
        int replaced = 0;
        m->no_repack = opts && opts->no_repack;
        m->shapes_only = opts && opts->shapes_only;
        int rc = S_ISDIR(st.st_mode) ? load_dir(m, path, opts, &replaced, err)
                 : gguf              ? load_gguf(m, path, opts, err)
                                     : load_inline(m, path, err);
        if (rc == 0) {
            *out = m;
            return 0;
        }
        nl_model_free(m);
        if (!replaced || attempt == LOAD_ATTEMPTS) return -1;
    }
}

void nl_model_free(NlModel *m) {
    if (!m) return;
    if (m->family) m->family->free_weights(m->weights);
    if (!m->borrowed) {
        nl_tokenizer_free(m->tok);
        nl_st_free(&m->st);
        if (m->map_read) free((void *)m->map);
        else nl_file_unmap(m->map, m->map_len);
        free(m->owned);
    }
    free_transposed(m);
    free(m->matrices);
    free(m->descs);
    free(m);
}

const NlConfig *nl_model_config(const NlModel *m) { return &m->config; }
const NlFamily *nl_model_family(const NlModel *m) { return m->family; }
const void *nl_model_weights(const NlModel *m) { return m->weights; }
const NlTransformerWeights *nl_model_transformer_weights(const NlModel *m) {
    return m->family == nl_family_transformer() ? m->weights : NULL;
}
const NlRecurrentWeights *nl_model_recurrent_weights(const NlModel *m) {
    return m->family == nl_family_lstm() || m->family == nl_family_gru() ? m->weights : NULL;
}
const NlTokenizer *nl_model_tokenizer(const NlModel *m) { return m->tok; }
size_t nl_model_parameters(const NlModel *m) { return m->n_params; }
size_t nl_model_weight_bytes(const NlModel *m) { return m->other_bytes + matrix_bytes((NlModel *)m); }
size_t nl_model_transposed_bytes(const NlModel *m) { return m->transposed_bytes; }
int nl_model_shapes_only(const NlModel *m) { return m->shapes_only; }

size_t nl_model_matrices(const NlModel *m, NlMatrix *out) {
    NlMatrixSlot *slots;
    size_t n = m->family->matrices(m->weights, &m->config, NULL);
    if (!out) return n;
    n = matrix_slots((NlModel *)m, &slots);  // (the slots' pointers are only read)
    if (!slots) return 0;
    for (size_t k = 0; k < n; k++) {
        out[k] = (NlMatrix){*slots[k].at[0], slots[k].rows, slots[k].cols, slots[k].cls, slots[k].positions, ""};
        memcpy(out[k].name, slots[k].name, sizeof out[k].name);
    }
    free(slots);
    return n;
}

int nl_model_copy(NlModel **out, const NlModel *base, NlError *err) {
    NlModel *m = malloc(sizeof *m);
    *out = NULL;
    if (!m) {
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    *m = *base;  // the table of pointers below is the copy's own; the rest is base's
    m->borrowed = 1;
    m->transposed = NULL;  // its linears use base's copies (and count their bytes) until nl_model_set_matrices
    m->matrices = NULL;
    m->descs = NULL;
    if (!(m->weights = base->family->copy_weights(base->weights, &base->config))) {
        free(m);
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    if (describe_matrices(m, err) != 0) {
        nl_model_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

int nl_model_set_matrices(NlModel *m, const NlWeight *data, void *owned, NlError *err) {
    NlMatrixSlot *slots;
    size_t n = matrix_slots(m, &slots);
    if (!slots) {
        free(owned);
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        for (int h = 0; h < 2 && data[k].data && slots[k].at[h]; h++) *slots[k].at[h] = data[k];
    free(slots);
    free(m->matrices);
    m->matrices = owned;
    free_transposed(m);
    return describe_matrices(m, err) != 0 ? -1 : make_transposed(m, err);
}

size_t nl_model_matrix_descs(const NlModel *m, const NlMatrixDesc **descs) {
    *descs = m->descs;
    return m->n_descs;
}

const StFile *nl_model_file(const NlModel *m) { return m->map ? &m->st : NULL; }

size_t nl_model_metadata(const NlModel *m, const char *const **keys, const char *const **values) {
    *keys = (const char *const *)m->st.meta_keys;
    *values = (const char *const *)m->st.meta_values;
    return m->st.n_meta;
}
