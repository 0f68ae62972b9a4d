"""Llama (LlamaForCausalLM; SmolLM2 and TinyLlama are Llamas): pre-norm RMSNorm blocks, a SiLU-gated
MLP, RoPE over whole heads, grouped KV heads (num_key_value_heads), head_dim where given, q/k/v biases
by attention_bias (o_proj's refused: an unknown tensor), the head tied by tie_word_embeddings, and
q_norm/k_norm per head where the tensors carry them (as Qwen 3 names them).

    x = x + Attn(rms(x) g1); x = x + W_down(silu(W_gate h) * W_up h), h = rms(x) g2; logits = rms(x) g_f W_head
"""
import hf_decoder as d

ARCHITECTURE, MODEL_TYPE, PREFIX = "LlamaForCausalLM", "llama", "model."
SUMMARY = "pre-norm RMSNorm, SiLU-gated MLP, RoPE, grouped KV heads"


def config(cfg, where, ctx, **fields):
    """normlab's config from a Llama config.json; fields: a derived family's additions."""
    d.refuse_unless(cfg, where, hidden_act="silu")
    return d.llama_config(cfg, where, ctx, attn_bias=bool(cfg.get("attention_bias", False)), **fields)


def from_weights(config, src):
    """A LlamaForCausalLM that carries q_norm/k_norm (as Qwen3 names them) runs with them, per head."""
    if not config["qk_norm"] and any(k.endswith("self_attn.q_norm.weight") for k in src):
        config["qk_norm"] = True


def layout(config):
    return d.llama_layout(config, d.PRE_NORMS)
