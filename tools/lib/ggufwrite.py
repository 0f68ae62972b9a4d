"""GGUF files written (llama.cpp's format, version 3, little-endian, alignment 32), from ggml's
docs/gguf.md: the keys' values and the tensors' infos and data, and a byte-level BPE's tokenizer keys.
No llama.cpp code."""
import struct

TYPE_IDS = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q2_K": 10, "Q3_K": 11,
            "Q4_K": 12, "Q5_K": 13, "Q6_K": 14, "BF16": 30}  # ggml's
FILE_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 7, "BF16": 32}  # llama_ftype
U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9  # GGUF's value types
ALIGN = 32


def string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def value(v):
    """(type id, bytes) of a Python value: bool, int (u32), float (f32), str, or a list of one kind."""
    if isinstance(v, bool):
        return BOOL, struct.pack("<B", v)
    if isinstance(v, int):
        return U32, struct.pack("<I", v)
    if isinstance(v, float):
        return F32, struct.pack("<f", v)
    if isinstance(v, str):
        return STRING, string(v)
    kind, items = v  # ("i32" | "f32" | "str", list)
    elem, body = {"i32": (I32, lambda x: struct.pack("<i", x)), "f32": (F32, lambda x: struct.pack("<f", x)),
                  "str": (STRING, string)}[kind]
    return ARRAY, struct.pack("<IQ", elem, len(items)) + b"".join(body(x) for x in items)


def gguf_bytes(kvs, tensors):
    """The file: kvs (key -> value) and tensors (name -> (type name, shape (rows, cols) or (n,), bytes));
    either may be a list of pairs instead (a test's file with a name twice)."""
    kvs, tensors = (list(d.items()) if isinstance(d, dict) else d for d in (kvs, tensors))
    out = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), len(kvs))]
    for k, v in kvs:
        t, b = value(v)
        out += [string(k), struct.pack("<I", t), b]
    offset, blobs = 0, []
    for name, (kind, shape, data) in tensors:
        ne = list(reversed(shape))  # ne[0] the columns
        out += [string(name), struct.pack("<I", len(ne)), struct.pack(f"<{len(ne)}Q", *ne),
                struct.pack("<IQ", TYPE_IDS[kind], offset)]
        pad = -len(data) % ALIGN
        blobs += [data, b"\0" * pad]
        offset += len(data) + pad
    head = b"".join(out)
    return head + b"\0" * (-len(head) % ALIGN) + b"".join(blobs)


def bpe_keys(tokenizer, pre):
    """tokenizer.ggml.* of a Hugging Face byte-level BPE tokenizer.json (a dict) as llama.cpp's converter
    writes them: model "gpt2", the tokens by id (model.vocab, then the added tokens past it; control 3
    where special, user-defined 4 where not, else normal 1), the merges as "A B", the pre-tokenizer pre."""
    vocab = dict(tokenizer["model"]["vocab"])
    special = {t["content"]: t["special"] for t in tokenizer.get("added_tokens", [])}
    vocab.update({t["content"]: t["id"] for t in tokenizer.get("added_tokens", [])})
    tokens = sorted(vocab, key=vocab.get)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tokenizer["model"]["merges"]]
    types = [(3 if special[t] else 4) if t in special else 1 for t in tokens]
    return {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre, "tokenizer.ggml.tokens": ("str", tokens),
            "tokenizer.ggml.token_type": ("i32", types), "tokenizer.ggml.merges": ("str", merges),
            "tokenizer.ggml.add_bos_token": False}
