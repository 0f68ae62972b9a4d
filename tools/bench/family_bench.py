#!/usr/bin/python3
"""make bench's family rows (docs/families.md): greedy decode of random models of each open family at
one shape (D 512, 4 layers, 8 heads, F 1536, vocabulary 4096, context 256), 1 thread pinned and 2
threads, interleaved, each family's tok/s over the Llama's measured in the same rounds. The sliding
windows are 64 (Mistral on every layer, Gemma 2 and 3 on every other), so that 200 decoded tokens
run past them; Gemma 2 caps its scores and logits. The issue's bound: within 10% of the Llama's.

    /usr/bin/python3 tools/bench/family_bench.py [--repeats N]      (make bench runs it as a part)

The models are made once, by tools/dev/make_llama_snapshot.py or make_parallel_snapshot.py and
tools/interop/import_hf.py (a user's path in), into build/families/.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
from runs import BIN, ROOT, fmt, imported_model, normlab_generate, run, run_alone, summary  # noqa: E402

SHAPE = ["--dim", "512", "--hidden", "1536", "--layers", "4", "--heads", "8", "--vocab", "4096", "--seq-len", "256"]
FAMILIES = [  # name, maker, its flags beyond SHAPE
    ("llama", "make_llama_snapshot.py", ["--kv-heads", "8"]),
    ("mistral-window-64", "make_llama_snapshot.py", ["--kv-heads", "8", "--family", "mistral", "--sliding-window",
                                                     "64"]),
    ("qwen3", "make_llama_snapshot.py", ["--kv-heads", "8", "--family", "qwen3"]),
    ("olmo2", "make_llama_snapshot.py", ["--kv-heads", "8", "--family", "olmo2"]),
    ("gemma", "make_llama_snapshot.py", ["--kv-heads", "8", "--family", "gemma", "--tied"]),
    ("gemma2-window-64", "make_llama_snapshot.py", ["--kv-heads", "8", "--family", "gemma2", "--tied",
                                                    "--sliding-window", "64"]),
    ("gemma3-window-64", "make_llama_snapshot.py", ["--kv-heads", "8", "--family", "gemma3", "--tied",
                                                    "--sliding-window", "64"]),
    ("gpt-neox", "make_parallel_snapshot.py", ["--family", "gpt_neox"]),
    ("phi", "make_parallel_snapshot.py", ["--family", "phi", "--rotary", "0.5"]),  # 32 dims, as Phi-2 turns
]
START = "the king"


def family_rows(repeats, out):
    """Each family's decode at 1 (pinned to the last CPU) and 2 threads, the rounds interleaved."""
    all_cpus = os.sched_getaffinity(0)
    paths = {name: imported_model(os.path.join(ROOT, "build", "families", name), maker, SHAPE + flags)
             for name, maker, flags in FAMILIES}
    res = {name: {1: [], 2: []} for name in paths}
    for r in range(repeats):
        for t in (1, 2):
            os.sched_setaffinity(0, {max(all_cpus)} if t == 1 else all_cpus)
            for name, path in paths.items():
                g = normlab_generate(path, START, 200, r, t, extra=["--temperature", "0", "--ignore-eos"])
                res[name][t].append(g["decode_tok_s"])
    os.sched_setaffinity(0, all_cpus)
    print(f"\n== Families (docs/families.md): greedy decode of 200 tokens at one shape (D 512, L 4, H 8, F 1536), "
          f"medians of {repeats} interleaved rounds [min-max], tok/s and the ratio to the Llama's")
    base = {t: summary(res["llama"][t])["median"] for t in (1, 2)}
    rows = {}
    for name in paths:
        s1, s2 = summary(res[name][1]), summary(res[name][2])
        r1, r2 = s1["median"] / base[1], s2["median"] / base[2]
        params = json.loads(run([BIN, "info", "-m", paths[name], "--json"])[0])["parameters"]
        rows[name] = {"parameters": params, "decode_tok_s": s1, "decode_2_threads_tok_s": s2,
                      "ratio_to_llama": r1, "ratio_to_llama_2_threads": r2}
        print(f"  {name:<18} {params / 1e6:5.1f}M  1 thread {fmt(s1)} ({r1:.2f}x)  2 threads {fmt(s2)} ({r2:.2f}x)")
    out["families"] = rows


if __name__ == "__main__":
    run_alone("family_bench.py", __doc__, family_rows)
