"""Qwen 3 (Qwen3ForCausalLM): a Llama with a per-head RMSNorm on q and on k over head_dim, before
RoPE (q_norm, k_norm: Dh gains), and head_dim independent of D / H (Qwen3-0.6B: 16 heads of 128
over D 1024).

    q_h = rms(q_h) g_q, k_h = rms(k_h) g_k, then RoPE
"""
from families import llama

ARCHITECTURE, MODEL_TYPE, PREFIX = "Qwen3ForCausalLM", "qwen3", "model."
SUMMARY = "a Llama with per-head QK RMSNorm and its own head_dim"
layout = llama.layout


def config(cfg, where, ctx):
    return llama.config(cfg, where, ctx, qk_norm=True)
