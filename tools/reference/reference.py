#!/usr/bin/python3
"""An independent PyTorch forward pass of a normlab model, written from the formulas in README.md
("Forward pass"; for the recurrent models, arch lstm and gru, the LayerNorm LSTM and GRU of Ba et al.
2016, format version 3), in float64. It shares nothing with tools/train/train.py or the C engine except the
file format (read through nlformat).

    /usr/bin/python3 tools/reference/reference.py logits -m weights/shakespeare-pre-ln -p "ROMEO:"
    /usr/bin/python3 tools/reference/reference.py eval -m weights/shakespeare-pre-ln --text FILE
    /usr/bin/python3 tools/reference/reference.py eval -m weights/shakespeare-lstm-ln --text FILE --segments 4
    /usr/bin/python3 tools/reference/reference.py golden           # rewrites tests/reference/pytorch_float64.json

Dimension letters: B sequences in one forward call, n positions, V vocabulary, D width, H heads,
Dh head width, F MLP width; recurrent models: S state width (n_hidden), E embedding width (n_embd),
L layers.
"""
import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import nlformat  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SHIPPED = ["shakespeare-pre-ln", "shakespeare-post-ln", "shakespeare-pre-rms", "shakespeare-post-rms",
           "shakespeare-pre-bn", "shakespeare-post-bn", "shakespeare-peri-ln", "shakespeare-deepnorm",
           "shakespeare-nonorm"]
RECURRENT = ["shakespeare-lstm-ln", "shakespeare-lstm", "shakespeare-gru-ln", "shakespeare-gru"]
GOLDEN = SHIPPED + RECURRENT  # the models tests/reference/pytorch_float64.json holds, when present
NORMS = ["layernorm", "rmsnorm", "batchnorm", "none"]
PLACEMENTS = ["pre", "post", "peri"]
GOLDEN_PROMPTS = [
    "ROMEO:\nWhat light is this upon the eastern wall?",
    # cut to a full context window of 128 characters, so every position of wpe is exercised
    ("KING:\nNow speak, good friend, and tell me true:\nWhat news from Milan, and how fares my brother?\n"
    "Is he in health, or doth he keep his bed?")[:128],
]
EVAL_TEXT = os.path.join(ROOT, "tests", "data", "held_out.txt")


