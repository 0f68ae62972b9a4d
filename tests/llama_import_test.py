#!/usr/bin/python3
"""tools/interop/import_hf.py (Llama, Qwen2, Qwen3; GPT-2 dispatched to import_hf_gpt2.py) and
tools/interop/import_llama2c.py on random models of tools/dev/make_llama_snapshot.py, numpy only.

Checks: each HF snapshot (GQA, MHA, MQA; F32, BF16, F16; one file or shards; with and without
"model."; tied and untied; QK-norm; Qwen2's qkv bias) imports, and a float64 forward written here
on normlab's layout (fused c_attn and c_fc, RoPE on interleaved pairs) gives the logits of
tools/reference/llama_reference.py's forward on HF's layout (rotate_half) to 1e-9: the importer's
un-permute is exact. llama2.c's legacy .bin and v1 export of the same weights import to tensors
bit-identical to the snapshot's; a .bin built here, by hand from run.c's and export.py's orders, with
each block a distinct constant, lands every block in its place; tokenizer.bin becomes the
sentencepiece tokenizer.json (spaces as U+2581, "\\n<s>\\n" as "<s>"). Each bad input of issue 48's
items 4 and 9 gets one line, exit 1, nothing written, its input untouched.

The engine's loader checks what an importer writes (nltool.check_model), and the engine's own logits
are checked by tools/reference/llama_parity.py (make parity).

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
    reference, on the interleaved RoPE pairs, fused qkv and gate/up rows."""
    t = {k: v.astype(np.float64) for k, v in t.items()}
    D, H, KVH, F = config["n_embd"], config["n_head"], config["n_kv_head"], config["n_inner"]
    Dh, eps, n = D // H, config["norm_eps"], len(ids)

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g

    def rope(x):  # (n, heads, Dh): pairs (2i, 2i+1) by angle pos * theta^(-2i/Dh)
        ang = np.outer(np.arange(n), config["rope_theta"] ** (-np.arange(0, Dh, 2) / Dh))[:, None, :]
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)
        return out
    x = t["wte.weight"][ids]
    for i in range(config["n_layer"]):
        p = f"h.{i}."
        qkv = rms(x, t[p + "ln_1.weight"]) @ t[p + "attn.c_attn.weight"].T + t.get(p + "attn.c_attn.bias", 0)
        q = qkv[:, :H * Dh].reshape(n, H, Dh)
        k = qkv[:, H * Dh:(H + KVH) * Dh].reshape(n, KVH, Dh)
        v = qkv[:, (H + KVH) * Dh:].reshape(n, KVH, Dh)
        if config["qk_norm"]:
            q, k = rms(q, t[p + "attn.q_norm.weight"]), rms(k, t[p + "attn.k_norm.weight"])
        q, k = rope(q), rope(k)
        y = np.zeros((n, H * Dh))
        for h in range(H):
            kv = h // (H // KVH)
            s = q[:, h] @ k[:, kv].T / math.sqrt(Dh)
            s = np.where(np.tri(n, dtype=bool), s, -np.inf)
            s = np.exp(s - s.max(1, keepdims=True))
            y[:, h * Dh:(h + 1) * Dh] = s / s.sum(1, keepdims=True) @ v[:, kv]
        x = x + y @ t[p + "attn.c_proj.weight"].T
        u = rms(x, t[p + "ln_2.weight"]) @ t[p + "mlp.c_fc.weight"].T
        g, up = u[:, :F], u[:, F:]
        x = x + (g / (1 + np.exp(-g)) * up) @ t[p + "mlp.c_proj.weight"].T
    head = t["wte.weight"] if config["tie_embeddings"] else t["lm_head.weight"]
    return rms(x, t["ln_f.weight"]) @ head.T


def read_model(out):
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    return config, nlformat.read_safetensors(os.path.join(out, "model.safetensors"))[0]


