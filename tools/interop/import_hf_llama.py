#!/usr/bin/python3
"""Convert a Hugging Face Llama snapshot folder (LlamaForCausalLM; MistralForCausalLM with its
sliding_window; Qwen2ForCausalLM with its qkv bias; Qwen3ForCausalLM with its
QK-norm and head_dim; Olmo2ForCausalLM with its post-sublayer block and QK-norm over the whole
projection; GemmaForCausalLM, its RMSNorm's (1 + w) gains baked in at import as float32 1 + w, the
embeddings times sqrt(D) (embed_scale), GeGLU with tanh's GELU, head_dim, the head tied unless said
otherwise; Gemma2ForCausalLM, Gemma's with placement peri for its sandwich norms, attn_scale
query_pre_attn_scalar^-1/2, its soft-caps and its sliding window on every other layer;
Gemma3ForCausalLM, Gemma 2's with (1 + w) QK-norm per head, no soft-caps, a window on all layers but
each sliding_window_pattern-th, and those local layers' RoPE base rope_local_base_freq) into a
normlab model directory of arch llama (docs/format.md). Run through
tools/interop/import_hf.py, which reads config.json's `architectures`:

    /usr/bin/python3 tools/interop/import_hf.py SNAPSHOT --out weights/tinyllama [--dtype stored] [--ctx N]
    ./normlab generate -m weights/tinyllama -p "Once upon a time"

SNAPSHOT holds config.json; model.safetensors or shards named by model.safetensors.index.json, else
pytorch_model.bin or its shards (read by tools/lib/torchzip.py: nothing in the pickle runs), in F32,
F16 or BF16; and tokenizer.json (copied as it is), else a SentencePiece tokenizer.model (written in
normlab's sentencepiece form, tools/lib/spmjson.py). The weight matrices keep their stored type (F16,
BF16; F64 or parts of mixed types become F32) unless --dtype names one; norm gains and biases are
F32. The context is max_position_embeddings capped at --ctx (default 65536, the engine's limit).
Tensor names come with or without the "model." prefix (a ...ForCausalLM's or a LlamaModel's);
lm_head.weight is present, or absent with tie_word_embeddings; rotary_emb.inv_freq buffers of older
checkpoints are dropped.

RoPE: Hugging Face rotates the halves of each head (rotate_half: dims i and i + Dh/2) and its
convert_llama_weights_to_hf.py permutes Meta's q and k rows to match; normlab rotates Meta's
interleaved pairs (2i, 2i+1). This importer undoes that permute, as llama.cpp's converter does: in
each head (H of q, KVH of k), HF's row a*Dh/2 + i becomes row 2i + a (a = 0, 1). The q/k biases and
the QK-norm gains, per dimension of a head, are moved the same way. q.k and the rotation are then
the same numbers in another order, so the logits are HF's exactly (tools/reference/llama_parity.py).

Refused with one line naming the file and what it says: an unknown architecture, a config that
disagrees with a tensor's shape, hidden_size not divisible by num_attention_heads with no head_dim
given, num_key_value_heads not dividing num_attention_heads, an odd head width or one over 1024,
rope_theta <= 0, rope_scaling set (normlab has no RoPE scaling), an activation other than silu, an
MLP bias, Qwen2's sliding-window attention, Gemma 3's layer_types other than every k-th layer global,
a tensor a Llama does not have or one missing, a NaN or Inf in a weight, a value past
F16's range under --dtype f16, a tokenizer.model that is not a SentencePiece BPE without
normalization, and the shard index's errors (tools/lib/hfweights.py). The written model is then checked by
the engine's loader (normlab info) before it replaces anything, as import_hf_gpt2.py's.
"""
import argparse
import hashlib
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import hfweights  # noqa: E402
import nlformat  # noqa: E402
import nltool  # noqa: E402
import spmjson  # noqa: E402
from import_hf_gpt2 import same_rows  # noqa: E402
from nltool import ToolError  # noqa: E402

