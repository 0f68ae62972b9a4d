#!/usr/bin/python3
"""Convert a Hugging Face GPT-2 snapshot folder into a normlab model directory.

    /usr/bin/python3 tools/interop/import_hf_gpt2.py SNAPSHOT --out weights/gpt2
    ./normlab generate -m weights/gpt2 -p "Hello, I'm a language model,"

SNAPSHOT is a folder as Hugging Face's hub keeps one (e.g. what `git clone
https://huggingface.co/openai-community/gpt2` or huggingface_hub's snapshot_download gives), holding:
  config.json          GPT2Config: n_layer, n_head, n_embd, n_positions, vocab_size, layer_norm_epsilon,
                       activation_function (gelu_new), n_inner (null: 4 n_embd)
  model.safetensors    the weights (F32, F16, BF16 or F64; written as F32), or else
  pytorch_model.bin    the same as a PyTorch pickle, read by tools/lib/torchzip.py, so no code runs
  tokenizer.json       GPT-2's byte-level BPE, or else vocab.json + merges.txt

What a GPT-2 is in normlab's format: pre-LN, LayerNorm with eps layer_norm_epsilon, GELU with
tanh (HF's gelu_new; "gelu" is the exact one), biases everywhere, learned positions, the head tied
to the embedding as HF stores it (lm_head.weight, where it is saved, must equal wte.weight;
otherwise the head is written untied). Names come with or without the "transformer." prefix (a
GPT2LMHeadModel's or a GPT2Model's). The causal-mask buffers of older checkpoints (attn.bias,
attn.masked_bias) are not weights and are dropped.

HF's GPT-2 stores its linears as Conv1D, with the weight (in, out): x @ W + b. This importer
transposes them to (out, in), the layout of every linear in normlab's format (nn.Linear's, and
nanoGPT's), so that the format keeps one rule for the loader, the references and the other tools,
and the engine picks each matrix's layout for its kernels at load time from that one.

The tokenizer files are copied as they are. The written model is checked by the engine's own
loader (normlab info) before it replaces anything: a config that disagrees with the tensors
(n_positions and wpe, vocab_size and the tokenizer) is refused there, with the engine's reason.
--out must be a new path, an empty directory or a model directory, and not an input.
"""
import argparse
import hashlib
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import nlformat  # noqa: E402
import nltool  # noqa: E402
import torchzip  # noqa: E402
from nltool import ToolError  # noqa: E402

ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "BF16": "<u2"}
MAX_FILE = 64 << 30


def read_json(path, what):
    try:
        with open(path, "rb") as f:
            return json.loads(f.read(16 << 20).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ToolError(f"{what}: {getattr(e, 'strerror', None) or e}")


def number(cfg, key, kind, default=None):
    v = cfg.get(key, default)
    if kind is int and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
        raise ToolError(f"config.json: {key} is {v!r}, not a positive integer")
    if kind is float and (not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 < v < 1):
        raise ToolError(f"config.json: {key} is {v!r}, not a number in (0, 1)")
    return v


def convert_config(cfg):
    """normlab's config from a GPT2Config (as a dict), every field it depends on checked."""
    if not isinstance(cfg, dict) or cfg.get("model_type", "gpt2") != "gpt2":
        raise ToolError("config.json: not a GPT2Config (model_type gpt2)")
    act = cfg.get("activation_function", "gelu_new")
    if act not in ACTIVATIONS:
        raise ToolError(f"config.json: activation_function {act!r}: normlab runs " + ", ".join(ACTIVATIONS))
    for key, want in (("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx", False),
                      ("add_cross_attention", False)):
        if cfg.get(key, want) != want:
            raise ToolError(f"config.json: {key} {cfg[key]!r} is not GPT-2's ({want}): normlab does not run it")
    D = number(cfg, "n_embd", int)
    inner = cfg.get("n_inner")
    config = {"vocab_size": number(cfg, "vocab_size", int), "n_layer": number(cfg, "n_layer", int),
              "n_head": number(cfg, "n_head", int), "n_embd": D, "block_size": number(cfg, "n_positions", int),
              "norm": "layernorm", "placement": "pre", "norm_eps": number(cfg, "layer_norm_epsilon", float, 1e-5),
              "activation": ACTIVATIONS[act], "bias": True, "tie_embeddings": True}
    if inner is None or inner == 4 * D:
        config["mlp_ratio"] = 4
    else:
        config["n_inner"] = number(cfg, "n_inner", int)
    return config


def read_safetensors(path):
    """name -> float32 array, every offset and shape checked (the file is untrusted)."""
    size = os.path.getsize(path)
    if size < 8 or size > MAX_FILE:
        raise ToolError(f"{path}: {size} bytes: not a safetensors file")
    with open(path, "rb") as f:
        data = f.read(size)
    (n,) = struct.unpack("<Q", data[:8])
    try:
        header = json.loads(data[8:8 + n].decode("utf-8")) if 8 + n <= len(data) else None
    except (UnicodeDecodeError, ValueError):
        header = None
    if not isinstance(header, dict):
        raise ToolError(f"{path}: its header is not a JSON object")
    header.pop("__metadata__", None)
    out, base = {}, 8 + n
    for name, e in header.items():
        ok = isinstance(e, dict) and e.get("dtype") in DTYPES and isinstance(e.get("shape"), list) and \
            all(isinstance(d, int) and d >= 0 for d in e["shape"]) and isinstance(e.get("data_offsets"), list) and \
            len(e["data_offsets"]) == 2 and all(isinstance(o, int) for o in e["data_offsets"])
        lo, hi = e["data_offsets"] if ok else (0, -1)
        width = np.dtype(DTYPES[e["dtype"]]).itemsize if ok else 0
        if not ok or not 0 <= lo <= hi <= len(data) - base or hi - lo != width * int(np.prod(e["shape"])):
            raise ToolError(f"{path}: tensor {name!r} has a bad dtype, shape or data_offsets")
        raw = np.frombuffer(data[base + lo:base + hi], dtype=DTYPES[e["dtype"]])
        if e["dtype"] == "BF16":  # the high half of a float32
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        out[name] = raw.astype(np.float32).reshape(e["shape"])
    return out


def read_weights(folder):
    """(name -> float32 array, the weights file's path)."""
    st, pt = os.path.join(folder, "model.safetensors"), os.path.join(folder, "pytorch_model.bin")
    if os.path.isfile(st):
        return read_safetensors(st), st
    if not os.path.isfile(pt):
        raise ToolError(f"{folder}: has neither model.safetensors nor pytorch_model.bin")
    try:
        state = torchzip.load(pt)
    except torchzip.CheckpointError as e:
        raise ToolError(str(e))
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, np.ndarray)
                                              for k, v in state.items()):
        raise ToolError(f"{pt}: not a state dict of tensors")
    return {k: v.astype(np.float32) for k, v in state.items()}, pt


