#!/usr/bin/python3
"""Convert a nanoGPT checkpoint (the ckpt.pt its train.py writes) into a normlab model directory.

    /usr/bin/python3 tools/interop/import_nanogpt.py out-shakespeare-char/ckpt.pt --out weights/nanogpt-char
    /usr/bin/python3 tools/interop/import_nanogpt.py ckpt.pt --out MODEL_DIR --meta data/shakespeare_char/meta.pkl

The checkpoint is a dict with "model" (the state dict), "model_args" (n_layer, n_head, n_embd,
block_size, bias, vocab_size, dropout), "iter_num", "best_val_loss" and "config". The vocabulary
comes from the meta.pkl that nanoGPT's data/*/prepare.py writes ({"vocab_size", "itos", "stoi"}),
looked up as nanoGPT's sample.py does (data/<config["dataset"]>/meta.pkl under the current
directory), then beside the checkpoint, or given with --meta. A checkpoint without one has GPT-2's
BPE vocabulary, as sample.py then assumes (tiktoken's "gpt2"): nanoGPT's `shakespeare` recipe and
every run from init_from='gpt2*'. The model then gets GPT-2's tokenizer.json (--tokenizer FILE; by
default the shipped weights/shakespeare-bpe/tokenizer.json, which is GPT-2's). nanoGPT pads a
from-scratch vocabulary to 50304 rows; the rows past the tokenizer's 50257 are no token's, and are
dropped (their logits leave the softmax: sample.py could not decode them either).

What a nanoGPT model is in normlab's format: pre-LN, LayerNorm with eps 1e-5, exact GELU, MLP 4x,
tied embeddings, learned positions. bias False means no biases in the linears and none in the
LayerNorms, whose bias is then written as zeros (normlab's LayerNorm always has one). Dropout does
nothing at inference and is dropped. The "_orig_mod." prefix of torch.compile and the causal-mask
buffers (attn.bias) that older PyTorch versions save are removed.

Both files are pickles, and unpickling an untrusted pickle can run any code its author chose. So
neither goes through torch.load or pickle's own class lookup: the checkpoint is read by
tools/lib/torchzip.py, whose unpickler resolves only the few names a checkpoint of tensors needs (to
stand-ins of its own) and refuses every other, and meta.pkl by one that resolves no name at all
(dicts, lists, strings and numbers). Nothing from either file runs, on any PyTorch version; torch is
not even imported.

The written model is checked by the engine's own loader (normlab info) before it replaces
anything, so the importer accepts exactly what normlab loads: the rules are stated once, there.
--out must be a new path, an empty directory or a model directory, and not an input.
"""
import argparse
import hashlib
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import nlformat  # noqa: E402
import nltool  # noqa: E402
import torchzip  # noqa: E402
from nltool import ToolError  # noqa: E402

GPT2_TOKENIZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "weights", "shakespeare-bpe",
                              "tokenizer.json")
ARGS = ("n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size")


def load_checkpoint(path, raw):
    """The checkpoint's dict from its bytes, read by torchzip (which runs nothing from the file)."""
    try:
        ckpt = torchzip.load(path, raw)
    except torchzip.CheckpointError as e:
        raise ToolError(str(e))
    if not isinstance(ckpt, dict):
        raise ToolError(f"{path}: not a nanoGPT checkpoint (a dict with model and model_args)")
    return ckpt


def find_meta(ckpt, ckpt_path, meta_arg):
    """The meta.pkl path: --meta, else where sample.py looks, else beside the checkpoint."""
    if meta_arg:
        if not os.path.isfile(meta_arg):
            raise ToolError(f"--meta {meta_arg}: " + ("is a directory; give the meta.pkl file in it"
                                                      if os.path.isdir(meta_arg) else "no such file"))
        return meta_arg
    config = ckpt.get("config") if isinstance(ckpt.get("config"), dict) else {}
    tried = []
    if isinstance(config.get("dataset"), str):
        tried.append(os.path.join("data", config["dataset"], "meta.pkl"))
    tried.append(os.path.join(os.path.dirname(os.path.abspath(ckpt_path)), "meta.pkl"))
    for p in tried:
        if os.path.isfile(p):
            return p
    return None  # GPT-2's BPE, as sample.py assumes without one


