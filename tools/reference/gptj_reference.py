#!/usr/bin/python3
"""An independent float64 forward of a Hugging Face GPT-J snapshot (GPTJForCausalLM), written from HF's
layout and modeling_gptj.py's equations (not from normlab's format or its importer):

    h = ln_1(x); q, k, v = q_proj(h), k_proj(h), v_proj(h) (no biases), viewed (n, H, Dh);
    RoPE on the first rotary_dim dims of q and k by rotate_every_two (dims 2i and 2i + 1 turned by
    pos 10000^(-2i/rotary_dim)); a = out_proj(softmax(q k^T / sqrt(Dh), causal) v);
    x = x + a + fc_out(gelu_new(fc_in(h)));  logits = lm_head(ln_f(x)) + lm_head's bias

LayerNorm with the biased variance and layer_norm_epsilon. numpy only; the weights are read by
tools/lib/hfweights.py (F32, F16, BF16; one file or shards), widened to float64.

    /usr/bin/python3 tools/reference/gptj_reference.py SNAPSHOT --ids 1,52,300 [--out logits.npy]

prints one JSON array of V logits per position (as normlab logits does), or saves the (n, V) array.
"""
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
from parallel_reference import attend, gelu_tanh, layernorm  # noqa: E402


class Snapshot:
    """An HF GPT-J snapshot's config and its weights in float64, by HF's names less "transformer."."""

    def __init__(self, folder):
        self.cfg = hfweights.read_json(os.path.join(folder, "config.json"))
        if self.cfg.get("model_type") != "gptj":
            raise ToolError(f"{folder}: model_type {self.cfg.get('model_type')!r}: this reference runs gptj")
        self.cfg.setdefault("vocab_size", 50400)
        src, _ = hfweights.read_weights(folder)
        self.w = {k.removeprefix("transformer."): t.load().astype(np.float64) for k, t in src.items()}


def rotate_every_two(x):
    """(-x1, x0, -x3, x2, ...): each pair (2i, 2i + 1) turned a quarter."""
    out = np.empty_like(x)
    out[..., ::2], out[..., 1::2] = -x[..., 1::2], x[..., ::2]
    return out


def rope(x, rot):
    """apply_rotary_pos_emb on the first rot dims of x (heads, n, Dh): sin and cos repeated per pair."""
    n = x.shape[-2]
    inv_freq = 1.0 / 10000 ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    angle = np.repeat(np.outer(np.arange(n, dtype=np.float64), inv_freq), 2, axis=-1)  # (n, rot)
    r = x[..., :rot]
    return np.concatenate([r * np.cos(angle) + rotate_every_two(r) * np.sin(angle), x[..., rot:]], axis=-1)


def logits(snap, ids):
    """(n, V) float64 logits of the ids at positions 0..n-1."""
    c, w = snap.cfg, snap.w
    D, H, eps, rot = c["n_embd"], c["n_head"], c.get("layer_norm_epsilon", 1e-5), c["rotary_dim"]
    Dh, n = D // H, len(ids)

    def lin(name, h):
        y = h @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    def ln(name, h):
        return layernorm(h, w[name + ".weight"], w[name + ".bias"], eps)
    x = w["wte.weight"][ids]
    for i in range(c["n_layer"]):
        p = f"h.{i}."
        h = ln(p + "ln_1", x)
        q, k, v = (lin(p + "attn." + m, h).reshape(n, H, Dh).transpose(1, 0, 2) for m in ("q_proj", "k_proj", "v_proj"))
        a = lin(p + "attn.out_proj", attend(rope(q, rot), rope(k, rot), v))
        x = x + a + lin(p + "mlp.fc_out", gelu_tanh(lin(p + "mlp.fc_in", h)))
    return lin("lm_head", ln("ln_f", x))


def main(argv):
    llama_reference.cli("gptj_reference.py", __doc__, argv, Snapshot, logits)


if __name__ == "__main__":
    nltool.run("gptj_reference.py", main, sys.argv[1:])
