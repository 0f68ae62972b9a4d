#!/usr/bin/python3
"""Parity of Hugging Face GPT-2 checkpoints: random-weight snapshots in HF's own layout (Conv1D
weights stored (in, out), HF's names, GPT2Config), imported by tools/interop/import_hf_gpt2.py
and run by the engine (normlab logits), against a float64 PyTorch forward written here from HF's
layout directly (x @ W + b, gelu_new), not from the importer or tools/lib/nlmodel.py.

Two snapshots: GPT-2 small's shape (12 x 768, 12 heads, n_positions 1024, vocabulary 50257;
model.safetensors with the names of a GPT2Model, no prefix, and tokenizer.json) and a tiny one
(2 x 64, 4 heads, n_positions 64; pytorch_model.bin with a GPT2LMHeadModel's "transformer." names,
the old attn.bias / attn.masked_bias mask buffers and the tied lm_head.weight; vocab.json +
merges.txt). The tokenizer is GPT-2's (weights/shakespeare-bpe/tokenizer.json). The prompts are
random tiny-Shakespeare-like texts, tokenized for the reference by tools/lib/gpt2bpe.py, and by the
engine itself, so the ids must agree too. Tolerance: LOGIT_ATOL, as tools/reference/parity.py.

    make parity     (or: /usr/bin/python3 tools/reference/hf_gpt2_parity.py [--seed S] [--small-only|--tiny-only])
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy", "torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import gpt2bpe  # noqa: E402
import nlformat  # noqa: E402
import nltool  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER = os.path.join(ROOT, "weights", "shakespeare-bpe", "tokenizer.json")
LOGIT_ATOL = 1e-4
SHAPES = {"small": dict(n_layer=12, n_head=12, n_embd=768, n_positions=1024),
          "tiny": dict(n_layer=2, n_head=4, n_embd=64, n_positions=64)}
WORDS = "the king my lord thou art what shall I say to thee ROMEO JULIET : , . ; ! ? \n 'tis o'er 1599".split(" ")


def hf_weights(shape, rng):
    """HF GPT-2 state dict (names without "transformer."), Conv1D weights (in, out), float64."""
    L, D, T, V = shape["n_layer"], shape["n_embd"], shape["n_positions"], 50257
    def w(*s, std=0.02):
        return rng.standard_normal(s) * std
    st = {"wte.weight": w(V, D), "wpe.weight": w(T, D, std=0.01), "ln_f.weight": 1 + w(D, std=0.1),
          "ln_f.bias": w(D)}
    for i in range(L):
        p = f"h.{i}."
        st.update({p + "ln_1.weight": 1 + w(D, std=0.1), p + "ln_1.bias": w(D), p + "attn.c_attn.weight": w(D, 3 * D),
                   p + "attn.c_attn.bias": w(3 * D), p + "attn.c_proj.weight": w(D, D), p + "attn.c_proj.bias": w(D),
                   p + "ln_2.weight": 1 + w(D, std=0.1), p + "ln_2.bias": w(D), p + "mlp.c_fc.weight": w(D, 4 * D),
                   p + "mlp.c_fc.bias": w(4 * D), p + "mlp.c_proj.weight": w(4 * D, D), p + "mlp.c_proj.bias": w(D)})
    return {k: v.astype(np.float32) for k, v in st.items()}  # stored float32, as HF's are


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def reference_logits(st, shape, ids, eps=1e-5):
    """GPT-2's forward in float64 from the HF state dict: (T, V)."""
    t = {k: torch.from_numpy(v.astype(np.float64)) for k, v in st.items()}
    H, D = shape["n_head"], shape["n_embd"]
    n = len(ids)
    x = t["wte.weight"][ids] + t["wpe.weight"][:n]
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
    def ln(v, p):
        return torch.nn.functional.layer_norm(v, (D,), t[p + ".weight"], t[p + ".bias"], eps)
    for i in range(shape["n_layer"]):
        p = f"h.{i}."
        qkv = ln(x, p + "ln_1") @ t[p + "attn.c_attn.weight"] + t[p + "attn.c_attn.bias"]
        q, k, v = (a.reshape(n, H, D // H).transpose(0, 1) for a in qkv.split(D, dim=1))
        att = (q @ k.transpose(1, 2)) / math.sqrt(D // H)
        att = torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(0, 1).reshape(n, D)
        x = x + y @ t[p + "attn.c_proj.weight"] + t[p + "attn.c_proj.bias"]
        h = gelu_new(ln(x, p + "ln_2") @ t[p + "mlp.c_fc.weight"] + t[p + "mlp.c_fc.bias"])
        x = x + h @ t[p + "mlp.c_proj.weight"] + t[p + "mlp.c_proj.bias"]
    return (ln(x, "ln_f") @ t["wte.weight"].T).numpy()


def write_snapshot(folder, kind, st, shape):
    """An HF snapshot folder: config.json, the weights and the tokenizer files, as the hub has them."""
    os.makedirs(folder)
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
              "layer_norm_epsilon": 1e-5, "n_ctx": shape["n_positions"], "n_inner": None, "vocab_size": 50257,
              "scale_attn_weights": True, **shape}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(TOKENIZER, encoding="utf-8") as f:
        tok = f.read()
    if kind == "small":
        nlformat.write_safetensors(os.path.join(folder, "model.safetensors"), st)
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            f.write(tok)
        return
    state = {"transformer." + k: torch.from_numpy(v) for k, v in st.items()}
    T = shape["n_positions"]
    for i in range(shape["n_layer"]):  # the mask buffers old checkpoints carry
        state[f"transformer.h.{i}.attn.bias"] = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
        state[f"transformer.h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    state["lm_head.weight"] = state["transformer.wte.weight"]  # tied, saved as HF saves it
    torch.save(state, os.path.join(folder, "pytorch_model.bin"))
    model = json.loads(tok)["model"]
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(model["vocab"], f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(m if isinstance(m, str) else " ".join(m) for m in model["merges"]) + "\n")


def engine_logits(model, text):
    out = subprocess.run([nltool.engine_binary(), "logits", "-m", model, "-p", text], check=True, capture_output=True,
                         text=True).stdout
    return np.array([json.loads(line) for line in out.splitlines()])


def engine_ids(model, text):
    out = subprocess.run([nltool.engine_binary(), "tokenize", "-m", model, "-p", text, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["ids"]


def check(kind, rng, bpe, tmp, prompts):
    shape = SHAPES[kind]
    st = hf_weights(shape, rng)
    snap, out = os.path.join(tmp, kind + "-hf"), os.path.join(tmp, kind)
    write_snapshot(snap, kind, st, shape)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "interop", "import_hf_gpt2.py"), snap,
                        "--out", out], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"{kind}: import failed: {r.stderr.strip()}  FAIL")
        return False
    worst, ok = 0.0, True
    for _ in range(prompts):
        text = "".join(rng.choice(WORDS) + " " for _ in range(int(rng.integers(1, 12))))
        ids = bpe.encode(text)
        if engine_ids(out, text) != ids:
            print(f"{kind}: the engine's ids of {text!r} differ from gpt2bpe.py's  FAIL")
            ok = False
            continue
        diff = np.abs(engine_logits(out, text) - reference_logits(st, shape, ids)).max()
        worst = max(worst, diff)
    ok &= worst <= LOGIT_ATOL
    print(f"HF GPT-2 {kind} ({shape['n_layer']} x {shape['n_embd']}, {shape['n_head']} heads, T {shape['n_positions']},"
          f" V 50257): {prompts} prompts, max |logit diff| {worst:.2e} (tolerance {LOGIT_ATOL:g})  "
          f"{'ok' if ok else 'FAIL'}")
    return ok


def main(argv):
    p = nltool.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=20261202)
    p.add_argument("--prompts", type=int, default=4)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--small-only", action="store_true")
    which.add_argument("--tiny-only", action="store_true")
    a = p.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    try:
        bpe = gpt2bpe.load(TOKENIZER)
    except gpt2bpe.BpeError as e:
        raise nltool.ToolError(str(e))
    kinds = ["tiny"] if a.tiny_only else ["small"] if a.small_only else ["tiny", "small"]
    with tempfile.TemporaryDirectory() as tmp:
        ok = all([check(k, rng, bpe, tmp, a.prompts) for k in kinds])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    nltool.run("hf_gpt2_parity.py", main, sys.argv[1:])
