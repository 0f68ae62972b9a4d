// gguf_model.c — a GGUF file's model: config and tensors (gguf_model.h), its tokenizer from
// gguf_tokenizer.c. The architectures llama (Llama, Mistral without a window, SmolLM2, TinyLlama), qwen2,
// qwen3, olmo2, gemma, gemma2, gemma3, phi2, gptneox and gpt2 (ARCHES); F32, F16, BF16, Q8_0 and Q4_0
// tensors as they are, Q4_1, Q5_0, Q5_1 and the K-quants Q2_K to Q6_K widened to float32.
#define _POSIX_C_SOURCE 200809L
#include "gguf_model.h"

#include <fcntl.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "dtype.h"
#include "gguf.h"
#include "gguf_tokenizer.h"
#include "model.h"
#include "tokenizer.h"

#define CTX_LIMIT 65536  // the most positions the engine's config takes (config.c)
#define LAYER_MAX 4096

int nl_gguf_is_file(const char *path) {
    char magic[4];
    int fd = open(path, O_RDONLY | O_CLOEXEC), is = 0;
    if (fd < 0) return 0;
    is = read(fd, magic, 4) == 4 && memcmp(magic, "GGUF", 4) == 0;
    close(fd);
    return is;
}

// ---- the architectures

// How a tensor's one part holds q, k and v: not at all; per head q, k, v (GPT-NeoX's query_key_value,
// re-laid as all q, all k, all v); or as all q, all k, all v already (phi2's older attn_qkv).
enum { QKV_NONE, QKV_PER_HEAD, QKV_FUSED };

// One of normlab's tensors of a layer: its name, the GGUF tensors (blk.N. less) it is made of, rows
// joined, and how many of those parts lead with q's and k's rows (or gains), which a file in HF's
// rotate_half order (llama.cpp's NEOX RoPE) needs re-paired into Meta's interleaved pairs.
typedef struct {
    const char *ours, *parts[3];
    int rope_parts;
    int qkv;  // QKV_*
    int optional;  // absent: left out (the head tied to token_embd)
} LayerRow;

// The tensors outside the layers: an RMSNorm model's, and a LayerNorm model's with their biases.
static const LayerRow TOP_ROWS[] = {{"wte.weight", {"token_embd.weight"}, 0, 0, 0},
                                    {"ln_f.weight", {"output_norm.weight"}, 0, 0, 0},
                                    {"lm_head.weight", {"output.weight"}, 0, 0, 1}};
static const LayerRow LN_TOP_ROWS[] = {{"wte.weight", {"token_embd.weight"}, 0, 0, 0},
                                       {"ln_f.weight", {"output_norm.weight"}, 0, 0, 0},
                                       {"ln_f.bias", {"output_norm.bias"}, 0, 0, 0},
                                       {"lm_head.weight", {"output.weight"}, 0, 0, 0},
                                       {"lm_head.bias", {"output.bias"}, 0, 0, 1}};

