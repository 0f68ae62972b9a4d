#!/usr/bin/python3
"""An independent PyTorch forward pass of a normlab model, written from the formulas in README.md
("Forward pass"), in float64. It shares nothing with tools/train.py or the C engine except the file
format (read through nlformat).

    /usr/bin/python3 tools/reference.py logits -m weights/shakespeare-pre-ln -p "ROMEO:"
    /usr/bin/python3 tools/reference.py eval -m weights/shakespeare-pre-ln --text FILE
    /usr/bin/python3 tools/reference.py golden           # rewrites tests/reference/pytorch_float64.json

Dimension letters: B sequences in one forward call, n positions, V vocabulary, D width, H heads,
Dh head width, F MLP width.
"""
import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nlformat  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SHIPPED = ["shakespeare-pre-ln", "shakespeare-post-ln", "shakespeare-pre-rms", "shakespeare-post-rms",
           "shakespeare-pre-bn", "shakespeare-post-bn", "shakespeare-peri-ln", "shakespeare-deepnorm",
           "shakespeare-nonorm"]
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


def write_golden(path):
    with open(EVAL_TEXT, encoding="utf-8") as f:
        text = f.read()
    models = []
    for name in SHIPPED:
        ref = Reference(os.path.join(ROOT, "weights", name))
        prompts = [{"text": p,
                    "logits": [[float(f"{v:.9g}") for v in row] for row in ref.logits(ref.encode(p)).tolist()]}
                   for p in GOLDEN_PROMPTS]
        nll, count = ref.eval_nll(ref.encode(text))
        models.append({"model": f"weights/{name}", "prompts": prompts,
                       "eval": {"text": "tests/data/held_out.txt", "chars": count, "nats_per_char": nll / count}})
        print(f"{name}: eval {nll / count:.6f} nats/char over {count} characters", file=sys.stderr)
    doc = {"source": "tools/reference.py golden (PyTorch, float64)", "models": models}
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
    g = sub.add_parser("golden")
    g.add_argument("--out", default=os.path.join(ROOT, "tests", "reference", "pytorch_float64.json"))
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    if a.cmd == "golden":
        write_golden(a.out)
        return
    ref = Reference(a.model, a.norm, a.placement, a.bn_stats)
    if a.cmd == "logits":
        for row in ref.logits(ref.encode(a.prompt)).tolist():
            print(json.dumps(row))
    else:
        with open(a.text, encoding="utf-8") as f:
            nll, count = ref.eval_nll(ref.encode(f.read()))
        print(json.dumps({"chars": count, "nats_per_char": nll / count}))


if __name__ == "__main__":
    main(sys.argv[1:])