ARCHES = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
          "Qwen3ForCausalLM": "qwen3", "Olmo2ForCausalLM": "olmo2", "GemmaForCausalLM": "gemma",
          "Gemma2ForCausalLM": "gemma2", "Gemma3ForCausalLM": "gemma3"}
# Gemma 2's sandwich (peri): input_layernorm, post_attention_layernorm, pre_ and post_feedforward_layernorm
SANDWICH = ("input_layernorm.weight", "post_attention_layernorm.weight", "pre_feedforward_layernorm.weight",
            "post_feedforward_layernorm.weight")
# Gemma's MLP activation (hidden_activation; transformers runs gelu_pytorch_tanh where it is absent)
GEMMA_ACTS = {"gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh", "gelu": "gelu"}
# OLMo 2's block (modeling_olmo2.py): no input norm; each branch's output normalised before its add
# (normlab's post-sublayer placement, docs/comparing.md), and q and k normalised over the whole projection
OLMO2_NORMS = {"ln_1_post.weight": "post_attention_layernorm.weight",
               "ln_2_post.weight": "post_feedforward_layernorm.weight"}
CTX_LIMIT = 1 << 16  # the most positions the engine's config takes (block_size, engine/config.c)


FLT_MAX = 3.4028234663852886e38  # the largest float: the engine keeps RoPE's table in float


def positive(cfg, key, where, default=None):
    v = cfg.get(key)
    v = default if v is None else v  # (HF writes num_key_value_heads: null for "as many as the heads")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ToolError(f"{where}: {key} is " + ("missing" if v is None else f"{v!r}, not a positive integer"))
    return v


def options(p):
    """The options of a Llama-family import, added to the argparse parser p."""
    hfweights.dtype_option(p)
    p.add_argument("--ctx", type=context_cap, default=CTX_LIMIT, metavar="N",
                   help=f"the most positions the model keeps (block_size): max_position_embeddings, capped at N "
                        f"(default {CTX_LIMIT}, the engine's limit)")


