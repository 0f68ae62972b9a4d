"""GPT-NeoX (GPTNeoXForCausalLM; Pythia): attention and MLP side by side, each behind its own
LayerNorm (normlab's parallel placement; pre where use_parallel_residual is false), LayerNorm with
biases (layer_norm_eps), query_key_value fused with its rows per head as [q, k, v] (re-laid into q, k,
v here), partial rotary over the first int(Dh rotary_pct) dims of a head (rotate_half pairs, base
rotary_emb_base), biases on every linear, gelu, the untied embed_out.

    x = x + Attn(LN1(x)) + MLP(LN2(x)); logits = LN_f(x) W_out
"""
import hf_decoder as d
import nlformat
from nltool import ToolError

import numpy as np

ARCHITECTURE, MODEL_TYPE, PREFIX = "GPTNeoXForCausalLM", "gpt_neox", "gpt_neox."
SUMMARY = "parallel attention and MLP, two LayerNorms, fused per-head qkv, partial rotary"
DROPPED = d.DROPPED + ("attention.bias", "attention.masked_bias")  # causal-mask buffers, no weights


def parallel_config(cfg, where, ctx, KVH, rot_key, rot_default, act, theta_key, placement, **fields):
    """normlab's config of a parallel-block family (LayerNorm with biases, partial rotary, every linear
    biased, an untied head): GPT-NeoX's and Phi's."""
    D, H = d.positive(cfg, "hidden_size", where), d.positive(cfg, "num_attention_heads", where)
    if D % H or H % KVH:
        raise ToolError(f"{where}: num_attention_heads {H} does not divide hidden_size {D}" if D % H else
                        f"{where}: num_key_value_heads {KVH} does not divide num_attention_heads {H}")
    rot = int(D // H * d.number(cfg, rot_key, where, 0, 1, rot_default))
    if rot < 2 or rot % 2:
        raise ToolError(f"{where}: {rot_key} {cfg.get(rot_key)!r} turns {rot} dims of a head of {D // H}: RoPE "
                          "needs an even count of 2 or more")
    d.refuse_unless(cfg, where, hidden_act=act[0], rope_scaling=None, qk_layernorm=False, tie_word_embeddings=False)
    theta = d.number(cfg, theta_key, where, 1, 3.4e38, 10000)
    return nlformat.llama_config(
        d.positive(cfg, "vocab_size", where), d.positive(cfg, "num_hidden_layers", where), H, KVH, D,
        min(d.positive(cfg, "max_position_embeddings", where), ctx), d.positive(cfg, "intermediate_size", where),
        d.number(cfg, "layer_norm_eps", where, 1e-12, 0.5, 1e-5), theta, False, norm="layernorm",
        placement=placement, rope_dims=rot if rot < D // H else None, activation=act[1], gated_mlp=False,
        bias=True, **fields)


def config(cfg, where, ctx):
    parallel = cfg.get("use_parallel_residual", True) is True
    return parallel_config(cfg, where, ctx, d.positive(cfg, "num_attention_heads", where), "rotary_pct", 0.25,
                           ("gelu", "gelu"), "rotary_emb_base", "parallel" if parallel else "pre")


def layer_norm(name, D):
    return {".weight": d.Source([(name + ".weight", (D,))]), ".bias": d.Source([(name + ".bias", (D,))])}


def linear(name, shape, matrix=True):
    return {".weight": d.Source([(name + ".weight", shape)], matrix=matrix),
            ".bias": d.Source([(name + ".bias", shape[:1])])}


def parallel_layout(config, top, block, attention):
    """normlab's tensor -> Source of a parallel-block family: top (normlab's -> HF's, ln_f and the head),
    block (a layer's norms and linears: normlab's module -> HF's, {i} its index) and attention(i,
    part): c_attn's weight or bias of layer i."""
    V, D, F, L = (config[k] for k in ("vocab_size", "n_embd", "n_inner", "n_layer"))
    rows = d.qkv_rows(config)[0]
    shapes = {"attn.c_proj": (D, rows[0]), "mlp.c_fc": (F, D), "mlp.c_proj": (D, F), "lm_head": (V, D)}
    out = {"wte.weight": d.Source([(top["wte"] + ".weight", (V, D))], matrix=True)}
    out.update({"ln_f" + k: v for k, v in layer_norm(top["ln_f"], D).items()})
    out.update({"lm_head" + k: v for k, v in linear(top["lm_head"], (V, D)).items()})
    for i in range(L):
        for ours, theirs in block.items():
            theirs = theirs.format(i=i)
            made = layer_norm(theirs, D) if ours.startswith("ln") else linear(theirs, shapes[ours])
            out.update({f"h.{i}.{ours}{k}": v for k, v in made.items()})
        out.update({f"h.{i}.attn.c_attn.{part}": attention(i, part) for part in ("weight", "bias")})
    return out


def layout(config):
    rows, (H, KVH), rot = d.qkv_rows(config)
    D, Dh = config["n_embd"], nlformat.head_width(config)

    def attention(i, part):  # query_key_value's rows per head: q, k, v of Dh each
        def split(a):
            a = a[0].reshape((H, 3, Dh) + a[0].shape[1:])
            q, k, v = (a[:, j].reshape((H * Dh,) + a.shape[3:]) for j in range(3))
            return np.concatenate([d.pair_rotary(q, H, rot), d.pair_rotary(k, KVH, rot), v])
        name = f"layers.{i}.attention.query_key_value.{part}"
        return d.Source([(name, (3 * D, D) if part == "weight" else (3 * D,))], split, part == "weight")
    top = {"wte": "embed_in", "ln_f": "final_layer_norm", "lm_head": "embed_out"}
    block = {"ln_1": "layers.{i}.input_layernorm", "ln_2": "layers.{i}.post_attention_layernorm",
             "attn.c_proj": "layers.{i}.attention.dense", "mlp.c_fc": "layers.{i}.mlp.dense_h_to_4h",
             "mlp.c_proj": "layers.{i}.mlp.dense_4h_to_h"}
    return parallel_layout(config, top, block, attention)
