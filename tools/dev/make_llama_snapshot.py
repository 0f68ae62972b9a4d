#!/usr/bin/python3
"""Random Llama models in their outside formats, for the importers' tests and make parity: a Hugging
Face snapshot (LlamaForCausalLM, or Qwen2's qkv bias, or q_norm/k_norm as Qwen3 names them; with
--family qwen3 a Qwen3ForCausalLM, with --family olmo2 an Olmo2ForCausalLM: its post-sublayer norms and
QK-norm over the whole projection; with --family gemma a GemmaForCausalLM: (1 + w) norm gains, GeGLU;
with --family gemma2 a Gemma2ForCausalLM: its sandwich norms, scale and soft-caps, GEMMA2 below)
and llama2.c's .bin (legacy and version 1) and tokenizer.bin, all of the same weights.

    /usr/bin/python3 tools/dev/make_llama_snapshot.py --out DIR [--dim 64 --hidden 96 --layers 2 --heads 4
        --kv-heads 2 --vocab 320 --seq-len 64] [--head-dim N] [--dtype F32|F16|BF16] [--shards N] [--tied]
        [--qk-norm] [--attn-bias] [--family llama|qwen3|olmo2|gemma|gemma2] [--no-prefix] [--seed S]

writes DIR/hf/ (config.json, model.safetensors or N shards with model.safetensors.index.json,
tokenizer.json: a Llama-2-style BPE with byte fallback) and, unless the model has QK-norm, a qkv
bias, a --head-dim other than dim / heads or OLMo 2's block (which llama2.c's files cannot hold),
DIR/llama2c/ (model.bin in the legacy layout, model-v1.bin, tokenizer.bin). Qwen3-0.6B's shape
(H * Dh = 2 D) in small: --dim 64 --heads 4 --kv-heads 2 --head-dim 32 --family qwen3.
The weights are drawn in Meta's layout (RoPE's pairs interleaved, as llama2.c stores
them) and rounded to --dtype first, so every file holds the same numbers; the snapshot's q_proj and
k_proj rows (and q/k biases, q_norm/k_norm gains) are then moved by HF's convert_llama_weights_to_hf.py
permute, in the forward direction (the importer undoes it: the two are written apart). The head
is scaled to 8/sqrt(D), so logits spread by several units and greedy choices do not hang on rounding.
A stories15M-shaped model: --dim 288 --hidden 768 --layers 6 --heads 6 --kv-heads 6 --vocab 32000 --seq-len 256.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import hfweights  # noqa: E402
import llama2c  # noqa: E402
import nltool  # noqa: E402
import spmjson  # noqa: E402
from nltool import ToolError  # noqa: E402

SPACE = "\u2581"
LETTERS = SPACE + "etaoinshrdlucmfwypvbgkjqxzETAOINSHRDLU.,!?'"
DEFAULT = dict(dim=64, hidden=96, layers=2, heads=4, kv_heads=2, vocab=320, seq_len=64)
FAMILIES = {"llama": None, "mistral": ("MistralForCausalLM", "mistral"), "qwen3": ("Qwen3ForCausalLM", "qwen3"),
            "olmo2": ("Olmo2ForCausalLM", "olmo2"), "gemma": ("GemmaForCausalLM", "gemma"),
            "gemma2": ("Gemma2ForCausalLM", "gemma2"), "gemma3": ("Gemma3ForCausalLM", "gemma3_text")}
SANDWICH = ("gemma2", "gemma3")  # their four norms a layer (HF's pre/post attention and feedforward)
# Gemma 2's caps and scale in these snapshots: small enough to bend a random model's scores (about 4)
# and logits (about 8), where the real 50 and 30 would leave them nearly straight; the scalar not Dh
GEMMA2 = {"query_pre_attn_scalar": 24, "attn_logit_softcapping": 3.0, "final_logit_softcapping": 10.0,
          "sliding_window": 4096}
# Gemma 3's: no caps; every second layer global here (the real 6 would leave 2-layer snapshots all
# local), the local layers' base far from the global one so that a mix-up shows
GEMMA3 = {"query_pre_attn_scalar": 24, "attn_logit_softcapping": None, "final_logit_softcapping": None,
          "sliding_window": 4096, "sliding_window_pattern": 2, "rope_local_base_freq": 100.0,
          "rope_theta": 1000000.0}


def pieces(V):
    """V SentencePiece pieces: <unk> <s> </s>, the 256 byte pieces, letters, then pairs and triples of
    them (each made by a merge of two earlier pieces: (piece, its merge or None))."""
    out = [("<unk>", None), ("<s>", None), ("</s>", None)] + [(f"<0x{b:02X}>", None) for b in range(256)]
    out += [(c, None) for c in LETTERS]
    pairs = [(a + b, f"{a} {b}") for a in LETTERS for b in LETTERS]
    triples = [(a + b + c, f"{a + b} {c}") for a in LETTERS for b in LETTERS for c in LETTERS]
    out += pairs + triples
    if V < 259 + len(LETTERS) or V > len(out):
        raise ToolError(f"--vocab {V}: this maker's vocabularies hold {259 + len(LETTERS)} to {len(out)} pieces")
    return out[:V]


def hf_tokenizer(toks):
    """A Llama 2 tokenizer.json (BPE with byte fallback, the Prepend + Replace normalizer) of toks."""
    return spmjson.hf_llama([t for t, _ in toks], [m for _, m in toks if m])


def bin_tokens(toks):
    """tokenizer.bin's (bytes, score) of toks, as tokenizer.py's export writes them: BOS and EOS as
    "\\n<s>\\n" and "\\n</s>\\n", spaces for the visible space; merged pieces scored by rank."""
    out, rank = [], 0
    for t, merge in toks:
        text = {"<s>": "\n<s>\n", "</s>": "\n</s>\n"}.get(t, t.replace(SPACE, " "))
        rank += 1 if merge else 0
        out.append((text.encode("utf-8"), -float(rank) if merge else 0.0))
    return out


def meta_weights(s, dtype, rng):
    """Random weights in Meta's layout (name -> float32, already rounded to dtype): llama2.c's block
    names, one array per layer in lists, plus q_norm/k_norm/bq/bk/bv when asked."""
    D, F, L, H, KVH, V = s["dim"], s["hidden"], s["layers"], s["heads"], s["kv_heads"], s["vocab"]
    Dh, whole = s["head_dim"], s["family"] == "olmo2"

    def w(*shape, std=1.0, mean=0.0):
        return hfweights.rounded(mean + rng.standard_normal(shape) * std, dtype)
    m = {"tok_embeddings": w(V, D), "rms_final": w(D, std=0.1, mean=1.0),
         "wcls": w(V, D, std=8 / np.sqrt(D))}
    if s["tied"]:
        m["tok_embeddings"] = m["wcls"] = w(V, D, std=8 / np.sqrt(D))
    layer = {"rms_att": lambda: w(D, std=0.1, mean=1.0), "wq": lambda: w(H * Dh, D, std=D ** -0.5),
             "wk": lambda: w(KVH * Dh, D, std=D ** -0.5), "wv": lambda: w(KVH * Dh, D, std=D ** -0.5),
             "wo": lambda: w(D, H * Dh, std=(H * Dh) ** -0.5), "rms_ffn": lambda: w(D, std=0.1, mean=1.0),
             "w1": lambda: w(F, D, std=D ** -0.5), "w2": lambda: w(D, F, std=F ** -0.5),
             "w3": lambda: w(F, D, std=D ** -0.5)}
    if s["family"] in SANDWICH:  # the sandwich's output norms
        layer.update(rms_att_post=lambda: w(D, std=0.1, mean=1.0), rms_ffn_post=lambda: w(D, std=0.1, mean=1.0))
    if s["qk_norm"]:  # per head, or OLMo 2's over the whole projection
        layer.update(q_norm=lambda: w(H * Dh if whole else Dh, std=0.2, mean=1.0),
                     k_norm=lambda: w(KVH * Dh if whole else Dh, std=0.2, mean=1.0))
    if s["attn_bias"]:
        layer.update(bq=lambda: w(H * Dh, std=0.3), bk=lambda: w(KVH * Dh, std=0.3), bv=lambda: w(KVH * Dh, std=0.3))
    for name, make in layer.items():
        m[name] = [make() for _ in range(L)]
    return m


def permute(w, heads):
    """convert_llama_weights_to_hf.py's permute, Meta's interleaved rows -> HF's rotate_half halves:
    w.view(heads, Dh/2, 2, in).transpose(1, 2).reshape(out, in)."""
    Dh = w.shape[0] // heads
    return w.reshape((heads, Dh // 2, 2) + w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_state(m, s, prefix="model."):
    """HF's state dict of Meta-layout weights m: q and k (and their biases and norm gains) permuted."""
    H, KVH = s["heads"], s["kv_heads"]
    st = {prefix + "embed_tokens.weight": m["tok_embeddings"], prefix + "norm.weight": m["rms_final"]}
    if not s["tied"]:
        st["lm_head.weight"] = m["wcls"]
    olmo2 = s["family"] == "olmo2"  # its two gains norm the branches' outputs (no input norm)
    names = {"rms_att": "post_attention_layernorm.weight" if olmo2 else "input_layernorm.weight",
             "wq": "self_attn.q_proj.weight", "wk": "self_attn.k_proj.weight",
             "wv": "self_attn.v_proj.weight", "wo": "self_attn.o_proj.weight", "bq": "self_attn.q_proj.bias",
             "bk": "self_attn.k_proj.bias", "bv": "self_attn.v_proj.bias", "q_norm": "self_attn.q_norm.weight",
             "k_norm": "self_attn.k_norm.weight",
             "rms_ffn": "post_feedforward_layernorm.weight" if olmo2 else "pre_feedforward_layernorm.weight"
             if s["family"] in SANDWICH else "post_attention_layernorm.weight",
             "rms_att_post": "post_attention_layernorm.weight", "rms_ffn_post": "post_feedforward_layernorm.weight",
             "w1": "mlp.gate_proj.weight", "w2": "mlp.down_proj.weight", "w3": "mlp.up_proj.weight"}
    heads = {"wq": H, "bq": H, "wk": KVH, "bk": KVH, "q_norm": H if olmo2 else 1, "k_norm": KVH if olmo2 else 1}
    if s["family"] in ("gemma",) + SANDWICH:  # GemmaRMSNorm multiplies by (1 + w): the file holds the gain less 1,
        # on a grid of 1/256, so that w is exact in every --dtype and 1 + w in float32 (HF's sum)
        def less_one(g):
            return (np.round((g - 1) * 256) / 256).astype(np.float32)
        gains = ("rms_att", "rms_ffn", "q_norm", "k_norm")
        m = {k: ([less_one(g) for g in v] if k.startswith(gains) else less_one(v)
                 if k == "rms_final" else v) for k, v in m.items()}
        st[prefix + "norm.weight"] = m["rms_final"]
    for i in range(s["layers"]):
        for k, hf in names.items():
            if k in m:
                a = m[k][i]
                st[f"{prefix}layers.{i}.{hf}"] = permute(a, heads[k]) if k in heads else a
    return st


