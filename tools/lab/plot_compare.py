#!/usr/bin/python3
"""Charts for `normlab compare --json` rows: bits/char per row, residual-stream RMS by layer, the RMS
of what each sublayer adds to the stream by layer (transformers), the share of forward time per
component, and where a row is recurrent the recurrent models' state norms ||h_t|| and ||c_t|| over
time: four or five PNG files into OUT_DIR. Every line and panel is named by its row, with its
variant (fold, w:q8, ...), and each PNG carries its titles and legend labels in its Description.
Rows of compare --lens add lens.png
(bits/char, the KL divergence from the last layer and the entropy, against the layer the
prediction is read after), rows of --outliers outliers.png (max
|x| / RMS and kurtosis by layer), and quantized rows (--quantize, --quantize-act) quantization.png
(the bits/char each rounding costs), rows of --attention attention.png (the sink share by head and
query position, per layer) and of --attention-pattern attention_pattern.png (one head's pattern).

    /usr/bin/python3 tools/lab/plot_compare.py compare.json OUT_DIR      (needs python3-matplotlib)
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.colors  # noqa: E402
import matplotlib.ticker  # noqa: E402

import nltool  # noqa: E402

COMPONENTS = ["embed", "norm1", "qkv", "attention", "attn_proj", "norm1_post", "residual", "norm2", "mlp_up",
              "activation", "mlp_down", "norm2_post", "input_proj", "recurrent_proj", "rnn_norm", "gates",
              "final_norm", "lm_head"]


def model_name(row):
    return os.path.basename(os.path.normpath(row["model"])).replace("shakespeare-", "")


def variant(row):
    """What the row changed of its model, as compare's table says it: " w:q8", " a:q8", " fold",
    " fold+center"; "" for the model as it is."""
    v = f" w:{row['quantize']}" if row.get("quantize", "none") != "none" else ""
    v += f" a:{row['quantize_act']}" if row.get("quantize_act", "none") != "none" else ""
    return v + (f" {row['folded']}" if row.get("folded", "none") != "none" else "")


def label(row):
    """The row's name in a legend or title: the model, how it ran where not as trained, its variant;
    each row of a comparison has its own."""
    name = model_name(row)
    stats = f" ({row['bn_stats']} stats)" if row.get("bn_stats") == "batch" else ""
    run = row["norm"] if row.get("placement") is None else f"{row['norm']}/{row['placement']}"  # recurrent: none
    run += {True: "+qk", False: "-qk"}.get(row.get("qk_norm"), "")  # a Llama row, as compare's table says
    return (name if row["override"] == "none" else f"{name} as {run}") + stats + variant(row)


LINESTYLES = {"": "-", " fold": "--", " fold+center": ":"}  # any rounding: "-."


def line_styles(rows):
    """A colour per model (tab10 up to 10 models, tab20 past them) and a linestyle per variant, so that
    no two lines of a plot look alike up to 20 models."""
    names = list(dict.fromkeys(model_name(r) for r in rows))
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    return [{"color": cmap(names.index(model_name(r)) % cmap.N), "ls": LINESTYLES.get(variant(r), "-.")}
            for r in rows]


def save(fig, path):
    """Saves fig as PNG with its titles and legend labels in the file's Description (a tEXt chunk that
    the tests read), one per line."""
    texts = [fig._suptitle.get_text()] if fig._suptitle else []
    for ax in fig.axes:
        texts += [t for t in (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) if t]
        legend = ax.get_legend()
        texts += [t.get_text() for t in legend.get_texts()] if legend else []
    fig.savefig(path, dpi=110, metadata={"Description": "\n".join(texts)})
    plt.close(fig)


def recurrent(row):
    """A recurrent row (LSTM, GRU): compare writes a null placement for the families without one; a
    transformer or a Llama has one."""
    return row.get("placement") is None


def as_trained(rows):
    """The rows run as trained (BatchNorm with its running statistics)."""
    return [r for r in rows if r["override"] == "none" and r.get("bn_stats") != "batch"]


def quality_key(rows):
    """bits_per_char where every row scores characters; bits_per_byte, the one unit every model shares,
    where a BPE model (GPT-2's, a Llama's: bits per token) is among them."""
    return "bits_per_char" if all(r.get("unit", "char") == "char" for r in rows) else "bits_per_byte"


def ablation(row, key="bits_per_char"):
    """Rows far worse than the models as trained (another placement, no norms, BatchNorm weights run
    as LayerNorm): more than 3 bits/char (or bits/byte) where the models reach 2.2-2.6."""
    return row[key] > 3.0


def bits_per_char(rows, path):
    """Horizontal bars (labels never overlap). Rows far worse than the rest get their own panel, on
    a log axis: the differences among the others (thousandths of a bit) stay visible."""
    key = quality_key(rows)
    unit = "char" if key == "bits_per_char" else "byte"
    near = [r for r in rows if not ablation(r, key)]
    far = [r for r in rows if ablation(r, key)]
    panels = [(g, t) for g, t in ((near, f"as trained, and the runs within 3 bits/{unit}"),
                                  (far, f"the runs past 3 bits/{unit} (log axis)")) if g]
    height = 0.45 * max(len(near), len(far)) + 1.6
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), height), squeeze=False)
    for ax, (group, title) in zip(axes[0], panels):
        vals = [r[key] for r in group]
        colors = ["tab:blue" if r["override"] == "none" else "tab:gray" for r in group]
        bars = ax.barh(range(len(group)), vals, color=colors)
        ax.bar_label(bars, fmt="%.4f", fontsize=8, padding=2)
        ax.set_yticks(range(len(group)), [label(r) for r in group], fontsize=8)
        ax.invert_yaxis()
        lo, hi = min(vals), max(vals)
        if group is far and hi > 10 * lo:
            ax.set_xscale("log")
            ax.set_xlim(lo / 1.5, hi * 4)
        else:
            span = hi - lo if hi > lo else 0.05 * hi
            ax.set_xlim(max(0.0, lo - 0.5 * span), hi + 0.6 * span)  # zoomed: the bars start near the smallest
        ax.set_xlabel(f"bits per {'character' if unit == 'char' else 'byte'} (lower is better)")
        ax.set_title(title, fontsize=10)
    size = f"{rows[0]['chars']} characters" if unit == "char" else f"{rows[0]['bytes']} bytes"
    fig.suptitle(f"Quality on {os.path.basename(rows[0]['text'])} ({size})", fontsize=11)
    fig.tight_layout()
    save(fig, path)


def per_layer(rows, path, key, ticks, ylabel, title):
    """One line per transformer as trained: rows[...][key] against depth, on a log axis."""
    rows = [r for r in rows if not recurrent(r)] or rows
    fig, ax = plt.subplots(figsize=(8, 4.5))
    shown = as_trained(rows)
    for r, style in zip(shown, line_styles(shown)):
        ax.plot(range(len(r[key])), r[key], marker="o", label=label(r), **style)
    n = max(len(r[key]) for r in rows)
    ax.set_xticks(range(n), ticks(n), fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel(ylabel + " (log scale)")
    ax.set_title(title + ", models as trained")
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    save(fig, path)


def residual_rms(rows, path):
    per_layer(rows, path, "residual_rms", lambda n: [f"block {i} in" for i in range(n - 1)] + ["last out"],
              "RMS of the residual stream", "Residual stream RMS by depth (mean over positions)")


def branch_rms(rows, path):
    """What each block adds: the RMS of the sublayer outputs (after peri's output norms), per layer."""
    per_layer(rows, path, "branch_rms", lambda n: [f"block {i}" for i in range(n)],
              "RMS of a sublayer's output", "What the attention and MLP add to the stream (mean of both)")


def time_share(rows, path):
    """Stacked horizontal bars, one per row, labels on the y axis and the legend outside."""
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(rows) + 1.8))
    left = [0.0] * len(rows)
    cmap = plt.get_cmap("tab20")
    for i, comp in enumerate(COMPONENTS):
        vals = [100 * r["time_share"].get(comp, 0.0) for r in rows]
        hatch = "//" if "norm" in comp else None
        ax.barh(range(len(rows)), vals, left=left, label=comp, color=cmap(i), hatch=hatch)
        left = [a + v for a, v in zip(left, vals)]
    ax.set_yticks(range(len(rows)), [label(r) for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("% of forward time (eval of the text)")
    ax.set_title("Share of forward time per component (norms hatched)")
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    save(fig, path)


def state_norm(rows, path):
    """The recurrent rows' last-layer ||h_t|| (solid) and the LSTMs' ||c_t|| (dashed) against the
    position t of one unbroken pass over the text, per doubling bucket, on log-log axes."""
    rnn = [r for r in rows if recurrent(r)]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if not rnn:
        ax.text(0.5, 0.5, "no recurrent model in this comparison", ha="center", va="center")
        ax.set_axis_off()
    for i, r in enumerate(rnn):
        color = plt.get_cmap("tab10")(i % 10)
        t = [s + 1 for s in r["state_bucket_start"]]  # bucket k starts at 2^k - 1: plotted at 2^k
        ax.plot(t, r["state_norm_h"], marker="o", color=color, label=label(r) + ": ||h_t||")
        if "state_norm_c" in r:
            ax.plot(t, r["state_norm_c"], marker="s", ls="--", color=color, label=label(r) + ": ||c_t||")
    if rnn:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("position t + 1 in the text (start of each doubling bucket)")
        ax.set_ylabel("mean Euclidean norm, last layer (log)")
        ax.set_title("Recurrent state over one unbroken pass (LSTM cell dashed)")
        ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    save(fig, path)


def float_rows(rows):
    """The rows as trained with nothing rounded (a compare run's quantized rows carry "quantize")."""
    return [r for r in as_trained(rows)
            if r.get("quantize", "none") == "none" and r.get("quantize_act", "none") == "none"]


def lens(rows, path):
    """The lens read after layer 0 (the embeddings), 1, ..., L, one line per transformer as trained:
    bits/char, and where the rows carry them (compare --lens) the lens's statistics: the KL
    divergence from the last layer (with its standard error) and the entropy of the prediction."""
    shown = [r for r in float_rows(rows) if r.get("lens_bits_per_char")]
    stats = any(r.get("lens_kl_bits") for r in shown)
    fig, axes = plt.subplots(1, 3 if stats else 1, figsize=(17 if stats else 8, 4.5), squeeze=False)
    axes = axes[0]
    for r, style in zip(shown, line_styles(shown)):
        v = r["lens_bits_per_char"]
        reading = f" [{r['lens_reading']}]" if r.get("lens_reading") else ""
        axes[0].plot(range(len(v)), v, marker="o", label=label(r) + reading, **style)
        if stats and r.get("lens_kl_bits"):
            kl, se = r["lens_kl_bits"], r["lens_kl_bits_stderr"]
            axes[1].errorbar(range(len(kl) - 1), kl[:-1], yerr=se[:-1], marker="o", capsize=2, **style)  # last: 0
            axes[2].plot(range(len(v)), r["lens_entropy_bits"], marker="o", **style)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("bits per character (log scale)")
    axes[0].set_title("Logit lens: the prediction read through the final norm and head after each layer"
                      if not stats else "Logit lens: bits/char read after each layer")
    if stats:
        axes[1].set_yscale("log")
        axes[1].set_ylabel("KL(last layer || layer), bits (log scale)")
        axes[1].set_title("How far each layer's distribution is from the last")
        axes[2].set_ylabel("entropy of the prediction, bits")
        axes[2].set_title("How sure each layer is")
    for ax in axes:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("layers the stream has passed (0: the embeddings)")
    axes[-1].legend(*axes[0].get_legend_handles_labels(), fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    save(fig, path)


def attention_rows(rows):
    return [r for r in float_rows(rows) if r.get("attention")]


def attention(rows, path):
    """One heat map per row and layer: head against query position t >= 1, the mean share of attention
    on the window's first position (the sink) of the queries at t. Query 0 (its only key is itself:
    share 1) is left out and the colours are on a log scale over the shares shown, so that the first
    queries (few keys, large shares) do not wash the rest out; each panel's title names its row with
    its variant."""
    shown = attention_rows(rows)
    cols = max([len(r["attention"]["sink_by_position"]) for r in shown] or [1])
    fig, axes = plt.subplots(max(len(shown), 1), cols, figsize=(3.2 * cols + 1.5, 2.8 * max(len(shown), 1) + 0.6),
                             squeeze=False, constrained_layout=True)
    grids = [[[[float("nan") if v is None else v for v in at[1:]] for at in heads]
              for heads in r["attention"]["sink_by_position"]] for r in shown]
    values = [v for g in grids for layer in g for at in layer for v in at if v == v and v > 0]
    scale = matplotlib.colors.LogNorm(vmin=max(min(values or [1e-3]), 1e-3), vmax=max(values or [1.0]))
    image = None
    for i, r in enumerate(shown):
        for l, grid in enumerate(grids[i]):
            image = axes[i][l].imshow(grid, aspect="auto", norm=scale, cmap="viridis", interpolation="nearest",
                                      extent=(0.5, len(grid[0]) + 0.5, len(grid) - 0.5, -0.5))
            axes[i][l].set_title(f"{label(r)}: layer {l}", fontsize=8)
            axes[i][l].set_xlabel("query position (from 1)", fontsize=7)
            axes[i][l].set_ylabel("head", fontsize=7)
            axes[i][l].set_yticks(range(len(grid)))
        for l in range(len(grids[i]), cols):
            axes[i][l].axis("off")
    if not shown:
        axes[0][0].text(0.5, 0.5, "no transformer rows", ha="center")
        axes[0][0].axis("off")
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8,
                     label=f"share on the first position (log scale, up to {scale.vmax:.3g})")
    fig.suptitle("Attention sink: the first position's share, by head and query position (query 0 left out)")
    save(fig, path)


def shown_piece(piece):
    """A token as an axis label: a space as an open box, a newline as a return sign."""
    return piece.replace(" ", "\u2423").replace("\n", "\u23ce") or "\u2205"


def attention_pattern(rows, path):
    """The kept head's full pattern on the text's first window, in one square panel: the first row
    that kept one (the title says which, and how many others compare's JSON keeps), key against query,
    every token on both axes."""
    shown = [r for r in float_rows(rows) if r.get("attention_pattern")]
    n = len(shown[0]["attention_pattern"]["probabilities"]) if shown else 0
    side = max(6.0, 0.075 * n + 2.0)  # about 8 pixels a token at 110 dpi
    fig, ax = plt.subplots(figsize=(side + 1.2, side))
    if shown:
        r, p = shown[0], shown[0]["attention_pattern"]
        image = ax.imshow(p["probabilities"], cmap="magma", vmin=0.0, interpolation="nearest")
        ax.set_aspect("equal")
        others = f" (and {len(shown) - 1} other rows in the JSON)" if len(shown) > 1 else ""
        ax.set_title(f"{label(r)}: head {p['layer']}.{p['head']} on the first window{others}", fontsize=10)
        ax.set_xlabel("key")
        ax.set_ylabel("query")
        pieces = p.get("pieces") or []
        if len(pieces) == n:
            ticks = [shown_piece(t) for t in pieces]
            ax.set_xticks(range(n), ticks, fontsize=5 if n > 64 else 7, rotation=90)
            ax.set_yticks(range(n), ticks, fontsize=5 if n > 64 else 7)
        fig.colorbar(image, ax=ax, shrink=0.8, label="attention")
    else:
        ax.text(0.5, 0.5, "no transformer rows", ha="center")
        ax.axis("off")
    fig.tight_layout()
    save(fig, path)


def outliers(rows, path):
    """Two panels, one line per model as trained: the largest |x| / RMS of the residual stream by
    layer, and the kurtosis of the MLP's c_proj input (the sharpest place in these models) by layer."""
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    shown = float_rows(rows)
    for r, style in zip(shown, line_styles(shown)):
        for ax, site, key in ((axes[0], "residual", "max_abs_over_rms"), (axes[1], "out_in", "kurtosis")):
            pts = [(e["layer"], e[key]) for e in r.get("outliers", []) if e["site"] == site and e[key] is not None]
            if not pts and site == "out_in":  # a recurrent model: its h
                pts = [(e["layer"], e[key]) for e in r.get("outliers", []) if e["site"] == "h" and e[key] is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label(r), **style)
    axes[0].set_title("residual stream: largest |x| / RMS of a position")
    axes[1].set_title("kurtosis of the MLP c_proj input (recurrent: of h)")
    for ax in axes:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("layer (L: the stream leaving the last)")
        ax.set_yscale("log")
    axes[1].axhline(3.0, color="gray", ls=":", lw=1)
    axes[1].legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    save(fig, path)


def quantization(rows, path):
    """Grouped horizontal bars: the bits/char each quantized row costs against its model's float32 row."""
    base = {(r["model"], r["norm"], r.get("placement"), r.get("bn_stats")): r["bits_per_char"] for r in rows
            if r.get("quantize", "none") == "none" and r.get("quantize_act", "none") == "none"}
    kinds, cost = [], {}
    for r in rows:
        kind = ("w:" + r["quantize"] if r.get("quantize", "none") != "none" else "") + \
            (" a:" + r["quantize_act"] if r.get("quantize_act", "none") != "none" else "")
        key = (r["model"], r["norm"], r.get("placement"), r.get("bn_stats"))
        if kind and key in base:
            kinds += [kind] if kind not in kinds else []
            cost.setdefault(label(r), {})[kind] = r["bits_per_char"] - base[key]
    fig, ax = plt.subplots(figsize=(9, 0.18 * max(len(cost), 1) * max(len(kinds), 1) + 1.8))
    names = list(cost)
    h = 0.8 / max(len(kinds), 1)
    for k, kind in enumerate(kinds):
        vals = [cost[n].get(kind, 0.0) for n in names]
        bars = ax.barh([i + k * h for i in range(len(names))], vals, height=h, label=kind)
        ax.bar_label(bars, fmt="%+.4f", fontsize=7, padding=2)
    ax.set_yticks([i + 0.4 - h / 2 for i in range(len(names))], names, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_xlabel("bits/char minus the float32 row's (simulated rounding)")
    ax.set_title("What rounding the weights (w) or the linears' inputs (a) costs")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, path)


def main(argv):
    quiet = argv[:1] == ["--quiet"]  # normlab compare --plot-dir: it names the plots where it puts them
    argv = argv[1:] if quiet else argv
    if len(argv) != 2:
        sys.exit("usage: plot_compare.py [--quiet] COMPARE_JSON OUT_DIR")
    try:
        with open(argv[0], encoding="utf-8") as f:
            rows = json.load(f)
    except ValueError as e:
        raise nltool.ToolError(f"{argv[0]}: not compare --json output ({e})")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) and "model" in r for r in rows):
        raise nltool.ToolError(f"{argv[0]}: no rows of compare --json (a JSON array of objects with \"model\")")
    os.makedirs(argv[1], exist_ok=True)
    outputs = {"bits_per_char.png": bits_per_char, "residual_rms.png": residual_rms, "branch_rms.png": branch_rms,
               "time_share.png": time_share}
    if any(recurrent(r) for r in rows):  # (none drawn where no recurrent model is compared)
        outputs["state_norm.png"] = state_norm
    if any("lens_bits_per_char" in r for r in rows):
        outputs["lens.png"] = lens
    if any("outliers" in r for r in rows):
        outputs["outliers.png"] = outliers
    if any("quantize" in r for r in rows):
        outputs["quantization.png"] = quantization
    if any("attention" in r for r in rows):
        outputs["attention.png"] = attention
    if any("attention_pattern" in r for r in rows):
        outputs["attention_pattern.png"] = attention_pattern
    for name, draw in outputs.items():
        draw(rows, os.path.join(argv[1], name))
        if not quiet:
            print(f"wrote {os.path.join(argv[1], name)}", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("plot_compare.py", main, sys.argv[1:])