CASES = [
    ("GQA 4/2, F32, untied, 3 shards", dict(heads=4, kv_heads=2, shards=3)),
    ("MHA 4/4, BF16, tied", dict(heads=4, kv_heads=4, dtype="BF16", tied=True)),
    ("MQA 4/1, F16, no model. prefix", dict(heads=4, kv_heads=1, dtype="F16", prefix=False)),
    ("QK-norm (self_attn.q_norm/k_norm), GQA 8/2, BF16", dict(heads=8, kv_heads=2, dtype="BF16", qk_norm=True)),
    ("Qwen2 qkv bias, GQA 4/2, tied", dict(heads=4, kv_heads=2, attn_bias=True, tied=True)),
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
        want = {"arch": "llama", "n_head": s["heads"], "n_kv_head": s["kv_heads"], "tie_embeddings": s["tied"],
                "qk_norm": s["qk_norm"], "attn_bias": s["attn_bias"], "format": {"name": "normlab", "version": 4}}
        check(all(config.get(key) == v for key, v in want.items()), f"{label}: config.json", str(config))
        ref = llama_reference.logits(llama_reference.Snapshot(os.path.join(folder, "hf")), ids)
        diff = np.abs(normlab_forward(config, t, ids) - ref).max()
        check(diff <= EXACT, f"{label}: normlab's layout gives HF's float64 logits (max diff {diff:.1e}, "
              f"logit std {ref.std(1).mean():.1f})", f"{diff}")
        check(snapshot(folder) == before, f"{label}: the snapshot is untouched")
        l2c = os.path.join(folder, "llama2c")
        if not os.path.isdir(l2c):
            continue
        for name in ("model.bin", "model-v1.bin"):
            o = os.path.join(tmp, f"good{k}-{name}")
            rc, err = run(L2C, os.path.join(l2c, name), "--out", o)
            got = read_model(o) if rc == 0 else (None, {})
            same = rc == 0 and list(got[1]) == list(t) and all(np.array_equal(got[1][n], t[n]) for n in t)
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


def gpt2_dispatch(tmp):
    import hf_gpt2_test
    snap = hf_gpt2_test.snapshot(os.path.join(tmp, "gpt2-hf"), hf_gpt2_test.weights(np.random.default_rng(1)),
                                 config={"architectures": ["GPT2LMHeadModel"]})
    rc, err = run(HF, snap, "--out", os.path.join(tmp, "gpt2"))
    info = subprocess.run([BIN, "info", "-m", os.path.join(tmp, "gpt2"), "--json"], capture_output=True, text=True)
    check(rc == 0 and info.returncode == 0 and json.loads(info.stdout).get("activation") == "gelu_tanh",
          "import_hf.py: GPT2LMHeadModel goes to the GPT-2 importer, and the engine runs it", err)


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
        ("num_attention_heads 5 not dividing hidden_size 64", {}, {"num_attention_heads": 5}, None, None,
         "does not divide hidden_size"),
        ("num_key_value_heads 3 not dividing num_attention_heads 4", {}, {"num_key_value_heads": 3}, None, None,
         "num_key_value_heads 3 does not divide"),
        ("rope_theta 0", {}, {"rope_theta": 0}, None, None, "rope_theta is 0"),
        ("rope_theta -10000", {}, {"rope_theta": -10000.0}, None, None, "rope_theta is -10000"),
        ("rope_theta 1e-45 (0 as a float: NaN logits)", {}, {"rope_theta": 1e-45}, None, None, "rope_theta is 1e-45"),
        ("rope_theta 10**400 (no float)", {}, {"rope_theta": 10 ** 400}, None, None, "rope_theta is 1000"),
        ("rope_scaling set", {}, {"rope_scaling": {"rope_type": "linear", "factor": 2.0}}, None, None, "rope_scaling"),
        ("an unknown architecture", {}, {"architectures": ["MistralForCausalLM"]}, None, None, "MistralForCausalLM"),
        ("head_dim other than hidden_size / heads", {}, {"head_dim": 32}, None, None, "head_dim 32"),
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


def main():
    with tempfile.TemporaryDirectory() as tmp:
        good_paths(tmp)
        hand_made_bin(tmp)
        gpt2_dispatch(tmp)
        with tempfile.TemporaryDirectory() as bad:
            bad_snapshots(bad)
            bad_bins(bad)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
