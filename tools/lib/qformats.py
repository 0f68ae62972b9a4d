"""The storage types of normlab's weights in numpy (docs/format.md), written from ggml's definitions
independently of the C engine: IEEE half and bfloat16, and ggml's Q8_0 and Q4_0 blocks of 32 weights
along a row, each an F16 scale d and then 32 int8 q (x = q d) or 16 bytes of nibbles, weight j in
the low nibble of byte j and weight j + 16 in the high one (x = (nibble - 8) d).

quantize() follows ggml-quants.c's reference quantizers (quantize_row_q8_0_ref, _q4_0_ref) in float32
arithmetic, each operation rounded as C rounds it: d = amax / 127, q = roundf(x * (1 / d)); d = max
/ -8 (max the first weight of largest magnitude), q = min(15, (int8)(x * (1 / d) + 8.5)). tests use it
as the reference the engine's files are held to, byte for byte; tools read quantized files through
dequantize()."""
import numpy as np

BLOCK = 32
BLOCK_BYTES = {"Q8_0": 34, "Q4_0": 18}
NAMES = {"f32": "F32", "f16": "F16", "bf16": "BF16", "q8_0": "Q8_0", "q4_0": "Q4_0"}


def f16_bits(x):
    """float32 array -> uint16 IEEE half bits, rounded to nearest even (numpy's float16 cast)."""
    return np.asarray(x, dtype=np.float32).astype(np.float16).view(np.uint16)


