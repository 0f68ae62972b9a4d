#!/usr/bin/python3
"""tools/lab/plot_patch.py PATCH.json OUT.png — the heat map of `normlab patch --json`: the share of the
logit difference each (layer, position) patch recovers, layers down, positions across (each labelled
with its clean token, a space as an open box; * where the texts differ), titled by the model's name and
the two texts; the PNG's Description holds its title and axis labels. normlab patch --plot-dir runs it."""
import json
import math
import os
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
    shown = [c.replace(" ", "\u2423").replace("\n", "\u23ce") for c in clean]  # a space as an open box
    ax.set_xticklabels([c + ("" if a == k else "*") for c, a, k in zip(shown, clean, corrupt)], fontsize=7,
                       rotation=90)
    ax.set_yticks(range(L))
    ax.set_yticklabels([f"{l}" + (" (emb)" if l == 0 else " (out)" if l == L - 1 else "") for l in range(L)])
    ax.set_xlabel("position (clean token; * where the texts differ)")
    ax.set_ylabel("layer boundary")
    name = os.path.basename(os.path.normpath(d["model"]))  # the model's name, not where its folder is
    title = (f"{name}: clean {d['clean']['text']!r}, corrupted {d['corrupt']['text']!r}\n"
             f"share of logit[{d['target_piece']!r}] - logit[{d['foil_piece']!r}] recovered "
             f"(clean {d['clean_diff']:.3g}, corrupted {d['corrupt_diff']:.3g})")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    try:
        fig.savefig(argv[2], dpi=100, metadata={"Description": "\n".join([title, ax.get_xlabel(), ax.get_ylabel()])})
    except OSError as e:
        fail(f"{argv[2]}: {e}")


if __name__ == "__main__":
    main(sys.argv)
