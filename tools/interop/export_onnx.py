#!/usr/bin/python3
"""Export a normlab model to ONNX (opset 17): the full-window forward pass, token ids (B, T) int64 ->
logits (B, T, V) float32, B and T dynamic (T at most block_size), for every norm type and placement
the engine runs, from the formulas in README "Forward pass". The model is first loaded by the engine
(normlab info), so only what normlab runs is exported; --out may not be the model or lie inside it.
BatchNorm exports with its running statistics (the inference function; batch statistics are a
property of a call, not of the graph). The vocabulary (JSON list, token id = index) and the config
go into the model's metadata properties as normlab_vocab and normlab_config.

    /usr/bin/python3 tools/interop/export_onnx.py weights/shakespeare-pre-ln --out pre-ln.onnx
    NODE_PATH=build/ort/node_modules node tools/interop/ort_logits.js pre-ln.onnx 1,2,3     # ONNX Runtime's logits

Needs python3-torch and python3-onnx (tools/install-deps.sh --python). Dimension letters: B batch,
T positions, D width, H heads, V vocabulary.
"""
import argparse
import json
import math
import os
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import nlformat  # noqa: E402
import nltool  # noqa: E402

OPSET = 17


class Forward(nn.Module):
    """The model as a torch module over its own tensors (float32 buffers)."""

    def __init__(self, config, tensors):
        super().__init__()
        self.c = config
        self.placement = config.get("placement", "pre")
        self.alpha = config.get("residual_scale", 1.0) if self.placement == "post" else 1.0
        self.names = {}
        for name, arr in tensors.items():
            key = name.replace(".", "__")
            self.register_buffer(key, torch.from_numpy(arr.copy()).float())
            self.names[name] = key
        T = config["block_size"]
        self.register_buffer("causal", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def t(self, name):
        return getattr(self, self.names[name]) if name in self.names else None

    def norm(self, x, prefix):
        kind, eps = self.c["norm"], self.c["norm_eps"]
        if kind == "none":
            return x
        g, b = self.t(prefix + ".weight"), self.t(prefix + ".bias")
        if kind == "layernorm":
            return F.layer_norm(x, (self.c["n_embd"],), g, b, eps)
        if kind == "rmsnorm":
            y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g
        else:  # batchnorm, running statistics
            y = (x - self.t(prefix + ".running_mean")) / torch.sqrt(self.t(prefix + ".running_var") + eps) * g
        return y if b is None else y + b

    def linear(self, x, prefix):
        y = x @ self.t(prefix + ".weight").t()
        b = self.t(prefix + ".bias")
        return y if b is None else y + b

    def act(self, x):
        a = self.c["activation"]
        if a == "gelu":
            return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
        if a == "gelu_tanh":
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))
        return torch.relu(x)

    def attn(self, x, i):  # (B, T, D)
        B, T = x.shape[0], x.shape[1]
        D, H = self.c["n_embd"], self.c["n_head"]  # static: only B and T vary
        q, k, v = self.linear(x, f"h.{i}.attn.c_attn").split(D, dim=2)
        q, k, v = (z.reshape(B, T, H, D // H).transpose(1, 2) for z in (q, k, v))
        s = (q @ k.transpose(-2, -1)) / math.sqrt(D // H)  # (B, H, T, T)
        s = s.masked_fill(~self.causal[:T, :T], float("-inf"))
        y = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, D)
        return self.linear(y, f"h.{i}.attn.c_proj")

    def mlp(self, x, i):
        return self.linear(self.act(self.linear(x, f"h.{i}.mlp.c_fc")), f"h.{i}.mlp.c_proj")

    def forward(self, ids):  # (B, T) int64 -> (B, T, V)
        T = ids.shape[1]
        x = self.t("wte.weight")[ids] + self.t("wpe.weight")[:T]
        for i in range(self.c["n_layer"]):
            n1, n2 = f"h.{i}.ln_1", f"h.{i}.ln_2"
            if self.placement == "pre":
                x = x + self.attn(self.norm(x, n1), i)
                x = x + self.mlp(self.norm(x, n2), i)
            elif self.placement == "peri":
                x = x + self.norm(self.attn(self.norm(x, n1), i), n1 + "_post")
                x = x + self.norm(self.mlp(self.norm(x, n2), i), n2 + "_post")
            else:
                x = self.norm(self.alpha * x + self.attn(x, i), n1)
                x = self.norm(self.alpha * x + self.mlp(x, i), n2)
        if self.placement != "post":
            x = self.norm(x, "ln_f")
        head = self.t("lm_head.weight")
        return x @ (self.t("wte.weight") if head is None else head).t()


def export(model_path, out):
    import onnx  # python3-onnx

    config, vocab, tensors = nlformat.load_model(model_path)
    module = Forward(config, tensors).eval()
    T = min(8, config["block_size"])
    dummy = torch.zeros(2, T, dtype=torch.long)
    d = os.path.dirname(os.path.abspath(out))
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        raw = os.path.join(tmp, "raw.onnx")
        with torch.no_grad():
            torch.onnx.export(module, (dummy,), raw, input_names=["ids"], output_names=["logits"],
                              dynamic_axes={"ids": {0: "B", 1: "T"}, "logits": {0: "B", 1: "T"}},
                              opset_version=OPSET, do_constant_folding=True)
        m = onnx.load(raw)
        for key, value in (("normlab_vocab", json.dumps(vocab, ensure_ascii=False)),
                           ("normlab_config", json.dumps(config, sort_keys=True)),
                           ("normlab_source", os.path.basename(os.path.normpath(model_path)))):
            p = m.metadata_props.add()
            p.key, p.value = key, value
        m.producer_name = "normlab tools/interop/export_onnx.py"
        onnx.checker.check_model(m)
        nlformat.atomic_write(out, m.SerializeToString())
    return config, vocab


def main(argv):
    p = nltool.ArgumentParser(prog="export_onnx.py", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a normlab model directory or .json file")
    p.add_argument("--out", required=True, help="the .onnx file to write (replaced whole)")
    a = p.parse_args(argv)
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise nltool.ToolError("needs python3-onnx (tools/install-deps.sh --python)")
    if not os.path.exists(a.model):
        raise nltool.ToolError(f"{a.model}: no such model")
    out = nltool.check_out(a.out, [a.model], want_dir=False)  # a symlink's target is replaced, the link kept
    info = nltool.check_model(a.model)  # the engine's rules: what it loads is what is exported
    if info.get("arch", "transformer") != "transformer":
        raise nltool.ToolError(f"{a.model}: a recurrent model (lstm, gru); only transformers are exported")
    torch.set_num_threads(1)
    with nltool.writing(a.out):
        config, vocab = export(a.model, out)
    print(f"wrote {a.out}: opset {OPSET}, {config['norm']}/{config.get('placement', 'pre')}, "
          f"{config['n_layer']} layers, {len(vocab)} characters", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("export_onnx.py", main, sys.argv[1:])
