#!/usr/bin/python3
"""Charts for `normlab compare --json OUT`: bits/char per row, residual-stream RMS by layer, and the
share of forward time per component. Writes three PNG files into OUT_DIR.

    /usr/bin/python3 tools/plot_compare.py compare.json OUT_DIR      (needs python3-matplotlib)
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COMPONENTS = ["embed", "norm1", "qkv", "attention", "attn_proj", "residual", "norm2", "mlp_up", "activation",
              "mlp_down", "final_norm", "lm_head"]


def label(row):
    name = os.path.basename(os.path.normpath(row["model"]))
    return name if row["override"] == "none" else f"{name}\nas {row['norm']}/{row['placement']}"


def bits_per_char(rows, path):
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(rows)), 4))
    colors = ["tab:blue" if r["override"] == "none" else "tab:gray" for r in rows]
    bars = ax.bar(range(len(rows)), [r["bits_per_char"] for r in rows], color=colors)
    ax.bar_label(bars, fmt="%.3f", fontsize=8)
    ax.set_xticks(range(len(rows)), [label(r) for r in rows], fontsize=7)
    ax.set_ylabel("bits per character (lower is better)")
    ax.set_title(f"Quality on {os.path.basename(rows[0]['text'])} ({rows[0]['chars']} characters)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def residual_rms(rows, path):
    fig, ax = plt.subplots(figsize=(7, 4))
    for r in rows:
        if r["override"] != "none":
            continue
        rms = r["residual_rms"]
        ax.plot(range(len(rms)), rms, marker="o", label=label(r))
    n = max(len(r["residual_rms"]) for r in rows)
    ax.set_xticks(range(n), [f"block {i} in" for i in range(n - 1)] + ["last out"], fontsize=8)
    ax.set_ylabel("RMS of the residual stream")
    ax.set_title("Residual stream RMS by depth (mean over positions)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def time_share(rows, path):
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(rows)), 4.5))
    bottom = [0.0] * len(rows)
    cmap = plt.get_cmap("tab20")
    for i, comp in enumerate(COMPONENTS):
        vals = [100 * r["time_share"].get(comp, 0.0) for r in rows]
        hatch = "//" if "norm" in comp else None
        ax.bar(range(len(rows)), vals, bottom=bottom, label=comp, color=cmap(i), hatch=hatch)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(rows)), [label(r) for r in rows], fontsize=7)
    ax.set_ylabel("% of forward time (eval of the text)")
    ax.set_title("Share of forward time per component (norms hatched)")
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: plot_compare.py COMPARE_JSON OUT_DIR")
    with open(argv[0]) as f:
        rows = json.load(f)
    if not rows:
        sys.exit("plot_compare.py: no rows")
    os.makedirs(argv[1], exist_ok=True)
    outputs = {"bits_per_char.png": bits_per_char, "residual_rms.png": residual_rms, "time_share.png": time_share}
    for name, draw in outputs.items():
        draw(rows, os.path.join(argv[1], name))
        print(f"wrote {os.path.join(argv[1], name)}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