static const LayerRow BASE_ROWS[] = {
    {"ln_1.weight", {"attn_norm.weight"}, 0, 0, 0},
    {"attn.c_attn.weight", {"attn_q.weight", "attn_k.weight", "attn_v.weight"}, 2, 0, 0},  // (rows q, k, v)
    {"attn.c_proj.weight", {"attn_output.weight"}, 0, 0, 0},
    {"ln_2.weight", {"ffn_norm.weight"}, 0, 0, 0},
    {"mlp.c_fc.weight", {"ffn_gate.weight", "ffn_up.weight"}, 0, 0, 0},
    {"mlp.c_proj.weight", {"ffn_down.weight"}, 0, 0, 0},
};
static const LayerRow QWEN2_ROWS[] = {
    {"ln_1.weight", {"attn_norm.weight"}, 0, 0, 0},
    {"attn.c_attn.weight", {"attn_q.weight", "attn_k.weight", "attn_v.weight"}, 2, 0, 0},
    {"attn.c_attn.bias", {"attn_q.bias", "attn_k.bias", "attn_v.bias"}, 2, 0, 0},
    {"attn.c_proj.weight", {"attn_output.weight"}, 0, 0, 0},
    {"ln_2.weight", {"ffn_norm.weight"}, 0, 0, 0},
    {"mlp.c_fc.weight", {"ffn_gate.weight", "ffn_up.weight"}, 0, 0, 0},
    {"mlp.c_proj.weight", {"ffn_down.weight"}, 0, 0, 0},
};
static const LayerRow QWEN3_ROWS[] = {
    {"ln_1.weight", {"attn_norm.weight"}, 0, 0, 0},
    {"attn.c_attn.weight", {"attn_q.weight", "attn_k.weight", "attn_v.weight"}, 2, 0, 0},
    {"attn.q_norm.weight", {"attn_q_norm.weight"}, 1, 0, 0},
    {"attn.k_norm.weight", {"attn_k_norm.weight"}, 1, 0, 0},
    {"attn.c_proj.weight", {"attn_output.weight"}, 0, 0, 0},
    {"ln_2.weight", {"ffn_norm.weight"}, 0, 0, 0},
    {"mlp.c_fc.weight", {"ffn_gate.weight", "ffn_up.weight"}, 0, 0, 0},
    {"mlp.c_proj.weight", {"ffn_down.weight"}, 0, 0, 0},
};
static const LayerRow OLMO2_ROWS[] = {
    // no input norms: each branch's output normalised (post-sublayer)
    {"attn.c_attn.weight", {"attn_q.weight", "attn_k.weight", "attn_v.weight"}, 2, 0, 0},
    {"attn.q_norm.weight", {"attn_q_norm.weight"}, 1, 0, 0},
    {"attn.k_norm.weight", {"attn_k_norm.weight"}, 1, 0, 0},
    {"attn.c_proj.weight", {"attn_output.weight"}, 0, 0, 0},
    {"ln_1_post.weight", {"post_attention_norm.weight"}, 0, 0, 0},
    {"mlp.c_fc.weight", {"ffn_gate.weight", "ffn_up.weight"}, 0, 0, 0},
    {"mlp.c_proj.weight", {"ffn_down.weight"}, 0, 0, 0},
    {"ln_2_post.weight", {"post_ffw_norm.weight"}, 0, 0, 0},
};
static const LayerRow GEMMA2_ROWS[] = {
    // the sandwich: each branch's input and output normalised (peri)
    {"ln_1.weight", {"attn_norm.weight"}, 0, 0, 0},
    {"attn.c_attn.weight", {"attn_q.weight", "attn_k.weight", "attn_v.weight"}, 2, 0, 0},
    {"attn.c_proj.weight", {"attn_output.weight"}, 0, 0, 0},
    {"ln_1_post.weight", {"post_attention_norm.weight"}, 0, 0, 0},
    {"ln_2.weight", {"ffn_norm.weight"}, 0, 0, 0},
    {"mlp.c_fc.weight", {"ffn_gate.weight", "ffn_up.weight"}, 0, 0, 0},
    {"mlp.c_proj.weight", {"ffn_down.weight"}, 0, 0, 0},
    {"ln_2_post.weight", {"post_ffw_norm.weight"}, 0, 0, 0},
};
static const LayerRow GEMMA3_ROWS[] = {
    {"ln_1.weight", {"attn_norm.weight"}, 0, 0, 0},
    {"attn.c_attn.weight", {"attn_q.weight", "attn_k.weight", "attn_v.weight"}, 2, 0, 0},
    {"attn.q_norm.weight", {"attn_q_norm.weight"}, 1, 0, 0},
    {"attn.k_norm.weight", {"attn_k_norm.weight"}, 1, 0, 0},
    {"attn.c_proj.weight", {"attn_output.weight"}, 0, 0, 0},
    {"ln_1_post.weight", {"post_attention_norm.weight"}, 0, 0, 0},
    {"ln_2.weight", {"ffn_norm.weight"}, 0, 0, 0},
    {"mlp.c_fc.weight", {"ffn_gate.weight", "ffn_up.weight"}, 0, 0, 0},
    {"mlp.c_proj.weight", {"ffn_down.weight"}, 0, 0, 0},
    {"ln_2_post.weight", {"post_ffw_norm.weight"}, 0, 0, 0},
};
static const LayerRow PHI2_ROWS[] = {
    // one LayerNorm read by attention and MLP side by side
    {"ln_1.weight", {"attn_norm.weight"}, 0, 0, 0},
    {"ln_1.bias", {"attn_norm.bias"}, 0, 0, 0},
    {"attn.c_attn.weight", {"attn_q.weight", "attn_k.weight", "attn_v.weight"}, 2, 0, 0},
    {"attn.c_attn.bias", {"attn_q.bias", "attn_k.bias", "attn_v.bias"}, 2, 0, 0},
    {"attn.c_proj.weight", {"attn_output.weight"}, 0, 0, 0},
    {"attn.c_proj.bias", {"attn_output.bias"}, 0, 0, 0},
    {"mlp.c_fc.weight", {"ffn_up.weight"}, 0, 0, 0},
    {"mlp.c_fc.bias", {"ffn_up.bias"}, 0, 0, 0},
    {"mlp.c_proj.weight", {"ffn_down.weight"}, 0, 0, 0},
    {"mlp.c_proj.bias", {"ffn_down.bias"}, 0, 0, 0},
};
static const LayerRow PHI2_QKV_ROWS[] = {
    // phi2 as llama.cpp's older converter wrote it: q, k and v as one attn_qkv (all q rows, all k, all v)
    {"ln_1.weight", {"attn_norm.weight"}, 0, 0, 0},
    {"ln_1.bias", {"attn_norm.bias"}, 0, 0, 0},
    {"attn.c_attn.weight", {"attn_qkv.weight"}, 1, QKV_FUSED, 0},
    {"attn.c_attn.bias", {"attn_qkv.bias"}, 1, QKV_FUSED, 0},
    {"attn.c_proj.weight", {"attn_output.weight"}, 0, 0, 0},
    {"attn.c_proj.bias", {"attn_output.bias"}, 0, 0, 0},
    {"mlp.c_fc.weight", {"ffn_up.weight"}, 0, 0, 0},
    {"mlp.c_fc.bias", {"ffn_up.bias"}, 0, 0, 0},
    {"mlp.c_proj.weight", {"ffn_down.weight"}, 0, 0, 0},
    {"mlp.c_proj.bias", {"ffn_down.bias"}, 0, 0, 0},
};
static const LayerRow GPTNEOX_ROWS[] = {
    {"ln_1.weight", {"attn_norm.weight"}, 0, 0, 0},
    {"ln_1.bias", {"attn_norm.bias"}, 0, 0, 0},
    {"attn.c_attn.weight", {"attn_qkv.weight"}, 1, QKV_PER_HEAD, 0},
    {"attn.c_attn.bias", {"attn_qkv.bias"}, 1, QKV_PER_HEAD, 0},
    {"attn.c_proj.weight", {"attn_output.weight"}, 0, 0, 0},
    {"attn.c_proj.bias", {"attn_output.bias"}, 0, 0, 0},
    {"ln_2.weight", {"ffn_norm.weight"}, 0, 0, 0},
    {"ln_2.bias", {"ffn_norm.bias"}, 0, 0, 0},
    {"mlp.c_fc.weight", {"ffn_up.weight"}, 0, 0, 0},
    {"mlp.c_fc.bias", {"ffn_up.bias"}, 0, 0, 0},
    {"mlp.c_proj.weight", {"ffn_down.weight"}, 0, 0, 0},
    {"mlp.c_proj.bias", {"ffn_down.bias"}, 0, 0, 0},
};
static const LayerRow GPT2_TOP_ROWS[] = {
    {"wte.weight", {"token_embd.weight"}, 0, 0, 0},   {"wpe.weight", {"position_embd.weight"}, 0, 0, 0},
    {"ln_f.weight", {"output_norm.weight"}, 0, 0, 0}, {"ln_f.bias", {"output_norm.bias"}, 0, 0, 0},
    {"lm_head.weight", {"output.weight"}, 0, 0, 1},
};
static const LayerRow GPT2_ROWS[] = {
    // c_attn's q, k, v rows one after the other, as GPT-2's c_attn
    {"ln_1.weight", {"attn_norm.weight"}, 0, 0, 0},          {"ln_1.bias", {"attn_norm.bias"}, 0, 0, 0},
    {"attn.c_attn.weight", {"attn_qkv.weight"}, 0, 0, 0},    {"attn.c_attn.bias", {"attn_qkv.bias"}, 0, 0, 0},
    {"attn.c_proj.weight", {"attn_output.weight"}, 0, 0, 0}, {"attn.c_proj.bias", {"attn_output.bias"}, 0, 0, 0},
    {"ln_2.weight", {"ffn_norm.weight"}, 0, 0, 0},           {"ln_2.bias", {"ffn_norm.bias"}, 0, 0, 0},
    {"mlp.c_fc.weight", {"ffn_up.weight"}, 0, 0, 0},         {"mlp.c_fc.bias", {"ffn_up.bias"}, 0, 0, 0},
    {"mlp.c_proj.weight", {"ffn_down.weight"}, 0, 0, 0},     {"mlp.c_proj.bias", {"ffn_down.bias"}, 0, 0, 0},
};
#define N_OF(r) (sizeof r / sizeof r[0])

