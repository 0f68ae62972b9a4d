"""Read a PyTorch checkpoint (torch.save's zip format) without running anything it names.

    import torchzip
    ckpt = torchzip.load("ckpt.pt")        # dicts, lists, numbers, strings, numpy arrays

A checkpoint is a zip of one pickle (data.pkl) and one file per storage (data/<key>). Unpickling an
untrusted pickle can run any code its author chose: it may name any function (os.system,
builtins.eval, subprocess.Popen, torch.load itself) and call it. torch.load(weights_only=True)
guards against that only on some PyTorch versions, and 1.13's refuses every nanoGPT checkpoint.
So this reader does not use torch.load or the real torch at all. Its unpickler resolves exactly
the names a checkpoint of tensors and plain containers needs, to stand-ins of its own:

- collections.OrderedDict (the state dicts' type: an OrderedDict that takes items, no attributes),
- torch._utils._rebuild_tensor_v2, _rebuild_parameter and _rebuild_parameter_with_state (rebuild a
  tensor as a numpy array from its storage, offset, size and stride, checked against the storage),
- torch.FloatStorage, DoubleStorage, HalfStorage, BFloat16Storage, LongStorage, IntStorage,
  ShortStorage, CharStorage, ByteStorage, BoolStorage and UntypedStorage (markers for the storages'
  element types).

Any other name is refused before anything is built (CheckpointError naming it), so nothing from
the file runs. The stand-ins are made afresh for each load and refuse to be changed (pickle's BUILD),
so one file cannot alter how the next is read. The tensors rebuilt may hold no more elements than
the storages read plus MAX_TENSOR_ELEMENTS, so a small file cannot ask for gigabytes through
stride-0 views, and entries must be stored uncompressed, as torch.save writes them (no zip bomb).
load_plain() reads a plain pickle (nanoGPT's meta.pkl) with an unpickler that resolves no name at
all. Storages are read from the zip and checked: a known element type, a size that
matches the entry, little-endian. Tensors come back as numpy arrays (bfloat16 as float32, or as its
bits, uint16, with load(..., bf16_bits=True) for a caller that keeps the type); torch is not needed
to read a checkpoint. to_torch() turns the arrays back into tensors where a caller
needs them (train.py --resume).
"""
import collections
import io
import pickle
import zipfile

import numpy as np


class CheckpointError(Exception):
    """A file this reader refuses, with the reason."""


# torch's storage classes as the pickle names them -> numpy element type (bfloat16 is read as
# uint16 and widened to float32, which holds every bfloat16 exactly).
STORAGE_DTYPES = {
    "FloatStorage": "<f4", "DoubleStorage": "<f8", "HalfStorage": "<f2", "BFloat16Storage": "<u2",
    "LongStorage": "<i8", "IntStorage": "<i4", "ShortStorage": "<i2", "CharStorage": "i1",
    "ByteStorage": "u1", "BoolStorage": "?", "UntypedStorage": "u1",
}
MAX_PICKLE_BYTES = 64 << 20  # data.pkl holds the structure only; the tensors' bytes are separate entries
MAX_TENSOR_ELEMENTS = 1 << 28


class _StorageType:
    """Stands for torch.<name>: only its element type is used. A pickle cannot change it."""
    __slots__ = ("name", "dtype")

    def __init__(self, name):
        self.name, self.dtype = name, np.dtype(STORAGE_DTYPES[name])

    def __setstate__(self, state):
        raise CheckpointError(f"its pickle tries to change torch.{self.name}; refused")


class _Callable:
    """An allowed function as the pickle sees it: callable, never changed (BUILD on it is refused)."""
    __slots__ = ("name", "fn")

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __setstate__(self, state):
        raise CheckpointError(f"its pickle tries to change {self.name}; refused")


class _StateDict(collections.OrderedDict):
    """collections.OrderedDict as the pickle builds it: items only. state_dict()'s _metadata attribute
    is dropped; any other attribute (one that would shadow a method) is refused."""

    def __setstate__(self, state):
        if not (isinstance(state, dict) and set(state) <= {"_metadata"}):
            raise CheckpointError("its pickle sets attributes on a dict; refused")


