#!/usr/bin/python3
"""tools/interop/export_onnx.py refuses what normlab refuses, never writes over its input, and fails in one line.

Each refusal: exit 1 (2 for usage), one line on stderr with no traceback, naming the problem; the input
model and the --out path as they were; no temporary file left beside --out. The models refused are the
loader's cases (a config that is not JSON, a missing tensor, BatchNorm with a negative or NaN running
variance, a no-norm model carrying ln_f): the exporter asks the engine, so its words are the loader's.

    /usr/bin/python3 tests/export_test.py [NORMLAB_BINARY]      (make test runs it when onnx is installed)
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, make_read_only, skip_unless, snapshot, undo_read_only  # noqa: E402

skip_unless("export_test", "torch", "numpy", "onnx")
import nlformat  # noqa: E402  (tools/lib, on the path through tooltest)

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
os.environ["NORMLAB_BIN"] = BIN
TOOL = os.path.join(ROOT, "tools", "interop", "export_onnx.py")
FIX = os.path.join(ROOT, "tests", "fixtures")
check = Checks("export_test")


def export(model, *out, cwd=None):
    args = ["--out", *out] if out else []
    return subprocess.run(["/usr/bin/python3", TOOL, model, *args], capture_output=True, text=True, cwd=cwd)


def refused(name, model, out, words, rc=1):
    """Exports model to out and checks the refusal: rc, one line with words, model and out untouched."""
    watch = [model] + ([out] if out else [])
    before = [snapshot(p) for p in watch]
    parent = os.path.dirname(os.path.abspath(out)) if out else None
    files_before = sorted(os.listdir(parent)) if parent and os.path.isdir(parent) else None
    r = export(model, out)
    after = [snapshot(p) for p in watch]
    files_after = sorted(os.listdir(parent)) if parent and os.path.isdir(parent) else None
    one_line = len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr
    check(r.returncode == rc and one_line and all(w in r.stderr for w in words) and before == after
          and files_before == files_after, name,
          f"rc {r.returncode}, changed {before != after}, files {files_before} -> {files_after}: {r.stderr[-300:]}")


def edited(tmp, fixture, name, edit):
    """A model directory from an inline fixture with edit(config, tensors) applied, written unchecked."""
    config, vocab, tensors = nlformat.load_model(os.path.join(FIX, fixture))
    edit(config, tensors)
    path = os.path.join(tmp, name)
    nlformat.write_model_dir(path, config, vocab, tensors)
    return path


def main():
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        shutil.copytree(os.path.join(ROOT, "weights", "shakespeare-pre-ln"), model)
        for f in ("model.safetensors", "config.json", "tokenizer.json"):
            refused(f"--out onto the model's {f} is refused", model, os.path.join(model, f), ["is the input"])
        refused("--out onto the model directory is refused", model, model, ["is the input"])
        refused("--out inside the model directory is refused", model, os.path.join(model, "x.onnx"),
                ["is the input"])
        inline = os.path.join(tmp, "inline.json")
        shutil.copy(os.path.join(FIX, "ln-pre-bias.json"), inline)
        refused("--out onto an inline .json model itself is refused", inline, inline, ["is the input"])
        link = os.path.join(tmp, "link.onnx")
        os.symlink(inline, link)
        refused("--out through a symlink to the input is refused", inline, link, ["is the input"])
        refused("--out '' is refused", inline, "", ["--out is empty"])
        refused("--out in a missing directory is one line", inline, os.path.join(tmp, "no", "x.onnx"),
                ["no directory"])
        a_dir = os.path.join(tmp, "a-dir")  # inside tmp: its parent's listing is this test's alone
        os.makedirs(a_dir)
        refused("--out on a directory is one line", inline, a_dir, ["is a directory"])
        locked = os.path.join(tmp, "locked")
        os.makedirs(locked)
        if make_read_only(locked):
            refused("--out in a read-only directory is one line", inline, os.path.join(locked, "x.onnx"),
                    ["cannot write"])
            undo_read_only(locked)
        else:
            print("note: no way to make a read-only directory here (chattr, mount); that case is not tested")
        r = subprocess.run(["/usr/bin/python3", TOOL, inline], capture_output=True, text=True)
        check(r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "--out" in r.stderr,
              "a missing --out is a one-line usage error, exit 2", r.stderr)
        bad_json = os.path.join(tmp, "badjson")
        shutil.copytree(model, bad_json)
        open(os.path.join(bad_json, "config.json"), "w").write("{not json\n")
        refused("a config.json that is not JSON is refused in the loader's words", bad_json,
                os.path.join(tmp, "a.onnx"), ["normlab cannot load it", "config.json"])
        cases = [("a model missing a tensor", "ln-pre-bias.json", lambda c, t: t.pop("h.1.mlp.c_fc.bias"),
                  ["h.1.mlp.c_fc.bias"]),
                 ("BatchNorm with a negative running variance", "bn-pre-bias.json",
                  lambda c, t: t["h.0.ln_1.running_var"].__setitem__(2, -0.5), ["negative variance"]),
                 ("BatchNorm with a NaN running variance", "bn-pre-bias.json",
                  lambda c, t: t["h.0.ln_2.running_var"].__setitem__(1, float("nan")), ["non-finite"]),
                 ("a no-norm model carrying ln_f", "nonorm.json",
                  lambda c, t: t.update({"ln_f.weight": t["wte.weight"][0].copy()}), ["ln_f.weight"])]
        for label, fixture, edit, words in cases:
            path = edited(tmp, fixture, f"edited-{len(os.listdir(tmp))}", edit)
            refused(f"{label} is refused as normlab refuses it", path, os.path.join(tmp, "e.onnx"),
                    ["normlab cannot load it"] + words)
        old = os.path.join(tmp, "old.onnx")
        open(old, "wb").write(b"an earlier export\n")
        r = export(inline, old)
        check(r.returncode == 0 and open(old, "rb").read()[:4] != b"an e" and not [
            n for n in os.listdir(tmp) if n.endswith(".tmp") or n.startswith(".old.onnx")],
            "a good model is exported over an existing file, whole, with no temporary file left", r.stderr)
        elsewhere = os.path.join(tmp, "elsewhere.onnx")
        open(elsewhere, "wb").write(b"an earlier export\n")
        via = os.path.join(tmp, "via.onnx")
        os.symlink(elsewhere, via)
        r = export(inline, via)
        check(r.returncode == 0 and os.path.islink(via) and open(elsewhere, "rb").read()[:4] != b"an e",
              "--out through a symlink replaces the file it points to and keeps the link", r.stderr)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
