#!/usr/bin/python3
"""What the lab's figures cost (issue 50): `normlab eval --lens`, `--attention` and both against a
plain eval of the same text on the same path (one state, one window a call, one thread: `eval
--batch 1 --threads 1`, as the lab runs), whole-process wall time, interleaved repeats, medians; the
issue's bound is 1.5x. Then `normlab patch`'s seconds per cell on the shipped pre-LN model and on the
BPE model (64 tokens each). make bench runs it (bench.py); alone:

    /usr/bin/python3 tools/bench/lab_bench.py [--repeats 5]
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
from runs import BIN, ROOT, run, run_alone, validation_text  # noqa: E402  (tools/bench, beside this file)

MODELS = ("shakespeare-pre-ln", "shakespeare-llama")
RUNS = (("eval", ["--batch", "1"]), ("--lens", ["--lens"]), ("--attention", ["--attention"]),
        ("--lens --attention", ["--lens", "--attention"]))
BOUND = 1.5


def patch_pair(chars):
    """Two texts of the validation split's first `chars` characters, the second with one word's letter
    changed near its end, so that they tokenize alike but for it (ids 0 and 1 are measured: the
    cost of a cell does not depend on which)."""
    text = validation_text(chars).replace("\n", " ")
    at = text.rfind(" ", 0, len(text) - 8) + 1
    return text, text[:at] + ("b" if text[at] != "b" else "c") + text[at + 1:]


def lab_rows(repeats, out):
    """Fills out["lab_cost"] and prints a row per model, then patching's cost per cell."""
    path = os.path.join(ROOT, "build", "lab-bench-text.txt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(validation_text(20000))
    print(f"\n== the lab's figures against eval, 20,000 characters, one state, one window a call, 1 thread "
          f"(whole-process seconds, medians of {repeats} interleaved runs; bound {BOUND}x)")
    res = {}
    for m in MODELS:
        model = os.path.join(ROOT, "weights", m)
        wall = {name: [] for name, _ in RUNS}
        for _ in range(repeats):
            for name, extra in RUNS:
                wall[name].append(run([BIN, "eval", "-m", model, "--text", path, "--threads", "1", *extra])[2])
        med = {name: statistics.median(v) for name, v in wall.items()}
        res[m] = {name: {"seconds": med[name], "ratio": med[name] / med["eval"]} for name in med}
        print(f"{m:<20} eval {med['eval']:.2f} s   " + "   ".join(
            f"{name} {med[name] / med['eval']:.2f}x" for name, _ in RUNS[1:]))
    cells = {}
    for m in ("shakespeare-pre-ln", "shakespeare-bpe"):
        clean, corrupt = patch_pair(64 if m != "shakespeare-bpe" else 300)
        per = []
        for _ in range(repeats):
            d = json.loads(run([BIN, "patch", "-m", os.path.join(ROOT, "weights", m), "--clean", clean,
                                "--corrupt", corrupt, "--target", "0", "--foil", "1", "--threads", "1",
                                "--json"])[0])
            per.append(d["seconds_per_cell"])
        cells[m] = {"positions": d["positions"], "layers": d["layers"], "ms_per_cell": 1e3 * statistics.median(per)}
        whole = cells[m]["ms_per_cell"] * d["layers"] * d["positions"] / 1e3
        print(f"patch -m {m}: {d['layers']} x {d['positions']} cells, {cells[m]['ms_per_cell']:.2f} ms a cell "
              f"(one forward pass of {d['positions']} tokens), {whole:.1f} s the map")
    out["lab_cost"] = {"eval": res, "patch": cells, "bound": BOUND}


if __name__ == "__main__":
    run_alone("lab_bench.py", __doc__, lab_rows)
