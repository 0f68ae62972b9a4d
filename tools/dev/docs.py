#!/usr/bin/python3
"""The documentation's generated tables and figures, from the data files in docs/ (never typed by hand).

Each table sits between markers, at the start of their lines, in README.md or a docs/*.md file:

    <!-- generated: NAME -->
    ...
    <!-- end generated: NAME -->

and each figure quoted in a sentence between two inline markers (Markdown shows neither):

    normlab decodes at <!-- figure: decode_1t -->8,309<!-- /figure --> tokens/s

    tools/dev/docs.py --write     rewrite every marked table and figure from docs/ (make docs runs it last)
    tools/dev/docs.py --check     exit 1, naming the file and table, when one differs from docs/ (make test)

Tables: models (the shipped models, docs/rnn/rnn.json, docs/compare/compare.json, docs/lab/recipes.json
for issue 61's models, and docs/gpt2/eval.json), compare
(docs/compare/compare.json, from make compare-models: quality, no speed), rnn and rnn_segments
(docs/rnn/rnn.json, from make rnn-report), and the speed tables, from docs/bench.json (make
bench): profile, shipped_speed, rnn_decode, bench_main, bench_kernels, bench_plan, bench_threads
and bench_scaling. Every speed and share the documents quote comes from docs/bench.json, one run
with its machine, CPU, kernel family and date: --check also fails on a speed, a speed ratio or a
share of time typed by hand outside the markers and code blocks (SPEED below). Each table and
figure must appear at least once, wherever it lives; a marker with an unknown NAME is an error.
Standard library only.
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def models_table():
    """The shipped models in one short table: what each is, and its validation bits/char by normlab eval
    over the whole validation split (rnn.json); the parameters as normlab counts them (list, info and
    compare: every number of the file, BatchNorm's running statistics included) and DeepNorm's
    residual scale from their compare rows."""
    rows = json.load(open(os.path.join(ROOT, "docs", "rnn", "rnn.json"), encoding="utf-8"))
    trained = {os.path.basename(os.path.normpath(r["model"])): r
               for r in json.load(open(os.path.join(ROOT, "docs", "compare", "compare.json"), encoding="utf-8"))
               if r["override"] == "none" and r.get("bn_stats", "running") == "running"}
    scale = {name: r.get("residual_scale", 1) for name, r in trained.items()}
    out = ["| model | family | norm | placement | parameters | bits/char |", "|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: r["placement"] is None):  # the transformers first
        name = f"`{r['model']}`" + (" (default)" if r["model"] == "shakespeare-pre-ln" else "")
        placement = r["placement"] or "-"
        if scale.get(r["model"], 1) != 1:
            placement += f", residual x{scale[r['model']]:.3f} (DeepNorm)"
        out.append(f"| {name} | {r['arch']} | {r['norm']} | {placement} | {trained[r['model']]['parameters']:,} | "
                   f"{r['eval_bits_per_char']:.4f} |")
    listed = {r["model"] for r in rows}
    for r in json.load(open(os.path.join(ROOT, "docs", "lab", "recipes.json"), encoding="utf-8")):
        name = os.path.basename(os.path.normpath(r["model"]))  # issue 61's models (findings-norms.md's command)
        if name in listed or r["override"] != "none" or r["quantize"] != "none" or r["folded"] != "none":
            continue
        listed.add(name)
        out.append(f"| `{name}` | {r['arch']} | {r['norm']} | {r['placement']} | {r['parameters']:,} | "
                   f"{r['bits_per_char']:.4f} |")
    ev, info = (json.load(open(os.path.join(ROOT, "docs", "gpt2", f), encoding="utf-8"))  # make bpe-eval
                for f in ("eval.json", "info.json"))
    out.append(f"| `{os.path.basename(info['model'].rstrip('/'))}` (GPT-2's BPE) | {info['arch']} | {info['norm']} | "
               f"{info['placement']} | {info['parameters']:,} | {ev['bits_per_byte']:.4f} |")
    ev, info = (json.load(open(os.path.join(ROOT, "docs", "llama", f), encoding="utf-8"))  # make llama-eval
                for f in ("eval.json", "info.json"))
    out.append(f"| `{os.path.basename(info['model'].rstrip('/'))}` (SentencePiece BPE) | {info['arch']} | "
               f"{info['norm']} | {info['placement']} | {info['parameters']:,} | {ev['bits_per_byte']:.4f} |")
    return "\n".join(out)


def compare_table():
    rows = json.load(open(os.path.join(ROOT, "docs", "compare", "compare.json"), encoding="utf-8"))
    """compare's quality columns of every shipped model under every override (the speeds of the same
    models come from docs/bench.json: shipped_speed)."""
    out = ["| model | run as | bits/char | perplexity | vs batch16 | vs cache |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        name = os.path.basename(os.path.normpath(r["model"])).replace("shakespeare-", "")
        norm = r["norm"] + ("*" if r["override"] == "norm" else "") + (f":{r['bn_stats']}" if "bn_stats" in r else "")
        if r.get("placement") is None:  # a recurrent model: its arch stands before the norm, as normlab prints it
            run_as = f"{r['arch']}/{norm}"
        else:
            run_as = f"{norm}/{r['placement']}" + ("*" if r["override"] == "placement" else "")
        ppl = "overflow" if r["perplexity"] is None else f"{r['perplexity']:.3f}"  # JSON has no infinity
        out.append(f"| {name} | {run_as} | {r['bits_per_char']:.4f} | {ppl} | "
                   f"{r['batch16_max_logit_diff']:.2g} | {r['cache_max_logit_diff']:.2g} |")
    return "\n".join(out)


def bench():
    """docs/bench.json, make bench's output: the one measured file of every speed and share."""
    global _BENCH
    if _BENCH is None:
        _BENCH = json.load(open(os.path.join(ROOT, "docs", "bench.json"), encoding="utf-8"))
    return _BENCH


