#!/usr/bin/python3
"""normlab quantize and the stored types, end to end (docs/quantization.md).

- Every tensor `normlab quantize` writes is, byte for byte, tools/lib/qformats.py's independent numpy
  writing of ggml's rules (Q8_0, Q4_0) and of IEEE half and bfloat16, from the model's float32 weights;
  norm gains, biases and wpe stay float32; float32 tensors come first and every tensor is aligned.
- --type f32 of a quantized model gives its weights widened (qformats.dequantize), exactly.
- A quantized model's logits are its widened twin's within 1e-4 (only the order of the sums differs).
- --keep, a matrix that cannot be blocked (a note, and float32), an existing folder replaced with
  its other files kept, and every refusal in one line with nothing written.
- The loader refuses a bad stored tensor in one line, exit 1: bytes that are not whole blocks, a NaN
  or infinite block scale, an unknown block type, a U8 tensor without its type, an odd-sized F16
  tensor, a NaN in a BF16 weight.

    /usr/bin/python3 tests/quant_test.py [NORMLAB_BINARY]      (make test runs it)
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless, snapshot  # noqa: E402

skip_unless("quant_test", "numpy")
import numpy as np  # noqa: E402
import nlformat  # noqa: E402  (tools/lib, on the path through tooltest)
import qformats  # noqa: E402

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
FIX = os.path.join(ROOT, "tests", "fixtures")
TYPES = ("f16", "bf16", "q8_0", "q4_0")
check = Checks("quant_test")


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)


def quantize(model, kind, out, *more):
    return run("quantize", "-m", model, "--type", kind, "-o", out, *more)


def from_fixture(tmp, fixture, name, edit=None):
    """A model folder from an inline fixture (edit(config, tensors) applied first)."""
    config, vocab, tensors = nlformat.load_model(os.path.join(FIX, fixture))
    if edit:
        edit(config, tensors)
    path = os.path.join(tmp, name)
    nlformat.write_model_dir(path, config, vocab, tensors)
    return path


def layout(path):
    """(header length, [(name, dtype, begin, end)] in data order, metadata) of a safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    meta = header.pop("__metadata__", {})
    spans = sorted((e["data_offsets"][0], e["data_offsets"][1], name, e["dtype"]) for name, e in header.items())
    return n, [(name, dt, lo, hi) for lo, hi, name, dt in spans], meta


def matches_reference(model, kind, out, keep=()):
    """Every tensor of out is the reference's bytes for the source's weights; the layout is aligned."""
    source, _ = nlformat.read_safetensors(os.path.join(model, "model.safetensors"))
    raw, meta = nlformat.read_safetensors_raw(os.path.join(out, "model.safetensors"))
    want_kind = qformats.NAMES[kind]
    differ, kinds = [], {}
    for name, (k, shape, data) in raw.items():
        matrix = len(shape) == 2 and name != "wpe.weight"
        blockable = k in ("F32", "F16", "BF16") or shape[1] % 32 == 0
        expect = want_kind if matrix and name not in keep and (want_kind not in qformats.BLOCK_BYTES or
                                                                source[name].shape[1] % 32 == 0) else "F32"
        kinds[name] = k
        ref = qformats.quantize(source[name].reshape(source[name].shape[0] if source[name].ndim == 2 else 1, -1),
                                expect)
        if k != expect or not blockable or bytes(ref.tobytes()) != bytes(data):
            differ.append(f"{name} {k} (expected {expect})")
    n, spans, file_meta = layout(os.path.join(out, "model.safetensors"))
    floats_first = [dt for _, dt, _, _ in spans] == sorted((dt for _, dt, _, _ in spans), key=lambda d: d != "F32")
    aligned = (8 + n) % 64 == 0 and all(lo % (4 if dt == "F32" else 2) == 0 for _, dt, lo, _ in spans)
    return differ, floats_first and aligned, meta.get("quantization"), kinds