// The architectures read, by llama.cpp's names: whether q's and k's rows are in HF's rotate_half order
// (llama.cpp's NEOX RoPE: its converter leaves them as HF has them), the config fields they set, and
// a layer's tensors. Gemma's norms hold 1 + w already (llama.cpp's converter adds the 1), as normlab's.
typedef struct {
    const char *name;
    int neox, attn_bias;
    const char *qk_norm, *placement;  // config.json's: qk_norm false, "head" or "projection"
    int gemma;  // 1, 2, 3: Gemma's GeGLU with tanh's GELU, the embeddings times sqrt(D); 2 and 3 their attention
    const char *layer_norm;  // LayerNorm with biases, every linear biased, a plain MLP of this activation
    int head_bias;
    const LayerRow *top, *rows;
    size_t n_top, n_rows;
    int positions;  // GPT-2's learned positions: normlab's transformer arch, no RoPE
    const LayerRow *fused;  // (n_rows) the rows instead, where the file has blk.0.attn_qkv (NULL: none)
} Arch;

#define RMS_ROWS(r) NULL, 0, TOP_ROWS, r, 3, N_OF(r), 0, NULL
static const Arch ARCHES[] = {
    {"llama", 0, 0, NULL, "pre", 0, RMS_ROWS(BASE_ROWS)},
    {"qwen2", 1, 1, NULL, "pre", 0, RMS_ROWS(QWEN2_ROWS)},
    {"qwen3", 1, 0, "head", "pre", 0, RMS_ROWS(QWEN3_ROWS)},
    {"olmo2", 1, 0, "projection", "post-sublayer", 0, RMS_ROWS(OLMO2_ROWS)},
    {"gemma", 1, 0, NULL, "pre", 1, RMS_ROWS(BASE_ROWS)},
    {"gemma2", 1, 0, NULL, "peri", 2, RMS_ROWS(GEMMA2_ROWS)},
    {"gemma3", 1, 0, "head", "peri", 3, RMS_ROWS(GEMMA3_ROWS)},
    {"phi2", 1, 0, NULL, "parallel-shared", 0, "gelu_tanh", 1, LN_TOP_ROWS, PHI2_ROWS, 5, N_OF(PHI2_ROWS), 0,
     PHI2_QKV_ROWS},
    {"gptneox", 1, 0, NULL, "parallel", 0, "gelu", 0, LN_TOP_ROWS, GPTNEOX_ROWS, 4, N_OF(GPTNEOX_ROWS), 0, NULL},
    {"gpt2", 0, 0, NULL, "pre", 0, "gelu_tanh", 0, GPT2_TOP_ROWS, GPT2_ROWS, N_OF(GPT2_TOP_ROWS), N_OF(GPT2_ROWS), 1,
     NULL},
};
#define N_ARCHES (sizeof ARCHES / sizeof ARCHES[0])

