"""SentencePiece's BPE with byte fallback in Python, on normlab's sentencepiece tokenizer.json (docs/format.md,
the Llama section), for the tools that train on its tokens (train.py --tokenizer).

    spm = spmbpe.load("weights/shakespeare-llama/tokenizer.json")
    ids = spm.encode("To be, or not to be")      # one document: the dummy prefix once, no BOS
    text = spm.decode(ids)

The rule, SentencePiece's BPE (bpe_model.cc) and llama2.c's run.c encode: a non-empty text gets the
dummy prefix " " (add_dummy_prefix), every space becomes U+2581; each character is a symbol, or, when
no piece is that character, its UTF-8 bytes as the pieces <0xXX> (byte_fallback; else unk_id); then,
again and again, the adjacent pair whose concatenation is a piece of the highest score is merged, the
leftmost of equal scores, until no pair is a piece. Byte pieces and the unk, bos and eos pieces are
never the result of a merge, and a byte token never merges. The text is one document: a newline is a
character like any other (<0x0A> unless a piece holds it), as the engine's tokenizer encodes a whole
text. Standard library only.

Speed: a heap of candidate pairs over a linked list of symbols. A character that has no piece ends a
stretch that no merge crosses, and when no piece holds U+2581 after its first character, neither does
the start of a word: the stretches between are merged alone, once each (a cache).
"""
import heapq
import json
import re
import sys

SPACE = "\u2581"
BYTE = re.compile(r"<0x[0-9A-F]{2}>\Z")


class SpmError(Exception):
    pass


class Spm:
    """A sentencepiece tokenizer.json's document, checked: pieces [[str, number], ...] in id order with
    unique strings, unk_id, bos_id and eos_id among them, the 256 byte pieces when byte_fallback."""

    def __init__(self, doc, where):
        def need(ok, what):
            if not ok:
                raise SpmError(f"{where}: {what}")

        need(isinstance(doc, dict) and doc.get("type") == "sentencepiece",
             'not a tokenizer.json of "type": "sentencepiece"')
        pieces = doc.get("pieces")
        need(isinstance(pieces, list) and pieces, '"pieces" must be a non-empty list of [piece, score]')
        for i, p in enumerate(pieces):
            need(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and p[0]
                 and isinstance(p[1], (int, float)) and not isinstance(p[1], bool),
                 f"piece {i} is {json.dumps(p)[:60]}, not [non-empty string, score]")
        self.pieces = [p[0] for p in pieces]
        self.size = len(pieces)
        self.id_of = {}
        for i, s in enumerate(self.pieces):
            need(s not in self.id_of, f"piece {i} {s!r} is also piece {self.id_of.get(s)}")
            self.id_of[s] = i
        for key in ("unk_id", "bos_id", "eos_id"):
            v = doc.get(key)
            need(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < self.size,
                 f'"{key}" must be a piece id in [0, {self.size})')
        for key in ("add_bos", "add_dummy_prefix", "byte_fallback"):
            need(isinstance(doc.get(key), bool), f'"{key}" must be true or false')
        self.unk, self.dummy, self.fallback = doc["unk_id"], doc["add_dummy_prefix"], doc["byte_fallback"]
        self.byte_ids = [self.id_of.get(f"<0x{b:02X}>") for b in range(256)]
        if self.fallback:
            missing = [b for b in range(256) if self.byte_ids[b] is None]
            need(not missing, f"byte_fallback, but the byte piece <0x{missing[0]:02X}> is missing" if missing else "")
        special = {doc["unk_id"], doc["bos_id"], doc["eos_id"]}
        self.score = {s: float(pieces[i][1]) for i, s in enumerate(self.pieces)
                      if i not in special and not BYTE.match(s)}  # the pieces a merge may make
        self.words = not any(SPACE in s[1:] for s in self.score)  # no merge crosses a word's start
        self.cache = {}

    def _merge(self, run):
        """The ids of a stretch of characters that all have pieces, merged by the rule."""
        sym, score = list(run), self.score
        n = len(sym)
        nxt = list(range(1, n)) + [-1]
        prev = list(range(-1, n - 1))
        heap = []

        def push(i):
            j = nxt[i]
            if j != -1:
                s = score.get(sym[i] + sym[j])
                if s is not None:
                    heap.append((-s, i, sym[i], sym[j]))  # highest score first, then the leftmost

        for i in range(n - 1):
            push(i)
        heapq.heapify(heap)
        while heap:
            _, i, a, b = heapq.heappop(heap)
            j = nxt[i]
            if sym[i] != a or j == -1 or sym[j] != b:
                continue  # stale: a side has merged since
            sym[i], sym[j] = a + b, None
            nxt[i] = nxt[j]
            if nxt[j] != -1:
                prev[nxt[j]] = i
            for k in (prev[i], i):
                if k != -1:
                    j = nxt[k]
                    s = score.get(sym[k] + sym[j]) if j != -1 else None
                    if s is not None:
                        heapq.heappush(heap, (-s, k, sym[k], sym[j]))
        return [self.id_of[s] for s in sym if s is not None]

    def _stretch(self, run, ids):
        parts = re.split(f"(?={SPACE})", run) if self.words else [run]
        for part in parts:
            if part:
                got = self.cache.get(part)
                if got is None:
                    got = self.cache[part] = self._merge(part)
                ids.extend(got)

    def encode(self, text):
        """The ids of text as one document (no BOS: the caller adds it where it wants one)."""
        if text and self.dummy:
            text = " " + text
        text = text.replace(" ", SPACE)
        ids, start = [], 0
        for k, ch in enumerate(text):
            if ch in self.score:
                continue
            self._stretch(text[start:k], ids)
            start = k + 1
            if self.fallback:
                ids.extend(self.byte_ids[b] for b in ch.encode("utf-8"))
            else:
                ids.append(self.unk)
        self._stretch(text[start:], ids)
        return ids

    def decode(self, ids):
        """The text of ids: byte pieces as their bytes, U+2581 as a space, the dummy prefix's space dropped."""
        out = bytearray()
        for i in ids:
            s = self.pieces[i]
            out += bytes([int(s[3:5], 16)]) if BYTE.match(s) else s.replace(SPACE, " ").encode("utf-8")
        text = out.decode("utf-8", errors="replace")
        return text[1:] if self.dummy and text.startswith(" ") else text


def load(path):
    """The sentencepiece tokenizer.json at path; SpmError with one line when it is not one."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise SpmError(f"{path}: {getattr(e, 'strerror', None) or e}")
    except json.JSONDecodeError as e:
        raise SpmError(f"{path}: not JSON: {e.msg} at line {e.lineno}")
    return Spm(doc, path)


if __name__ == "__main__":  # ids of a file, one a line: spmbpe.py TOKENIZER FILE
    if len(sys.argv) != 3:
        sys.exit("spmbpe.py: usage: spmbpe.py TOKENIZER FILE")
    try:
        spm = load(sys.argv[1])
        with open(sys.argv[2], "rb") as f:
            text = f.read().decode("utf-8")
    except (SpmError, OSError, UnicodeDecodeError) as e:
        sys.exit(f"spmbpe.py: {e if isinstance(e, SpmError) else sys.argv[2] + ': ' + str(getattr(e, 'strerror', e))}")
    sys.stdout.write("".join(f"{i}\n" for i in spm.encode(text)))
