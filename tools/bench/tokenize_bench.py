#!/usr/bin/python3
"""BPE on long pieces (issue 46): `normlab tokenize` against Hugging Face's tokenizers (npm, its Rust
library, tools/reference/hf_bpe_reference.js) on 1 MB of random letters and 1 MB of random CJK, each
one piece with nothing to cut it, where a merge loop that is not O(n log n) shows. Both whole
processes, as a user runs them (start, loading the tokenizer, the output included), on GPT-2's
vocabulary (weights/shakespeare-bpe), interleaved; medians and the ratio normlab / tokenizers.
The inputs come from a seeded RNG into build/ at run time. make bench runs it (bench.py); alone:

    /usr/bin/python3 tools/bench/tokenize_bench.py [--repeats 5]
"""
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import nltool  # noqa: E402
from runs import run_alone  # noqa: E402  (tools/bench, beside this file)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODEL = os.path.join(ROOT, "weights", "shakespeare-bpe")
HF = os.path.join(ROOT, "build", "hf", "node_modules", "tokenizers")
SIZE = 1_000_000  # bytes of each input


def inputs():
    """{name: path} of the two inputs, written into build/ (the same bytes every run)."""
    rng = random.Random(46)
    letters = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(SIZE))
    cjk = "".join(chr(rng.randrange(0x4E00, 0xA000)) for _ in range(SIZE // 3))  # 3 bytes each in UTF-8
    paths = {}
    for name, text in (("random letters", letters), ("random CJK", cjk)):
        paths[name] = os.path.join(ROOT, "build", f"bench-tokenize-{name.split()[1].lower()}.txt")
        with open(paths[name], "w", encoding="utf-8") as f:
            f.write(text)
    return paths


def wall(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise nltool.ToolError(f"{' '.join(cmd[:3])} ... failed: {p.stderr.decode()[-300:]}")
    return time.perf_counter() - t0


def long_pieces(repeats, out):
    """Fills out["tokenize_long_pieces"] and prints one row an input; skipped without node or tokenizers."""
    print("\n== BPE on one long piece (1 MB, no spaces): normlab tokenize against HF tokenizers (node), whole "
          f"processes, GPT-2's vocabulary, medians of {repeats}")
    if not shutil.which("node") or not os.path.isdir(HF):
        print("skipped: node or tokenizers (npm) missing: tools/install-deps.sh --python")
        return
    tokenizer_json = os.path.join(MODEL, "tokenizer.json")
    res = {}
    for name, path in inputs().items():
        ours = [os.path.join(ROOT, "normlab"), "tokenize", "-m", MODEL, "-f", path]
        theirs = ["node", os.path.join(ROOT, "tools", "reference", "hf_bpe_reference.js"), tokenizer_json, path]
        times = {"normlab_s": [], "tokenizers_s": []}
        for _ in range(repeats):
            times["normlab_s"].append(wall(ours))
            times["tokenizers_s"].append(wall(theirs))
        row = {k: statistics.median(v) for k, v in times.items()}
        row["ratio"] = row["normlab_s"] / row["tokenizers_s"]
        res[name] = row
        print(f"{name:<15} normlab {row['normlab_s']:6.2f} s  tokenizers {row['tokenizers_s']:6.2f} s  "
              f"normlab / tokenizers {row['ratio']:.2f}")
    out["tokenize_long_pieces"] = {"bytes": SIZE, "runs": repeats, **res}


if __name__ == "__main__":
    run_alone("tokenize_bench.py", __doc__, long_pieces)
