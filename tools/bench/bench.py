#!/usr/bin/python3
"""make bench: normlab side by side with the two things a user would run instead, on the same model
(loaded from our format) and the same thread count, in one process tree and the same minutes:

  (a) nanoGPT-style PyTorch generation: recompute the cropped context for every new token, as
      nanoGPT's sample.py does;
  (b) PyTorch with a KV cache: one new position per step, the best eager PyTorch does.

Runs are interleaved (a, b, normlab, a, b, normlab, ...) and repeated; medians with min-max and the
ratios are printed, and everything goes to a JSON file. Measured for 1 and 2 threads: decode tokens/s
at batch 1 and first-token latency, prefill tokens/s of a 128-character prompt, eval characters/s,
batched sampling (--samples 1, 4, 16), load time and peak RSS, and OpenBLAS's own GFLOP/s on the
model's shapes (build/blasbench) as the practical limit. Then the table behind nl_linear's plan
(build/blaslayout: sgemv per row, sgemm NT and NN per shape and row count, and what the plan picks;
sgemv streaming from memory in either layout above the copy bound, GPT-2 small's shapes too) and the
bandwidth sgemv reaches on a matrix in memory; the fused attention pass against products by query
count (build/attnrows); random-weight models of growing size (up to
GPT-2-small shape, nanoGPT's shakespeare_char among them) for scaling at 1 and 2 threads, the time
per token against position, and the memory-bandwidth bound of the largest; the Llama rows
(tools/bench/llama_bench.py: llama2.c's shapes, shakespeare-llama's --samples 16); stored weights
(tools/bench/quant_bench.py: F16, Q8_0 and Q4_0 at GPT-2 small's shape, beside ggml's gpt-2 example
where $NORMLAB_GGML names a build of it, and the shipped models stored so). Besides: the default
model's profile, `normlab compare` of every shipped model and BPE on 1 MB pieces against Hugging
Face's tokenizers (tools/bench/tokenize_bench.py), so that every speed and share the
documents quote comes from this one run, with the machine, CPU, kernel family and date beside it.

    make bench                       (or: /usr/bin/python3 tools/bench/bench.py [--quick] [--out FILE])

make bench writes docs/bench.json (tools/dev/docs.py fills the documents' figures from it) and what
it prints to docs/bench.txt; run it on a quiet machine.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy", "torch")

import numpy as np  # noqa: E402

# PyTorch's OpenMP threads spin for a while after each parallel region; runs of normlab interleaved
# with PyTorch's in this process tree then share their cores with spinning threads (seen: normlab's
# 2-thread prefill at 23k instead of 51k tok/s). Passive threads sleep instead. Set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402

import nlformat  # noqa: E402
import nltool  # noqa: E402
from lab_bench import lab_rows  # noqa: E402  (tools/bench, beside this file)
from family_bench import family_rows  # noqa: E402  (tools/bench, beside this file)
from llama_bench import llama_rows  # noqa: E402  (tools/bench, beside this file)
from quant_bench import quant_rows  # noqa: E402
from sampler_bench import sampler_rows  # noqa: E402  (tools/bench, beside this file)
from tokenize_bench import long_pieces  # noqa: E402  (tools/bench, beside this file)
from torch_side import TorchModel, set_torch_threads  # noqa: E402  (tools/bench, beside this file)

from runs import (ATTNROWS, BIN, BLASBENCH, BLASLAYOUT, PROMPT, ROOT, TEXT, cpu_flags, fmt,  # noqa: E402,F401
                  machine, normlab_eval_rate, normlab_generate, peak_rss, run, summary,  # (tools/bench)
                  validation_text)


# ---- the model comparison

def compare(args, threads, model_path, tm, long_text_path, long_chars, out):
    set_torch_threads(threads)
    prompt128 = TEXT[200:328]
    res = {k: [] for k in ("a_decode", "a_first", "b_decode", "b_first", "n_decode", "n_first", "t_prefill",
                           "n_prefill", "t_eval", "n_eval")}
    for r in range(args.repeats):
        f, d = tm.generate_nanogpt(PROMPT, args.tokens, r)
        res["a_first"].append(f); res["a_decode"].append(d)
        f, d = tm.generate_cached(PROMPT, args.tokens, r)
        res["b_first"].append(f); res["b_decode"].append(d)
        g = normlab_generate(model_path, PROMPT, args.tokens, r, threads)
        res["n_first"].append(g["first_token_s"]); res["n_decode"].append(g["decode_tok_s"])
        res["t_prefill"].append(tm.prefill_rate(prompt128))
        res["n_prefill"].append(normlab_generate(model_path, prompt128, 1, r, threads, warmup=True)["prefill_tok_s"])
        res["t_eval"].append(torch_eval(model_path, long_text_path, threads, out["normlab_blas_core"])[0])
        res["n_eval"].append(normlab_eval_rate(model_path, long_text_path, threads, long_chars))
    batched = {}
    for streams in (1, 4, 16):
        batched[streams] = summary(
            [normlab_generate(model_path, PROMPT, args.tokens, 100 + r, threads, streams)["decode_tok_s"]
             for r in range(args.repeats)])
    out[f"threads_{threads}"] = ({k: summary(v) for k, v in res.items()}
                                 | {"batched_chars_s": {str(k): v for k, v in batched.items()}})
    s = out[f"threads_{threads}"]
    med = lambda k: s[k]["median"]  # noqa: E731
    where = f", all pinned to CPU {max(os.sched_getaffinity(0))}" if threads == 1 else ""
    print(f"\n== {os.path.basename(model_path)}, {threads} thread{'s' if threads > 1 else ''} "
          f"(medians of {args.repeats} interleaved runs [min-max]{where})")
    print(f"decode tok/s, batch 1, {args.tokens} tokens: normlab {fmt(s['n_decode'])}"
          f"   (a) nanoGPT-style {fmt(s['a_decode'])}"
          f"   (b) KV cache {fmt(s['b_decode'])}")
    print(f"   normlab / (a) = {med('n_decode') / med('a_decode'):.1f}x"
          f"    normlab / (b) = {med('n_decode') / med('b_decode'):.1f}x")
    print("first-token latency ms (normlab: a fresh process, weights paged in by this first pass): "
          f"normlab {1e3 * med('n_first'):.2f}   (a) {1e3 * med('a_first'):.2f}   (b) {1e3 * med('b_first'):.2f}")
    print(f"prefill tok/s, 128-character prompt (warm): normlab {fmt(s['n_prefill'])}   PyTorch {fmt(s['t_prefill'])}"
          f"   ratio {med('n_prefill') / med('t_prefill'):.1f}x")
    print(f"eval chars/s ({long_chars} characters): normlab {fmt(s['n_eval'])}   PyTorch, 32 windows a call, "
          f"OpenBLAS {out['normlab_blas_core']} {fmt(s['t_eval'])}   ratio {med('n_eval') / med('t_eval'):.2f}x")
    b1 = batched[1]["median"]
    print("batched sampling chars/s: "
          + "   ".join(f"{k} stream{'s' if k > 1 else ''} {v['median']:.0f} ({v['median'] / b1:.2f}x)"
                     for k, v in batched.items()))


def limits(model_path, threads, cfg, decode_tok_s, prefill_tok_s):
    """OpenBLAS GFLOP/s on the model's shapes, and normlab's speed as a fraction of what they allow."""
    D, F, V, T, L = cfg["n_embd"], nlformat.mlp_width(cfg), cfg["vocab_size"], cfg["block_size"], cfg["n_layer"]
    out, _, _ = run([BLASBENCH, str(D), str(F), str(V), str(min(T, 128)), str(threads), str(L)])
    b = json.loads(out)
    per_layer = ("qkv", "attn_proj", "mlp_up", "mlp_down")

    def seconds_per_token(kind):
        t = sum(2 * b["shapes"][k]["out"] * b["shapes"][k]["in"] / (b["shapes"][k][kind] * 1e9) for k in per_layer) * L
        return t + 2 * V * D / (b["shapes"]["lm_head"][kind] * 1e9)

    decode_limit, prefill_limit = 1 / seconds_per_token("sgemv_gflops"), 1 / seconds_per_token("sgemm_gflops")
    sweep = b["sweep_decode_tok_s"]
    return {"blas": b, "decode_limit_tok_s": decode_limit, "prefill_limit_tok_s": prefill_limit,
            "decode_fraction": decode_tok_s / decode_limit, "prefill_fraction": prefill_tok_s / prefill_limit,
            "sweep_decode_tok_s": sweep, "sweep_fraction": decode_tok_s / sweep}


# ---- kernel families and engine threads (docs/performance.md)

def torch_eval(model, text_path, threads, family):
    """PyTorch's batched eval (chars/s, nats/char) in a child process whose OpenBLAS runs `family`:
    Debian's torch calls the same OpenBLAS as normlab, which reads OPENBLAS_CORETYPE when it loads."""
    out, _, _ = run(["/usr/bin/python3", os.path.abspath(__file__), "--torch-eval", model, text_path, str(threads)],
                    {"OPENBLAS_CORETYPE": family, "OPENBLAS_NUM_THREADS": str(threads)})
    r = json.loads(out)
    return r["chars_s"], r["nats_per_char"]


