#!/usr/bin/python3
"""The recurrent models beside the transformers (docs/forward.md): validation loss by
`normlab eval` over the whole split, the training curves' validation loss at equal steps, what eval
segments cost a recurrent model, generate's decode speed against the 4x128 transformer's (medians
of rounds taken in turn; run it on a quiet machine), and the loss curves as a plot.

    /usr/bin/python3 tools/lab/rnn_report.py VAL_TEXT OUT_DIR      (make rnn-report)

Writes OUT_DIR/rnn.json (which tools/dev/docs.py turns into the README's table) and
OUT_DIR/loss_curves.png. Runs ./normlab from the repository root; needs python3-matplotlib.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import nltool  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RECURRENT = ["shakespeare-lstm-ln", "shakespeare-lstm", "shakespeare-gru-ln", "shakespeare-gru"]
TRANSFORMERS = ["shakespeare-pre-ln", "shakespeare-post-ln", "shakespeare-pre-rms", "shakespeare-post-rms",
                "shakespeare-pre-bn", "shakespeare-post-bn", "shakespeare-peri-ln", "shakespeare-deepnorm",
                "shakespeare-nonorm"]
STEPS = [250, 500, 1000, 2000]  # the training curves' validation loss at these steps
SEGMENTS = [1, 16, 256]  # eval of the recurrent models with the split cut into this many parts
DECODE = ["shakespeare-pre-ln"] + RECURRENT  # generate's decode speed, measured in alternation
ROUNDS, NEW = 7, 2000


def normlab_eval(model, text, segments=None):
    cmd = [os.path.join(ROOT, "normlab"), "eval", "-m", model, "--text", text, "--json", "--threads", "1"]
    if segments:
        cmd += ["--segments", str(segments)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise nltool.ToolError(f"normlab eval -m {model}: {out.stderr.strip()[-300:]}")
    seconds = float(out.stderr.split(" in ")[1].split(" s ")[0])  # "scored N characters in S s (...)"
    return json.loads(out.stdout), seconds


def model_row(name, text):
    path = os.path.join(ROOT, "weights", name)
    config = json.load(open(os.path.join(path, "config.json")))
    log = json.load(open(os.path.join(path, "train_log.json")))
    arch = config.get("arch", "transformer")
    result, seconds = normlab_eval(path, text)
    val = dict(log["loss_curve"]["val"])
    row = {"model": name, "arch": arch, "norm": config["norm"], "placement": config.get("placement"),
           "parameters": log["parameters"], "train_seconds": log["wall_seconds"],
           "eval_nats_per_char": result["nats_per_char"], "eval_bits_per_char": result["bits_per_char"],
           "eval_seconds": seconds, "chars": result["chars"],
           "val_at_step": {str(s): val.get(s) for s in STEPS},
           "val_estimate": "train.py: 32 contiguous streams of the split, one state each" if arch != "transformer"
           else "train.py: 640 windows of 128 characters, evenly spaced"}
    if arch != "transformer":
        row["segments"] = {}
        for k in SEGMENTS[1:]:
            r, s = normlab_eval(path, text, k)
            row["segments"][str(k)] = {"nats_per_char": r["nats_per_char"], "seconds": s}
    print(f"{name}: {result['nats_per_char']:.4f} nats/char in {seconds:.1f} s", file=sys.stderr)
    return row, log


def decode_speeds():
    """Median decode tok/s of `generate -n NEW` (one thread, greedy so every model does the same work
    per token) over ROUNDS rounds, the models taking turns within each round, so that a change in the
    machine's load reaches every model alike; and each one's ratio to the transformer's."""
    runs = {m: [] for m in DECODE}
    for _ in range(ROUNDS):
        for m in DECODE:
            cmd = [os.path.join(ROOT, "normlab"), "generate", "-m", os.path.join(ROOT, "weights", m), "-p", "ROMEO:",
                   "-n", str(NEW), "--temperature", "0", "--threads", "1", "--json"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise nltool.ToolError(f"normlab generate -m {m}: {r.stderr.strip()[-300:]}")
            out = r.stdout
            runs[m].append(json.loads(out)["decode_tok_s"])
    med = {m: sorted(v)[len(v) // 2] for m, v in runs.items()}
    base = med[DECODE[0]]
    for m in DECODE:
        print(f"decode {m}: {med[m]:,.0f} tok/s ({med[m] / base:.2f}x the transformer's)", file=sys.stderr)
    return {m: {"decode_tok_s": med[m], "min": min(runs[m]), "max": max(runs[m]), "ratio": med[m] / base}
            for m in DECODE}


def plot_curves(logs, path):
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for i, (name, log) in enumerate(logs):
        color = plt.get_cmap("tab10")(i % 10)
        short = name.replace("shakespeare-", "")
        train = log["loss_curve"]["train"]
        k = 50  # moving average of the per-step training loss
        steps = [s for s, _ in train][k - 1:]
        smooth = [sum(v for _, v in train[j - k + 1:j + 1]) / k for j in range(k - 1, len(train))]
        ax.plot(steps, smooth, color=color, alpha=0.35, lw=1)
        val = log["loss_curve"]["val"]
        ax.plot([s for s, _ in val], [v for _, v in val], color=color, marker="o", ms=3, label=short)
    ax.set_xlabel("step (batch of 32 x 128 characters)")
    ax.set_ylabel("loss, nats/char")
    ax.set_ylim(1.1, 2.6)
    ax.set_title("Training (faint, 50-step mean) and validation loss (markers)")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: rnn_report.py VAL_TEXT OUT_DIR")
    text, out = argv
    if not os.path.isfile(text):
        raise nltool.ToolError(f"{text}: no such file (the validation split: make rnn-report writes build/val.txt)")
    os.makedirs(out, exist_ok=True)
    rows, logs = [], []
    for name in RECURRENT + TRANSFORMERS:
        row, log = model_row(name, text)
        rows.append(row)
        if name in RECURRENT or name in ("shakespeare-pre-ln", "shakespeare-nonorm"):
            logs.append((name, log))
    speeds = decode_speeds()
    for r in rows:
        if r["model"] in speeds:
            r["decode"] = speeds[r["model"]]
    with open(os.path.join(out, "rnn.json"), "w") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")
    plot_curves(logs, os.path.join(out, "loss_curves.png"))
    print(f"wrote {out}/rnn.json and {out}/loss_curves.png", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("rnn_report.py", main, sys.argv[1:])
