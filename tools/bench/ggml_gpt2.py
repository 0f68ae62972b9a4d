#!/usr/bin/python3
"""A normlab GPT-2-style model as ggml's gpt-2 example reads it (tools/bench/quant_bench.py's ggml rows).

    /usr/bin/python3 tools/bench/ggml_gpt2.py MODEL --out ggml-model-f32.bin [--gelu-tanh]

Writes the legacy file of ggml's examples/gpt-2 (main-*.cpp, quantize.cpp), ftype 0 (float32): the
magic 0x67676d6c, the hparams n_vocab, n_ctx (block_size), n_embd, n_head, n_layer, ftype (int32), the
vocabulary (a count, then each token's byte length and bytes), then one record a tensor: n_dims, name
length, type (0: F32), the dims innermost first, the name, the data. ggml_mul_mat(W, x) takes each
row of W's ne[0] = in elements, so a torch.nn.Linear (out, in) matrix, as normlab stores it, is
written as it is with ne = (in, out); wte (V, D) is ne (D, V), wpe (T, D) is ne (D, T). The head is
tied: with no model/lm_head record the loader uses model/wte. ggml's quantize then writes Q8_0 and
Q4_0 from this file (gpt-2-quantize IN OUT q8_0).

Only what the example computes is accepted: arch transformer, LayerNorm before each block with
norm_eps 1e-5 (ggml's is fixed), biases, MLP width 4 x n_embd, a tied head, every weight float32, a
vocabulary of characters or GPT-2's byte-level BPE. ggml's gpt-2 runs GELU's tanh form (from a table
of F16 values); an exact-GELU model is converted only with --gelu-tanh. Its main ends a stream at
token 50256 unless given --ignore-eos. ggml itself is never part of normlab: the user builds it.
Standard library and numpy (through normlab's tools/lib).
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import gpt2bpe  # noqa: E402
import nlformat  # noqa: E402
import nltool  # noqa: E402
from nltool import ToolError  # noqa: E402

MAGIC = 0x67676D6C  # GGML_FILE_MAGIC, "ggml"


def gpt2_config(path, cfg, gelu_tanh):
    """Refuses, in one line, a config ggml's gpt-2 would not compute as normlab does."""
    want = [("arch", "transformer", "a transformer"), ("norm", "layernorm", "LayerNorm"),
            ("placement", "pre", "pre-LN"), ("bias", True, "biases on every linear"),
            ("tie_embeddings", True, "a tied head (this converter writes no model/lm_head)")]
    for key, value, what in want:
        if cfg.get(key, "transformer" if key == "arch" else None) != value:
            raise ToolError(f"{path}: {key} is {json.dumps(cfg.get(key))}; ggml's gpt-2 needs {what}")
    if cfg.get("norm_eps") != 1e-5:
        raise ToolError(f"{path}: norm_eps is {cfg.get('norm_eps')}; ggml's gpt-2 fixes it at 1e-5")
    if nlformat.mlp_width(cfg) != 4 * cfg["n_embd"]:
        raise ToolError(f"{path}: MLP width {nlformat.mlp_width(cfg)}; ggml's gpt-2 needs 4 x n_embd")
    act = cfg.get("activation")
    if act != "gelu_tanh" and not (act == "gelu" and gelu_tanh):
        hint = " (--gelu-tanh converts it to run with the tanh form)" if act == "gelu" else ""
        raise ToolError(f"{path}: activation {json.dumps(act)}; ggml's gpt-2 runs GELU's tanh form{hint}")
    for key in ("residual_scale", "qk_norm"):
        if key in cfg:
            raise ToolError(f"{path}: {key} is set; ggml's gpt-2 has no such thing")


