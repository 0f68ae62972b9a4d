#!/usr/bin/python3
"""An independent float64 forward of a Hugging Face Llama snapshot, written from HF's layout and
modeling_llama.py's formulas (not from normlab's format or its importer): separate q/k/v/o and
gate/up/down projections, rotate_half RoPE (dims i and i + Dh/2 of a head), repeat_kv's grouped
heads (query head i reads KV head i // (H/KVH)), head_dim where config.json gives one (Qwen3's, H*Dh
other than D), q_norm/k_norm when the snapshot carries them: over each head's Dh before RoPE (Qwen3),
or over the whole q and k projections before the heads are split (OLMo 2, modeling_olmo2.py, whose
gains are H*Dh and KVH*Dh wide), Qwen2's q/k/v biases, OLMo 2's block (model_type olmo2: no input
norm; post_attention_layernorm on the attention's output and post_feedforward_layernorm on the MLP's,
each before its residual add), Gemma's (model_type gemma: (1 + w) RMSNorm gains, the embeddings times
sqrt(D), gate and up through tanh's GELU), Gemma 2's (model_type gemma2: Gemma's, with the sandwich
norms input/post_attention/pre_feedforward/post_feedforward_layernorm, scores times
query_pre_attn_scalar^-1/2 and soft-capped at attn_logit_softcapping, logits at
final_logit_softcapping; its even layers see their last sliding_window positions), Gemma 3's
(model_type gemma3_text: Gemma 2's without soft-caps, q_norm/k_norm per head with (1 + w) gains, a
window on every layer but each sliding_window_pattern-th (or as layer_types says), those local layers
rotated at rope_local_base_freq), Mistral's window on every layer, and the head tied to embed_tokens
when lm_head.weight is absent.
numpy only; the weights are read by tools/lib/hfweights.py (F32, F16, BF16; one file or shards),
widened to float64.

    /usr/bin/python3 tools/reference/llama_reference.py SNAPSHOT --ids 1,52,300 [--out logits.npy]

prints one JSON array of V logits per position (as normlab logits does), or saves the (n, V) array.
"""
import argparse
import json
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
from nltool import ToolError  # noqa: E402


class Snapshot:
    """An HF Llama snapshot's config and its weights in float64, by HF's names less "model."."""

    def __init__(self, folder):
        self.cfg = hfweights.read_json(os.path.join(folder, "config.json"))
        if self.cfg.get("rope_scaling") is not None:
            raise ToolError(f"{folder}: rope_scaling is set; this reference runs plain RoPE only")
        src, _ = hfweights.read_weights(folder)
        self.w = {(k[6:] if k.startswith("model.") else k): t.load().astype(np.float64) for k, t in src.items()}


