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
embedding, a config whose activation is not GPT-2's or whose n_positions does not match wpe, each
naming the snapshot's file and never --out's. Issue 46: an embedding padded past the tokenizer
(cropped) and an added token outside model.vocab (kept) import with the right logits; --out's
missing parents are made (and removed when the import fails); the files get the mode open() gives
(umask 027: 0640), gpt2_vocab.py's too; a cut model.safetensors is named with the loader's reason;
and a 72 MB snapshot imports within 1.6x its size + 64 MB of peak memory (it took 5.5x). F16 and BF16
snapshots keep their weight matrices as stored (wpe, biases and LayerNorm F32), --dtype f32 widens
them, and the logits are within 1e-4 of the float64 forward of the stored values.

    /usr/bin/python3 tests/hf_gpt2_test.py [NORMLAB_BINARY]      (make test runs it)
"""
import base64
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
os.environ["NORMLAB_BIN"] = BIN
TOOL = os.path.join(ROOT, "tools", "interop", "import_hf_gpt2.py")
VOCAB_TOOL = os.path.join(ROOT, "tools", "interop", "gpt2_vocab.py")
LOGIT_ATOL = 1e-4
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless  # noqa: E402

skip_unless("hf_gpt2_test", "numpy")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
import gpt2bpe  # noqa: E402
import hfweights  # noqa: E402
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


def snapshot(folder, st, config=None, tokenizer=None, pair=None, prefix="", dtype="F32"):
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
    if dtype == "F32":
        nlformat.write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    else:
        hfweights.write_safetensors(os.path.join(folder, "model.safetensors"), tensors, dtype)
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
    check(rc == 0 and "bits/tok bits/byte    tokens     bytes" in text_out and "what each row scored" in text_out,
          "compare's table labels bits/tok and adds bits/byte, tokens and bytes beside a BPE model",
          text_out[:300] + err)
    rc, out, err = run(BIN, "eval", "-m", model, "-f", text, "--norm", "rmsnorm", "--json")
    check(rc == 0 and "rmsnorm" in err and json.loads(out)["tokens"] > 0, "eval --norm rmsnorm runs a BPE model", err)


def logits_match(label, out, st, text, ids, V):
    """normlab's logits for text against the float64 reference's first V columns."""
    rc, out_text, err = run(BIN, "logits", "-m", out, "-p", text)
    got = np.array([json.loads(line) for line in out_text.splitlines()]) if rc == 0 else np.zeros(1)
    diff = np.abs(got - reference(st, ids)[:, :V]).max() if got.shape == (len(ids), V) else math.inf
    check(diff <= LOGIT_ATOL, f"{label}: logits over its {V} tokens within {LOGIT_ATOL:g} of the reference "
          f"(max {diff:.2g})", f"{got.shape} {err}")


def stored_types(tmp, rng):
    """F16 and BF16 snapshots keep their weight matrices (wte, the Conv1D weights) as stored; wpe, the
    biases and LayerNorm's parameters become F32; --dtype f32 widens them all; the engine's logits are
    within LOGIT_ATOL of the float64 reference of the stored values either way."""
    st = weights(rng)
    text = " the theme the\nthe"
    ids = [vocab()[t] for t in ("\u0120the", "\u0120the", "m", "e", "\u0120the", "\u010a", "t", "he")]
    for dtype in ("F16", "BF16"):
        stored = {k: hfweights.rounded(v, dtype) for k, v in st.items()}
        snap = snapshot(os.path.join(tmp, f"stored-{dtype}-hf"), st, dtype=dtype)
        for flag, want in ((None, dtype), ("f32", "F32")):
            out = os.path.join(tmp, f"stored-{dtype}-{flag}")
            rc, _, err = run("/usr/bin/python3", TOOL, snap, "--out", out, *(["--dtype", flag] if flag else []))
            raw = nlformat.read_safetensors_raw(os.path.join(out, "model.safetensors"))[0] if rc == 0 else {}
            matrices = ("wte.weight", "attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight",
                        "mlp.c_proj.weight")
            ok = rc == 0 and all(kind == (want if n.endswith(matrices) else "F32") for n, (kind, _, _) in raw.items())
            label = f"a {dtype} snapshot" + (f", --dtype {flag}" if flag else "")
            check(ok, f"{label}: matrices stored {want}, wpe, biases and LayerNorm F32",
                  err or str({n: k for n, (k, _, _) in raw.items()}))
            if rc == 0:
                logits_match(label, out, stored, text, ids, 260)


def vocab_shapes(tmp, rng):
    """What HF runs and normlab now imports: an embedding padded past the tokenizer (rows no token has,
    cropped), and an added token outside model.vocab (kept as a token, its row kept)."""
    text, ids = " the theme", [vocab()[t] for t in ("\u0120the", "\u0120the", "m", "e")]
    st = weights(rng, V=280)
    out = os.path.join(tmp, "padded")
    rc, _, err = imports(snapshot(out + "-hf", st, config={"vocab_size": 280}), out)
    info = json.loads(run(BIN, "info", "-m", out, "--json")[1] or "{}") if rc == 0 else {}
    check(rc == 0 and "20 padding rows dropped" in err and info.get("vocab_size") == 260 and
          info.get("tokenizer_size") == 260, "an embedding padded to 280 rows past 260 tokens: imported, the 20 "
          "padding rows cropped", err)
    if rc == 0:
        logits_match("padded embedding", out, st, text, ids, 260)
    tok = hf_tokenizer()
    tok["added_tokens"].append({"id": 260, "content": "<|pad|>", "special": True})
    st = weights(rng, V=261)
    out = os.path.join(tmp, "added")
    rc, _, err = imports(snapshot(out + "-hf", st, config={"vocab_size": 261}, tokenizer=tok), out)
    info = json.loads(run(BIN, "info", "-m", out, "--json")[1] or "{}") if rc == 0 else {}
    check(rc == 0 and info.get("vocab_size") == 261 and info.get("tokenizer_size") == 261,
          "an added token outside model.vocab (<|pad|>, id 260) and 261 rows: imported, 261 tokens", err)
    if rc == 0:
        logits_match("added token", out, st, text, ids, 261)
        written = json.load(open(os.path.join(out, "tokenizer.json"), encoding="utf-8"))
        check(written["model"]["vocab"].get("<|pad|>") == 260 and written["added_tokens"][-1]["content"] == "<|pad|>",
              "the added token is in the written model.vocab under its id, and still an added token",
              str(written["added_tokens"]))
    tok["added_tokens"][-1]["content"] = "<pad> x"
    snap = snapshot(os.path.join(tmp, "added-space-hf"), st, config={"vocab_size": 261}, tokenizer=tok)
    rc, _, err = imports(snap, os.path.join(tmp, "added-space"))
    check(rc == 1 and "'<pad> x'" in err and snap + "/tokenizer.json" in err and
          not os.path.exists(os.path.join(tmp, "added-space")),
          "an added token normlab cannot spell (a space in it) is refused by name, nothing written", err)


def parents_and_modes(tmp, rng):
    """--out's missing parents are made (as save_pretrained does), and removed again when the import
    fails; the files get the mode open() gives (0o666 less the umask), the folder 0o777 less it."""
    st = weights(rng)
    snap = snapshot(os.path.join(tmp, "parents-hf"), st)
    out = os.path.join(tmp, "made", "deeper", "model")
    r = subprocess.run(["/usr/bin/python3", TOOL, snap, "--out", out], capture_output=True, text=True, umask=0o027)
    modes = {n: os.stat(os.path.join(out, n)).st_mode & 0o777 for n in os.listdir(out)} if r.returncode == 0 else {}
    check(r.returncode == 0 and modes == {"config.json": 0o640, "tokenizer.json": 0o640, "model.safetensors": 0o640},
          "--out in two missing folders: made; under umask 027 the files are 0640", f"{modes} {r.stderr[-200:]}")
    check(r.returncode == 0 and os.stat(out).st_mode & 0o777 == 0o750, "and the model folder 0750",
          oct(os.stat(out).st_mode) if os.path.exists(out) else r.stderr[-200:])
    bad = snapshot(os.path.join(tmp, "parents-bad-hf"), st, config={"n_positions": 32})
    rc, _, err = imports(bad, os.path.join(tmp, "unmade", "deeper", "model"))
    check(rc == 1 and not os.path.exists(os.path.join(tmp, "unmade")),
          "a refused import leaves none of the missing parents it made", err)
    ranks = os.path.join(tmp, "ranks.tiktoken")
    with open(ranks, "w") as f:  # the 256 bytes, then "th" and "the" (tiktoken's "BASE64 RANK" lines)
        for r, t in enumerate([bytes([b]) for b in range(256)] + [b"th", b"the"]):
            f.write(base64.b64encode(t).decode() + f" {r}\n")
    for flag in ([], ["--hf"]):
        vocab_out = os.path.join(tmp, "vocab" + "".join(flag))
        r = subprocess.run(["/usr/bin/python3", VOCAB_TOOL, ranks, "--out", vocab_out, *flag], capture_output=True,
                           text=True, umask=0o027)
        modes = {n: os.stat(os.path.join(vocab_out, n)).st_mode & 0o777 for n in os.listdir(vocab_out)} \
            if r.returncode == 0 else {}
        check(modes and set(modes.values()) == {0o640}, f"gpt2_vocab.py {' '.join(flag)}: under umask 027 its files "
              "are 0640, as open() makes them", f"{modes} {r.stderr[-200:]}")


def truncated(tmp, rng):
    """A cut model.safetensors (a partial download) is named, with the engine loader's reason."""
    st = weights(rng)
    for label, keep, words in (("its data", -100, "is past the data section"), ("its header", 40, "header length")):
        snap = snapshot(os.path.join(tmp, "cut-" + label.split()[-1] + "-hf"), st)
        path = os.path.join(snap, "model.safetensors")
        data = open(path, "rb").read()
        open(path, "wb").write(data[:keep] if keep > 0 else data[:len(data) + keep])
        out = os.path.join(tmp, "cut-" + label.split()[-1])
        rc, _, err = imports(snap, out)
        check(rc == 1 and f"{path}:" in err and words in err and "truncated" in err and err.count("\n") == 0 and
              not os.path.exists(out), f"model.safetensors cut inside {label}: '{words}', naming the file", err)


