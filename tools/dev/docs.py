#!/usr/bin/python3
"""The documentation's generated tables, from the data files in docs/ (never typed by hand).

Each table sits between markers, at the start of their lines, in README.md or a docs/*.md file:

    <!-- generated: NAME -->
    ...
    <!-- end generated: NAME -->

    tools/dev/docs.py --write     rewrite every marked table from docs/ (make docs runs it last)
    tools/dev/docs.py --check     exit 1, naming the file and table, when a table differs from docs/ (make test)

NAME is one of: models (the shipped models, docs/rnn/rnn.json and docs/compare/compare.json),
compare (docs/compare/compare.json, from make compare-models), profile (docs/profile/profile.json,
from make docs), rnn, rnn_segments and rnn_decode (docs/rnn/rnn.json, from make rnn-report). Each
must appear at least once, wherever it lives; a marker with an unknown NAME is an error.
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
    return "\n".join(out)


def compare_table():
    rows = json.load(open(os.path.join(ROOT, "docs", "compare", "compare.json"), encoding="utf-8"))
    out = ["| model | run as | bits/char | perplexity | prefill tok/s | decode tok/s | norm time "
           "| batch16 d | cache d |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        name = os.path.basename(os.path.normpath(r["model"])).replace("shakespeare-", "")
        norm = r["norm"] + ("*" if r["override"] == "norm" else "") + (f":{r['bn_stats']}" if "bn_stats" in r else "")
        if r.get("placement") is None:  # a recurrent model: its arch stands before the norm, as normlab prints it
            run_as = f"{r['arch']}/{norm}"
        else:
            run_as = f"{norm}/{r['placement']}" + ("*" if r["override"] == "placement" else "")
        ppl = "overflow" if r["perplexity"] is None else f"{r['perplexity']:.3f}"  # JSON has no infinity
        out.append(f"| {name} | {run_as} | {r['bits_per_char']:.4f} | "
                   f"{ppl} | {r['prefill_tok_s']:,.0f} | {r['decode_tok_s']:,.0f} | "
                   f"{100 * r['norm_time_share']:.1f}% | {r['batch16_max_logit_diff']:.2g} | "
                   f"{r['cache_max_logit_diff']:.2g} |")
    return "\n".join(out)


def profile_table():
    d = json.load(open(os.path.join(ROOT, "docs", "profile", "profile.json"), encoding="utf-8"))
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


def rnn_decode_table():
    """generate's decode speed of the recurrent models against the 4x128 transformer's."""
    rows = [r for r in json.load(open(os.path.join(ROOT, "docs", "rnn", "rnn.json"), encoding="utf-8"))
            if "decode" in r]
    out = ["| model | decode tok/s (median) | min - max | vs pre-ln |", "|---|---|---|---|"]
    for r in rows:
        d = r["decode"]
        out.append(f"| {r['model'].replace('shakespeare-', '')} | {d['decode_tok_s']:,.0f} | "
                   f"{d['min']:,.0f} - {d['max']:,.0f} | {d['ratio']:.2f}x |")
    return "\n".join(out)


TABLES = {"models": models_table, "compare": compare_table, "profile": profile_table, "rnn": rnn_table,
          "rnn_segments": rnn_segments_table,
          "rnn_decode": rnn_decode_table}
MARK = re.compile(r"^(<!-- generated: (\w+) -->\n)(.*?)(\n<!-- end generated: \2 -->)$", re.S | re.M)


def documents():
    """README.md and every docs/*.md (docs/cli.md included: it has no markers), in a fixed order."""
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def main(argv):
    if argv not in (["--write"], ["--check"]):
        print("usage: docs.py --write | --check  (see its docstring)", file=sys.stderr)
        sys.exit(2)
    found, stale, unknown, checked = set(), [], [], 0
    for path in documents():
        rel = os.path.relpath(path, ROOT)
        text = open(path, encoding="utf-8").read()

        def fill(m):
            nonlocal checked
            name = m.group(2)
            if name not in TABLES:
                unknown.append(f"{rel}: {name}")
                return m.group(0)
            found.add(name)
            checked += 1
            table = TABLES[name]()
            if m.group(3) != table:
                stale.append(f"{rel}: {name}")
            return m.group(1) + table + m.group(4)

        new = MARK.sub(fill, text)
        if argv == ["--write"] and new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    missing = set(TABLES) - found
    if missing or unknown:
        for name in sorted(missing):
            print(f"FAIL no document has the markers of table '{name}' (README.md or docs/*.md)")
        for what in unknown:
            print(f"FAIL unknown generated table {what}")
        print(f"docs_test: {checked - len(stale)} passed, {len(missing) + len(unknown) + len(stale)} failed")
        sys.exit(1)
    if argv == ["--write"]:
        print(f"docs.py: rewrote {', '.join(stale) or 'nothing (up to date)'}", file=sys.stderr)
        return
    for what in stale:
        print(f"FAIL table {what} differs from docs/ (run: tools/dev/docs.py --write)")
    print(f"docs_test: {checked - len(stale)} passed, {len(stale)} failed")
    sys.exit(1 if stale else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
