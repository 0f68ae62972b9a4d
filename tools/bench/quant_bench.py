#!/usr/bin/python3
"""Decode speed of normlab's stored weights (docs/quantization.md) beside ggml's gpt-2 example on the
same weights: GPT-2 small's shape (12 layers, 768 wide, 12 heads, 1024 positions, 50257 tokens, pre-LN,
GELU tanh, biases, tied head) with random weights, as float32, Q8_0 and Q4_0.

    /usr/bin/python3 tools/bench/quant_bench.py [--ggml DIR] [--work DIR] [--repeats N] [--normlab BIN]

--ggml: a ggml build folder (or its bin/) holding gpt-2-backend and gpt-2-quantize, built by the user
from ggml's repository (examples/gpt-2, the CPU backend); ggml is never part of normlab and this
script never builds it. Without --ggml only normlab is measured.

The models are made once into the work folder (default build/quant-bench) and reused: nl-f32 (random
weights), nl-q8_0 and nl-q4_0 (`normlab quantize`), and with --ggml ggml-f32.bin
(tools/bench/ggml_gpt2.py), ggml-q8_0.bin and ggml-q4_0.bin (ggml's gpt-2-quantize of it). One run
of each binary decodes 64 tokens greedily after a one-token prompt ("\\n"), at 1 and 2 threads,
every (engine, type, threads) once a round, rounds repeated (--repeats, default 3); the table has the
medians of ms/token and ggml/normlab (above 1: normlab is faster). normlab's figure is its "decode"
line (the 63 passes after the prompt's); ggml's is its "ms per token" (its 64 one-token passes, the
prompt's among them). Then the peak RSS of a q8_0 run (GNU time) against the q8_0 file's size.
Standard library and numpy only; run it on a quiet machine.
"""
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import numpy as np  # noqa: E402

import nlformat  # noqa: E402
import nltool  # noqa: E402
from nltool import ToolError  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CONFIG = {"vocab_size": 50257, "n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024, "mlp_ratio": 4,
          "norm": "layernorm", "placement": "pre", "norm_eps": 1e-5, "activation": "gelu_tanh", "bias": True,
          "tie_embeddings": True}
TYPES = ("f32", "q8_0", "q4_0")
PROMPT = "\n"  # one token in both tokenizers
NL_DECODE = re.compile(r"decode (\d+) tokens?(?: \(.*?\))? in ([0-9.]+) ms")
GG_DECODE = re.compile(r"predict time = +[0-9.]+ ms / ([0-9.]+) ms per token")
MAXRSS = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")


def run(cmd, env=None):
    """stdout + stderr of cmd, or a ToolError naming it with its last line."""
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL,
                       env=dict(os.environ, **(env or {})))
    if p.returncode != 0:
        last = (p.stderr.strip() or p.stdout.strip() or f"exit status {p.returncode}").splitlines()[-1]
        raise ToolError(f"{os.path.basename(cmd[0])} {' '.join(cmd[1:3])} ...: {last}")
    return p.stdout + p.stderr


def stale(path, source):
    return not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(source)


def vocabulary(n):
    """The shipped models' characters (so that prompts encode alike), then supplementary-plane ones."""
    with open(os.path.join(ROOT, "weights", "shakespeare-pre-ln", "tokenizer.json"), encoding="utf-8") as f:
        shipped = json.load(f)["vocab"]
    return (shipped + [chr(0x10000 + i) for i in range(n - len(shipped))])[:n]


def make_models(work, normlab, ggml):
    """The models' paths by (engine, type), made where missing or older than nl-f32."""
    f32 = os.path.join(work, "nl-f32")
    weights = os.path.join(f32, "model.safetensors")
    if not os.path.exists(weights):
        print(f"making {f32} (random weights) ...", flush=True)
        rng = np.random.default_rng(CONFIG["n_layer"] * 1000 + CONFIG["n_embd"])  # as bench.py's make_model
        tensors = {}
        for name, shape in nlformat.tensor_shapes(CONFIG).items():
            base = 1.0 if name.endswith(".weight") and (".ln_" in name or name.startswith("ln_f")) else 0.0
            tensors[name] = (base + 0.02 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
        nlformat.write_model_dir(f32, CONFIG, vocabulary(CONFIG["vocab_size"]), tensors,
                                 {"source": "tools/bench/quant_bench.py random weights"})
    paths = {("normlab", "f32"): f32}
    for t in TYPES[1:]:
        paths[("normlab", t)] = out = os.path.join(work, f"nl-{t}")
        if stale(os.path.join(out, "model.safetensors"), weights):
            run([normlab, "quantize", "-m", f32, "--type", t, "-o", out])
    if ggml:
        paths[("ggml", "f32")] = gf32 = os.path.join(work, "ggml-f32.bin")
        if stale(gf32, weights):
            run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggml_gpt2.py"), f32,
                 "--out", gf32], env={"NORMLAB_BIN": normlab})
        for t in TYPES[1:]:
            paths[("ggml", t)] = out = os.path.join(work, f"ggml-{t}.bin")
            if stale(out, gf32):
                run([ggml["quantize"], gf32, out + ".tmp", t])
                os.replace(out + ".tmp", out)
    return paths