class _Storage:
    """One storage: its elements as a 1-D numpy array, read from the zip on first use."""

    def __init__(self, array, storage_type):
        self.array, self.type = array, storage_type


def _int_tuple(value, what):
    if not isinstance(value, tuple) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise CheckpointError(f"a tensor's {what} is {value!r}, not a tuple of integers")
    return value


def _rebuild_tensor_v2(budget, widen, storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    """The tensor as a new numpy array, after checking that every element lies in the storage and that
    the tensors so far hold no more elements than the storages read plus MAX_TENSOR_ELEMENTS (budget,
    a one-element list, is what is left); bfloat16 widened to float32, or its bits (uint16) where
    widen is false."""
    del requires_grad, backward_hooks, metadata  # inference: no autograd state
    if not isinstance(storage, _Storage):
        raise CheckpointError("a tensor is rebuilt from something other than a storage")
    size, stride = _int_tuple(size, "size"), _int_tuple(stride, "stride")
    if not isinstance(storage_offset, int) or storage_offset < 0 or len(size) != len(stride):
        raise CheckpointError(f"a tensor has offset {storage_offset!r}, size {size} and stride {stride}")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise CheckpointError(f"a tensor has a negative size or stride ({size}, {stride})")
    n, count = len(storage.array), int(np.prod(size, dtype=object))
    if count > budget[0]:  # stride-0 views may repeat elements, within reason
        raise CheckpointError(f"a tensor of size {size} takes the checkpoint past its storages' elements "
                              f"(plus {MAX_TENSOR_ELEMENTS}); refused")
    budget[0] -= count
    if 0 not in size:
        last = storage_offset + sum((s - 1) * st for s, st in zip(size, stride))
        if last >= n:
            raise CheckpointError(f"a tensor of size {size} at offset {storage_offset} runs past its storage "
                                  f"of {n} elements")
    itemsize = storage.array.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(storage.array[storage_offset:] if 0 not in size else storage.array[:0],
                                           shape=size, strides=tuple(st * itemsize for st in stride))
    out = np.array(view)  # a copy: contiguous, and no view into the zip's bytes
    if storage.type.name == "BFloat16Storage" and widen:
        out = (out.astype(np.uint32) << 16).view(np.float32)
    return out


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None, state=None):
    del requires_grad, backward_hooks, state
    if not isinstance(data, np.ndarray):
        raise CheckpointError("a parameter wraps something other than a tensor")
    return data


STORAGE_TYPES = tuple(STORAGE_DTYPES)


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, zf, prefix, widen):
        super().__init__(io.BytesIO(data))
        self.zf, self.prefix, self.storages = zf, prefix, {}
        self.budget = [MAX_TENSOR_ELEMENTS]  # grows by each storage's elements as it is read
        rebuild = _Callable("torch._utils._rebuild_tensor_v2", lambda *a: _rebuild_tensor_v2(self.budget, widen, *a))
        parameter = _Callable("torch._utils._rebuild_parameter", _rebuild_parameter)
        # Fresh stand-ins for every load: nothing one file does can reach the next.
        self.allowed = {("collections", "OrderedDict"): _StateDict, ("torch._utils", "_rebuild_tensor_v2"): rebuild,
                        ("torch._utils", "_rebuild_parameter"): parameter,
                        ("torch._utils", "_rebuild_parameter_with_state"): parameter}
        self.allowed.update({("torch", name): _StorageType(name) for name in STORAGE_TYPES})

    def find_class(self, module, name):
        found = self.allowed.get((module, name))
        if found is None:
            raise CheckpointError(f"its pickle names {module}.{name}, which a checkpoint of tensors does not "
                                  "need; refused, nothing was run")
        return found

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise CheckpointError(f"its pickle refers to {str(pid)[:60]!r}, not a storage")
        _, storage_type, key, _location, numel = pid
        if not isinstance(storage_type, _StorageType) or not isinstance(key, str) or not isinstance(numel, int):
            raise CheckpointError(f"its pickle has a malformed storage reference {str(pid)[:80]!r}")
        if key not in self.storages:
            self.storages[key] = _Storage(self.read_storage(key, storage_type, numel), storage_type)
        return self.storages[key]

    def read_storage(self, key, storage_type, numel):
        name = f"{self.prefix}data/{key}"
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            raise CheckpointError(f"storage {key} is missing from the archive ({name})")
        want = numel * storage_type.dtype.itemsize
        if numel < 0 or info.file_size != want:
            raise CheckpointError(f"storage {key} holds {info.file_size} bytes; {numel} elements of "
                                  f"{storage_type.name} are {want}")
        _stored(info)
        self.budget[0] += numel
        return np.frombuffer(self.zf.read(info), dtype=storage_type.dtype)


