#!/usr/bin/python3
"""Convert a Hugging Face GPT-2 snapshot folder into a normlab model directory.

    /usr/bin/python3 tools/interop/import_hf_gpt2.py SNAPSHOT --out weights/gpt2
    ./normlab generate -m weights/gpt2 -p "Hello, I'm a language model,"

SNAPSHOT is a folder as Hugging Face's hub keeps one (e.g. what `git clone
https://huggingface.co/openai-community/gpt2` or huggingface_hub's snapshot_download gives), holding:
  config.json          GPT2Config: n_layer, n_head, n_embd, n_positions, vocab_size, layer_norm_epsilon,
                       activation_function (gelu_new), n_inner (null: 4 n_embd)
  model.safetensors    the weights (F32, F16, BF16 or F64), or else
  pytorch_model.bin    the same as a PyTorch pickle, read by tools/lib/torchzip.py, so no code runs
  tokenizer.json       GPT-2's byte-level BPE, or else vocab.json + merges.txt

The weight matrices (wte, the Conv1D weights, an untied head) keep the type they are stored in: F16
and BF16 as stored (the engine runs both), F32 and F64 as float32; --dtype f32|f16|bf16 chooses
instead. Biases, LayerNorm's gains and biases and wpe are float32 (docs/format.md).

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

Vocabulary: an embedding with more rows than the tokenizer has tokens (padded, e.g. to 50304) keeps
the rows of the token ids, and the rest (padding, no token's) are cropped, as the nanoGPT importer
does. An added token outside model.vocab (a "<|pad|>" with id 50257, say) stays a token: it is put
into model.vocab under its id, as GPT-2's "<|endoftext|>" is in both, because normlab's loader reads
every token from model.vocab (one that holds a space or a byte outside GPT-2's alphabet is refused:
the loader could not spell it). Otherwise the tokenizer files are copied as they are.

The written model is checked by the engine's own loader (normlab info) before it replaces anything:
a config that disagrees with the tensors (n_positions and wpe, vocab_size and the tokenizer) is
refused there, with the engine's reason, naming the snapshot's file (the one in --out was never
written). --out must be a new path, an empty directory or a model directory, and not an input; its
missing parents are made (as save_pretrained does), and removed again if the import fails.

Memory: tensors are read from model.safetensors and written one at a time, so the importer holds
the largest tensor (GPT-2's wte, 154 MB), not the snapshot; normlab info, checking the written
model, maps all of it (docs/gpt2.md has the figures).
"""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import gpt2bpe  # noqa: E402
import hfweights  # noqa: E402
import nlformat  # noqa: E402
import nltool  # noqa: E402
import torchzip  # noqa: E402
from hfweights import read_json, read_safetensors  # noqa: E402
from nltool import ToolError  # noqa: E402

ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def number(cfg, key, kind, where, default=None):
    v = cfg.get(key, default)
    if v is None:
        raise ToolError(f"{where}: {key} is missing")
    if kind is int and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
        raise ToolError(f"{where}: {key} is {v!r}, not a positive integer")
    if kind is float and (not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 < v < 1):
        raise ToolError(f"{where}: {key} is {v!r}, not a number in (0, 1)")
    return v


def convert_config(cfg, where):
    """normlab's config from a GPT2Config (as a dict; where: its file), every field it depends on checked."""
    if not isinstance(cfg, dict) or cfg.get("model_type", "gpt2") != "gpt2":
        raise ToolError(f"{where}: not a GPT2Config (model_type gpt2)")
    act = cfg.get("activation_function", "gelu_new")
    if act not in ACTIVATIONS:
        raise ToolError(f"{where}: activation_function {act!r}: normlab runs " + ", ".join(ACTIVATIONS))
    for key, want in (("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx", False),
                      ("add_cross_attention", False)):
        if cfg.get(key, want) != want:
            raise ToolError(f"{where}: {key} {cfg[key]!r} is not GPT-2's ({want}): normlab does not run it")
    D = number(cfg, "n_embd", int, where)
    inner = cfg.get("n_inner")
    config = {"vocab_size": number(cfg, "vocab_size", int, where), "n_layer": number(cfg, "n_layer", int, where),
              "n_head": number(cfg, "n_head", int, where), "n_embd": D,
              "block_size": number(cfg, "n_positions", int, where), "norm": "layernorm", "placement": "pre",
              "norm_eps": number(cfg, "layer_norm_epsilon", float, where, 1e-5),
              "activation": ACTIVATIONS[act], "bias": True, "tie_embeddings": True}
    if inner is None or inner == 4 * D:
        config["mlp_ratio"] = 4
    else:
        config["n_inner"] = number(cfg, "n_inner", int, where)
    return config


class InMemory:
    """A tensor already read (pytorch_model.bin's; bfloat16 as its bits, uint16), with
    hfweights.Stored's interface."""

    def __init__(self, array):
        self.array, self.shape = array, tuple(array.shape)
        self.dtype = {"float16": "F16", "uint16": "BF16", "float64": "F64"}.get(array.dtype.name, "F32")

    def load(self, lo=0, hi=None):
        a = self.array[lo:hi] if self.shape else self.array
        if self.dtype == "BF16":  # the high half of a float32
            return (a.astype(np.uint32) << 16).view(np.float32)
        return a.astype(np.float32)


