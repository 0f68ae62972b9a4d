#!/usr/bin/python3
"""tools/lib/torchzip.py against torch.load itself, and against archives made to break it.

Reference: torch.load of checkpoints that torch.save wrote (our own, so safe to load): every tensor
equal exactly (float32, float16, bfloat16 widened to float32, int64, bool; views with an offset and
a stride, a Parameter, 0-d and empty tensors), and the plain containers equal. Then malformed
archives: each is a CheckpointError naming the problem, never another exception.

    /usr/bin/python3 tests/torchzip_test.py      (make test runs it when torch is installed)
"""
import collections
import io
import os
import pickle
import sys
import tempfile
import zipfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless  # noqa: E402

skip_unless("torchzip_test", "numpy")
import torchzip  # noqa: E402

check = Checks("torchzip_test")


def same(got, want):
    """got (torchzip's) equals want (torch.load's): arrays bit for bit, containers item by item."""
    import torch
    if torch.is_tensor(want):
        w = want.detach().float() if want.dtype == torch.bfloat16 else want.detach()
        return hasattr(got, "shape") and tuple(got.shape) == tuple(w.shape) and (got == w.numpy()).all()
    if isinstance(want, dict):
        return isinstance(got, dict) and list(got) == list(want) and all(same(got[k], want[k]) for k in want)
    if isinstance(want, (list, tuple)):
        return type(got) is type(want) and len(got) == len(want) and all(map(same, got, want))
    return got == want


def refused(what, data, words):
    """An archive (bytes) torchzip must refuse with a CheckpointError holding words."""
    with tempfile.NamedTemporaryFile(suffix=".pt") as f:
        f.write(data)
        f.flush()
        try:
            torchzip.load(f.name)
            check(False, what, "loaded")
        except torchzip.CheckpointError as e:
            check(all(w in str(e) for w in words), what, str(e))
        except Exception as e:  # noqa: BLE001 - the point: nothing else may escape
            check(False, what, f"{type(e).__name__}: {e}")


class Storage:
    """A storage reference, written by the Pickler below as torch writes one."""

    def __init__(self, key, numel):
        self.key, self.numel = key, numel


class Rebuild:
    """Pickles as torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)."""

    def __init__(self, *args):
        self.args = args

    def __reduce__(self):
        import torch._utils
        return torch._utils._rebuild_tensor_v2, self.args + (False, collections.OrderedDict())


def archive(obj, storages, pid_type=None):
    """A checkpoint zip of obj, its Storage references pointing at storages (key -> bytes)."""
    import torch

    class P(pickle.Pickler):
        def persistent_id(self, o):
            if isinstance(o, Storage):
                return ("storage", pid_type or torch.FloatStorage, o.key, "cpu", o.numel)
            return None
    buf = io.BytesIO()
    P(buf, protocol=2).dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data.pkl", buf.getvalue())
        for key, data in storages.items():
            z.writestr(f"archive/data/{key}", data)
        z.writestr("archive/version", "3\n")
    return out.getvalue()


# The names torchzip's docstring lists, and no others (tests/torchzip_test.py pins them: a name added
# to the allow-list, such as builtins.getattr, which reaches any attribute of anything built, fails here).
DOCUMENTED = {("collections", "OrderedDict"), ("torch._utils", "_rebuild_tensor_v2"),
              ("torch._utils", "_rebuild_parameter"), ("torch._utils", "_rebuild_parameter_with_state")} | {
    ("torch", t + "Storage") for t in ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char",
                                       "Byte", "Bool", "Untyped")}


def allow_list_is_the_documented_one():
    got = set(torchzip._Unpickler(b"", None, "", True).allowed)
    check(got == DOCUMENTED, "the allow-list is exactly the documented names",
          f"added {sorted(got - DOCUMENTED)}, missing {sorted(DOCUMENTED - got)}")
    for module, name in sorted(DOCUMENTED):
        check(module in torchzip.__doc__ and name in torchzip.__doc__, f"{module}.{name} is in the docstring")


def getattr_gadget_is_refused():
    """getattr(__import__("os"), "system")("touch MARK"): plain pickle runs it; torchzip refuses it
    at its first name, and the command never runs."""
    def s(text):
        return pickle.dumps(text, protocol=2)[2:-1]
    with tempfile.TemporaryDirectory() as tmp:
        mark = os.path.join(tmp, "ran")
        body = (b"\x80\x02cbuiltins\ngetattr\n(cbuiltins\n__import__\n(" + s("os") + b"tR" + s("system") + b"tR("
                + s(f"touch {mark}") + b"tR.")
        pickle.loads(body)  # the gadget is real: the plain unpickler runs the command
        check(os.path.exists(mark), "the getattr gadget runs a command under plain pickle")
        os.remove(mark)
        refused("a pickle reaching os.system through builtins.getattr", zip_of({"archive/data.pkl": body}),
                ["builtins.getattr", "refused, nothing was run"])
        check(not os.path.exists(mark), "torchzip ran nothing of it")


