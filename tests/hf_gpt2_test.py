#!/usr/bin/python3
"""tools/interop/import_hf_gpt2.py and the engine's byte-level BPE on Hugging Face GPT-2 snapshots
small enough to build here: a byte-level vocabulary of 256 bytes, three merges and
"<|endoftext|>" (260 tokens), and a GPT-2 of 1 x 8. HF's layout throughout: Conv1D weights (in, out),
GPT2Config, tokenizer.json or vocab.json + merges.txt.

Checks: a snapshot imports, with or without the "transformer." prefix, and runs (tokenize, generate,
eval's bits per byte, info); its logits match numpy's float64 GPT-2 forward from HF's layout within
1e-4; and each bad input of issue 35 gets one line, exit 1, and nothing written: a tokenizer.json of
another kind (WordPiece, Unigram, SentencePiece-style BPE), missing merges (none, a cut merges.txt,
no merges.txt), a merge naming an unknown token, a pair listed twice, a vocabulary larger than the
embedding, a config whose activation is not GPT-2's or whose n_positions does not match wpe.

    /usr/bin/python3 tests/hf_gpt2_test.py [NORMLAB_BINARY]      (make test runs it)
"""
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
os.environ["NORMLAB_BIN"] = BIN
TOOL = os.path.join(ROOT, "tools", "interop", "import_hf_gpt2.py")
LOGIT_ATOL = 1e-4
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless  # noqa: E402

skip_unless("hf_gpt2_test", "numpy")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
import gpt2bpe  # noqa: E402
import nlformat  # noqa: E402

check = Checks("hf_gpt2_test")
ALPHABET = gpt2bpe.byte_alphabet()
MERGES = ["\u0120 t", "h e", "\u0120t he"]
SHAPE = dict(n_layer=1, n_head=2, n_embd=8, n_positions=16)


def vocab():
    v = {ALPHABET[b]: i for i, b in enumerate(sorted(ALPHABET))}
    for m in MERGES:
        v[m.replace(" ", "")] = len(v)
    v["<|endoftext|>"] = len(v)
    return v


def hf_tokenizer(model_type="BPE", merges=None, pre="ByteLevel", **model):
    v = vocab()
    return {"version": "1.0", "added_tokens": [{"id": v["<|endoftext|>"], "content": "<|endoftext|>", "special": True}],
            "normalizer": None, "pre_tokenizer": {"type": pre, "add_prefix_space": False, "use_regex": True},
            "decoder": {"type": "ByteLevel"},
            "model": {"type": model_type, "vocab": v, "merges": MERGES if merges is None else merges, **model}}


def weights(rng, V=260, T=16):
    D, L = SHAPE["n_embd"], SHAPE["n_layer"]
    w = {"wte.weight": rng.standard_normal((V, D)) * 0.5, "wpe.weight": rng.standard_normal((T, D)) * 0.1,
         "ln_f.weight": 1 + rng.standard_normal(D) * 0.1, "ln_f.bias": rng.standard_normal(D) * 0.1}
    for i in range(L):
        p = f"h.{i}."
        for name, shape in (("ln_1.weight", (D,)), ("ln_1.bias", (D,)), ("attn.c_attn.weight", (D, 3 * D)),
                            ("attn.c_attn.bias", (3 * D,)), ("attn.c_proj.weight", (D, D)), ("attn.c_proj.bias", (D,)),
                            ("ln_2.weight", (D,)), ("ln_2.bias", (D,)), ("mlp.c_fc.weight", (D, 4 * D)),
                            ("mlp.c_fc.bias", (4 * D,)), ("mlp.c_proj.weight", (4 * D, D)), ("mlp.c_proj.bias", (D,))):
            w[p + name] = (1.0 if name.startswith("ln_") and name.endswith("weight") else 0.0) + \
                rng.standard_normal(shape) * 0.3
    return {k: v.astype(np.float32) for k, v in w.items()}


def snapshot(folder, st, config=None, tokenizer=None, pair=None, prefix=""):
    os.makedirs(folder)
    cfg = {"model_type": "gpt2", "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "vocab_size": 260,
           "n_inner": None, **SHAPE, **(config or {})}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    tensors = {prefix + k: v for k, v in st.items()}
    if prefix:  # a GPT2LMHeadModel's names, with the mask buffers old checkpoints carry and the tied head
        T = SHAPE["n_positions"]
        for i in range(SHAPE["n_layer"]):
            tensors[f"{prefix}h.{i}.attn.bias"] = np.tril(np.ones((T, T), np.float32)).reshape(1, 1, T, T)
            tensors[f"{prefix}h.{i}.attn.masked_bias"] = np.full((), -1e4, np.float32)
        tensors["lm_head.weight"] = st["wte.weight"]
    nlformat.write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    if pair is not None:
        for name, text in pair.items():
            with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                f.write(text)
    else:
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer or hf_tokenizer(), f, ensure_ascii=False)
    return folder


