#!/usr/bin/python3
"""Export a normlab model of the llama family to a GGUF file that llama.cpp loads (its "llama"
architecture, GGUF version 3), as llama.cpp's own converter lays one out:

    /usr/bin/python3 tools/interop/export_gguf.py weights/shakespeare-llama --out shakespeare-llama.gguf
    llama-perplexity -m shakespeare-llama.gguf -f TEXT -c 128      # llama.cpp, built by hand

What llama.cpp's llama runs, and so what is exported: RMSNorm before each sublayer (placement pre),
RoPE over whole heads, SwiGLU, no biases, no QK-norm, GQA, a tied or untied head, and normlab's
sentencepiece tokenizer (tokenizer.json of type sentencepiece: its pieces, scores, control and byte
pieces, bos/eos/unk, add_bos and the dummy prefix). Anything else in config.json (another norm or
placement, DyT, a recipe, QK-norm, biases, windows, Gemma's or Qwen's settings) is refused naming the
setting, and so is another tokenizer (a character vocabulary: GGUF has none; a Hugging Face
tokenizer.json: llama.cpp's converter reads the snapshot it came from). The model is first loaded by
the engine (normlab info --check-weights), so only what normlab runs is exported.

Tensors keep their stored type (F32, F16, BF16, Q8_0, Q4_0: normlab's blocks are ggml's); the norms'
gains are written as F32, as llama.cpp's converter writes them. c_attn's rows become attn_q, attn_k
and attn_v, c_fc's ffn_gate and ffn_up; q's and k's rows stay in normlab's interleaved RoPE pairs,
which are llama.cpp's for this architecture. The file is written whole or not at all; --out may not
be the model or lie inside it.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import ggufwrite  # noqa: E402
import nlformat  # noqa: E402
import nltool  # noqa: E402
import qformats  # noqa: E402
from nltool import ToolError  # noqa: E402

# config.json's keys llama.cpp's llama architecture has a setting for, with the values it runs where
# the key is not a number.
KNOWN = {"format", "arch", "vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd", "block_size", "n_inner",
         "norm", "placement", "norm_eps", "rope_theta", "tie_embeddings", "qk_norm", "attn_bias", "head_dim"}
RUNS = {"arch": "llama", "norm": "rmsnorm", "placement": "pre", "qk_norm": False, "attn_bias": False}
LLAMA_FTYPE = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 7, "BF16": 32}  # general.file_type (llama_ftype)
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_BYTE = 1, 2, 3, 6  # tokenizer.ggml.token_type


def check_config(c, where):
    """Refuses, naming it, a setting llama.cpp's llama architecture cannot run."""
    for key in c:
        if key not in KNOWN:
            raise ToolError(f"{where}: config.json sets {key!r}, which llama.cpp's llama architecture has no "
                            "setting for: not exported")
    for key, runs in RUNS.items():
        if c.get(key, runs) != runs:
            raise ToolError(f"{where}: config.json's {key} is {json.dumps(c[key])}; llama.cpp's llama "
                            f"architecture runs {json.dumps(runs)} only: not exported")


def tokenizer_keys(path, V):
    """tokenizer.ggml.* of normlab's sentencepiece tokenizer.json, or ToolError for another kind."""
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    if isinstance(tok, dict) and tok.get("type") == "char" or isinstance(tok, list):
        raise ToolError(f"{path}: a character vocabulary; GGUF's tokenizers are SentencePiece and byte-level BPE")
    if not isinstance(tok, dict) or tok.get("type") != "sentencepiece":
        raise ToolError(f"{path}: a Hugging Face tokenizer.json, which this exporter does not convert yet "
                        "(llama.cpp's convert_hf_to_gguf.py reads the snapshot it came from)")
    pieces = [p for p, _ in tok["pieces"]]
    if len(pieces) != V:
        raise ToolError(f"{path}: {len(pieces)} pieces for a vocabulary of {V}")
    control = {tok[k] for k in ("bos_id", "eos_id") if tok.get(k, -1) >= 0}
    types = [TOKEN_UNKNOWN if i == tok["unk_id"] else TOKEN_CONTROL if i in control else
             TOKEN_BYTE if len(p) == 6 and p.startswith("<0x") and p.endswith(">") else TOKEN_NORMAL
             for i, p in enumerate(pieces)]
    keys = {"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": ("str", pieces),
            "tokenizer.ggml.scores": ("f32", [float(s) for _, s in tok["pieces"]]),
            "tokenizer.ggml.token_type": ("i32", types), "tokenizer.ggml.unknown_token_id": tok["unk_id"],
            "tokenizer.ggml.add_bos_token": bool(tok.get("add_bos")), "tokenizer.ggml.add_eos_token": False,
            "tokenizer.ggml.add_space_prefix": bool(tok.get("add_dummy_prefix"))}
    for key, ours in (("bos_token_id", "bos_id"), ("eos_token_id", "eos_id")):
        if tok.get(ours, -1) >= 0:
            keys["tokenizer.ggml." + key] = tok[ours]
    return keys