def main():
    allow_list_is_the_documented_one()
    getattr_gadget_is_refused()
    if not check.unless_missing("torch", what="torchzip against torch.load"):
        return check.summary()
    import torch
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 7
    obj = {"f32": base, "view": base[1:, ::2], "t": base.t(), "f16": base.half(), "bf16": base.bfloat16(),
           "i64": torch.arange(5), "bool": torch.tensor([True, False]), "scalar": torch.tensor(1.4697),
           "empty": torch.zeros(0, 3), "param": torch.nn.Parameter(torch.ones(3)),
           "sd": torch.nn.Linear(3, 2).state_dict(), "plain": {"lr": 1e-3, "betas": (0.9, 0.99), "n": None,
                                                           "s": "x", "l": [1, 2.5]}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ok.pt")
        torch.save(obj, path)
        got, want = torchzip.load(path), torch.load(path)
        for k in want:
            check(same(got[k], want[k]), f"{k}: the same as torch.load's", f"{got[k]!r} vs {want[k]!r}")
        check(isinstance(got["sd"], collections.OrderedDict), "state dicts stay OrderedDicts")
        back = torchzip.to_torch(got)
        check(torch.equal(back["view"], want["view"]) and back["i64"].dtype == torch.int64,
              "to_torch gives tensors of the same values and types")
        raw = open(path, "rb").read()
    good = b"\0" * 16
    refused("a tensor past its storage's end", archive({"w": Rebuild(Storage("0", 4), 2, (3,), (1,))},
                                                      {"0": good}), ["runs past its storage"])
    refused("a negative stride", archive({"w": Rebuild(Storage("0", 4), 0, (2,), (-1,))}, {"0": good}),
            ["negative"])
    refused("a size that is not integers", archive({"w": Rebuild(Storage("0", 4), 0, ("2",), (1,))},
                                                   {"0": good}), ["not a tuple of integers"])
    refused("a stride-0 view far larger than its storage",
            archive({"w": Rebuild(Storage("0", 4), 0, (1 << 20, 1 << 20), (0, 0))}, {"0": good}),
            ["past its storages' elements"])
    refused("a storage entry shorter than its elements", archive({"w": Rebuild(Storage("0", 8), 0, (4,), (1,))},
                                                                  {"0": good}), ["holds 16 bytes"])
    refused("a storage missing from the archive", archive({"w": Rebuild(Storage("7", 4), 0, (4,), (1,))}, {}),
            ["storage 7 is missing"])
    refused("a storage of an unknown element type", archive({"w": Rebuild(Storage("0", 4), 0, (4,), (1,))},
                                                             {"0": good}, pid_type=torch.ComplexFloatStorage),
            ["ComplexFloatStorage"])
    refused("a rebuild from something other than a storage", archive({"w": Rebuild("oops", 0, (4,), (1,))}, {}),
            ["other than a storage"])
    eighth = 1 << 25  # three stride-0 tensors of 2^25 doubles (256 MiB each) over one 8-byte storage
    many = [Rebuild(Storage("0", 1), 0, (eighth,), (0,)) for _ in range(9)]
    refused("stride-0 tensors past the checkpoint's element budget together", archive(many, {"0": b"\0" * 4},
            pid_type=torch.FloatStorage), ["past its storages' elements"])
    refused("BUILD on an allowed storage type", build_on("torch\nFloatStorage\n", {"name": "BFloat16Storage"}),
            ["tries to change torch.FloatStorage"])
    refused("BUILD on an allowed function", build_on("torch._utils\n_rebuild_tensor_v2\n",
                                                     (None, {"__defaults__": (1, 2)})), ["tries to change"])
    refused("BUILD that gives a dict an attribute", build_on_dict({"get": 1}), ["sets attributes on a dict"])
    check(torchzip.load(write_tmp(build_on_dict({"_metadata": {}}))) == {"a": 1},
          "a dict's _metadata (state_dict's) is dropped, its items kept")
    deflated = io.BytesIO()
    with zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", pickle.dumps({}, protocol=2))
    refused("a compressed entry (a zip bomb's way)", deflated.getvalue(), ["compressed or encrypted"])
    refused("a zip that is not a checkpoint", zip_of({"readme.txt": b"hi"}), ["not a PyTorch checkpoint"])
    refused("a truncated checkpoint", raw[:len(raw) // 2], ["not a zip-format"])
    big_endian = zip_of({"archive/data.pkl": pickle.dumps({}), "archive/byteorder": b"big"})
    refused("a big-endian checkpoint", big_endian, ["big-endian"])
    refused("a garbled pickle", zip_of({"archive/data.pkl": b"\x80\x02}q\x00(X\x05"}), ["not a readable"])
    return check.summary()


def write_tmp(data):
    f = tempfile.NamedTemporaryFile(suffix=".pt", delete=False)
    f.write(data)
    f.close()
    return f.name


def build_on(global_line, state):
    """A checkpoint whose pickle applies BUILD(state) to an allowed global (module\\nname\\n)."""
    body = b"\x80\x02c" + global_line.encode() + pickle.dumps(state, protocol=2)[2:-1] + b"b."
    return zip_of({"archive/data.pkl": body})


def build_on_dict(state):
    """An OrderedDict {"a": 1} with BUILD(state) applied, as state_dict() pickles its _metadata."""
    body = (b"\x80\x02ccollections\nOrderedDict\n)R" + pickle.dumps("a", protocol=2)[2:-1]
            + b"K\x01s" + pickle.dumps(state, protocol=2)[2:-1] + b"b.")
    return zip_of({"archive/data.pkl": body})


def zip_of(entries):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return out.getvalue()


if __name__ == "__main__":
    sys.exit(main())
