#!/usr/bin/python3
"""make bench's Llama rows (docs/llama.md): greedy decode of random models of llama2.c's
stories15M and stories110M shapes at 1 and 2 threads, beside the bound that reading their float32
weights once a token sets at the copy loop's bandwidth (build/blasbench); then shakespeare-llama's
--samples 16 against one stream at 2 threads over four lengths, with the context shifts each took,
beside the products' ceiling: eval with the stride at the whole window, where every position is
computed once in full products.

    /usr/bin/python3 tools/bench/llama_bench.py [--repeats N]      (make bench runs it as a part)

The random models are made once, by tools/dev/make_llama_snapshot.py and tools/interop/import_hf.py
(a user's path in), into build/scaling/.
"""
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
from runs import (BIN, BLASBENCH, PROMPT, ROOT, fmt, imported_model, normlab_generate, run, run_alone,  # noqa: E402
                  summary, validation_text)

SHAPES = [  # name, make_llama_snapshot.py's shape flags, tied head (llama2.c's stories models)
    ("llama-stories15M", ["--dim", "288", "--hidden", "768", "--layers", "6", "--heads", "6", "--kv-heads", "6",
                          "--vocab", "32000", "--seq-len", "256"], False),
    ("llama-stories110M", ["--dim", "768", "--hidden", "2048", "--layers", "12", "--heads", "12", "--kv-heads", "12",
                           "--vocab", "32000", "--seq-len", "1024"], True),
]
START = "Once upon"  # the stories models' own start
LENGTHS = (64, 128, 256, 512)  # tokens after the prompt; shakespeare-llama's window is 128
SHIPPED = os.path.join(ROOT, "weights", "shakespeare-llama")
SCORED = re.compile(r"scored \d+ tokens in [0-9.]+ s \(([0-9.]+) tok/s\)")


def make_model(name, flags, tied):
    """build/scaling/NAME, imported from a random Hugging Face snapshot."""
    return imported_model(os.path.join(ROOT, "build", "scaling", name), "make_llama_snapshot.py",
                          flags + (["--tied"] if tied else []))


def decode_rows(repeats, out, all_cpus):
    """Greedy decode of 200 tokens (EOS ignored) and the prompt's prefill, 1 thread pinned and 2 threads,
    interleaved; the bound: weight bytes read once a token at the 1-thread copy loop's GB/s."""
    pinned = os.sched_getaffinity(0)
    rows = {}
    for name, flags, tied in SHAPES:
        path = make_model(name, flags, tied)
        info = json.loads(run([BIN, "info", "-m", path, "--json"])[0])
        c = json.load(open(os.path.join(path, "config.json")))
        blas = json.loads(run([BLASBENCH, str(c["n_embd"]), str(c["n_inner"]), str(c["vocab_size"]), "128", "1",
                               str(c["n_layer"])])[0])
        res = {t: [] for t in (1, 2)}
        for r in range(repeats):
            for t in (1, 2):
                os.sched_setaffinity(0, pinned if t == 1 else all_cpus)
                g = normlab_generate(path, START, 200, r, t, extra=["--temperature", "0", "--ignore-eos"])
                res[t].append(g["decode_tok_s"])
        os.sched_setaffinity(0, pinned)
        # a step reads every matrix once, and of an untied embedding only its token's row
        read = info["weight_bytes"] - (0 if tied else 4 * c["vocab_size"] * c["n_embd"])
        bound = blas["copy_gb_per_s"] * 1e9 / read
        rows[name] = {"parameters": info["parameters"], "weight_bytes": info["weight_bytes"], "tied": tied,
                      "bytes_read_per_token": read,
                      "decode_tok_s": summary(res[1]), "decode_2_threads_tok_s": summary(res[2]),
                      "copy_gb_per_s": blas["copy_gb_per_s"], "bandwidth_bound_tok_s": bound}
        d1, d2 = rows[name]["decode_tok_s"], rows[name]["decode_2_threads_tok_s"]
        print(f"{name:<20} {info['parameters'] / 1e6:6.1f}M params{' (tied)' if tied else ''}  greedy decode "
              f"1 thread {fmt(d1)} tok/s, 2 threads {fmt(d2)} ({d2['median'] / d1['median']:.2f}x); "
              f"reading its {read / 1e6:.1f} MB once a token at the copy loop's {blas['copy_gb_per_s']:.1f} GB/s: "
              f"{bound:.1f}")
    out["decode"] = rows


