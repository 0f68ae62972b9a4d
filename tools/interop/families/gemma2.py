"""Gemma 2 (Gemma2ForCausalLM): Gemma's with the sandwich norms (normlab's peri placement:
input_layernorm and post_attention_layernorm around attention, pre_ and post_feedforward_layernorm
around the MLP), scores times query_pre_attn_scalar^-1/2 and soft-capped (tanh(s/c) c, c =
attn_logit_softcapping) before the mask, the logits soft-capped at final_logit_softcapping, and a
sliding window on layers 0, 2, 4, ... (none written where it covers the imported context).

    x = x + rms(Attn(rms(x) (1 + w1))) (1 + w1post); x = x + rms(MLP(rms(x) (1 + w2))) (1 + w2post)
"""
import hf_decoder as d
from families import gemma

ARCHITECTURE, MODEL_TYPE, PREFIX = "Gemma2ForCausalLM", "gemma2", "model."
SUMMARY = "Gemma's with sandwich norms (peri), soft-caps, a window on every other layer"
NORMS = {"ln_1": "input_layernorm", "ln_1_post": "post_attention_layernorm", "ln_2": "pre_feedforward_layernorm",
         "ln_2_post": "post_feedforward_layernorm"}


def windows(cfg, where, c):
    W = d.positive(cfg, "sliding_window", where)
    return {} if W >= c["block_size"] else {"sliding_window": W, "sliding_window_pattern": 2}


def soft_caps(cfg, where, c):
    """The scores' factor and the soft-caps, added to the config c."""
    def cap(key):
        return cfg.get(key) and d.number(cfg, key, where, 1e-3, 1e4)
    return d.extend(c, attn_scale=d.number(cfg, "query_pre_attn_scalar", where, 1, 1e8) ** -0.5,
                    attn_softcap=cap("attn_logit_softcapping"), final_softcap=cap("final_logit_softcapping"))


def config(cfg, where, ctx, windows=windows, **fields):
    c = gemma.config(cfg, where, ctx, placement="peri", **fields)
    return soft_caps(cfg, where, d.extend(c, **windows(cfg, where, c)))


def layout(config):
    return gemma.layout(config, NORMS)
