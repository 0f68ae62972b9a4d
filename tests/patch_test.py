#!/usr/bin/python3
"""normlab patch against an independent float64 PyTorch reference (docs/lab.md "Activation patching").

The reference is written here from the definition, on tools/lib/nlmodel.py's float64 forward: the
clean run's residual stream kept where it enters each block (a forward pre-hook on model.h[l]) and
where it leaves the last; each cell runs the corrupted ids with that one row put back, and reads
logit[target] - logit[foil] at the last position. For every shipped transformer and a fixture:
- every cell of the map within 1e-5 of the reference's recovered share (relative to the clean -
  corrupted difference, so 1e-5 of the whole effect), and the two baselines within 1e-4 logits. The
  norm-free model's stream grows large, and its float32 floor with it (compare's vs cache, 1.0e-4
  logits, ten times the others'): its cells are held to 3e-5 (measured 1.2e-5);
- the last layer's last position exactly 1, every cell before the first differing position exactly 0;
- the default target and foil equal the reference's top tokens of each run.

    /usr/bin/python3 tests/patch_test.py [NORMLAB_BINARY]      (make test runs it)
"""
import json
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless  # noqa: E402

skip_unless("patch_test", "torch", "numpy")
import torch  # noqa: E402
import nlformat  # noqa: E402  (tools/lib, on the path through tooltest)
import nlmodel  # noqa: E402

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
check = Checks("patch_test")
# (model, clean, corrupted): texts of the same length whose last tokens' predictions differ
CASES = [
    ("weights/shakespeare-pre-ln", "I am thy father", "I am thy mother"),
    ("weights/shakespeare-post-ln", "Good morrow, sir", "Good morrow, mad"),
    ("weights/shakespeare-peri-ln", "Good morrow, sir", "Good morrow, mad"),
    ("weights/shakespeare-pre-rms", "thy lord", "thy lady"),
    ("weights/shakespeare-post-rms", "thy lord", "thy lady"),
    ("weights/shakespeare-pre-bn", "Good morrow, sir", "Good morrow, mad"),
    ("weights/shakespeare-post-bn", "thy lord", "thy lady"),
    ("weights/shakespeare-deepnorm", "thy lord", "thy lady"),
    ("weights/shakespeare-nonorm", "Good morrow, sir", "Good morrow, mad"),
    ("weights/shakespeare-llama", "Good morrow, sir", "Good morrow, mad"),
    ("weights/shakespeare-bpe", "Good morrow, sir", "Good morrow, mad"),
    ("tests/fixtures/ln-pre-bias.json", "abcab", "abbab"),
]


def reference(path, clean, corrupt, target, foil):
    """(clean_diff, corrupt_diff, recovered[l][p], top of clean, top of corrupt), in float64."""
    config, vocab, tensors = nlformat.load_model(os.path.join(ROOT, path))
    model = nlmodel.build(config, tensors, dtype=torch.float64)
    L, n = len(model.h), len(clean)
    kept = [None] * (L + 1)

    def keep(layer):
        def hook(module, args):
            kept[layer] = args[0].clone()
        return hook

    def patch(layer, pos):
        def hook(module, args):
            x = args[0].clone()
            x[:, pos] = kept[layer][:, pos]
            return (x,) + tuple(args[1:])
        return hook

    def last_logits(ids, hooks=()):
        handles = [model.h[l].register_forward_pre_hook(h) for l, h in hooks]
        try:
            with torch.no_grad():
                x = model.stream(torch.tensor([ids]))
                return x, model.head(x)[0, -1]
        finally:
            for h in handles:
                h.remove()

    x_clean, clean_logits = last_logits(clean, [(l, keep(l)) for l in range(L)])
    kept[L] = x_clean
    x_corrupt, corrupt_logits = last_logits(corrupt)
    if target < 0:
        target, foil = int(clean_logits.argmax()), int(corrupt_logits.argmax())
    diff = lambda logits: float(logits[target] - logits[foil])  # noqa: E731
    c, k = diff(clean_logits), diff(corrupt_logits)
    rec = []
    for l in range(L + 1):
        row = []
        for p in range(n):
            if l < L:
                _, logits = last_logits(corrupt, [(l, patch(l, p))])
            else:  # the stream leaving the last layer, read out
                x = x_corrupt.clone()
                x[:, p] = x_clean[:, p]
                with torch.no_grad():
                    logits = model.head(x)[0, -1]
            row.append((diff(logits) - k) / (c - k))
        rec.append(row)
    return c, k, rec, target, foil


def run_patch(path, clean, corrupt):
    r = subprocess.run([BIN, "patch", "-m", path, "--clean", clean, "--corrupt", corrupt, "--json"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, cwd=ROOT)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return json.loads(r.stdout), ""


def main():
    for path, clean_text, corrupt_text in CASES:
        name = os.path.basename(path)
        d, why = run_patch(path, clean_text, corrupt_text)
        if d is None:
            check(False, f"{name}: normlab patch runs", why)
            continue
        clean, corrupt = d["clean"]["ids"], d["corrupt"]["ids"]
        c, k, rec, target, foil = reference(path, clean, corrupt, -1, -1)
        check((d["target"], d["foil"]) == (target, foil), f"{name}: default target and foil are the runs' top tokens",
              f"{(d['target'], d['foil'])} against {(target, foil)}")
        check(abs(d["clean_diff"] - c) < 1e-4 and abs(d["corrupt_diff"] - k) < 1e-4,
              f"{name}: clean and corrupted logit differences within 1e-4 of float64",
              f"{d['clean_diff']}, {d['corrupt_diff']} against {c}, {k}")
        worst = max(abs(a - b) for ra, rb in zip(d["recovered"], rec) for a, b in zip(ra, rb))
        tol = 3e-5 if name == "shakespeare-nonorm" else 1e-5
        check(worst < tol, f"{name}: every cell of the {len(rec)} x {len(clean)} map within {tol:g} of float64 "
              f"(largest {worst:.2g})", f"largest difference {worst}")
        first = next(i for i, (a, b) in enumerate(zip(clean, corrupt)) if a != b)
        exact = d["recovered"][-1][-1] == 1.0 and all(r[p] == 0.0 for r in d["recovered"] for p in range(first))
        check(exact, f"{name}: the last layer's last position recovers exactly 1, every cell before position "
              f"{first} exactly 0", json.dumps(d["recovered"])[:300])
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
