#!/usr/bin/python3
"""tools/interop/import_hf.py (Llama, Qwen2, Qwen3, OLMo 2; GPT-2 dispatched to import_hf_gpt2.py) and
tools/interop/import_llama2c.py on random models of tools/dev/make_llama_snapshot.py, numpy only.

Checks: each HF snapshot (GQA, MHA, MQA; F32, BF16, F16; one file or shards; with and without
"model."; tied and untied; QK-norm; Qwen2's qkv bias; Qwen3's head_dim other than D/H; OLMo 2's
post-sublayer block and QK-norm over the projection) imports, and a float64 forward written here
on normlab's layout (fused c_attn and c_fc, RoPE on interleaved pairs) gives the logits of
tools/reference/llama_reference.py's forward on HF's layout (rotate_half) to 1e-9: the importer's
un-permute is exact. llama2.c's legacy .bin and v1 export of the same weights import to tensors
bit-identical to the snapshot's; a .bin built here, by hand from run.c's and export.py's orders, with
each block a distinct constant, lands every block in its place; tokenizer.bin becomes the
sentencepiece tokenizer.json (spaces as U+2581, "\\n<s>\\n" as "<s>"). F16 and BF16 matrices are kept
as stored (--dtype chooses), and the engine's logits (normlab logits) are within llama_parity's 1e-4 of the
float64 reference; --ctx caps the context; Mistral's and Gemma's windows (v7); MistralForCausalLM imports as
Llama while its window covers the context; tokenizer.model and pytorch_model.bin are read; docs/llama.md's examples run.
Each bad input docs/interop.md lists gets one line, exit 1, nothing written, its input untouched.

The engine's loader checks what an importer writes (nltool.check_model), and the engine's own logits
are checked here once a case and by tools/reference/llama_parity.py (make parity) over more prompts.

    /usr/bin/python3 tests/llama_import_test.py [NORMLAB_BINARY]      (make test runs it)
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless, snapshot  # noqa: E402

skip_unless("llama_import_test", "numpy")
import numpy as np  # noqa: E402

for d in ("lib", "dev", "reference"):
    sys.path.insert(0, os.path.join(ROOT, "tools", d))
import hfweights  # noqa: E402
import llama_reference  # noqa: E402
import spmjson  # noqa: E402
from llama_parity import LOGIT_ATOL  # noqa: E402
import make_llama_snapshot as mk  # noqa: E402
import nlformat  # noqa: E402

check = Checks("llama_import_test")
HF, L2C = (os.path.join(ROOT, "tools", "interop", n) for n in ("import_hf.py", "import_llama2c.py"))
ENV = {**os.environ, "NORMLAB_BIN": BIN}
EXACT = 1e-9


def run(tool, *args):
    r = subprocess.run(["/usr/bin/python3", tool, *args], capture_output=True, text=True, timeout=300, env=ENV)
    return r.returncode, r.stderr.strip()


def normlab_forward(config, t, ids):
    """arch llama's forward (docs/format.md) in float64 on normlab's tensors: written apart from the
    reference, on the interleaved RoPE pairs, fused qkv and gate/up rows; head_dim where given, QK-norm
    per head or over the projection, placement pre, post-sublayer (OLMo 2's) or peri (Gemma 2's
    sandwich), the scores' scale and the soft-caps of scores and logits (Gemma 2's), the windows (v7)."""
    t = {k: v.astype(np.float64) for k, v in t.items()}
    D, H, KVH, F = config["n_embd"], config["n_head"], config["n_kv_head"], config["n_inner"]
    Dh, eps, n = config.get("head_dim", D // H), config["norm_eps"], len(ids)
    sublayer, peri = config["placement"] == "post-sublayer", config["placement"] == "peri"
    scale, cap, final_cap = config.get("attn_scale", 1 / math.sqrt(Dh)), config.get("attn_softcap"), \
        config.get("final_softcap")
    W, every = config.get("sliding_window", 0), config.get("sliding_window_pattern", 0)

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g

    def rope(x, theta):  # (n, heads, Dh): pairs (2i, 2i+1) by angle pos * theta^(-2i/Dh)
        ang = np.outer(np.arange(n), theta ** (-np.arange(0, Dh, 2) / Dh))[:, None, :]
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)
        return out
    x = t["wte.weight"][ids] * config.get("embed_scale", 1.0)
    gelu_tanh = config.get("activation") == "gelu_tanh"  # Gemma's GeGLU, else SwiGLU

    def act(g):
        return 0.5 * g * (1 + np.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g ** 3))) if gelu_tanh else \
            g / (1 + np.exp(-g))
    for i in range(config["n_layer"]):
        p = f"h.{i}."
        h_in = x if sublayer else rms(x, t[p + "ln_1.weight"])
        qkv = h_in @ t[p + "attn.c_attn.weight"].T + t.get(p + "attn.c_attn.bias", 0)
        q, k, v = qkv[:, :H * Dh], qkv[:, H * Dh:(H + KVH) * Dh], qkv[:, (H + KVH) * Dh:]
        if config["qk_norm"] == "projection":
            q, k = rms(q, t[p + "attn.q_norm.weight"]), rms(k, t[p + "attn.k_norm.weight"])
        q, k, v = q.reshape(n, H, Dh), k.reshape(n, KVH, Dh), v.reshape(n, KVH, Dh)
        if config["qk_norm"] is True:
            q, k = rms(q, t[p + "attn.q_norm.weight"]), rms(k, t[p + "attn.k_norm.weight"])
        local = W and not (every and (i + 1) % every == 0)  # a local layer: its last W keys, its own base
        theta = config.get("rope_local_theta", config["rope_theta"]) if local else config["rope_theta"]
        q, k = rope(q, theta), rope(k, theta)
        seen = np.tri(n, dtype=bool) & ~np.tri(n, k=-W if local else -n, dtype=bool)  # key j: i - W < j <= i
        y = np.zeros((n, H * Dh))
        for h in range(H):
            kv = h // (H // KVH)
            s = q[:, h] @ k[:, kv].T * scale
            s = np.tanh(s / cap) * cap if cap else s
            s = np.where(seen, s, -np.inf)
            s = np.exp(s - s.max(1, keepdims=True))
            y[:, h * Dh:(h + 1) * Dh] = s / s.sum(1, keepdims=True) @ v[:, kv]
        y = y @ t[p + "attn.c_proj.weight"].T
        x = x + (rms(y, t[p + "ln_1_post.weight"]) if sublayer or peri else y)
        u = (x if sublayer else rms(x, t[p + "ln_2.weight"])) @ t[p + "mlp.c_fc.weight"].T
        g, up = u[:, :F], u[:, F:]
        y = (act(g) * up) @ t[p + "mlp.c_proj.weight"].T
        x = x + (rms(y, t[p + "ln_2_post.weight"]) if sublayer or peri else y)
    head = t["wte.weight"] if config["tie_embeddings"] else t["lm_head.weight"]
    out = rms(x, t["ln_f.weight"]) @ head.T
    return np.tanh(out / final_cap) * final_cap if final_cap else out


def logits_text(model, *flags):
    return subprocess.run([BIN, "logits", "-m", model, "-p", PROMPT, *flags], capture_output=True, text=True).stdout


def check_profile_costs(label, model, s):
    """The profiler's FLOPs of layer 0's attention rows where head_dim sets the heads' width: q is H Dh
    wide, not D (cost.h's rules: 2 n in out a product; 4 H Dh + 4 H per unmasked query-key pair)."""
    r = subprocess.run([BIN, "profile", "-m", model, "-p", PROMPT, "-n", "0", "--json"], capture_output=True,
                       text=True)
    prefill = json.loads(r.stdout)["phases"][0] if r.returncode == 0 else {"rows": [], "tokens": 0}
    got = {row["component"]: row["flops"] for row in prefill["rows"] if row["layer"] == 0}
    n, D, H, KVH, Dh = prefill["tokens"], s["dim"], s["heads"], s["kv_heads"], s["head_dim"]
    pairs = sum(min(p + 1, s.get("sliding_window") or n) for p in range(n))  # (layer 0 is local where windowed)
    want = {"qkv": 2 * n * D * (H + 2 * KVH) * Dh, "attn_proj": 2 * n * H * Dh * D,
            "attention": 4 * pairs * H * Dh + 4 * pairs * H}
    check(n > 1 and all(got.get(k) == v for k, v in want.items()),
          f"{label}: profile counts layer 0's qkv, attention and attn_proj FLOPs over H Dh ({n} tokens: {want})",
          f"{got}")


def read_model(out):
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    return config, nlformat.read_safetensors(os.path.join(out, "model.safetensors"))[0]


MATRICES = ("wte.weight", "lm_head.weight", "attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight",
            "mlp.c_proj.weight")
PROMPT = "the king my lord thou art what shall I say to thee Romeo"


def stored_types(out):
    """name -> the dtype model.safetensors stores it as, in the file's order."""
    raw = nlformat.read_safetensors_raw(os.path.join(out, "model.safetensors"))[0]
    return {n: kind for n, (kind, _, _) in raw.items()}


def types_are(out, matrix_type):
    """Whether every weight matrix of out is stored as matrix_type and every other tensor as F32."""
    return all(kind == (matrix_type if n.endswith(MATRICES) else "F32") for n, kind in stored_types(out).items())


def engine_logit_diff(model, hf):
    """The largest |engine - float64 reference| logit over PROMPT (the ids the engine's tokenizer gives)."""
    ids = json.loads(subprocess.run([BIN, "tokenize", "-m", model, "-p", PROMPT, "--json"], capture_output=True,
                                    text=True).stdout)["ids"]
    r = subprocess.run([BIN, "logits", "-m", model, "-p", PROMPT], capture_output=True, text=True)
    got = np.array([json.loads(line) for line in r.stdout.splitlines()])
    want = llama_reference.logits(llama_reference.Snapshot(hf), ids)
    return float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")


CASES = [
    ("GQA 4/2, F32, untied, 3 shards", dict(heads=4, kv_heads=2, shards=3)),
    ("MHA 4/4, BF16, tied", dict(heads=4, kv_heads=4, dtype="BF16", tied=True)),
    ("MQA 4/1, F16, no model. prefix", dict(heads=4, kv_heads=1, dtype="F16", prefix=False)),
    ("QK-norm (self_attn.q_norm/k_norm), GQA 8/2, BF16", dict(heads=8, kv_heads=2, dtype="BF16", qk_norm=True)),
    ("Qwen2 qkv bias, GQA 4/2, tied", dict(heads=4, kv_heads=2, attn_bias=True, tied=True)),
    ("SmolLM2-135M's GQA 9 over 3 (D 72), tied", dict(dim=72, heads=9, kv_heads=3, tied=True)),
    ("Qwen3 (Qwen3ForCausalLM), head_dim 32 over D 64 (H Dh = 2D), GQA 4/2, 2 shards",
     dict(heads=4, kv_heads=2, head_dim=32, family="qwen3", shards=2)),
    ("OLMo 2 (Olmo2ForCausalLM), post-sublayer, QK-norm over the projection, GQA 4/2, BF16",
     dict(heads=4, kv_heads=2, family="olmo2", dtype="BF16")),
    ("Gemma (GemmaForCausalLM), MQA 4 over 1, head_dim 32 over D 80, (1 + w) norms, GeGLU, tied, BF16",
     dict(dim=80, heads=4, kv_heads=1, head_dim=32, family="gemma", tied=True, dtype="BF16")),
    ("Gemma 2 (Gemma2ForCausalLM), sandwich norms, query_pre_attn_scalar, soft-capped scores and logits, GQA 4/2",
     dict(dim=80, heads=4, kv_heads=2, head_dim=32, family="gemma2", tied=True)),
    ("Gemma 3 (Gemma3ForCausalLM), (1 + w) QK-norm per head, window 5 and RoPE base 100 on layers 0 and 2 of 4",
     dict(dim=80, heads=4, kv_heads=1, head_dim=32, family="gemma3", tied=True, layers=4, sliding_window=5)),
]


def good_paths(tmp):
    ids = [1, 70, 300, 5, 260, 261, 319, 2, 100]
    for k, (label, kw) in enumerate(CASES):
        folder = os.path.join(tmp, f"good{k}")
        s, _ = mk.make(folder, seed=k, **kw)
        before = snapshot(folder)
        out = os.path.join(tmp, f"good{k}-out")
        rc, err = run(HF, os.path.join(folder, "hf"), "--out", out)
        check(rc == 0, f"{label}: imports", err)
        if rc != 0:
            continue
        config, t = read_model(out)
        olmo2, gemma, gemma3 = s["family"] == "olmo2", s["family"].startswith("gemma"), s["family"] == "gemma3"
        own_width = s["head_dim"] != s["dim"] // s["heads"] or gemma
        want = {"arch": "llama", "n_head": s["heads"], "n_kv_head": s["kv_heads"], "tie_embeddings": s["tied"],
                "qk_norm": "projection" if olmo2 else s["qk_norm"], "attn_bias": s["attn_bias"],
                "placement": "post-sublayer" if olmo2 else "peri" if s["family"] in ("gemma2", "gemma3") else "pre",
                "head_dim": s["head_dim"] if own_width else None, "sliding_window": 5 if gemma3 else None,
                "format": {"name": "normlab", "version": 7 if gemma3 else 6 if olmo2 or own_width else 4},
                "embed_scale": math.sqrt(s["dim"]) if gemma else None,
                "final_softcap": mk.GEMMA2["final_logit_softcapping"] if s["family"] == "gemma2" else None}
        check(all(config.get(key) == v for key, v in want.items()), f"{label}: config.json", str(config))
        ref = llama_reference.logits(llama_reference.Snapshot(os.path.join(folder, "hf")), ids)
        diff = np.abs(normlab_forward(config, t, ids) - ref).max()
        check(diff <= EXACT, f"{label}: normlab's layout gives HF's float64 logits (max diff {diff:.1e}, "
              f"logit std {ref.std(1).mean():.1f})", f"{diff}")
        with open(os.path.join(out, "model.safetensors"), "rb") as f:
            start = 8 + struct.unpack("<Q", f.read(8))[0]
        check(start % 64 == 0, f"{label}: the tensors start on a cache line (byte {start})")
        kept = s["dtype"] if s["dtype"] in ("F16", "BF16") else "F32"
        check(types_are(out, kept), f"{label}: the matrices are stored {kept}, as the snapshot stores them; norms "
              "and biases F32", str(stored_types(out)))
        diff = engine_logit_diff(out, os.path.join(folder, "hf"))
        check(diff <= LOGIT_ATOL, f"{label}: the engine's logits match the float64 reference within {LOGIT_ATOL:g} "
              f"(llama_parity's tolerance; max diff {diff:.1e})", f"{diff}")
        check(snapshot(folder) == before, f"{label}: the snapshot is untouched")
        if s["qk_norm"]:
            check(logits_text(out, "--qk-norm", "on") == logits_text(out), f"{label}: --qk-norm on runs the model's "
                  "own QK-norm (its kind, per head or over the projection), the logits as configured to the byte")
        if own_width:
            check_profile_costs(label, out, s)
        l2c = os.path.join(folder, "llama2c")
        if not os.path.isdir(l2c):
            continue
        for name in ("model.bin", "model-v1.bin"):
            o = os.path.join(tmp, f"good{k}-{name}")
            rc, err = run(L2C, os.path.join(l2c, name), "--out", o)
            got = read_model(o) if rc == 0 else (None, {})
            same = rc == 0 and sorted(got[1]) == sorted(t) and all(np.array_equal(got[1][n], t[n]) for n in t)
            check(same and got[0] == config, f"{label}: llama2.c {name} of the same weights imports bit-identical "
                  "to the snapshot (no permute: already interleaved)", err)
        if k == 0:
            tokenizer_json(os.path.join(tmp, "good0-model.bin"), s["vocab"])


def tokenizer_json(out, V):
    with open(os.path.join(out, "tokenizer.json"), encoding="utf-8") as f:
        doc = json.load(f)
    pieces = [p for p, _ in mk.pieces(V)]
    check(doc.get("type") == "sentencepiece" and [p for p, _ in doc["pieces"]] == pieces
          and (doc["unk_id"], doc["bos_id"], doc["eos_id"]) == (0, 1, 2) and doc["byte_fallback"] is True,
          "tokenizer.bin -> sentencepiece JSON: pieces in id order, <s>/</s> mapped back, spaces as U+2581",
          str(doc)[:200])
    scores = [s for _, s in doc["pieces"]]
    check(scores[:300] == [s for _, s in mk.bin_tokens(mk.pieces(V))][:300] and min(scores) < 0,
          "tokenizer.bin -> sentencepiece JSON: each piece keeps its score")


def hand_made_bin(tmp):
    """A .bin written here from run.c's memory_map_weights order (legacy) and export.py's version1_export
    order (v1), every block filled with its own constant, so a block read in the wrong place shows."""
    D, F, L, H, KVH, V, T = 8, 12, 2, 2, 1, 310, 4
    Dh = D // H
    sizes = {"emb": V * D, "att": L * D, "wq": L * D * D, "wk": L * KVH * Dh * D, "wv": L * KVH * Dh * D,
             "wo": L * D * D, "ffn": L * D, "w1": L * F * D, "w2": L * D * F, "w3": L * F * D, "fin": D,
             "fr": T * Dh // 2, "fi": T * Dh // 2, "cls": V * D}
    value = {n: float(k + 1) for k, n in enumerate(sizes)}
    expect = {"wte.weight": "emb", "ln_f.weight": "fin", "lm_head.weight": "cls", "ln_1.weight": "att",
              "ln_2.weight": "ffn", "attn.c_proj.weight": "wo", "mlp.c_proj.weight": "w2"}
    tok = os.path.join(tmp, "hand-tokenizer.bin")
    from llama2c import write_tokenizer
    write_tokenizer(tok, mk.bin_tokens(mk.pieces(V)))
    for version, order, head in (
            (0, ["emb", "att", "wq", "wk", "wv", "wo", "ffn", "w1", "w2", "w3", "fin", "fr", "fi", "cls"],
             struct.pack("<7i", D, F, L, H, KVH, -V, T)),
            (1, ["att", "ffn", "fin", "emb", "wq", "wk", "wv", "wo", "w1", "w2", "w3", "cls"],
             struct.pack("<Ii7iB", 0x616B3432, 1, D, F, L, H, KVH, V, T, 0).ljust(256, b"\0"))):
        path = os.path.join(tmp, f"hand-v{version}.bin")
        with open(path, "wb") as f:
            f.write(head + b"".join(np.full(sizes[n], value[n], "<f4").tobytes() for n in order))
        out = path + ".out"
        rc, err = run(L2C, path, "--tokenizer", tok, "--out", out)
        ok = rc == 0
        if ok:
            config, t = read_model(out)
            for name, a in t.items():
                base = name.split(".", 2)[2] if name.startswith("h.") else name
                if base in expect:
                    ok &= bool(np.all(a == value[expect[base]]))
            c = t["h.1.attn.c_attn.weight"]
            ok &= bool(np.all(c[:D] == value["wq"]) and np.all(c[D:D + Dh] == value["wk"])
                       and np.all(c[D + Dh:] == value["wv"]))
            m = t["h.0.mlp.c_fc.weight"]
            ok &= bool(np.all(m[:F] == value["w1"]) and np.all(m[F:] == value["w3"]))
            ok &= config["tie_embeddings"] is False and config["block_size"] == T
        check(ok, f"a hand-made {'legacy' if version == 0 else 'v1'} .bin: every block where run.c/export.py put "
              "it (c_attn = wq|wk|wv, c_fc = w1|w3, freq_cis skipped, wcls the head)", err)


def dtypes(tmp):
    """--dtype: f32 widens (the old output), bf16 and f16 round; an F32 snapshot's default output is all
    F32 in the documented order; f16 refuses a value past its range."""
    folder = os.path.join(tmp, "dtypes")
    mk.make(folder, seed=7, dtype="BF16")
    hf = os.path.join(folder, "hf")
    for flag, kind in (("f32", "F32"), ("f16", "F16"), ("bf16", "BF16")):
        out = os.path.join(tmp, f"dtype-{flag}")
        rc, err = run(HF, hf, "--out", out, "--dtype", flag)
        ok = rc == 0 and types_are(out, kind)
        check(ok, f"--dtype {flag} of a BF16 snapshot: matrices stored {kind}", err)
        if ok:
            diff = engine_logit_diff(out, hf)  # (F16 holds BF16's 8-bit mantissas exactly above 2**-14)
            check(diff <= LOGIT_ATOL, f"--dtype {flag}: the engine's logits within {LOGIT_ATOL:g} of the float64 "
                  f"reference of the BF16 snapshot (max diff {diff:.1e})", f"{diff}")
    f32 = os.path.join(tmp, "dtypes32")
    mk.make(f32, seed=7)
    out = os.path.join(tmp, "dtype-default32")
    rc, err = run(HF, os.path.join(f32, "hf"), "--out", out)
    config = read_model(out)[0] if rc == 0 else None
    check(rc == 0 and list(stored_types(out)) == list(nlformat.llama_tensor_shapes(config)) and types_are(out, "F32"),
          "an F32 snapshot: every tensor F32, in llama_tensor_shapes' order (the output of before --dtype)", err)
    big = variant_with(tmp, "big", lambda st: st["model.layers.0.mlp.up_proj.weight"].__setitem__((1, 2), 1e5))
    refused("--dtype f16 of a weight past F16's 65504", HF, [big, "--dtype", "f16"], "beyond float16's largest",
            big + "-out", [big])


def variant_with(tmp, name, change, **kw):
    """A snapshot (make_llama_snapshot) whose HF state dict change(state) edits, rewritten in its dtype."""
    folder = os.path.join(tmp, name)
    s, m = mk.make(folder, seed=5, **kw)
    hf = os.path.join(folder, "hf")
    st = mk.hf_state(m, s)
    change(st)
    hfweights.write_safetensors(os.path.join(hf, "model.safetensors"), st, s["dtype"])
    return hf


def context_cap(tmp):
    """max_position_embeddings past the engine's 65536 imports capped, and says so; --ctx sets the cap."""
    folder = os.path.join(tmp, "long")
    mk.make(folder, seed=8)
    hf = os.path.join(folder, "hf")
    edit_json(os.path.join(hf, "config.json"), lambda d: d.update(max_position_embeddings=131072))
    out = os.path.join(tmp, "long-out")
    rc, err = run(HF, hf, "--out", out)
    check(rc == 0 and read_model(out)[0]["block_size"] == 65536 and "max_position_embeddings 131072 capped" in err,
          "max_position_embeddings 131072: imported with context 65536 (the engine's limit), and said", err)
    rc, err = run(HF, hf, "--out", out, "--ctx", "48")
    check(rc == 0 and read_model(out)[0]["block_size"] == 48, "--ctx 48: context 48", err)
    for bad in ("0", "65537", "x"):
        r = subprocess.run(["/usr/bin/python3", HF, hf, "--out", out + bad, "--ctx", bad], capture_output=True,
                           text=True)
        check(r.returncode == 2 and r.stderr.count("\n") == 1 and "--ctx" in r.stderr and not os.path.exists(out + bad),
              f"--ctx {bad}: a usage error in one line, exit 2", r.stderr)


def mistral(tmp):
    """MistralForCausalLM is Llama while its window covers the context (the same files as the Llama's); a
    shorter window is every layer's (v7), the logits the float64 reference's."""
    folder = os.path.join(tmp, "mistral")
    mk.make(folder, seed=9)
    hf = os.path.join(folder, "hf")
    llama = os.path.join(tmp, "mistral-as-llama")
    run(HF, hf, "--out", llama)
    for window in (None, 64, 4096):
        edit_json(os.path.join(hf, "config.json"), lambda d: d.update(
            architectures=["MistralForCausalLM"], model_type="mistral", sliding_window=window))
        out = os.path.join(tmp, f"mistral-{window}")
        rc, err = run(HF, hf, "--out", out)
        got, want = (read_model(o)[1] if rc == 0 else {} for o in (out, llama))
        same = rc == 0 and all(snapshot(os.path.join(out, n)) == snapshot(os.path.join(llama, n)) for n in (
            "config.json", "tokenizer.json")) and got.keys() == want.keys() and all(
            np.array_equal(got[n], want[n]) for n in want)
        check(same, f"MistralForCausalLM, sliding_window {window} of context 64: imports as the Llama of the same "
              "weights", err)
    edit_json(os.path.join(hf, "config.json"), lambda d: d.update(sliding_window=5))
    rc, err = run(HF, hf, "--out", os.path.join(tmp, "mistral-5"))
    cfg = read_model(os.path.join(tmp, "mistral-5"))[0] if rc == 0 else {}
    check(rc == 0 and (cfg.get("sliding_window"), cfg.get("sliding_window_pattern")) == (5, None) and
          engine_logit_diff(os.path.join(tmp, "mistral-5"), hf) <= LOGIT_ATOL, "MistralForCausalLM with "
          "sliding_window 5 < context 64: every layer's window, logits within 1e-4 of the reference's", err)
    rc, err = run(HF, hf, "--out", os.path.join(tmp, "mistral-ctx"), "--ctx", "5")
    check(rc == 0 and "sliding_window" not in read_model(os.path.join(tmp, "mistral-ctx"))[0],
          "MistralForCausalLM with sliding_window 5, --ctx 5: the window covers the context, none written", err)


def sentencepiece_model(tmp):
    """A snapshot with tokenizer.model and no tokenizer.json: the .model read (no sentencepiece needed),
    and the engine's ids those of the same pieces' tokenizer.json."""
    folder = os.path.join(tmp, "spm")
    s, _ = mk.make(folder, seed=10)
    hf = os.path.join(folder, "hf")
    json_out = os.path.join(tmp, "spm-json")
    run(HF, hf, "--out", json_out)
    os.remove(os.path.join(hf, "tokenizer.json"))
    refused("neither tokenizer.json nor tokenizer.model", HF, [hf], "has neither tokenizer.json nor tokenizer.model",
            hf + "-out", [hf])
    if not check.unless_missing("sentencepiece", what="tokenizer.model made by sentencepiece", count=4):
        return
    toks = mk.pieces(s["vocab"])
    rank = {p: i for i, (p, m) in enumerate([t for t in toks if t[1]])}
    form = {"type": "sentencepiece", "pieces": [[p, -float(rank[p]) if m else 0.0] for p, m in toks], "unk_id": 0,
            "bos_id": 1, "eos_id": 2, "add_bos": True, "add_dummy_prefix": True, "byte_fallback": True}
    proto = spmjson.to_model_proto(form)
    check(spmjson.read_model_proto(proto) == spmjson.from_model_proto(proto) == form,
          "tokenizer.model read without sentencepiece: the pieces, scores and ids sentencepiece reads")
    with open(os.path.join(hf, "tokenizer.model"), "wb") as f:
        f.write(proto)
    out = os.path.join(tmp, "spm-model")
    rc, err = run(HF, hf, "--out", out)
    texts = ["the king, my lord!", "  Romeo?  thou art\nwhat", "xq zz 'tis"]

    def ids(model, text):
        return subprocess.run([BIN, "tokenize", "-m", model, "-p", text, "--json"], capture_output=True,
                              text=True).stdout
    check(rc == 0 and all(ids(out, t) == ids(json_out, t) and ids(out, t) for t in texts),
          "a snapshot with tokenizer.model only: imports, and the engine's ids are those of its tokenizer.json", err)
    with open(os.path.join(hf, "tokenizer.model"), "wb") as f:
        f.write(b"IQ== 0\nIg== 1\n")  # tiktoken's form, as Llama 3 ships it
    refused("a tokenizer.model that is tiktoken's (Llama 3)", HF, [hf], "not a SentencePiece model", hf + "-out", [hf])
    from sentencepiece import sentencepiece_model_pb2 as pb
    unigram = pb.ModelProto()
    unigram.ParseFromString(proto)
    unigram.trainer_spec.model_type = pb.TrainerSpec.UNIGRAM
    with open(os.path.join(hf, "tokenizer.model"), "wb") as f:
        f.write(unigram.SerializeToString())
    refused("a unigram tokenizer.model", HF, [hf], "UNIGRAM", hf + "-out", [hf])


def pytorch_bin(tmp):
    """pytorch_model.bin (one file, or shards by its index), read through torchzip: BF16 kept; the same
    tensors as the safetensors snapshot's import; a pickle that names a function refused."""
    if not check.unless_missing("torch", what="pytorch_model.bin written by torch.save", count=3):
        return
    import torch
    folder = os.path.join(tmp, "pt")
    s, m = mk.make(folder, seed=11, dtype="BF16")
    hf = os.path.join(folder, "hf")
    want = os.path.join(tmp, "pt-safetensors")
    run(HF, hf, "--out", want)
    os.remove(os.path.join(hf, "model.safetensors"))
    st = {k: torch.from_numpy(np.ascontiguousarray(v)).to(torch.bfloat16) for k, v in mk.hf_state(m, s).items()}
    torch.save(st, os.path.join(hf, "pytorch_model.bin"))
    out = os.path.join(tmp, "pt-out")
    rc, err = run(HF, hf, "--out", out)
    same = rc == 0 and nlformat.read_safetensors_raw(os.path.join(out, "model.safetensors"))[0] == \
        nlformat.read_safetensors_raw(os.path.join(want, "model.safetensors"))[0]
    check(same, "a BF16 pytorch_model.bin: the tensors, stored BF16, of the safetensors snapshot's import", err)
    os.remove(os.path.join(hf, "pytorch_model.bin"))
    names, wmap = list(st), {}
    for k in range(2):
        file = f"pytorch_model-{k + 1:05d}-of-00002.bin"
        torch.save({n: st[n] for n in names[k::2]}, os.path.join(hf, file))
        wmap.update({n: file for n in names[k::2]})
    with open(os.path.join(hf, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"weight_map": wmap}, f)
    rc, err = run(HF, hf, "--out", out)
    same = rc == 0 and nlformat.read_safetensors_raw(os.path.join(out, "model.safetensors"))[0] == \
        nlformat.read_safetensors_raw(os.path.join(want, "model.safetensors"))[0]
    check(same, "pytorch_model.bin in 2 shards (pytorch_model.bin.index.json): the same tensors", err)
    evil = os.path.join(tmp, "pt-evil")
    os.makedirs(evil)
    for n in ("config.json", "tokenizer.json"):
        with open(os.path.join(hf, n), "rb") as src, open(os.path.join(evil, n), "wb") as dst:
            dst.write(src.read())
    torch.save({"model.norm.weight": st["model.norm.weight"], "hook": os.system},
               os.path.join(evil, "pytorch_model.bin"))
    refused("a pytorch_model.bin whose pickle names os.system", HF, [evil], "refused, nothing was run", evil + "-out",
            [evil])


def doc_examples():
    """docs/llama.md's examples (long: they need numpy) run as tests/examples_test.sh runs them, in a
    scratch copy of the checkout, on the random model they make: every one passes."""
    script = os.path.join(ROOT, "tests", "examples_test.sh")
    listed = subprocess.run([script, "--list", "docs/llama.md"], capture_output=True, text=True, cwd=ROOT).stdout
    r = subprocess.run([script, "--long", BIN, "docs/llama.md"], capture_output=True, text=True, cwd=ROOT,
                       timeout=600)
    n = len(listed.splitlines())
    check(r.returncode == 0 and n >= 5 and f"examples_test: {n} passed, 0 failed" in r.stdout,
          f"docs/llama.md: its {n} examples run, on a model they make", r.stdout[-600:])


def gpt2_dispatch(tmp):
    import hf_gpt2_test
    snap = hf_gpt2_test.snapshot(os.path.join(tmp, "gpt2-hf"), hf_gpt2_test.weights(np.random.default_rng(1)),
                                 config={"architectures": ["GPT2LMHeadModel"]})
    rc, err = run(HF, snap, "--out", os.path.join(tmp, "gpt2"))
    info = subprocess.run([BIN, "info", "-m", os.path.join(tmp, "gpt2"), "--json"], capture_output=True, text=True)
    check(rc == 0 and info.returncode == 0 and json.loads(info.stdout).get("activation") == "gelu_tanh",
          "import_hf.py: GPT2LMHeadModel goes to the GPT-2 importer, and the engine runs it", err)
    refused("import_hf.py --ctx of a GPT-2 snapshot", HF, [snap, "--ctx", "8"],
            "--ctx is for the Llama family", os.path.join(tmp, "gpt2-ctx"), [snap])


def refused(label, tool, args, word, out, inputs=()):
    before = [snapshot(p) for p in inputs]
    rc, err = run(tool, *args, "--out", out)
    check(rc == 1 and err.count("\n") == 0 and word in err and "Traceback" not in err and not os.path.exists(out),
          f"{label}: one line naming it, exit 1, nothing written", f"exit {rc}: {err[-300:]}")
    if inputs:
        check([snapshot(p) for p in inputs] == before, f"{label}: the input is untouched")


def edit_json(path, change):
    with open(path) as f:
        doc = json.load(f)
    change(doc)
    with open(path, "w") as f:
        json.dump(doc, f)


def bad_snapshots(tmp):
    def variant(label, kw=None, cfg=None, state=None, after=None):
        folder = os.path.join(tmp, f"bad{len(os.listdir(tmp))}")
        s, m = mk.make(folder, seed=3, **(kw or {}))
        hf = os.path.join(folder, "hf")
        if cfg:
            edit_json(os.path.join(hf, "config.json"), lambda d: d.update(cfg))
        if state:
            st = mk.hf_state(m, s)
            state(st)
            hfweights.write_safetensors(os.path.join(hf, "model.safetensors"), st, s["dtype"])
        if after:
            after(hf)
        return hf
    def nan_bf16(st):
        st["model.layers.1.mlp.up_proj.weight"][3, 4] = np.nan

    def inf_f16(st):
        st["model.layers.0.self_attn.k_proj.weight"][0, 0] = 1e6  # past F16's 65504: Inf in the file

    def dup_index(hf):
        with open(os.path.join(hf, hfweights.INDEX)) as f:
            text = f.read()
        first = text.index('"model.')
        with open(os.path.join(hf, hfweights.INDEX), "w") as f:
            f.write(text[:first] + '"model.norm.weight": "model-00001-of-00002.safetensors", ' + text[first:])

    def two_shards(hf):
        st = {"model.norm.weight": np.ones(64, np.float32)}
        edit_json(os.path.join(hf, hfweights.INDEX), lambda d: d["weight_map"].update({"extra": "extra.safetensors"}))
        hfweights.write_safetensors(os.path.join(hf, "extra.safetensors"), st)
    cases = [
        ("num_key_value_heads 3 not dividing num_attention_heads 4", {}, {"num_key_value_heads": 3}, None, None,
         "num_key_value_heads 3 does not divide"),
        ("rope_theta 0", {}, {"rope_theta": 0}, None, None, "rope_theta is 0"),
        ("rope_theta -10000", {}, {"rope_theta": -10000.0}, None, None, "rope_theta is -10000"),
        ("rope_theta 1e-45 (0 as a float: NaN logits)", {}, {"rope_theta": 1e-45}, None, None, "rope_theta is 1e-45"),
        ("rope_theta 10**400 (no float)", {}, {"rope_theta": 10 ** 400}, None, None, "rope_theta is 1000"),
        ("rope_scaling set", {}, {"rope_scaling": {"rope_type": "linear", "factor": 2.0}}, None, None, "rope_scaling"),
        ("an unknown architecture", {}, {"architectures": ["MambaForCausalLM"]}, None, None, "MambaForCausalLM"),
        ("Gemma 3's layer_types not every k-th layer global", {"family": "gemma3", "head_dim": 16},
         {"layer_types": ["full_attention", "sliding_attention"]}, None, None, "is not every k-th layer global"),
        ("head_dim disagreeing with q_proj's rows", {}, {"head_dim": 32}, None, None,
         "q_proj.weight has shape (64, 64)"),
        ("head_dim odd", {}, {"head_dim": 15}, None, None, "head width 15 is odd"),
        ("head_dim past the engine's 1024", {}, {"head_dim": 2048}, None, None, "over 1024"),
        ("num_attention_heads 5 not dividing hidden_size 64, no head_dim", {}, {"num_attention_heads": 5}, None,
         None, "and no head_dim is given"),
        ("intermediate_size disagreeing with the MLP's shapes", {}, {"intermediate_size": 100}, None, None,
         "intermediate_size 100"),
        ("num_key_value_heads disagreeing with k_proj", {}, {"num_key_value_heads": 4}, None, None,
         "k_proj.weight has shape (32, 64)"),
        ("a BF16 NaN in a weight", {"dtype": "BF16"}, None, nan_bf16, None, "(BF16) holds a NaN"),
        ("an F16 Inf in a weight", {"dtype": "F16"}, None, inf_f16, None, "(F16) holds an Inf"),
        ("tie_word_embeddings with a different lm_head", {}, {"tie_word_embeddings": True}, None, None, "differs"),
        ("untied with no lm_head.weight", {"tied": True}, {"tie_word_embeddings": False}, None, None, "lm_head.weight"),
        ("a tensor a Llama has not", {}, None, lambda st: st.update({"model.layers.0.mlp.extra": np.ones(3)}), None,
         "does not describe"),
        ("a shard index naming a missing file", {"shards": 2}, None, None,
         lambda hf: os.remove(os.path.join(hf, "model-00002-of-00002.safetensors")), "which is missing"),
        ("a shard index listing a tensor twice", {"shards": 2}, None, None, dup_index, "appears twice"),
        ("a tensor held by two shards", {"shards": 2}, None, None, two_shards, "held twice"),
        ("hidden_act gelu", {}, {"hidden_act": "gelu"}, None, None, "hidden_act"),
        ("config.json not JSON", {}, None, None, lambda hf: open(os.path.join(hf, "config.json"), "a").write("}"),
         "config.json: not valid JSON: Extra data at line "),
        ("num_attention_heads missing", {}, None, None,
         lambda hf: edit_json(os.path.join(hf, "config.json"), lambda d: d.pop("num_attention_heads")),
         "num_attention_heads is missing"),
        ("neither architectures nor model_type", {}, None, None,
         lambda hf: edit_json(os.path.join(hf, "config.json"), lambda d: [d.pop(k) for k in ("architectures",
                                                                                              "model_type")]),
         "neither architectures nor model_type is given"),
    ]
    for label, kw, cfg, state, after, word in cases:
        hf = variant(label, kw, cfg, state, after)
        refused(label, HF, [hf], word, hf + "-out", [hf])


def bad_bins(tmp):
    folder = os.path.join(tmp, "bins")
    mk.make(folder, seed=4)
    d = os.path.join(folder, "llama2c")
    tok = os.path.join(d, "tokenizer.bin")
    data, v1 = (open(os.path.join(d, n), "rb").read() for n in ("model.bin", "model-v1.bin"))
    toks = mk.bin_tokens(mk.pieces(320))

    def case(label, name, blob, word, tokenizer=None):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(blob)
        refused(label, L2C, [path, "--tokenizer", tokenizer or tok], word, path + ".out", [path])

    def tok_file(name, tokens, tail=b""):
        path = os.path.join(tmp, name)
        from llama2c import write_tokenizer
        write_tokenizer(path, tokens)
        with open(path, "ab") as f:
            f.write(tail)
        return path
    case("a legacy .bin cut short", "cut.bin", data[:-4], "cut short")
    case("a v1 .bin cut short", "cut-v1.bin", v1[:-100], "cut short")
    case("a legacy .bin cut inside its header", "head.bin", data[:20], "28-byte header")
    case("a legacy header whose dim does not match the file", "dim.bin", struct.pack("<i", 32) + data[4:],
         "does not match")
    case("a legacy .bin with bytes after its weights", "long.bin", data + bytes(8), "does not match")
    case("a header with n_kv_heads 3 of n_heads 4", "kv.bin", data[:16] + struct.pack("<i", 3) + data[20:],
         "n_kv_heads 3 does not divide n_heads 4")
    case("a v1 export of version 2 (int8)", "q8.bin", v1[:4] + struct.pack("<i", 2) + v1[8:], "version 2")
    nan = bytearray(data)
    nan[28 + 4 * 100:28 + 4 * 101] = struct.pack("<f", float("nan"))
    case("a NaN weight in a .bin", "nan.bin", bytes(nan), "not finite")
    negative = tok_file("neg-tok.bin", toks[:5])
    with open(negative, "ab") as f:
        f.write(struct.pack("<fi", 0.0, -7))
    case("a tokenizer.bin with a negative length", "ok1.bin", data, "negative", negative)
    case("a tokenizer.bin cut short", "ok2.bin", data, "cut short", tok_file("short-tok.bin", toks[:100]))
    nan_score = [(b, float("nan") if i == 300 else s) for i, (b, s) in enumerate(toks)]
    case("a tokenizer.bin with a NaN score", "ok5.bin", data, "token 300 has score nan",
         tok_file("nan-tok.bin", nan_score))
    no_byte = [(b"<0x4B>x" if b == b"<0x41>" else b, s) for b, s in toks]
    case("a tokenizer.bin missing a byte token", "ok3.bin", data, "no byte token <0x41>",
         tok_file("nobyte-tok.bin", no_byte))
    case("a tokenizer.bin of a larger vocabulary", "ok4.bin", data, "bytes after token",
         tok_file("long-tok.bin", toks, struct.pack("<fi", 0.0, 1) + b"x"))
    model = os.path.join(tmp, "tokenizer.model")
    with open(model, "wb") as f:  # a ModelProto's start: piece 1 {piece "<unk>", score 0}
        f.write(b"\x0a\x0c\x0a\x05<unk>\x15\x00\x00\x00\x00\x18\x02" * 3)
    case("--tokenizer a SentencePiece tokenizer.model", "ok6.bin", data, "a SentencePiece .model", model)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        good_paths(tmp)
        dtypes(tmp)
        context_cap(tmp)
        mistral(tmp)
        sentencepiece_model(tmp)
        pytorch_bin(tmp)
        hand_made_bin(tmp)
        gpt2_dispatch(tmp)
        doc_examples()
        with tempfile.TemporaryDirectory() as bad:
            bad_snapshots(bad)
            bad_bins(bad)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
