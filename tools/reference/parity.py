#!/usr/bin/python3
"""Live parity check: the C engine (./normlab logits / eval) against tools/reference/reference.py
(PyTorch, float64) on random prompts, for the shipped models, random-weight models of every
norm x placement x bias combination and DeepNorm (written as safetensors directories), and the
--norm/--placement/--bn-stats overrides; and for the recurrent models (LSTM and GRU, LayerNorm or
none: the shipped ones that exist and random-weight ones) as configured and with the other --norm,
eval with one unbroken state and with --segments 4. A few shipped and random models also run
quantized (--quantize q8, q4, q4 with --quantize-only, and --quantize-act q8; the reference applies
the same rule, tools/lib/nlmodel.py), and a random model whose matrices lie on exact rounding ties
(rounding half to even shows). Prints the worst |logit difference| per model and quantized run;
exits 1 if any exceeds the tolerance (see ACT_PREFIX for --quantize-act).

    make parity          (or: /usr/bin/python3 tools/reference/parity.py [--seed S] [--prompts N])
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy", "torch")

import numpy as np  # noqa: E402

import nlformat  # noqa: E402
import nlmodel  # noqa: E402
import nltool  # noqa: E402
from reference import RECURRENT, ROOT, SHIPPED, Reference, is_recurrent, load_reference  # noqa: E402

# issue 61's trained models: each placement's and DyT's (tools/train/train.py, docs/training.md)
RECIPE_SHIPPED = ["shakespeare-post-sublayer-rms", "shakespeare-parallel-ln", "shakespeare-parallel-shared-ln",
                  "shakespeare-mix-ln", "shakespeare-sub-ln", "shakespeare-dyt", "shakespeare-peri-rms"]
LOGIT_ATOL = 1e-4   # max |engine - reference| per logit (float32 engine vs float64 reference) where the logits
                    # stay within 10 in magnitude; beyond, 1e-5 of the largest |logit| (the norm-free model's
                    # reach 30: float32 keeps ~7 digits of them)
UNBOUNDED = 20      # a run whose residual stream reaches an RMS above this is an untrained combination blowing
                    # up (DeepNorm without its norms: x grows by alpha^2L = 63x; pre-BN weights run post on
                    # their running statistics: logits of 3,000). Trained models run as trained stay below 3.
                    # float32 rounding grows with the stream, so such a run is reported (relative to its
                    # largest logit) and not held to the tolerance. So is BatchNorm with batch statistics over
                    # 2..FEW_ROWS-1 rows: a feature's variance over a few rows can be near 0, and 1/sqrt(var +
                    # eps) then amplifies float32 rounding up to 300x (1 row is exact: every output is the bias)
FEW_ROWS = 16
# --quantize-act: the engine rounds its float32 activations, the reference its float64 ones, so a value within
# float32 noise of a rounding boundary lands on the neighbouring level in one of them (a flip). A position then
# matches to 1e-5 or, mostly, differs by 1e-2 or more: a flip moves its row by a level (up to 0.3 of a logit
# through the head), and every later position, which attention reads it into and a recurrence carries it to,
# where the moved values flip others. From the first flip on, the difference is the size of the rounding
# itself: measured (30 prompts per model) up to 0.3 scaled, where a wrong rule (255 levels, per column, a
# linear left unrounded) differs by 0.03-0.57, so no tolerance there tells a right rule from a wrong one.
# Before it both round the same values alike, and LOGIT_ATOL holds. In the shipped transformers 18-27 of 30
# prompts flip, the first flip lying mostly within positions 0-20 (at 0 or 1 in at most 3 of 30); the shipped
# recurrent models flip in 3-7 of 30 prompts of up to 128 steps; of 18 random transformers (12 prompts each)
# 3 flip at all, of 4 random recurrent models none.
ACT_PREFIX = 2      # some prompt of 2 or more positions (of twice the usual number) agrees on its first 2
                    # positions: a wrong rule moves position 0 (position 1 for a recurrent weight_hh product:
                    # h = 0 at step 0); every one of 6 flipping so early is ~1e-6 likely (0.1^6)
FLIP_ATOL = 1.0     # from the first flip on: ~3x the largest difference measured; catches only a blow-up (a NaN
                    # counts as infinite)
EVAL_RTOL = 1e-5    # relative difference of nats/char
RNN_PROMPT = 48     # the longest random prompt for a recurrent model (no context window; long enough that the
                    # state carries through many steps)
VOCAB = list("\n abcdefghijklmnopqrstuvwxyzé,.!?")[:23]  # of the random models
BIN = os.path.join(ROOT, "normlab")
# the models checked quantized (a few: each costs four runs), with the classes of the --quantize-only case
QUANT_SHIPPED = {"shakespeare-pre-ln": "mlp", "shakespeare-post-rms": "attn", "shakespeare-peri-ln": "head",
                 "shakespeare-lstm-ln": "recurrent", "shakespeare-gru": "head,embed"}  # tied heads: head is wte
QUANT_RANDOM = {("layernorm", "pre", True): "attn", ("rmsnorm", "post", False): "mlp,head",
                ("batchnorm", "peri", True): "embed", ("none", "pre", False): "head",
                ("lstm", "layernorm"): "recurrent", ("gru", "none"): "head"}


def run_flags(norm=None, placement=None, bn_stats="running"):
    return (["--norm", norm] if norm else []) + (["--placement", placement] if placement else []) + \
        (["--bn-stats", bn_stats] if bn_stats != "running" else [])


def engine_logits(model, text, norm=None, placement=None, bn_stats="running", extra=()):
    cmd = [BIN, "logits", "-m", model, "-p", text] + run_flags(norm, placement, bn_stats) + list(extra)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return np.array([json.loads(line) for line in out.splitlines()])


def engine_eval(model, path, bn_stats="running", segments=1):
    cmd = [BIN, "eval", "-m", model, "--text", path, "--json"] + run_flags(bn_stats=bn_stats) + \
        (["--segments", str(segments)] if segments != 1 else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def random_model(out_dir, norm, placement, bias, rng, residual_scale=None, extra=None):
    vocab = VOCAB
    config = {"vocab_size": len(vocab), "n_layer": 3, "n_head": 3, "n_embd": 24, "block_size": 16,
              "mlp_ratio": 2, "norm": norm, "placement": placement, "norm_eps": 1e-5,
              "activation": rng.choice(["gelu", "gelu_tanh", "relu"]), "bias": bias,
              "tie_embeddings": bool(rng.integers(2))}
    if residual_scale:
        config["residual_scale"] = residual_scale
    config.update(extra or {})
    tensors = {}
    for name, shape in nlformat.tensor_shapes(config).items():
        is_norm = ".ln_" in name or name.startswith("ln_f")
        base = 1.0 if is_norm and name.endswith(".weight") else 0.5 if name.endswith(".alpha") else 0.0
        # 0.15 keeps the stream bounded even run without norms (at 0.3 it grows ~300x: float32 rounding too)
        tensors[name] = (base + (0.3 if is_norm else 0.15) * rng.standard_normal(shape)).astype(np.float32)
        if name.endswith(".running_var"):  # a variance: positive, around 1
            tensors[name] = np.exp(0.5 * rng.standard_normal(shape)).astype(np.float32)
    nlformat.write_model_dir(out_dir, config, vocab, tensors, metadata={"source": "tools/reference/parity.py random"})
    if norm == "batchnorm":  # running statistics as training would leave them: those of a batch of text
        T = config["block_size"]
        batch = [[int(rng.integers(len(vocab))) for _ in range(T)] for _ in range(8)]
        for prefix, (mu, var) in Reference(out_dir, bn_stats="batch").batch_statistics(batch).items():
            tensors[prefix + ".running_mean"] = mu.numpy().astype(np.float32)
            tensors[prefix + ".running_var"] = var.numpy().astype(np.float32)
        nlformat.write_model_dir(out_dir, config, vocab, tensors,
                                 metadata={"source": "tools/reference/parity.py random"})
    return out_dir


def random_recurrent(out_dir, arch, norm, n_layer, rng):
    """A random-weight LSTM or GRU of odd widths (E 7, S 9). Weights of 0.5 / unit scale put the gates
    well off 0.5 (sigmoid and tanh curve) while the state stays bounded by tanh."""
    config = {"arch": arch, "vocab_size": len(VOCAB), "n_layer": n_layer, "n_embd": 7, "n_hidden": 9,
              "norm": norm, "norm_eps": 1e-5}
    tensors = {}
    for name, shape in nlformat.rnn_tensor_shapes(config).items():
        gain = ".ln_" in name and name.endswith(".weight")
        scale = 0.3 if len(shape) == 1 else 0.5  # vectors (biases, LN gains around 1), matrices
        tensors[name] = ((1.0 if gain else 0.0) + scale * rng.standard_normal(shape)).astype(np.float32)
    nlformat.write_model_dir(out_dir, config, VOCAB, tensors, metadata={"source": "tools/reference/parity.py random"})
    return out_dir


def tied_rounding(w):
    """w (rows, cols) moved onto exact ties of the rounding: even rows for q8 (the row's largest |w| is 127 u,
    u a power of two, so the scale is u exactly, and every other value an odd multiple of u / 2), odd rows
    for q4 (the same per group of 32 columns, with 7 u). Rounding half to even instead of away from zero,
    or any other level count, then moves about half of the values."""
    out = w.astype(np.float64)
    for r in range(w.shape[0]):
        levels, step = (127, w.shape[1]) if r % 2 == 0 else (7, 32)
        for c in range(0, w.shape[1], step):
            seg = out[r, c:c + step]
            amax = float(np.max(np.abs(seg)))
            if amax == 0.0:
                continue
            u = 2.0 ** np.floor(np.log2(amax / levels))
            big = int(np.argmax(np.abs(seg)))
            sign = 1.0 if seg[big] > 0 else -1.0
            seg[:] = (np.clip(np.floor(seg / u), -levels, levels - 1) + 0.5) * u
            seg[big] = sign * levels * u
    return out.astype(np.float32)


def tie_model(out_dir, rng):
    """A random layernorm/pre model (random_model) whose rounded matrices lie on ties (tied_rounding)."""
    random_model(out_dir, "layernorm", "pre", True, rng)
    config, vocab, tensors = nlformat.load_model(out_dir)
    tensors = dict(tensors)
    for name in nlmodel.quant_classes(config):
        tensors[name] = tied_rounding(tensors[name])
    nlformat.write_model_dir(out_dir, config, vocab, tensors, metadata={"source": "tools/reference/parity.py ties"})
    return out_dir


def overrides_for(config):
    """As configured, then every norm x placement the engine can run the model as: BatchNorm with
    batch statistics always, with running statistics where the model has them. A recurrent model:
    as configured and with the other of its two norms."""
    if is_recurrent(config):
        return [(None, None, "running"), ("none" if config["norm"] == "layernorm" else "layernorm", None, "running")]
    needs = {"pre": {"in", "final"}, "post": {"in"}, "peri": {"in", "final", "out"}}  # the norms a placement runs
    runs = [(None, None, "running")]
    if config["norm"] == "batchnorm":
        runs.append((None, None, "batch"))
    for placement in ("pre", "post", "peri"):
        for norm in ("layernorm", "rmsnorm", "none"):
            runs.append((norm, placement, "running"))
        runs.append(("batchnorm", placement, "batch"))
        # running statistics only where the model has every norm the placement runs (else refused)
        if config["norm"] == "batchnorm" and needs[placement] <= needs[config.get("placement", "pre")]:
            runs.append(("batchnorm", placement, "running"))
    return runs


def block_norms(placement):
    """The norms a placement runs: its block's, and ln_f where it has one (nlformat.BLOCK_NORMS)."""
    return set(nlformat.BLOCK_NORMS[placement]) | ({"ln_f"} if placement != "post" else set())