def bf16_bits(x):
    """float32 array -> uint16 bfloat16 bits, rounded to nearest even (a NaN stays a quiet NaN)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def _roundf(v):
    """C's roundf on float32 values: halves away from zero (exact in float64)."""
    v = v.astype(np.float64)
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _blocks(x):
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2 or x.shape[1] % BLOCK:
        raise ValueError(f"a matrix of whole blocks of {BLOCK} along its rows is needed, not {x.shape}")
    return x.reshape(x.shape[0], x.shape[1] // BLOCK, BLOCK)


def _scale_inverse(d):
    with np.errstate(divide="ignore"):
        return np.where(d != 0, np.float32(1.0) / np.where(d != 0, d, np.float32(1)), np.float32(0)).astype(np.float32)


def quantize_q8_0(x):
    """(rows, cols) float32 -> (rows, cols / 32 * 34) uint8, ggml's Q8_0."""
    b = _blocks(x)
    amax = np.abs(b).max(axis=2)
    d = (amax / np.float32(127)).astype(np.float32)
    q = _roundf((b * _scale_inverse(d)[..., None]).astype(np.float32)).astype(np.int8)
    out = np.empty(b.shape[:2] + (34,), dtype=np.uint8)
    out[..., :2] = f16_bits(d)[..., None].view(np.uint8).reshape(b.shape[:2] + (2,))
    out[..., 2:] = q.view(np.uint8)
    return out.reshape(x.shape[0], -1)


def quantize_q4_0(x):
    """(rows, cols) float32 -> (rows, cols / 32 * 18) uint8, ggml's Q4_0."""
    b = _blocks(x)
    first = np.argmax(np.abs(b), axis=2)  # the first of the largest magnitudes, as ggml's strict '<' keeps
    mx = np.take_along_axis(b, first[..., None], axis=2)[..., 0]
    d = (mx / np.float32(-8)).astype(np.float32)
    v = ((b * _scale_inverse(d)[..., None]).astype(np.float32) + np.float32(8.5)).astype(np.float32)
    q = np.minimum(15, np.trunc(v.astype(np.float64)).astype(np.int64)).astype(np.uint8)
    out = np.empty(b.shape[:2] + (18,), dtype=np.uint8)
    out[..., :2] = f16_bits(d)[..., None].view(np.uint8).reshape(b.shape[:2] + (2,))
    out[..., 2:] = q[..., :16] | (q[..., 16:] << 4)
    return out.reshape(x.shape[0], -1)


def quantize(x, kind):
    """A float32 matrix stored as kind ("F32", "F16", "BF16", "Q8_0", "Q4_0") -> its bytes as uint8 (rows, bytes)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if kind == "F32":
        return x.view(np.uint8).reshape(x.shape[0], -1)
    if kind == "F16":
        return f16_bits(x).view(np.uint8).reshape(x.shape[0], -1)
    if kind == "BF16":
        return bf16_bits(x).view(np.uint8).reshape(x.shape[0], -1)
    if kind == "Q8_0":
        return quantize_q8_0(x)
    if kind == "Q4_0":
        return quantize_q4_0(x)
    raise ValueError(f"unknown type {kind!r}")


def dequantize(raw, kind, shape):
    """The stored bytes (uint8) of a tensor of kind and shape (its weights') -> float32, as ggml reads them."""
    raw = np.frombuffer(bytes(raw), dtype=np.uint8)
    if kind == "F32":
        return raw.view("<f4").reshape(shape).copy()
    if kind == "F16":
        return raw.view("<f2").astype(np.float32).reshape(shape)
    if kind == "BF16":
        return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
    if kind not in BLOCK_BYTES:
        raise ValueError(f"unknown type {kind!r}")
    rows, cols = shape
    b = raw.reshape(rows, cols // BLOCK, BLOCK_BYTES[kind])
    d = b[..., :2].copy().view("<f2").astype(np.float32)  # (rows, blocks, 1)
    if kind == "Q8_0":
        q = b[..., 2:].view(np.int8).astype(np.float32)
    else:
        nib = b[..., 2:]
        q = np.concatenate([(nib & 0x0F), (nib >> 4)], axis=2).astype(np.float32) - np.float32(8)
    return (q * d).astype(np.float32).reshape(rows, cols)


# ggml's block types normlab reads from a GGUF by widening them (ggml-common.h's block_q4_1 ... block_q6_K,
# ggml-quants.c's dequantize_row_*): weights a block holds, its bytes, and the offsets of its float16
# scales. Each operation is float32, in ggml's order.
GGML_BLOCKS = {"Q4_1": (32, 20, (0, 2)), "Q5_0": (32, 22, (0,)), "Q5_1": (32, 24, (0, 2)),
               "Q2_K": (256, 84, (80, 82)), "Q3_K": (256, 110, (108,)), "Q4_K": (256, 144, (0, 2)),
               "Q5_K": (256, 176, (0, 2)), "Q6_K": (256, 210, (208,))}
F32 = np.float32


def _f16(b, at):
    """(n, 1) float32: the float16 at byte `at` of each block."""
    return b[:, at:at + 2].copy().view("<f2").astype(F32)


def _fifth_bits(qh):
    """(n, 32) int32: 16 where bit i of each block's 4 little-endian bytes qh (uint8 (n, 4)) is set."""
    word = qh.copy().view("<u4").astype(np.int64)  # (n, 1)
    return (((word >> np.arange(32)) & 1) * 16).astype(np.int32)


def _nibbles(qs):
    """(n, 32) int32: weight j is byte j's low nibble, weight j + 16 its high one."""
    q = qs.astype(np.int32)
    return np.concatenate([q & 0xF, q >> 4], axis=1)


def _q4_1(b):
    return _nibbles(b[:, 4:20]).astype(F32) * _f16(b, 0) + _f16(b, 2)


def _q5_0(b):
    return ((_nibbles(b[:, 6:22]) | _fifth_bits(b[:, 2:6])) - 16).astype(F32) * _f16(b, 0)


def _q5_1(b):
    return (_nibbles(b[:, 8:24]) | _fifth_bits(b[:, 4:8])).astype(F32) * _f16(b, 0) + _f16(b, 2)


def _two_bit(qs):
    """(n, 256) int32: weight 128 h + 32 j + l is bits 2j of byte 32 h + l (qs: uint8 (n, 64))."""
    q = qs.astype(np.int32).reshape(-1, 2, 1, 32)
    return ((q >> (2 * np.arange(4)).reshape(1, 1, 4, 1)) & 3).reshape(-1, 256)


def _q2_k(b):
    sc = np.repeat(b[:, 0:16].astype(np.int32), 16, axis=1)  # sub-block of 16 weights each
    dl, ml = _f16(b, 80) * (sc & 0xF).astype(F32), _f16(b, 82) * (sc >> 4).astype(F32)
    return dl * _two_bit(b[:, 16:80]).astype(F32) - ml


def _q3_k(b):
    s = b[:, 96:108].astype(np.int32)
    low, high = s[:, 0:8], s[:, 8:12]
    scale = np.concatenate([(low[:, 0:4] & 0xF) | (high & 3) << 4, (low[:, 4:8] & 0xF) | (high >> 2 & 3) << 4,
                            (low[:, 0:4] >> 4) | (high >> 4 & 3) << 4, (low[:, 4:8] >> 4) | (high >> 6 & 3) << 4],
                           axis=1)
    hm = b[:, 0:32].astype(np.int32).reshape(-1, 1, 1, 32)  # weight 128 h + 32 j + l: bit 4 h + j of byte l
    bit = (hm >> (4 * np.arange(2).reshape(1, 2, 1, 1) + np.arange(4).reshape(1, 1, 4, 1))) & 1
    q = _two_bit(b[:, 32:96]) - np.where(bit.reshape(-1, 256) == 1, 0, 4)
    dl = _f16(b, 108) * np.repeat(scale - 32, 16, axis=1).astype(F32)
    return dl * q.astype(F32)


def _k_scale_min(scales):
    """(sc, m): the 8 sub-blocks' 6-bit scales and mins of a super-block's 12 packed bytes (uint8 (..., 12))."""
    s = scales.astype(np.uint32)
    sc = np.concatenate([s[..., 0:4] & 63, (s[..., 8:12] & 0xF) | ((s[..., 0:4] >> 6) << 4)], axis=-1)
    m = np.concatenate([s[..., 4:8] & 63, (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)], axis=-1)
    return sc.astype(np.float32), m.astype(np.float32)


def _q6_k(b):
    """Q6_K: two halves of 128, weight (d sc) (q - 32), q 4 low bits and 2 high."""
    ql, qh, sc = b[:, :128].astype(np.int32), b[:, 128:192].astype(np.int32), b[:, 192:208].view(np.int8)
    d = _f16(b, 208)
    out = np.empty((len(b), 256), F32)
    for half in range(2):
        lo, hi, s = ql[:, 64 * half:64 * half + 64], qh[:, 32 * half:32 * half + 32], sc[:, 8 * half:8 * half + 8]
        q = [(lo[:, :32] & 0xF) | ((hi >> 0) & 3) << 4, (lo[:, 32:] & 0xF) | ((hi >> 2) & 3) << 4,
             (lo[:, :32] >> 4) | ((hi >> 4) & 3) << 4, (lo[:, 32:] >> 4) | ((hi >> 6) & 3) << 4]
        for k in range(4):
            scale = np.repeat(s[:, [2 * k, 2 * k + 1]].astype(F32), 16, axis=1)  # is = l / 16
            out[:, 128 * half + 32 * k:128 * half + 32 * k + 32] = (d * scale) * (q[k] - 32).astype(F32)
    return out


def _q45_k(b, fifth):
    """Q4_K and Q5_K (fifth: its fifth bits): 8 sub-blocks of 32, weight (d sc) q - (dmin m), q a
    nibble, plus 16 where Q5_K's fifth bit is set."""
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, m = _k_scale_min(b[:, 4:16])
    qs = b[:, 48:176] if fifth else b[:, 16:144]
    out = np.empty((len(b), 256), F32)
    for j in range(4):
        for h in range(2):
            q = (qs[:, 32 * j:32 * j + 32] >> 4 if h else qs[:, 32 * j:32 * j + 32] & 0xF).astype(np.int32)
            if fifth:
                q = q + ((b[:, 16:48] >> (2 * j + h)) & 1).astype(np.int32) * 16
            dh, mh = d * sc[:, 2 * j + h:2 * j + h + 1], dmin * m[:, 2 * j + h:2 * j + h + 1]
            out[:, 64 * j + 32 * h:64 * j + 32 * h + 32] = dh * q.astype(F32) - mh
    return out


WIDEN = {"Q4_1": _q4_1, "Q5_0": _q5_0, "Q5_1": _q5_1, "Q2_K": _q2_k, "Q3_K": _q3_k,
         "Q4_K": lambda b: _q45_k(b, False), "Q5_K": lambda b: _q45_k(b, True), "Q6_K": _q6_k}


def dequantize_ggml(raw, kind, shape):
    """A GGML_BLOCKS tensor's bytes -> float32 (rows, cols). Q4_1 weight = q d + m, Q5_0 (q - 16) d, Q5_1
    q d + m (q 4 bits, Q5's plus a fifth); Q2_K (d sc) q - (dmin m) over sub-blocks of 16, Q3_K (d (sc - 32))
    (q - 4 unless its high bit is set); Q4_K, Q5_K and Q6_K as their functions above."""
    rows, cols = shape
    weights, nbytes, _ = GGML_BLOCKS[kind]
    b = np.frombuffer(bytes(raw), dtype=np.uint8).reshape(rows * cols // weights, nbytes)
    return WIDEN[kind](b).reshape(rows, cols)