def kernels(args, out, text_path, chars):
    """Decode and eval on one thread under each kernel family: out of the box, each candidate forced
    by hand, OpenBLAS's generic fallback kept, and the fallback with normlab's choice."""
    flags = cpu_flags()
    forced = ["Haswell"] if {"avx2", "fma"} <= flags else []
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        forced.append("SkylakeX")
    settings = [("out of the box", {})] + [(f"forced {f}", {"OPENBLAS_CORETYPE": f}) for f in forced] + [
        ("fallback Prescott, kept", {"OPENBLAS_CORETYPE": "Prescott"}),
        ("fallback Prescott, normlab picks", {"OPENBLAS_CORETYPE": None, "NORMLAB_BLAS_PRETEND": "Prescott"})]
    res = {name: {"decode": [], "eval": []} for name, _ in settings}
    for r in range(args.repeats):
        for name, env in settings:
            res[name]["decode"].append(normlab_generate(args.model, PROMPT, args.tokens, r, 1, env=env)["decode_tok_s"])
            res[name]["eval"].append(normlab_eval_rate(args.model, text_path, 1, chars, env))
    rows = {}
    for name, env in settings:
        info = json.loads(run([BIN, "info", "-m", args.model, "--json"], env)[0])
        rows[name] = {"blas_core": info["blas_core"], "source": info["blas_core_source"],
                      "decode_tok_s": summary(res[name]["decode"]), "eval_chars_s": summary(res[name]["eval"])}
    best = {k: max([rows[f"forced {f}"][k]["median"] for f in forced] or [float("nan")])
            for k in ("decode_tok_s", "eval_chars_s")}
    print(f"\n== OpenBLAS kernel families, 1 thread (medians of {args.repeats} interleaved runs [min-max])")
    print(f"{'setting':<34} {'family (chosen by)':<28} {'decode tok/s':>28} {'eval chars/s':>28}  vs best forced")
    for name, row in rows.items():
        ratios = "  ".join(f"{row[k]['median'] / best[k]:.2f}x" for k in ("decode_tok_s", "eval_chars_s"))
        print(f"{name:<34} {row['blas_core'] + ' (' + row['source'] + ')':<28} {fmt(row['decode_tok_s']):>28} "
              f"{fmt(row['eval_chars_s']):>28}  {ratios}")
    out["kernels"] = {"forced": forced, "rows": rows, "best_forced": best}


