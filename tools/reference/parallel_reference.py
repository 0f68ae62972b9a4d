#!/usr/bin/python3
"""An independent float64 forward of a Hugging Face GPT-NeoX (Pythia) or Phi (Phi-2) snapshot, written
from HF's layout and the equations of modeling_gpt_neox.py and modeling_phi.py (not from normlab's
format or its importer):

    GPT-NeoX  h1 = LN1(x); q, k, v from query_key_value(h1) viewed (n, H, 3 Dh) per head; RoPE on the
              first rot = int(Dh rotary_pct) dims of q and k (rotate_half over them: dims i and
              i + rot/2); a = dense(Attn(q, k, v)); m = dense_4h_to_h(gelu(dense_h_to_4h(LN2(x))));
              use_parallel_residual: x = x + a + m; else x = x + a, then m from LN2 of that x, x = x + m;
              logits = embed_out(final_layer_norm(x))
    Phi       h = LN(x); q, k, v = q_proj(h), k_proj(h), v_proj(h); RoPE on the first
              int(Dh partial_rotary_factor) dims, rotate_half; x = x + dense(Attn(q, k, v)) +
              fc2(gelu_tanh(fc1(h))); logits = lm_head(final_layernorm(x)) + its bias

LayerNorm with the biased variance and layer_norm_eps; Attn the causal softmax(q k^T / sqrt(Dh)) v,
query head i on KV head i // (H / KVH). numpy only; the weights are read by tools/lib/hfweights.py
(F32, F16, BF16; one file or shards), widened to float64.

    /usr/bin/python3 tools/reference/parallel_reference.py SNAPSHOT --ids 1,52,300 [--out logits.npy]

prints one JSON array of V logits per position (as normlab logits does), or saves the (n, V) array.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import hfweights  # noqa: E402
import llama_reference  # noqa: E402
import nltool  # noqa: E402
from nltool import ToolError  # noqa: E402


class Snapshot:
    """An HF GPT-NeoX or Phi snapshot's config and its weights in float64, by HF's names less the
    model's prefix ("gpt_neox." or "model.")."""

    def __init__(self, folder):
        self.cfg = hfweights.read_json(os.path.join(folder, "config.json"))
        if self.cfg.get("model_type") not in ("gpt_neox", "phi"):
            raise ToolError(f"{folder}: model_type {self.cfg.get('model_type')!r}: this reference runs gpt_neox, phi")
        src, _ = hfweights.read_weights(folder)
        self.w = {k.split(".", 1)[1] if k.startswith(("gpt_neox.", "model.")) else k: t.load().astype(np.float64)
                  for k, t in src.items()}


def layernorm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def rope(x, rot, theta):
    """apply_rotary_pos_emb on the first rot dims of x (heads, n, Dh): x cos + rotate_half(x) sin."""
    n = x.shape[-2]
    inv_freq = 1.0 / theta ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    emb = np.concatenate([np.outer(np.arange(n, dtype=np.float64), inv_freq)] * 2, axis=-1)  # (n, rot)
    r = x[..., :rot]
    half = np.concatenate([-r[..., rot // 2:], r[..., :rot // 2]], axis=-1)
    return np.concatenate([r * np.cos(emb) + half * np.sin(emb), x[..., rot:]], axis=-1)


def attend(q, k, v):
    """Causal attention of q (H, n, Dh) over k, v (KVH, n, Dh): (n, H Dh)."""
    H, n, Dh = q.shape
    k, v = np.repeat(k, H // k.shape[0], axis=0), np.repeat(v, H // v.shape[0], axis=0)
    att = q @ k.transpose(0, 2, 1) / math.sqrt(Dh) + np.triu(np.full((n, n), -np.inf), 1)
    att = np.exp(att - att.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    return (att @ v).transpose(1, 0, 2).reshape(n, H * Dh)


def logits(snap, ids):
    """(n, V) float64 logits of the ids at positions 0..n-1."""
    c, w = snap.cfg, snap.w
    neox = c["model_type"] == "gpt_neox"
    D, H, eps = c["hidden_size"], c["num_attention_heads"], c.get("layer_norm_eps", 1e-5)
    Dh, n = D // H, len(ids)
    rot = int(Dh * (c.get("rotary_pct", 0.25) if neox else c.get("partial_rotary_factor", 0.5)))
    theta = c.get("rotary_emb_base", 10000) if neox else c.get("rope_theta", 10000.0)

    def lin(name, h):
        return h @ w[name + ".weight"].T + w[name + ".bias"]

    def ln(name, h):
        return layernorm(h, w[name + ".weight"], w[name + ".bias"], eps)
    x = w["embed_in.weight" if neox else "embed_tokens.weight"][ids]
    for i in range(c["num_hidden_layers"]):
        p = f"layers.{i}."
        h = ln(p + "input_layernorm", x)
        if neox:
            qkv = lin(p + "attention.query_key_value", h).reshape(n, H, 3 * Dh).transpose(1, 0, 2)
            q, k, v = qkv[..., :Dh], qkv[..., Dh:2 * Dh], qkv[..., 2 * Dh:]
        else:
            q, k, v = (lin(p + "self_attn." + m, h).reshape(n, -1, Dh).transpose(1, 0, 2)
                       for m in ("q_proj", "k_proj", "v_proj"))
        a = lin(p + ("attention.dense" if neox else "self_attn.dense"),
                attend(rope(q, rot, theta), rope(k, rot, theta), v))
        if not neox:
            x = x + a + lin(p + "mlp.fc2", gelu_tanh(lin(p + "mlp.fc1", h)))
            continue
        if not c.get("use_parallel_residual", True):
            x = x + a
        m = lin(p + "mlp.dense_4h_to_h", gelu(lin(p + "mlp.dense_h_to_4h", ln(p + "post_attention_layernorm", x))))
        x = x + m + (a if c.get("use_parallel_residual", True) else 0)
    if neox:
        return ln("final_layer_norm", x) @ w["embed_out.weight"].T
    return lin("lm_head", ln("final_layernorm", x))


def main(argv):
    llama_reference.cli("parallel_reference.py", __doc__, argv, Snapshot, logits)


if __name__ == "__main__":
    nltool.run("parallel_reference.py", main, sys.argv[1:])