def reference(st, ids):
    """GPT-2's forward in float64 from HF's layout (x @ W + b, gelu_new): (T, V)."""
    t = {k: v.astype(np.float64) for k, v in st.items()}
    H, D, n = SHAPE["n_head"], SHAPE["n_embd"], len(ids)

    def ln(x, p):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * t[p + ".weight"] + t[p + ".bias"]
    x = t["wte.weight"][ids] + t["wpe.weight"][:n]
    for i in range(SHAPE["n_layer"]):
        p = f"h.{i}."
        q, k, v = np.split(ln(x, p + "ln_1") @ t[p + "attn.c_attn.weight"] + t[p + "attn.c_attn.bias"], 3, axis=1)
        y = np.zeros_like(x)
        for h in range(H):
            s = slice(h * D // H, (h + 1) * D // H)
            a = q[:, s] @ k[:, s].T / math.sqrt(D // H) + np.triu(np.full((n, n), -np.inf), 1)
            a = np.exp(a - a.max(1, keepdims=True))
            y[:, s] = (a / a.sum(1, keepdims=True)) @ v[:, s]
        x = x + y @ t[p + "attn.c_proj.weight"] + t[p + "attn.c_proj.bias"]
        u = ln(x, p + "ln_2") @ t[p + "mlp.c_fc.weight"] + t[p + "mlp.c_fc.bias"]
        u = 0.5 * u * (1 + np.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u ** 3)))
        x = x + u @ t[p + "mlp.c_proj.weight"] + t[p + "mlp.c_proj.bias"]
    return ln(x, "ln_f") @ t["wte.weight"].T


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr.strip()


def imports(snap, out):
    return run("/usr/bin/python3", TOOL, snap, "--out", out)


def good_paths(tmp, rng):
    st = weights(rng)
    text = " the theme the\nthe"
    pair = {"vocab.json": json.dumps(vocab(), ensure_ascii=False),
            "merges.txt": "#version: 0.2\n" + "\n".join(MERGES) + "\n"}
    for label, kw in (("tokenizer.json, no prefix", {}),
                      ("transformer. prefix, mask buffers, saved head", {"prefix": "transformer."}),
                      ("vocab.json + merges.txt", {"pair": pair})):
        out = os.path.join(tmp, "m-" + str(len(os.listdir(tmp))))
        rc, _, err = imports(snapshot(out + "-hf", st, **kw), out)
        check(rc == 0, f"{label}: imports", err)
        rc, js, err = run(BIN, "tokenize", "-m", out, "-p", text, "--json")
        ids = json.loads(js)["ids"] if rc == 0 else []
        theme = [vocab()[t] for t in ("\u0120the", "\u0120the", "m", "e", "\u0120the", "\u010a", "t", "he")]
        check(ids == theme, f"{label}: tokenize: merges by rank (' theme' as ' the' m e, 'the' after a newline t he)",
              f"{ids} {err}")
        rc, out_text, err = run(BIN, "logits", "-m", out, "-p", text)
        got = np.array([json.loads(line) for line in out_text.splitlines()]) if rc == 0 else np.zeros(1)
        diff = np.abs(got - reference(st, theme)).max() if got.shape == (len(theme), 260) else math.inf
        check(diff <= LOGIT_ATOL, f"{label}: logits within {LOGIT_ATOL:g} of numpy's float64 GPT-2 (max {diff:.2g})",
              err)
    rc, info, err = run(BIN, "info", "-m", out, "--json")
    j = json.loads(info) if rc == 0 else {}
    check(j.get("tokenizer") == "bpe" and j.get("tokenizer_size") == 260 and j.get("activation") == "gelu_tanh",
          "info: tokenizer bpe of 260 tokens, gelu_tanh", str(j)[:300])
    rc, gen, err = run(BIN, "generate", "-m", out, "-p", " the", "-n", "12", "--seed", "7")
    again = run(BIN, "generate", "-m", out, "-p", " the", "-n", "12", "--seed", "7")[1]
    check(rc == 0 and gen == again and gen.startswith(" the") and len(gen.encode()) >= 4 + 12 and
          "12 new tokens" in err, "generate: seeded, reproducible, 12 new tokens", err)
    # A byte-level model emits characters in parts: the stream holds a part back until the character is
    # whole, and writes what stays invalid as U+FFFD, so it is valid UTF-8 and equals the JSON text (which
    # is repaired whole, by the same rule); and it holds a character made of two tokens.
    r = subprocess.run([BIN, "generate", "-m", out, "-p", "x", "-n", "400", "--seed", "3", "--temp", "1.5"],
                       capture_output=True, timeout=120)
    js = run(BIN, "generate", "-m", out, "-p", "x", "-n", "400", "--seed", "3", "--temp", "1.5", "--json")[1]
    try:
        streamed = r.stdout.decode("utf-8")
    except UnicodeDecodeError as e:
        streamed = f"not UTF-8: {e}"
    whole = json.loads(js)["prompt"] + json.loads(js)["text"] if js.startswith("{") else ""
    split = any(ord(c) > 0x7F and c != "\ufffd" for c in streamed)
    check(r.returncode == 0 and streamed == whole and split,
          "generate streams valid UTF-8, equal to --json's text, characters made of several tokens kept whole",
          f"{streamed[:80]!r} vs {whole[:80]!r}")
    rc, both, err = run(BIN, "generate", "-m", out, "-m", "shakespeare-pre-ln", "-p", "the", "-n", "8", "--seed", "2")
    check(rc == 0 and both.count("=== ") == 2 and "(layernorm/pre) ===" in both and "8 new tokens" in err and
          "8 new characters" in err, "generate: a BPE model beside a character model, each counted in its own units",
          err)
    with open(os.path.join(tmp, "text.txt"), "w") as f:
        f.write(text * 3)
    lab(out, os.path.join(tmp, "text.txt"))
    rc, ev, err = run(BIN, "eval", "-m", out, "-f", os.path.join(tmp, "text.txt"), "--json")
    e = json.loads(ev) if rc == 0 else {}
    per_byte = e.get("bits_per_token", 0) * e.get("tokens", 0) / max(e.get("bytes", 1), 1)
    check(rc == 0 and e.get("bytes") == len((text * 3).encode()) - len(" the") and
          abs(e.get("bits_per_byte", 0) - per_byte) < 1e-6 and "tokens" in e,
          "eval: tokens, bytes (those after the first token) and bits/byte = bits/token x tokens / bytes", ev + err)


