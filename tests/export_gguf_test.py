#!/usr/bin/python3
"""tools/interop/export_gguf.py: a normlab llama-family model to a GGUF of llama.cpp's llama
architecture, a GPT-2-shaped one to its gpt2, numpy only.

Checks: the shipped shakespeare-llama (sentencepiece, GQA 4/2, tied head) exported and read back by
the engine gives the folder's logits (max |diff| 0: the same weights, re-laid as llama.cpp's names
and cut rows), its ids, its eval figures and its seeded text; so do its quantize --type q8_0 and q4_0
copies (blocks kept as stored) and an untied variant (its lm_head as output.weight); so do the
shipped shakespeare-bpe (GPT-2's shape and BPE) and its Q8_0 copy as gpt2 files, and a variant of it
set to exact GELU exports with a warning and reads back as the tanh form it was trained with. Each
refusal gets one line, exit 1, no file written and its input untouched: a character vocabulary, a
post-LN and a DyT model, a recurrent one, a llama with placement post, with QK-norm, with a Hugging
Face tokenizer.json, --out inside the model, a missing model.

    /usr/bin/python3 tests/export_gguf_test.py [NORMLAB_BINARY]      (make test runs it)

By hand (docs/gguf.md), llama.cpp loads these files and its llama-perplexity and llama-tokenize agree.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless, snapshot  # noqa: E402

skip_unless("export_gguf_test", "numpy")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
import nlformat  # noqa: E402

check = Checks("export_gguf_test")
TOOL = os.path.join(ROOT, "tools", "interop", "export_gguf.py")
MODEL = os.path.join(ROOT, "weights", "shakespeare-llama")
TEXT = os.path.join(ROOT, "tests", "data", "held_out.txt")
PROMPT = "ROMEO:\nWhat light through yonder window breaks?"
ENV = {**os.environ, "NORMLAB_BIN": BIN}


def tool(model, out):
    r = subprocess.run(["/usr/bin/python3", TOOL, model, "--out", out], capture_output=True, text=True, timeout=120,
                       env=ENV)
    return r.returncode, r.stderr.strip()


def engine(*args):
    r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout


def logits(model):
    rc, out = engine("logits", "-m", model, "-p", PROMPT)
    return np.array([json.loads(line) for line in out.splitlines()]) if rc == 0 else None


def same_model(label, folder, gguf):
    """The GGUF reads back as the folder: logits (max |diff| 0), ids, eval's JSON, a seeded text."""
    a, b = logits(folder), logits(gguf)
    d = float(np.abs(a - b).max()) if a is not None and b is not None and a.shape == b.shape else float("inf")
    runs = [[engine(*cmd, "-m", m)[1] for m in (folder, gguf)] for cmd in (
        ("tokenize", "-p", PROMPT, "--ids"), ("eval", "-f", TEXT, "--json"),
        ("generate", "-p", "ROMEO:", "-n", "40", "--seed", "7"))]
    same = all(x == y and x for x, y in runs)
    check(d == 0 and same, f"{label}: the exported GGUF reads back as the folder (logits' max diff {d:.1e}; ids, "
          "eval and a seeded text equal)", str(runs)[:300])


def exported_gpt2(tmp):
    bpe = os.path.join(ROOT, "weights", "shakespeare-bpe")
    out = os.path.join(tmp, "bpe.gguf")
    rc, err = tool(bpe, out)
    check(rc == 0 and "gpt2" in err, "shakespeare-bpe exports as gpt2", err)
    same_model("shakespeare-bpe", bpe, out)
    folder, out = os.path.join(tmp, "bpe-q8_0"), os.path.join(tmp, "bpe-q8_0.gguf")
    engine("quantize", "-m", bpe, "-o", folder, "--type", "q8_0")
    rc, err = tool(folder, out)
    check(rc == 0 and "mostly Q8_0" in err, "its quantize --type q8_0 copy exports", err)
    same_model("shakespeare-bpe's q8_0 copy", folder, out)
    exact = os.path.join(tmp, "bpe-gelu")
    shutil.copytree(bpe, exact)
    edit_config(exact, {"activation": "gelu"})
    out = os.path.join(tmp, "bpe-gelu.gguf")
    rc, err = tool(exact, out)
    a, b = logits(bpe), logits(out)
    check(rc == 0 and "warning" in err and "tanh" in err and a is not None and b is not None and (a == b).all(),
          "a model of exact GELU exports with a warning; read back, it runs GELU's tanh form (shakespeare-bpe's "
          "logits exactly)", err)


def edit_config(folder, change):
    """folder's config.json with keys changed (None: removed)."""
    path = os.path.join(folder, "config.json")
    with open(path) as f:
        c = json.load(f)
    c.update(change)
    with open(path, "w") as f:
        json.dump({k: v for k, v in c.items() if v is not None}, f)