_BENCH = None


def profile_table():
    d = bench()["profile"]
    out = ["| phase | component | calls | total ms | us/position | share | GFLOP/s |", "|---|---|---|---|---|---|---|"]
    for ph in d["phases"]:
        for c in ph["component_totals"]:
            if c["calls"] == 0:
                continue
            out.append(f"| {ph['phase']} | {c['component']} | {c['calls']} | {1e3 * c['seconds']:.3f} | "
                       f"{c['us_per_token']:.3f} | {100 * c['share']:.1f}% | {c['gflops_per_s']:.2f} |")
        out.append(f"| {ph['phase']} | (wall, {ph['tokens']} positions) | | {1e3 * ph['wall_seconds']:.3f} | | "
                   f"{100 * ph['rows_seconds'] / ph['wall_seconds']:.1f}% covered | |")
    return "\n".join(out)


def rnn_table():
    """The recurrent models beside the transformers: normlab eval over the whole validation split,
    and the training curves' validation estimates at equal steps."""
    rows = json.load(open(os.path.join(ROOT, "docs", "rnn", "rnn.json"), encoding="utf-8"))
    steps = list(rows[0]["val_at_step"])
    out = ["| model | arch/norm | parameters | val nats/char (normlab eval) | bits/char | "
           + " | ".join(f"val @ {s}" for s in steps) + " | train time |",
           "|---" * (6 + len(steps)) + "|"]
    for r in rows:
        name = r["model"].replace("shakespeare-", "")
        kind = f"{r['arch']}/{r['norm']}" if r["placement"] is None else f"transformer {r['norm']}/{r['placement']}"
        at = " | ".join("-" if r["val_at_step"][s] is None else f"{r['val_at_step'][s]:.3f}" for s in steps)
        out.append(f"| {name} | {kind} | {r['parameters']:,} | {r['eval_nats_per_char']:.4f} | "
                   f"{r['eval_bits_per_char']:.4f} | {at} | {r['train_seconds'] / 60:.0f} min |")
    return "\n".join(out)


