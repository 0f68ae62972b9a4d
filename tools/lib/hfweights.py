"""Hugging Face snapshot files read with numpy alone: JSON documents and safetensors weights, one
file or shards with model.safetensors.index.json, F32, F16, BF16 or F64, checked against the file
(which is untrusted) before any tensor is read, every refusal a ToolError of one line; else
pytorch_model.bin (or its shards), through tools/lib/torchzip.py's restricted unpickler.

    import hfweights
    config = hfweights.read_json(path)                 # duplicate keys refused
    tensors, files = hfweights.read_weights(folder)    # name -> Stored; the files they come from
    a = tensors["model.embed_tokens.weight"].load()    # float32, read now (rows [lo, hi) with load(lo, hi))

A tensor is read from its file when it is loaded, so an importer holds one tensor at a time, never
the snapshot. BF16 is the high half of a float32, so widening it is exact, as is F16's.
"""
import argparse
import json
import os
import struct

import numpy as np

import nltool
from nltool import ToolError

DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "BF16": "<u2"}
MAX_FILE = 64 << 30
INDEX = "model.safetensors.index.json"


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ValueError(f"key {twice[0]!r} appears twice")
    return dict(pairs)


def read_json(path, what=None):
    """The JSON document at path (at most 16 MiB), a key given twice in one object refused."""
    try:
        with open(path, "rb") as f:
            return json.loads(f.read(16 << 20).decode("utf-8"), object_pairs_hook=_no_duplicates)
    except OSError as e:
        raise ToolError(f"{what or path}: {e.strerror or e}")
    except UnicodeDecodeError as e:
        raise ToolError(f"{what or path}: not UTF-8 text ({e.reason} at byte {e.start})")
    except json.JSONDecodeError as e:
        raise ToolError(f"{what or path}: not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}")
    except ValueError as e:  # a key given twice (_no_duplicates)
        raise ToolError(f"{what or path}: {e}")


class Stored:
    """One tensor of a safetensors file, read from the file when it is wanted (rows [lo, hi) of its
    first dimension, or all), as float32: the file is never held in memory whole."""

    def __init__(self, path, offset, dtype, shape):
        self.path, self.offset, self.dtype, self.shape = path, offset, dtype, tuple(shape)

    def load(self, lo=0, hi=None):
        hi = (self.shape[0] if self.shape else 1) if hi is None else hi
        row = int(np.prod(self.shape[1:], dtype=np.int64))
        width = np.dtype(DTYPES[self.dtype]).itemsize
        with open(self.path, "rb") as f:
            f.seek(self.offset + lo * row * width)
            raw = np.fromfile(f, dtype=DTYPES[self.dtype], count=(hi - lo) * row)
        if raw.size != (hi - lo) * row:
            raise ToolError(f"{self.path}: ends inside a tensor: the file was cut short while it was read")
        if self.dtype == "BF16":  # the high half of a float32
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        return raw.astype(np.float32, copy=False).reshape((hi - lo,) + self.shape[1:] if self.shape else ())


def read_safetensors(path):
    """name -> Stored, every field, offset and shape checked against the file, before any tensor is read."""
    size = os.path.getsize(path)
    if size < 8 or size > MAX_FILE:
        raise ToolError(f"{path}: file is {size} bytes, " + ("too short for a safetensors header" if size < 8
                                                             else f"more than the {MAX_FILE >> 30} GiB this reads"))
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n < 2 or n > min(size - 8, 100 << 20):
            raise ToolError(f"{path}: header length {n} is invalid (file has {size - 8} bytes after the length): "
                            "truncated, or not a safetensors file")
        text = f.read(n)
    try:
        header = json.loads(text.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError):
        header = None
    if not isinstance(header, dict):
        raise ToolError(f"{path}: header is not a JSON object with each tensor named once")
    header.pop("__metadata__", None)
    out, base, data_len = {}, 8 + n, size - 8 - n
    for name, e in header.items():
        what = f"{path}: tensor \"{name}\""
        if not isinstance(e, dict) or e.get("dtype") not in DTYPES:
            raise ToolError(f"{what}: dtype {e.get('dtype') if isinstance(e, dict) else None!r} is not one of "
                            + ", ".join(DTYPES))
        shape, offsets = e.get("shape"), e.get("data_offsets")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                  for d in shape):
            raise ToolError(f"{what}: \"shape\" must be a list of sizes")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(isinstance(o, int) for o in offsets) \
                or not 0 <= offsets[0] <= offsets[1]:
            raise ToolError(f"{what}: \"data_offsets\" must be [begin, end], 0 <= begin <= end")
        lo, hi = offsets
        if hi > data_len:
            raise ToolError(f"{what}: data_offsets end {hi} is past the data section ({data_len} bytes): "
                            "the file is truncated")
        want = np.dtype(DTYPES[e["dtype"]]).itemsize * int(np.prod(shape, dtype=np.int64))
        if hi - lo != want:
            raise ToolError(f"{what}: data_offsets span {hi - lo} bytes but its shape and dtype need {want}")
        out[name] = Stored(path, base + lo, e["dtype"], shape)
    return out


