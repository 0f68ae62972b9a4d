#!/usr/bin/python3
"""Convert a nanoGPT checkpoint (the ckpt.pt its train.py writes) into a normlab model directory.

    /usr/bin/python3 tools/import_nanogpt.py out-shakespeare-char/ckpt.pt --out weights/nanogpt-char
    /usr/bin/python3 tools/import_nanogpt.py ckpt.pt --out MODEL_DIR --meta data/shakespeare_char/meta.pkl

The checkpoint is a dict with "model" (the state dict), "model_args" (n_layer, n_head, n_embd,
block_size, bias, vocab_size, dropout), "iter_num", "best_val_loss" and "config". The vocabulary
comes from the meta.pkl that nanoGPT's data/*/prepare.py writes ({"vocab_size", "itos", "stoi"}),
looked up as nanoGPT's sample.py does (data/<config["dataset"]>/meta.pkl under the current
directory), then beside the checkpoint, or given with --meta. A checkpoint without one (GPT-2's BPE
vocabulary) is refused: normlab is character-level.

What a nanoGPT model is in normlab's format: pre-LN, LayerNorm with eps 1e-5, exact GELU, MLP 4x,
tied embeddings, learned positions. bias False means no biases in the linears and none in the
LayerNorms, whose bias is then written as zeros (normlab's LayerNorm always has one). Dropout does
nothing at inference and is dropped. The "_orig_mod." prefix of torch.compile and the causal-mask
buffers (attn.bias) that older PyTorch versions save are removed.

Both files are pickles, and unpickling an untrusted pickle can run any code its author chose. So the
checkpoint is read with torch.load(weights_only=True), which builds only tensors and plain
containers (where the installed PyTorch's weights-only reader cannot read a nanoGPT checkpoint,
as 1.13's cannot, with an unpickler of our own that admits the same things), and meta.pkl with one
that builds only dicts, lists, strings and numbers. Neither runs code from the file.
"""
import argparse
import hashlib
import io
import json
import os
import pickle
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nlformat  # noqa: E402

ARGS = ("n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size")


class ImportError_(Exception):
    """A checkpoint or vocabulary normlab cannot take, with the reason."""


class PlainUnpickler(pickle.Unpickler):
    """Builds only what pickle makes without classes (dict, list, str, int, ...): any class or
    function the file names is refused instead of imported."""

    def find_class(self, module, name):
        raise ImportError_(f"meta.pkl names {module}.{name}; only plain dicts, strings and numbers are read")


# What a nanoGPT checkpoint's pickle may name besides storages (which torch.load maps itself): the
# state dicts' type and the functions that rebuild tensors. Everything else is refused.
SAFE_GLOBALS = {("collections", "OrderedDict"), ("torch._utils", "_rebuild_tensor_v2"),
                ("torch._utils", "_rebuild_parameter"), ("torch", "Size"), ("torch", "device")}


class SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in SAFE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"the checkpoint names {module}.{name}, which a nanoGPT checkpoint does not")


class SafePickle:
    """A pickle module for torch.load whose unpickler builds only tensors and plain containers."""
    Unpickler = SafeUnpickler
    __name__ = "normlab_safe_pickle"

    @staticmethod
    def load(f, **kw):
        return SafeUnpickler(f, **kw).load()


def load_checkpoint(path):
    """torch.load(weights_only=True); where the installed PyTorch's weights-only reader cannot read
    the file (1.13's rejects the floats every nanoGPT config holds), torch.load with SafePickle, an
    unpickler that admits the same things: tensors, storages, dicts, lists and numbers."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:  # no weights_only (PyTorch before 1.13): SafePickle alone
        pass
    except Exception as e:
        if "Unsupported operand" not in str(e):
            why = str(e).split("WeightsUnpickler error: ")[-1].splitlines()[-1] if str(e) else repr(e)
            raise ImportError_(f"{path}: not a checkpoint torch.load(weights_only=True) can read: {why}")
    try:
        return torch.load(path, map_location="cpu", pickle_module=SafePickle)
    except Exception as e:
        raise ImportError_(f"{path}: not a readable checkpoint: {str(e).splitlines()[-1] if str(e) else e!r}")


def find_meta(ckpt, ckpt_path, meta_arg):
    """The meta.pkl path: --meta, else where sample.py looks, else beside the checkpoint."""
    if meta_arg:
        if not os.path.isfile(meta_arg):
            raise ImportError_(f"--meta {meta_arg}: no such file")
        return meta_arg
    config = ckpt.get("config") if isinstance(ckpt.get("config"), dict) else {}
    tried = []
    if "dataset" in config:
        tried.append(os.path.join("data", str(config["dataset"]), "meta.pkl"))
    tried.append(os.path.join(os.path.dirname(os.path.abspath(ckpt_path)), "meta.pkl"))
    for p in tried:
        if os.path.isfile(p):
            return p
    raise ImportError_("no meta.pkl (looked for " + ", ".join(tried) + "): without one the checkpoint has "
                       "GPT-2's BPE vocabulary, and normlab is character-level; give --meta for a "
                       "character-level model")


def load_vocab(meta_path, vocab_size):
    """The list of characters, index = token id, from meta.pkl's itos."""
    with open(meta_path, "rb") as f:
        try:
            meta = PlainUnpickler(io.BytesIO(f.read())).load()
        except ImportError_:
            raise
        except Exception as e:
            raise ImportError_(f"{meta_path}: not a readable pickle: {e}")
    if not isinstance(meta, dict) or not isinstance(meta.get("itos"), dict):
        raise ImportError_(f"{meta_path}: expected a dict with \"itos\" (nanoGPT's prepare.py writes one)")
    itos = meta["itos"]
    if sorted(itos) != list(range(len(itos))):
        raise ImportError_(f"{meta_path}: itos keys are not the ids 0..{len(itos) - 1}")
    vocab = [itos[i] for i in range(len(itos))]
    bad = [v for v in vocab if not isinstance(v, str) or len(v) != 1]
    if bad:
        raise ImportError_(f"{meta_path}: itos holds {bad[0]!r}, not one character: normlab is character-level")
    if len(vocab) != vocab_size:
        raise ImportError_(f"{meta_path} has {len(vocab)} characters but the model's vocab_size is {vocab_size}; "
                           "normlab needs them equal")
    return vocab


