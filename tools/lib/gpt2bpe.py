"""GPT-2's byte-level BPE in Python, for the tools that train on its tokens (train.py --tokenizer).

    bpe = gpt2bpe.load("weights/shakespeare-bpe/tokenizer.json")   # or a folder with vocab.json + merges.txt
    ids = bpe.encode("To be, or not to be")
    text = bpe.decode(ids)

The same rules as the engine's tokenizer/bpe.c, written independently: GPT-2's pre-tokenizer
pattern with \\p{L} and \\p{N} from this Python's unicodedata (general categories L* and N*) and
\\s as Unicode's White_Space (U+0085 in, U+FEFF out, as Hugging Face's tokenizers has it); each
piece's UTF-8 bytes merged by rank. "<|endoftext|>" is plain text. tests/bpe_test.sh checks that
this and the engine give the same ids on the corpus. Standard library only.
"""
import json
import os
import re
import sys
import unicodedata

SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


class BpeError(Exception):
    pass


def byte_alphabet():
    """GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the rest for U+0100 on."""
    keep = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def _ranges(prefix):
    """A regex character class body for the code points whose general category starts with prefix."""
    out, start = [], None
    for cp in range(0x110001):
        inside = cp < 0x110000 and unicodedata.category(chr(cp)).startswith(prefix)
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            out.append(re.escape(chr(start)) + ("-" + re.escape(chr(cp - 1)) if cp - 1 > start else ""))
            start = None
    return "".join(out)


def pattern():
    letters, numbers = _ranges("L"), _ranges("N")
    s = SPACE
    return re.compile(rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{letters}]+| ?[{numbers}]+| ?[^{s}{letters}{numbers}]+"
                      rf"|[{s}]+(?![^{s}])|[{s}]+")


class Bpe:
    def __init__(self, vocab, merges, what):
        """vocab: token text (GPT-2's alphabet) -> id; merges: [(a, b), ...] in rank order."""
        alphabet = byte_alphabet()
        self.byte_char = alphabet
        inverse = {c: b for b, c in alphabet.items()}
        self.size = len(vocab)
        self.token_bytes = [b""] * self.size
        for tok, i in vocab.items():
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < self.size or self.token_bytes[i]:
                raise BpeError(f"{what}: token {tok!r} has id {i!r} (ids are 0 to {self.size - 1}, each once)")
            if not tok or any(c not in inverse for c in tok):
                raise BpeError(f"{what}: token {tok!r} is not a byte-level token (GPT-2's alphabet)")
            self.token_bytes[i] = bytes(inverse[c] for c in tok)
        self.vocab = vocab
        self.ranks = {}
        for rank, (a, b) in enumerate(merges):
            if a not in vocab or b not in vocab or a + b not in vocab:
                raise BpeError(f"{what}: merge {rank + 1} ({a} {b}) is not two tokens whose join is a token")
            if (a, b) in self.ranks:
                raise BpeError(f"{what}: merge {rank + 1} ({a} {b}) repeats merge {self.ranks[(a, b)] + 1}")
            self.ranks[(a, b)] = rank
        self.pattern = pattern()
        self.cache = {}

    def _merge(self, piece):
        word = [self.byte_char[b] for b in piece.encode("utf-8")]
        while len(word) > 1:
            pairs = [(self.ranks.get((word[i], word[i + 1]), None), i) for i in range(len(word) - 1)]
            best = min((r for r, _ in pairs if r is not None), default=None)
            if best is None:
                break
            first, second = next((word[i], word[i + 1]) for r, i in pairs if r == best)
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == first and word[i + 1] == second:
                    out.append(first + second)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = out
        return [self.vocab[t] for t in word]

    def encode(self, text):
        ids = []
        for piece in self.pattern.findall(text):
            got = self.cache.get(piece)
            if got is None:
                got = self.cache[piece] = self._merge(piece)
            ids.extend(got)
        return ids

    def decode(self, ids):
        return b"".join(self.token_bytes[i] for i in ids).decode("utf-8", errors="replace")


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BpeError(f"{what}: {getattr(e, 'strerror', None) or e}")


def _json(path):
    try:
        return json.loads(_read(path, path))
    except json.JSONDecodeError as e:
        raise BpeError(f"{path}: not JSON: {e.msg} at line {e.lineno}")


def load(path):
    """A Hugging Face tokenizer.json (a ByteLevel BPE), or a folder with one, or with vocab.json + merges.txt."""
    if os.path.isdir(path):
        hf = os.path.join(path, "tokenizer.json")
        if not os.path.exists(hf):
            vocab = _json(os.path.join(path, "vocab.json"))
            lines = _read(os.path.join(path, "merges.txt"), os.path.join(path, "merges.txt")).split("\n")
            if lines and lines[0].startswith("#version"):
                lines = lines[1:]
            merges = [tuple(line.rstrip("\r").split(" ")) for line in lines if line.rstrip("\r")]
            if not isinstance(vocab, dict) or any(len(m) != 2 for m in merges):
                raise BpeError(f"{path}: vocab.json must be an object, merges.txt lines \"A B\"")
            return Bpe(vocab, merges, path)
        path = hf
    root = _json(path)
    model = root.get("model") if isinstance(root, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise BpeError(f"{path}: not a Hugging Face byte-level BPE tokenizer.json (model.type BPE)")
    vocab, merges = model.get("vocab"), model.get("merges")
    if not isinstance(vocab, dict) or not isinstance(merges, list) or not merges:
        raise BpeError(f"{path}: model.vocab must be an object and model.merges a non-empty list")
    pairs = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]
    if any(len(p) != 2 or not all(isinstance(x, str) for x in p) for p in pairs):
        raise BpeError(f"{path}: each of model.merges must be \"A B\" or [A, B]")
    return Bpe(vocab, pairs, path)


if __name__ == "__main__":  # ids of a file, one a line (tests/bpe_test.sh): gpt2bpe.py TOKENIZER FILE
    try:
        bpe = load(sys.argv[1])
        text = _read(sys.argv[2], sys.argv[2])
    except (BpeError, IndexError) as e:
        sys.exit(f"gpt2bpe.py: {e if isinstance(e, BpeError) else 'usage: gpt2bpe.py TOKENIZER FILE'}")
    sys.stdout.write("".join(f"{i}\n" for i in bpe.encode(text)))
