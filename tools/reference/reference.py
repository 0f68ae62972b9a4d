#!/usr/bin/python3
"""The reference: a normlab model run by tools/lib/nlmodel.py in float64, the golden logits and eval
losses of tests/reference/ and the other side of make parity. nlmodel follows docs/forward.md (for
the recurrent models, arch lstm and gru, the LayerNorm LSTM and GRU of Ba et al. 2016, format version 3);
the C engine shares nothing with it but the file format, and its own twin, tests/ref_forward.c, is
written apart from both.

    /usr/bin/python3 tools/reference/reference.py logits -m weights/shakespeare-pre-ln -p "ROMEO:"
    /usr/bin/python3 tools/reference/reference.py eval -m weights/shakespeare-pre-ln --text FILE
    /usr/bin/python3 tools/reference/reference.py eval -m weights/shakespeare-lstm-ln --text FILE --segments 4
    /usr/bin/python3 tools/reference/reference.py logits -m weights/shakespeare-pre-ln -p "ROMEO:" --quantize q4
    /usr/bin/python3 tools/reference/reference.py golden           # rewrites tests/reference/pytorch_float64.json

--quantize, --quantize-only and --quantize-act round as the engine's (nlmodel.build): the weights
with float32 arithmetic, to the engine's bits, then run in float64; the activations in float64.

Dimension letters: B sequences in one forward call, n positions, V vocabulary, D width; recurrent
models: S state width (n_hidden).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy", "torch")

import torch  # noqa: E402

import nlformat  # noqa: E402
import nlmodel  # noqa: E402
import nltool  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SHIPPED = ["shakespeare-pre-ln", "shakespeare-post-ln", "shakespeare-pre-rms", "shakespeare-post-rms",
           "shakespeare-pre-bn", "shakespeare-post-bn", "shakespeare-peri-ln", "shakespeare-deepnorm",
           "shakespeare-nonorm"]
RECURRENT = ["shakespeare-lstm-ln", "shakespeare-lstm", "shakespeare-gru-ln", "shakespeare-gru"]
GOLDEN = SHIPPED + RECURRENT  # the models tests/reference/pytorch_float64.json holds, when present
GOLDEN_PROMPTS = [
    "ROMEO:\nWhat light is this upon the eastern wall?",
    # cut to a full context window of 128 characters, so every position of wpe is exercised
    ("KING:\nNow speak, good friend, and tell me true:\nWhat news from Milan, and how fares my brother?\n"
    "Is he in health, or doth he keep his bed?")[:128],
]
EVAL_TEXT = os.path.join(ROOT, "tests", "data", "held_out.txt")
is_recurrent = nlmodel.is_recurrent


class _Loaded:
    """The model at path in float64, with the run options (norm, placement, BatchNorm statistics) and
    quant: nlmodel.build's quantize, quantize_only and quantize_act, by name."""

    def __init__(self, path, norm=None, placement=None, bn_stats="running", **quant):
        self.config, self.vocab, tensors = nlformat.load_model(path)
        self.model = nlmodel.build(self.config, tensors, norm, placement, bn_stats, torch.float64, **quant)
        self.norm = self.model.norm
        self.stoi = {ch: i for i, ch in enumerate(self.vocab)}

    def encode(self, text):
        unknown = sorted(set(text) - set(self.stoi))
        if unknown:
            raise ValueError(f"the model's vocabulary has no {unknown[0]!r}")
        return [self.stoi[ch] for ch in text]

    def logits(self, ids):
        """(n, V) float64 logits for ids at positions 0..n-1."""
        return self.logits_batch([ids])[0]


class Reference(_Loaded):
    """A transformer. max_rms: the largest RMS of one position of the residual stream seen, after any block."""

    def __init__(self, path, norm=None, placement=None, bn_stats="running", **quant):
        super().__init__(path, norm, placement, bn_stats, **quant)
        self.max_rms = 0.0
        for block in self.model.h:
            block.register_forward_hook(self._watch)

    def _watch(self, block, inputs, x):
        self.max_rms = max(self.max_rms, float(x.pow(2).mean(-1).sqrt().max()))

    @torch.no_grad()
    def logits_batch(self, batch):
        """(B, n, V) float64 logits of B sequences of n ids, run in one call (which only BatchNorm's
        batch statistics can tell from B calls)."""
        return self.model(torch.tensor(batch))

    def batch_statistics(self, batch):
        """{norm name: (mean, biased variance)} of the rows every BatchNorm normalises in one call on batch."""
        record = {}

        def watch(name):
            def hook(norm, inputs, _):
                rows = inputs[0].reshape(-1, inputs[0].shape[-1])
                mu = rows.mean(0)
                record[name] = (mu, ((rows - mu) ** 2).mean(0))
            return hook
        hooks = [m.register_forward_hook(watch(name)) for name, m in self.model.named_modules()
                 if isinstance(m, nlmodel.Norm) and m.kind == "batchnorm"]
        self.logits_batch(batch)
        for h in hooks:
            h.remove()
        return record

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