def read_sharded(folder, index_name=INDEX, read=None):
    """name -> Stored over the shards that model.safetensors.index.json's weight_map names (or
    index_name's, each shard read by read: pytorch_model.bin.index.json's), and the
    shards' paths. Refused: a shard named that is missing or not a plain file name in folder, a tensor
    the index lists twice or that two shards hold, one the index puts in a shard that lacks it, and one
    a shard holds that the index does not put there."""
    index = os.path.join(folder, index_name)
    read = read or read_safetensors
    doc = read_json(index)
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(wmap, dict) or not wmap or not all(isinstance(v, str) for v in wmap.values()):
        raise ToolError(f"{index}: no \"weight_map\" object of tensor name -> shard file")
    held, paths = {}, []
    for shard in sorted(set(wmap.values())):
        path = os.path.join(folder, shard)
        if os.path.basename(shard) != shard or shard in (".", ".."):
            raise ToolError(f"{index}: shard {shard!r} is not a file name in the snapshot folder")
        if not os.path.isfile(path):
            raise ToolError(f"{index}: names shard {shard}, which is missing from {folder}")
        paths.append(path)
        for name, t in read(path).items():
            if name in held:
                raise ToolError(f"{index}: tensor {name} is held twice, by {os.path.basename(held[name].path)} "
                                f"and {shard}")
            held[name] = t
    out = {}
    for name, t in held.items():
        if wmap.get(name) != os.path.basename(t.path):
            raise ToolError(f"{t.path}: holds tensor {name}, which {index_name} puts "
                            + (f"in {wmap[name]}" if name in wmap else "nowhere"))
        out[name] = t
    lost = sorted(set(wmap) - set(out))
    if lost:
        raise ToolError(f"{index}: puts tensor {lost[0]} in {wmap[lost[0]]}, which does not hold it")
    return out, paths


def snapshot_arguments(prog, doc, argv, files="config.json, weights, tokenizer files", options=None):
    """The command line of an importer of snapshots (SNAPSHOT --out DIR, and what options(parser)
    adds), parsed; SNAPSHOT must be a folder and --out a place a model may be written
    (nltool.check_out), or ToolError."""
    p = nltool.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("snapshot", help=f"the Hugging Face snapshot folder ({files})")
    p.add_argument("--out", required=True, help="normlab model directory to write (replaced whole if it is one)")
    if options:
        options(p)
    a = p.parse_args(argv)
    if not os.path.isdir(a.snapshot):
        raise ToolError(f"{a.snapshot}: not a folder (give the snapshot folder that holds config.json)")
    nltool.check_out(a.out, [a.snapshot], want_dir=True, make_parents=True)
    return a


DTYPE_FLAGS = {"stored": None, "f32": "F32", "f16": "F16", "bf16": "BF16"}  # an importer's --dtype
F16_MAX = 65504.0  # float16's largest finite value


def dtype_option(p):
    """An importer's --dtype, added to the argparse parser p (its value: a key of DTYPE_FLAGS)."""
    p.add_argument("--dtype", choices=list(DTYPE_FLAGS), default="stored",
                   help="the type the weight matrices are written as: as the snapshot stores them (default: F16 "
                        "and BF16 kept, others float32), or f32, f16, bf16; norm gains, biases and position "
                        "tables are float32")


def matrix_type(parts, dtype):
    """The type a weight matrix made of the snapshot's tensors parts (Stored or Loaded) is written as:
    dtype (F32, F16, BF16), or with dtype None the parts' own where all are F16 or all BF16, else
    float32 (F32, F64, or types mixed)."""
    if dtype:
        return dtype
    kinds = {t.dtype for t in parts}
    return kinds.pop() if len(kinds) == 1 and kinds <= {"F16", "BF16"} else "F32"


