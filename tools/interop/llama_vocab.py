#!/usr/bin/python3
"""Write Llama 2's tokenizer.json (Hugging Face's form: a BPE with byte fallback, the Prepend("▁") +
Replace(" ", "▁") normalizer, the ByteFallback/Fuse/Strip decoder, <s> before the text) from the
vocabulary and merges llama-tokenizer-js (npm) carries as data, so that no test needs a download.

    /usr/bin/python3 tools/interop/llama_vocab.py build/llama/node_modules/llama-tokenizer-js/llama-tokenizer.js \\
        --out DIR     # writes DIR/tokenizer.json

llama-tokenizer-js (tools/install-deps.sh --python puts it in build/llama) holds Meta's tokenizer.json
as two base64 strings: the 32,000 pieces in id order, one a line, and the merges in rank order as
pairs of 16-bit little-endian piece ids. No npm package checked ships Meta's file itself. Standard
library only; the file is written whole (a temporary file renamed into place) or not at all.
"""
import base64
import binascii
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nltool  # noqa: E402
import spmjson  # noqa: E402

def read_data(path):
    """The pieces (id order) and the merges (rank order, pairs of pieces) in llama-tokenizer.js."""
    with open(path, encoding="utf-8") as f:
        js = f.read(8 << 20)
    found = {k: re.search(r'const %s = "([A-Za-z0-9+/=]+)"' % k, js) for k in ("llama_vocab_base64",
                                                                               "llama_merges_binary")}
    if not all(found.values()):
        raise nltool.ToolError(f"{path}: no llama_vocab_base64 and llama_merges_binary: not llama-tokenizer-js")
    try:
        pieces = base64.b64decode(found["llama_vocab_base64"].group(1), validate=True).decode("utf-8").split("\n")
        ids = base64.b64decode(found["llama_merges_binary"].group(1), validate=True)
    except (binascii.Error, UnicodeDecodeError) as e:
        raise nltool.ToolError(f"{path}: its data does not decode: {e}")
    if len(pieces) != 32000 or len(ids) % 4:
        raise nltool.ToolError(f"{path}: {len(pieces)} pieces (Llama 2 has 32000), or cut merges")
    pairs = [int.from_bytes(ids[i:i + 2], "little") for i in range(0, len(ids), 2)]
    if max(pairs) >= len(pieces):
        raise nltool.ToolError(f"{path}: a merge names piece {max(pairs)}, past the vocabulary")
    return pieces, [(pieces[pairs[i]], pieces[pairs[i + 1]]) for i in range(0, len(pairs), 2)]


def main(argv):
    a = nltool.ArgumentParser(prog="llama_vocab.py", description=__doc__.split("\n\n")[0])
    a.add_argument("js", help="llama-tokenizer-js's llama-tokenizer.js")
    a.add_argument("--out", required=True, help="the folder to write tokenizer.json into")
    args = a.parse_args(argv)
    pieces, merges = read_data(args.js)
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "tokenizer.json")
    nltool.check_out(out, [args.js], want_dir=False)
    doc = spmjson.hf_llama(pieces, [f"{a} {b}" for a, b in merges])  # (Meta's: <unk> <s> </s>, <s> first)
    spmjson.write_whole(out, json.dumps(doc, ensure_ascii=False).encode("utf-8"))
    print(f"{out}: {len(pieces)} pieces, {len(merges)} merges", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("llama_vocab.py", main, sys.argv[1:])
