#!/usr/bin/python3
"""tools/lab/plot_patch.py PATCH.json OUT.png — the heat map of `normlab patch --json`: the share of the
logit difference each (layer, position) patch recovers, layers down, positions across (each labelled
with its clean token; * where the texts differ). normlab patch --plot-dir runs it."""
import json
import math
import sys


def fail(msg):
    sys.exit(f"plot_patch.py: {msg}")


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        rec = d["recovered"]
        L, n = int(d["layers"]), int(d["positions"])
        if len(rec) != L or any(len(r) != n for r in rec):
            fail(f"{path}: recovered is not {L} x {n}")
        if not all(isinstance(x, (int, float)) and math.isfinite(x) for r in rec for x in r):
            fail(f"{path}: recovered holds a value that is not a finite number")
        return d
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{path}: {e}")


def main(argv):
    if len(argv) != 3:
        fail("usage: plot_patch.py PATCH.json OUT.png")
    d = read(argv[1])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rec = d["recovered"]
    L, n = len(rec), len(rec[0])
    lim = max(1.0, max(abs(x) for r in rec for x in r))
    fig, ax = plt.subplots(figsize=(min(24, 2 + 0.35 * n), 1.5 + 0.4 * L))
    im = ax.imshow(rec, cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
    clean, corrupt = d["clean"]["pieces"], d["corrupt"]["pieces"]
    ax.set_xticks(range(n))
    ax.set_xticklabels([repr(c)[1:-1] + ("" if c == k else "*") for c, k in zip(clean, corrupt)], fontsize=7,
                       rotation=90)
    ax.set_yticks(range(L))
    ax.set_yticklabels([f"{l}" + (" (emb)" if l == 0 else " (out)" if l == L - 1 else "") for l in range(L)])
    ax.set_xlabel("position (clean token; * where the texts differ)")
    ax.set_ylabel("layer boundary")
    ax.set_title(f"{d['model']}: share of logit[{d['target_piece']!r}] - logit[{d['foil_piece']!r}] recovered",
                 fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    try:
        fig.savefig(argv[2], dpi=100)
    except OSError as e:
        fail(f"{argv[2]}: {e}")


if __name__ == "__main__":
    main(sys.argv)