def test_reference_bytes(tmp):
    shipped = ("shakespeare-pre-ln", "shakespeare-llama", "shakespeare-gru-ln")
    models = [os.path.join(ROOT, "weights", m) for m in shipped]
    models.append(from_fixture(tmp, "ln-pre-dh64.json", "dh64"))
    for model in models:
        for kind in TYPES:
            out = os.path.join(tmp, f"{os.path.basename(model)}-{kind}")
            r = quantize(model, kind, out)
            if r.returncode != 0:
                check(False, f"{os.path.basename(model)} {kind}: quantized", r.stderr)
                continue
            differ, aligned, q, _ = matches_reference(model, kind, out)
            check(not differ, f"{os.path.basename(model)} {kind}: every tensor is the reference's bytes", differ[:3])
            check(aligned, f"{os.path.basename(model)} {kind}: float32 first, every tensor aligned")
            check(q == kind, f"{os.path.basename(model)} {kind}: metadata quantization {q}")
    # the widened weights back, exactly; the logits of the twin within 1e-4
    q8 = os.path.join(tmp, "shakespeare-pre-ln-q8_0")
    back = os.path.join(tmp, "back-f32")
    r = quantize(q8, "f32", back)
    stored, _ = nlformat.read_safetensors(os.path.join(q8, "model.safetensors"))
    widened, _ = nlformat.read_safetensors(os.path.join(back, "model.safetensors"))
    check(r.returncode == 0 and all(np.array_equal(stored[k], widened[k]) for k in stored),
          "--type f32 writes the q8_0 weights widened, bit for bit", r.stderr)
    text = "ROMEO:\nO, she doth teach the torches to burn bright!"
    for kind in TYPES:
        model = os.path.join(tmp, f"shakespeare-pre-ln-{kind}")
        twin = os.path.join(tmp, f"twin-{kind}")
        quantize(model, "f32", twin)
        a, b = run("logits", "-m", model, "-p", text), run("logits", "-m", twin, "-p", text)
        la = np.array([json.loads(line) for line in a.stdout.splitlines()]) if a.returncode == 0 else None
        lb = np.array([json.loads(line) for line in b.stdout.splitlines()]) if b.returncode == 0 else None
        diff = float(np.abs(la - lb).max()) if la is not None and lb is not None and la.shape == lb.shape else None
        check(diff is not None and diff <= 1e-4, f"{kind}: logits within 1e-4 of its float32 twin ({diff})",
              a.stderr + b.stderr)


def test_lab(tmp):
    """compare --quantize q8_0's row is the stored model: its KL is eval --kl's of the file quantize wrote."""
    model = os.path.join(ROOT, "weights", "shakespeare-pre-ln")
    text = os.path.join(ROOT, "tests", "data", "held_out.txt")
    base = os.path.join(tmp, "base.kl")
    r = run("compare", model, "-f", text, "--quantize", "q8_0,q4_0", "--repeats", "1", "--json")
    rows = json.loads(r.stdout) if r.returncode == 0 else []
    run("eval", "-m", model, "-f", text, "--kl-base", base)
    for kind in ("q8_0", "q4_0"):
        row = [x for x in rows if x.get("quantize") == kind]
        e = run("eval", "-m", os.path.join(tmp, f"shakespeare-pre-ln-{kind}"), "-f", text, "--kl", base, "--json")
        kl = json.loads(e.stdout).get("kl_divergence") if e.returncode == 0 else None
        size = os.path.getsize(os.path.join(tmp, f"shakespeare-pre-ln-{kind}", "model.safetensors"))
        # within 1e-4 relative: eval --kl-base stores the reference's log-probabilities as float32
        # (docs/files.md), compare keeps its own row's in memory (seen: 3.5e-6 relative)
        check(row and kl is not None and abs(row[0]["kl_divergence"] - kl) <= 1e-4 * kl,
              f"compare's {kind} row has eval --kl's divergence of the stored file",
              f"{row and row[0].get('kl_divergence')} {kl} {r.stderr}{e.stderr}")
        check(row and abs(row[0]["weight_bytes"] - size) < 0.01 * size,
              f"compare's {kind} row's bytes are the file's ({row and row[0]['weight_bytes']} of {size})")