def recipe_overrides(config):
    """A model of issue 61's placements or DyT: as configured, then run as every placement (DyT: those
    whose norms the model has, each needing its alpha), and its placement with the other norms."""
    own, norm = config["placement"], config["norm"]
    runs = [(None, None, "running")]
    for placement in nlmodel.PLACEMENTS:
        if placement != own and (norm != "dyt" or block_norms(placement) <= block_norms(own)):
            runs.append((None, placement, "running"))
    runs += [(other, own, "running") for other in ("layernorm", "rmsnorm", "none") if other != norm]
    return runs


def check_model(label, path, prompts, overrides, report):
    """The largest |delta logit| as configured and over every override, within LOGIT_ATOL; runs
    whose residual stream exceeds UNBOUNDED, or with batch statistics of a few rows, are reported
    apart, by their largest difference relative to their largest logit."""
    worst = every = wild = 0.0  # every: in units of the tolerance, |delta| / max(1, max |logit| / 10)
    n_wild = 0
    for norm, placement, bn_stats in overrides:
        ref = load_reference(path, norm, placement, bn_stats)
        for text in prompts(ref):
            got = engine_logits(path, text, norm, placement, bn_stats)
            want = ref.logits(ref.encode(text)).numpy()
            d, m = float(np.max(np.abs(got - want))), float(np.max(np.abs(want)))
            few = ref.norm == "batchnorm" and bn_stats == "batch" and 1 < len(text) < FEW_ROWS
            if getattr(ref, "max_rms", 0.0) > UNBOUNDED or few:  # a recurrent state is bounded by tanh
                n_wild += 1
                wild = max(wild, d / m)
                continue
            every = max(every, d / max(1.0, m / 10))
            if norm is None and placement is None and bn_stats == "running":
                worst = max(worst, d)
    report.append((label, every))
    apart = (f"; {n_wild} run(s) with the stream's RMS past {UNBOUNDED} or batch statistics of < {FEW_ROWS} rows: "
             f"relative {wild:.2g}") if n_wild else ""
    print(f"{label:<48} worst |delta logit| = {worst:.3g} as configured, {every:.3g} with every override "
          f"(scaled){apart}  "
          f"({'ok' if every <= LOGIT_ATOL else 'FAIL'})")
    return every <= LOGIT_ATOL


