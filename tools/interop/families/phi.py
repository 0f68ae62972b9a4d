"""Phi (PhiForCausalLM; Phi-2): attention and MLP side by side behind one shared LayerNorm (normlab's
parallel-shared placement), LayerNorm with biases; biases on q, k, v, dense, fc1, fc2 and lm_head;
gelu_new (normlab's gelu_tanh); partial rotary over the first int(Dh partial_rotary_factor) dims
(rotate_half pairs, base rope_theta); the untied head. qk_layernorm is refused.

    x = x + Attn(LN1(x)) + MLP(LN1(x)); logits = LN_f(x) W_head + b_head
"""
import hf_decoder as d
from families import gpt_neox

ARCHITECTURE, MODEL_TYPE, PREFIX = "PhiForCausalLM", "phi", "model."
SUMMARY = "parallel attention and MLP behind one shared LayerNorm, partial rotary, biased head"


def config(cfg, where, ctx):
    KVH = d.positive(cfg, "num_key_value_heads", where, d.positive(cfg, "num_attention_heads", where))
    return gpt_neox.parallel_config(cfg, where, ctx, KVH, "partial_rotary_factor", 0.5, ("gelu_new", "gelu_tanh"),
                                    "rope_theta", "parallel-shared", head_bias=True)


def layout(config):
    D = config["n_embd"]

    def attention(i, part):
        return d.qkv_source(config, [f"layers.{i}.self_attn.{m}" for m in ("q_proj", "k_proj", "v_proj")], part, D)
    top = {"wte": "embed_tokens", "ln_f": "final_layernorm", "lm_head": "lm_head"}
    block = {"ln_1": "layers.{i}.input_layernorm", "attn.c_proj": "layers.{i}.self_attn.dense",
             "mlp.c_fc": "layers.{i}.mlp.fc1", "mlp.c_proj": "layers.{i}.mlp.fc2"}
    return gpt_neox.parallel_layout(config, top, block, attention)