def rnn_segments_table():
    """What cutting the split into independent segments (eval --segments K) costs a recurrent model."""
    rows = [r for r in json.load(open(os.path.join(ROOT, "docs", "rnn", "rnn.json"), encoding="utf-8"))
            if "segments" in r]
    ks = list(rows[0]["segments"])
    out = ["| model | 1 segment (one state) | " + " | ".join(f"{k} segments" for k in ks) + " |",
           "|---" * (2 + len(ks)) + "|"]
    for r in rows:
        cells = [f"{r['eval_nats_per_char']:.4f} ({r['eval_seconds']:.1f} s)"]
        for k in ks:
            seg = r["segments"][k]
            cells.append(f"{seg['nats_per_char']:.4f} ({seg['nats_per_char'] - r['eval_nats_per_char']:+.4f}, "
                         f"{seg['seconds']:.1f} s)")
        out.append(f"| {r['model'].replace('shakespeare-', '')} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def short(model):
    return os.path.basename(os.path.normpath(model)).replace("shakespeare-", "")


def shipped_speed_table():
    """Every shipped model as trained, one thread, pinned: normlab compare's decode and prefill
    speed and the norms' share of forward time, from docs/bench.json."""
    out = ["| model | run as | decode tok/s [min-max] | prefill tok/s | norms' share of forward time |",
           "|---|---|---|---|---|"]
    for r in bench()["shipped"]:
        run_as = f"{r['arch']}/{r['norm']}" if r.get("placement") is None else f"{r['norm']}/{r['placement']}"
        run_as += {True: "+qk", False: "-qk"}.get(r.get("qk_norm"), "")  # (a Llama row, as compare prints it)
        out.append(f"| {short(r['model'])} | {run_as} | {r['decode_tok_s']:,.0f} "
                   f"[{r['decode_tok_s_min']:,.0f}-{r['decode_tok_s_max']:,.0f}] | {r['prefill_tok_s']:,.0f} | "
                   f"{100 * r['norm_time_share']:.1f}% |")
    return "\n".join(out)


def rnn_decode_table():
    """generate's decode speed of the recurrent models against the 4x128 pre-LN transformer's, from
    the shipped models' compare in docs/bench.json (one thread, pinned)."""
    rows = {short(r["model"]): r for r in bench()["shipped"]}
    base = rows["pre-ln"]["decode_tok_s"]
    out = ["| model | decode tok/s (median) | min - max | vs pre-ln |", "|---|---|---|---|"]
    for name in ("lstm-ln", "lstm", "gru-ln", "gru", "pre-ln"):
        r = rows[name]
        out.append(f"| {name} | {r['decode_tok_s']:,.0f} | "
                   f"{r['decode_tok_s_min']:,.0f} - {r['decode_tok_s_max']:,.0f} | "
                   f"{r['decode_tok_s'] / base:.2f}x |")
    return "\n".join(out)


def med(s):
    return s["median"]


def bench_main_table():
    """The pinned one-thread comparison with PyTorch (make bench's first section)."""
    t = bench()["threads_1"]
    r = lambda a, b: med(t[a]) / med(t[b])  # noqa: E731
    return "\n".join([
        "| 1 thread, pinned | normlab | (a) nanoGPT-style | (b) PyTorch + KV cache | normlab / (a) | normlab / (b) |",
        "|---|---|---|---|---|---|",
        f"| decode tok/s, batch 1, 256 tokens | {med(t['n_decode']):,.0f} | {med(t['a_decode']):,.0f} | "
        f"{med(t['b_decode']):,.0f} | {r('n_decode', 'a_decode'):.1f}x | {r('n_decode', 'b_decode'):.1f}x |",
        f"| first-token latency | {1e3 * med(t['n_first']):.2f} ms (fresh process) | "
        f"{1e3 * med(t['a_first']):.2f} ms | "
        f"{1e3 * med(t['b_first']):.2f} ms | | |",
        f"| prefill tok/s, 128 characters | {med(t['n_prefill']):,.0f} | {med(t['t_prefill']):,.0f} | (same as a) | "
        f"{r('n_prefill', 't_prefill'):.1f}x | |",
        f"| eval characters/s (PyTorch: 32 windows a call) | {med(t['n_eval']):,.0f} | {med(t['t_eval']):,.0f} | | "
        f"{r('n_eval', 't_eval'):.2f}x | |"])


def bench_kernels_table():
    k = bench()["kernels"]
    out = ["| setting | family (chosen by) | decode tok/s | eval chars/s | against the best forced |",
           "|---|---|---|---|---|"]
    for name, row in k["rows"].items():
        ratios = ", ".join(f"{med(row[q]) / k['best_forced'][q]:.2f}x" for q in ("decode_tok_s", "eval_chars_s"))
        out.append(f"| {name} | {row['blas_core']} ({row['source']}) | {med(row['decode_tok_s']):,.0f} | "
                   f"{med(row['eval_chars_s']):,.0f} | {ratios} |")
    return "\n".join(out)


# (a run before nl_matmul_t has no matmul column)
PLAN_ROW = re.compile(r"^(\w+)\s+(\d+x\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)(?:\s+([\d.]+))?\s+(\w+)\s+(\w+)"
                      r"\s+([\d.]+)$")


def plan_rows():
    """build/blaslayout's rows from docs/bench.json: (model, linear, shape, rows, sgemv, NT, NN, matmul or
    None, fastest, plan, plan/fastest)."""
    for model, lines in bench()["layout"].items():
        for line in lines:
            m = PLAN_ROW.match(line.strip())
            if m:
                g = m.groups()
                yield (model, g[0], g[1], int(g[2]), float(g[3]), float(g[4]), float(g[5]),
                       float(g[6]) if g[6] else None, g[7], g[8], float(g[9]))


def bench_plan_table():
    """The plan against the fastest call: the rows of one and eight rows of every linear, and every
    row where the plan is more than 3% off the fastest."""
    out = ["| model | linear | rows | sgemv per row us | NT us | NN us | matmul us | fastest | plan | plan / fastest |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for model, lin, shape, rows, sgemv, nt, nn, mm, fastest, plan, ratio in plan_rows():
        if rows in (1, 8) or ratio > 1.03:
            matmul = "-" if mm is None else f"{mm:.1f}"
            out.append(f"| {model} | {lin} {shape} | {rows} | {sgemv:.1f} | {nt:.1f} | {nn:.1f} | {matmul} | "
                       f"{fastest} | {plan} | {ratio:.2f} |")
    return "\n".join(out)


def bench_threads_table():
    th = {k: v for k, v in bench()["threads"].items() if k.isdigit()}
    ort = "ort_eval" in th["1"]
    head = "| threads | eval chars/s | `--samples 16` chars/s | decode tok/s, 1 stream | PyTorch eval chars/s |"
    head += " ORT eval chars/s | ORT decode tok/s |" if ort else ""
    out = [head, "|---" * (head.count("|") - 1) + "|"]
    keys = ["eval", "samples16", "decode", "torch_eval"] + (["ort_eval", "ort_decode"] if ort else [])
    for t, row in sorted(th.items(), key=lambda kv: int(kv[0])):
        cells = [f"{med(row[k]):,.0f}" + (f" ({med(row[k]) / med(th['1'][k]):.2f}x)" if t != "1" else "") for k in keys]
        out.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def bench_scaling_table():
    out = ["| model | parameters | decode tok/s | 2 threads | bandwidth bound | prefill tok/s (of sgemm) | "
           "eval chars/s (of sgemm) | load (process) | peak RSS |", "|---|---|---|---|---|---|---|---|---|"]
    for r in bench()["scaling"]:
        d1, d2 = med(r["decode_tok_s"]), med(r["decode_2_threads_tok_s"])
        out.append(f"| {r['model']} | {r['parameters'] / 1e6:.1f}M | {d1:,.1f} | {d2:,.1f} ({d2 / d1:.2f}x) | "
                   f"{r['bandwidth_bound_tok_s']:,.1f} | {med(r['prefill_tok_s']):,.0f} "
                   f"({100 * r['limits']['prefill_fraction']:.0f}%) | {med(r['eval_chars_s']):,.0f} "
                   f"({100 * r['eval_fraction_of_sgemm']:.0f}%) | {1e3 * r['load_s']:.1f} ms | "
                   f"{r['peak_rss_bytes'] / 2 ** 20:.1f} MiB |")
    return "\n".join(out)


def quant_gpt2_table():
    """make bench's stored weights at GPT-2 small's shape (tools/bench/quant_bench.py): ms a token."""
    q = bench()["quant"]["gpt2small"]
    ggml = bool(q.get("ggml"))
    head = "| type | file MB | 1 thread ms/token | bound | of the bound | 2 threads |"
    head += " ggml 1 thread | ggml 2 threads | ggml / normlab |" if ggml else ""
    out = [head, "|---" * (head.count("|") - 1) + "|"]
    for t, r in q["types"].items():
        n1, n2 = med(r["normlab_ms_1"]), med(r["normlab_ms_2"])
        row = (f"| {t} | {r['file_bytes'] / 1e6:.0f} | {n1:.1f} | {r['bound_ms']:.2f} "
               f"| {100 * r['bound_ms'] / n1:.0f}% | {n2:.1f} |")
        if ggml and "ggml_ms_1" in r:
            g1, g2 = med(r["ggml_ms_1"]), med(r["ggml_ms_2"])
            row += f" {g1:.1f} | {g2:.1f} | {g1 / n1:.2f}x, {g2 / n2:.2f}x |"
        elif ggml:
            row += " - | - | - |"
        out.append(row)
    return "\n".join(out)


def quant_shipped_table():
    """make bench's shipped models in every stored type: decode at 1 thread, eval at 2."""
    out = ["| model | type | MB | decode tok/s | eval chars/s |", "|---|---|---|---|---|"]
    for name, types in bench()["quant"]["shipped"].items():
        for i, (t, r) in enumerate(types.items()):
            out.append(f"| {name if i == 0 else ''} | {t} | {r['file_bytes'] / 1e6:.2f} | "
                       f"{med(r['decode_tok_s']):,.0f} | {med(r['eval_chars_s']):,.0f} |")
    return "\n".join(out)


TABLES = {"models": models_table, "compare": compare_table, "profile": profile_table, "rnn": rnn_table,
          "rnn_segments": rnn_segments_table, "rnn_decode": rnn_decode_table, "shipped_speed": shipped_speed_table,
          "bench_main": bench_main_table, "bench_kernels": bench_kernels_table, "bench_plan": bench_plan_table,
          "bench_threads": bench_threads_table, "bench_scaling": bench_scaling_table, "quant_gpt2": quant_gpt2_table,
          "quant_shipped": quant_shipped_table}
def scaling_row(prefix):
    return next(r for r in bench()["scaling"] if r["model"].startswith(prefix))


def machine():
    """The run's machine in one phrase: what make bench measured on, and when."""
    b = bench()
    version = re.search(r"OpenBLAS ([\d.]+)", b.get("openblas") or "")
    return (f"{b['cpu_model']} (family {b['cpu_family']}, model {b['cpu_model_number']}), {b['cpus']} CPUs, "
            f"OpenBLAS {version.group(1) if version else '?'} on its {b['normlab_blas_core']} kernels, {b['date']}")


def share_range(rows):
    shares = [100 * r["norm_time_share"] for r in rows]
    return f"{min(shares):.1f}–{max(shares):.1f}%"


def normed(kind=None):
    """The shipped models as trained that have a norm (kind: 'transformer', 'recurrent' or either)."""
    rows = [r for r in bench()["shipped"] if r["norm"] != "none"]
    if kind:
        rows = [r for r in rows if (r.get("placement") is None) == (kind == "recurrent")]
    return rows


def ratio(x):
    return f"{x:.2f}x" if x < 10 else f"{x:.0f}x"


T1 = lambda k: med(bench()["threads_1"][k])  # noqa: E731
TH = lambda t, k: med(bench()["threads"][str(t)][k])  # noqa: E731
QG = lambda: bench()["quant"]["gpt2small"]  # noqa: E731
FIGURES = {  # every figure a sentence quotes: name -> its text, from docs/bench.json
    "machine": machine,
    "quant_copy_gb_s": lambda: f"{QG()['copy_gb_per_s']:.1f} GB/s",
    "quant_rss": lambda: ", ".join(f"{e} {r['peak_rss_bytes'] / 2 ** 20:.1f} MiB, "
                                  f"{r['peak_rss_bytes'] / r['file_bytes']:.2f}x" for e, r in QG()["peak_rss"].items()),
    "quant_eval": lambda: ", ".join(f"{t} {med(r['eval_s']) / med(QG()['types']['f32']['eval_s']):.2f}x"
                                   for t, r in QG()["types"].items() if t != "f32"),
    "repeats": lambda: str(bench()["threads_1"]["n_decode"]["runs"]),
    "decode_1t": lambda: f"{T1('n_decode'):,.0f}",
    "decode_1t_vs_a": lambda: ratio(T1("n_decode") / T1("a_decode")),
    "decode_1t_vs_b": lambda: ratio(T1("n_decode") / T1("b_decode")),
    "eval_1t": lambda: f"{T1('n_eval'):,.0f}",
    "eval_1t_vs_torch": lambda: ratio(T1("n_eval") / T1("t_eval")),
    "decode_2t_pinned_gain": lambda: ratio(med(bench()["threads_2"]["n_decode"]) / T1("n_decode")),
    "eval_fraction_1t": lambda: f"{100 * bench()['threads_1']['limits']['eval_fraction']:.0f}%",
    "sweep_1t": lambda: f"{bench()['threads_1']['limits']['sweep_decode_tok_s']:,.0f}",
    "sweep_fraction_1t": lambda: f"{100 * bench()['threads_1']['limits']['sweep_fraction']:.0f}%",
    "load_ms": lambda: f"{1e3 * med(bench()['load_s']):.1f}",
    "peak_rss_mib": lambda: f"{bench()['peak_rss_bytes'] / 2 ** 20:.1f}",
    "threads_decode_gain": lambda: ratio(TH(2, "decode") / TH(1, "decode")),
    "samples16_vs_1_2t": lambda: ratio(TH(2, "samples16") / TH(2, "decode")),
    "samples16_vs_1_1t": lambda: ratio(TH(1, "samples16") / TH(1, "decode")),
    "samples16_vs_1_2t_window": lambda: ratio(med(bench()["threads"]["within_window"]["samples16"])
                                              / med(bench()["threads"]["within_window"]["decode"])),
    "window_tokens": lambda: str(bench()["threads"]["within_window"]["tokens"]),
    "nanogpt_2t_gain": lambda: ratio(med(scaling_row("L6-D384")["decode_2_threads_tok_s"])
                                     / med(scaling_row("L6-D384")["decode_tok_s"])),
    "gpt2_2t_gain": lambda: ratio(med(scaling_row("L12")["decode_2_threads_tok_s"])
                                  / med(scaling_row("L12")["decode_tok_s"])),
    "gpt2_bound_1t": lambda: ratio(med(scaling_row("L12")["decode_tok_s"])
                                   / scaling_row("L12")["bandwidth_bound_tok_s"]),
    "gpt2_bound_2t": lambda: ratio(med(scaling_row("L12")["decode_2_threads_tok_s"])
                                   / scaling_row("L12")["bandwidth_bound_tok_s"]),
    "copy_gbs": lambda: f"{bench()['copy_gb_per_s']:.0f}",
    "norm_share_transformers": lambda: share_range(normed("transformer")),
    "norm_share_recurrent": lambda: share_range(normed("recurrent")),
    "kernels_fallback_decode": lambda: ratio(med(bench()["kernels"]["rows"]["fallback Prescott, kept"]["decode_tok_s"])
                                             / bench()["kernels"]["best_forced"]["decode_tok_s"]),
    "kernels_fallback_eval": lambda: ratio(med(bench()["kernels"]["rows"]["fallback Prescott, kept"]["eval_chars_s"])
                                           / bench()["kernels"]["best_forced"]["eval_chars_s"]),
    "plan_within_3pct": lambda: f"{sum(r[-1] <= 1.03 for r in plan_rows())} of {sum(1 for _ in plan_rows())}",
    "seconds": lambda: f"{bench()['seconds']:.0f}",
    "minutes": lambda: f"{bench()['seconds'] / 60:.0f}",
}
def percent(x):
    return f"{100 * x:.1f}%"


def phase(name):
    return next(p for p in bench()["profile"]["phases"] if p["phase"] == name)


def gflops_range(name, components=("qkv", "attn_proj", "mlp_up", "mlp_down")):
    rates = [c["gflops_per_s"] for c in phase(name)["component_totals"] if c["component"] in components]
    return f"{min(rates):.0f}–{max(rates):.0f}"


def top_shares(name, n=3):
    top = sorted(phase(name)["component_totals"], key=lambda c: -c["share"])[:n]
    return ", ".join(f"{c['component']} {100 * c['share']:.1f}%" for c in top)


def shipped_share(*names):
    shares = [100 * r["norm_time_share"] for r in bench()["shipped"] if short(r["model"]) in names]
    return f"{shares[0]:.1f}%" if len(shares) == 1 else f"{min(shares):.1f}–{max(shares):.1f}%"


FIGURES.update({
    "norm_share_ln": lambda: shipped_share("pre-ln", "post-ln", "deepnorm"),
    "norm_share_rms": lambda: shipped_share("pre-rms", "post-rms"),
    "norm_share_bn": lambda: shipped_share("pre-bn", "post-bn"),
    "norm_share_peri": lambda: shipped_share("peri-ln"),
    "norm_share_pre_ln": lambda: shipped_share("pre-ln"),
    "norm_share_lstm_ln": lambda: shipped_share("lstm-ln"),
    "profile_prefill_gflops": lambda: gflops_range("prefill"),
    "profile_decode_gflops": lambda: gflops_range("decode"),
    "profile_top_prefill": lambda: top_shares("prefill"),
    "profile_top_decode": lambda: top_shares("decode"),
    "profile_uncovered_decode": lambda: percent(phase("decode")["uncovered_seconds"] / phase("decode")["wall_seconds"]),
})
FIGURE = re.compile(r"(?<!`)<!-- figure: (\w+) -->(.*?)<!-- /figure -->")  # not one quoted as `code`
# A figure of speed typed by hand: a rate, a speed ratio, or a share of time. --check fails on each
# one found outside the markers and outside code blocks (whose outputs examples_test runs).
SPEED = re.compile(r"\d[\d,.]*\s?(?:tok/s|tokens/s|tokens per second|characters/s|chars/s|GB/s|GFLOP/s|MFLOP/s|"
                   r"ms/token|us/token)\b|\d[\d.]*x (?:faster|slower|further|PyTorch|nanoGPT|ggml|llama)|"
                   r"\d[\d.]*(?:[–-][\d.]+)?\s?% of (?:the )?(?:forward|decode|prefill|a step|time)", re.I)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]+`")  # inline code: an option, a command, an example of these markers


def hand_typed(text):
    """(line, figure) of every speed in text typed by hand: outside generated tables, figure markers
    and code blocks."""
    bare = MARK.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    bare = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), bare)
    bare = FIGURE.sub("", bare)
    bare = CODE.sub("", bare)
    return [(bare[:m.start()].count("\n") + 1, m.group(0)) for m in SPEED.finditer(bare)]


MARK = re.compile(r"^(<!-- generated: (\w+) -->\n)(.*?)(\n<!-- end generated: \2 -->)$", re.S | re.M)


def documents():
    """README.md and every docs/*.md (docs/cli.md included: it has no markers), in a fixed order."""
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def main(argv):
    if argv not in (["--write"], ["--check"]):
        print("usage: docs.py --write | --check  (see its docstring)", file=sys.stderr)
        sys.exit(2)
    found, stale, unknown, typed, checked = set(), [], [], [], 0
    for path in documents():
        rel = os.path.relpath(path, ROOT)
        text = open(path, encoding="utf-8").read()

        def fill(m, kinds=TABLES, what="table"):
            nonlocal checked
            name, body = m.group(2 if what == "table" else 1), m.group(3 if what == "table" else 2)
            if name not in kinds:
                unknown.append(f"{what} {rel}: {name}")
                return m.group(0)
            found.add(name)
            checked += 1
            made = kinds[name]()
            if body != made:
                stale.append(f"{what} {rel}: {name}")
            if what == "table":
                return m.group(1) + made + m.group(4)
            return f"<!-- figure: {name} -->{made}<!-- /figure -->"

        new = MARK.sub(fill, text)
        new = FIGURE.sub(lambda m: fill(m, FIGURES, "figure"), new)
        typed += [f"{rel}:{line}: '{fig}'" for line, fig in hand_typed(new)]
        checked += 1
        if argv == ["--write"] and new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    missing = (set(TABLES) | set(FIGURES)) - found
    fails = [f"no document has the markers of '{name}' (README.md or docs/*.md)" for name in sorted(missing)]
    fails += [f"unknown generated {what}" for what in unknown]
    fails += [f"a speed typed by hand at {where}: quote it from docs/bench.json (<!-- figure: NAME -->)"
              for where in typed]
    if argv == ["--write"]:
        print(f"docs.py: rewrote {', '.join(stale) or 'nothing (up to date)'}", file=sys.stderr)
        for why in fails:
            print(f"docs.py: {why}", file=sys.stderr)
        sys.exit(1 if fails else 0)
    fails += [f"{what} differs from docs/ (run: tools/dev/docs.py --write)" for what in stale]
    for why in fails:
        print(f"FAIL {why}")
    print(f"docs_test: {checked - len(stale) - len(typed)} passed, {len(fails)} failed")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (OSError, ValueError, KeyError, StopIteration, TypeError) as e:  # a data file missing or not as made
        where = f"{e.filename}: " if isinstance(e, OSError) and e.filename else ""
        sys.exit(f"docs.py: {where}{getattr(e, 'strerror', None) or type(e).__name__ + ': ' + str(e)} "
                 "(remake the data files: make bench, make docs)")