def peak_memory(tmp, rng):
    """The importer streams: it reads and writes one tensor at a time, so its peak (and normlab info's,
    which checks the written model) stays near the snapshot's size, not 4x it as it was."""
    D, L = 256, 24
    st = {"wte.weight": rng.standard_normal((260, D), np.float32),
          "wpe.weight": rng.standard_normal((16, D), np.float32),
          "ln_f.weight": np.ones(D, np.float32), "ln_f.bias": np.zeros(D, np.float32)}
    for i in range(L):
        for name, shape in (("ln_1.weight", (D,)), ("ln_1.bias", (D,)), ("attn.c_attn.weight", (D, 3 * D)),
                            ("attn.c_attn.bias", (3 * D,)), ("attn.c_proj.weight", (D, D)), ("attn.c_proj.bias", (D,)),
                            ("ln_2.weight", (D,)), ("ln_2.bias", (D,)), ("mlp.c_fc.weight", (D, 4 * D)),
                            ("mlp.c_fc.bias", (4 * D,)), ("mlp.c_proj.weight", (4 * D, D)), ("mlp.c_proj.bias", (D,))):
            st[f"h.{i}.{name}"] = (rng.standard_normal(shape, np.float32) * 0.02 + name.endswith("ln_1.weight")
                                   + name.endswith("ln_2.weight")).astype(np.float32)
    snap = snapshot(os.path.join(tmp, "big-hf"), st, config={"n_layer": L, "n_embd": D, "n_head": 4})
    size = os.path.getsize(os.path.join(snap, "model.safetensors"))
    measure = "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); " \
              "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    rc, out, err = run("/usr/bin/python3", "-c", measure, "/usr/bin/python3", TOOL, snap, "--out",
                       os.path.join(tmp, "big"))
    status, peak_kb = (int(x) for x in out.split()) if rc == 0 else (rc, 0)
    bound = 1.6 * size + (64 << 20)
    check(status == 0 and 0 < peak_kb * 1024 <= bound, f"a {size >> 20} MB snapshot imports with a peak of "
          f"{peak_kb >> 10} MB (importer or normlab info; at most 1.6x + 64 MB)", err[-300:])
    shutil.rmtree(snap)
    shutil.rmtree(os.path.join(tmp, "big"), ignore_errors=True)


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
        n = str(len(os.listdir(tmp)))
        snap, out = os.path.join(tmp, "bad-" + n), os.path.join(tmp, "written-" + n)
        snapshot(snap, kw.pop("st", st), **kw)
        rc, _, err = imports(snap, out)
        check(rc == 1 and err.count("\n") == 0 and word in err and "Traceback" not in err and not os.path.exists(out),
              f"{label}: one line naming it, exit 1, nothing written", f"exit {rc}: {err[-300:]}")
        check((snap + "/" in err or snap + ":" in err) and out not in err and ".new" not in err,
              f"{label}: the error names the snapshot's file, not one in --out (never written)", err[-300:])


def main():
    rng = np.random.default_rng(35)
    with tempfile.TemporaryDirectory() as tmp:
        good_paths(tmp, rng)
        stored_types(tmp, rng)
        vocab_shapes(tmp, rng)
        parents_and_modes(tmp, rng)
        truncated(tmp, rng)
        bad_inputs(tmp, rng)
        peak_memory(tmp, rng)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