def load_vocab(meta_path, vocab_size):
    """The list of characters, index = token id, from meta.pkl's itos. Which characters a vocabulary
    may hold (no duplicates, no NUL) is the engine's rule, checked on the written model; what cannot
    even be written as UTF-8 (a lone surrogate) is refused here."""
    try:
        meta = torchzip.load_plain(meta_path)
    except torchzip.CheckpointError as e:
        raise ToolError(str(e))
    if not isinstance(meta, dict) or not isinstance(meta.get("itos"), dict):
        raise ToolError(f"{meta_path}: expected a dict with \"itos\" (nanoGPT's prepare.py writes one)")
    itos = meta["itos"]
    if not all(isinstance(k, int) for k in itos) or sorted(itos) != list(range(len(itos))):
        raise ToolError(f"{meta_path}: itos keys are not the ids 0..{len(itos) - 1}")
    vocab = [itos[i] for i in range(len(itos))]
    bad = [v for v in vocab if not isinstance(v, str) or len(v) != 1]
    if bad:
        raise ToolError(f"{meta_path}: itos holds {bad[0]!r}, not one character: normlab is character-level")
    for i, v in enumerate(vocab):
        if 0xD800 <= ord(v) <= 0xDFFF:
            raise ToolError(f"{meta_path}: itos[{i}] is {v!r}, a lone surrogate, which is no character")
    if len(vocab) != vocab_size:
        raise ToolError(f"{meta_path} has {len(vocab)} characters but the model's vocab_size is {vocab_size}; "
                        "normlab needs them equal")
    return vocab


def bpe_tokenizer(path, vocab_size):
    """GPT-2's tokenizer.json text and its size (the engine checks it whole when it loads the model)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        size = len(json.loads(text)["model"]["vocab"])
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise ToolError(f"--tokenizer {path}: {getattr(e, 'strerror', None) or e}: not a Hugging Face tokenizer.json")
    if vocab_size < size:
        raise ToolError(f"no meta.pkl, so GPT-2's BPE ({size} tokens, {path}); but the checkpoint's vocab_size is "
                        f"{vocab_size}: give --meta for a character-level model")
    return text, size


def clean_state(state):
    """The state dict with torch.compile's prefix and the causal-mask buffers removed, as float32."""
    out = {}
    for k, v in state.items():
        if not isinstance(k, str):
            raise ToolError(f"state dict key {k!r} is not a name")
        if k.startswith("_orig_mod."):
            k = k[len("_orig_mod."):]
        if k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"):
            continue  # the causal mask, not a weight
        if not isinstance(v, np.ndarray):
            raise ToolError(f"state dict entry {k} is not a tensor")
        out[k] = v.astype(np.float32)
    return out


def model_args(ckpt):
    """model_args checked for type: whole numbers, and bias a bool. Their ranges are the engine's."""
    args = ckpt.get("model_args")
    if not isinstance(args, dict) or any(k not in args for k in ARGS):
        raise ToolError("checkpoint lacks model_args with " + ", ".join(ARGS) + " (is it nanoGPT's ckpt.pt?)")
    for k in ARGS:
        want = bool if k == "bias" else int
        if not isinstance(args[k], want) or (want is int and isinstance(args[k], bool)):
            raise ToolError(f"model_args[{k!r}] is {args[k]!r}, not {'a bool' if want is bool else 'an integer'}")
    return args


def convert(ckpt, rows=None):
    """(config, tensors) in normlab's format; rows: keep the vocabulary's first rows (GPT-2's 50257
    of nanoGPT's padded 50304)."""
    args = dict(model_args(ckpt))
    L, D = args["n_layer"], args["n_embd"]
    config = {"vocab_size": args["vocab_size"], "n_layer": L, "n_head": args["n_head"], "n_embd": D,
              "block_size": args["block_size"], "mlp_ratio": 4, "norm": "layernorm", "placement": "pre",
              "norm_eps": 1e-5, "activation": "gelu", "bias": args["bias"], "tie_embeddings": True}
    if not isinstance(ckpt.get("model"), dict):
        raise ToolError("checkpoint lacks the \"model\" state dict")
    src = clean_state(ckpt["model"])
    head = src.pop("lm_head.weight", None)
    if rows is not None and rows < args["vocab_size"]:
        config["vocab_size"] = rows
        head = head[:rows] if head is not None else None
        if "transformer.wte.weight" in src:
            src["transformer.wte.weight"] = src["transformer.wte.weight"][:rows]
    if head is not None and not np.array_equal(head, src.get("transformer.wte.weight")):
        config["tie_embeddings"] = False
    tensors = {}
    for name, shape in nlformat.tensor_shapes(config).items():
        key = "transformer." + name
        if name == "lm_head.weight":
            tensors[name] = head
        elif key in src:
            tensors[name] = src.pop(key)
        elif name.endswith(".bias") and (".ln_" in name or name.startswith("ln_f")) and not config["bias"]:
            tensors[name] = np.zeros(shape, np.float32)  # nanoGPT's LayerNorm(bias=False)
        else:
            raise ToolError(f"checkpoint lacks {key}")
        if tuple(tensors[name].shape) != tuple(shape):
            raise ToolError(f"{key} has shape {tuple(tensors[name].shape)}, expected {tuple(shape)}")
    if src:
        raise ToolError("checkpoint has tensors a nanoGPT GPT does not: " + ", ".join(sorted(src)[:5]))
    return config, tensors