# ---- the plan's table (engine/linear.c)

def layout(out, shapes, all_cpus):
    """build/blaslayout's table for each (name, D, F, V[, "stream"]); "stream": its streaming table only
    (the layouts above the copy bound, linear.c). It runs on all_cpus: it pins its own one-thread
    measurements to the last CPU and runs its two-thread ones on two. Then build/attnrows, pinned as the caller is."""
    out["layout"] = {}
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, all_cpus)
    for name, D, F, V, *only in shapes:
        text = run([BLASLAYOUT, str(D), str(F), str(V), *only])[0].decode()
        print(f"\n== the products' plan (engine/linear.c) on {name}'s shapes: D {D}, F {F}, V {V}")
        print(text.rstrip())
        out["layout"][name] = text.splitlines()
    os.sched_setaffinity(0, pinned)
    text = run([ATTNROWS])[0].decode()
    print("\n== attention of n queries of one head: the fused pass against products (engine/transformer.c's "
          "ATTEND_ROWS_MIN), one thread")
    print(text.rstrip())
    out["attention_rows"] = text.splitlines()


# ---- ONNX Runtime (onnxruntime-node 1.30, tools/install-deps.sh --python), on the model exported by
# tools/interop/export_onnx.py: batched eval, and nanoGPT-style decode (the graph has no KV cache, so every
# step recomputes the last block_size positions, as nanoGPT's sample.py does)

ORT_NODE_PATH = os.path.join(ROOT, "build", "ort", "node_modules")


def ort_prepare(model, text_path):
    """(onnx path, ids file of the eval text, ids file of the prompt), or None without ONNX Runtime."""
    if not os.path.isdir(os.path.join(ORT_NODE_PATH, "onnxruntime-node")) or not shutil.which("node"):
        return None
    onnx_path = os.path.join(ROOT, "build", "bench-model.onnx")
    run(["/usr/bin/python3", os.path.join(ROOT, "tools", "interop", "export_onnx.py"), model, "--out", onnx_path])
    _, vocab, _ = nlformat.load_model(model)
    stoi = {ch: i for i, ch in enumerate(vocab)}
    files = []
    for name, text in (("bench-text.ids", open(text_path, encoding="utf-8").read()), ("bench-prompt.ids", PROMPT)):
        files.append(os.path.join(ROOT, "build", name))
        with open(files[-1], "w") as f:
            f.write(",".join(str(stoi[c]) for c in text))
    return onnx_path, files[0], files[1]


def ort_run(ort, mode, threads, block_size, n=0):
    onnx_path, text_ids, prompt_ids = ort
    cmd = ["node", os.path.join(ROOT, "tools", "bench", "ort_bench.js"), onnx_path, mode, str(threads),
           text_ids if mode == "eval" else prompt_ids, str(block_size)] + ([str(n)] if mode == "decode" else [])
    return json.loads(run(cmd, {"NODE_PATH": ORT_NODE_PATH})[0])


def thread_counts():
    n = len(os.sched_getaffinity(0))
    counts = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64]
    return sorted({c for c in counts if c <= n} | {n})