def split_rows(entry, counts):
    """A stored matrix (type, [rows, cols], bytes) cut into consecutive parts of counts rows each."""
    kind, (rows, cols), data = entry
    row_bytes = len(data) // rows
    parts, at = [], 0
    for n in counts:
        parts.append((kind, (n, cols), data[at * row_bytes:(at + n) * row_bytes]))
        at += n
    return parts


def as_f32(entry):
    """A stored vector widened to F32 (exact for F16 and BF16)."""
    kind, shape, data = entry
    return "F32", tuple(shape), qformats.dequantize(data, kind, shape).astype("<f4").tobytes()


def gguf_tensors(c, raw):
    """GGUF name -> (type, shape, bytes) of normlab's tensors raw (name -> (type, shape, bytes))."""
    H, KVH, D, F, L = c["n_head"], c.get("n_kv_head", c["n_head"]), c["n_embd"], c["n_inner"], c["n_layer"]
    Dh = c.get("head_dim", D // H)
    out = {"token_embd.weight": raw.pop("wte.weight"), "output_norm.weight": as_f32(raw.pop("ln_f.weight"))}
    if "lm_head.weight" in raw:
        out["output.weight"] = raw.pop("lm_head.weight")
    for i in range(L):
        h, b = f"h.{i}.", f"blk.{i}."
        q, k, v = split_rows(raw.pop(h + "attn.c_attn.weight"), (H * Dh, KVH * Dh, KVH * Dh))
        gate, up = split_rows(raw.pop(h + "mlp.c_fc.weight"), (F, F))
        out.update({b + "attn_norm.weight": as_f32(raw.pop(h + "ln_1.weight")), b + "attn_q.weight": q,
                    b + "attn_k.weight": k, b + "attn_v.weight": v,
                    b + "attn_output.weight": raw.pop(h + "attn.c_proj.weight"),
                    b + "ffn_norm.weight": as_f32(raw.pop(h + "ln_2.weight")), b + "ffn_gate.weight": gate,
                    b + "ffn_up.weight": up, b + "ffn_down.weight": raw.pop(h + "mlp.c_proj.weight")})
    if raw:
        raise ToolError(f"tensor {sorted(raw)[0]} has no place in llama.cpp's llama architecture")
    return {name: (kind, tuple(shape), data) for name, (kind, shape, data) in out.items()}


def export(model, name):
    """(kvs, tensors) of the model folder."""
    with open(os.path.join(model, "config.json"), encoding="utf-8") as f:
        c = json.load(f)
    check_config(c, model)
    H, D = c["n_head"], c["n_embd"]
    Dh = c.get("head_dim", D // H)
    raw, _ = nlformat.read_safetensors_raw(os.path.join(model, "model.safetensors"))
    tensors = gguf_tensors(c, raw)
    kinds = [kind for kind, shape, _ in tensors.values() if len(shape) == 2]
    kvs = {"general.architecture": "llama", "general.name": name,
           "general.file_type": LLAMA_FTYPE[max(set(kinds), key=kinds.count)],
           "llama.vocab_size": c["vocab_size"], "llama.context_length": c["block_size"], "llama.embedding_length": D,
           "llama.block_count": c["n_layer"], "llama.feed_forward_length": c["n_inner"],
           "llama.rope.dimension_count": Dh, "llama.rope.freq_base": float(c.get("rope_theta", 10000.0)),
           "llama.attention.head_count": H, "llama.attention.head_count_kv": c.get("n_kv_head", H),
           "llama.attention.layer_norm_rms_epsilon": float(c["norm_eps"]),
           **tokenizer_keys(os.path.join(model, "tokenizer.json"), c["vocab_size"])}
    if Dh != D // H:
        kvs.update({"llama.attention.key_length": Dh, "llama.attention.value_length": Dh})
    return kvs, tensors


def main(argv):
    p = nltool.ArgumentParser(prog="export_gguf.py", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a normlab model directory, or a shipped model's name")
    p.add_argument("--out", required=True, help="the .gguf file to write (replaced whole)")
    a = p.parse_args(argv)
    a.model = nltool.model_arg(a.model)  # a path, or a shipped model by name
    if not os.path.isdir(a.model):
        raise ToolError(f"{a.model}: not a model directory")
    nltool.check_out(a.out, [a.model], want_dir=False)
    nltool.check_model(a.model)  # the engine's rules: what it loads is what is exported
    kvs, tensors = export(a.model, os.path.basename(os.path.normpath(a.model)))
    with nltool.writing(a.out):
        nlformat.atomic_write(a.out, ggufwrite.gguf_bytes(kvs, tensors))
    print(f"wrote {a.out}: llama, {kvs['llama.block_count']} layers x {kvs['llama.embedding_length']}, "
          f"{len(tensors)} tensors, mostly {[k for k, v in LLAMA_FTYPE.items() if v == kvs['general.file_type']][0]}",
          file=sys.stderr)


if __name__ == "__main__":
    nltool.run("export_gguf.py", main, sys.argv[1:])