def convert_tensors(src, config):
    """normlab's tensors from HF's: the prefix dropped, the mask buffers dropped, Conv1D transposed."""
    plain = {}
    for k, v in src.items():
        k = k[len("transformer."):] if k.startswith("transformer.") else k
        if k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"):
            continue  # the causal mask, not a weight
        plain[k] = v.T.copy() if k.endswith(CONV1D) and v.ndim == 2 else v
    head = plain.pop("lm_head.weight", None)
    if head is not None and not np.array_equal(head, plain.get("wte.weight")):
        config["tie_embeddings"] = False
    tensors = {}
    for name, shape in nlformat.tensor_shapes(config).items():
        t = head if name == "lm_head.weight" else plain.pop(name, None)
        if t is None:
            raise ToolError(f"the weights lack {name} (or transformer.{name})")
        if tuple(t.shape) != tuple(shape):
            hf = tuple(reversed(shape)) if name.endswith(CONV1D) else tuple(shape)
            raise ToolError(f"{name} has shape {tuple(t.shape)[::-1] if name.endswith(CONV1D) else tuple(t.shape)}, "
                            f"config.json says {hf}")
        if not np.all(np.isfinite(t)):
            raise ToolError(f"{name} holds a value that is not finite")
        tensors[name] = t
    if plain:
        raise ToolError("the weights hold tensors a GPT-2 does not: " + ", ".join(sorted(plain)[:5]))
    return tensors


def tokenizer_files(folder):
    """(tokenizer.json text or None, the other files to copy: name -> text)."""
    def text(name):
        try:
            with open(os.path.join(folder, name), "rb") as f:
                return f.read(16 << 20).decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ToolError(f"{folder}/{name}: {getattr(e, 'strerror', None) or e}")
    if os.path.isfile(os.path.join(folder, "tokenizer.json")):
        return text("tokenizer.json"), {}
    if os.path.isfile(os.path.join(folder, "vocab.json")) and os.path.isfile(os.path.join(folder, "merges.txt")):
        return None, {"vocab.json": text("vocab.json"), "merges.txt": text("merges.txt")}
    raise ToolError(f"{folder}: has no tokenizer.json, nor vocab.json and merges.txt")


def main(argv):
    p = nltool.ArgumentParser(prog="import_hf_gpt2.py", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("snapshot", help="the Hugging Face snapshot folder (config.json, weights, tokenizer files)")
    p.add_argument("--out", required=True, help="normlab model directory to write (replaced whole if it is one)")
    a = p.parse_args(argv)
    if not os.path.isdir(a.snapshot):
        raise ToolError(f"{a.snapshot}: not a folder (give the snapshot folder that holds config.json)")
    nltool.check_out(a.out, [a.snapshot], want_dir=True)
    config = convert_config(read_json(os.path.join(a.snapshot, "config.json"), f"{a.snapshot}/config.json"))
    src, weights_path = read_weights(a.snapshot)
    tensors = convert_tensors(src, config)
    tokenizer, extra = tokenizer_files(a.snapshot)
    with open(weights_path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    meta = {"source": "Hugging Face GPT-2 snapshot (tools/interop/import_hf_gpt2.py)",
            "source_file": os.path.basename(weights_path), "source_sha256": digest}
    with nltool.writing(a.out):
        nlformat.write_model_dir(a.out, config, tokenizer, tensors, metadata=meta, extra=extra,
                                 check=nltool.check_model)
    print(f"wrote {a.out}: {config['n_layer']} layers x {config['n_embd']}, vocabulary {config['vocab_size']}, "
          f"context {config['block_size']}, head {'tied' if config['tie_embeddings'] else 'untied'}", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("import_hf_gpt2.py", main, sys.argv[1:])