def command(engine, path, threads, ggml, n):
    if engine == "normlab":
        return [ggml["normlab"], "generate", "-m", path, "-p", PROMPT, "-n", str(n), "--temperature", "0",
                "-t", str(threads), "--no-echo"]
    return [ggml["run"], "-m", path, "-p", PROMPT, "-n", str(n), "-t", str(threads), "--top_k", "1", "-s", "1",
            "--ignore-eos", "-c", str(CONFIG["block_size"])]


def ms_per_token(engine, out):
    if engine == "normlab":
        m = NL_DECODE.search(out)
        return float(m.group(2)) / int(m.group(1)) if m else None
    m = GG_DECODE.search(out)
    return float(m.group(1)) if m else None


def ggml_binaries(where):
    for d in (where, os.path.join(where, "bin")):
        run_bin, quant = os.path.join(d, "gpt-2-backend"), os.path.join(d, "gpt-2-quantize")
        if all(os.path.isfile(b) and os.access(b, os.X_OK) for b in (run_bin, quant)):
            return {"run": run_bin, "quantize": quant}
    raise ToolError(f"--ggml {where}: no gpt-2-backend and gpt-2-quantize there or in its bin/ "
                    "(build ggml's examples/gpt-2 with cmake)")


def main(argv):
    ap = nltool.ArgumentParser(prog="quant_bench.py", description="Decode ms/token of normlab's f32, q8_0 and "
                               "q4_0 beside ggml's gpt-2 example (GPT-2 small's shape, random weights).")
    ap.add_argument("--ggml", help="ggml's build folder (or its bin/) with gpt-2-backend and gpt-2-quantize")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "quant-bench"), help="where the models are kept")
    ap.add_argument("--repeats", type=int, default=3, help="rounds; the table has the medians (default 3)")
    ap.add_argument("--tokens", type=int, default=64, help="tokens generated a run (default 64)")
    ap.add_argument("--normlab", help="the normlab binary (default: $NORMLAB_BIN, else the checkout's)")
    a = ap.parse_args(argv)
    if a.repeats < 1 or a.tokens < 2:
        ap.error("--repeats must be at least 1 and --tokens at least 2")
    normlab = a.normlab or nltool.engine_binary()
    if not (os.path.isfile(normlab) and os.access(normlab, os.X_OK)):
        raise ToolError(f"--normlab {normlab}: not an executable file")
    ggml = ggml_binaries(a.ggml) if a.ggml else None
    if os.path.exists(a.work) and not os.path.isdir(a.work):
        raise ToolError(f"--work {a.work}: exists and is not a directory")
    os.makedirs(a.work, exist_ok=True)
    paths = make_models(a.work, normlab, ggml)
    bins = dict(ggml or {}, normlab=normlab)
    engines = ("normlab", "ggml") if ggml else ("normlab",)
    times, load = {}, os.getloadavg()[0]
    for r in range(a.repeats):
        for threads in (1, 2):
            for t in TYPES:
                for engine in engines:
                    out = run(command(engine, paths[(engine, t)], threads, bins, a.tokens))
                    ms = ms_per_token(engine, out)
                    if ms is None:
                        raise ToolError(f"{engine} {t}: no decode timing in its output")
                    times.setdefault((engine, t, threads), []).append(ms)
    print(f"\ndecode ms/token, GPT-2 small shape, random weights, {a.tokens} tokens greedy after a one-token prompt, "
          f"median of {a.repeats} interleaved rounds; load average {load:.2f} on {os.cpu_count()} CPUs before them")
    print(f"{'type':<6} {'threads':>7} {'normlab':>9}" + (f" {'ggml':>9} {'ggml/normlab':>13}" if ggml else ""))
    for threads in (1, 2):
        for t in TYPES:
            n = statistics.median(times[("normlab", t, threads)])
            row = f"{t:<6} {threads:>7} {n:>9.2f}"
            if ggml:
                g = statistics.median(times[("ggml", t, threads)])
                row += f" {g:>9.2f} {g / n:>13.2f}"
            print(row)
    print(f"\npeak RSS of a q8_0 run ({a.tokens} tokens, 1 thread) against the q8_0 file:")
    for engine in engines:
        path = paths[(engine, "q8_0")]
        size = os.path.getsize(os.path.join(path, "model.safetensors") if engine == "normlab" else path)
        timed = run(["/usr/bin/time", "-v"] + command(engine, path, 1, bins, a.tokens))
        rss = int(MAXRSS.search(timed).group(1)) * 1024
        print(f"{engine:<8} RSS {rss / 2**20:7.1f} MiB   file {size / 2**20:7.1f} MiB   RSS/file {rss / size:.2f}")
    print(f"\nnormlab: {normlab}" + (f"\nggml: {ggml['run']}, {ggml['quantize']}" if ggml else ""))


if __name__ == "__main__":
    nltool.run("quant_bench.py", main, sys.argv[1:])
