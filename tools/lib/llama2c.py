"""llama2.c's files: the float32 model .bin (its legacy layout, as run.c reads it, and export.py's
version 1) and tokenizer.bin, read with every size checked against the header, and written (for the
test snapshots of tools/dev/make_llama_snapshot.py). The layouts are llama2.c's (karpathy/llama2.c
run.c memory_map_weights and export.py legacy_export / version1_export, tokenizer.py export):

    legacy  7 int32: dim D, hidden_dim F, n_layers L, n_heads H, n_kv_heads KVH, vocab_size V
            (negative: the classifier is not shared), seq_len T; then float32 blocks in LEGACY order
    v1      uint32 0x616b3432 ("ak42" little-endian: bytes 42 34 6b 61), int32 version 1, the 7 int32
            (V positive), uint8 shared classifier (1) or not (0), zeros to byte 256; float32 blocks
            in V1 order (the norms first; no freq_cis)
    tokenizer.bin  uint32 max_token_length; then per token of V: float32 score, int32 length, bytes

Each layered block holds all layers, layer-major: wq is (L, H*Dh, D). Linears are (out, in), and
RoPE's pairs are Meta's interleaved ones (dims 2i, 2i+1 of a head), as normlab's format has them.
"""
import math
import os
import struct

import numpy as np

from nltool import ToolError

MAGIC, V1_HEADER = 0x616B3432, 256
LEGACY = ("tok_embeddings", "rms_att", "wq", "wk", "wv", "wo", "rms_ffn", "w1", "w2", "w3", "rms_final",
          "freq_cis_real", "freq_cis_imag", "wcls")
V1 = ("rms_att", "rms_ffn", "rms_final", "tok_embeddings", "wq", "wk", "wv", "wo", "w1", "w2", "w3", "wcls")
SKIPPED = ("freq_cis_real", "freq_cis_imag")  # RoPE's tables, which run.c skips and computes itself
FIELDS = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len")