def _stored(info):
    """torch.save stores its entries uncompressed; anything else (a deflated bomb) is refused."""
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
        raise CheckpointError(f"entry {info.filename} is compressed or encrypted; torch.save writes neither")


def load(path, data=None, bf16_bits=False):
    """The checkpoint's object: dicts, lists, tuples, numbers, strings and numpy arrays. data: the
    file's bytes, when the caller has read them already (path then only names it). bf16_bits: a
    bfloat16 tensor comes back as its bits, a uint16 array (no other storage gives uint16), for a
    caller that keeps the type; else widened to float32."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data) if data is not None else path)
    except zipfile.BadZipFile:
        raise CheckpointError(f"{path}: not a zip-format PyTorch checkpoint (torch.save writes one since "
                              "PyTorch 1.6; re-save an older one with a current PyTorch)")
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read: {e.strerror or e}")
    with zf:
        try:
            return _load_zip(zf, not bf16_bits)
        except CheckpointError as e:
            raise CheckpointError(f"{path}: {e}")
        except Exception as e:  # noqa: BLE001 - whatever a malformed file raises becomes one line
            raise CheckpointError(f"{path}: not a readable checkpoint: {type(e).__name__}: {str(e)[:120]}")


def _load_zip(zf, widen=True):
    pickles = [n for n in zf.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise CheckpointError("a zip, but not a PyTorch checkpoint (no single <name>/data.pkl)")
    prefix = pickles[0][:-len("data.pkl")]
    if prefix + "byteorder" in zf.namelist():
        order = zf.getinfo(prefix + "byteorder")
        _stored(order)
        if order.file_size > 16 or zf.read(order).strip() != b"little":
            raise CheckpointError("a big-endian checkpoint; only little-endian ones are read")
    info = zf.getinfo(pickles[0])
    _stored(info)
    if info.file_size > MAX_PICKLE_BYTES:
        raise CheckpointError(f"data.pkl is {info.file_size} bytes, more than the limit of {MAX_PICKLE_BYTES}")
    return _Unpickler(zf.read(info), zf, prefix, widen).load()


class _PlainUnpickler(pickle.Unpickler):
    """Builds only what pickle makes without naming anything (dict, list, tuple, str, int, float,
    bool, None, bytes): every class or function the file names is refused."""

    def find_class(self, module, name):
        raise CheckpointError(f"it names {module}.{name}; only plain dicts, lists, strings and numbers are read")


def load_plain(path):
    """A plain pickle (nanoGPT's meta.pkl): its dicts, lists, strings and numbers, and nothing it names."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PICKLE_BYTES + 1)
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read: {e.strerror or e}")
    if len(data) > MAX_PICKLE_BYTES:
        raise CheckpointError(f"{path}: more than {MAX_PICKLE_BYTES} bytes")
    try:
        return _PlainUnpickler(io.BytesIO(data)).load()
    except CheckpointError as e:
        raise CheckpointError(f"{path}: {e}")
    except Exception as e:  # noqa: BLE001 - a malformed pickle raises many kinds; each becomes one line
        raise CheckpointError(f"{path}: not a readable pickle: {type(e).__name__}: {str(e)[:120]}")


def to_torch(obj):
    """obj with every numpy array made a torch tensor (containers rebuilt, the rest as it is)."""
    import torch
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj))
    if isinstance(obj, collections.OrderedDict):
        return collections.OrderedDict((k, to_torch(v)) for k, v in obj.items())
    if isinstance(obj, dict):
        return {k: to_torch(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_torch(v) for v in obj)
    return obj