def threads(args, out, text_path, chars):
    """Scaling with engine threads: eval, --samples 16 and batch-1 decode of the shipped model at
    1, 2, ... up to every CPU, and PyTorch's batched eval at the same thread counts and kernels;
    ONNX Runtime's batched eval and nanoGPT-style decode too, when it is installed."""
    counts, family = thread_counts(), out["normlab_blas_core"]
    ort = ort_prepare(args.model, text_path)
    T = json.loads(run([BIN, "info", "-m", args.model, "--json"])[0])["block_size"]
    keys = ("eval", "samples16", "decode", "torch_eval") + (("ort_eval", "ort_decode") if ort else ())
    res = {t: {k: [] for k in keys} for t in counts}
    ort_nats = None
    for r in range(args.repeats):
        for t in counts:
            res[t]["eval"].append(normlab_eval_rate(args.model, text_path, t, chars))
            res[t]["samples16"].append(
                normlab_generate(args.model, PROMPT, args.tokens, 200 + r, t, 16)["decode_tok_s"])
            res[t]["decode"].append(normlab_generate(args.model, PROMPT, args.tokens, r, t)["decode_tok_s"])
            res[t]["torch_eval"].append(torch_eval(args.model, text_path, t, family)[0])
            if ort:
                e = ort_run(ort, "eval", t, T)
                res[t]["ort_eval"].append(e["chars_s"])
                ort_nats = e["nats_per_char"]
                res[t]["ort_decode"].append(ort_run(ort, "decode", t, T, args.tokens)["tok_s"])
    table = {t: {k: summary(v) for k, v in res[t].items()} for t in counts}
    print(f"\n== engine threads, {os.path.basename(args.model)} "
          f"(medians of {args.repeats} interleaved runs; x: against 1 thread)")
    print(f"{'threads':>7} {'eval chars/s':>22} {'--samples 16 chars/s':>24} {'decode tok/s (1 stream)':>26} "
          f"{'PyTorch eval chars/s':>24}  normlab/PyTorch eval")
    m = lambda t, k: table[t][k]["median"]  # noqa: E731
    for t in counts:
        print(f"{t:>7} {m(t, 'eval'):>13.0f} ({m(t, 'eval') / m(1, 'eval'):4.2f}x) {m(t, 'samples16'):>15.0f} "
              f"({m(t, 'samples16') / m(1, 'samples16'):4.2f}x) {m(t, 'decode'):>17.0f} "
              f"({m(t, 'decode') / m(1, 'decode'):4.2f}x) "
              f"{m(t, 'torch_eval'):>15.0f} ({m(t, 'torch_eval') / m(1, 'torch_eval'):4.2f}x)  "
              f"{m(t, 'eval') / m(t, 'torch_eval'):.2f}x")
    out["threads"] = {str(t): v for t, v in table.items()}
    if ort:
        nats = json.loads(run([BIN, "eval", "-m", args.model, "--text", text_path, "--json"])[0])["nats_per_char"]
        print(f"ONNX Runtime 1.30 (onnxruntime-node) on the exported graph; eval scores {ort_nats:.6f} nats/char "
              f"against normlab's {nats:.6f}")
        print(f"{'threads':>7} {'ORT eval chars/s':>22} {'normlab/ORT':>12} {'ORT nanoGPT-style decode tok/s':>32} "
              f"{'normlab decode/ORT':>19}")
        for t in counts:
            print(f"{t:>7} {m(t, 'ort_eval'):>13.0f} ({m(t, 'ort_eval') / m(1, 'ort_eval'):4.2f}x) "
                  f"{m(t, 'eval') / m(t, 'ort_eval'):>11.2f}x {m(t, 'ort_decode'):>23.0f} "
                  f"({m(t, 'ort_decode') / m(1, 'ort_decode'):4.2f}x) {m(t, 'decode') / m(t, 'ort_decode'):>18.2f}x")
        out["ort"] = {"version": "onnxruntime-node 1.30.0", "nats_per_char": ort_nats, "normlab_nats_per_char": nats}
    else:
        print("note: ONNX Runtime not installed (tools/install-deps.sh --python); its rows are left out")
    info = json.loads(run([BIN, "info", "-m", args.model, "--json"])[0])
    t = counts[-1]
    groups = 16 // 8  # --samples 16 runs in groups of 8 streams, one state each
    for what, cmd, live in (("eval", [BIN, "eval", "-m", args.model, "--text", text_path], t),
                            ("--samples 16", [BIN, "generate", "-m", args.model, "-p", PROMPT, "-n", "256",
                                              "--samples", "16", "--seed", "1"], min(t, groups))):
        rss = peak_rss(cmd + ["--threads", str(t)])
        # every live state (one per worker) holds 8 windows or streams of KV cache; 16 MiB per thread besides
        budget = (info["weight_bytes"] + info["transposed_bytes"] + live * 8 * info["kv_cache_bytes"]
                  + t * 16 * 2 ** 20)
        out["threads"][f"peak_rss_{what}"] = {"bytes": rss, "budget": budget}
        print(f"peak RSS, {what} at {t} threads: {rss / 2 ** 20:.1f} MiB "
              "(weights and their transposed copies + KV caches of the live states + 16 MiB a thread: "
              f"{budget / 2 ** 20:.1f})")
    if 2 in counts and T:  # (a recurrent model has no window)
        window = out["threads"]["within_window"] = window_rates(args, T)
        print(f"--samples 16 against 1 stream, both at 2 threads: {m(2, 'samples16') / m(2, 'decode'):.2f}x "
              f"({args.tokens} tokens); {window['samples16']['median'] / window['decode']['median']:.2f}x over "
              f"{window['tokens']}, the most that fit one window (no context shift)")