def block_shapes(h):
    """Each block's shape, from the header h (a dict of FIELDS, vocab_size positive)."""
    D, F, L, H, KVH, V, T = (h[k] for k in FIELDS)
    Dh = D // H
    return {"tok_embeddings": (V, D), "rms_att": (L, D), "wq": (L, H * Dh, D), "wk": (L, KVH * Dh, D),
            "wv": (L, KVH * Dh, D), "wo": (L, D, H * Dh), "rms_ffn": (L, D), "w1": (L, F, D), "w2": (L, D, F),
            "w3": (L, F, D), "rms_final": (D,), "freq_cis_real": (T, Dh // 2), "freq_cis_imag": (T, Dh // 2),
            "wcls": (V, D)}


def check_header(h, path):
    """Refuses a header no model has: a size that is not positive, a head count that does not divide
    the width, n_kv_heads that does not divide n_heads, an odd head width (RoPE rotates pairs)."""
    for k in FIELDS:
        if h[k] < 1:
            raise ToolError(f"{path}: header {k} is {h[k]}, not a positive size: not a llama2.c model, or a "
                            "quantized one")
    if h["dim"] % h["n_heads"]:
        raise ToolError(f"{path}: header n_heads {h['n_heads']} does not divide dim {h['dim']}")
    if h["n_heads"] % h["n_kv_heads"]:
        raise ToolError(f"{path}: header n_kv_heads {h['n_kv_heads']} does not divide n_heads {h['n_heads']}")
    if (h["dim"] // h["n_heads"]) % 2:
        raise ToolError(f"{path}: head width {h['dim'] // h['n_heads']} (dim / n_heads) is odd: RoPE needs pairs")


def read_model(path):
    """(header dict with "version" 0 or 1 and "shared", name -> float32 array view of the mapped file).
    The file's size must be exactly what its header says: a cut file or a wrong header is refused."""
    with open(path, "rb") as f:
        head = f.read(V1_HEADER)
    size = os.path.getsize(path)
    if len(head) >= 4 and struct.unpack("<I", head[:4])[0] == MAGIC:
        if len(head) < V1_HEADER:
            raise ToolError(f"{path}: {size} bytes: cut short inside the 256-byte header of a version-1 export")
        (version,) = struct.unpack("<i", head[4:8])
        if version != 1:
            raise ToolError(f"{path}: llama2.c export version {version}: normlab reads version 1 (float32) and "
                            "the legacy layout; re-export with export.py --version 1")
        h = dict(zip(FIELDS, struct.unpack("<7i", head[8:36])))
        if head[36] not in (0, 1):
            raise ToolError(f"{path}: shared-classifier byte is {head[36]}, not 0 or 1: a damaged header")
        h.update(version=1, shared=bool(head[36]))
        order, base = V1, V1_HEADER
    else:
        if len(head) < 28:
            raise ToolError(f"{path}: {size} bytes: too short for llama2.c's 28-byte header")
        h = dict(zip(FIELDS, struct.unpack("<7i", head[:28])))
        h.update(version=0, shared=h["vocab_size"] > 0)
        h["vocab_size"] = abs(h["vocab_size"])
        order, base = LEGACY, 28
    check_header(h, path)
    shapes = block_shapes(h)
    order = [n for n in order if n != "wcls" or not h["shared"]]
    want = base + 4 * sum(int(np.prod(shapes[n], dtype=np.int64)) for n in order)
    if size != want:
        dims = ", ".join(f"{k} {h[k]}" for k in FIELDS)
        raise ToolError(f"{path}: {size} bytes, but its header ({dims}, classifier "
                        f"{'shared' if h['shared'] else 'separate'}) needs {want}: "
                        + ("the file is cut short" if size < want else "the header does not match the file"))
    data = np.memmap(path, dtype="<f4", mode="r", offset=base)
    out, at = {}, 0
    for n in order:
        count = int(np.prod(shapes[n], dtype=np.int64))
        out[n] = data[at:at + count].reshape(shapes[n])
        at += count
    for n in SKIPPED:
        out.pop(n, None)
    return h, out


def write_model(path, h, blocks, version):
    """Writes blocks (name -> array of block_shapes(h)'s shape; no freq_cis; wcls unless h["shared"])
    in llama2.c's legacy layout (version 0, with model.py's freq_cis tables at theta 10000) or v1."""
    D, H, T = h["dim"], h["n_heads"], h["seq_len"]
    blocks = dict(blocks)
    if version == 0:
        freqs = np.outer(np.arange(T), 1.0 / 10000.0 ** (np.arange(0, D // H, 2) / (D // H)))
        blocks["freq_cis_real"], blocks["freq_cis_imag"] = np.cos(freqs), np.sin(freqs)
        ints = [h[k] for k in FIELDS]
        ints[5] = ints[5] if h["shared"] else -ints[5]
        head = struct.pack("<7i", *ints)
    else:
        head = struct.pack("<Ii7iB", MAGIC, 1, *(h[k] for k in FIELDS), int(h["shared"]))
        head += bytes(V1_HEADER - len(head))
    shapes = block_shapes(h)
    with open(path, "wb") as f:
        f.write(head)
        for n in (LEGACY if version == 0 else V1):
            if n == "wcls" and h["shared"]:
                continue
            a = np.asarray(blocks[n], dtype="<f4")
            assert a.shape == shapes[n], (n, a.shape, shapes[n])
            f.write(a.tobytes())


def read_tokenizer(path, V):
    """[(piece bytes, score)] for V tokens, as run.c's build_tokenizer reads them. Refused: a file cut
    short, a negative length, a token longer than the max_token_length of its header, a score that is
    NaN or infinite, bytes after the V-th token (a tokenizer of another vocabulary)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 4:
        raise ToolError(f"{path}: {len(data)} bytes: too short for tokenizer.bin's max_token_length")
    (longest,) = struct.unpack("<i", data[:4])
    if longest < 0:
        raise ToolError(f"{path}: max_token_length is {longest}, negative: not a tokenizer.bin")
    out, at = [], 4
    for i in range(V):
        if at + 8 > len(data):
            raise ToolError(f"{path}: cut short at token {i}: the model's vocabulary has {V} tokens")
        score, n = struct.unpack("<fi", data[at:at + 8])
        if n < 0:
            raise ToolError(f"{path}: token {i} has length {n}, negative: a damaged tokenizer.bin")
        if n > longest:
            raise ToolError(f"{path}: token {i} has length {n}, more than the file's max_token_length {longest}")
        if at + 8 + n > len(data):
            raise ToolError(f"{path}: cut short inside token {i} ({n} bytes)")
        if not math.isfinite(score):
            raise ToolError(f"{path}: token {i} has score {score}, not a finite number: a damaged tokenizer.bin")
        out.append((data[at + 8:at + 8 + n], score))
        at += 8 + n
    if at != len(data):
        raise ToolError(f"{path}: {len(data) - at} bytes after token {V - 1}: a tokenizer of a larger vocabulary "
                        f"than the model's {V}")
    return out


def write_tokenizer(path, tokens):
    """tokens: [(piece bytes, score)], written as tokenizer.py's export writes them."""
    with open(path, "wb") as f:
        f.write(struct.pack("<I", max((len(b) for b, _ in tokens), default=0)))
        for b, score in tokens:
            f.write(struct.pack("<fI", score, len(b)) + b)