// ---- config.json's fields

// Gemma 2's and 3's attention as llama.cpp runs it: scores times 1/sqrt(Dh) (1/sqrt(D/H) for the 27B
// models, told by their layer count, 46 and 62: llama.cpp's rule, as their query_pre_attn_scalar);
// Gemma 2's soft-caps; the sliding window on all layers but each k-th (Gemma 2: k 2, its window 4096
// where the file gives none, none written where it covers the context; Gemma 3: k 6 unless
// attention.sliding_window_pattern says, the local layers' RoPE base rope.freq_base_swa, else 10000).
static int gemma_attention(cJSON *root, const GgufMeta *m, const Arch *a, int64_t L, int64_t D_H, int64_t Dh,
                           int64_t T) {
    int two = a->gemma == 2;
    int64_t W, k;
    double attn_cap, final_cap, local;
    if (nl_gguf_get_int(m, "attention.sliding_window", 1, !two, 1, INT32_MAX, 4096, &W) ||
        nl_gguf_get_int(m, "attention.sliding_window_pattern", 1, 0, 2, 256, two ? 2 : 6, &k) ||
        nl_gguf_get_float(m, "attn_logit_softcapping", 0, 0, &attn_cap) ||
        nl_gguf_get_float(m, "final_logit_softcapping", 0, 0, &final_cap) ||
        nl_gguf_get_float(m, "rope.freq_base_swa", 0, 1e4, &local))
        return -1;
    cJSON_AddNumberToObject(root, "attn_scale", 1.0 / sqrt((double)(L == (two ? 46 : 62) ? D_H : Dh)));
    if (two && attn_cap > 0) cJSON_AddNumberToObject(root, "attn_softcap", attn_cap);
    if (two && final_cap > 0) cJSON_AddNumberToObject(root, "final_softcap", final_cap);
    if (two && W >= T) return 0;
    cJSON_AddNumberToObject(root, "sliding_window", (double)W);
    cJSON_AddNumberToObject(root, "sliding_window_pattern", (double)k);
    if (!two) cJSON_AddNumberToObject(root, "rope_local_theta", local);
    return 0;
}

// GPT-2's: normlab's transformer arch (docs/gpt2.md), its positions learned (context_length of them).
static int gpt2_config(NlConfig *config, const GgufMeta *m, int tied, int64_t V, int64_t L, int64_t H, int64_t D,
                       int64_t T, int64_t F, double eps) {
    cJSON *root = cJSON_CreateObject(), *format = cJSON_AddObjectToObject(root, "format");
    cJSON_AddStringToObject(format, "name", "normlab");
    cJSON_AddNumberToObject(format, "version", 1);
    const char *const keys[] = {"vocab_size", "n_layer", "n_head", "n_embd", "block_size", "n_inner"};
    const double values[] = {(double)V, (double)L, (double)H, (double)D, (double)T, (double)F};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) cJSON_AddNumberToObject(root, keys[i], values[i]);
    cJSON_AddStringToObject(root, "norm", "layernorm");
    cJSON_AddStringToObject(root, "placement", "pre");
    cJSON_AddNumberToObject(root, "norm_eps", eps);
    cJSON_AddStringToObject(root, "activation", "gelu_tanh");  // (gelu_new)
    cJSON_AddBoolToObject(root, "bias", 1);
    cJSON_AddBoolToObject(root, "tie_embeddings", tied);
    int rc = nl_config_from_json(config, root, m->what, m->err);
    cJSON_Delete(root);
    return rc;
}

