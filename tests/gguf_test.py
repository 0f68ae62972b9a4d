#!/usr/bin/python3
"""`-m FILE.gguf` (engine/gguf.c, engine/gguf_model.c) on GGUF files of random Llama snapshots, written
by tools/dev/make_gguf.py as llama.cpp's converter lays them out (keys, tensor names, q/k rows in
interleaved pairs, SentencePiece tokens with scores and types).

Checks: for F32, F16, BF16, Q8_0 and Q4_0, the GGUF model's logits equal (max |diff| 0, the same bits)
those of the same snapshot imported from Hugging Face (tools/interop/import_hf.py) and, for the
16-bit and block types, then stored by `normlab quantize --type T`: the reader takes ggml's blocks as
normlab's own; F32 within 1e-5 of the HF import (the issue's bound; measured 0). The ids of the
held-out text equal the HF import's. A tied head (no output tensor), GQA and a head_dim other than
D / H read right. Byte-level BPEs (tokenizer.ggml.model gpt2) under the pre-tokenizers gpt-2, smollm,
llama-bpe and qwen2 give the ids of the same tokenizer.json imported from HF (held-out text, digits,
chat tokens with --special). qwen2, qwen3, olmo2, gemma, gemma2 and gemma3 files, whose q and k rows are in HF's
rotate_half order, give the HF import's logits (F32 within 1e-5, Q8_0 equal to quantize's), as do
phi2 files (q, k, v separate or as the older fused attn_qkv) and gptneox files (partial rotary; GPT-NeoX's
per-head fused qkv; parallel and sequential) and a
gpt2 file (learned positions, its byte-level BPE). Q4_1, Q5_0,
Q5_1 and Q2_K to Q6_K matrices of random blocks, widened at load, give the logits of an F32 file of
tools/lib/qformats.py's dequantize_ggml values, bit for bit. eval --chunk N's losses are those of
a float64 forward of llama-perplexity's chunks (the bos first, the first half unscored). A
byte-level BPE with add_bos_token (Llama 3's) puts its bos first. Every command runs on an F32 GGUF
(tests/parallel_import_test.py's commands(); fold and quantize refuse it in one line, asking for a
model folder). Each hostile file gets one line naming the problem and
exit 1: bad magic, version 1, big-endian, counts and lengths past the end, an array of arrays, 5 dims,
a dims product that overflows, an offset misaligned, past the end or overlapping, an unknown type
id, an IQ type and Q8_1 (refused by name), Q6_K and Q3_K rows not whole super-blocks, a key or tensor name
twice, a required key missing, a key of the wrong type, a shape the config disagrees with, an unknown
architecture, a truncated file, an unknown or missing pre-tokenizer, a BPE that adds a BOS it lacks.

    /usr/bin/python3 tests/gguf_test.py [NORMLAB_BINARY]      (make test runs it)
"""
import collections
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless  # noqa: E402

skip_unless("gguf_test", "numpy")
import numpy as np  # noqa: E402

for d in ("lib", "dev", "reference"):
    sys.path.insert(0, os.path.join(ROOT, "tools", d))
import ggufwrite  # noqa: E402
import gpt2bpe  # noqa: E402
import hf_gpt2_test  # noqa: E402
import llama_reference  # noqa: E402
import make_bpe_tokenizers  # noqa: E402
import make_gguf  # noqa: E402
import make_llama_snapshot as mk  # noqa: E402
import make_parallel_snapshot as parallel_snapshot  # noqa: E402
import qformats  # noqa: E402
import parallel_import_test as commands_of  # noqa: E402  (its commands(): one check a command)

check = commands_of.check = Checks("gguf_test")
# the importer, the held-out text, the prompt, and running the engine (rc, stdout, stderr) and its
# logits (None on a failure): the parallel families' test's
HF, TEXT, PROMPT, engine, logits = (commands_of.HF, commands_of.TEXT, commands_of.PROMPT, commands_of.engine,
                                    commands_of.logits)


def ids(model):
    with open(TEXT) as f:
        text = f.read()[:3000]
    rc, out, _ = engine("tokenize", "-m", model, "-p", text, "--json")
    return json.loads(out)["ids"] if rc == 0 else None


def diff(a, b):
    return float(np.abs(a - b).max()) if a is not None and b is not None and a.shape == b.shape else float("inf")