def storable(a, dtype, path, names):
    """a, refused where it is to be stored as F16 and a value of it is past F16's range (path and
    names: the file and the tensors it came from, for the message)."""
    if dtype == "F16":
        big = float(np.abs(a).max()) if a.size else 0.0
        if big > F16_MAX:
            raise ToolError(f"{path}: {names} holds {big:g}, beyond float16's largest value {F16_MAX:g}: "
                            "--dtype f16 cannot store it (give --dtype bf16 or f32)")
    return a


PT_SINGLE, PT_INDEX = "pytorch_model.bin", "pytorch_model.bin.index.json"
PT_DTYPES = {np.dtype("<f4"): "F32", np.dtype("<f2"): "F16", np.dtype("<u2"): "BF16", np.dtype("<f8"): "F64"}


class Loaded:
    """One tensor of a pytorch_model.bin, read whole by tools/lib/torchzip.py (bfloat16 as its bits),
    with Stored's interface: load() gives float32."""

    def __init__(self, path, name, array):
        if not isinstance(array, np.ndarray) or array.dtype not in PT_DTYPES:
            found = f"a tensor of {array.dtype}" if isinstance(array, np.ndarray) else f"a {type(array).__name__}"
            raise ToolError(f"{path}: {name} is {found}; a weight is a float32, float16 or bfloat16 tensor")
        self.path, self.array, self.dtype, self.shape = path, array, PT_DTYPES[array.dtype], tuple(array.shape)

    def load(self, lo=0, hi=None):
        a = self.array[lo:hi] if self.shape else self.array
        if self.dtype == "BF16":  # the high half of a float32
            return (a.astype(np.uint32) << 16).view(np.float32)
        return a.astype(np.float32)


def read_pytorch(path):
    """name -> Loaded of one pytorch_model.bin, read through torchzip's restricted unpickler (nothing
    the file names runs)."""
    import torchzip
    try:
        state = torchzip.load(path, bf16_bits=True)
    except torchzip.CheckpointError as e:
        raise ToolError(str(e))
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise ToolError(f"{path}: not a state dict (tensors by name)")
    return {k: Loaded(path, k, v) for k, v in state.items()}


def read_weights(folder):
    """(name -> Stored or Loaded, the weight files): model.safetensors, else the shards of its index,
    else pytorch_model.bin, else the shards of pytorch_model.bin.index.json (the same checks)."""
    single = os.path.join(folder, "model.safetensors")
    if os.path.isfile(single):
        return read_safetensors(single), [single]
    if os.path.isfile(os.path.join(folder, INDEX)):
        return read_sharded(folder)
    if os.path.isfile(os.path.join(folder, PT_SINGLE)):
        return read_pytorch(os.path.join(folder, PT_SINGLE)), [os.path.join(folder, PT_SINGLE)]
    if os.path.isfile(os.path.join(folder, PT_INDEX)):
        return read_sharded(folder, PT_INDEX, read_pytorch)
    raise ToolError(f"{folder}: has none of model.safetensors, {INDEX}, {PT_SINGLE} and {PT_INDEX}")


def write_safetensors(path, tensors, dtype="F32"):
    """A safetensors file of float arrays (name -> array) stored as dtype (F32, F16 or BF16; BF16
    rounded to nearest even), for the tools that make test snapshots. Not atomic: for new files."""
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        blob = encode(np.asarray(a, dtype=np.float32).reshape(-1), dtype)  # (a 0-d buffer too)
        header[name] = {"dtype": dtype, "shape": list(np.shape(a)), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        for b in blobs:
            f.write(b)


def encode(a, dtype):
    """a's bytes as dtype: F32 and F16 by numpy's casts, BF16 the float32 rounded to nearest even."""
    if dtype == "BF16":
        u = a.astype("<f4").view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        return u.astype("<u2").tobytes()
    with np.errstate(over="ignore"):  # a value past F16's range is stored as Inf, as torch stores it
        return a.astype(DTYPES[dtype]).tobytes()


def rounded(a, dtype):
    """a as dtype stores it, back in float32: what a reader of that file gets."""
    a = np.asarray(a, dtype=np.float32)
    if dtype == "BF16":
        return (np.frombuffer(encode(a, dtype), "<u2").astype(np.uint32) << 16).view(np.float32).reshape(a.shape)
    with np.errstate(over="ignore"):
        return a.astype(DTYPES[dtype]).astype(np.float32)
