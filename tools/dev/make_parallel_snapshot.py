#!/usr/bin/python3
"""Random Hugging Face snapshots of the two parallel-block families, for the importer's tests and make
parity: GPTNeoXForCausalLM (Pythia: two LayerNorms, attention and MLP side by side when
use_parallel_residual, else one after the other; query_key_value fused per head as [q, k, v]; partial
rotary over the first rotary_pct of each head; biases everywhere; untied embed_out) and PhiForCausalLM
(Phi-2: one shared LayerNorm; q, k, v, dense, fc1, fc2 and lm_head with biases; gelu_new; partial
rotary by partial_rotary_factor) and GPTJForCausalLM (GPT-J: Phi's block with interleaved rotary pairs,
no q, k, v or out_proj biases, rotary_dim of a head; its old attn.bias mask buffers written too).

    /usr/bin/python3 tools/dev/make_parallel_snapshot.py --out DIR --family gpt_neox|phi|gptj [--dim 64
        --hidden 96 --layers 2 --heads 4 --vocab 320 --seq-len 64] [--rotary 0.25] [--sequential]
        [--dtype F32|F16|BF16] [--shards N] [--seed S]

writes DIR/hf/ (config.json, model.safetensors or N shards with model.safetensors.index.json, and
make_llama_snapshot.py's tokenizer.json). Pythia-160M's rotary_pct is 0.25 and Phi-2's
partial_rotary_factor 0.4 (32 of a head's 80 dims). The weights are drawn in HF's layout and rounded to
--dtype; LayerNorm gains near 1, biases near 0, the head scaled to 8/sqrt(D) so that logits spread by
several units.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/dev
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import hfweights  # noqa: E402
import make_llama_snapshot as mk  # noqa: E402
import nltool  # noqa: E402
from nltool import ToolError  # noqa: E402

DEFAULT = dict(dim=64, hidden=96, layers=2, heads=4, vocab=320, seq_len=64)
FAMILIES = ("gpt_neox", "phi", "gptj")


def rotary_dims(s):
    """The dims of a head its rotary turns, as transformers computes them: int(Dh * fraction)."""
    return int(s["dim"] // s["heads"] * s["rotary"])


def hf_state(s, rng):
    """HF's state dict (name -> float32 rounded to s's dtype) of a random model of family s["family"]."""
    D, F, L, V = s["dim"], s["hidden"], s["layers"], s["vocab"]

    def w(*shape, std=1.0, mean=0.0):
        return hfweights.rounded(mean + rng.standard_normal(shape) * std, s["dtype"])

    def linear(name, n_out, n_in):
        return {name + ".weight": w(n_out, n_in, std=n_in ** -0.5), name + ".bias": w(n_out, std=0.1)}

    def norm(name):
        return {name + ".weight": w(D, std=0.1, mean=1.0), name + ".bias": w(D, std=0.1)}
    if s["family"] == "gptj":
        return gptj_state(s, w, linear, norm)
    neox = s["family"] == "gpt_neox"
    top = "gpt_neox." if neox else "model."
    st = {top + ("embed_in" if neox else "embed_tokens") + ".weight": w(V, D)}
    for i in range(L):
        p = f"{top}layers.{i}."
        st.update(norm(p + "input_layernorm"))
        if neox:
            st.update(norm(p + "post_attention_layernorm"))
            st.update(linear(p + "attention.query_key_value", 3 * D, D))  # per head: q, k, v rows
            st.update(linear(p + "attention.dense", D, D))
            st.update(linear(p + "mlp.dense_h_to_4h", F, D))
            st.update(linear(p + "mlp.dense_4h_to_h", D, F))
        else:
            for name in ("q_proj", "k_proj", "v_proj"):
                st.update(linear(p + "self_attn." + name, D, D))
            st.update(linear(p + "self_attn.dense", D, D))
            st.update(linear(p + "mlp.fc1", F, D))
            st.update(linear(p + "mlp.fc2", D, F))
    st.update(norm(top + ("final_layer_norm" if neox else "final_layernorm")))
    head = w(V, D, std=8 / np.sqrt(D))
    if neox:
        st["embed_out.weight"] = head
    else:
        st.update({"lm_head.weight": head, "lm_head.bias": w(V, std=0.1)})
    return st


def gptj_state(s, w, linear, norm):
    """GPT-J's: transformer.h.{i} with ln_1, q/k/v/out_proj without biases, fc_in and fc_out with them;
    the old causal-mask buffers attn.bias and attn.masked_bias, which are no weights; lm_head with a bias."""
    D, F, V = s["dim"], s["hidden"], s["vocab"]
    st = {"transformer.wte.weight": w(V, D)}
    for i in range(s["layers"]):
        p = f"transformer.h.{i}."
        st.update(norm(p + "ln_1"))
        st.update({p + f"attn.{m}.weight": w(D, D, std=D ** -0.5) for m in ("q_proj", "k_proj", "v_proj", "out_proj")})
        st.update({p + "attn.bias": np.tril(np.ones((1, 1, s["seq_len"], s["seq_len"]), np.float32)),
                   p + "attn.masked_bias": np.array(-1e9, np.float32)})
        st.update(linear(p + "mlp.fc_in", F, D))
        st.update(linear(p + "mlp.fc_out", D, F))
    st.update(norm("transformer.ln_f"))
    return {**st, "lm_head.weight": w(V, D, std=8 / np.sqrt(D)), "lm_head.bias": w(V, std=0.1)}


def hf_config(s):
    D, H = s["dim"], s["heads"]
    common = {"vocab_size": s["vocab"], "hidden_size": D, "intermediate_size": s["hidden"],
              "num_hidden_layers": s["layers"], "num_attention_heads": H, "max_position_embeddings": s["seq_len"],
              "layer_norm_eps": 1e-5, "tie_word_embeddings": False,
              "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[s["dtype"]]}
    if s["family"] == "gptj":  # GPTJConfig's own names
        return {"architectures": ["GPTJForCausalLM"], "model_type": "gptj", "vocab_size": s["vocab"], "n_embd": D,
                "n_head": H, "n_layer": s["layers"], "n_positions": s["seq_len"], "n_inner": s["hidden"],
                "rotary_dim": rotary_dims(s), "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
                "tie_word_embeddings": False, "torch_dtype": common["torch_dtype"]}
    if s["family"] == "gpt_neox":
        return {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", **common, "hidden_act": "gelu",
                "rotary_pct": s["rotary"], "rotary_emb_base": 10000, "use_parallel_residual": not s["sequential"],
                "attention_bias": True, "rope_scaling": None}
    return {"architectures": ["PhiForCausalLM"], "model_type": "phi", **common, "hidden_act": "gelu_new",
            "num_key_value_heads": None, "partial_rotary_factor": s["rotary"], "rope_theta": 10000.0,
            "qk_layernorm": False, "rope_scaling": None}


def make(out, family, seed=0, dtype="F32", shards=1, rotary=None, sequential=False, **shape):
    """Writes out/hf; returns the shape dict."""
    if family not in FAMILIES:
        raise ToolError(f"--family {family!r}: one of {', '.join(FAMILIES)}")
    s = {**DEFAULT, **shape, "family": family, "dtype": dtype, "sequential": sequential,
         "rotary": (0.4 if family == "phi" else 0.25) if rotary is None else rotary}
    mk.pieces(s["vocab"])
    if s["dim"] % s["heads"]:
        raise ToolError(f"--heads {s['heads']} does not divide --dim {s['dim']}")
    if rotary_dims(s) < 2 or rotary_dims(s) % 2:
        raise ToolError(f"--rotary {s['rotary']} turns {rotary_dims(s)} dims of a head: not an even count of 2 or more")
    if sequential and family != "gpt_neox":
        raise ToolError("--sequential is GPT-NeoX's use_parallel_residual false")
    hf = os.path.join(out, "hf")
    mk.write_hf(hf, hf_state(s, np.random.default_rng(seed)), {**s, "config": hf_config(s)}, shards)
    return s


def main(argv):
    p = nltool.ArgumentParser(prog="make_parallel_snapshot.py", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="a new folder")
    p.add_argument("--family", required=True, choices=FAMILIES)
    for k, v in DEFAULT.items():
        p.add_argument("--" + k.replace("_", "-"), type=int, default=v)
    p.add_argument("--rotary", type=float,
                   help="the fraction of a head RoPE turns (default 0.25 GPT-NeoX and GPT-J, 0.4 Phi)")
    p.add_argument("--sequential", action="store_true", help="GPT-NeoX with use_parallel_residual false")
    p.add_argument("--dtype", choices=("F32", "F16", "BF16"), default="F32")
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if os.path.lexists(a.out):
        raise ToolError(f"--out {a.out}: exists; name a new folder")
    make(a.out, a.family, a.seed, a.dtype, a.shards, a.rotary, a.sequential, **{k: getattr(a, k) for k in DEFAULT})
    print(f"wrote {a.out}/hf", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("make_parallel_snapshot.py", main, sys.argv[1:])