def exported(tmp):
    out = os.path.join(tmp, "sl.gguf")
    before = snapshot(MODEL)
    rc, err = tool(MODEL, out)
    check(rc == 0 and "mostly F32" in err and snapshot(MODEL) == before, "shakespeare-llama exports (its folder "
          "untouched)", err)
    same_model("shakespeare-llama", MODEL, out)
    for kind in ("q8_0", "q4_0"):
        folder, out = os.path.join(tmp, kind), os.path.join(tmp, kind + ".gguf")
        engine("quantize", "-m", MODEL, "-o", folder, "--type", kind)
        rc, err = tool(folder, out)
        check(rc == 0 and f"mostly {kind.upper()}" in err, f"its quantize --type {kind} copy exports", err)
        same_model(f"its {kind} copy, blocks as stored", folder, out)
    untied = variant(tmp, "untied", {"tie_embeddings": False})
    tensors, meta = nlformat.read_safetensors(os.path.join(MODEL, "model.safetensors"))
    rng = np.random.default_rng(3)
    tensors["lm_head.weight"] = (tensors["wte.weight"] + rng.normal(0, 0.01, tensors["wte.weight"].shape)).astype(
        np.float32)
    nlformat.write_safetensors(os.path.join(untied, "model.safetensors"), tensors)
    out = os.path.join(tmp, "untied.gguf")
    rc, err = tool(untied, out)
    check(rc == 0, "an untied variant exports", err)
    same_model("an untied variant (lm_head as output.weight)", untied, out)


def variant(tmp, name, change):
    """A copy of shakespeare-llama with config.json's keys changed (None: removed)."""
    folder = os.path.join(tmp, name)
    shutil.copytree(MODEL, folder)
    edit_config(folder, change)
    return folder


def with_tensors(folder, change):
    """folder's model.safetensors rewritten with change(tensors) applied."""
    path = os.path.join(folder, "model.safetensors")
    tensors, _ = nlformat.read_safetensors(path)
    change(tensors)
    nlformat.write_safetensors(path, tensors)
    return folder


def hf_import(tmp):
    """A random Llama imported from Hugging Face: its tokenizer.json is Hugging Face's."""
    sys.path.insert(0, os.path.join(ROOT, "tools", "dev"))
    import make_llama_snapshot
    snap, out = os.path.join(tmp, "snap"), os.path.join(tmp, "hf-import")
    make_llama_snapshot.make(snap, seed=1)
    importer = os.path.join(ROOT, "tools", "interop", "import_hf.py")
    subprocess.run(["/usr/bin/python3", importer, os.path.join(snap, "hf"), "--out", out], capture_output=True, env=ENV)
    return out


def refused(tmp):
    post = with_tensors(variant(tmp, "post", {"placement": "post"}), lambda t: t.pop("ln_f.weight"))
    gains = {f"h.{i}.attn.{m}_norm.weight": np.ones(32, np.float32) for i in range(4) for m in "qk"}
    shipped = os.path.join(ROOT, "weights")
    cases = [("a character vocabulary", os.path.join(shipped, "shakespeare-pre-ln"), "a character vocabulary"),
             ("a post-LN model", os.path.join(shipped, "shakespeare-post-ln"), "placement is \"post\""),
             ("a DyT model", os.path.join(shipped, "shakespeare-dyt"), "norm is \"dyt\""),
             ("a recurrent model", os.path.join(shipped, "shakespeare-lstm"), "arch 'lstm'"),
             ("placement post", post, "placement is \"post\""),
             ("QK-norm", with_tensors(variant(tmp, "qk", {"qk_norm": True}), lambda t: t.update(gains)),
              "qk_norm is true"),
             ("a Hugging Face tokenizer.json", hf_import(tmp), "not normlab's sentencepiece"),
             ("a missing model", os.path.join(tmp, "none"), "not a model directory")]
    for label, model, word in cases:
        out = os.path.join(tmp, "refused.gguf")
        before = snapshot(model)
        rc, err = tool(model, out)
        check(rc == 1 and word in err and err.count("\n") == 0 and not os.path.exists(out) and
              snapshot(model) == before and not [n for n in os.listdir(tmp) if n.endswith(".tmp")],
              f"{label}: refused in one line naming it, nothing written", err)
    inside = os.path.join(tmp, "post", "x.gguf")
    rc, err = tool(os.path.join(tmp, "post"), inside)
    check(rc == 1 and "lies inside it" in err and not os.path.exists(inside), "--out inside the model: refused", err)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        exported(tmp)
        exported_gpt2(tmp)
        refused(tmp)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