def samples_rows(repeats, out, all_cpus):
    """--samples 16 and one stream at 2 threads over LENGTHS, interleaved, and eval's tokens/s with the
    stride at the window (each position once, in full products), the ceiling of 16 streams."""
    os.sched_setaffinity(0, all_cpus)
    path = os.path.join(ROOT, "build", "bench-llama-text.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(validation_text(120000))  # the whole split (111,540 characters)
    T = json.load(open(os.path.join(SHIPPED, "config.json")))["block_size"]
    tokens = json.loads(run([BIN, "eval", "-m", SHIPPED, "-f", path, "--json"])[0])["tokens"]
    res = {n: {"samples16": [], "one": [], "shifts": 0} for n in LENGTHS}
    ceiling = []
    for r in range(repeats):
        for n in LENGTHS:
            g = normlab_generate(SHIPPED, PROMPT, n, 400 + r, 2, 16)
            res[n]["samples16"].append(g["decode_tok_s"])
            res[n]["shifts"] = g["context_shifts"]
            res[n]["one"].append(normlab_generate(SHIPPED, PROMPT, n, 400 + r, 2)["decode_tok_s"])
        _, err, _ = run([BIN, "eval", "-m", SHIPPED, "-f", path, "--stride", str(T), "-t", "2", "--json"])
        ceiling.append(float(SCORED.search(err).group(1)))  # eval's own rate: the loading and encoding left out
    top = summary(ceiling)
    print(f"\nshakespeare-llama, 2 threads, after {PROMPT!r} (medians of {repeats} interleaved runs): --samples 16 "
          f"against 1 stream; the products' ceiling (eval --stride {T} over {tokens} tokens, its own rate) "
          f"{fmt(top)} tok/s")
    rows = {}
    for n in LENGTHS:
        s16, one = summary(res[n]["samples16"]), summary(res[n]["one"])
        rows[str(n)] = {"samples16_tok_s": s16, "one_stream_tok_s": one, "context_shifts": res[n]["shifts"]}
        shifts = f"{res[n]['shifts']} shift{'' if res[n]['shifts'] == 1 else 's'}"
        print(f"  {n:4d} tokens ({shifts} a stream): 16 streams {fmt(s16)} tok/s, 1 stream "
              f"{fmt(one)}: {s16['median'] / one['median']:.2f}x; the ceiling {top['median'] / one['median']:.2f}x, "
              f"16 streams at {100 * s16['median'] / top['median']:.0f}% of it")
    out["samples16"] = {"lengths": rows, "ceiling_tok_s": top, "eval_tokens": tokens,
                        "ratio_median": statistics.median(rows[str(n)]["samples16_tok_s"]["median"]
                                                          / rows[str(n)]["one_stream_tok_s"]["median"]
                                                          for n in LENGTHS)}


def llama_rows(repeats, out):
    """Both parts, on the CPUs this process may use: 1-thread runs pinned to the last of them, as make
    bench pins its own, and 2-thread runs on all."""
    all_cpus = os.sched_getaffinity(0)
    print(f"\n== Llama (docs/llama.md): random models of llama2.c's shapes, then shakespeare-llama's --samples 16 "
          f"(medians of {repeats} interleaved runs [min-max])")
    os.sched_setaffinity(0, {max(all_cpus)})
    llama = {}
    decode_rows(repeats, llama, all_cpus)
    samples_rows(repeats, llama, all_cpus)
    os.sched_setaffinity(0, all_cpus)
    out["llama"] = llama


if __name__ == "__main__":
    run_alone("llama_bench.py", __doc__, llama_rows)