static int read_config(NlConfig *config, const GgufMeta *m, const Arch *a, int tied, size_t n_tokens) {
    int64_t L, T, D, F, H, KVH, V, Dh, rot;
    double eps, theta;
    char name[160];
    if (nl_gguf_get_int(m, "block_count", 1, 1, 1, LAYER_MAX, 0, &L) ||
        nl_gguf_get_int(m, "context_length", 1, 1, 1, INT64_MAX, 0, &T) ||
        nl_gguf_get_int(m, "embedding_length", 1, 1, 1, 1 << 20, 0, &D) ||
        nl_gguf_get_int(m, "feed_forward_length", 1, 1, 1, 1 << 22, 0, &F) ||
        nl_gguf_get_int(m, "attention.head_count", 1, 1, 1, 1 << 12, 0, &H) ||
        nl_gguf_get_int(m, "attention.head_count_kv", 1, 0, 1, 1 << 12, H, &KVH) ||
        nl_gguf_get_int(m, "vocab_size", 1, 0, 1, 1 << 30, (int64_t)n_tokens, &V) ||
        nl_gguf_get_int(m, "attention.key_length", 1, 0, 2, 1024, D / H, &Dh) ||
        nl_gguf_get_int(m, "rope.dimension_count", 1, 0, 2, 1024, Dh, &rot) ||
        nl_gguf_get_float(m, a->layer_norm ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon", 1, 0,
                          &eps) ||
        nl_gguf_get_float(m, "rope.freq_base", 0, 1e4, &theta))
        return -1;
    if (a->layer_norm ? rot > Dh || rot % 2 : rot != Dh)
        return nl_error(m->err, NL_ERR_FORMAT, "%s: %s.rope.dimension_count %lld: not %s of the head's %lld", m->what,
                        m->arch, (long long)rot, a->layer_norm ? "an even count" : "all", (long long)Dh);
    if (nl_gguf_key(m, "rope.scaling.type", 1, name, sizeof name) ||
        nl_gguf_key(m, "rope.scaling.factor", 1, name, sizeof name))
        return nl_error(m->err, NL_ERR_FORMAT, "%s: has %s: normlab runs RoPE unscaled only", m->what, name);
    if (a->positions) return gpt2_config(config, m, tied, V, L, H, D, T, F, eps);
    cJSON *root = cJSON_CreateObject(), *format = cJSON_AddObjectToObject(root, "format");
    cJSON_AddStringToObject(format, "name", "normlab");
    cJSON_AddNumberToObject(format, "version",
                            a->gemma > 1                                             ? 7
                            : Dh != D / H || a->qk_norm || a->gemma || a->layer_norm ? 6
                            : strcmp(a->placement, "pre")                            ? 5
                                                                                     : 4);
    cJSON_AddStringToObject(root, "arch", "llama");
    const char *const keys[] = {"vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd", "block_size", "n_inner"};
    const double values[] = {
        (double)V, (double)L, (double)H, (double)KVH, (double)D, (double)(T < CTX_LIMIT ? T : CTX_LIMIT), (double)F};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) cJSON_AddNumberToObject(root, keys[i], values[i]);
    cJSON_AddStringToObject(root, "norm", a->layer_norm ? "layernorm" : "rmsnorm");
    int parallel = 1;  // (GPT-NeoX's use_parallel_residual: false runs its two LayerNorms one after the other)
    if (nl_gguf_get_bool(m, strcmp(a->name, "gptneox") ? "" : "gptneox.use_parallel_residual", 1, &parallel)) {
        cJSON_Delete(root);
        return -1;
    }
    cJSON_AddStringToObject(root, "placement", parallel ? a->placement : "pre");
    cJSON_AddNumberToObject(root, "norm_eps", eps);
    cJSON_AddNumberToObject(root, "rope_theta", theta);
    cJSON_AddBoolToObject(root, "tie_embeddings", tied);
    if (a->qk_norm && a->qk_norm[0] == 'p') cJSON_AddStringToObject(root, "qk_norm", a->qk_norm);
    else cJSON_AddBoolToObject(root, "qk_norm", a->qk_norm != NULL);
    cJSON_AddBoolToObject(root, "attn_bias", a->attn_bias);
    if (Dh != D / H) cJSON_AddNumberToObject(root, "head_dim", (double)Dh);
    if (a->gemma) {
        cJSON_AddStringToObject(root, "activation", "gelu_tanh");
        cJSON_AddNumberToObject(root, "embed_scale", sqrt((double)D));
    }
    if (a->layer_norm) {
        if (rot < Dh) cJSON_AddNumberToObject(root, "rope_dims", (double)rot);
        cJSON_AddStringToObject(root, "activation", a->layer_norm);
        cJSON_AddBoolToObject(root, "gated_mlp", 0);
        cJSON_AddBoolToObject(root, "bias", 1);
        if (a->head_bias) cJSON_AddBoolToObject(root, "head_bias", 1);
    }
    int rc = a->gemma > 1 ? gemma_attention(root, m, a, L, D / H, Dh, T < CTX_LIMIT ? T : CTX_LIMIT) : 0;
    if (rc == 0) rc = nl_config_from_json(config, root, m->what, m->err);
    cJSON_Delete(root);
    return rc;
}

