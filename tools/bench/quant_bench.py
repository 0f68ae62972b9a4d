#!/usr/bin/python3
"""make bench's rows of stored weights (docs/quantization.md): decode and evaluation of models whose
matrices are F16, Q8_0 and Q4_0 beside their float32 selves, and beside ggml's gpt-2 example on the
same weights.

- GPT-2 small's shape (12 layers, 768 wide, 12 heads, 1024 positions, 50257 tokens, pre-LN, GELU tanh,
  biases, tied head), random weights: greedy decode ms/token of normlab's f32, f16, q8_0 and q4_0 at 1
  thread (pinned) and 2, 64 tokens after a one-token prompt, rounds interleaved; beside the bound that
  reading the file's weights once a token sets at the copy loop's bandwidth (build/blasbench), and,
  with ggml, ggml's f32, q8_0 and q4_0 (ggml/normlab above 1: normlab faster). normlab's figure is its
  "decode" line (the 63 passes after the prompt's); ggml's is its "ms per token" (its 64 one-token
  passes, the prompt's among them). Then eval's speed of each type against float32 (2 threads, 3,000
  characters: tiles widened and given to sgemm), and the peak RSS of a q8_0 run against its file.
- The shipped shakespeare-pre-ln and shakespeare-llama in f32, f16, q8_0 and q4_0: decode tokens/s at
  1 thread and eval characters/s at 2.

    /usr/bin/python3 tools/bench/quant_bench.py [--repeats N] [--ggml DIR]      (make bench runs it as a part)

--ggml (or $NORMLAB_GGML): a ggml build folder (or its bin/) holding gpt-2-backend and gpt-2-quantize,
which the user built from ggml's repository (examples/gpt-2, the CPU backend); ggml is never part of
normlab and nothing here builds it. Without it only normlab is measured. The models are made once
into build/quant-bench: nl-f32 (random weights, seeded as bench.py's), the others by `normlab quantize`,
and with ggml ggml-f32.bin (tools/bench/ggml_gpt2.py) and ggml-q8_0.bin, ggml-q4_0.bin (ggml's
gpt-2-quantize of it). Standard library and numpy; run it on a quiet machine.
"""
import argparse
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import numpy as np  # noqa: E402

import nlformat  # noqa: E402
import nltool  # noqa: E402
from nltool import ToolError  # noqa: E402
from runs import BIN, BLASBENCH, ROOT, fmt, normlab_generate, peak_rss, run, summary, validation_text  # noqa: E402

CONFIG = {"vocab_size": 50257, "n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024, "mlp_ratio": 4,
          "norm": "layernorm", "placement": "pre", "norm_eps": 1e-5, "activation": "gelu_tanh", "bias": True,
          "tie_embeddings": True}
TYPES = ("f32", "f16", "q8_0", "q4_0")
GGML_TYPES = ("f32", "q8_0", "q4_0")
WORK = os.path.join(ROOT, "build", "quant-bench")
PROMPT = "\n"  # one token in both tokenizers
GG_DECODE = re.compile(r"predict time = +[0-9.]+ ms / ([0-9.]+) ms per token")
SHIPPED = ("shakespeare-pre-ln", "shakespeare-llama")


def vocabulary(n):
    """The shipped models' characters (so that prompts encode alike), then supplementary-plane ones."""
    with open(os.path.join(ROOT, "weights", "shakespeare-pre-ln", "tokenizer.json"), encoding="utf-8") as f:
        shipped = json.load(f)["vocab"]
    return (shipped + [chr(0x10000 + i) for i in range(n - len(shipped))])[:n]


def stale(path, source):
    return not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(source)


def quantized(f32, kind, work, name):
    """work/NAME-KIND: `normlab quantize` of f32, made where missing or older than it."""
    out = os.path.join(work, f"{name}-{kind}")
    if stale(os.path.join(out, "model.safetensors"), os.path.join(f32, "model.safetensors")):
        run([BIN, "quantize", "-m", f32, "--type", kind, "-o", out])
    return out