def quant_cases(only, with_act=True):
    """(engine flags, the reference's nlmodel.build keywords) of each quantized run: q8 and q4 weights,
    q4 on the classes `only` alone, and (with_act) q8 activations."""
    return [(["--quantize", "q8"], {"quantize": "q8"}), (["--quantize", "q4"], {"quantize": "q4"}),
            (["--quantize", "q4", "--quantize-only", only], {"quantize": "q4", "quantize_only": only.split(",")})] + \
        ([(["--quantize-act", "q8"], {"quantize_act": "q8"})] if with_act else [])


def check_quant(path, prompts, only, results, with_act=True):
    """Each of quant_cases(only, with_act), as configured, one line each. Rounded weights are the same bits in
    both, so those runs are held to LOGIT_ATOL (scaled as check_model's). With --quantize-act, a prompt's
    first position beyond LOGIT_ATOL is taken for its first rounding flip: some prompt of 2 or more
    positions must agree on its first ACT_PREFIX, and every position lie within FLIP_ATOL."""
    ok = True
    for flags, quant in quant_cases(only, with_act):
        ref = load_reference(path, **quant)
        worst = after = 0.0
        prefixes = []  # (positions agreeing before the first beyond LOGIT_ATOL, positions)
        act = "quantize_act" in quant
        for text in prompts(ref) + (prompts(ref) if act else []):  # twice the prompts: see ACT_PREFIX
            got = engine_logits(path, text, extra=flags)
            want = ref.logits(ref.encode(text)).numpy()
            d = np.max(np.abs(got - want), axis=1) / max(1.0, float(np.max(np.abs(want))) / 10)  # (n,)
            d[~np.isfinite(d)] = np.inf
            k = int(np.argmax(d > LOGIT_ATOL)) if np.any(d > LOGIT_ATOL) else len(d)
            prefixes.append((k, len(d)))
            worst = max(worst, float(np.max(d[:k], initial=0.0)))
            after = max(after, float(np.max(d[k:], initial=0.0)))
        label = "  " + " ".join(flags)
        if not act:
            passed = max(worst, after) <= LOGIT_ATOL
            print(f"{label:<48} worst |delta logit| = {max(worst, after):.3g} (scaled)  "
                  f"({'ok' if passed else 'FAIL'})")
        else:
            start = max((k for k, n in prefixes if n >= 2), default=ACT_PREFIX)
            passed = start >= ACT_PREFIX and after <= FLIP_ATOL
            agree = sum(k for k, _ in prefixes)
            print(f"{label:<48} worst |delta logit| = {worst:.3g} (scaled) before the first flip, {after:.3g} from "
                  f"it on; {agree} of {sum(n for _, n in prefixes)} positions before it, longest "
                  f"{max(k for k, _ in prefixes)}  ({'ok' if passed else 'FAIL'})")
        results.append(passed)
        ok &= passed
    return ok