def read_weights(folder):
    """(name -> Stored or InMemory, the weights file's path)."""
    st, pt = os.path.join(folder, "model.safetensors"), os.path.join(folder, "pytorch_model.bin")
    if os.path.isfile(st):
        return read_safetensors(st), st
    if not os.path.isfile(pt):
        raise ToolError(f"{folder}: has neither model.safetensors nor pytorch_model.bin")
    try:
        state = torchzip.load(pt, bf16_bits=True)
    except torchzip.CheckpointError as e:
        raise ToolError(str(e))
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, np.ndarray)
                                              for k, v in state.items()):
        raise ToolError(f"{pt}: not a state dict of tensors")
    return {k: InMemory(v) for k, v in state.items()}, pt


def same_rows(a, b, rows):
    """Whether the first rows rows of two tensors are equal, compared a block at a time."""
    return all(np.array_equal(a.load(i, min(i + 4096, rows)), b.load(i, min(i + 4096, rows)))
               for i in range(0, rows, 4096))


def deferred(name, t, rows, transpose, where, kind="F32"):
    """nlformat.Deferred: t's first rows rows (all when None), transposed for a Conv1D, checked finite,
    stored as kind (F16: checked within its range)."""
    def load():
        a = t.load(0, rows) if rows is not None else t.load()
        a = np.ascontiguousarray(a.T) if transpose else a
        if not np.all(np.isfinite(a)):
            raise ToolError(f"{where}: tensor {name} holds a value that is not finite")
        return hfweights.storable(a, kind, where, name)
    shape = ((rows,) + t.shape[1:]) if rows is not None else t.shape
    return nlformat.Deferred(shape[::-1] if transpose else shape, load, kind)


MATRICES = ("wte.weight", "lm_head.weight") + CONV1D  # the weight matrices, which may keep a 16-bit type


def convert_tensors(src, config, n_tokens, where, dtype=None):
    """normlab's tensors (Deferred: read when written) from HF's: the prefix dropped, the mask buffers
    dropped, Conv1D transposed, and the embedding's rows past the last token's id (padding) cropped."""
    plain = {}
    for k, v in src.items():
        k = k[len("transformer."):] if k.startswith("transformer.") else k
        if k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"):
            continue  # the causal mask, not a weight
        plain[k] = v
    V, rows = config["vocab_size"], None
    wte, head = plain.get("wte.weight"), plain.pop("lm_head.weight", None)
    if V > n_tokens and wte is not None and wte.shape[:1] == (V,):  # padding rows: no token has them
        config["vocab_size"] = rows = n_tokens
    if head is not None and (wte is None or head.shape != wte.shape or not same_rows(head, wte, head.shape[0])):
        config["tie_embeddings"] = False
    tensors = {}
    for name, shape in nlformat.tensor_shapes(config).items():
        t = head if name == "lm_head.weight" else plain.pop(name, None)
        if t is None:
            raise ToolError(f"{where}: the weights lack {name} (or transformer.{name})")
        crop = rows if name in ("wte.weight", "lm_head.weight") else None
        conv = name.endswith(CONV1D) and len(t.shape) == 2
        got = ((crop,) + t.shape[1:]) if crop is not None else t.shape
        if tuple(got[::-1] if conv else got) != tuple(shape):
            hf = tuple(reversed(shape)) if conv else tuple(shape)
            raise ToolError(f"{where}: {name} has shape {tuple(t.shape)}, config.json says {hf}")
        kind = hfweights.matrix_type([t], dtype) if name.endswith(MATRICES) and len(t.shape) == 2 else "F32"
        tensors[name] = deferred(name, t, crop, conv, where, kind)
    if plain:
        raise ToolError(f"{where}: the weights hold tensors a GPT-2 does not: " + ", ".join(sorted(plain)[:5]))
    return tensors


def fold_added(vocab, added, where):
    """vocab (token -> id) with the added tokens that are not in it put in, under their ids, as GPT-2's
    tokenizer.json has "<|endoftext|>" in both: normlab's loader reads a token's text from model.vocab
    and takes each added token as special there. added: (content, id) pairs. Those outside vocab must
    take the ids after it (as HF gives them), and each one's text must be its own byte-level spelling
    (no space, no byte outside GPT-2's printable alphabet), which is how model.vocab spells a token.
    A model.vocab that is itself not ids 0 to n-1 is left as it is, for the engine's loader to name."""
    ids = list(vocab.values())
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids) or sorted(ids) != list(range(len(ids))):
        return vocab
    vocab, alphabet, n = dict(vocab), gpt2bpe.byte_alphabet(), len(vocab)
    for k, (content, id_) in enumerate(added):
        if not isinstance(content, str) or not content or not isinstance(id_, int) or isinstance(id_, bool):
            raise ToolError(f"{where}: added_tokens[{k}] has no text or no integer id")
    for content, id_ in sorted(added, key=lambda e: e[1]):  # in the order of their ids, whatever the list's
        if content in vocab:
            if vocab[content] != id_:
                raise ToolError(f"{where}: added token {content!r} has id {id_}, model.vocab gives it {vocab[content]}")
            continue
        if id_ != len(vocab):
            raise ToolError(f"{where}: added token {content!r} has id {id_}: an added token outside model.vocab "
                            f"({n} tokens) needs the next id, {len(vocab)}")
        if "".join(alphabet[b] for b in content.encode("utf-8")) != content:
            raise ToolError(f"{where}: added token {content!r} (id {id_}) holds a space or a character outside "
                            "GPT-2's byte alphabet: normlab's tokenizer cannot hold it yet")
        vocab[content] = id_
    return vocab


