#!/usr/bin/python3
"""Every model exported by tools/interop/export_onnx.py, run by ONNX Runtime (onnxruntime-node, through
tools/interop/ort_logits.js), against `normlab logits` on the same text: the shipped models and the test
fixtures of every norm type x placement (with and without biases, DeepNorm, no norm), and two random
Llamas (QK-norm with grouped heads, MQA untied, Qwen3's head_dim of its own, OLMo 2's block, GPT-NeoX's
and Phi's parallel blocks and partial rotary) beside the shipped one. Two sequences
run as one ONNX batch (B = 2), one a full window and one shorter run as its own batch (T dynamic).
Tolerance, as make parity's: max |logit difference| <= 1e-4 where the logits stay within 10 in
magnitude, 1e-5 of the largest |logit| beyond (both sides run in float32). Prints the worst per
model; exits 1 on any failure.

    make parity        (runs this when Node.js and onnxruntime-node are installed)
    /usr/bin/python3 tools/interop/onnx_parity.py [MODEL ...]
"""
import glob
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import nltool  # noqa: E402
import nlformat  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BIN = os.path.join(ROOT, "normlab")
NODE_PATH = os.path.join(ROOT, "build", "ort", "node_modules")
ATOL = 1e-4
EXPORTED = ("transformer", "llama")
# random Llamas beside the shipped one (GQA 4/2): QK-norm with grouped heads, MQA, an untied head, Qwen3, OLMo 2,
# the Gemmas, sliding windows
LLAMAS = [("qk-norm-8-2", ["--heads", "8", "--kv-heads", "2", "--qk-norm"]),
          ("mqa-4-1-untied", ["--heads", "4", "--kv-heads", "1"]),
          ("qwen3-head-dim-32", ["--heads", "4", "--kv-heads", "2", "--head-dim", "32", "--family", "qwen3"]),
          ("olmo2-4-2", ["--heads", "4", "--kv-heads", "2", "--family", "olmo2"]),
          ("gpt-neox", ["--family", "gpt_neox"]), ("phi", ["--family", "phi", "--dim", "80"]),
          ("gemma", ["--family", "gemma", "--dim", "80", "--heads", "4", "--kv-heads", "1", "--head-dim", "32",
                     "--tied"]),
          ("gemma2", ["--family", "gemma2", "--dim", "80", "--heads", "4", "--kv-heads", "2", "--head-dim", "32",
                      "--tied"]),
          ("gemma3-window-5", ["--family", "gemma3", "--dim", "80", "--heads", "4", "--kv-heads", "1", "--head-dim",
                               "32", "--tied", "--layers", "4", "--sliding-window", "5"]),
          ("mistral-window-6", ["--family", "mistral", "--sliding-window", "6"])]
PARALLEL = ("gpt-neox", "phi")  # written by tools/dev/make_parallel_snapshot.py
FIXTURES = ["ln-pre-bias", "ln-post-nobias", "rms-pre-rmsbias", "rms-post-bias", "ln-pre-untied", "bn-pre-bias",
            "bn-post-nobias", "bn-peri-bias", "ln-peri-bias", "rms-peri-nobias", "deepnorm", "nonorm", "utf8"]


def engine_logits(model, text):
    out = subprocess.run([BIN, "logits", "-m", model, "-p", text], check=True, capture_output=True, text=True)
    return np.array([json.loads(line) for line in out.stdout.splitlines()])


def ort_logits(onnx_path, seqs):
    env = dict(os.environ, NODE_PATH=NODE_PATH)
    out = subprocess.run(["node", os.path.join(ROOT, "tools", "interop", "ort_logits.js"), onnx_path]
                         + [",".join(map(str, s)) for s in seqs], check=True, capture_output=True, text=True, env=env)
    rows = np.array([json.loads(line) for line in out.stdout.splitlines()])
    return rows.reshape(len(seqs), len(seqs[0]), -1)