def plain_value(v):
    """A checkpoint's number, string or None as it is; anything else (a huge int, a structure) as a
    short repr, so that recording it can never fail."""
    if isinstance(v, np.ndarray) and v.size == 1:
        v = v.item()
    if v is None or isinstance(v, (bool, str)) or (isinstance(v, float) and math.isfinite(v)):
        return v
    if isinstance(v, int) and abs(v) < 1 << 63:
        return v
    return f"<{type(v).__name__}>"


def config_text(config):
    """nanoGPT's config as JSON, or a note when it is not JSON-able (keys that are not strings, a cycle)."""
    try:
        return json.dumps(config, sort_keys=True, default=lambda v: f"<{type(v).__name__}>")
    except (TypeError, ValueError, RecursionError):
        return "<not JSON: " + type(config).__name__ + ">"


def provenance(ckpt, ckpt_path, raw, meta_path):
    """What the model came from, for the safetensors metadata (normlab info shows it)."""
    return {
        "source": "nanoGPT checkpoint (tools/interop/import_nanogpt.py)",
        "source_file": os.path.basename(ckpt_path),
        "source_sha256": hashlib.sha256(raw).hexdigest(),
        "iter_num": plain_value(ckpt.get("iter_num")),
        "best_val_loss": plain_value(ckpt.get("best_val_loss")),
        "nanogpt_config": config_text(ckpt.get("config", {})),
        "meta": os.path.basename(meta_path) if meta_path else "none: GPT-2's BPE",
    }


def main(argv):
    p = nltool.ArgumentParser(prog="import_nanogpt.py", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ckpt", help="nanoGPT's ckpt.pt")
    p.add_argument("--out", required=True, help="normlab model directory to write (replaced whole if it is one)")
    p.add_argument("--meta", help="the vocabulary's meta.pkl (default: where nanoGPT's sample.py looks)")
    p.add_argument("--tokenizer", default=GPT2_TOKENIZER, metavar="FILE",
                   help="without meta.pkl: GPT-2's tokenizer.json (default: weights/shakespeare-bpe's)")
    a = p.parse_args(argv)
    if os.path.isdir(a.ckpt):
        raise ToolError(f"{a.ckpt}: is a directory; give the checkpoint file in it (nanoGPT's out_dir/ckpt.pt)")
    if not os.path.isfile(a.ckpt):
        raise ToolError(f"{a.ckpt}: no such file")
    raw = open(a.ckpt, "rb").read()  # read once: the hash describes the bytes parsed
    ckpt = load_checkpoint(a.ckpt, raw)
    meta_path = find_meta(ckpt, a.ckpt, a.meta)
    nltool.check_out(a.out, [a.ckpt, meta_path or a.tokenizer], want_dir=True)
    if meta_path:
        vocab = load_vocab(meta_path, model_args(ckpt)["vocab_size"])
        config, tensors = convert(ckpt)
        unit = f"{len(vocab)} characters"
    else:
        vocab, size = bpe_tokenizer(a.tokenizer, model_args(ckpt)["vocab_size"])
        config, tensors = convert(ckpt, rows=size)
        unit = f"GPT-2's BPE ({size} tokens)"
    with nltool.writing(a.out):
        nlformat.write_model_dir(a.out, config, vocab, tensors, metadata=provenance(ckpt, a.ckpt, raw, meta_path),
                                 check=nltool.check_model)
    print(f"wrote {a.out}: {config['n_layer']} layers x {config['n_embd']}, {unit}, "
          f"bias {config['bias']}, iter {plain_value(ckpt.get('iter_num'))}", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("import_nanogpt.py", main, sys.argv[1:])