def make_models(work, ggml):
    """The models' paths by (engine, type), made where missing or stale."""
    f32 = os.path.join(work, "nl-f32")
    weights = os.path.join(f32, "model.safetensors")
    if not os.path.exists(weights):
        print(f"making {os.path.relpath(f32, ROOT)} (random weights) ...", flush=True)
        rng = np.random.default_rng(CONFIG["n_layer"] * 1000 + CONFIG["n_embd"])  # as bench.py's make_model
        tensors = {}
        for name, shape in nlformat.tensor_shapes(CONFIG).items():
            base = 1.0 if name.endswith(".weight") and (".ln_" in name or name.startswith("ln_f")) else 0.0
            tensors[name] = (base + 0.02 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
        nlformat.write_model_dir(f32, CONFIG, vocabulary(CONFIG["vocab_size"]), tensors,
                                 {"source": "tools/bench/quant_bench.py random weights"})
    paths = {("normlab", "f32"): f32}
    for t in TYPES[1:]:
        paths[("normlab", t)] = quantized(f32, t, work, "nl")
    if ggml:
        paths[("ggml", "f32")] = gf32 = os.path.join(work, "ggml-f32.bin")
        if stale(gf32, weights):
            run(["/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggml_gpt2.py"), f32,
                 "--out", gf32])
        for t in GGML_TYPES[1:]:
            paths[("ggml", t)] = out = os.path.join(work, f"ggml-{t}.bin")
            if stale(out, gf32):
                run([ggml["quantize"], gf32, out + ".tmp", t])
                os.replace(out + ".tmp", out)
    return paths


def ggml_command(ggml, path, threads, n):
    return [ggml["run"], "-m", path, "-p", PROMPT, "-n", str(n), "-t", str(threads), "--top_k", "1", "-s", "1",
            "--ignore-eos", "-c", str(CONFIG["block_size"])]


def ms_per_token(engine, path, threads, ggml, n=64):
    if engine == "normlab":
        return 1e3 / normlab_generate(path, PROMPT, n, 1, threads, extra=["--temperature", "0"])["decode_tok_s"]
    out, err, _ = run(ggml_command(ggml, path, threads, n))
    m = GG_DECODE.search(out.decode() + err)
    if not m:
        raise ToolError(f"ggml {os.path.basename(path)}: no 'ms per token' in its output")
    return float(m.group(1))


def ggml_binaries(where):
    for d in (where, os.path.join(where, "bin")):
        run_bin, quant = os.path.join(d, "gpt-2-backend"), os.path.join(d, "gpt-2-quantize")
        if all(os.path.isfile(b) and os.access(b, os.X_OK) for b in (run_bin, quant)):
            return {"run": run_bin, "quantize": quant}
    raise ToolError(f"ggml {where}: no gpt-2-backend and gpt-2-quantize there or in its bin/ "
                    "(build ggml's examples/gpt-2 with cmake)")


def file_bytes(engine, path):
    return os.path.getsize(os.path.join(path, "model.safetensors") if engine == "normlab" else path)


def gpt2_rows(repeats, out, ggml, all_cpus):
    """Decode at 1 (pinned) and 2 threads, rounds interleaved; the bound; eval's speed; peak RSS."""
    pinned = os.sched_getaffinity(0)
    paths = make_models(WORK, ggml)
    engines = ("normlab", "ggml") if ggml else ("normlab",)
    c = CONFIG
    blas = json.loads(run([BLASBENCH, str(c["n_embd"]), str(4 * c["n_embd"]), str(c["vocab_size"]), "128", "1",
                           str(c["n_layer"])])[0])
    times = {}
    for _ in range(repeats):
        for threads in (1, 2):
            os.sched_setaffinity(0, pinned if threads == 1 else all_cpus)
            for t in TYPES:
                for engine in engines:
                    if (engine, t) in paths:
                        times.setdefault((engine, t, threads), []).append(
                            ms_per_token(engine, paths[(engine, t)], threads, ggml))
    print(f"GPT-2 small's shape, random weights: decode ms/token (median of {repeats} interleaved rounds [min-max]); "
          f"the bound: the file's weights read once a token at the copy loop's {blas['copy_gb_per_s']:.1f} GB/s")
    rows = {}
    for t in TYPES:
        size = file_bytes("normlab", paths[("normlab", t)])
        bound_ms = 1e3 * size / (blas["copy_gb_per_s"] * 1e9)
        row = {"file_bytes": size, "bound_ms": bound_ms}
        for threads in (1, 2):
            n = summary(times[("normlab", t, threads)])
            row[f"normlab_ms_{threads}"] = n
            line = f"  {t:<5} {threads} thread{'s' if threads > 1 else ' '} normlab {fmt(n)}"
            if threads == 1:
                line += f" (bound {bound_ms:.2f}: {100 * bound_ms / n['median']:.0f}% of it)"
            if ("ggml", t, threads) in times:
                g = summary(times[("ggml", t, threads)])
                row[f"ggml_ms_{threads}"] = g
                line += f"; ggml {fmt(g)}: ggml/normlab {g['median'] / n['median']:.2f}"
            print(line)
        rows[t] = row
    text = os.path.join(ROOT, "build", "bench-quant-text.txt")
    with open(text, "w", encoding="utf-8") as f:
        f.write(validation_text(3000))
    os.sched_setaffinity(0, all_cpus)
    evals = {t: [] for t in TYPES}
    for _ in range(repeats):
        for t in TYPES:
            evals[t].append(run([BIN, "eval", "-m", paths[("normlab", t)], "-f", text, "-t", "2", "--json"])[2])
    base = statistics.median(evals["f32"])
    print("  eval of 3,000 characters at 2 threads, against float32: " +
          ", ".join(f"{t} {statistics.median(evals[t]) / base:.2f}x the time" for t in TYPES[1:]))
    for t in TYPES:
        rows[t]["eval_s"] = summary(evals[t])
    os.sched_setaffinity(0, pinned)
    rss = {}
    for engine in engines:
        path = paths[(engine, "q8_0")]
        cmd = ([BIN, "generate", "-m", path, "-p", PROMPT, "-n", "64", "-t", "1", "--temperature", "0"]
               if engine == "normlab" else ggml_command(ggml, path, 1, 64))
        rss[engine] = {"peak_rss_bytes": peak_rss(cmd), "file_bytes": file_bytes(engine, path)}
        print(f"  peak RSS of a q8_0 run, {engine}: {rss[engine]['peak_rss_bytes'] / 2**20:.1f} MiB, "
              f"{rss[engine]['peak_rss_bytes'] / rss[engine]['file_bytes']:.2f}x its file")
    out["gpt2small"] = {"copy_gb_per_s": blas["copy_gb_per_s"], "types": rows, "peak_rss": rss,
                        "ggml": ggml["run"] if ggml else None}