def rmsnorm(x, g, eps):
    """LlamaRMSNorm: x / sqrt(mean(x^2) + eps) * g, over the last axis."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def gelu_tanh(x):
    """gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rope(x, theta):
    """apply_rotary_pos_emb on x (heads, n, Dh): x cos + rotate_half(x) sin, HF's halves."""
    Dh, n = x.shape[-1], x.shape[-2]
    inv_freq = 1.0 / theta ** (np.arange(0, Dh, 2, dtype=np.float64) / Dh)
    freqs = np.outer(np.arange(n, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)


def sliding_layers(c):
    """The indices of the layers with a sliding window, as each family's modeling file decides."""
    L, kind = c["num_hidden_layers"], c.get("model_type")
    if c.get("sliding_window") is None or kind not in ("mistral", "gemma2", "gemma3_text"):
        return set()
    if kind == "gemma2":
        return {i for i in range(L) if i % 2 == 0}
    if kind == "gemma3_text":
        types = c.get("layer_types") or ["full_attention" if (i + 1) % c.get("sliding_window_pattern", 6) == 0
                                         else "sliding_attention" for i in range(L)]
        return {i for i in range(L) if types[i] == "sliding_attention"}
    return set(range(L))


def logits(snap, ids):
    """(n, V) float64 logits of the ids at positions 0..n-1."""
    c, w = snap.cfg, snap.w
    D, H = c["hidden_size"], c["num_attention_heads"]
    KVH = c.get("num_key_value_heads") or H
    Dh, eps, theta = c.get("head_dim") or D // H, c.get("rms_norm_eps", 1e-6), c.get("rope_theta", 10000.0)
    n = len(ids)
    olmo2, sandwich = c.get("model_type") == "olmo2", c.get("model_type") in ("gemma2", "gemma3_text")
    gemma = sandwich or c.get("model_type") == "gemma"
    scale = c["query_pre_attn_scalar"] ** -0.5 if sandwich else 1 / math.sqrt(Dh)
    cap, final_cap = (c.get("attn_logit_softcapping"), c.get("final_logit_softcapping")) if sandwich else (None, None)
    local, W = sliding_layers(c), c.get("sliding_window") or 0
    local_theta = c.get("rope_local_base_freq", theta) if c.get("model_type") == "gemma3_text" else theta
    x = w["embed_tokens.weight"][ids]
    if gemma:  # GemmaRMSNorm's (1 + w) gains, the embeddings times sqrt(D), a GeGLU MLP with tanh's GELU
        w = {k: (1.0 + v if k.endswith("norm.weight") else v) for k, v in w.items()}
        x = x * math.sqrt(D)

    def act(g):
        return gelu_tanh(g) if gemma else g / (1 + np.exp(-g))
    mask = np.triu(np.full((n, n), -np.inf), 1)
    outside = mask + np.tril(np.full((n, n), -np.inf), -W) if W else mask  # key j seen when i - W < j <= i
    for i in range(c["num_hidden_layers"]):
        p = f"layers.{i}."

        def proj(name, h):
            y = h @ w[p + name + ".weight"].T
            return y + w[p + name + ".bias"] if p + name + ".bias" in w else y
        h = x if olmo2 else rmsnorm(x, w[p + "input_layernorm.weight"], eps)
        q, k, v = proj("self_attn.q_proj", h), proj("self_attn.k_proj", h), proj("self_attn.v_proj", h)
        qn, kn = w.get(p + "self_attn.q_norm.weight"), w.get(p + "self_attn.k_norm.weight")
        if qn is not None and qn.shape[0] == H * Dh != Dh:  # OLMo 2's: over the whole projection
            q, k = rmsnorm(q, qn, eps), rmsnorm(k, kn, eps)
        q = q.reshape(n, H, Dh).transpose(1, 0, 2)  # (H, n, Dh)
        k = k.reshape(n, KVH, Dh).transpose(1, 0, 2)
        v = v.reshape(n, KVH, Dh).transpose(1, 0, 2)
        if qn is not None and qn.shape[0] == Dh:  # Qwen3's: each head's
            q, k = rmsnorm(q, qn, eps), rmsnorm(k, kn, eps)
        q, k = rope(q, local_theta if i in local else theta), rope(k, local_theta if i in local else theta)
        k, v = np.repeat(k, H // KVH, axis=0), np.repeat(v, H // KVH, axis=0)  # repeat_kv
        att = q @ k.transpose(0, 2, 1) * scale
        att = (np.tanh(att / cap) * cap if cap else att) + (outside if i in local else mask)  # capped, then masked
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = proj("self_attn.o_proj", (att @ v).transpose(1, 0, 2).reshape(n, H * Dh))
        if sandwich:  # the sandwich: each branch's input and output normalised
            x = x + rmsnorm(y, w[p + "post_attention_layernorm.weight"], eps)
            h = rmsnorm(x, w[p + "pre_feedforward_layernorm.weight"], eps)
            g = proj("mlp.gate_proj", h)
            x = x + rmsnorm(proj("mlp.down_proj", act(g) * proj("mlp.up_proj", h)),
                            w[p + "post_feedforward_layernorm.weight"], eps)
            continue
        if olmo2:
            x = x + rmsnorm(y, w[p + "post_attention_layernorm.weight"], eps)
            g = proj("mlp.gate_proj", x)
            y = proj("mlp.down_proj", act(g) * proj("mlp.up_proj", x))
            x = x + rmsnorm(y, w[p + "post_feedforward_layernorm.weight"], eps)
            continue
        x = x + y
        h = rmsnorm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = proj("mlp.gate_proj", h)
        x = x + proj("mlp.down_proj", act(g) * proj("mlp.up_proj", h))
    head = w.get("lm_head.weight", w["embed_tokens.weight"])
    out = rmsnorm(x, w["norm.weight"], eps) @ head.T
    return np.tanh(out / final_cap) * final_cap if final_cap else out


def cli(prog, doc, argv, snapshot_class, forward):
    """A reference's command line: SNAPSHOT --ids I,J,... [--out FILE]; forward(snapshot, ids) -> (n, V)."""
    p = nltool.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("snapshot", help="a Hugging Face snapshot folder")
    p.add_argument("--ids", required=True, help="token ids, comma-separated")
    p.add_argument("--out", help="save the (n, V) logits as a .npy file instead of printing them")
    a = p.parse_args(argv)
    try:
        ids = [int(t) for t in a.ids.split(",")]
    except ValueError:
        raise ToolError(f"--ids {a.ids!r}: not comma-separated integers")
    if not os.path.isdir(a.snapshot):
        raise ToolError(f"{a.snapshot}: not a folder")
    snap = snapshot_class(a.snapshot)
    V = snap.cfg.get("vocab_size")
    if not isinstance(V, int) or not ids or min(ids) < 0 or max(ids) >= V:
        raise ToolError(f"--ids: each id must be in [0, {V})")
    out = forward(snap, ids)
    if a.out:
        with nltool.writing(a.out):
            with nlformat.atomic_file(a.out) as f:
                np.save(f, out)
        return
    for row in out:
        print(json.dumps([float(v) for v in row]))


def main(argv):
    cli("llama_reference.py", __doc__, argv, Snapshot, logits)


if __name__ == "__main__":
    nltool.run("llama_reference.py", main, sys.argv[1:])
