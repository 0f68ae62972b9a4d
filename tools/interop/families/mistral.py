"""Mistral (MistralForCausalLM): a Llama whose every layer attends to its last sliding_window
positions (key j seen by query i when i - W < j <= i). A window no shorter than the imported context
is no window: the model is then the Llama it was, and none is written.
"""
import hf_decoder as d
from families import llama

ARCHITECTURE, MODEL_TYPE, PREFIX = "MistralForCausalLM", "mistral", "model."
SUMMARY = "a Llama with a sliding window on every layer"
from_weights, layout = llama.from_weights, llama.layout


def config(cfg, where, ctx):
    c = llama.config(cfg, where, ctx)
    if cfg.get("sliding_window") is None:
        return c
    W = d.positive(cfg, "sliding_window", where)
    return c if W >= c["block_size"] else d.extend(c, sliding_window=W)
