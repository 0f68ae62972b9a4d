#!/usr/bin/python3
"""tools/interop/import_hf.py on the parallel-block families (tools/interop/families/gpt_neox.py, phi.py
and gptj.py): random GPT-NeoX (Pythia), Phi (Phi-2) and GPT-J snapshots of
tools/dev/make_parallel_snapshot.py.

Checks: each snapshot (GPT-NeoX parallel and sequential, partial and full rotary; Phi parallel-shared
with its lm_head bias; GPT-J with its interleaved rotary pairs and no attention biases; F32, BF16, F16;
one file or shards) imports to the config it should; the engine's logits (normlab logits) are within
llama_parity's 1e-4 of the family's float64 reference on HF's layout (tools/reference/parallel_reference.py,
gptj_reference.py); GPT-J's reference gives Phi's on the same weights re-laid (1e-9); with python3-torch,
normlab's float64 model (tools/lib/nlmodel_llama.py) on the imported tensors gives the reference's
logits to 1e-9, so the re-layout of the fused per-head qkv and of the rotary pairs is exact; the
matrices keep their stored type. Every command runs on each: generate (the same text twice with a
seed), eval, bench, profile, compare with the lens, attention statistics, fold and the swaps, fold (the
folded model's logits within 1e-4), quantize q8_0 (eval within 0.05 bits of the original), patch. Each
bad input docs/interop.md lists for the three families gets one line, exit 1, nothing written, its
input untouched.

    /usr/bin/python3 tests/parallel_import_test.py [NORMLAB_BINARY]      (make test runs it)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless, snapshot  # noqa: E402

skip_unless("parallel_import_test", "numpy")
import numpy as np  # noqa: E402

for d in ("lib", "dev", "reference"):
    sys.path.insert(0, os.path.join(ROOT, "tools", d))
import make_parallel_snapshot as mk  # noqa: E402
import nlformat  # noqa: E402
import gptj_reference  # noqa: E402
import parallel_reference  # noqa: E402
from llama_parity import LOGIT_ATOL  # noqa: E402

check = Checks("parallel_import_test")
HF = os.path.join(ROOT, "tools", "interop", "import_hf.py")
ENV = {**os.environ, "NORMLAB_BIN": BIN}
PROMPT = "the king my lord thou art what shall I say to thee Romeo"
TEXT = os.path.join(ROOT, "tests", "data", "held_out.txt")
CASES = [  # (label, make keywords, the config's placement, rope_dims (None: all), activation)
    ("GPT-NeoX parallel, rotary_pct 0.25, BF16", dict(family="gpt_neox", dtype="BF16"), "parallel", 4, "gelu"),
    ("GPT-NeoX sequential, full rotary, F16, 2 shards",
     dict(family="gpt_neox", sequential=True, rotary=1.0, dtype="F16", shards=2), "pre", None, "gelu"),
    ("Phi parallel-shared, partial_rotary_factor 0.4 of Dh 20", dict(family="phi", dim=80), "parallel-shared", 8,
     "gelu_tanh"),
    ("GPT-J parallel-shared, interleaved rotary_dim 4 of Dh 16, BF16, 2 shards", dict(family="gptj", dtype="BF16",
                                                                                    shards=2), "parallel-shared", 4,
     "gelu_tanh"),
]
REFERENCE = {"gpt_neox": parallel_reference, "phi": parallel_reference, "gptj": gptj_reference}


def run(*args):
    r = subprocess.run(["/usr/bin/python3", HF, *args], capture_output=True, text=True, timeout=300, env=ENV)
    return r.returncode, r.stderr.strip()


def engine(*args):
    r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr.strip()


def logits(model, text=PROMPT):
    rc, out, _ = engine("logits", "-m", model, "-p", text)
    return np.array([json.loads(line) for line in out.splitlines()]) if rc == 0 else None


def ids_of(model, text=PROMPT):
    return json.loads(engine("tokenize", "-m", model, "-p", text, "--json")[1])["ids"]


def good(tmp):
    for k, (label, kw, placement, rot, act) in enumerate(CASES):
        folder = os.path.join(tmp, f"good{k}")
        s = mk.make(folder, seed=k, **kw)
        hf = os.path.join(folder, "hf")
        before = snapshot(hf)
        out = os.path.join(tmp, f"good{k}-out")
        rc, err = run(hf, "--out", out)
        check(rc == 0, f"{label}: imports", err)
        if rc != 0:
            continue
        with open(os.path.join(out, "config.json")) as f:
            config = json.load(f)
        want = {"arch": "llama", "norm": "layernorm", "placement": placement, "rope_dims": rot, "activation": act,
                "gated_mlp": False, "bias": True, "head_bias": True if s["family"] != "gpt_neox" else None,
                "tie_embeddings": False, "format": {"name": "normlab", "version": 6}}
        check(all(config.get(key) == v for key, v in want.items()), f"{label}: config.json", str(config))
        reference = REFERENCE[s["family"]]
        snap = reference.Snapshot(hf)
        ids = ids_of(out)
        ref = reference.logits(snap, ids)
        got = logits(out)
        diff = float(np.abs(got - ref).max()) if got is not None and got.shape == ref.shape else float("inf")
        check(diff <= LOGIT_ATOL, f"{label}: the engine's logits within {LOGIT_ATOL:g} of the float64 reference "
              f"(max diff {diff:.1e}, logit std {ref.std(1).mean():.1f})", f"{diff}")
        exact_layout(label, out, ids, ref)
        raw = nlformat.read_safetensors_raw(os.path.join(out, "model.safetensors"))[0]
        kept = s["dtype"] if s["dtype"] in ("F16", "BF16") else "F32"
        matrices = [n for n in raw if n.endswith("weight") and len(nlformat.llama_tensor_shapes(config)[n]) == 2]
        check(all(raw[n][0] == kept for n in matrices) and all(raw[n][0] == "F32" for n in raw if n not in matrices),
              f"{label}: the matrices are stored {kept}, as the snapshot stores them; norms and biases F32")
        check(snapshot(hf) == before, f"{label}: the snapshot is untouched")
        commands(label, out, tmp, got)


def gptj_as_phi(tmp):
    """GPT-J's reference against Phi's where the families coincide: a GPT-J snapshot's weights as a Phi
    (q's and k's rotary rows from interleaved pairs to rotate_half's halves, zero q/k/v/dense biases)
    give the same float64 logits (1e-9)."""
    s = mk.make(os.path.join(tmp, "gptj-as-phi"), "gptj", seed=9, rotary=0.5)
    gj = gptj_reference.Snapshot(os.path.join(tmp, "gptj-as-phi", "hf"))
    D, H, rot = s["dim"], s["heads"], gj.cfg["rotary_dim"]

    def halves(a):  # each head's first rot rows (2i + j) -> row j rot/2 + i
        h = a.reshape(H, D // H, D).copy()
        h[:, :rot] = h[:, :rot].reshape(H, rot // 2, 2, D).swapaxes(1, 2).reshape(H, rot, D)
        return h.reshape(D, D)
    phi = parallel_reference.Snapshot.__new__(parallel_reference.Snapshot)
    phi.cfg = {"model_type": "phi", "hidden_size": D, "num_attention_heads": H, "num_hidden_layers": s["layers"],
               "layer_norm_eps": 1e-5, "partial_rotary_factor": rot / (D // H), "rope_theta": 10000.0}
    phi.w = {"embed_tokens.weight": gj.w["wte.weight"], "final_layernorm.weight": gj.w["ln_f.weight"],
             "final_layernorm.bias": gj.w["ln_f.bias"], "lm_head.weight": gj.w["lm_head.weight"],
             "lm_head.bias": gj.w["lm_head.bias"]}
    for i in range(s["layers"]):
        g, p = f"h.{i}.", f"layers.{i}."
        for m, theirs in (("q_proj", "q_proj"), ("k_proj", "k_proj"), ("v_proj", "v_proj"), ("dense", "out_proj")):
            w = gj.w[g + "attn." + theirs + ".weight"]
            phi.w.update({p + f"self_attn.{m}.weight": halves(w) if m in ("q_proj", "k_proj") else w,
                          p + f"self_attn.{m}.bias": np.zeros(D)})
        phi.w.update({p + "input_layernorm." + k: gj.w[g + "ln_1." + k] for k in ("weight", "bias")})
        phi.w.update({p + f"mlp.{n}.{k}": gj.w[g + f"mlp.{m}.{k}"] for n, m in (("fc1", "fc_in"), ("fc2", "fc_out"))
                      for k in ("weight", "bias")})
    ids = [1, 50, 7, 300, 12, 99, 5, 260, 41, 3, 77]
    diff = float(np.abs(gptj_reference.logits(gj, ids) - parallel_reference.logits(phi, ids)).max())
    check(diff <= 1e-9, f"GPT-J's float64 reference gives Phi's on the same weights re-laid (max diff {diff:.1e})")


def exact_layout(label, out, ids, ref):
    """normlab's float64 model on the imported tensors against the reference on HF's: the same numbers."""
    if not check.unless_missing("torch", what=f"{label}: the float64 model on normlab's layout"):
        return
    import nlmodel
    import torch
    config, _, tensors = nlformat.load_model(out)
    with torch.no_grad():
        mine = nlmodel.build(config, tensors, dtype=torch.float64)(torch.tensor([ids]))[0].numpy()
    diff = float(np.abs(mine - ref).max())
    check(diff <= 1e-9, f"{label}: normlab's layout gives HF's float64 logits (max diff {diff:.1e}): the qkv "
          "re-layout and the rotary pairs are exact", f"{diff}")


def commands(label, model, tmp, base, fold=True):
    """Every command on the imported model, each with a property of its output (fold false: a model
    file, which fold and quantize refuse in one line, asking for a model folder)."""
    gen = [engine("generate", "-m", model, "-p", "the king", "-n", "12", "-s", "5")[1] for _ in range(2)]
    check(gen[0] == gen[1] and gen[0].startswith("the king") and len(gen[0]) > len("the king"),
          f"{label}: generate streams text, the same twice with a seed", repr(gen))
    rc, out, err = engine("eval", "-m", model, "-f", TEXT, "--json")
    bpc = json.loads(out)["bits_per_byte"] if rc == 0 else float("nan")
    check(rc == 0 and 0 < bpc < 100, f"{label}: eval ({bpc:.3f} bits/byte: a random head's)", err)
    rc, out, err = engine("bench", "-m", model, "-p", "16", "-n", "8", "-r", "1", "--format", "json")
    check(rc == 0 and len(json.loads(out)) == 2, f"{label}: bench (pp16, tg8)", err)
    rc, out, err = engine("profile", "-m", model, "-p", PROMPT, "-n", "4", "--json")
    comps = {r["component"] for ph in json.loads(out)["phases"] for r in ph["rows"]} if rc == 0 else set()
    check({"qkv", "attention", "attn_proj", "mlp_up", "activation", "mlp_down"} <= comps,
          f"{label}: profile lists the block's components", str(sorted(comps)))
    rc, out, err = engine("compare", model, "-f", TEXT, "--lens", "--attention", *(["--fold"] if fold else []),
                          "--also-swap", "--json")
    rows = json.loads(out) if rc == 0 else []
    check(len(rows) >= 3 and all(r["bits_per_char"] > 0 for r in rows), f"{label}: compare with the lens, "
          f"attention, fold and the swaps ({len(rows)} rows)", err[-300:])
    folded = os.path.join(tmp, os.path.basename(model) + "-folded")
    rc, _, err = engine("fold", "-m", model, "-o", folded) if fold else (1, "", "")
    f = logits(folded) if rc == 0 else None
    diff = float(np.abs(f - base).max()) if f is not None else float("inf")
    check(diff <= 1e-4 or not fold, f"{label}: fold: the folded model's logits within 1e-4 ({diff:.1e})", err)
    q8 = os.path.join(tmp, os.path.basename(model) + "-q8")
    rc, _, err = engine("quantize", "-m", model, "-o", q8, "--type", "q8_0")
    if not fold:
        check(rc == 2 and "give a model directory" in err and not os.path.exists(q8) and
              engine("fold", "-m", model, "-o", folded)[2].endswith("give a model directory"),
              f"{label}: fold and quantize ask for a model folder, writing nothing", err)
        rc = 1
    rcq, outq, _ = engine("eval", "-m", q8, "-f", TEXT, "--json") if rc == 0 else (1, "", "")
    dq = abs(json.loads(outq)["bits_per_byte"] - bpc) if rcq == 0 else float("inf")
    check(dq <= 0.05 or not fold, f"{label}: quantize q8_0 runs, eval within 0.05 bits/byte ({dq:.4f})", err)
    rc, out, err = engine("patch", "-m", model, "--clean", "the king is", "--corrupt", "the kong is", "--target", "5",
                          "--foil", "6", "--json")
    rec = json.loads(out)["recovered"] if rc == 0 else []
    # patching the whole stream at the first differing position, entering layer 0, recovers all of it
    first = [a != b for a, b in zip(ids_of(model, "the king is"), ids_of(model, "the kong is"))].index(True)
    check(len(rec) > 1 and abs(rec[0][first] - 1) < 1e-6, f"{label}: patch (the differing position's cell "
          "entering layer 0 recovers all)", err[-300:] or str(rec[:1]))


def refused(tmp, label, family, cfg=None, state=None, word=""):
    folder = os.path.join(tmp, f"bad{len(os.listdir(tmp))}")
    s = mk.make(folder, family, seed=3)
    hf = os.path.join(folder, "hf")
    if cfg:
        with open(os.path.join(hf, "config.json")) as f:
            doc = json.load(f)
        doc.update(cfg)
        with open(os.path.join(hf, "config.json"), "w") as f:
            json.dump(doc, f)
    if state:
        import hfweights
        st = mk.hf_state(s, np.random.default_rng(3))
        state(st)
        hfweights.write_safetensors(os.path.join(hf, "model.safetensors"), st, s["dtype"])
    before, out = snapshot(hf), hf + "-out"
    rc, err = run(hf, "--out", out)
    check(rc == 1 and err.count("\n") == 0 and word in err and "Traceback" not in err and not os.path.exists(out),
          f"{label}: one line naming it, exit 1, nothing written", f"exit {rc}: {err[-300:]}")
    check(snapshot(hf) == before, f"{label}: the input is untouched")


def bad(tmp):
    neox, phi, gptj = "gpt_neox", "phi", "gptj"
    cases = [
        ("Phi's qk_layernorm", phi, {"qk_layernorm": True}, None, "qk_layernorm is True"),
        ("rotary_pct 0.1 (1 dim of 16)", neox, {"rotary_pct": 0.1}, None, "turns 1 dims"),
        ("rotary_pct 2", neox, {"rotary_pct": 2}, None, "rotary_pct is 2, not a number in [0, 1]"),
        ("GPT-NeoX hidden_act relu", neox, {"hidden_act": "relu"}, None, "hidden_act is 'relu'"),
        ("Phi hidden_act gelu", phi, {"hidden_act": "gelu"}, None, "hidden_act is 'gelu', not 'gelu_new'"),
        ("tie_word_embeddings true", neox, {"tie_word_embeddings": True}, None, "tie_word_embeddings"),
        ("layer_norm_eps 5", phi, {"layer_norm_eps": 5}, None, "layer_norm_eps is 5"),
        ("rope_scaling set", phi, {"rope_scaling": {"type": "linear", "factor": 2.0}}, None, "rope_scaling"),
        ("num_attention_heads 5 not dividing 64", neox, {"num_attention_heads": 5}, None, "does not divide"),
        ("intermediate_size disagreeing with the MLP", neox, {"intermediate_size": 100}, None,
         "dense_h_to_4h.weight has shape (96, 64)"),
        ("a missing query_key_value", neox, None,
         lambda st: st.pop("gpt_neox.layers.1.attention.query_key_value.weight"), "lack layers.1.attention"),
        ("a missing lm_head.bias", phi, None, lambda st: st.pop("lm_head.bias"), "lack lm_head.bias"),
        ("a tensor the family has not", phi, None, lambda st: st.update({"model.layers.0.extra": np.ones(3)}),
         "does not describe"),
        ("a NaN in a weight", phi, None, lambda st: st["model.layers.0.mlp.fc1.weight"].__setitem__((1, 2), np.nan),
         "holds a NaN"),
        ("GPT-J rotary_dim 3", gptj, {"rotary_dim": 3}, None, "rotary_dim 3 is not an even count"),
        ("GPT-J rotary_dim past the head", gptj, {"rotary_dim": 32}, None, "rotary_dim 32 is not an even count"),
        ("GPT-J activation_function gelu", gptj, {"activation_function": "gelu"}, None,
         "activation_function is 'gelu', not 'gelu_new'"),
        ("GPT-J n_head 5 not dividing 64", gptj, {"n_head": 5}, None, "n_head 5 does not divide n_embd 64"),
        ("GPT-J n_positions missing", gptj, {"n_positions": None}, None, "n_positions is missing"),
        ("GPT-J with a q_proj bias", gptj, None,
         lambda st: st.update({"transformer.h.0.attn.q_proj.bias": np.ones(64, np.float32)}), "does not describe"),
        ("GPT-J without lm_head.bias", gptj, None, lambda st: st.pop("lm_head.bias"), "lack lm_head.bias"),
    ]
    for label, family, cfg, state, word in cases:
        refused(tmp, label, family, cfg, state, word)
    folder = os.path.join(tmp, "unknown")
    mk.make(folder, "phi", seed=4)
    with open(os.path.join(folder, "hf", "config.json")) as f:
        doc = json.load(f)
    doc["architectures"] = ["MambaForCausalLM"]
    with open(os.path.join(folder, "hf", "config.json"), "w") as f:
        json.dump(doc, f)
    rc, err = run(os.path.join(folder, "hf"), "--out", folder + "-out")
    known = ("GemmaForCausalLM", "Gemma2ForCausalLM", "GPTNeoXForCausalLM", "PhiForCausalLM", "Olmo2ForCausalLM",
             "Qwen3ForCausalLM", "GPTJForCausalLM")
    check(rc == 1 and "MambaForCausalLM" in err and all(a in err for a in known),
          "an unknown architecture: one line naming it and every architecture the importer reads", err)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        good(tmp)
        gptj_as_phi(tmp)
        with tempfile.TemporaryDirectory() as b:
            bad(b)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