def hf_config(s):
    arch, kind = FAMILIES[s["family"]] or (("Qwen2ForCausalLM", "qwen2") if s["attn_bias"]
                                          else ("LlamaForCausalLM", "llama"))
    extra = {"head_dim": s["head_dim"]} if s["head_dim"] != s["dim"] // s["heads"] or s["family"] != "llama" else {}
    if s["family"] in ("gemma",) + SANDWICH:
        extra.update(hidden_activation="gelu_pytorch_tanh", hidden_act="gelu",
                     **{"gemma2": GEMMA2, "gemma3": GEMMA3}.get(s["family"], {}))
    if s.get("sliding_window"):
        extra["sliding_window"] = s["sliding_window"]
    return {"architectures": [arch], "model_type": kind,
            "vocab_size": s["vocab"], "hidden_size": s["dim"], "intermediate_size": s["hidden"],
            "num_hidden_layers": s["layers"], "num_attention_heads": s["heads"], "num_key_value_heads": s["kv_heads"],
            "max_position_embeddings": s["seq_len"], "rms_norm_eps": 1e-5, "rope_theta": s.get("rope_theta", 10000.0),
            "rope_scaling": None, "hidden_act": "silu", "tie_word_embeddings": s["tied"], "attention_bias": False,
            "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[s["dtype"]],
            **{k: v for k, v in extra.items() if v is not None or k.endswith("softcapping")}}