def window_rates(args, T):
    """Decode tok/s of --samples 16 and of 1 stream at 2 threads over the most tokens that fit the
    window, so that no context shift re-prefills half of it: the shifts are as many for 1 stream as
    for 16, but 16 streams' decode products already run at sgemm's speed, so the re-prefill costs
    them a larger share."""
    ids = json.loads(run([BIN, "tokenize", "-m", args.model, "-p", PROMPT, "--json"])[0])["ids"]
    n = T - len(ids) + 1  # the last new token is never fed back
    res = {"samples16": [], "decode": []}
    for r in range(args.repeats):
        for key, streams in (("samples16", 16), ("decode", 1)):
            g = normlab_generate(args.model, PROMPT, n, 300 + r, 2, streams)
            if g["context_shifts"]:
                raise RuntimeError(f"{n} tokens after the prompt shifted the context ({g['context_shifts']})")
            res[key].append(g["decode_tok_s"])
    return dict({k: summary(v) for k, v in res.items()}, tokens=n)


# ---- scaling

SIZES = [  # name, layers, width, heads, context, vocabulary, biases
    ("L4-D128-T128", 4, 128, 4, 128, 65, True),
    ("L6-D256-T256", 6, 256, 8, 256, 65, True),
    ("L6-D384-T256-nanogpt", 6, 384, 6, 256, 65, False),  # nanoGPT's shakespeare_char config
    ("L8-D512-T512", 8, 512, 8, 512, 65, True),
    ("L12-D768-T1024-gpt2small", 12, 768, 12, 1024, 50257, True),
]


def vocabulary(n, shipped):
    """n distinct one-character strings: the shipped models' 65 characters first (so the same prompts
    encode), then supplementary-plane code points (no surrogates, no NUL)."""
    return (list(shipped) + [chr(0x10000 + i) for i in range(max(0, n - len(shipped)))])[:n]


