#!/usr/bin/python3
"""Convert a llama2.c model (.bin, float32) and its tokenizer.bin into a normlab model directory of
arch llama (docs/format.md). Plain Python: the standard library and numpy, no PyTorch.

    /usr/bin/python3 tools/interop/import_llama2c.py stories15M.bin --tokenizer tokenizer.bin --out weights/stories15M
    ./normlab generate -m weights/stories15M -p "Once upon a time"

MODEL.bin is either layout of tools/lib/llama2c.py: the legacy one run.c reads (a 7-int32 header,
a negative vocab_size for a separate classifier, the freq_cis tables skipped) or export.py's
version 1 (magic "ak42", a 256-byte header). Its size must be exactly what its header describes.
--tokenizer defaults to tokenizer.bin beside MODEL.bin. The model becomes: RMSNorm eps 1e-5 and
RoPE theta 10000 (run.c's constants), the context seq_len, the head tied when the classifier is
shared; llama2.c's q and k rows already pair RoPE's dimensions as normlab does (2i, 2i+1), so no
row moves. tokenizer.bin becomes normlab's sentencepiece tokenizer.json: pieces in id order with
their scores, a space written "\u2581" again, and "\\n<s>\\n" / "\\n</s>\\n" (as tokenizer.py's export
spells BOS and EOS) back to "<s>" and "</s>"; byte fallback with the 256 "<0xXX>" pieces.

Refused with one line, exit 1, nothing written: a file cut short, a header that does not match the
file's size, a header no model has (a head count that does not divide dim, n_kv_heads not dividing
n_heads), a NaN or Inf weight, a tokenizer.bin with a negative length, cut short, with bytes after
the model's vocabulary, a piece that is not UTF-8 or given twice, no <unk>, <s> or </s>, or a
missing byte piece; a SentencePiece tokenizer.model given as --tokenizer (named as such: llama2.c's
tokenizer.bin is wanted). The written model is then checked by the engine's loader (normlab info).
"""
import argparse
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import llama2c  # noqa: E402
import nlformat  # noqa: E402
import nltool  # noqa: E402
import spmjson  # noqa: E402
from nltool import ToolError  # noqa: E402

SPACE = "\u2581"  # SentencePiece's visible space
SPECIAL = {"\n<s>\n": "<s>", "\n</s>\n": "</s>"}  # tokenizer.py's export of BOS and EOS


def sentencepiece_json(tokens, path):
    """normlab's sentencepiece tokenizer.json text from tokenizer.bin's [(bytes, score)]."""
    pieces = []
    for i, (raw, score) in enumerate(tokens):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path}: token {i} is not UTF-8 ({raw[:16]!r})")
        pieces.append(SPECIAL.get(text, text.replace(" ", SPACE)))
    ids = {}
    for i, piece in enumerate(pieces):
        if piece in ids:
            raise ToolError(f"{path}: tokens {ids[piece]} and {i} are both {piece!r}")
        ids[piece] = i
    for need in ("<unk>", "<s>", "</s>"):
        if need not in ids:
            raise ToolError(f"{path}: has no {need!r} token"
                            + ("" if need == "<unk>"
                               else f" (tokenizer.py's export spells it {chr(10) + need + chr(10)!r})"))
    missing = [f"<0x{b:02X}>" for b in range(256) if f"<0x{b:02X}>" not in ids]
    if missing:
        raise ToolError(f"{path}: has no byte token {missing[0]} ({len(missing)} of the 256 missing): byte fallback "
                        "needs every byte")
    doc = {"type": "sentencepiece", "pieces": [[p, float(s)] for p, (_, s) in zip(pieces, tokens)],
           "unk_id": ids["<unk>"], "bos_id": ids["<s>"], "eos_id": ids["</s>"], "add_bos": True,
           "add_dummy_prefix": True, "byte_fallback": True}
    return json.dumps(doc, ensure_ascii=False) + "\n"


