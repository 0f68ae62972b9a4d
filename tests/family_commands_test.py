#!/usr/bin/python3
"""Every command on the Llama row's families (issue 62's "every command and the lab on every family"):
random Qwen3 (H Dh = 2D), OLMo 2 (post-sublayer, QK-norm over the projection), Gemma 2 (peri, capped,
a window of 5 on layers 0 and 2), Gemma 3 (peri, (1 + w) QK-norm per head, a window of 5 and its own
RoPE base on layers 0 and 2), Mistral (a window of 5 on every layer), Gemma (MQA), Qwen2 (q/k/v biases)
and a SmolLM2-like Llama (GQA 9 over 3)
snapshots of tools/dev/make_llama_snapshot.py, imported by tools/interop/import_hf.py, each through
tests/parallel_import_test.py's commands(): generate (the same text twice with a seed), eval, bench,
profile, compare with the lens, attention statistics, fold and the --placement/--norm swaps, fold (the
folded model's logits within 1e-4), quantize q8_0 (eval within 0.05 bits), patch. The prompts and the
text run past the windows.

    /usr/bin/python3 tests/family_commands_test.py [NORMLAB_BINARY]      (make test runs it)
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless  # noqa: E402

skip_unless("family_commands_test", "numpy")
for d in ("lib", "dev", "reference"):
    sys.path.insert(0, os.path.join(ROOT, "tools", d))
import make_llama_snapshot as mk  # noqa: E402
import parallel_import_test as commands_of  # noqa: E402  (its commands(): one check a command)

check = commands_of.check = Checks("family_commands_test")
CASES = [
    ("Qwen3, head_dim 32 over D 64", dict(family="qwen3", head_dim=32)),
    ("OLMo 2", dict(family="olmo2")),
    ("Gemma 2, window 5, capped", dict(dim=80, heads=4, kv_heads=2, head_dim=32, family="gemma2", tied=True,
                                       layers=3, sliding_window=5)),
    ("Gemma 3, window 5", dict(dim=80, heads=4, kv_heads=1, head_dim=32, family="gemma3", tied=True, layers=4,
                               sliding_window=5)),
    ("Mistral, window 5", dict(family="mistral", sliding_window=5)),
    ("Gemma, (1 + w) gains, GeGLU, MQA 4/1", dict(dim=80, heads=4, kv_heads=1, head_dim=32, family="gemma", tied=True)),
    ("Qwen2, q/k/v biases", dict(attn_bias=True)),
    ("SmolLM2-like Llama, GQA 9/3, tied", dict(dim=72, heads=9, kv_heads=3, tied=True)),
]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for k, (label, kw) in enumerate(CASES):
            folder, out = os.path.join(tmp, f"snap{k}"), os.path.join(tmp, f"model{k}")
            mk.make(folder, seed=20 + k, **kw)
            r = subprocess.run(["/usr/bin/python3", commands_of.HF, os.path.join(folder, "hf"), "--out", out],
                               capture_output=True, text=True, env=commands_of.ENV)
            check(r.returncode == 0, f"{label}: imports", r.stderr.strip())
            if r.returncode == 0:
                commands_of.commands(label, out, tmp, commands_of.logits(out))
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