// ---- the tensors

static NlDType dtype_of(unsigned type) {
    switch (type) {
    case GGUF_T_F16: return NL_DTYPE_F16;
    case GGUF_T_BF16: return NL_DTYPE_BF16;
    case GGUF_T_Q8_0: return NL_DTYPE_Q8_0;
    case GGUF_T_Q4_0: return NL_DTYPE_Q4_0;
    default: return NL_DTYPE_F32;
    }
}

typedef struct {
    const GgufFile *f;
    const GgufTensor **order;  // (n_tensors) by name, for bsearch
    unsigned char *used;  // (n_tensors)
    const LayerRow *top, *rows;  // (n_top) the tensors outside the layers, (n_rows) a layer's
    size_t n_top, n_rows, head, rot;  // head: Dh; rot: the rows of a head RoPE turns
    size_t v_rows;  // v's rows of c_attn (KVH Dh): what a fused q, k, v re-pairs not
    int neox;  // q and k in rotate_half order
    const char *what;
    NlError *err;
} Tensors;

static int by_name(const void *a, const void *b) {
    return strcmp((*(const GgufTensor *const *)a)->name, (*(const GgufTensor *const *)b)->name);
}

static const GgufTensor *find(const Tensors *ts, const char *name) {
    GgufTensor key = {.name = (char *)name};
    const GgufTensor *k = &key, *const *hit = bsearch(&k, ts->order, ts->f->n_tensors, sizeof *ts->order, by_name);
    return hit ? *hit : NULL;
}

// What normlab's j-th tensor is made of.
typedef struct {
    char ours[96], parts[3][64];
    size_t n_parts;
    int rope_parts;  // the leading parts re-paired (none unless the file is in rotate_half order)
    int qkv;  // QKV_*: a part of q, k and v rows, v's last once laid out
    size_t copy;  // the bytes it takes in the owned buffer (0: read in place)
    int widen;  // a part is of a type normlab widens (dtype.h's NlGgmlBlock): all widened to float32 as copied
} Plan;

// The ggml block type normlab widens that a GGUF type is, or -1 (a type read as it is).
static int widened_of(unsigned type) {
    switch (type) {
    case GGUF_T_Q4_1: return NL_GQ_Q4_1;
    case GGUF_T_Q5_0: return NL_GQ_Q5_0;
    case GGUF_T_Q5_1: return NL_GQ_Q5_1;
    case GGUF_T_Q2_K: return NL_GQ_Q2_K;
    case GGUF_T_Q3_K: return NL_GQ_Q3_K;
    case GGUF_T_Q4_K: return NL_GQ_Q4_K;
    case GGUF_T_Q5_K: return NL_GQ_Q5_K;
    case GGUF_T_Q6_K: return NL_GQ_Q6_K;
    default: return -1;
    }
}

// A part's values: its elements (n_dims at most 2).
static size_t elements(const GgufTensor *t) { return (size_t)t->ne[0] * (size_t)t->ne[1]; }

// normlab's tensor from the plan's parts (rows joined: one type and width, 1 or 2 dims); copied where
// it is joined, re-paired, of a type normlab widens (to float32: it has no kernel for it yet), or not
// aligned for its type.
static int make_tensor(Tensors *ts, StTensor *t, Plan *p) {
    const GgufTensor *part[3] = {NULL, NULL, NULL};
    size_t rows = 0;
    for (size_t k = 0; k < p->n_parts; k++) {
        if (!(part[k] = find(ts, p->parts[k])))
            return nl_error(ts->err, NL_ERR_FORMAT, "%s: lacks the tensor %s", ts->what, p->parts[k]);
        ts->used[part[k] - ts->f->tensors] = 1;
        p->widen |= widened_of(part[k]->type) >= 0;
    }
    for (size_t k = 0; k < p->n_parts; k++) {  // (widened, the parts may be of several types: Q4_K_M's q and v)
        if (part[k]->n_dims > 2 || part[k]->n_dims != part[0]->n_dims ||
            (part[k]->type != part[0]->type && !p->widen) || (part[k]->n_dims == 2 && part[k]->ne[0] != part[0]->ne[0]))
            return nl_error(ts->err, NL_ERR_FORMAT, "%s: tensor %s: not of %s's type, dims and width", ts->what,
                            p->parts[k], p->parts[0]);
        size_t n = part[k]->n_dims == 2 ? (size_t)part[k]->ne[1] : (size_t)part[k]->ne[0];
        if (k < (size_t)p->rope_parts &&
            (ts->head < 2 || n % (ts->head * (p->qkv == QKV_PER_HEAD ? 3 : 1)) || (p->qkv && n <= ts->v_rows)))
            return nl_error(ts->err, NL_ERR_FORMAT, "%s: tensor %s: its %zu rows are not whole heads of %zu", ts->what,
                            p->parts[k], n, ts->head);
        rows += n;
    }
    *t = (StTensor){
        .ndim = part[0]->n_dims, .type = p->widen ? NL_DTYPE_F32 : dtype_of(part[0]->type), .data = part[0]->data};
    t->shape[0] = rows;  // (a vector's: its values, joined)
    t->shape[1] = t->ndim == 2 ? (size_t)part[0]->ne[0] : 0;
    for (size_t k = 0; k < p->n_parts; k++) t->nbytes += p->widen ? 4 * elements(part[k]) : part[k]->nbytes;
    p->copy = p->n_parts > 1 || p->rope_parts || p->qkv || p->widen || (uintptr_t)t->data % 4 ? t->nbytes : 0;
    if (!(t->name = malloc(strlen(p->ours) + 1))) return nl_error(ts->err, NL_ERR_NOMEM, "%s: out of memory", ts->what);
    strcpy(t->name, p->ours);
    return 0;
}

