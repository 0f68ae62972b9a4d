"""Read and write normlab model directories (config.json, tokenizer.json, model.safetensors).

The format is documented in README.md ("Model format"). This module needs only the standard
library and numpy, so the export, reference and fixture tools share one reader and one writer.

Dimension letters: V vocabulary, T context (block_size), D width (n_embd), F MLP width, L layers.
"""
import json
import os
import struct

import numpy as np

FORMAT = {"name": "normlab", "version": 1}


def mlp_width(config):
    """F: n_inner when given, else mlp_ratio * n_embd."""
    if config.get("n_inner") is not None:
        return int(config["n_inner"])
    return int(config.get("mlp_ratio", 4) * config["n_embd"])


def tensor_shapes(config, rms_bias=False):
    """The exact tensor set a config requires, name -> shape (torch.nn.Linear layout (out, in))."""
    V, T, D, L = config["vocab_size"], config["block_size"], config["n_embd"], config["n_layer"]
    F = mlp_width(config)
    norm_has_bias = config["norm"] == "layernorm" or rms_bias
    shapes = {"wte.weight": (V, D), "wpe.weight": (T, D)}

    def norm(name):
        shapes[name + ".weight"] = (D,)
        if norm_has_bias:
            shapes[name + ".bias"] = (D,)

    def linear(name, n_out, n_in):
        shapes[name + ".weight"] = (n_out, n_in)
        if config["bias"]:
            shapes[name + ".bias"] = (n_out,)

    for i in range(L):
        norm(f"h.{i}.ln_1")
        linear(f"h.{i}.attn.c_attn", 3 * D, D)
        linear(f"h.{i}.attn.c_proj", D, D)
        norm(f"h.{i}.ln_2")
        linear(f"h.{i}.mlp.c_fc", F, D)
        linear(f"h.{i}.mlp.c_proj", D, F)
    if config["placement"] == "pre":
        norm("ln_f")
    if not config["tie_embeddings"]:
        shapes["lm_head.weight"] = (V, D)
    return shapes


def write_safetensors(path, tensors, metadata=None):
    """Write F32 tensors (name -> numpy array) contiguously, in the order given."""
    header = {}
    offset = 0
    blobs = []
    for name, arr in tensors.items():
        a = np.ascontiguousarray(arr, dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # pad so the data section starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Return (name -> float32 array, metadata dict). Trusts the file: for tools, not the engine."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, e in header.items():
        assert e["dtype"] == "F32", name
        lo, hi = e["data_offsets"]
        out[name] = np.frombuffer(data[base + lo:base + hi], dtype="<f4").reshape(e["shape"]).copy()
    return out, meta


def write_model_dir(out_dir, config, vocab, tensors, metadata=None):
    """Write a model directory. vocab: list of one-character strings, index = token id."""
    os.makedirs(out_dir, exist_ok=True)
    cfg = {"format": FORMAT, **config}
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump({"type": "char", "vocab": vocab}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors, metadata)


def write_inline_json(path, config, vocab, tensors):
    """Write the single-file form: {"config", "tokenizer", "tensors": {name: {shape, data}}}."""
    doc = {
        "config": {"format": FORMAT, **config},
        "tokenizer": {"type": "char", "vocab": vocab},
        "tensors": {name: {"shape": list(np.shape(a)),
                           "data": [float(x) for x in np.asarray(a, dtype=np.float32).ravel()]}
                    for name, a in tensors.items()},
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
        f.write("\n")


def load_model(path):
    """Load a model directory or single .json file -> (config, vocab, tensors)."""
    if os.path.isdir(path):
        with open(os.path.join(path, "config.json")) as f:
            config = json.load(f)
        with open(os.path.join(path, "tokenizer.json"), encoding="utf-8") as f:
            vocab = json.load(f)["vocab"]
        tensors, _ = read_safetensors(os.path.join(path, "model.safetensors"))
        return config, vocab, tensors
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    tensors = {n: np.asarray(e["data"], dtype=np.float32).reshape(e["shape"])
               for n, e in doc["tensors"].items()}
    return doc["config"], doc["tokenizer"]["vocab"], tensors