def tokenizer_files(folder):
    """(tokenizer.json text or None, the other files to copy: name -> text, the number of tokens, the
    snapshot's tokenizer file by the name normlab's model gives it). Added tokens outside model.vocab
    (a pad token, say) are put into it (fold_added), so they stay tokens."""
    def text(name):
        try:
            with open(os.path.join(folder, name), "rb") as f:
                return f.read(16 << 20).decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ToolError(f"{folder}/{name}: {getattr(e, 'strerror', None) or e}")
    tj = os.path.join(folder, "tokenizer.json")
    if os.path.isfile(tj):
        raw = text("tokenizer.json")
        try:
            doc = json.loads(raw)
            vocab, added = doc["model"]["vocab"], doc.get("added_tokens") or []
            pairs = [(e.get("content"), e.get("id")) for e in added]
        except (ValueError, KeyError, TypeError, AttributeError):
            return raw, {}, None, {"tokenizer.json": tj}  # not one normlab reads: its loader says why
        if not isinstance(vocab, dict):
            return raw, {}, None, {"tokenizer.json": tj}
        folded = fold_added(vocab, pairs, tj)
        if len(folded) != len(vocab):
            doc["model"]["vocab"] = folded
            raw = json.dumps(doc, ensure_ascii=False)
        return raw, {}, len(folded), {"tokenizer.json": tj}
    if os.path.isfile(os.path.join(folder, "vocab.json")) and os.path.isfile(os.path.join(folder, "merges.txt")):
        files = {"vocab.json": text("vocab.json"), "merges.txt": text("merges.txt")}
        try:
            vocab = json.loads(files["vocab.json"])
        except ValueError:
            vocab = None
        added = os.path.join(folder, "added_tokens.json")
        listed = read_json(added, added) if isinstance(vocab, dict) and os.path.isfile(added) else {}
        if isinstance(listed, dict):  # (anything else: not a file HF writes; normlab does not read it)
            extra = [t for t in listed if t not in vocab]
            if extra:
                raise ToolError(f"{added}: added tokens beyond vocab.json ({', '.join(sorted(extra)[:3])}): normlab "
                                "reads added tokens from a tokenizer.json only")
        where = {n: os.path.join(folder, n) for n in files}
        return None, files, len(vocab) if isinstance(vocab, dict) else None, where
    raise ToolError(f"{folder}: has no tokenizer.json, nor vocab.json and merges.txt")


def main(argv):
    a = hfweights.snapshot_arguments("import_hf_gpt2.py", __doc__, argv, options=hfweights.dtype_option)
    config_path = os.path.join(a.snapshot, "config.json")
    config = convert_config(read_json(config_path, config_path), config_path)
    src, weights_path = read_weights(a.snapshot)
    tokenizer, extra, n_tokens, shown = tokenizer_files(a.snapshot)
    padded = config["vocab_size"]
    tensors = convert_tensors(src, config, n_tokens or padded, weights_path, hfweights.DTYPE_FLAGS[a.dtype])
    shown.update({"config.json": config_path, "model.safetensors": weights_path})
    with open(weights_path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    meta = {"source": "Hugging Face GPT-2 snapshot (tools/interop/import_hf_gpt2.py)",
            "source_file": os.path.basename(weights_path), "source_sha256": digest}
    with nltool.writing(a.out):
        nlformat.write_model_dir(a.out, config, tokenizer, tensors, metadata=meta, extra=extra,
                                 check=lambda new, _: nltool.check_model(new, a.snapshot, shown))
    cropped = f" ({padded - config['vocab_size']} padding rows dropped)" if padded > config["vocab_size"] else ""
    kinds = sorted({t.dtype for t in tensors.values()} - {"F32"})
    print(f"wrote {a.out}: {config['n_layer']} layers x {config['n_embd']}, vocabulary {config['vocab_size']}"
          f"{cropped}, context {config['block_size']}, head {'tied' if config['tie_embeddings'] else 'untied'}"
          + (f", matrices stored {'/'.join(kinds)}" if kinds else ""), file=sys.stderr)


if __name__ == "__main__":
    nltool.run("import_hf_gpt2.py", main, sys.argv[1:])
