#!/usr/bin/python3
"""The depth and warm-up study: pre-LN and post-LN (LayerNorm) at 4 and 8 layers, each with the
shipped recipe's 100 warm-up steps and with none, at the shipped peak learning rate (2e-3) and at 3x
it (6e-3, the floor of the cosine scaled with it). Everything else is equal: width 64, 4 heads,
context 64, batches of 32, 1,500 steps, data order and seed 1337.

    /usr/bin/python3 tools/lab/depth_study.py train [--seed S] [RUN ...]   trains the missing runs, two at a time
    /usr/bin/python3 tools/lab/depth_study.py plot        make depth-study: docs/depth/*.png, summary.json

Runs go to weights/depth/NAME (NAME = {pre,post}-L{4,8}-{warm,nowarm}-lr{1,3}x, with -seedS for a
second seed), each with its whole loss curve in train_log.json. A run whose loss becomes non-finite
has diverged: train.py writes its log and no model. A run that ends near the unigram entropy of the
corpus (above 3.0 nats/char where the unigram entropy is 3.3) has collapsed: it learned nothing
past character frequencies. `plot` draws every run's validation curve into docs/depth/curves.png,
scores each model with `normlab eval` over the whole validation split, runs `normlab compare` on
the final models (bits/char and residual RMS per layer against depth: docs/depth/compare.png) and
writes docs/depth/summary.json.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402
import nltool  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "weights", "depth")
DOCS = os.path.join(ROOT, "docs", "depth")
CORPUS = os.path.join(ROOT, "..", "shared", "data", "tinyshakespeare.txt")
RECIPE = ["--n-embd", "64", "--n-head", "4", "--block-size", "64", "--batch-size", "32", "--steps", "1500",
          "--eval-every", "50", "--eval-batches", "4", "--threads", "1", "--no-progress"]
LR = 2e-3
COLLAPSE = 3.0  # nats/char: a run ending above this learned little past the unigram entropy (3.3)


def runs(seed=1337):
    out = []
    for L in (8, 4):  # the longer runs first, so that two at a time finish together
        for place in ("post", "pre"):
            for warm in (100, 0):
                for mult in (1, 3):
                    name = f"{place}-L{L}-{'warm' if warm else 'nowarm'}-lr{mult}x" + (
                        f"-seed{seed}" if seed != 1337 else "")
                    args = RECIPE + ["--n-layer", str(L), "--placement", place, "--warmup", str(warm),
                                     "--lr", str(LR * mult), "--min-lr", str(LR * mult / 10), "--seed", str(seed)]
                    out.append((name, args))
    return out


def others_training():
    """train.py processes not started here (the shipped models' runs, say): they hold cores too."""
    r = subprocess.run(["pgrep", "-f", "train.py --data"], capture_output=True, text=True)
    return len(r.stdout.split())


def train(a):
    todo = [(n, args) for n, args in runs(a.seed) if (not a.runs or n in a.runs)
            and not os.path.exists(os.path.join(OUT, n, "train_log.json"))]
    live = []
    while todo or live:
        live = [(n, p, t) for n, p, t in live if p.poll() is None or not report(n, p, t)]
        if todo and len(live) + max(0, others_training() - len(live)) < a.parallel:
            name, args = todo.pop(0)
            os.makedirs(os.path.join(ROOT, "build", "depth-logs"), exist_ok=True)
            log = open(os.path.join(ROOT, "build", "depth-logs", f"{name}.log"), "w")
            cmd = ["/usr/bin/python3", os.path.join(ROOT, "tools", "train", "train.py"), "--data", a.data,
                   "--out", os.path.join(OUT, name), "--resume"] + args
            live.append((name, subprocess.Popen(cmd, stdout=log, stderr=log), time.time()))
            print(f"started {name}", flush=True)
        time.sleep(5)


def report(name, p, t0):
    print(f"finished {name}: exit {p.returncode} after {time.time() - t0:.0f} s", flush=True)
    return True


def load_runs():
    out = {}
    for path in sorted(glob.glob(os.path.join(OUT, "*", "train_log.json"))):
        name = os.path.basename(os.path.dirname(path))
        log = json.load(open(path))
        val = log["loss_curve"]["val"]
        final = val[-1][1] if val else None
        status = ("diverged" if log.get("diverged_at") else
                  "collapsed" if final is None or final > COLLAPSE else "trained")
        out[name] = {"log": log, "status": status, "final_val_estimate": final,
                     "model": os.path.exists(os.path.join(OUT, name, "model.safetensors"))}
    return out


def normlab_eval(model, text):
    r = subprocess.run([os.path.join(ROOT, "normlab"), "eval", "-m", model, "--text", text, "--json"],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["nats_per_char"]


def plot(a):
    needs.packages("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(DOCS, exist_ok=True)
    found = load_runs()
    val_text = os.path.join(ROOT, "build", "val.txt")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "train", "split.py"), a.data, val_text], check=True)
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    for ax, mult in zip(axes, (1, 3)):
        for name, r in found.items():
            if f"-lr{mult}x" not in name:
                continue
            val = r["log"]["loss_curve"]["val"]
            style = "-" if name.startswith("pre") else "--"
            ax.plot([s for s, _ in val], [v for _, v in val], style, lw=1.3 if "seed" not in name else 0.8,
                    label=f"{name.replace(f'-lr{mult}x', '')} ({r['status']})")
            if r["status"] == "diverged":
                ax.axvline(r["log"]["diverged_at"], color="red", lw=0.6)
        ax.axhline(3.3, color="gray", lw=0.6, ls=":")
        ax.set_title(f"peak learning rate {LR * mult:g} ({mult}x the shipped)")
        ax.set_xlabel("step")
        ax.set_ylim(1.3, 4.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("validation loss, nats/char (train.py's estimate)")
    fig.suptitle("Depth and warm-up: pre-LN (solid) and post-LN (dashed); dotted: unigram entropy")
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "curves.png"), dpi=110)
    summary = {}
    for name, r in found.items():
        log = r["log"]
        summary[name] = {"status": r["status"], "diverged_at": log.get("diverged_at"),
                         "final_val_estimate": r["final_val_estimate"], "wall_seconds": log.get("wall_seconds"),
                         "val_nats_per_char": normlab_eval(os.path.join(OUT, name), val_text) if r["model"] else None}
    models = [os.path.join(OUT, n) for n in sorted(summary) if summary[n]["val_nats_per_char"] is not None
              and "seed" not in n]
    rows_path = os.path.join(DOCS, "compare.json")
    subprocess.run([os.path.join(ROOT, "normlab"), "compare", *models, "-f", val_text, "--repeats", "1",
                    "--json", "-o", rows_path], check=True)
    rows = json.load(open(rows_path))
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    for r in rows:
        name = os.path.basename(os.path.normpath(r["model"]))
        style = "-" if name.startswith("pre") else "--"
        axes[1].plot(range(len(r["residual_rms"])), r["residual_rms"], style, marker="o", ms=3, label=name)
    for i, place in enumerate(("pre", "post")):
        for cfg in ("warm-lr1x", "nowarm-lr1x", "warm-lr3x", "nowarm-lr3x"):
            pts = [(int(n.split("-L")[1].split("-")[0]), summary[n]["val_nats_per_char"] / 0.6931471805599453)
                   for n in summary if n.startswith(place + "-") and n.endswith(cfg) and
                   summary[n]["val_nats_per_char"] is not None]
            if pts:
                pts.sort()
                axes[0].plot([p for p, _ in pts], [b for _, b in pts], "-" if place == "pre" else "--", marker="o",
                             label=f"{place} {cfg}")
    axes[0].set_xlabel("layers")
    axes[0].set_ylabel("bits/char, whole validation split (normlab eval)")
    axes[0].set_xticks([4, 8])
    axes[0].legend(fontsize=7)
    axes[1].set_yscale("log")
    axes[1].set_xlabel("block (last: leaving the last)")
    axes[1].set_ylabel("residual stream RMS (log)")
    axes[1].legend(fontsize=6, ncol=2)
    fig.suptitle("Final models: quality and residual RMS against depth (pre-LN solid, post-LN dashed)")
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "compare.png"), dpi=110)
    with open(os.path.join(DOCS, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    for n in sorted(summary):
        s = summary[n]
        print(f"{n:<30} {s['status']:<9} val {s['val_nats_per_char'] or float('nan'):.4f} nats/char "
              f"(train.py estimate {s['final_val_estimate']}), {s['wall_seconds']} s"
              + (f", diverged at step {s['diverged_at']}" if s["diverged_at"] else ""))


def main(argv):
    p = nltool.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("runs", nargs="*", help="run names (default: every missing one)")
    t.add_argument("--seed", type=int, default=1337)
    t.add_argument("--parallel", type=int, default=2, help="training processes at once, counting others")
    t.add_argument("--data", default=CORPUS)
    g = sub.add_parser("plot")
    g.add_argument("--data", default=CORPUS)
    a = p.parse_args(argv)
    os.makedirs(OUT, exist_ok=True)
    (train if a.cmd == "train" else plot)(a)


if __name__ == "__main__":
    main(sys.argv[1:])