def clean_state(state):
    """The state dict with torch.compile's prefix and the causal-mask buffers removed, as float32."""
    out = {}
    for k, v in state.items():
        if k.startswith("_orig_mod."):
            k = k[len("_orig_mod."):]
        if k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"):
            continue  # the causal mask, not a weight
        if not torch.is_tensor(v):
            raise ImportError_(f"state dict entry {k} is not a tensor")
        out[k] = v.detach().to(torch.float32).numpy()
    return out


def convert(ckpt, vocab):
    """(config, tensors) in normlab's format."""
    args = ckpt.get("model_args")
    if not isinstance(args, dict) or any(k not in args for k in ARGS):
        raise ImportError_("checkpoint lacks model_args with " + ", ".join(ARGS) + " (is it nanoGPT's ckpt.pt?)")
    L, D = int(args["n_layer"]), int(args["n_embd"])
    config = {"vocab_size": int(args["vocab_size"]), "n_layer": L, "n_head": int(args["n_head"]), "n_embd": D,
              "block_size": int(args["block_size"]), "mlp_ratio": 4, "norm": "layernorm", "placement": "pre",
              "norm_eps": 1e-5, "activation": "gelu", "bias": bool(args["bias"]), "tie_embeddings": True}
    if not isinstance(ckpt.get("model"), dict):
        raise ImportError_("checkpoint lacks the \"model\" state dict")
    src = clean_state(ckpt["model"])
    head = src.pop("lm_head.weight", None)
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
            raise ImportError_(f"checkpoint lacks {key}")
        if tuple(tensors[name].shape) != tuple(shape):
            raise ImportError_(f"{key} has shape {tuple(tensors[name].shape)}, expected {tuple(shape)}")
    if src:
        raise ImportError_("checkpoint has tensors a nanoGPT GPT does not: " + ", ".join(sorted(src)[:5]))
    return config, tensors


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ckpt", help="nanoGPT's ckpt.pt")
    p.add_argument("--out", required=True, help="normlab model directory to write (replaced whole if it exists)")
    p.add_argument("--meta", help="the vocabulary's meta.pkl (default: where nanoGPT's sample.py looks)")
    a = p.parse_args(argv)
    try:
        if not os.path.isfile(a.ckpt):
            raise ImportError_(f"{a.ckpt}: no such file")
        raw = open(a.ckpt, "rb").read()
        ckpt = load_checkpoint(a.ckpt)
        if not isinstance(ckpt, dict):
            raise ImportError_(f"{a.ckpt}: not a nanoGPT checkpoint (a dict with model and model_args)")
        meta_path = find_meta(ckpt, a.ckpt, a.meta)
        vocab = load_vocab(meta_path, int((ckpt.get("model_args") or {}).get("vocab_size", -1)))
        config, tensors = convert(ckpt, vocab)
    except ImportError_ as e:
        sys.exit(f"import_nanogpt.py: {e}")
    provenance = {
        "source": "nanoGPT checkpoint (tools/import_nanogpt.py)",
        "source_file": os.path.basename(a.ckpt),
        "source_sha256": hashlib.sha256(raw).hexdigest(),
        "iter_num": ckpt.get("iter_num"),
        "best_val_loss": float(ckpt["best_val_loss"]) if torch.is_tensor(ckpt.get("best_val_loss"))
        else ckpt.get("best_val_loss"),
        "nanogpt_config": json.dumps(ckpt.get("config", {}), sort_keys=True, default=str),
        "meta": os.path.basename(meta_path),
    }
    nlformat.write_model_dir(a.out, config, vocab, tensors, metadata=provenance)
    print(f"wrote {a.out}: {config['n_layer']} layers x {config['n_embd']}, {len(vocab)} characters, "
          f"bias {config['bias']}, iter {provenance['iter_num']}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
