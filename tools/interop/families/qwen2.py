"""Qwen 2 (Qwen2ForCausalLM): a Llama with biases on q, k and v (always). use_sliding_window is
refused: its layers' windows are not run.
"""
from families import llama

ARCHITECTURE, MODEL_TYPE, PREFIX = "Qwen2ForCausalLM", "qwen2", "model."
SUMMARY = "a Llama with q, k, v biases"
from_weights, layout = llama.from_weights, llama.layout


def config(cfg, where, ctx):
    c = llama.config(cfg, where, ctx)
    c["attn_bias"] = True
    return c
