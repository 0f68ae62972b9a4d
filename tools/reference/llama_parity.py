#!/usr/bin/python3
"""Parity of Llama models from outside: random Hugging Face snapshots and llama2.c files written by
tools/dev/make_llama_snapshot.py, imported by tools/interop/import_hf.py and import_llama2c.py, run by
the engine (normlab logits), against tools/reference/llama_reference.py's float64 forward of the HF
snapshot (HF's layout: rotate_half RoPE, repeat_kv, separate projections), within LOGIT_ATOL.

Cases: grouped KV heads (4 over 2) in F32, untied, in 2 shards; MHA (4 over 4) in BF16, tied; MQA (4
over 1) in F16 with q_norm/k_norm; Qwen2's qkv bias; Qwen3's head_dim independent of D/H; OLMo 2's
block and QK-norm over the whole projection; GPT-NeoX (parallel and sequential) and Phi through
tools/reference/parallel_reference.py, GPT-J through gptj_reference.py; and for each model llama2.c can hold, its
model.bin (legacy layout) and model-v1.bin of the same weights, which must give the same logits.
Each case's first import also runs with QK-norm switched (--qk-norm off where the model has it, on
where it has not), against the reference with q_norm/k_norm dropped or set to unit gains.
The ids are the engine's own tokenization of each prompt (normlab tokenize --json), so this checks
the forward pass; the tokenizer has its own references.

    make parity     (or: /usr/bin/python3 tools/reference/llama_parity.py [--seed S] [--prompts N])
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import nltool  # noqa: E402

ROOT = nltool.ROOT
sys.path.insert(0, os.path.join(ROOT, "tools", "dev"))
sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))
import llama_reference  # noqa: E402
import make_llama_snapshot  # noqa: E402
import make_parallel_snapshot  # noqa: E402
import gptj_reference  # noqa: E402
import parallel_reference  # noqa: E402

LOGIT_ATOL = 1e-4
CASES = [  # (label, make_llama_snapshot.make keywords)
    ("GQA 4/2, F32, untied, 2 shards", dict(heads=4, kv_heads=2, dtype="F32", shards=2)),
    ("MHA 4/4, BF16, tied", dict(heads=4, kv_heads=4, dtype="BF16", tied=True)),
    ("MQA 4/1, F16, QK-norm, no model. prefix", dict(heads=4, kv_heads=1, dtype="F16", qk_norm=True, prefix=False)),
    ("Qwen2 qkv bias, GQA 4/2, F32, tied", dict(heads=4, kv_heads=2, dtype="F32", attn_bias=True, tied=True)),
    ("Qwen3 head_dim 32 over D 64 (H Dh = 2D, as Qwen3-0.6B), GQA 4/2, BF16",
     dict(heads=4, kv_heads=2, head_dim=32, family="qwen3", dtype="BF16")),
    ("OLMo 2 post-sublayer norms, QK-norm over the projection, GQA 4/2, F32, tied",
     dict(heads=4, kv_heads=2, family="olmo2", tied=True)),
    ("Gemma (Gemma-3-270m's 4 over 1, Dh 32 for its 256), (1 + w) norms, sqrt(D) embeddings, GeGLU, tied",
     dict(dim=80, heads=4, kv_heads=1, head_dim=32, family="gemma", tied=True)),
    ("Gemma 2 sandwich, query_pre_attn_scalar 24, scores capped at 3 and logits at 10, GQA 4/2, BF16",
     dict(dim=80, heads=4, kv_heads=2, head_dim=32, family="gemma2", tied=True, dtype="BF16")),
    ("Mistral sliding_window 6 on every layer, Dh 64 (long prompts attend as products), GQA 2/1",
     dict(dim=128, heads=2, kv_heads=1, family="mistral", sliding_window=6)),
    ("Gemma 2 sliding_window 5 on layers 0 and 2 of 3, capped, GQA 4/2",
     dict(dim=80, heads=4, kv_heads=2, head_dim=32, family="gemma2", tied=True, layers=3, sliding_window=5)),
    ("Gemma 3 (1 + w) QK-norm per head, window 5 and RoPE base 100 on layers 0 and 2 of 4 (base 1e6 on the "
     "global ones), MQA 4/1", dict(dim=80, heads=4, kv_heads=1, head_dim=32, family="gemma3", tied=True, layers=4,
                                  sliding_window=5)),
    ("Gemma-3-270m's heads: 4 over 1 of Dh 256 over D 64, 6 layers (5 local, window 5 : 1 global), BF16",
     dict(dim=64, heads=4, kv_heads=1, head_dim=256, family="gemma3", tied=True, layers=6, sliding_window=5,
          dtype="BF16")),
    ("SmolLM2-135M's GQA 9 over 3 (D 72, Dh 8), tied, BF16",
     dict(dim=72, heads=9, kv_heads=3, tied=True, dtype="BF16")),
    ("GPT-NeoX (Pythia) parallel, rotary_pct 0.25, biases, BF16", dict(family="gpt_neox", dtype="BF16")),
    ("GPT-NeoX sequential (use_parallel_residual false), full rotary, F16",
     dict(family="gpt_neox", sequential=True, rotary=1.0, dtype="F16")),
    ("Phi (Phi-2) parallel-shared, partial_rotary_factor 0.4 of Dh 20, gelu_new, lm_head bias, 2 shards",
     dict(family="phi", dim=80, shards=2)),
    ("GPT-J parallel-shared, interleaved rotary_dim 8 of Dh 16, no q/k/v/out biases, F16",
     dict(family="gptj", rotary=0.5, dtype="F16")),
]
# make_parallel_snapshot.py's families, and each one's float64 reference
PARALLEL = {"gpt_neox": parallel_reference, "phi": parallel_reference, "gptj": gptj_reference}
WORDS = "the king my lord thou art what shall I say to thee Romeo : , . ! ? 'tis".split(" ")


def tool(*args):
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", args[0]), *args[1:]], capture_output=True,
                       text=True)
    return r.returncode, r.stderr.strip()


def engine(*args):
    r = subprocess.run([nltool.engine_binary(), *args], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1])
    return r.stdout


def compare(model, snap, prompts, flags=(), reference=llama_reference):
    """The largest |engine - reference| logit over the prompts, and the reference logits' spread."""
    worst, spread = 0.0, []
    for text in prompts:
        ids = json.loads(engine("tokenize", "-m", model, "-p", text, "--json"))["ids"]
        got = np.array([json.loads(line) for line in engine("logits", "-m", model, "-p", text, *flags).splitlines()])
        want = reference.logits(snap, ids)
        if got.shape != want.shape:
            raise RuntimeError(f"logits of shape {got.shape}, the reference's {want.shape}")
        worst = max(worst, float(np.abs(got - want).max()))
        spread.append(float(want.std(axis=1).mean()))
    return worst, float(np.mean(spread))