def write_hf(folder, st, s, shards=1):
    """An HF snapshot folder of the state dict st: config.json (s["config"] where given, else a Llama's),
    the weights (shards > 1: that many files and model.safetensors.index.json), tokenizer.json."""
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(s.get("config") or hf_config(s), f, indent=2)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(hf_tokenizer(pieces(s["vocab"])), f, ensure_ascii=False)
    if shards <= 1:
        hfweights.write_safetensors(os.path.join(folder, "model.safetensors"), st, s["dtype"])
        return
    names, wmap = list(st), {}
    for k in range(shards):
        file = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: st[n] for n in names[k::shards]}
        hfweights.write_safetensors(os.path.join(folder, file), part, s["dtype"])
        wmap.update({n: file for n in part})
    with open(os.path.join(folder, hfweights.INDEX), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": wmap}, f, indent=2)


def write_llama2c(folder, m, s):
    """llama2.c's model.bin (legacy), model-v1.bin and tokenizer.bin of the Meta-layout weights m."""
    os.makedirs(folder)
    h = {"dim": s["dim"], "hidden_dim": s["hidden"], "n_layers": s["layers"], "n_heads": s["heads"],
         "n_kv_heads": s["kv_heads"], "vocab_size": s["vocab"], "seq_len": s["seq_len"], "shared": s["tied"]}
    blocks = {k: (np.stack(v) if isinstance(v, list) else v) for k, v in m.items()}
    llama2c.write_model(os.path.join(folder, "model.bin"), h, blocks, 0)
    llama2c.write_model(os.path.join(folder, "model-v1.bin"), h, blocks, 1)
    llama2c.write_tokenizer(os.path.join(folder, "tokenizer.bin"), bin_tokens(pieces(s["vocab"])))


def make(out, seed=0, dtype="F32", shards=1, tied=False, qk_norm=False, attn_bias=False, prefix=True,
         family="llama", head_dim=None, sliding_window=None, **shape):
    """Writes out/hf (and out/llama2c when llama2.c can hold the model); returns (shape dict, Meta weights).
    family qwen3, olmo2 and gemma3 have QK-norm always; gemma and gemma2 none. sliding_window: config.json's
    (Gemma 2's and 3's default 4096 otherwise)."""
    s = {**DEFAULT, **shape, "dtype": dtype, "tied": tied,
         "qk_norm": qk_norm or family in ("qwen3", "olmo2", "gemma3"), "attn_bias": attn_bias, "family": family,
         "sliding_window": sliding_window}
    pieces(s["vocab"])
    if s["heads"] % s["kv_heads"]:
        raise ToolError(f"--kv-heads {s['kv_heads']} does not divide --heads {s['heads']}")
    if head_dim is None and s["dim"] % s["heads"]:
        raise ToolError(f"--heads {s['heads']} does not divide --dim {s['dim']}; give --head-dim")
    s["head_dim"] = s["dim"] // s["heads"] if head_dim is None else head_dim
    if s["head_dim"] < 2 or s["head_dim"] % 2:
        raise ToolError(f"head width {s['head_dim']} is not even (RoPE's pairs)")
    m = meta_weights(s, dtype, np.random.default_rng(seed))
    write_hf(os.path.join(out, "hf"), hf_state(m, s, "model." if prefix else ""), s, shards)
    if llama2c_holds(s):
        write_llama2c(os.path.join(out, "llama2c"), m, s)
    return s, m


def llama2c_holds(s):
    """llama2.c's files hold a plain Llama: no QK-norm, qkv bias, head width of its own or OLMo 2 block."""
    return not (s["qk_norm"] or s["attn_bias"] or s["head_dim"] != s["dim"] // s["heads"] or s["family"] != "llama")


def main(argv):
    p = nltool.ArgumentParser(prog="make_llama_snapshot.py", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="a new folder")
    for k, v in DEFAULT.items():
        p.add_argument("--" + k.replace("_", "-"), type=int, default=v)
    p.add_argument("--dtype", choices=("F32", "F16", "BF16"), default="F32")
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--head-dim", type=int, help="each head's width (default dim / heads)")
    p.add_argument("--family", choices=tuple(FAMILIES), default="llama")
    p.add_argument("--sliding-window", type=int, help="config.json's sliding_window (Gemma 2 and 3: 4096)")
    for flag in ("--tied", "--qk-norm", "--attn-bias", "--no-prefix"):
        p.add_argument(flag, action="store_true")
    a = p.parse_args(argv)
    if os.path.lexists(a.out):
        raise ToolError(f"--out {a.out}: exists; name a new folder")
    shape = {k: getattr(a, k) for k in DEFAULT}
    s, _ = make(a.out, a.seed, a.dtype, a.shards, a.tied, a.qk_norm, a.attn_bias, not a.no_prefix, a.family,
                a.head_dim, a.sliding_window, **shape)
    print(f"wrote {a.out}/hf" + (f" and {a.out}/llama2c" if llama2c_holds(s) else ""), file=sys.stderr)


if __name__ == "__main__":
    nltool.run("make_llama_snapshot.py", main, sys.argv[1:])
