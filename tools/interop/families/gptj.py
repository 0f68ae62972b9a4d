"""GPT-J (GPTJForCausalLM, model_type gptj): attention and MLP side by side behind one shared
LayerNorm (normlab's parallel-shared, as Phi), LayerNorm with biases (layer_norm_epsilon); q, k, v
and out_proj without biases, fc_in and fc_out with them; gelu_new (normlab's gelu_tanh); RoPE at base
10000 over the first rotary_dim dims of each head in interleaved pairs (rotate_every_two: dims 2i and
2i + 1, normlab's own pairing, so q's and k's rows are taken as they are); the untied lm_head with a
bias. The engine's bias flag is every linear's: q, k, v and out_proj get zero biases (x + 0 = x).

    h = LN1(x); x = x + out_proj(A(q_proj h, k_proj h, v_proj h)) + fc_out(gelu_new(fc_in h));
    logits = lm_head(ln_f(x)) + b
"""
import hf_decoder as d
import nlformat
from families import gpt_neox
from nltool import ToolError

import numpy as np

ARCHITECTURE, MODEL_TYPE, PREFIX = "GPTJForCausalLM", "gptj", "transformer."
SUMMARY = "parallel attention and MLP behind one LayerNorm, interleaved partial rotary, biased head"
CONTEXT_KEY = "n_positions"
DROPPED = d.DROPPED + ("attn.bias", "attn.masked_bias")  # causal-mask buffers of older checkpoints


def config(cfg, where, ctx):
    D, H = d.positive(cfg, "n_embd", where), d.positive(cfg, "n_head", where)
    if D % H:
        raise ToolError(f"{where}: n_head {H} does not divide n_embd {D}")
    rot = d.positive(cfg, "rotary_dim", where)
    if rot % 2 or rot > D // H:
        raise ToolError(f"{where}: rotary_dim {rot} is not an even count of a head's {D // H} dims")
    d.refuse_unless(cfg, where, activation_function="gelu_new", tie_word_embeddings=False, rope_scaling=None)
    return nlformat.llama_config(
        d.positive(cfg, "vocab_size", where), d.positive(cfg, "n_layer", where), H, H, D,
        min(d.positive(cfg, "n_positions", where), ctx), d.positive(cfg, "n_inner", where, 4 * D),
        d.number(cfg, "layer_norm_epsilon", where, 1e-12, 0.5, 1e-5), 10000.0, False, norm="layernorm",
        placement="parallel-shared", rope_dims=rot if rot < D // H else None, activation="gelu_tanh",
        gated_mlp=False, bias=True, head_bias=True)


def zeros(n):
    return d.Source([], lambda _: np.zeros(n, np.float32))


def layout(config):
    D = config["n_embd"]

    def attention(i, part):
        if part == "bias":
            return zeros(3 * D)
        names = [(f"h.{i}.attn.{m}.weight", (D, D)) for m in ("q_proj", "k_proj", "v_proj")]
        return d.Source(names, np.concatenate, True)
    top = {"wte": "wte", "ln_f": "ln_f", "lm_head": "lm_head"}
    block = {"ln_1": "h.{i}.ln_1", "attn.c_proj": "h.{i}.attn.out_proj", "mlp.c_fc": "h.{i}.mlp.fc_in",
             "mlp.c_proj": "h.{i}.mlp.fc_out"}
    out = gpt_neox.parallel_layout(config, top, block, attention)
    out.update({f"h.{i}.attn.c_proj.bias": zeros(D) for i in range(config["n_layer"])})
    return out
