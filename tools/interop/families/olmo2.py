"""OLMo 2 (Olmo2ForCausalLM): no input norm; each branch's output normalised before its residual add
(normlab's post-sublayer placement, docs/comparing.md), and q and k normalised over the whole
projection (gains H*Dh and KVH*Dh wide) before the heads are split and RoPE.

    x = x + rms(Attn(x)) g1post; x = x + rms(MLP(x)) g2post; logits = rms(x) g_f W_head
"""
import hf_decoder as d
from families import llama

ARCHITECTURE, MODEL_TYPE, PREFIX = "Olmo2ForCausalLM", "olmo2", "model."
SUMMARY = "post-sublayer RMSNorm, QK RMSNorm over the whole projection"
NORMS = {"ln_1_post": "post_attention_layernorm", "ln_2_post": "post_feedforward_layernorm"}


def config(cfg, where, ctx):
    return llama.config(cfg, where, ctx, qk_norm="projection", placement="post-sublayer")


def layout(config):
    return d.llama_layout(config, NORMS)