def check(model, tmp, rng):
    config, vocab, _ = nlformat.load_model(model)
    T = config["block_size"]
    onnx_path = os.path.join(tmp, "model.onnx")
    tool = os.path.join(ROOT, "tools", "interop", "export_onnx.py")
    subprocess.run(["/usr/bin/python3", tool, model, "--out", onnx_path], check=True, capture_output=True, text=True)
    if isinstance(vocab, dict):  # a BPE model: stretches of the held-out text that tokenize to T tokens alone
        def tokens(text):
            r = subprocess.run([BIN, "tokenize", "-m", model, "-f", "-", "--json"], input=text, check=True,
                               capture_output=True, text=True)
            return json.loads(r.stdout)
        held = tokens(open(os.path.join(ROOT, "tests", "data", "held_out.txt"), encoding="utf-8").read())
        bos = tokens("")["ids"]  # [bos] where the tokenizer puts one first (a Llama 2 tokenizer), else []
        texts, seqs = [], []
        for n in (T, T, max(1, T // 3)):
            k = max(1, n - len(bos))
            for _ in range(100):  # (a stretch cut inside a character, or merging across its ends, is passed over)
                at = rng.randrange(len(bos), len(held["ids"]) - k)
                want = bos + held["ids"][at:at + k]
                text = "".join(held["pieces"][at:at + k])
                # a sentencepiece model's dummy prefix puts a first piece's space back
                text = next((t for t in (text, text[1:]) if t and tokens(t)["ids"] == want), text)
                if tokens(text)["ids"] == want:
                    break
            texts.append(text)
            seqs.append(want)
    else:
        stoi = {ch: i for i, ch in enumerate(vocab)}
        held = [c for c in open(os.path.join(ROOT, "tests", "data", "held_out.txt"), encoding="utf-8").read()
                if c in stoi]
        pick = held if len(held) >= 2 * T else vocab
        texts = ["".join(rng.choice(pick) for _ in range(T)) for _ in range(2)]  # one batch of two full windows
        texts.append(texts[0][:max(1, T // 3)])  # and a shorter one alone
        seqs = [[stoi[c] for c in t] for t in texts]
    worst = scaled = 0.0
    for group, group_ids in (([texts[0], texts[1]], seqs[:2]), ([texts[2]], seqs[2:])):
        got = ort_logits(onnx_path, group_ids)
        for b, t in enumerate(group):
            want = engine_logits(model, t)
            d = float(np.max(np.abs(got[b] - want)))
            worst, scaled = max(worst, d), max(scaled, d / max(1.0, float(np.max(np.abs(want))) / 10))
    return worst, scaled


def label(model):
    """A model's name in the report: its path in the project, or a random Llama's name."""
    inside = os.path.abspath(model).startswith(ROOT + os.sep)
    return os.path.relpath(model, ROOT) if inside else "random llama " + os.path.basename(model)


def random_llama(tmp, name, flags):
    """A random Llama of tools/dev/make_llama_snapshot.py (make_parallel_snapshot.py's GPT-NeoX and Phi),
    imported by tools/interop/import_hf.py."""
    snap, out = os.path.join(tmp, name + "-snapshot"), os.path.join(tmp, name)
    maker = "dev/make_parallel_snapshot.py" if name in PARALLEL else "dev/make_llama_snapshot.py"
    for tool, args in ((maker, ["--out", snap, *flags]),
                       ("interop/import_hf.py", [os.path.join(snap, "hf"), "--out", out])):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", tool), *args], check=True, capture_output=True)
    return out


def main(argv):
    for model in argv:  # the engine's loader judges each model named (an option is no model)
        if model.startswith("-"):
            raise nltool.ToolError(f"unknown option {model} (usage: onnx_parity.py [MODEL ...])")
        nltool.check_model(model)
    shipped = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(ROOT, "weights", "*", "model.safetensors"))
                     if nlformat.load_model(os.path.dirname(p))[0].get("arch", "transformer") in EXPORTED)
    # (recurrent models are not exported to ONNX: tools/interop/export_onnx.py takes transformers and llama)
    models = argv or shipped + \
        [os.path.join(ROOT, "tests", "fixtures", f + ".json") for f in FIXTURES]
    if not os.path.isdir(os.path.join(NODE_PATH, "onnxruntime-node")):
        sys.exit("onnx_parity.py: onnxruntime-node is not installed (tools/install-deps.sh --python)")
    rng = random.Random(20261201)
    n_pass = n_fail = 0
    with tempfile.TemporaryDirectory() as tmp:
        if not argv:
            models += [random_llama(tmp, name, flags) for name, flags in LLAMAS]
        for model in models:
            try:
                worst, scaled = check(model, tmp, rng)
            except subprocess.CalledProcessError as e:
                print(f"{label(model):<44} FAIL: {' '.join(e.cmd[:2])}: {e.stderr.strip()[-300:]}")
                n_fail += 1
                continue
            good = scaled <= ATOL
            n_pass, n_fail = n_pass + good, n_fail + (not good)
            print(f"{label(model):<44} worst |ONNX Runtime - normlab| = {worst:.3g} "
                  f"({scaled:.3g} scaled)  ({'ok' if good else 'FAIL'})")
    print(f"tolerance {ATOL:g} per logit (scaled: / max(1, largest |logit| / 10))")
    print(f"onnx_parity: {n_pass} passed, {n_fail} failed")
    return 1 if n_fail else 0


if __name__ == "__main__":
    nltool.run("onnx_parity.py", lambda argv: sys.exit(main(argv)), sys.argv[1:])