def test_choices(tmp):
    model = os.path.join(ROOT, "weights", "shakespeare-pre-ln")
    out = os.path.join(tmp, "keep")
    r = quantize(model, "q4_0", out, "--keep", "wte.weight,h.1.mlp.c_fc.weight")
    differ, _, _, kinds = matches_reference(model, "q4_0", out, keep=("wte.weight", "h.1.mlp.c_fc.weight"))
    check(r.returncode == 0 and not differ and kinds["wte.weight"] == "F32" and kinds["h.0.mlp.c_fc.weight"] == "Q4_0",
          "--keep leaves the named matrices float32", differ[:3] or r.stderr)
    info = run("info", "-m", out, "--json")
    mats = {m["name"]: m for m in json.loads(info.stdout)["matrices"]} if info.returncode == 0 else {}
    check(mats.get("wte.weight", {}).get("type") == "f32" and mats.get("h.0.attn.c_attn.weight", {}).get("type")
          == "q4_0" and mats["h.0.attn.c_attn.weight"]["bytes"] == 384 * 128 // 32 * 18,
          "info lists each matrix's type and bytes", info.stderr)
    small = from_fixture(tmp, "ln-pre-bias.json", "d12")  # n_embd 12: no row is whole blocks of 32
    refused("a model none of whose matrices can be blocked (nothing written as the type it names)",
            ["quantize", "-m", small, "--type", "q8_0", "-o", os.path.join(tmp, "d12-q8")],
            ["no matrix can be stored as q8_0", "whole blocks of 32", "f16"], 1, tmp, [small])
    # llama-quantize's spellings, in any case
    r = quantize(model, "Q8_0", os.path.join(tmp, "upper"))
    _, _, q, _ = matches_reference(model, "q8_0", os.path.join(tmp, "upper"))
    check(r.returncode == 0 and q == "q8_0", "--type Q8_0 (llama-quantize's spelling) is q8_0", r.stderr)
    # an existing model folder is replaced, its other files kept
    dest = os.path.join(tmp, "dest")
    quantize(model, "q8_0", dest)
    with open(os.path.join(dest, "train_log.json"), "w") as f:
        f.write("{}\n")
    r = quantize(model, "f16", dest)
    _, _, q, _ = matches_reference(model, "f16", dest)
    check(r.returncode == 0 and q == "f16" and os.path.exists(os.path.join(dest, "train_log.json")) and
          not [n for n in os.listdir(tmp) if n.startswith(".dest.")], "an existing model folder is replaced whole",
          r.stderr)


def refused(name, args, words, rc, tmp, watch):
    before = {p: snapshot(p) for p in watch}
    listing = sorted(os.listdir(tmp))
    r = run(*args)
    one = len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr and r.stdout == ""
    check(r.returncode == rc and one and all(w in r.stderr for w in words) and
          before == {p: snapshot(p) for p in watch} and listing == sorted(os.listdir(tmp)), name,
          f"rc {r.returncode}: {r.stderr.strip()[-300:]} {r.stdout[:100]}")


def test_refusals(tmp):
    model = os.path.join(ROOT, "weights", "shakespeare-pre-ln")
    plain = os.path.join(tmp, "plain")
    os.mkdir(plain)
    with open(os.path.join(plain, "notes.txt"), "w") as f:
        f.write("mine\n")
    q8 = os.path.join(tmp, "shakespeare-pre-ln-q8_0")
    refused("an unknown type name", ["quantize", "-m", model, "--type", "q5_1", "-o", os.path.join(tmp, "x")],
            ["q5_1"], 2, tmp, [model])
    refused("an output folder that is not a model's", ["quantize", "-m", model, "--type", "q8_0", "-o", plain],
            ["not a model folder"], 2, tmp, [plain])
    refused("the input as output", ["quantize", "-m", q8, "--type", "q4_0", "-o", q8], ["is the input"], 2, tmp, [q8])
    refused("an unknown --keep name", ["quantize", "-m", model, "--type", "q8_0", "-o", os.path.join(tmp, "y"),
                                       "--keep", "h.9.mlp.c_fc.weight"], ["h.9.mlp.c_fc.weight"], 1, tmp, [model])
    refused("no -o", ["quantize", "-m", model, "--type", "q8_0"], ["-o DIR"], 2, tmp, [model])
    refused("a K-quant's name: the valid types listed, the K-quants not yet",
            ["quantize", "-m", model, "--type", "Q4_K_M", "-o", os.path.join(tmp, "x")],
            ["'Q4_K_M'", "f32, f16, bf16, q8_0 or q4_0", "not yet"], 2, tmp, [model])
    refused("a quantized model quantized again without --allow-requantize",
            ["quantize", "-m", q8, "--type", "q4_0", "-o", os.path.join(tmp, "rq")],
            ["already quantized", "q8_0", "--allow-requantize"], 2, tmp, [q8])
    r = quantize(q8, "q4_0", os.path.join(tmp, "rq"), "--allow-requantize")
    _, _, q, _ = matches_reference(q8, "q4_0", os.path.join(tmp, "rq"))
    check(r.returncode == 0 and q == "q4_0", "--allow-requantize quantizes a quantized model's widened weights",
          r.stderr)
    huge = from_fixture(tmp, "ln-pre-dh64.json", "huge", lambda c, t: t["h.0.mlp.c_fc.weight"].__setitem__((3, 5), 1e6))
    refused("a weight too large for f16", ["quantize", "-m", huge, "--type", "f16", "-o", os.path.join(tmp, "z")],
            ["too large for f16"], 1, tmp, [huge])


