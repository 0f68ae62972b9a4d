#!/usr/bin/python3
"""Write the small random-weight test models in tests/fixtures/ (single-file inline JSON form).

Every norm x placement x bias combination, at odd sizes (V=11, D=12, H=3, F=20, T=9, L=2) so that no
size is a power of two, plus variants for untied heads, RMSNorm with bias, each activation, and a
vocabulary with multi-byte UTF-8 characters, and "centred": a pre-LN model whose residual stream is
exactly centred (LayerNorm and RMSNorm agree on it), "overflow": finite weights whose logits
overflow to infinity at run time, and "ln-pre-t70": a context of 70 (more than one KV-cache tile of
32, the last one partial); and lstm-ln, lstm-none, gru-ln, gru-none: recurrent models (format version
3) with the embedding narrower and wider than the state. Deterministic: the same seed writes the same files.

    /usr/bin/python3 tools/dev/make_fixtures.py            # writes tests/fixtures/*.json
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import nlformat  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures")
ASCII_VOCAB = list("\n !,.:?abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")[:11]
UTF8_VOCAB = ["\n", " ", "a", "b", "é", "ß", "☃", "€", "你", "😀", "z"]


def random_tensors(config, rng, rms_bias=False, scale=0.4):
    out = {}
    for name, shape in nlformat.tensor_shapes(config, rms_bias).items():
        if name.endswith(".running_var"):  # a variance: positive, around 1
            out[name] = np.exp(0.3 * rng.standard_normal(shape)).astype(np.float32)
        elif ".ln_" in name or name.startswith("ln_f"):  # (recurrent models' ln_ih, ln_hh, ... too)
            base = 1.0 if name.endswith(".weight") else 0.0
            out[name] = (base + 0.3 * rng.standard_normal(shape)).astype(np.float32)
        else:
            out[name] = (scale * rng.standard_normal(shape)).astype(np.float32)
    return out


def centre(tensors, config):
    """Make every write into the residual stream zero-mean, so the stream is exactly centred at
    every norm input of a pre-LN model: embedding rows, and the columns and biases of the two
    output projections, each sum to zero. LayerNorm and RMSNorm then compute the same function."""
    for name in ("wte.weight", "wpe.weight"):
        t = tensors[name].astype(np.float64)
        tensors[name] = (t - t.mean(axis=1, keepdims=True)).astype(np.float32)
    for i in range(config["n_layer"]):
        for proj in (f"h.{i}.attn.c_proj", f"h.{i}.mlp.c_proj"):
            w = tensors[proj + ".weight"].astype(np.float64)  # (D, in): output mean = column sums
            tensors[proj + ".weight"] = (w - w.mean(axis=0, keepdims=True)).astype(np.float32)
            if proj + ".bias" in tensors:
                b = tensors[proj + ".bias"].astype(np.float64)
                tensors[proj + ".bias"] = (b - b.mean()).astype(np.float32)
    return tensors


def base_config(**kw):
    c = {"vocab_size": 11, "n_layer": 2, "n_head": 3, "n_embd": 12, "block_size": 9, "n_inner": 20,
         "norm": "layernorm", "placement": "pre", "norm_eps": 1e-5, "activation": "gelu",
         "bias": True, "tie_embeddings": True}
    c.update(kw)
    return c


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20261130)
    acts = {("layernorm", "pre"): "gelu", ("layernorm", "post"): "gelu_tanh",
            ("rmsnorm", "pre"): "relu", ("rmsnorm", "post"): "gelu"}
    models = {}
    for norm in ("layernorm", "rmsnorm"):
        for placement in ("pre", "post"):
            for bias in (True, False):
                name = f"{'ln' if norm == 'layernorm' else 'rms'}-{placement}-{'bias' if bias else 'nobias'}"
                models[name] = (base_config(norm=norm, placement=placement, bias=bias,
                                            activation=acts[(norm, placement)]), ASCII_VOCAB, False)
    models["ln-pre-untied"] = (base_config(tie_embeddings=False, mlp_ratio=2, n_inner=None), ASCII_VOCAB, False)
    models["rms-pre-rmsbias"] = (base_config(norm="rmsnorm"), ASCII_VOCAB, True)
    models["utf8"] = (base_config(), UTF8_VOCAB, False)
    models["centred"] = (base_config(), ASCII_VOCAB, False)
    models["overflow"] = (base_config(tie_embeddings=False), ASCII_VOCAB, False)
    # 70 positions: the KV cache holds 3 tiles of 32, the last one partial; head width 16
    models["ln-pre-t70"] = (base_config(block_size=70, n_embd=32, n_head=2, n_inner=40), ASCII_VOCAB, False)
    # format version 2: BatchNorm, peri-LN, DeepNorm (alpha = (2L)^(1/4)), no norm (placement left out)
    models["bn-pre-bias"] = (base_config(norm="batchnorm"), ASCII_VOCAB, False)
    models["bn-post-nobias"] = (base_config(norm="batchnorm", placement="post", bias=False), ASCII_VOCAB, False)
    models["bn-peri-bias"] = (base_config(norm="batchnorm", placement="peri", activation="relu"), ASCII_VOCAB, False)
    models["ln-peri-bias"] = (base_config(placement="peri"), ASCII_VOCAB, False)
    models["rms-peri-nobias"] = (base_config(norm="rmsnorm", placement="peri", bias=False), ASCII_VOCAB, False)
    models["deepnorm"] = (base_config(placement="post", residual_scale=(2 * 2) ** 0.25), ASCII_VOCAB, False)
    models["nonorm"] = (base_config(norm="none", placement=None), ASCII_VOCAB, False)
    # format version 3: recurrent models, E != S both ways, 2 and 3 layers
    for arch in ("lstm", "gru"):
        for norm, (E, S, L) in (("layernorm", (7, 5, 3)), ("none", (4, 9, 2))):
            name = f"{arch}-{'ln' if norm == 'layernorm' else 'none'}"
            models[name] = ({"arch": arch, "vocab_size": 11, "n_layer": L, "n_embd": E, "n_hidden": S, "norm": norm,
                             "norm_eps": 1e-5}, ASCII_VOCAB, False)
    # head width 64 over 70 positions: attention runs as products (engine/transformer.c) for 24 rows up;
    # last, so that the fixtures before it keep their random draws
    models["ln-pre-dh64"] = (base_config(block_size=70, n_embd=64, n_head=1, n_inner=24, n_layer=1), ASCII_VOCAB, False)
    for name, (config, vocab, rms_bias) in models.items():
        config = {k: v for k, v in config.items() if v is not None}
        # (64 wide: weights of 0.4 would make logits of hundreds, their float error near the tests' 2e-5)
        tensors = random_tensors(config, rng, rms_bias, scale=0.15 if name == "ln-pre-dh64" else 0.4)
        if name == "centred":
            tensors = centre(tensors, config)
        if name == "overflow":  # finite weights whose logits overflow float32 at run time
            tensors["lm_head.weight"] = np.full_like(tensors["lm_head.weight"], 3e38)
        nlformat.write_inline_json(os.path.join(OUT, name + ".json"), config, vocab, tensors)
    print(f"wrote {len(models)} fixtures to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit("usage: make_fixtures.py (takes no arguments; rewrites its files deterministically)")
    main()
