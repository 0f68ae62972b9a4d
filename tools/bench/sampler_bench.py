#!/usr/bin/python3
"""The sampler at 50,257 tokens (issue 46): `normlab profile -m shakespeare-bpe -n 64 --threads 1`'s
"sampling" component, microseconds per token decoded, for the default chain (temperature 0.8),
greedy and --top-k 40, against the targets the issue set (0.1, 0.03 and 0.1 ms) and beside the
head's product (lm_head) in the same run. Medians of the repeats. make bench runs it (bench.py); alone:

    /usr/bin/python3 tools/bench/sampler_bench.py [--repeats 5]
"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import nltool  # noqa: E402
from runs import run_alone  # noqa: E402  (tools/bench, beside this file)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODEL = os.path.join(ROOT, "weights", "shakespeare-bpe")
CHAINS = (("default (temperature 0.8)", [], 100.0), ("greedy", ["--temperature", "0"], 30.0),
          ("--top-k 40", ["--top-k", "40"], 100.0))


def decode_us(args, component):
    """us per token of one component in the decode phase of one profile run."""
    cmd = [os.path.join(ROOT, "normlab"), "profile", "-m", MODEL, "-n", "64", "--threads", "1", "--json"] + args
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        raise nltool.ToolError(f"{' '.join(cmd)} failed: {p.stderr.decode()[-300:]}")
    phase = next(ph for ph in json.loads(p.stdout)["phases"] if ph["phase"] == "decode")
    return sum(r["us_per_token"] for r in phase["rows"] if r["layer"] is None and r["component"] == component)


def sampler_rows(repeats, out):
    """Fills out["sampler"] and prints one row a chain."""
    print(f"\n== the sampler at 50,257 tokens: profile -m shakespeare-bpe -n 64 --threads 1, decode, us a token, "
          f"medians of {repeats}")
    res = {}
    for name, args, target in CHAINS:
        sampling = statistics.median(decode_us(args, "sampling") for _ in range(repeats))
        head = statistics.median(decode_us(args, "lm_head") for _ in range(repeats))
        res[name] = {"sampling_us": sampling, "lm_head_us": head, "target_us": target, "of_target": sampling / target}
        print(f"{name:<26} sampling {sampling:8.1f} us  (target {target:5.0f}: {sampling / target:4.2f} of it)  "
              f"head's product {head:7.1f} us")
    out["sampler"] = {"runs": repeats, **res}


if __name__ == "__main__":
    run_alone("sampler_bench.py", __doc__, sampler_rows)