def lab(model, text):
    """The lab on a BPE model, beside a character model: lens, outliers, a q8 row, a --norm override."""
    rc, out, err = run(BIN, "compare", model, "shakespeare-pre-ln", "-f", text, "--lens", "--outliers",
                       "--quantize", "q8", "--repeats", "1", "--json")
    rows = json.loads(out) if rc == 0 else []
    bpe = [r for r in rows if r.get("tokenizer") == "bpe"]
    char = [r for r in rows if r.get("tokenizer") == "char"]
    per_byte = all(abs(r["bits_per_byte"] - r["bits_per_char"] * r["chars"] / r["bytes"]) < 1e-9 for r in rows)
    check(len(bpe) == 2 and len(char) == 2 and per_byte and all(len(r["lens_bits_per_char"]) == 2 for r in bpe)
          and bpe[0]["bytes"] == char[0]["bytes"] - len(" the") + 1,
          "compare: a BPE and a character model with the lens, outliers and q8 rows; bits/byte from each one's "
          "own scored bytes", err[-300:])
    rc, text_out, err = run(BIN, "compare", model, "shakespeare-pre-ln", "-f", text, "--repeats", "1")
    check(rc == 0 and "bits/tok bits/byte" in text_out and "bytes scored" in text_out,
          "compare's table labels bits/tok and adds bits/byte beside a BPE model", text_out[:300] + err)
    rc, out, err = run(BIN, "eval", "-m", model, "-f", text, "--norm", "rmsnorm", "--json")
    check(rc == 0 and "rmsnorm" in err and json.loads(out)["tokens"] > 0, "eval --norm rmsnorm runs a BPE model", err)


def bad_inputs(tmp, rng):
    st = weights(rng)
    v = vocab()
    cases = [
        ("a WordPiece tokenizer.json", {"tokenizer": hf_tokenizer("WordPiece")}, "WordPiece"),
        ("a Unigram tokenizer.json", {"tokenizer": hf_tokenizer("Unigram")}, "Unigram"),
        ("a SentencePiece-style BPE", {"tokenizer": hf_tokenizer(pre="Metaspace", byte_fallback=True)},
         "SentencePiece"),
        ("no merges", {"tokenizer": hf_tokenizer(merges=[])}, "merges"),
        ("a cut merges list", {"tokenizer": hf_tokenizer(merges=MERGES[:2])}, "merges are missing"),
        ("a merge naming an unknown token", {"tokenizer": hf_tokenizer(merges=MERGES + ["\u0120 q9"])},
         "model.merges entry 4"),
        ("a pair listed twice", {"tokenizer": hf_tokenizer(merges=MERGES + ["h e"])}, "repeats the merge of rank 1"),
        ("vocab.json without merges.txt", {"pair": {"vocab.json": json.dumps(v)}}, "merges.txt"),
        ("a vocabulary larger than the embedding", {"config": {"vocab_size": 259}, "st": weights(rng, V=259)},
         "vocabulary sizes disagree"),
        ("activation_function swish", {"config": {"activation_function": "swish"}}, "activation_function"),
        ("n_positions 32 with a wpe of 16 rows", {"config": {"n_positions": 32}}, "wpe"),
    ]
    for label, kw, word in cases:
        snap = os.path.join(tmp, "bad-" + str(len(os.listdir(tmp))))
        out = snap + "-out"
        snapshot(snap, kw.pop("st", st), **kw)
        rc, _, err = imports(snap, out)
        check(rc == 1 and err.count("\n") == 0 and word in err and "Traceback" not in err and not os.path.exists(out),
              f"{label}: one line naming it, exit 1, nothing written", f"exit {rc}: {err[-300:]}")


def main():
    rng = np.random.default_rng(35)
    with tempfile.TemporaryDirectory() as tmp:
        good_paths(tmp, rng)
        bad_inputs(tmp, rng)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