class Reference:
    """A loaded model with the run options (norm type, placement, BatchNorm statistics) applied."""

    def __init__(self, path, norm=None, placement=None, bn_stats="running"):
        self.config, self.vocab, arrays = nlformat.load_model(path)
        self.t = {k: torch.from_numpy(v).double() for k, v in arrays.items()}
        self.norm = norm or self.config["norm"]
        self.placement = placement or self.config.get("placement", "pre")
        self.alpha = self.config.get("residual_scale", 1.0) if self.placement == "post" else 1.0
        self.bn_stats = bn_stats
        self.record = None  # a dict: batch statistics of every BatchNorm run go in it, by norm name
        self.max_rms = 0.0  # the largest RMS of one position of the residual stream seen, after any block
        self.F = nlformat.mlp_width(self.config)
        self.stoi = {ch: i for i, ch in enumerate(self.vocab)}

    def encode(self, text):
        return [self.stoi[ch] for ch in text]

    def _norm(self, x, prefix):
        """x: (B, n, D). A norm the model lacks has unit gain and no bias; none is the identity."""
        D = x.shape[-1]
        if self.norm == "none":
            return x
        g = self.t.get(prefix + ".weight", torch.ones(D, dtype=torch.float64))
        b = self.t.get(prefix + ".bias")
        eps = self.config["norm_eps"]
        if self.norm == "layernorm":
            mu = x.mean(-1, keepdim=True)
            var = ((x - mu) ** 2).mean(-1, keepdim=True)  # biased, 1/D
            y = (x - mu) / torch.sqrt(var + eps) * g
        elif self.norm == "rmsnorm":
            y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * g
        else:  # batchnorm: per feature, over every position of every sequence of the call, or running
            if self.bn_stats == "batch":
                rows = x.reshape(-1, D)
                mu = rows.mean(0)
                var = ((rows - mu) ** 2).mean(0)  # biased, as PyTorch normalises in training
                if self.record is not None:
                    self.record[prefix] = (mu, var)
            else:
                if prefix + ".running_mean" not in self.t:
                    raise ValueError(f"batchnorm with running statistics needs {prefix}.running_mean")
                mu, var = self.t[prefix + ".running_mean"], self.t[prefix + ".running_var"]
            y = (x - mu) / torch.sqrt(var + eps) * g
        return y if b is None else y + b

    def _linear(self, x, prefix):
        y = x @ self.t[prefix + ".weight"].T  # weight is (out, in)
        b = self.t.get(prefix + ".bias")
        return y if b is None else y + b

    def _act(self, x):
        a = self.config["activation"]
        if a == "gelu":
            return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
        if a == "gelu_tanh":
            return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        return torch.clamp(x, min=0)

    def _attn(self, x, i):  # x: (B, n, D)
        B, n, D = x.shape
        H = self.config["n_head"]
        Dh = D // H
        qkv = self._linear(x, f"h.{i}.attn.c_attn")  # (B, n, 3D): q | k | v
        q, k, v = (qkv[..., j * D:(j + 1) * D].reshape(B, n, H, Dh).transpose(1, 2) for j in range(3))
        s = q @ k.transpose(-2, -1) / math.sqrt(Dh)  # (B, H, n, n)
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        p = torch.softmax(s.masked_fill(causal, float("-inf")), dim=-1)
        y = (p @ v).transpose(1, 2).reshape(B, n, D)
        return self._linear(y, f"h.{i}.attn.c_proj")

    def _mlp(self, x, i):
        return self._linear(self._act(self._linear(x, f"h.{i}.mlp.c_fc")), f"h.{i}.mlp.c_proj")

    @torch.no_grad()
    def logits_batch(self, batch):
        """(B, n, V) float64 logits of B sequences of n ids, run in one call (which only BatchNorm's
        batch statistics can tell from B calls)."""
        n = len(batch[0])
        x = self.t["wte.weight"][torch.tensor(batch)] + self.t["wpe.weight"][:n]  # (B, n, D)
        a = self.alpha
        for i in range(self.config["n_layer"]):
            n1, n2 = f"h.{i}.ln_1", f"h.{i}.ln_2"
            if self.placement == "pre":
                x = x + self._attn(self._norm(x, n1), i)
                x = x + self._mlp(self._norm(x, n2), i)
            elif self.placement == "peri":
                x = x + self._norm(self._attn(self._norm(x, n1), i), n1 + "_post")
                x = x + self._norm(self._mlp(self._norm(x, n2), i), n2 + "_post")
            else:
                x = self._norm(a * x + self._attn(x, i), n1)
                x = self._norm(a * x + self._mlp(x, i), n2)
            self.max_rms = max(self.max_rms, float(x.pow(2).mean(-1).sqrt().max()))
        if self.placement != "post":
            x = self._norm(x, "ln_f")  # unit gain when the model has no ln_f
        head = self.t.get("lm_head.weight", self.t["wte.weight"])
        return x @ head.T

    def logits(self, ids):
        """(n, V) float64 logits for ids at positions 0..n-1."""
        return self.logits_batch([ids])[0]

    def eval_nll(self, ids, stride=None, batch=None):
        """(sum of -ln p, count) over ids[1:], with the engine's documented sliding windows, `batch`
        windows per call (default the engine's, 1024 / block_size; it matters only to BatchNorm's
        batch statistics)."""
        T = self.config["block_size"]
        batch = batch or max(1, 1024 // T)
        stride = stride or max(1, T // 2)
        n_inputs, scored, windows = len(ids) - 1, 0, []
        while scored < n_inputs:
            end = min(n_inputs, T) if scored == 0 else min(scored + stride, n_inputs)
            windows.append((max(0, end - T), scored, end))
            scored = end
        total = 0.0
        for g in range(0, len(windows), batch):
            group = windows[g:g + batch]
            logp = torch.log_softmax(self.logits_batch([ids[s:e] for s, _, e in group]), dim=-1)
            for b, (start, first, end) in enumerate(group):
                for p in range(first, end):
                    total -= logp[b, p - start, ids[p + 1]].item()
        return total, n_inputs


class RecurrentReference:
    """A loaded recurrent model (arch lstm or gru) with the run's norm (layernorm or none) applied.
    Every sequence starts from the zero state; a step reads one token and the state of every layer."""

    def __init__(self, path, norm=None):
        self.config, self.vocab, arrays = nlformat.load_model(path)
        self.t = {k: torch.from_numpy(v).double() for k, v in arrays.items()}
        self.arch = self.config["arch"]
        if self.arch not in ("lstm", "gru"):
            raise ValueError(f"unknown arch {self.arch!r}")
        self.norm = norm or self.config["norm"]
        if self.norm not in ("layernorm", "none"):
            raise ValueError(f"a recurrent model runs with norm layernorm or none, not {self.norm}")
        self.S, self.L = self.config["n_hidden"], self.config["n_layer"]
        self.stoi = {ch: i for i, ch in enumerate(self.vocab)}

    def encode(self, text):
        return [self.stoi[ch] for ch in text]

    def _get(self, name, n, fill=0.0):
        """A tensor, or where the model lacks it a vector of n times fill (bias 0, gain 1)."""
        return self.t.get(name, torch.full((n,), fill, dtype=torch.float64))

    def _norm(self, v, i, name):
        """v: (B, m). LayerNorm over the whole vector of each row, or the identity for norm none."""
        if self.norm == "none":
            return v
        m, p = v.shape[-1], f"rnn.{i}.{name}"
        mu = v.mean(-1, keepdim=True)
        var = ((v - mu) ** 2).mean(-1, keepdim=True)  # biased, 1/m
        return (v - mu) / torch.sqrt(var + self.config["norm_eps"]) * self._get(p + ".weight", m, 1.0) + \
            self._get(p + ".bias", m)

    def _lstm(self, x, h, c, i):  # x: (B, in), h and c: (B, S) -> h', c'
        S, p = self.S, f"rnn.{i}."
        a = self._norm(h @ self.t[p + "weight_hh"].T, i, "ln_hh") + \
            self._norm(x @ self.t[p + "weight_ih"].T, i, "ln_ih") + self._get(p + "bias", 4 * S)
        f, ig, o, g = a[:, :S], a[:, S:2 * S], a[:, 2 * S:3 * S], a[:, 3 * S:]
        c = torch.sigmoid(f) * c + torch.sigmoid(ig) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(self._norm(c, i, "ln_cell")), c

    def _gru(self, x, h, i):  # x: (B, in), h: (B, S) -> h'
        S, p = self.S, f"rnn.{i}."
        P, Q = x @ self.t[p + "weight_ih"].T, h @ self.t[p + "weight_hh"].T  # (B, 3S): z | r | candidate
        b_ih, b_hh = self._get(p + "bias_ih", 3 * S), self._get(p + "bias_hh", 3 * S)
        zr = self._norm(P[:, :2 * S], i, "ln_ih") + b_ih[:2 * S] + self._norm(Q[:, :2 * S], i, "ln_hh") + b_hh[:2 * S]
        z, r = torch.sigmoid(zr[:, :S]), torch.sigmoid(zr[:, S:])
        cand = torch.tanh(self._norm(P[:, 2 * S:], i, "ln_ih_cand") + b_ih[2 * S:]
                          + r * (self._norm(Q[:, 2 * S:], i, "ln_hh_cand") + b_hh[2 * S:]))
        return (1 - z) * h + z * cand

    @torch.no_grad()
    def logits_batch(self, batch):
        """(B, n, V) float64 logits of B sequences, each from the zero state, n the longest length.
        A shorter sequence is padded at its end; its rows past its length are padding (a step depends
        only on the steps before it), to be ignored."""
        B, n = len(batch), max(len(s) for s in batch)
        ids = torch.zeros(B, n, dtype=torch.long)
        for b, s in enumerate(batch):
            ids[b, :len(s)] = torch.tensor(s, dtype=torch.long)
        h = [torch.zeros(B, self.S, dtype=torch.float64) for _ in range(self.L)]
        c = [torch.zeros(B, self.S, dtype=torch.float64) for _ in range(self.L)]  # LSTM only
        top = []
        for t in range(n):
            x = self.t["wte.weight"][ids[:, t]]  # (B, E)
            for i in range(self.L):
                if self.arch == "lstm":
                    h[i], c[i] = self._lstm(x, h[i], c[i], i)
                else:
                    h[i] = self._gru(x, h[i], i)
                x = h[i]
            top.append(x)
        return torch.stack(top, 1) @ self.t["lm_head.weight"].T + self.t["lm_head.bias"]

    def logits(self, ids):
        """(n, V) float64 logits for ids at positions 0..n-1, from the zero state."""
        return self.logits_batch([ids])[0]

    def eval_nll(self, ids, segments=1):
        """(sum of -ln p, count) over targets ids[1:]: the n-1 inputs split into `segments` contiguous
        parts, part k = inputs [floor(k(n-1)/K), floor((k+1)(n-1)/K)), each run from the zero state
        (all K in one batch). Count is n-1 whatever K."""
        if segments < 1:
            raise ValueError(f"segments must be at least 1, not {segments}")
        n_inputs = max(0, len(ids) - 1)
        parts = [(k * n_inputs // segments, (k + 1) * n_inputs // segments) for k in range(segments)]
        parts = [(lo, hi) for lo, hi in parts if hi > lo]  # K > n-1 leaves some parts empty
        if not parts:
            return 0.0, n_inputs
        logp = torch.log_softmax(self.logits_batch([ids[lo:hi] for lo, hi in parts]), dim=-1)
        total = 0.0
        for b, (lo, hi) in enumerate(parts):
            targets = torch.tensor(ids[lo + 1:hi + 1], dtype=torch.long)
            total -= logp[b, torch.arange(hi - lo), targets].sum().item()
        return total, n_inputs


def is_recurrent(config):
    return config.get("arch", "transformer") != "transformer"


def load_reference(path, norm=None, placement=None, bn_stats="running"):
    """The reference for the model at path: RecurrentReference for arch lstm/gru (which takes no
    placement and no BatchNorm statistics: a ValueError), else Reference."""
    if os.path.isdir(path):  # read config.json alone: the tensors are loaded once, by the class chosen
        with open(os.path.join(path, "config.json")) as f:
            config = json.load(f)
    else:
        config = nlformat.load_model(path)[0]
    if not is_recurrent(config):
        return Reference(path, norm, placement, bn_stats)
    if placement is not None:
        raise ValueError(f"a recurrent model has no placement (got {placement})")
    if bn_stats != "running":
        raise ValueError("a recurrent model has no BatchNorm statistics to choose")
    return RecurrentReference(path, norm)


def write_golden(path):
    with open(EVAL_TEXT, encoding="utf-8") as f:
        text = f.read()
    models = []
    for name in GOLDEN:
        model = os.path.join(ROOT, "weights", name)
        if not os.path.isfile(os.path.join(model, "model.safetensors")):
            print(f"{name}: skipped, weights/{name}/model.safetensors does not exist", file=sys.stderr)
            continue
        ref = load_reference(model)
        prompts = [{"text": p,
                    "logits": [[float(f"{v:.9g}") for v in row] for row in ref.logits(ref.encode(p)).tolist()]}
                   for p in GOLDEN_PROMPTS]
        nll, count = ref.eval_nll(ref.encode(text))
        models.append({"model": f"weights/{name}", "prompts": prompts,
                       "eval": {"text": "tests/data/held_out.txt", "chars": count, "nats_per_char": nll / count}})
        print(f"{name}: eval {nll / count:.6f} nats/char over {count} characters", file=sys.stderr)
    doc = {"source": "tools/reference/reference.py golden (PyTorch, float64)", "models": models}
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("logits", "eval"):
        s = sub.add_parser(name)
        s.add_argument("-m", "--model", required=True)
        s.add_argument("--norm", choices=NORMS)
        s.add_argument("--placement", choices=PLACEMENTS)
        s.add_argument("--bn-stats", choices=["running", "batch"], default="running")
        if name == "logits":
            s.add_argument("-p", "--prompt", required=True)
        else:
            s.add_argument("--text", required=True)
            s.add_argument("--segments", type=int, help="recurrent models: score in K parts, each from zero state")
    g = sub.add_parser("golden")
    g.add_argument("--out", default=os.path.join(ROOT, "tests", "reference", "pytorch_float64.json"))
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    if a.cmd == "golden":
        write_golden(a.out)
        return
    try:
        ref = load_reference(a.model, a.norm, a.placement, a.bn_stats)
    except ValueError as e:
        p.error(str(e))
    if a.cmd == "logits":
        for row in ref.logits(ref.encode(a.prompt)).tolist():
            print(json.dumps(row))
    else:
        kw = {}
        if a.segments is not None:
            if not isinstance(ref, RecurrentReference):
                p.error("--segments is for recurrent models (a transformer scores through sliding windows)")
            if a.segments < 1:
                p.error("--segments takes K >= 1")
            kw = {"segments": a.segments}
        with open(a.text, encoding="utf-8") as f:
            nll, count = ref.eval_nll(ref.encode(f.read()), **kw)
        print(json.dumps({"chars": count, "nats_per_char": nll / count}))


if __name__ == "__main__":
    main(sys.argv[1:])
