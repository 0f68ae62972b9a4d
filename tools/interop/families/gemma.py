"""Gemma (GemmaForCausalLM): a pre-norm Llama layout whose RMSNorm multiplies by (1 + w), computed in
float32 (baked in at import: each gain written as float32 1 + w), the embeddings times sqrt(D)
(embed_scale), a GeGLU MLP (hidden_activation, gelu_pytorch_tanh where absent: tanh's GELU),
head_dim, the head tied unless tie_word_embeddings says otherwise.

    x = sqrt(D) E[t]; x = x + Attn(rms(x) (1 + w1)); x = x + W_down(gelu(W_gate h) * W_up h)
"""
import math

import hf_decoder as d
from nltool import ToolError

ARCHITECTURE, MODEL_TYPE, PREFIX = "GemmaForCausalLM", "gemma", "model."
SUMMARY = "(1 + w) RMSNorm, sqrt(D) embeddings, GeGLU"
ACTIVATIONS = {"gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh", "gelu": "gelu"}  # HF's -> normlab's


def config(cfg, where, ctx, **fields):
    """normlab's config from a Gemma config.json; fields: a later Gemma's additions."""
    act = cfg.get("hidden_activation") or "gelu_pytorch_tanh"
    if act not in ACTIVATIONS:
        raise ToolError(f"{where}: hidden_activation is {act!r}, not one of {', '.join(ACTIVATIONS)}")
    c = d.llama_config(cfg, where, ctx, tied=True, attn_bias=bool(cfg.get("attention_bias", False)), **fields)
    return d.extend(c, activation=ACTIVATIONS[act], embed_scale=math.sqrt(c["n_embd"]))


def layout(config, norms=d.PRE_NORMS):
    return d.llama_layout(config, norms, one_plus=True)
