"""Gemma 3 (Gemma3ForCausalLM, model_type gemma3_text): Gemma 2's block without its soft-caps (unless
config.json sets them), q_norm/k_norm per head with (1 + w) gains before RoPE, and a sliding window on
every layer but each sliding_window_pattern-th (layer i global when (i + 1) % k == 0; from layer_types
where given), its local layers rotated at rope_local_base_freq, the global ones at rope_theta.
"""
import hf_decoder as d
from families import gemma2
from nltool import ToolError

ARCHITECTURE, MODEL_TYPE, PREFIX = "Gemma3ForCausalLM", "gemma3_text", "model."
SUMMARY = "Gemma 2's with (1 + w) QK-norm, 5 local : 1 global layers, a local RoPE base"
layout = gemma2.layout


def windows(cfg, where, c):
    """The window, its pattern k (from layer_types where given: each k-th layer global) and the
    local layers' RoPE base."""
    W = d.positive(cfg, "sliding_window", where)
    types = cfg.get("layer_types")
    k = d.number(cfg, "sliding_window_pattern", where, 2, 256, 6) if types is None else None
    for every in range(2, len(types) + 2) if isinstance(types, list) else ():
        if types == ["full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(len(types))]:
            k = k or every
    if k is None or k != int(k):
        raise ToolError(f"{where}: layer_types {str(types)[:80]} is not every k-th layer global, the pattern "
                        "normlab runs")
    return {"sliding_window": W, "sliding_window_pattern": int(k),
            "rope_local_theta": float(d.number(cfg, "rope_local_base_freq", where, 1, d.FLT_MAX, 10000.0))}


def config(cfg, where, ctx):
    return gemma2.config(cfg, where, ctx, windows=windows, qk_norm=True)