// Tensor t's values widened to float32 into dst, row by row (a widened type's as ggml dequantizes it, the
// others as dtype.h reads them); returns the bytes written.
static size_t widen(unsigned char *dst, const GgufTensor *t) {
    float *out = (float *)(void *)dst;
    size_t cols = (size_t)t->ne[0], rows = (size_t)t->ne[1], row_bytes = t->nbytes / rows;
    int block = widened_of(t->type);
    for (size_t r = 0; r < rows; r++) {
        if (block >= 0) nl_ggml_block_to_f32(out + r * cols, t->data + r * row_bytes, cols, (NlGgmlBlock)block);
        else nl_dtype_to_f32(out + r * cols, t->data + r * row_bytes, cols, dtype_of(t->type));
    }
    return 4 * cols * rows;
}

// rows (n of row_bytes each) in heads of `head` rows, each head's first rot from rotate_half's halves
// into (2i, 2i+1) pairs: row a rot/2 + i of a head becomes row 2i + a; the rows past rot stay. tmp:
// room for a head's rows.
static void pair_rows(unsigned char *rows, size_t n, size_t row_bytes, size_t head, size_t rot, unsigned char *tmp) {
    for (size_t h = 0; h + head <= n; h += head) {
        unsigned char *at = rows + h * row_bytes;
        memcpy(tmp, at, rot * row_bytes);
        for (size_t i = 0; i < rot / 2; i++)
            for (size_t a = 0; a < 2; a++)
                memcpy(at + (2 * i + a) * row_bytes, tmp + (a * rot / 2 + i) * row_bytes, row_bytes);
    }
}

// n rows of row_bytes that run per head as q, k, v (head rows each), re-laid as every head's q, then
// every head's k, then every head's v. tmp: room for all n.
static void split_qkv(unsigned char *rows, size_t n, size_t row_bytes, size_t head, unsigned char *tmp) {
    size_t heads = n / (3 * head), block = head * row_bytes;
    memcpy(tmp, rows, n * row_bytes);
    for (size_t h = 0; h < heads; h++)
        for (size_t j = 0; j < 3; j++) memcpy(rows + (j * heads + h) * block, tmp + (3 * h + j) * block, block);
}

// The copied tensors' bytes, into one owned buffer: joined, and their q and k rows re-paired.
static int join(Tensors *ts, StFile *st, void **owned, const Plan *plans, size_t total) {
    size_t widest = 0;
    for (size_t i = 0; i < st->n; i++) widest = st->tensors[i].nbytes > widest ? st->tensors[i].nbytes : widest;
    unsigned char *at = *owned = malloc(total ? total : 1), *tmp = malloc(widest ? widest : 1);
    int rc = at && tmp ? 0 : nl_error(ts->err, NL_ERR_NOMEM, "%s: out of memory", ts->what);
    for (size_t i = 0; i < st->n && rc == 0; i++) {
        if (!plans[i].copy) continue;
        const unsigned char *start = at;
        for (size_t k = 0; k < plans[i].n_parts; k++) {
            const GgufTensor *p = find(ts, plans[i].parts[k]);
            size_t n = p->n_dims == 2 ? (size_t)p->ne[1] : (size_t)p->ne[0], bytes = p->nbytes;
            if (plans[i].widen) bytes = widen(at, p);
            else memcpy(at, p->data, bytes);
            if (plans[i].qkv == QKV_PER_HEAD) split_qkv(at, n, bytes / n, ts->head, tmp);
            if (k < (size_t)plans[i].rope_parts)  // (of all q, k, v rows: those before v's)
                pair_rows(at, plans[i].qkv ? n - ts->v_rows : n, bytes / n, ts->head, ts->rot, tmp);
            at += bytes;
        }
        st->tensors[i].data = start;
        at += (size_t)(-(uintptr_t)at % 8);  // (each copy on 8 bytes)
    }
    free(tmp);
    return rc;
}