def shipped_rows(repeats, out, all_cpus):
    """The shipped shakespeare-pre-ln and shakespeare-llama in every type: decode at 1 thread, eval at 2."""
    pinned = os.sched_getaffinity(0)
    text = os.path.join(ROOT, "build", "bench-quant-shipped.txt")
    with open(text, "w", encoding="utf-8") as f:
        f.write(validation_text(30000))
    rows = {}
    print(f"\nshipped models in every type: decode tok/s at 1 thread (256 tokens), eval chars/s at 2 (30,000 "
          f"characters), medians of {repeats}")
    for name in SHIPPED:
        f32 = os.path.join(ROOT, "weights", name)
        paths = {t: f32 if t == "f32" else quantized(f32, t, WORK, name) for t in TYPES}
        dec, ev = {t: [] for t in TYPES}, {t: [] for t in TYPES}
        for r in range(repeats):
            for t in TYPES:
                os.sched_setaffinity(0, pinned)
                dec[t].append(normlab_generate(paths[t], "ROMEO:\n", 256, r, 1)["decode_tok_s"])
                os.sched_setaffinity(0, all_cpus)
                ev[t].append(30000 / run([BIN, "eval", "-m", paths[t], "-f", text, "-t", "2", "--json"])[2])
        os.sched_setaffinity(0, pinned)
        rows[name] = {t: {"decode_tok_s": summary(dec[t]), "eval_chars_s": summary(ev[t]),
                          "file_bytes": os.path.getsize(os.path.join(paths[t], "model.safetensors"))} for t in TYPES}
        for t in TYPES:
            r = rows[name][t]
            print(f"  {name:<20} {t:<5} {r['file_bytes'] / 1e6:6.2f} MB  decode {fmt(r['decode_tok_s'])} tok/s  "
                  f"eval {fmt(r['eval_chars_s'])} chars/s")
    out["shipped"] = rows


def quant_rows(repeats, out, ggml_dir=None):
    """Both parts, on the CPUs this process may use: 1-thread runs pinned to the last of them."""
    all_cpus = os.sched_getaffinity(0)
    ggml_dir = ggml_dir or os.environ.get("NORMLAB_GGML")
    ggml = ggml_binaries(ggml_dir) if ggml_dir else None
    print("\n== stored weights (docs/quantization.md)" + ("" if ggml else ": normlab alone ($NORMLAB_GGML unset)"))
    os.makedirs(WORK, exist_ok=True)
    os.sched_setaffinity(0, {max(all_cpus)})
    quant = {}
    gpt2_rows(repeats, quant, ggml, all_cpus)
    shipped_rows(repeats, quant, all_cpus)
    os.sched_setaffinity(0, all_cpus)
    out["quant"] = quant


def main(argv):
    ap = nltool.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ggml", help="ggml's build folder (or its bin/) with gpt-2-backend and gpt-2-quantize")
    ap.add_argument("--json", help="also write the figures to this file (whole or not at all)")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error("--repeats must be at least 1")
    out = {}
    quant_rows(a.repeats, out, a.ggml)
    if a.json:
        nlformat.atomic_write(a.json, json.dumps(out, indent=1) + "\n", "w")


if __name__ == "__main__":
    nltool.run("quant_bench.py", main, sys.argv[1:])