def convert(h, blocks, path):
    """(normlab config, tensors as Deferred) from llama2c.read_model's header and blocks."""
    config = nlformat.llama_config(h["vocab_size"], h["n_layers"], h["n_heads"], h["n_kv_heads"], h["dim"],
                                   h["seq_len"], h["hidden_dim"], 1e-5, 10000.0, h["shared"])

    def take(name, i=None, *more):
        a = blocks[name] if i is None else blocks[name][i]
        parts = [a] + [blocks[m][i] for m in more]
        out = np.concatenate(parts) if more else a
        out = np.array(out, dtype=np.float32)
        if not np.all(np.isfinite(out)):
            raise ToolError(f"{path}: {'/'.join((name,) + more)}" + (f" of layer {i}" if i is not None else "")
                            + " holds a value that is not finite")
        return out
    rows = {"ln_1.weight": ("rms_att",), "attn.c_attn.weight": ("wq", "wk", "wv"), "attn.c_proj.weight": ("wo",),
            "ln_2.weight": ("rms_ffn",), "mlp.c_fc.weight": ("w1", "w3"), "mlp.c_proj.weight": ("w2",)}
    tensors = {}
    for name, shape in nlformat.llama_tensor_shapes(config).items():
        if name.startswith("h."):
            i, rest = int(name.split(".")[1]), name.split(".", 2)[2]
            first, *more = rows[rest]
            tensors[name] = nlformat.Deferred(shape, lambda f=first, i=i, m=more: take(f, i, *m))
        else:
            src = {"wte.weight": "tok_embeddings", "ln_f.weight": "rms_final", "lm_head.weight": "wcls"}[name]
            tensors[name] = nlformat.Deferred(shape, lambda s=src: take(s))
    return config, tensors


def main(argv):
    p = nltool.ArgumentParser(prog="import_llama2c.py", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="llama2.c's model .bin (legacy or version-1 float32)")
    p.add_argument("--tokenizer", help="llama2.c's tokenizer.bin (default: tokenizer.bin beside the model)")
    p.add_argument("--out", required=True, help="normlab model directory to write (replaced whole if it is one)")
    a = p.parse_args(argv)
    if not os.path.isfile(a.model):
        raise ToolError(f"{a.model}: " + ("is a directory; give the model's .bin" if os.path.isdir(a.model)
                                          else "no such file"))
    tok = a.tokenizer or os.path.join(os.path.dirname(os.path.abspath(a.model)), "tokenizer.bin")
    if not os.path.isfile(tok):
        raise ToolError(f"{tok}: no such file"
                        + ("" if a.tokenizer else ": name llama2.c's tokenizer.bin with --tokenizer"))
    nltool.check_out(a.out, [a.model, tok], want_dir=True, make_parents=True)
    with open(tok, "rb") as f:
        if spmjson.looks_like_model_proto(f.read(16)):
            raise ToolError(f"{tok}: is a SentencePiece .model, not llama2.c's tokenizer.bin: give the tokenizer.bin "
                            "llama2.c ships (its tokenizer.py -t tokenizer.model writes one), or import a Hugging Face "
                            "snapshot with it (tools/interop/import_hf.py reads tokenizer.model)")
    h, blocks = llama2c.read_model(a.model)
    tokenizer = sentencepiece_json(llama2c.read_tokenizer(tok, h["vocab_size"]), tok)
    config, tensors = convert(h, blocks, a.model)
    with open(a.model, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    meta = {"source": f"llama2.c model, {'version 1 export' if h['version'] else 'legacy layout'} "
                      "(tools/interop/import_llama2c.py)",
            "source_file": os.path.basename(a.model), "source_sha256": digest}
    shown = {"config.json": a.model, "model.safetensors": a.model, "tokenizer.json": tok}
    with nltool.writing(a.out):
        nlformat.write_model_dir(a.out, config, tokenizer, tensors, metadata=meta,
                                 check=lambda new, _: nltool.check_model(new, a.model, shown))
    print(f"wrote {a.out}: llama2.c {'v1' if h['version'] else 'legacy'}, {h['n_layers']} layers x {h['dim']}, "
          f"{h['n_heads']} heads over {h['n_kv_heads']} KV heads, vocabulary {h['vocab_size']}, context "
          f"{h['seq_len']}, head {'tied' if h['shared'] else 'untied'}", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("import_llama2c.py", main, sys.argv[1:])