def check(label, kw, seed, tmp, prompts):
    folder = os.path.join(tmp, f"case{seed}")
    parallel = kw.get("family") in PARALLEL
    if parallel:
        make_parallel_snapshot.make(folder, seed=seed, **kw)
    else:
        make_llama_snapshot.make(folder, seed=seed, **kw)
    reference = PARALLEL.get(kw.get("family"), llama_reference)
    snap = reference.Snapshot(os.path.join(folder, "hf"))
    runs = [("HF snapshot", ["interop/import_hf.py", os.path.join(folder, "hf")])]
    if os.path.isdir(os.path.join(folder, "llama2c")):
        for name in ("model.bin", "model-v1.bin"):
            runs.append((f"llama2.c {name}", ["interop/import_llama2c.py", os.path.join(folder, "llama2c", name)]))
    ok = True
    for k, (what, cmd) in enumerate(runs):
        out = os.path.join(tmp, f"out{seed}-{k}")
        rc, err = tool(*cmd, "--out", out)
        if rc != 0:
            print(f"{label}: {what}: import failed: {err}  FAIL")
            ok = False
            continue
        try:
            worst, spread = compare(out, snap, prompts, reference=reference)
        except RuntimeError as e:
            print(f"{label}: {what}: the engine failed: {e}  FAIL")
            ok = False
            continue
        good = worst <= LOGIT_ATOL
        ok &= good
        print(f"{label}: {what}: {len(prompts)} prompts, max |logit diff| {worst:.2e} (tolerance {LOGIT_ATOL:g}), "
              f"logit std {spread:.1f}  {'ok' if good else 'FAIL'}")
        if k == 0 and not parallel:  # (--qk-norm on adds the Llama reference's per-head norm)
            ok &= check_switch(label, out, snap, prompts)
    return ok


def check_switch(label, model, snap, prompts):
    """--qk-norm switched at run time against the reference with the slot changed the same way: off drops
    q_norm/k_norm; on gives a model without them unit gains (docs/llama.md)."""
    c = snap.cfg
    Dh = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    names = [f"layers.{i}.self_attn.{n}.weight" for i in range(c["num_hidden_layers"]) for n in ("q_norm", "k_norm")]
    has = names[0] in snap.w
    switched = copy.copy(snap)
    switched.w = {k: v for k, v in snap.w.items() if k not in names}
    if not has:
        unit = np.zeros(Dh) if c.get("model_type", "").startswith("gemma") else np.ones(Dh)  # (Gemma: 1 + w)
        switched.w.update({n: unit for n in names})
    flag = "off" if has else "on"
    try:
        worst, spread = compare(model, switched, prompts, ("--qk-norm", flag))
    except RuntimeError as e:
        print(f"{label}: --qk-norm {flag}: the engine failed: {e}  FAIL")
        return False
    same, _ = compare(model, snap, prompts[:1], ("--qk-norm", "on" if has else "off"))
    good = worst <= LOGIT_ATOL and same <= LOGIT_ATOL
    print(f"{label}: --qk-norm {flag} against the reference {'without q_norm/k_norm' if has else 'with unit gains'}: "
          f"max |logit diff| {worst:.2e}, and --qk-norm {'on' if has else 'off'} (as configured) {same:.2e} "
          f"(tolerance {LOGIT_ATOL:g})  {'ok' if good else 'FAIL'}")
    return good


def main(argv):
    p = nltool.ArgumentParser(prog="llama_parity.py", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=20261203)
    p.add_argument("--prompts", type=int, default=3)
    a = p.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    prompts = [" ".join(rng.choice(WORDS) for _ in range(int(rng.integers(2, 12)))) for _ in range(a.prompts)]
    prompts.append(" ".join(WORDS[:16]))  # 54 tokens: attention as products (24 or more), far past a window
    with tempfile.TemporaryDirectory() as tmp:
        ok = all([check(label, kw, a.seed + k, tmp, prompts) for k, (label, kw) in enumerate(CASES)])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    nltool.run("llama_parity.py", main, sys.argv[1:])