def types(tmp):
    snap = os.path.join(tmp, "snap")
    mk.make(snap, seed=5)
    hf = os.path.join(tmp, "hf-import")
    r = subprocess.run(["/usr/bin/python3", HF, os.path.join(snap, "hf"), "--out", hf], capture_output=True, text=True)
    check(r.returncode == 0, "the snapshot imports from Hugging Face", r.stderr)
    base = logits(hf)
    for kind in ("f32", "f16", "bf16", "q8_0", "q4_0"):
        g = os.path.join(tmp, f"m-{kind}.gguf")
        with open(g, "wb") as f:
            f.write(ggufwrite.gguf_bytes(*make_gguf.convert(snap, qformats.NAMES[kind])))
        if kind == "f32":
            d = diff(logits(g), base)
            check(d <= 1e-5, f"F32 GGUF: logits within 1e-5 of the HF import's (max diff {d:.1e})")
            check(ids(g) == ids(hf) and ids(g), "F32 GGUF: the held-out text's ids equal the HF import's")
            continue
        q = os.path.join(tmp, f"hq-{kind}")
        rc, _, err = engine("quantize", "-m", hf, "-o", q, "--type", kind)
        d = diff(logits(g), logits(q))
        check(rc == 0 and d == 0, f"{kind} GGUF: logits equal quantize --type {kind}'s of the HF import (max diff "
              f"{d:.1e}): ggml's blocks read as normlab's", err)
    return os.path.join(tmp, "m-f32.gguf")


def shapes(tmp):
    for label, kw in (("a tied head (no output tensor), MQA 4/1", dict(tied=True, kv_heads=1)),
                      ("head_dim 32 over D 64 (key_length), GQA 4/2", dict(head_dim=32, kv_heads=2, qk_norm=False))):
        snap = os.path.join(tmp, "snap-" + str(len(os.listdir(tmp))))
        mk.make(snap, seed=7, **kw)
        hf, g = snap + "-hf", snap + ".gguf"
        subprocess.run(["/usr/bin/python3", HF, os.path.join(snap, "hf"), "--out", hf], capture_output=True)
        with open(g, "wb") as f:
            f.write(ggufwrite.gguf_bytes(*make_gguf.convert(snap, "F32")))
        d = diff(logits(g), logits(hf))
        check(d <= 1e-5, f"{label}: the GGUF's logits within 1e-5 of the HF import's ({d:.1e})")


def arches(tmp):
    """qwen2 (q/k/v biases), qwen3 (per-head QK-norm, head_dim 32 over D 64), olmo2 (post-sublayer,
    QK-norm over the projection), gemma2 (the sandwich, soft-caps, a window of 5 on layers 0 and 2 of
    3), gemma3 (per-head (1 + w) QK-norm, a window of 5 and a local RoPE base on every other layer of 4)
    and gemma ((1 + w) norms as stored, sqrt(D) embeddings, GeGLU, MQA, Dh 32 over D 64), whose q and
    k rows, biases and QK-norm gains a GGUF keeps in HF's rotate_half order: the reader re-pairs them,
    so the logits are the HF import's (F32 within 1e-5; Q8_0 equal to quantize's of the import)."""
    for arch, kw in (("qwen2", dict(attn_bias=True)), ("qwen3", dict(family="qwen3", head_dim=32)),
                     ("olmo2", dict(family="olmo2")),
                     ("gemma", dict(family="gemma", tied=True, kv_heads=1, head_dim=32)),
                     ("gemma2", dict(family="gemma2", tied=True, head_dim=32, layers=3, sliding_window=5)),
                     ("gemma3", dict(family="gemma3", tied=True, kv_heads=1, head_dim=32, layers=4, sliding_window=5))):
        snap = os.path.join(tmp, "arch-" + arch)
        mk.make(snap, seed=13, **kw)
        if arch in ("gemma2", "gemma3"):  # llama.cpp scales their scores by 1/sqrt(Dh): HF's the same where
            edit = os.path.join(snap, "hf", "config.json")  # query_pre_attn_scalar is Dh
            with open(edit) as f:
                doc = json.load(f)
            with open(edit, "w") as f:
                json.dump({**doc, "query_pre_attn_scalar": doc["head_dim"]}, f)
        against_import(arch, snap, ("F32", "Q8_0"), lambda kind: make_gguf.convert(snap, kind, arch=arch))