def vocabulary(model, vocab_size):
    """Each token's bytes, as the example prints them: a character's UTF-8, a BPE token's bytes."""
    path = os.path.join(model, "tokenizer.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            tok = json.load(f)
        if isinstance(tok, dict) and tok.get("type") == "char":
            words = [c.encode("utf-8") for c in tok["vocab"]]
        elif isinstance(tok, dict) and isinstance(tok.get("model"), dict) and tok["model"].get("type") == "BPE":
            words = gpt2bpe.load(path).token_bytes
        else:
            raise ToolError(f"{path}: ggml's gpt-2 needs characters or GPT-2's byte-level BPE, not this tokenizer")
    elif os.path.exists(os.path.join(model, "vocab.json")):
        words = gpt2bpe.load(model).token_bytes
    else:
        raise ToolError(f"{model}: no tokenizer.json or vocab.json")
    if len(words) != vocab_size:
        raise ToolError(f"{model}: {len(words)} tokens, but vocab_size is {vocab_size}")
    return words


def records(cfg):
    """(ggml name, normlab name) in the order GPT-2's converters write them."""
    yield "model/ln_f/g", "ln_f.weight"
    yield "model/ln_f/b", "ln_f.bias"
    yield "model/wte", "wte.weight"
    yield "model/wpe", "wpe.weight"
    for i in range(cfg["n_layer"]):
        for g, n in (("ln_1/g", "ln_1.weight"), ("ln_1/b", "ln_1.bias"), ("ln_2/g", "ln_2.weight"),
                     ("ln_2/b", "ln_2.bias"), ("attn/c_attn/w", "attn.c_attn.weight"),
                     ("attn/c_attn/b", "attn.c_attn.bias"), ("attn/c_proj/w", "attn.c_proj.weight"),
                     ("attn/c_proj/b", "attn.c_proj.bias"), ("mlp/c_fc/w", "mlp.c_fc.weight"),
                     ("mlp/c_fc/b", "mlp.c_fc.bias"), ("mlp/c_proj/w", "mlp.c_proj.weight"),
                     ("mlp/c_proj/b", "mlp.c_proj.bias")):
            yield f"model/h{i}/{g}", f"h.{i}.{n}"


def main(argv):
    try:
        convert(argv)
    except gpt2bpe.BpeError as e:
        raise ToolError(str(e))


def convert(argv):
    ap = nltool.ArgumentParser(prog="ggml_gpt2.py", description=__doc__.split("\n")[0])
    ap.add_argument("model", help="a normlab model folder (GPT-2-style, float32)")
    ap.add_argument("--out", required=True, help="the ggml file to write (whole or not at all)")
    ap.add_argument("--gelu-tanh", action="store_true", help="accept an exact-GELU model (ggml runs the tanh form)")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.model) or not os.path.isfile(os.path.join(a.model, "config.json")):
        raise ToolError(f"{a.model}: not a model folder (no config.json)")
    out = nltool.check_out(a.out, [a.model], want_dir=False)
    try:
        with open(os.path.join(a.model, "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
    except ValueError as e:
        raise ToolError(f"{a.model}/config.json: not JSON ({e})")
    if not isinstance(cfg, dict):
        raise ToolError(f"{a.model}/config.json: not a JSON object")
    gpt2_config(a.model, cfg, a.gelu_tanh)
    nltool.check_model(a.model)  # the engine's loader: shapes, finite weights, the vocabulary
    words = vocabulary(a.model, cfg["vocab_size"])
    raw, _ = nlformat.read_safetensors_raw(os.path.join(a.model, "model.safetensors"))
    for _, name in records(cfg):
        if raw[name][0] != "F32":
            raise ToolError(f"{a.model}: {name} is stored as {raw[name][0]}; ggml_gpt2.py writes float32 "
                            "(normlab quantize --type f32 widens it)")
    head = struct.pack("<I6i", MAGIC, cfg["vocab_size"], cfg["block_size"], cfg["n_embd"], cfg["n_head"],
                       cfg["n_layer"], 0)
    with nltool.writing(a.out), nlformat.atomic_file(out) as f:
        f.write(head + struct.pack("<i", len(words)))
        f.write(b"".join(struct.pack("<I", len(w)) + w for w in words))
        for gname, name in records(cfg):
            _, shape, data = raw[name]
            dims = shape[::-1]  # innermost first: (out, in) -> ne (in, out)
            key = gname.encode()
            f.write(struct.pack(f"<3i{len(dims)}i", len(dims), len(key), 0, *dims) + key)
            f.write(data)
    print(f"{a.model} -> {a.out}: ggml gpt-2, ftype 0, {len(raw)} tensors, {os.path.getsize(out) / 2**20:.1f} MiB")


if __name__ == "__main__":
    nltool.run("ggml_gpt2.py", main, sys.argv[1:])