def make_model(path, L, D, H, T, V, bias, shipped):
    if os.path.exists(os.path.join(path, "model.safetensors")):
        return
    rng = np.random.default_rng(L * 1000 + D)
    cfg = {"vocab_size": V, "n_layer": L, "n_head": H, "n_embd": D, "block_size": T, "mlp_ratio": 4,
           "norm": "layernorm", "placement": "pre", "norm_eps": 1e-5, "activation": "gelu", "bias": bias,
           "tie_embeddings": True}
    tensors = {}
    for name, shape in nlformat.tensor_shapes(cfg).items():
        base = 1.0 if name.endswith(".weight") and (".ln_" in name or name.startswith("ln_f")) else 0.0
        tensors[name] = (base + 0.02 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
    nlformat.write_model_dir(path, cfg, vocabulary(V, shipped), tensors,
                             {"source": "tools/bench/bench.py random weights"})


def per_position(model_path, n):
    """Decode milliseconds per token against position, from a profile trace (no context shift)."""
    trace = os.path.join(ROOT, "build", "bench-trace.json")
    run([BIN, "profile", "-m", model_path, "-p", "\n", "-n", str(n), "--trace", trace])
    events = [e for e in json.load(open(trace))["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "decode"]
    starts = [e["ts"] for e in events if e["name"] == "embed"]
    ends = [e["ts"] + e["dur"] for e in events if e["name"] == "lm_head"]
    return [(i + 1, (end - start) / 1e3) for i, (start, end) in enumerate(zip(starts, ends))]


def copies(out, path, all_cpus):
    """What the transposed copies (engine/linear.c) cost and give on the largest model: their bytes,
    load time and peak RSS with and without them (--no-repack), and greedy decode (the forward pass
    alone: no sampling over the vocabulary) at 1 and 2 threads, interleaved."""
    info = json.loads(run([BIN, "info", "-m", path, "--json"])[0])
    row = {"transposed_bytes": info["transposed_bytes"]}
    for name, flags in (("copies", []), ("no_repack", ["--no-repack"])):
        row[name] = {"load_s": min(run([BIN, "info", "-m", path, "--json"] + flags)[2] for _ in range(3)),
                     "peak_rss_bytes": peak_rss([BIN, "generate", "-m", path, "-p", "\n", "-n", "16"] + flags)}
    pinned = os.sched_getaffinity(0)
    for t in (1, 2):
        os.sched_setaffinity(0, pinned if t == 1 else all_cpus)
        runs = {"copies": [], "no_repack": []}
        for r in range(5):
            for name, flags in (("copies", []), ("no_repack", ["--no-repack"])):
                greedy = normlab_generate(path, "\n", 64, r, t, extra=["--temperature", "0"] + flags)
                runs[name].append(greedy["decode_tok_s"])
        for name in runs:
            row[name][f"greedy_decode_{t}_threads_tok_s"] = summary(runs[name])
    os.sched_setaffinity(0, pinned)
    out["copies"] = row
    c, n = row["copies"], row["no_repack"]
    print(f"{os.path.basename(path)}: transposed copies {row['transposed_bytes'] / 2 ** 20:.1f} MiB; "
          f"load {1e3 * c['load_s']:.0f} ms (process), {1e3 * n['load_s']:.0f} with --no-repack; "
          f"peak RSS {c['peak_rss_bytes'] / 2 ** 20:.1f} MiB, {n['peak_rss_bytes'] / 2 ** 20:.1f} with --no-repack")
    for t in (1, 2):
        a, b = c[f"greedy_decode_{t}_threads_tok_s"], n[f"greedy_decode_{t}_threads_tok_s"]
        print(f"   greedy decode, {t} thread{'s' if t > 1 else ''}: {fmt(a)} tok/s with the copies, {fmt(b)} without "
              f"({a['median'] / b['median']:.2f}x)")


def scaling(args, out, shipped, all_cpus):
    print("\n== scaling: random-weight models, 1 thread but for decode at 2 (decode: 128 tokens after a newline; "
          "prefill: 128 characters)")
    rows, bw = [], None
    for name, L, D, H, T, V, bias in SIZES[: 2 if args.quick else None]:
        path = os.path.join(ROOT, "build", "scaling", name)
        make_model(path, L, D, H, T, V, bias, shipped)
        info = json.loads(run([BIN, "info", "-m", path, "--json"])[0])
        loads = [run([BIN, "info", "-m", path, "--json"])[2] for _ in range(3)]
        rss = peak_rss([BIN, "generate", "-m", path, "-p", "\n", "-n", "64", "--seed", "1"])
        dec = [normlab_generate(path, "\n", 128, r, 1)["decode_tok_s"] for r in range(3)]
        pinned = os.sched_getaffinity(0)
        os.sched_setaffinity(0, all_cpus)  # both cores for this one
        dec2 = [normlab_generate(path, "\n", 128, r, 2)["decode_tok_s"] for r in range(3)]
        os.sched_setaffinity(0, pinned)
        pre = [normlab_generate(path, TEXT[200:328], 1, r, 1, warmup=True)["prefill_tok_s"] for r in range(3)]
        # eval over 4 windows' worth of text; each window re-reads T positions for T/2 new characters,
        # so the GFLOP/s fraction counts positions processed, not characters scored
        text_t = os.path.join(ROOT, "build", f"bench-text-{T}.txt")
        with open(text_t, "w", encoding="utf-8") as f:
            f.write((TEXT * 20)[: 4 * T + 1])
        n_scored, stride = 4 * T, T // 2
        positions = T * (1 + -(-(n_scored - T) // stride))
        ev = [normlab_eval_rate(path, text_t, 1, n_scored) for _ in range(3)]
        lim = limits(path, 1,
                     {"n_embd": D, "n_inner": None, "mlp_ratio": 4, "vocab_size": V, "block_size": T, "n_layer": L},
                     statistics.median(dec), statistics.median(pre))
        bw = lim["blas"]["copy_gb_per_s"]
        row = {"model": name, "parameters": info["parameters"], "weight_bytes": info["weight_bytes"],
               "kv_cache_bytes": info["kv_cache_bytes"], "load_s": min(loads), "peak_rss_bytes": rss,
               "decode_tok_s": summary(dec), "decode_2_threads_tok_s": summary(dec2),
               "prefill_tok_s": summary(pre), "eval_chars_s": summary(ev),
               "eval_fraction_of_sgemm": statistics.median(ev) * positions / n_scored / lim["prefill_limit_tok_s"],
               "limits": lim,
               "bandwidth_bound_tok_s": bw * 1e9 / info["weight_bytes"]}
        rows.append(row)
        budget = info["weight_bytes"] + info["transposed_bytes"] + info["kv_cache_bytes"] + 16 * 2 ** 20
        print(f"{name:<26} {info['parameters'] / 1e6:7.1f}M params  decode {row['decode_tok_s']['median']:8.1f} tok/s "
              f"(bandwidth bound {row['bandwidth_bound_tok_s']:8.1f}, "
              f"{row['decode_tok_s']['median'] / row['bandwidth_bound_tok_s']:.2f}x of it; 2 threads "
              f"{row['decode_2_threads_tok_s']['median']:8.1f}, "
              f"{row['decode_2_threads_tok_s']['median'] / row['decode_tok_s']['median']:.2f}x)  "
              f"prefill {row['prefill_tok_s']['median']:8.1f} tok/s ({100 * lim['prefill_fraction']:.0f}% of sgemm)  "
              f"eval {row['eval_chars_s']['median']:8.1f} chars/s "
              f"({100 * row['eval_fraction_of_sgemm']:.0f}% of sgemm)  "
              f"load {1e3 * row['load_s']:.1f} ms (process)  peak RSS {rss / 2 ** 20:.1f} MiB "
              f"(weights + copies + KV + 16 MiB = {budget / 2 ** 20:.1f})")
    out["scaling"] = rows
    out["copy_gb_per_s"] = bw
    big = os.path.join(ROOT, "build", "scaling", SIZES[-1 if not args.quick else 1][0])
    T = SIZES[-1 if not args.quick else 1][4]
    dec2 = rows[-1]["decode_2_threads_tok_s"]
    out["largest_decode_2_threads"] = dec2
    bound = rows[-1]["bandwidth_bound_tok_s"]
    print(f"{os.path.basename(big)} with 2 threads: decode {fmt(dec2)} tok/s, {dec2['median'] / bound:.2f}x of the "
          f"1-thread copy loop's bandwidth bound ({bound:.1f})")
    copies(out, big, all_cpus)
    pts = per_position(big, T - 1)
    out["per_position_ms"] = pts
    q = len(pts) // 4
    parts = [statistics.median(ms for _, ms in pts[i * q:(i + 1) * q]) for i in range(4)]
    print(f"time per decoded token by position ({os.path.basename(big)}): quarters of the context "
          + ", ".join(f"{p:.2f} ms" for p in parts) + "  (linear growth: equal steps between quarters)")


# ---- the machine, the default model's profile, and the shipped models side by side

def profile(args, out):
    """normlab profile of the default model, 256 tokens on one thread (the caller pins it): the shares
    docs/profiling.md quotes."""
    text, _, _ = run([BIN, "profile", "-m", args.model, "-n", "256", "--threads", "1", "--seed", "1", "--json"])
    out["profile"] = json.loads(text)
    print("\n== profile of the default model, 256 tokens, 1 thread, pinned (the whole report: bench.json's profile)")
    for ph in out["profile"]["phases"]:
        top = sorted(ph["component_totals"], key=lambda c: -c["share"])[:4]
        print(f"{ph['phase']}: " + ", ".join(f"{c['component']} {100 * c['share']:.1f}%" for c in top))


def shipped(args, out):
    """normlab compare of every shipped model as trained, one thread (the caller pins it), on the
    held-out test text: decode and prefill speed and the share of forward time in the norms."""
    models = sorted(os.path.join(ROOT, "weights", m) for m in os.listdir(os.path.join(ROOT, "weights"))
                    if m.startswith("shakespeare-"))
    text, _, _ = run([BIN, "compare", *models, "-f", os.path.join(ROOT, "tests", "data", "held_out.txt"),
                      "--threads", "1", "--repeats", str(args.repeats), "--json"])
    out["shipped"] = json.loads(text)
    print(f"\n== the shipped models as trained, normlab compare, 1 thread, pinned (medians of {args.repeats})")
    for r in out["shipped"]:
        print(f"{os.path.basename(r['model']):<24} decode {r['decode_tok_s']:9.0f} tok/s  prefill "
              f"{r['prefill_tok_s']:9.0f} tok/s  norms {100 * r['norm_time_share']:.1f}% of forward time")


def main(argv):
    ap = nltool.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=os.path.join(ROOT, "weights", "shakespeare-pre-ln"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--quick", action="store_true", help="fewer repeats and only the two smallest scaling models")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "bench.json"))
    ap.add_argument("--log", help="also write what it prints to this file (at the end, whole)")
    ap.add_argument("--torch-eval", nargs=3, metavar=("MODEL", "TEXT", "THREADS"),
                    help="(internal) PyTorch's batched eval of TEXT, as JSON; run by the benchmark in a child process")
    args = ap.parse_args(argv)
    if args.torch_eval:
        model, text_path, th = args.torch_eval
        set_torch_threads(int(th))
        rate, nats = TorchModel(model).eval_batched(open(text_path, encoding="utf-8").read())
        print(json.dumps({"chars_s": rate, "nats_per_char": nats}))
        return
    if args.quick:
        args.repeats = 3
    if args.log:
        sys.stdout = nltool.Tee(sys.stdout)
    t_start = time.time()
    tm = TorchModel(args.model)
    long_text = os.path.join(ROOT, "build", "bench-text.txt")
    os.makedirs(os.path.dirname(long_text), exist_ok=True)
    with open(long_text, "w", encoding="utf-8") as f:  # 30,000 characters of the validation split if the corpus is here
        f.write(validation_text(30000))
    long_chars = len(open(long_text, encoding="utf-8").read()) - 1
    info = json.loads(run([BIN, "info", "-m", args.model, "--json"])[0])
    out = {"model": os.path.relpath(args.model, ROOT), **machine(),
           "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"), "torch": torch.__version__,
           "normlab_blas_core": info["blas_core"], "normlab_blas_core_source": info["blas_core_source"],
           "eval_text": long_text, "eval_chars": long_chars}
    print(f"{out['date']}, {out['cpu_model']} (family {out['cpu_family']}, model {out['cpu_model_number']}), "
          f"{out['cpus']} CPUs, Linux {out['kernel']}, {out['openblas']}")
    print(f"normlab runs OpenBLAS's {info['blas_core']} kernels (chosen by {info['blas_core_source']}; "
          f"OPENBLAS_CORETYPE {os.environ.get('OPENBLAS_CORETYPE', 'unset')}); "
          "PyTorch runs the same in every comparison")
    all_cpus = os.sched_getaffinity(0)
    pin = {max(all_cpus)}  # 1-thread runs of every contestant share one core, the last one
    out["pinned_cpu_for_1_thread"] = max(all_cpus)
    for th in [int(x) for x in args.threads.split(",")]:
        os.sched_setaffinity(0, pin if th == 1 else all_cpus)  # children inherit it
        compare(args, th, args.model, tm, long_text, long_chars, out)
        s = out[f"threads_{th}"]
        lim = limits(args.model, th, tm.c, s["n_decode"]["median"], s["n_prefill"]["median"])
        out[f"threads_{th}"]["limits"] = lim
        T, stride = tm.c["block_size"], tm.c["block_size"] // 2
        positions = T * (1 + -(-(long_chars - T) // stride))  # every window runs T positions
        lim["eval_fraction"] = s["n_eval"]["median"] * positions / long_chars / lim["prefill_limit_tok_s"]
        print(f"OpenBLAS on these shapes allows {lim['decode_limit_tok_s']:.0f} tok/s decode (sgemv) and "
              f"{lim['prefill_limit_tok_s']:.0f} tok/s prefill (sgemm); "
              f"normlab reaches {100 * lim['decode_fraction']:.0f}% "
              f"and {100 * lim['prefill_fraction']:.0f}%; eval runs {positions} positions for {long_chars} characters, "
              f"{100 * lim['eval_fraction']:.0f}% of what sgemm allows\n"
              f"sgemv through all {tm.c['n_layer']} layers' own weights and the head, as a decode step reads them "
              f"(not one hot matrix): {lim['sweep_decode_tok_s']:.0f} tok/s; normlab's decode (attention, norms, "
              f"sampling and context shifts included) reaches {100 * lim['sweep_fraction']:.0f}% of it")
    load = [run([BIN, "info", "-m", args.model, "--json"])[2] for _ in range(5)]
    out["load_s"] = summary(load)
    out["peak_rss_bytes"] = peak_rss([BIN, "generate", "-m", args.model, "-p", PROMPT, "-n", "256", "--seed", "1"])
    print(f"\nload + info, whole process: median {1e3 * out['load_s']['median']:.1f} ms; peak RSS of generate -n 256: "
          f"{out['peak_rss_bytes'] / 2 ** 20:.1f} MiB")
    os.sched_setaffinity(0, pin)
    profile(args, out)
    shipped(args, out)
    long_pieces(args.repeats, out)
    sampler_rows(args.repeats, out)
    lab_rows(args.repeats, out)  # (pinned: 1-thread runs)
    kernels(args, out, long_text, long_chars)
    D = tm.c["n_embd"]
    layout(out, [(os.path.basename(args.model), D, tm.c.get("n_inner") or tm.c.get("mlp_ratio", 4) * D,
                  tm.c["vocab_size"]), ("L6-D384-T256-nanogpt", 384, 1536, 65),
                 ("L12-D768-T1024-gpt2small", 768, 3072, 50257, "stream")], all_cpus)
    os.sched_setaffinity(0, all_cpus)
    threads(args, out, long_text, long_chars)
    os.sched_setaffinity(0, pin)  # the scaling runs are 1-thread
    scaling(args, out, tm.vocab, all_cpus)
    os.sched_setaffinity(0, all_cpus)
    llama_rows(args.repeats, out)
    family_rows(args.repeats, out)
    quant_rows(args.repeats, out)
    out["seconds"] = time.time() - t_start
    nlformat.atomic_write(args.out, json.dumps(out, indent=1) + "\n", "w")  # whole or not at all
    if args.log:
        nlformat.atomic_write(args.log, f"/usr/bin/python3 tools/bench/bench.py {' '.join(argv)}\n"
                              + sys.stdout.text.getvalue(), "w")
    print(f"\nwrote {os.path.relpath(args.out, ROOT)} ({out['seconds']:.0f} s in all)")


if __name__ == "__main__":
    nltool.run("bench.py", main, sys.argv[1:])