def context_cap(text):
    """--ctx's value: a number of positions the engine can hold, else a usage error."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= CTX_LIMIT:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of positions from 1 to {CTX_LIMIT} "
                                         "(the engine's limit)")
    return n


def convert_config(cfg, kind, where, ctx=CTX_LIMIT):
    """normlab's arch llama config from a Llama/Mistral/Qwen2/Qwen3 config.json (a dict), every field
    checked; its context max_position_embeddings capped at ctx."""
    D, H = positive(cfg, "hidden_size", where), positive(cfg, "num_attention_heads", where)
    KVH = positive(cfg, "num_key_value_heads", where, H)
    if cfg.get("head_dim") is None and D % H:
        raise ToolError(f"{where}: num_attention_heads {H} does not divide hidden_size {D}, and no head_dim is given")
    if H % KVH:
        raise ToolError(f"{where}: num_key_value_heads {KVH} does not divide num_attention_heads {H}")
    Dh = D // H if cfg.get("head_dim") is None else positive(cfg, "head_dim", where)
    if Dh % 2 or Dh > 1024:
        raise ToolError(f"{where}: head width {Dh} is " + ("odd: RoPE rotates pairs of dimensions" if Dh % 2
                                                          else "over 1024, the engine's limit"))
    theta = cfg.get("rope_theta", 10000.0)
    if not isinstance(theta, (int, float)) or isinstance(theta, bool) or not 1 <= theta <= FLT_MAX:
        raise ToolError(f"{where}: rope_theta is {theta!r}, not a number in [1, {FLT_MAX:g}] (RoPE's base, a float)")
    if cfg.get("rope_scaling") is not None:
        raise ToolError(f"{where}: rope_scaling {cfg['rope_scaling']!r} is set: normlab runs RoPE unscaled only")
    eps = cfg.get("rms_norm_eps", 1e-6)
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not 0 < eps < 1:
        raise ToolError(f"{where}: rms_norm_eps is {eps!r}, not a number in (0, 1)")
    gemma, sandwich = kind in ("gemma", "gemma2", "gemma3"), kind in ("gemma2", "gemma3")
    for key, want in (("hidden_act", None if gemma else "silu"), ("mlp_bias", False), ("use_sliding_window", False)):
        if want is not None and cfg.get(key, want) != want:
            raise ToolError(f"{where}: {key} is {cfg[key]!r}, not {want!r}: normlab does not run it")
    act = cfg.get("hidden_activation") or "gelu_pytorch_tanh"
    if gemma and act not in GEMMA_ACTS:
        raise ToolError(f"{where}: hidden_activation is {act!r}, not one of {', '.join(GEMMA_ACTS)}")
    bias = kind == "qwen2" or bool(cfg.get("attention_bias", False))  # (Llama's also has o_proj.bias: refused)
    T = min(positive(cfg, "max_position_embeddings", where), ctx)
    olmo2 = kind == "olmo2"
    caps = windows(cfg, kind, where, T)
    if sandwich:  # the scores' factor and the soft-caps
        caps.update({"attn_scale": number(cfg, "query_pre_attn_scalar", where, 1, 1e8) ** -0.5,
                     "attn_softcap": cfg.get("attn_logit_softcapping") and number(cfg, "attn_logit_softcapping",
                                                                                    where, 1e-3, 1e4),
                     "final_softcap": cfg.get("final_logit_softcapping") and number(cfg, "final_logit_softcapping",
                                                                                      where, 1e-3, 1e4)})
    return nlformat.llama_config(
        positive(cfg, "vocab_size", where), positive(cfg, "num_hidden_layers", where), H, KVH, D,
        T, positive(cfg, "intermediate_size", where), eps, theta,
        bool(cfg.get("tie_word_embeddings", gemma)), qk_norm="projection" if olmo2 else kind in ("qwen3", "gemma3"),
        attn_bias=bias, placement="post-sublayer" if olmo2 else "peri" if sandwich else "pre", head_dim=Dh,
        activation=GEMMA_ACTS[act] if gemma else None, embed_scale=math.sqrt(D) if gemma else None, **caps)


def windows(cfg, kind, where, T):
    """The sliding windows (format v7) of Mistral (every layer), Gemma 2 (layers 0, 2, 4, ...) and
    Gemma 3 (every layer but each sliding_window_pattern-th, by its layer_types where it has them;
    the local layers' RoPE base rope_local_base_freq): none where the window covers the context
    (Mistral's and Gemma 2's model is then the Llama it was), else sliding_window and its pattern."""
    if kind not in ("mistral", "gemma2", "gemma3") or (cfg.get("sliding_window") is None and kind == "mistral"):
        return {}
    W = positive(cfg, "sliding_window", where)
    if kind == "gemma3":
        types = cfg.get("layer_types")
        k = number(cfg, "sliding_window_pattern", where, 2, 256, 6) if types is None else None
        for every in range(2, len(types) + 2) if isinstance(types, list) else ():
            if types == ["full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(len(types))]:
                k = k or every
        if k is None or k != int(k):
            raise ToolError(f"{where}: layer_types {str(types)[:80]} is not every k-th layer global, the pattern "
                            "normlab runs")
        return {"sliding_window": W, "sliding_window_pattern": int(k),
                "rope_local_theta": float(number(cfg, "rope_local_base_freq", where, 1, FLT_MAX, 10000.0))}
    return {} if W >= T else {"sliding_window": W, "sliding_window_pattern": 2 if kind == "gemma2" else None}


def number(cfg, key, where, lo, hi, default=None):
    """config.json's key, a number in [lo, hi] (default where it is absent), else a ToolError naming it."""
    v = cfg.get(key, default)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not lo <= v <= hi:
        raise ToolError(f"{where}: {key} is {v!r}, not a number in [{lo:g}, {hi:g}]")
    return v


def interleave(w, heads):
    """HF's rotate_half order of the rows of each of heads heads -> Meta's interleaved pairs: the inverse
    of convert_llama_weights_to_hf.py's permute (w.view(heads, Dh/2, 2, in).transpose(1, 2))."""
    Dh = w.shape[0] // heads
    return np.ascontiguousarray(w.reshape((heads, 2, Dh // 2) + w.shape[1:]).swapaxes(1, 2).reshape(w.shape))


def hf_shapes(c):
    """The HF tensors (names without "model.") a config needs, name -> shape."""
    V, D, H, KVH, F = c["vocab_size"], c["n_embd"], c["n_head"], c["n_kv_head"], c["n_inner"]
    Dh, whole = nlformat.head_width(c), nlformat.qk_norm_kind(c) == "projection"
    want = {"embed_tokens.weight": (V, D), "norm.weight": (D,)}
    norms = OLMO2_NORMS.values() if c["placement"] == "post-sublayer" else SANDWICH if c["placement"] == "peri" else \
        ("input_layernorm.weight", "post_attention_layernorm.weight")
    for i in range(c["n_layer"]):
        p = f"layers.{i}."
        want.update({p + n: (D,) for n in norms})
        want.update({p + "self_attn.q_proj.weight": (H * Dh, D),
                     p + "self_attn.k_proj.weight": (KVH * Dh, D), p + "self_attn.v_proj.weight": (KVH * Dh, D),
                     p + "self_attn.o_proj.weight": (D, H * Dh),
                     p + "mlp.gate_proj.weight": (F, D), p + "mlp.up_proj.weight": (F, D),
                     p + "mlp.down_proj.weight": (D, F)})
        if c["attn_bias"]:
            want.update({p + "self_attn.q_proj.bias": (H * Dh,), p + "self_attn.k_proj.bias": (KVH * Dh,),
                         p + "self_attn.v_proj.bias": (KVH * Dh,)})
        if c["qk_norm"]:
            want.update({p + "self_attn.q_norm.weight": (H * Dh if whole else Dh,),
                         p + "self_attn.k_norm.weight": (KVH * Dh if whole else Dh,)})
    if not c["tie_embeddings"]:
        want["lm_head.weight"] = (V, D)
    return want


def plain_names(src):
    """HF's tensors by their names without "model.", the rotary buffers dropped; lm_head.weight kept."""
    out = {}
    for k, v in src.items():
        name = k[len("model."):] if k.startswith("model.") else k
        if name.endswith("rotary_emb.inv_freq"):
            continue  # RoPE's frequencies, which older checkpoints saved: not a weight
        if name in out:
            raise ToolError(f"{v.path}: holds {name} twice, with and without the model. prefix")
        v.hf_name = k  # its name in the file, for the messages
        out[name] = v
    return out


def finite(t, name):
    """t's values, refused when one is NaN or Inf (a damaged or overflowed F16/BF16 weight)."""
    a = t.load()
    if not np.all(np.isfinite(a)):
        bad = "a NaN" if np.isnan(a).any() else "an Inf"
        raise ToolError(f"{t.path}: tensor {t.hf_name} ({t.dtype}) holds {bad}")
    return a


def convert_tensors(src, config, where, dtype=None, one_plus=False):
    """normlab's arch llama tensors (Deferred: read when written) from HF's, every shape checked first;
    the weight matrices written as hfweights.matrix_type says, the norm gains and biases as float32;
    one_plus: every norm gain is 1 + w (Gemma's)."""
    hf = plain_names(src)
    if "lm_head.weight" in hf and config["tie_embeddings"]:
        head, emb = hf.pop("lm_head.weight"), hf.get("embed_tokens.weight")
        if emb is None or head.shape != emb.shape or not same_rows(head, emb, head.shape[0]):
            raise ToolError(f"{head.path}: lm_head.weight differs from embed_tokens.weight, but {where} says "
                            "tie_word_embeddings: true")
    want = hf_shapes(config)
    for name, shape in want.items():
        if name not in hf:
            raise ToolError(f"the weights lack {name} (or model.{name}), which {where} needs"
                            + (" (tie_word_embeddings is false)" if name == "lm_head.weight" else ""))
        if tuple(hf[name].shape) != shape:
            raise ToolError(f"{hf[name].path}: {hf[name].hf_name} has shape {tuple(hf[name].shape)}, "
                            f"{where} says {shape} "
                            f"(hidden_size {config['n_embd']}, num_attention_heads {config['n_head']}, "
                            f"num_key_value_heads {config['n_kv_head']}, intermediate_size {config['n_inner']}, "
                            f"vocab_size {config['vocab_size']})")
    extra = sorted(set(hf) - set(want))
    if extra:
        raise ToolError(f"{hf[extra[0]].path}: holds tensors that {where} does not describe: "
                        + ", ".join(hf[n].hf_name for n in extra[:4]))
    H, KVH = config["n_head"], config["n_kv_head"]
    qh, kh = (H, KVH) if nlformat.qk_norm_kind(config) == "projection" else (1, 1)  # heads in a QK-norm gain

    def get(name):
        a = finite(hf[name], name)
        # Gemma's RMSNorm multiplies by (1 + w), computed in float32: baked in here, so the gain is 1 + w
        return np.float32(1) + a.astype(np.float32) if one_plus and name.endswith("norm.weight") else a

    def layer_loads(p):
        """normlab's tensor of layer p (HF's "layers.{i}.") -> a function that reads and converts it."""
        a = p + "self_attn."
        return {
            "ln_1.weight": lambda: get(p + "input_layernorm.weight"),
            "ln_2.weight": lambda: get(p + ("pre_feedforward_layernorm.weight" if config["placement"] == "peri"
                                            else "post_attention_layernorm.weight")),
            "attn.c_attn.weight": lambda: np.concatenate([interleave(get(a + "q_proj.weight"), H),
                                                          interleave(get(a + "k_proj.weight"), KVH),
                                                          get(a + "v_proj.weight")]),
            "attn.c_attn.bias": lambda: np.concatenate([interleave(get(a + "q_proj.bias"), H),
                                                        interleave(get(a + "k_proj.bias"), KVH),
                                                        get(a + "v_proj.bias")]),
            "attn.q_norm.weight": lambda: interleave(get(a + "q_norm.weight"), qh),
            "attn.k_norm.weight": lambda: interleave(get(a + "k_norm.weight"), kh),
            **{k: (lambda n=n: get(p + n)) for k, n in OLMO2_NORMS.items()},
            "attn.c_proj.weight": lambda: get(a + "o_proj.weight"),
            "mlp.c_fc.weight": lambda: np.concatenate([get(p + "mlp.gate_proj.weight"), get(p + "mlp.up_proj.weight")]),
            "mlp.c_proj.weight": lambda: get(p + "mlp.down_proj.weight")}

    top = {"wte.weight": "embed_tokens.weight", "ln_f.weight": "norm.weight", "lm_head.weight": "lm_head.weight"}
    matrices = {"attn.c_attn.weight": ("self_attn.q_proj.weight", "self_attn.k_proj.weight",
                                       "self_attn.v_proj.weight"),
                "attn.c_proj.weight": ("self_attn.o_proj.weight",),
                "mlp.c_fc.weight": ("mlp.gate_proj.weight", "mlp.up_proj.weight"),
                "mlp.c_proj.weight": ("mlp.down_proj.weight",)}
    out = {}
    for name, shape in nlformat.llama_tensor_shapes(config).items():
        if name in top:
            load, parts = (lambda n=top[name]: get(n)), ([hf[top[name]]] if name != "ln_f.weight" else None)
        else:
            _, i, rest = name.split(".", 2)
            load = layer_loads(f"layers.{i}.")[rest]
            parts = [hf[f"layers.{i}.{n}"] for n in matrices[rest]] if rest in matrices else None
        if parts is None:  # a norm gain or a bias: float32 always (docs/format.md)
            out[name] = nlformat.Deferred(shape, load)
            continue
        kind = hfweights.matrix_type(parts, dtype)
        names = " | ".join(t.hf_name for t in parts)
        out[name] = nlformat.Deferred(
            shape, lambda f=load, k=kind, w=parts[0].path, n=names: hfweights.storable(f(), k, w, n), kind)
    return out


def detect_qk_norm(config, src):
    """A LlamaForCausalLM that carries q_norm/k_norm (as Qwen3 names them) runs with them, per head."""
    if not config["qk_norm"] and any(k.endswith("self_attn.q_norm.weight") for k in src):
        config["qk_norm"] = True


def read_tokenizer(folder):
    """(the tokenizer.json text, the file it came from): tokenizer.json as it is, else tokenizer.model
    (SentencePiece) in normlab's sentencepiece form (tools/lib/spmjson.py)."""
    tj, tm = os.path.join(folder, "tokenizer.json"), os.path.join(folder, "tokenizer.model")
    if os.path.isfile(tj):
        with open(tj, "rb") as f:
            return f.read().decode("utf-8", "replace"), tj
    if not os.path.isfile(tm):
        raise ToolError(f"{folder}: has neither tokenizer.json nor tokenizer.model")
    with open(tm, "rb") as f:
        data = f.read(64 << 20)
    try:
        return spmjson.dumps(spmjson.read_model_proto(data)), tm
    except ValueError as e:
        raise ToolError(f"{tm}: {e}")


def write_import(a, where, arch, config, tensors, files):
    """The model folder a.out of config and tensors, with the snapshot's tokenizer and its provenance
    (the weight files' names and digest), checked by the engine's loader before it replaces anything."""
    tokenizer, tj = read_tokenizer(a.snapshot)
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            digest.update(hashlib.file_digest(f, "sha256").digest())
    meta = {"source": f"Hugging Face {arch} snapshot (tools/interop/import_hf.py)",
            "source_files": ",".join(os.path.basename(f) for f in files), "source_sha256": digest.hexdigest()}
    shown = {"config.json": where, "tokenizer.json": tj, "model.safetensors": files[0]}
    with nltool.writing(a.out):
        nlformat.write_model_dir(a.out, config, tokenizer, tensors, metadata=meta,
                                 check=lambda new, _: nltool.check_model(new, a.snapshot, shown))


def main(argv, cfg=None, arch=None):
    a = hfweights.snapshot_arguments("import_hf.py", __doc__, argv, "config.json, weights, tokenizer.json",
                                     options)
    where = os.path.join(a.snapshot, "config.json")
    cfg = hfweights.read_json(where) if cfg is None else cfg
    arch = arch or (cfg.get("architectures") or [None])[0]
    if arch not in ARCHES:
        raise ToolError(f"{where}: architecture {arch!r}: this importer reads " + ", ".join(ARCHES))
    config = convert_config(cfg, ARCHES[arch], where, a.ctx)
    src, files = hfweights.read_weights(a.snapshot)
    detect_qk_norm(config, src)
    tensors = convert_tensors(src, config, where, hfweights.DTYPE_FLAGS[a.dtype],
                              ARCHES[arch] in ("gemma", "gemma2", "gemma3"))
    write_import(a, where, arch, config, tensors, files)
    kinds = sorted({t.dtype for t in tensors.values()} - {"F32"})
    capped = cfg["max_position_embeddings"] > config["block_size"]
    print(f"wrote {a.out}: {arch}, {config['n_layer']} layers x {config['n_embd']}, {config['n_head']} heads over "
          f"{config['n_kv_head']} KV heads, vocabulary {config['vocab_size']}, context {config['block_size']}"
          + (f" (max_position_embeddings {cfg['max_position_embeddings']} capped by --ctx)" if capped else "")
          + f", head {'tied' if config['tie_embeddings'] else 'untied'}{', QK-norm' if config['qk_norm'] else ''}"
          + (f", matrices stored {'/'.join(kinds)}" if kinds else ""), file=sys.stderr)


if __name__ == "__main__":
    nltool.run("import_hf.py", main, sys.argv[1:])