// The plan of normlab's j-th tensor: those outside the layers, then each layer's rows.
static void plan_of(const Tensors *ts, size_t j, Plan *p, int *optional) {
    int top = j < ts->n_top;
    const LayerRow *row = top ? &ts->top[j] : &ts->rows[(j - ts->n_top) % ts->n_rows];
    size_t layer = top ? 0 : (j - ts->n_top) / ts->n_rows;
    *p = (Plan){.rope_parts = ts->neox ? row->rope_parts : 0, .qkv = row->qkv};
    *optional = row->optional;
    if (top) snprintf(p->ours, sizeof p->ours, "%s", row->ours);
    else snprintf(p->ours, sizeof p->ours, "h.%zu.%s", layer, row->ours);
    for (; p->n_parts < 3 && row->parts[p->n_parts]; p->n_parts++) {
        char *part = p->parts[p->n_parts];
        if (top) snprintf(part, sizeof p->parts[0], "%s", row->parts[p->n_parts]);
        else snprintf(part, sizeof p->parts[0], "blk.%zu.%s", layer, row->parts[p->n_parts]);
    }
}

static int read_tensors(StFile *st, void **owned, const GgufFile *f, const NlConfig *c, const Arch *a, const char *what,
                        NlError *err) {
    Tensors ts = {.f = f,
                  .order = calloc(f->n_tensors + 1, sizeof *ts.order),
                  .used = calloc(f->n_tensors + 1, 1),
                  .top = a->top,
                  .rows = a->rows,
                  .n_top = a->n_top,
                  .n_rows = a->n_rows,
                  .head = nl_head_width(c),
                  .rot = c->rope_dims ? (size_t)c->rope_dims : nl_head_width(c),
                  .v_rows = (size_t)c->n_kv_head * nl_head_width(c),
                  .neox = a->neox,
                  .what = what,
                  .err = err};
    size_t n = ts.n_top + ts.n_rows * (size_t)c->n_layer, total = 0;
    Plan *plans = calloc(n, sizeof *plans);
    int rc = ts.order && ts.used && plans && (st->tensors = calloc(n, sizeof *st->tensors))
                 ? 0
                 : nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
    for (size_t i = 0; i < f->n_tensors && rc == 0; i++) ts.order[i] = &f->tensors[i];
    if (rc == 0) qsort(ts.order, f->n_tensors, sizeof *ts.order, by_name);
    if (rc == 0 && a->fused && find(&ts, "blk.0.attn_qkv.weight")) ts.rows = a->fused;
    for (size_t i = 0; i < n && rc == 0; i++) {
        Plan *p = &plans[st->n];  // the tensor's place: i, less those left out
        int optional;
        plan_of(&ts, i, p, &optional);
        if (optional && !find(&ts, p->parts[0])) continue;  // (no output: the head is tied to token_embd)
        if ((rc = make_tensor(&ts, &st->tensors[st->n], p)) == 0) st->n++;
        total += p->copy + 8;
    }
    for (size_t i = 0; i < f->n_tensors && rc == 0; i++)
        if (!ts.used[i])
            rc = nl_error(err, NL_ERR_FORMAT, "%s: tensor %s is not one of this %d-layer model's", what,
                          f->tensors[i].name, c->n_layer);
    if (rc == 0) rc = join(&ts, st, owned, plans, total);
    free(ts.order);
    free(ts.used);
    free(plans);
    return rc;
}

// ---- the model

int nl_gguf_model(NlGgufParts *out, const unsigned char *buf, size_t len, const char *what, NlError *err) {
    const char *names[N_ARCHES + 1] = {NULL};
    for (size_t i = 0; i < N_ARCHES; i++) names[i] = ARCHES[i].name;
    GgufFile f;
    *out = (NlGgufParts){0};
    if (nl_gguf_parse(&f, buf, len, what, err) != 0) return -1;
    GgufMeta m = {&f, "", what, err};
    const GgufKv *tokens = nl_gguf_find(&f, "tokenizer.ggml.tokens");
    int arch, rc = nl_gguf_get_choice(
                  &m, "general.architecture", names,
                  "normlab's GGUF reader runs llama (Llama, Mistral, SmolLM2, TinyLlama), qwen2, qwen3, olmo2, "
                  "gemma, gemma2, gemma3, phi2, gptneox and gpt2 so far",
                  &arch);
    int tied = 1;
    for (size_t i = 0; i < f.n_tensors; i++) tied &= strcmp(f.tensors[i].name, "output.weight") != 0;
    if (rc == 0) {
        m.arch = ARCHES[arch].name;
        rc = read_config(&out->config, &m, &ARCHES[arch], tied, tokens ? tokens->count : 0);
    }
    if (rc == 0) rc = nl_gguf_tokenizer(&out->tok, &m);
    if (rc == 0) rc = read_tensors(&out->st, &out->owned, &f, &out->config, &ARCHES[arch], what, err);
    nl_gguf_free(&f);
    if (rc != 0) {
        nl_tokenizer_free(out->tok);
        nl_st_free(&out->st);
        free(out->owned);
        *out = (NlGgufParts){0};
    }
    return rc;
}