def rewrite(src, dst, edit):
    """dst = a copy of the model folder src whose model.safetensors' header is edit(header, data) -> bytes."""
    shutil.copytree(src, dst)
    path = os.path.join(dst, "model.safetensors")
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header, data = json.loads(blob[8:8 + n]), bytearray(blob[8 + n:])
    header, data = edit(header, data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))
    return dst


def test_loader(tmp):
    q8 = os.path.join(tmp, "shakespeare-pre-ln-q8_0")
    f16 = os.path.join(tmp, "shakespeare-pre-ln-f16")
    bf16 = os.path.join(tmp, "shakespeare-pre-ln-bf16")
    name = "h.0.attn.c_attn.weight"

    def scale(value):
        def edit(h, d):
            lo = h[name]["data_offsets"][0]
            d[lo + 34 * 5:lo + 34 * 5 + 2] = value  # block 5's F16 scale
            return h, d
        return edit

    def unknown(h, d):
        h["__metadata__"]["dtype." + name] = "Q5_1"
        return h, d

    def not_blocks(h, d):
        h["__metadata__"]["dtype." + name] = "F16"
        return h, d

    def no_type(h, d):
        del h["__metadata__"]["dtype." + name]
        return h, d

    def f32_declared(h, d):  # an F32 tensor declared a type of blocks: refused, not re-read as blocks
        h["__metadata__"]["dtype.wpe.weight"] = "Q8_0"
        return h, d

    def cut_rows(h, d):  # 384 rows of 136 bytes read as 408 rows of 128: not whole blocks of 34
        h[name]["shape"] = [408, 128]
        return h, d

    def odd_f16(h, d):  # an F16 tensor whose bytes are not its shape's: 2 bytes a weight claimed for 4
        e = h["wpe.weight"]
        e["dtype"] = "F16"
        return h, d

    def bf16_nan(h, d):
        lo = h["h.2.mlp.c_proj.weight"]["data_offsets"][0]
        d[lo + 2 * 77:lo + 2 * 77 + 2] = b"\xc1\x7f"
        return h, d

    cases = [("a NaN block scale", q8, scale(b"\x00\x7e"), [name, "block scale", "nan"]),
             ("an infinite block scale", q8, scale(b"\x00\x7c"), [name, "block scale", "inf"]),
             ("an unknown type of blocks", q8, unknown, ["Q5_1", "unknown type of blocks"]),
             ("a type that is not blocks for a U8 tensor", q8, not_blocks, ["F16", "unknown type of blocks"]),
             ("a U8 tensor without its type", q8, no_type, [name, "is U8", "which blocks"]),
             ("a dtype entry naming an F32 tensor", q8, f32_declared, ["dtype.wpe.weight", "names no U8 tensor"]),
             ("bytes that are not whole blocks", q8, cut_rows, [name, "whole blocks of 34"]),
             ("an F16 tensor of the wrong size", f16, odd_f16, ["wpe.weight", "shape x 2 bytes"]),
             ("a NaN in a BF16 weight", bf16, bf16_nan, ["h.2.mlp.c_proj.weight", "non-finite value (nan)"])]
    for i, (what, src, edit, words) in enumerate(cases):
        bad = rewrite(src, os.path.join(tmp, f"bad{i}"), edit)
        r = run("eval", "-m", bad, "-f", os.path.join(ROOT, "tests", "data", "held_out.txt"))
        one = len(r.stderr.splitlines()) == 1 and r.stdout == ""
        check(r.returncode == 1 and one and all(w in r.stderr for w in words), f"the loader refuses {what}",
              f"rc {r.returncode}: {r.stderr.strip()[-300:]}")


def main():
    tmp = tempfile.mkdtemp(prefix="normlab-quant-")
    try:
        test_reference_bytes(tmp)
        test_lab(tmp)
        test_choices(tmp)
        test_refusals(tmp)
        test_loader(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
