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