def shipped(name):
    """weights/NAME's path and config; config None (and a FAIL line) when the model is missing."""
    path = os.path.join(ROOT, "weights", name)
    if not os.path.isfile(os.path.join(path, "model.safetensors")):
        print(f"{name}: missing (weights/{name}); FAIL")
        return path, None
    return path, nlformat.load_model(path)[0]


def main(argv):
    p = nltool.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=20261130)
    p.add_argument("--prompts", type=int, default=4, help="random prompts per model and override")
    a = p.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    pyrng = random.Random(a.seed)
    ok, report, evals, quant = True, [], [], []
    qrng = random.Random(a.seed + 1)  # the quantized runs' prompts: the others' stay as they were

    def quant_prompts(ref):
        T = ref.config.get("block_size", RNN_PROMPT)
        lengths = [1, T] + [qrng.randint(2, T) for _ in range(max(0, a.prompts - 2))]
        return ["".join(qrng.choice(ref.vocab) for _ in range(n)) for n in lengths]

    def random_prompts(ref):
        T = ref.config.get("block_size", RNN_PROMPT)
        lengths = [1, T] + [pyrng.randint(2, T) for _ in range(max(0, a.prompts - 2))]
        return ["".join(pyrng.choice(ref.vocab) for _ in range(n)) for n in lengths]

    def check_eval(path, text_path, bn_stats="running", segments=1):
        got = engine_eval(path, text_path, bn_stats, segments)["nats_per_char"]
        ref = load_reference(path, bn_stats=bn_stats)
        with open(text_path, encoding="utf-8") as f:
            ids = ref.encode(f.read())
        nll, count = ref.eval_nll(ids, segments=segments) if segments != 1 else ref.eval_nll(ids)
        rel = abs(got - nll / count) / (nll / count)
        label = f"  eval {os.path.basename(text_path)}" + (" (batch statistics)" if bn_stats == "batch" else "") + \
            (f" --segments {segments}" if segments != 1 else "")
        print(f"{label:<48} engine {got:.7f} reference {nll / count:.7f} rel {rel:.2g}  "
              f"({'ok' if rel <= EVAL_RTOL else 'FAIL'})")
        evals.append(rel <= EVAL_RTOL)
        return rel <= EVAL_RTOL

    held_out = os.path.join(ROOT, "tests", "data", "held_out.txt")
    for name in SHIPPED:
        path, config = shipped(name)
        if config is None:
            ok = False
            continue
        ok &= check_model(f"weights/{name} (+ overrides)", path, random_prompts, overrides_for(config), report)
        for bn_stats in ("running", "batch") if config["norm"] == "batchnorm" else ("running",):
            ok &= check_eval(path, held_out, bn_stats)
        if name in QUANT_SHIPPED:
            ok &= check_quant(path, quant_prompts, QUANT_SHIPPED[name], quant)
    with tempfile.TemporaryDirectory() as tmp:
        combos = [(n, p, None) for n in ("layernorm", "rmsnorm", "batchnorm") for p in ("pre", "post", "peri")]
        combos += [("none", "pre", None), ("layernorm", "post", (2 * 3) ** 0.25)]  # no norm; DeepNorm, L = 3
        text_path = os.path.join(tmp, "text.txt")
        with open(text_path, "w", encoding="utf-8") as f:  # 10 windows of 16: two calls of eval's batch of 8
            f.write("".join(pyrng.choice("\n abcdefghijklmnopqrstu") for _ in range(90)))
        for norm, placement, alpha in combos:
            for bias in (True, False):
                d = random_model(os.path.join(tmp, f"{norm}-{placement}-{bias}-{alpha}"), norm, placement, bias, rng,
                                 alpha)
                kind = f"{norm}/{placement}" + (f" alpha={alpha:.3g}" if alpha else "")
                label = f"random {kind} bias={str(bias).lower()} (+ overrides)"
                ok &= check_model(label, d, random_prompts, overrides_for(nlformat.load_model(d)[0]), report)
                for bn_stats in ("running", "batch") if norm == "batchnorm" else ("running",):
                    ok &= check_eval(d, text_path, bn_stats)
                if (norm, placement, bias) in QUANT_RANDOM and not alpha:
                    ok &= check_quant(d, quant_prompts, QUANT_RANDOM[norm, placement, bias], quant)
        for name in RECURRENT:  # after the transformers, so their prompts (pyrng) stay the same; absent: skipped
            path = os.path.join(ROOT, "weights", name)
            if os.path.isfile(os.path.join(path, "model.safetensors")):
                config = nlformat.load_model(path)[0]
                ok &= check_model(f"weights/{name} (+ --norm)", path, random_prompts, overrides_for(config), report)
                for segments in (1, 4):
                    ok &= check_eval(path, held_out, segments=segments)
                if name in QUANT_SHIPPED:
                    ok &= check_quant(path, quant_prompts, QUANT_SHIPPED[name], quant)
        # 89 inputs: --segments 4 makes parts of 22, 22, 22 and 23
        for arch, norm, n_layer in (("lstm", "layernorm", 3), ("lstm", "none", 2), ("gru", "layernorm", 2),
                                    ("gru", "none", 3)):
            d = random_recurrent(os.path.join(tmp, f"{arch}-{norm}"), arch, norm, n_layer, rng)
            label = f"random {arch}/{norm} L={n_layer} E=7 S=9 (+ --norm)"
            ok &= check_model(label, d, random_prompts, overrides_for(nlformat.load_model(d)[0]), report)
            for segments in (1, 4):
                ok &= check_eval(d, text_path, segments=segments)
            if (arch, norm) in QUANT_RANDOM:
                ok &= check_quant(d, quant_prompts, QUANT_RANDOM[arch, norm], quant)
        # last, with its own generator, so that the models before it stay the same
        d = tie_model(os.path.join(tmp, "ties"), np.random.default_rng(a.seed + 1))
        print("random layernorm/pre, its matrices on rounding ties")
        ok &= check_quant(d, quant_prompts, "attn,head", quant, with_act=False)
        # issue 61's placements and DyT, with their own generators, after everything above
        rrng, rpy = np.random.default_rng(a.seed + 2), random.Random(a.seed + 2)

        def recipe_prompts(ref):
            T = ref.config["block_size"]
            return ["".join(rpy.choice(ref.vocab) for _ in range(n)) for n in [1, T, rpy.randint(2, T)]]

        for name in RECIPE_SHIPPED:  # the models trained for them (docs/findings-norms.md)
            path, config = shipped(name)
            if config is None:
                ok = False
                continue
            ok &= check_model(f"weights/{name} (+ placements)", path, recipe_prompts, recipe_overrides(config), report)
            ok &= check_eval(path, held_out)
        new = ("post-sublayer", "parallel", "parallel-shared", "mix", "sub")
        combos = [(n, p) for n in ("layernorm", "rmsnorm", "dyt") for p in new]
        combos += [("dyt", p) for p in ("pre", "post", "peri")]
        for norm, placement in combos:
            for bias in (True, False):
                extra = {"mix_post_layers": 1} if placement == "mix" else None  # of 3 layers (L/4 is 0)
                d = random_model(os.path.join(tmp, f"r-{norm}-{placement}-{bias}"), norm, placement, bias, rrng,
                                 extra=extra)
                label = f"random {norm}/{placement} bias={str(bias).lower()} (+ placements)"
                ok &= check_model(label, d, recipe_prompts, recipe_overrides(nlformat.load_model(d)[0]), report)
                ok &= check_eval(d, text_path)
    print(f"tolerance {LOGIT_ATOL:g} per logit (--quantize-act: before the first rounding flip, and {FLIP_ATOL:g} "
          f"after it), {EVAL_RTOL:g} relative for eval")
    n_pass = sum(w <= LOGIT_ATOL for _, w in report) + sum(evals) + sum(quant)
    n_fail = sum(w > LOGIT_ATOL for _, w in report) + len(evals) - sum(evals) + len(quant) - sum(quant)
    print(f"parity: {n_pass} passed, {n_fail} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