def against_import(label, snap, kinds, convert, prompt=PROMPT):
    """The snapshot's HF import against its GGUF of each kind (convert(kind) -> (kvs, tensors)): F32's
    logits within 1e-5, another type's equal to those of the import stored as that type by quantize."""
    hf = snap + "-hf"
    r = subprocess.run(["/usr/bin/python3", HF, os.path.join(snap, "hf"), "--out", hf], capture_output=True, text=True)
    for kind in kinds:
        g = f"{snap}-{kind}.gguf"
        with open(g, "wb") as f:
            f.write(ggufwrite.gguf_bytes(*convert(kind)))
        want = logits(hf, prompt)
        if kind != "F32":
            engine("quantize", "-m", hf, "-o", f"{hf}-{kind}", "--type", kind.lower())
            want = logits(f"{hf}-{kind}", prompt)
        d = diff(logits(g, prompt), want)
        check(r.returncode == 0 and d <= (1e-5 if kind == "F32" else 0),
              f"GGUF arch {label}, {kind}: logits {'within 1e-5 of' if kind == 'F32' else 'equal to'} the HF "
              f"import's{'' if kind == 'F32' else ' quantized'} (max diff {d:.1e})", r.stderr)


def widened_types(tmp):
    """Q4_1, Q5_0, Q5_1 and Q2_K to Q6_K matrices of random blocks (any bytes are a block; its float16
    scales finite): the engine widens them to the float32 values tools/lib/qformats.py's transcription of
    ggml's dequantize_row_* gives, bit for bit: the logits equal those of an F32 GGUF of those values."""
    snap = os.path.join(tmp, "kq")
    mk.make(snap, seed=17, dim=256, hidden=256, layers=2, heads=4, kv_heads=2)
    kvs, tensors = make_gguf.convert(snap, "F32")
    rng = np.random.default_rng(5)
    kinds = list(qformats.GGML_BLOCKS)
    quant, widened, used = {}, {}, []
    for name, (kind, shape, data) in tensors.items():
        if len(shape) != 2:
            quant[name] = widened[name] = (kind, shape, data)
            continue
        kq = kinds[len(used) % len(kinds)]
        used.append(kq)
        weights, nbytes, scales = qformats.GGML_BLOCKS[kq]
        b = rng.integers(0, 256, (shape[0] * shape[1] // weights, nbytes), dtype=np.uint8)
        for at in scales:
            b[:, at:at + 2] = rng.uniform(1e-4, 5e-4, (len(b), 1)).astype("<f2").view(np.uint8)
        quant[name] = (kq, shape, b.tobytes())
        widened[name] = ("F32", shape, qformats.dequantize_ggml(b, kq, shape).astype("<f4").tobytes())
    paths = [os.path.join(tmp, f"kq-{n}.gguf") for n in ("k", "f32")]
    for path, t in zip(paths, (quant, widened)):
        with open(path, "wb") as f:
            f.write(ggufwrite.gguf_bytes(kvs, t))
    a, b = logits(paths[0]), logits(paths[1])
    d = diff(a, b)
    check(d == 0 and a is not None and np.isfinite(a).all() and set(used) == set(kinds),
          f"{', '.join(kinds)}: the engine's widened weights are qformats.py's transcription of ggml's, bit for "
          f"bit (logits' max diff {d:.1e}; {len(used)} matrices)")


def nll_of_chunks(snap, ids, N, bos):
    """llama-perplexity -c N's losses, in float64 (tools/reference/llama_reference.py's forward): chunk k
    is ids[kN, kN + N) with bos (None: the text's own) in its first place, scored on its targets past
    N/2."""
    losses = []
    for k in range(len(ids) // N):
        chunk = list(ids[k * N:(k + 1) * N])
        chunk[0] = chunk[0] if bos is None else bos
        z = llama_reference.logits(snap, chunk)  # (N, V)
        lse = z.max(axis=1) + np.log(np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1))
        losses += [lse[i] - z[i, chunk[i + 1]] for i in range(N // 2, N - 1)]
    return np.array(losses)


def perplexity_chunks(tmp, good):
    """eval --chunk N scores as llama-perplexity -c N: its losses are those of a float64 forward of
    each chunk with the bos in its first place (the first N/2 targets unscored), per token within 1e-4
    (float32 logits against float64) and their mean within 1e-5; a forward that kept the text's token
    there is farther off. The text result ends with llama-perplexity's line. Misuses are refused."""
    N = 32
    snap = llama_reference.Snapshot(os.path.join(tmp, "snap", "hf"))
    text = os.path.join(tmp, "chunk-text.txt")
    with open(TEXT) as f, open(text, "w") as out:
        out.write(f.read()[:1500])
    with open(text) as f:
        rc, out, _ = engine("tokenize", "-m", good, "-p", f.read(), "--json")
    toks = json.loads(out)["ids"] if rc == 0 else []
    bos = toks[0] if toks else None
    want, kept = nll_of_chunks(snap, toks, N, bos), nll_of_chunks(snap, toks, N, None)
    per_token = os.path.join(tmp, "chunk.json")
    rc, _, err = engine("eval", "-m", good, "-f", text, "--chunk", str(N), "--json", "-o", per_token)
    with open(per_token) as f:
        got = json.load(f) if rc == 0 else {}
    nll = np.array(got.get("token_nll", []))
    d = float(np.abs(nll - want).max()) if nll.shape == want.shape else float("inf")
    dm = abs(got.get("nats_per_token", 0) - want.mean())
    check(len(toks) >= 2 * N and got.get("tokens") == len(want) == (len(toks) // N) * (N - 1 - N // 2) and
          got.get("chunk") == N and d <= 1e-4 and dm <= 1e-5 < abs(kept.mean() - want.mean()),
          f"eval --chunk {N}: {len(want)} tokens of {len(toks) // N} chunks, each loss within 1e-4 of the float64 "
          f"reference's with the bos first ({d:.1e}), their mean within 1e-5 ({dm:.1e}; keeping the text's token "
          f"would be {abs(kept.mean() - want.mean()):.1e} off)", err)
    rc, out, _ = engine("eval", "-m", good, "-f", text, "--chunk", str(N))
    ppl, se = math.exp(want.mean()), math.exp(want.mean()) * want.std() / math.sqrt(len(want) - 1)
    line = out.strip().splitlines()[-1] if out.strip() else ""
    m = re.fullmatch(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", line)
    check(rc == 0 and m is not None and abs(float(m.group(1)) - ppl) <= 1e-4 * ppl + 5e-5 and
          abs(float(m.group(2)) - se) <= 1e-3 * se + 5e-6,
          f"eval --chunk {N}'s last line is llama-perplexity's, its PPL {ppl:.4f} +/- {se:.5f} (float64, its rule)",
          line)
    short = os.path.join(tmp, "short-text.txt")
    with open(short, "w") as f:
        f.write(open(TEXT).read()[:100])
    for label, model, path, args, word in (
            ("--chunk with --stride", good, text, ("--chunk", "32", "--stride", "8"), "not with --stride"),
            ("--chunk with --lens", good, text, ("--chunk", "32", "--lens"), "not with --lens"),
            ("--chunk with --kl-base", good, text, ("--chunk", "32", "--kl-base", short + ".kl"), "not with --kl-base"),
            ("--chunk past the context", good, text, ("--chunk", "65"), "larger than the model's context"),
            ("--chunk 2", good, text, ("--chunk", "2"), "[3, 65536]"),
            ("a text shorter than 2 chunks", good, short, ("--chunk", "64"), "chunks of 64 need 128 (two"),
            ("--chunk on a recurrent model", "shakespeare-lstm", text, ("--chunk", "8"), "applies to transformers")):
        rc, out, err = engine("eval", "-m", model, "-f", path, *args)
        check(rc in (1, 2) and word in err and err.count("\n") <= 1 and not out,
              f"eval {label}: refused in one line naming it", err[-300:])


def parallel_arches(tmp):
    """phi2 (one LayerNorm, partial rotary 0.4 of Dh 20, biased head) and gptneox (per-head fused qkv,
    rotary 0.25; parallel and sequential), NEOX order over the turned dims only: the logits equal the HF
    import's (F32 within 1e-5; Q8_0 equal to quantize's of the import)."""
    for label, arch, kw, fused in (("phi2", "phi2", dict(family="phi", dim=80), False),
                                   ("phi2 with the older fused attn_qkv", "phi2", dict(family="phi", dim=80), True),
                                   ("gptneox", "gptneox", dict(family="gpt_neox"), False),
                                   ("gptneox sequential", "gptneox", dict(family="gpt_neox", sequential=True), False)):
        snap = os.path.join(tmp, "par-" + label.replace(" ", "-"))
        parallel_snapshot.make(snap, seed=19, **kw)
        kinds = ("F32", "Q8_0") if kw.get("dim", 64) % 32 == 0 else ("F32",)
        against_import(label, snap, kinds, lambda kind: make_gguf.convert_parallel(snap, kind, arch, fused))


def gpt2(tmp):
    """gpt2 (learned positions, LayerNorm, fused q, k, v rows, its byte-level BPE with pre-tokenizer
    gpt-2, an output.weight copy of token_embd), as tests/hf_gpt2_test.py's random snapshot: the HF
    import's logits (F32 within 1e-5; Q8_0 equal to quantize's) and ids."""
    snap = os.path.join(tmp, "gpt2")
    hf_gpt2_test.snapshot(os.path.join(snap, "hf"), hf_gpt2_test.weights(np.random.default_rng(21)))
    kinds = ("F32", "Q8_0") if hf_gpt2_test.SHAPE["n_embd"] % 32 == 0 else ("F32",)
    text = "the king, thou"  # (within its 16 positions)
    against_import("gpt2", snap, kinds, lambda kind: make_gguf.convert_gpt2(os.path.join(snap, "hf"), kind), text)
    got = [engine("tokenize", "-m", m, "-p", text, "--json")[1] for m in (snap + "-F32.gguf", snap + "-hf")]
    check(got[0] == got[1] and json.loads(got[0])["ids"], "GGUF arch gpt2: its byte-level BPE gives the HF "
          "import's ids", got[0][:200])


def small_bpe(size, text):
    """A GPT-2-form byte-level BPE tokenizer.json of size tokens: the 256 bytes, merges learnt on text
    (the most frequent pair of each word's symbols, GPT-2's words), "<|endoftext|>" last."""
    alphabet = gpt2bpe.byte_alphabet()
    words = [[alphabet[b] for b in w.encode()] for w in re.findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+", text)]
    vocab, merges = {alphabet[b]: i for i, b in enumerate(sorted(alphabet))}, []
    while len(vocab) < size - 1:
        pairs = collections.Counter((a, b) for w in words for a, b in zip(w, w[1:]))
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append(f"{a} {b}")
        vocab[a + b] = len(vocab)
        for w in words:
            i = 0
            while i < len(w) - 1:
                w[i:i + 2] = [a + b] if (w[i], w[i + 1]) == (a, b) else w[i:i + 2]
                i += 1
    vocab["<|endoftext|>"] = len(vocab)
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {"version": "1.0", "added_tokens": [{"id": len(vocab) - 1, "content": "<|endoftext|>", "special": True,
                                                "normalized": False}],
            "normalizer": None, "pre_tokenizer": level, "decoder": level,
            "model": {"type": "BPE", "vocab": vocab, "merges": merges}}


def bpe_tokenizers(tmp):
    """Byte-level BPEs (tokenizer.ggml.model gpt2) by their pre-tokenizer's name: the ids of the
    held-out text and of chat tokens equal those of the same tokenizer.json imported from HF."""
    with open(TEXT) as f:
        text = f.read()
    probe = text[:2000] + " 12345 <|endoftext|> <|im_start|>user\nhi<|im_end|> <think>x</think> 2026"
    for layout, pre, size in ((None, "gpt-2", 320), ("smollm2", "smollm", 318), ("llama3", "llama-bpe", 316),
                              ("qwen2", "qwen2", 315)):
        base = small_bpe(size, text[:20000] + " 12345 2026 1234" * 200)  # (merges of digits: the split matters)
        tokenizer = make_bpe_tokenizers.family_tokenizer(base, layout) if layout else base
        snap = os.path.join(tmp, f"bpe-{pre}")
        mk.make(snap, seed=11)
        with open(os.path.join(snap, "hf", "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer, f, ensure_ascii=False)
        hf, g = snap + "-hf", snap + ".gguf"
        r = subprocess.run(["/usr/bin/python3", HF, os.path.join(snap, "hf"), "--out", hf], capture_output=True,
                           text=True)
        with open(g, "wb") as f:
            f.write(ggufwrite.gguf_bytes(*make_gguf.convert(snap, "F32", (tokenizer, pre))))
        got = [engine("tokenize", "-m", m, "-p", probe, "--json", "--special")[1] for m in (g, hf)]
        same = r.returncode == 0 and got[0] == got[1] and len(json.loads(got[0])["ids"]) > 100
        check(same, f"a byte-level BPE, pre-tokenizer {pre}: the ids equal the HF import's", r.stderr + got[0][:200])
        d = diff(logits(g), logits(hf))
        check(d <= 1e-5, f"a byte-level BPE, pre-tokenizer {pre}: logits within 1e-5 of the HF import's ({d:.1e})")
        if pre == "llama-bpe":
            bpe_bos(snap, tokenizer, pre, json.loads(got[1])["ids"] if same else None, probe)


def bpe_bos(snap, tokenizer, pre, want, probe):
    """Llama 3's GGUF: add_bos_token true, bos_token_id <|begin_of_text|>. Its ids are the HF import's
    after the bos (without it with --no-bos); the echo and bits/byte leave it out, and an empty prompt
    is the bos alone."""
    kvs, tensors = make_gguf.convert(snap, "F32", (tokenizer, pre))
    bos = next(t["id"] for t in tokenizer["added_tokens"] if t["content"] == "<|begin_of_text|>")
    g = snap + "-bos.gguf"
    with open(g, "wb") as f:
        f.write(ggufwrite.gguf_bytes({**kvs, "tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.bos_token_id": bos},
                                     tensors))
    got = [engine("tokenize", "-m", g, "-p", probe, "--json", "--special", *flag)[1] for flag in ((), ("--no-bos",))]
    ids = [json.loads(o)["ids"] if o else None for o in got]
    check(want is not None and ids[0] == [bos] + want and ids[1] == want,
          f"a byte-level BPE with add_bos_token: the bos ({bos}) first, then the HF import's ids; none with --no-bos")
    rc, out, _ = engine("generate", "-m", g, "-p", "Hello", "-n", "3", "--seed", "1", "--temp", "0")
    empty = engine("tokenize", "-m", g, "-p", "", "--json")[1]
    check(rc == 0 and out.startswith("Hello") and "begin_of_text" not in out and
          json.loads(empty or "{}").get("ids") == [bos],
          "a byte-level BPE with add_bos_token: the echo leaves the bos out; an empty prompt is the bos alone", out)
    with open(TEXT) as f:
        text = f.read()[:600]
    path = snap + "-bos.txt"
    with open(path, "w") as f:
        f.write(text)
    evals = [engine("eval", "-m", m, "-f", path, "--json")[1] for m in (g, snap + ".gguf")]
    e = [json.loads(o) if o else {} for o in evals]
    check(e[0].get("bytes") == len(text.encode()) and e[0].get("tokens", 0) == e[1].get("tokens", -1) + 1,
          "a byte-level BPE with add_bos_token: eval scores every token of the text after the bos, its first "
          "included (all its bytes, one token more than without the bos)", str(e))


def tensor_info(name, dims, type_id, offset):
    return (ggufwrite.string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
            + struct.pack("<IQ", type_id, offset))


def raw(infos, kv=b"", n_kv=0, data=b"\0" * 64, version=3):
    """A GGUF of tensor infos given as bytes, aligned to 32, then data."""
    head = b"GGUF" + struct.pack("<IQQ", version, len(infos), n_kv) + kv + b"".join(infos)
    return head + b"\0" * (-len(head) % 32) + data


def hostile(tmp, good):
    with open(good, "rb") as f:
        ok = f.read()
    kvs, tensors = make_gguf.convert(os.path.join(tmp, "snap"), "F32")
    f32 = ggufwrite.TYPE_IDS["F32"]

    def without(key):
        return ggufwrite.gguf_bytes({k: v for k, v in kvs.items() if k != key}, tensors)
    with open(TEXT) as f:
        bpe = ggufwrite.bpe_keys(small_bpe(300, f.read()[:5000]), "gpt-2")
    gpt2 = {**{k: v for k, v in kvs.items() if not k.startswith("tokenizer.")}, **bpe}
    cases = [
        ("bad magic", b"GGUX" + ok[4:], "not a GGUF file"),
        ("version 1", ok[:4] + struct.pack("<I", 1) + ok[8:], "GGUF version 1"),
        ("a big-endian file", ok[:4] + struct.pack(">I", 3) + ok[8:], "big-endian"),
        ("a key count past the end", ok[:16] + struct.pack("<Q", 1 << 60) + ok[24:], "run past the end"),
        ("a tensor count past the end", ok[:8] + struct.pack("<Q", 1 << 62) + ok[16:], "run past the end"),
        ("a string length past the end", ok[:24] + struct.pack("<Q", 1 << 63) + ok[32:], "runs past the end"),
        ("an array of arrays", raw([], ggufwrite.string("a.b") + struct.pack("<IIQ", 9, 9, 1), 1), "array of arrays"),
        ("5 dims", raw([tensor_info("t", [1, 1, 1, 1, 1], f32, 0)]), "has over 4 dims"),
        ("a dims product that overflows", raw([tensor_info("t", [1 << 40, 1 << 40], f32, 0)]), "overflows"),
        ("an offset misaligned", raw([tensor_info("t", [4], f32, 4)]), "not a multiple of general.alignment"),
        ("an offset past the end", raw([tensor_info("t", [4], f32, 1 << 20)]), "runs past the end"),
        ("two tensors overlapping", raw([tensor_info("t", [8], f32, 0), tensor_info("u", [8], f32, 0)]), "overlap"),
        ("an unknown type id", raw([tensor_info("t", [32], 99, 0)]), "unknown type id"),
        ("an IQ type", raw([tensor_info("t", [256], 16, 0)]), "type IQ2_XXS, which normlab does not read"),
        ("Q8_1 (for activations)", raw([tensor_info("t", [32], 9, 0)]), "type Q8_1, which normlab does not read"),
        ("a Q3_K row not whole super-blocks", raw([tensor_info("t", [96], 11, 0)]), "not whole Q3_K blocks of 256"),
        ("a Q6_K row not whole super-blocks", raw([tensor_info("t", [128], 14, 0)]), "not whole Q6_K blocks of 256"),
        ("a row not whole blocks", raw([tensor_info("t", [40], 8, 0)]), "not whole Q8_0 blocks"),
        ("a key twice", ggufwrite.gguf_bytes(list(kvs.items()) + [("llama.block_count", 2)], tensors), "appears twice"),
        ("a tensor name twice", ggufwrite.gguf_bytes(kvs, list(tensors.items()) + [("output_norm.weight",
                                                                                     tensors["output_norm.weight"])]),
         "appears twice"),
        ("llama.block_count missing", without("llama.block_count"), "lacks the key llama.block_count"),
        ("llama.block_count a string", ggufwrite.gguf_bytes({**kvs, "llama.block_count": "two"}, tensors),
         "llama.block_count is not an integer"),
        ("feed_forward_length disagreeing with the tensors",
         ggufwrite.gguf_bytes({**kvs, "llama.feed_forward_length": 100}, tensors), "shape"),
        ("an unknown architecture", ggufwrite.gguf_bytes({**kvs, "general.architecture": "mamba"}, tensors),
         "general.architecture is \"mamba\""),
        ("a tensor no llama has",
         ggufwrite.gguf_bytes(kvs, {**tensors, "rope_freqs.weight": tensors["output_norm.weight"]}),
         "rope_freqs.weight is not one of"),
        ("a truncated file", ok[:len(ok) // 2], "runs past the end"),
        ("an unknown pre-tokenizer", ggufwrite.gguf_bytes({**gpt2, "tokenizer.ggml.pre": "deepseek-llm"}, tensors),
         "tokenizer.ggml.pre is \"deepseek-llm\": not a pre-tokenizer normlab runs"),
        ("no pre-tokenizer (never guessed)",
         ggufwrite.gguf_bytes({k: v for k, v in gpt2.items() if k != "tokenizer.ggml.pre"}, tensors),
         "lacks the string key tokenizer.ggml.pre"),
        ("a BPE that adds a BOS it lacks", ggufwrite.gguf_bytes({**gpt2, "tokenizer.ggml.add_bos_token": True},
                                                                 tensors), "there is no bos_token_id"),
    ]
    for label, data, word in cases:
        path = os.path.join(tmp, "bad.gguf")
        with open(path, "wb") as f:
            f.write(data)
        rc, out, err = engine("info", "-m", path)
        check(rc == 1 and word in err and err.count("\n") == 0 and not out, f"{label}: one line naming it, exit 1",
              f"exit {rc}: {err[-300:]}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        good = types(tmp)
        os.makedirs(os.path.join(tmp, "shapes"))
        shapes(os.path.join(tmp, "shapes"))
        bpe_tokenizers(tmp)
        arches(tmp)
        widened_types(tmp)
        parallel_arches(tmp)
        gpt2(tmp)
        perplexity_chunks(tmp, good)
        commands_of.commands("F32 GGUF", good, tmp, logits(good), fold=False)
        hostile(tmp, good)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