class RecurrentReference(_Loaded):
    """A recurrent model (arch lstm or gru), which takes no placement and no BatchNorm statistics (a
    ValueError). Every sequence starts from the zero state."""

    @torch.no_grad()
    def logits_batch(self, batch):
        """(B, n, V) float64 logits of B sequences, each from the zero state, n the longest length.
        A shorter sequence is padded at its end; its rows past its length are padding (a step depends
        only on the steps before it), to be ignored."""
        B, n = len(batch), max(len(s) for s in batch)
        ids = torch.zeros(B, n, dtype=torch.long)
        for b, s in enumerate(batch):
            ids[b, :len(s)] = torch.tensor(s, dtype=torch.long)
        return self.model(ids)[0]

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


def load_reference(path, norm=None, placement=None, bn_stats="running", **quant):
    """The reference for the model at path: RecurrentReference for arch lstm/gru, else Reference; quant
    as _Loaded's. An option the model cannot run is a ValueError."""
    if os.path.isdir(path):  # read config.json alone: the tensors are loaded once, by the class chosen
        with open(os.path.join(path, "config.json")) as f:
            config = json.load(f)
    else:
        config = nlformat.load_model(path)[0]
    return (RecurrentReference if is_recurrent(config) else Reference)(path, norm, placement, bn_stats, **quant)


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
    p = nltool.ArgumentParser(prog="reference.py", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("logits", "eval"):
        s = sub.add_parser(name)
        s.add_argument("-m", "--model", required=True)
        s.add_argument("--norm", choices=nlmodel.NORMS)
        s.add_argument("--placement", choices=nlmodel.PLACEMENTS)
        s.add_argument("--bn-stats", choices=nlmodel.BN_STATS, default="running")
        s.add_argument("--quantize", choices=sorted(nlmodel.QUANTS), help="round the weights, as the engine's")
        s.add_argument("--quantize-only", metavar="CLASSES",
                       help="with --quantize: these matrices, comma-separated: " + ",".join(nlmodel.QUANT_CLASSES))
        s.add_argument("--quantize-act", choices=["q8"], help="round every linear's input rows")
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
    if not os.path.exists(a.model):
        raise nltool.ToolError(f"{a.model}: no such model")
    if a.quantize_only is not None and a.quantize is None:
        p.error("--quantize-only needs --quantize")
    only = None if a.quantize_only is None else a.quantize_only.split(",")
    try:
        ref = load_reference(a.model, a.norm, a.placement, a.bn_stats, quantize=a.quantize, quantize_only=only,
                             quantize_act=a.quantize_act)
    except ValueError as e:
        p.error(str(e))
    kw = {}
    if a.cmd == "eval" and a.segments is not None:
        if not isinstance(ref, RecurrentReference):
            p.error("--segments is for recurrent models (a transformer scores through sliding windows)")
        if a.segments < 1:
            p.error("--segments takes K >= 1")
        kw = {"segments": a.segments}
    text = a.prompt if a.cmd == "logits" else open(a.text, encoding="utf-8").read()
    where = "-p" if a.cmd == "logits" else a.text
    try:
        ids = ref.encode(text)
    except ValueError as e:
        raise nltool.ToolError(f"{where}: {e}")
    if len(ids) < (1 if a.cmd == "logits" else 2):
        raise nltool.ToolError(f"{where}: too short (logits needs 1 character, eval 2)")
    if a.cmd == "logits":
        for row in ref.logits(ids).tolist():
            print(json.dumps(row))
    else:
        nll, count = ref.eval_nll(ids, **kw)
        print(json.dumps({"chars": count, "nats_per_char": nll / count}))


if __name__ == "__main__":
    nltool.run("reference.py", main, sys.argv[1:])
