#!/usr/bin/python3
"""Export a normlab model to a GGUF file that llama.cpp loads (GGUF version 3), as llama.cpp's own
converter lays one out: a llama-family model as its "llama" architecture, a GPT-2-shaped transformer
as its "gpt2":

    /usr/bin/python3 tools/interop/export_gguf.py weights/shakespeare-llama --out shakespeare-llama.gguf
    /usr/bin/python3 tools/interop/export_gguf.py shakespeare-bpe --out shakespeare-bpe.gguf
    llama-perplexity -m shakespeare-llama.gguf -f TEXT -c 128      # llama.cpp, built by hand

What llama.cpp's llama runs: RMSNorm before each sublayer (placement pre), RoPE over whole heads,
SwiGLU, no biases, no QK-norm, GQA, a tied or untied head, and normlab's sentencepiece tokenizer
(tokenizer.json of type sentencepiece: its pieces, scores, control and byte pieces, bos/eos/unk,
add_bos and the dummy prefix). What its gpt2 runs: learned positions, LayerNorm before each
sublayer, biases everywhere, GELU (its tanh form: a model of exact GELU is exported with a warning,
as llama.cpp will run it), and a byte-level BPE with GPT-2's pre-tokenizer (a tokenizer.json of
GPT-2's ByteLevel; a character vocabulary is refused: GGUF's byte-level BPE has a token for each of
the 256 bytes). Anything else in config.json (another norm or placement, DyT, a recipe, QK-norm,
windows, Gemma's or Qwen's settings) is refused naming the setting, and so is another tokenizer. The
model is first loaded by the engine (normlab info --check-weights), so only what normlab runs is
exported.

Tensors keep their stored type (F32, F16, BF16, Q8_0, Q4_0: normlab's blocks are ggml's); vectors
(norms, biases) are written as F32, as llama.cpp's converter writes them. llama: c_attn's rows
become attn_q, attn_k and attn_v, c_fc's ffn_gate and ffn_up; q's and k's rows stay in normlab's
interleaved RoPE pairs, which are llama.cpp's for this architecture. gpt2: c_attn is attn_qkv; a
tied head is written out as output.weight too, as llama.cpp's converter does. The file is written
whole or not at all; --out may not be the model or lie inside it.
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

# Each architecture exported, by normlab's arch: llama.cpp's name, config.json's keys it has a setting
# for, and the values it runs where the key is not a number (a list: any of them).
ARCHES = {
    "llama": ("llama", {"format", "arch", "vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd", "block_size",
                        "n_inner", "norm", "placement", "norm_eps", "rope_theta", "tie_embeddings", "qk_norm",
                        "attn_bias", "head_dim"},
              {"norm": "rmsnorm", "placement": "pre", "qk_norm": False, "attn_bias": False}),
    "transformer": ("gpt2", {"format", "arch", "vocab_size", "n_layer", "n_head", "n_embd", "block_size", "mlp_ratio",
                             "n_inner", "norm", "placement", "norm_eps", "activation", "bias", "tie_embeddings"},
                    {"norm": "layernorm", "placement": "pre", "bias": True, "activation": ["gelu_tanh", "gelu"]}),
}
LLAMA_FTYPE = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 7, "BF16": 32}  # general.file_type (llama_ftype)
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_BYTE = 1, 2, 3, 6  # tokenizer.ggml.token_type


def check_config(c, where):
    """llama.cpp's name of the architecture of config c; refuses, naming it, a setting it cannot run."""
    arch = c.get("arch", "transformer")
    if arch not in ARCHES:
        raise ToolError(f"{where}: arch {arch!r}: llama.cpp runs normlab's llama and transformer (GPT-2's) "
                        "architectures: not exported")
    name, known, runs = ARCHES[arch]
    for key in c:
        if key not in known:
            raise ToolError(f"{where}: config.json sets {key!r}, which llama.cpp's {name} architecture has no "
                            "setting for: not exported")
    for key, value in runs.items():
        allowed = value if isinstance(value, list) else [value]
        if c.get(key, allowed[0]) not in allowed:
            raise ToolError(f"{where}: config.json's {key} is {json.dumps(c[key])}; llama.cpp's {name} "
                            f"architecture runs {' or '.join(json.dumps(v) for v in allowed)} only: not exported")
    return name


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def spm_keys(path, V):
    """llama: tokenizer.ggml.* of normlab's sentencepiece tokenizer.json, or ToolError for another kind."""
    tok = read_json(path)
    if not isinstance(tok, dict) or tok.get("type") != "sentencepiece":
        raise ToolError(f"{path}: not normlab's sentencepiece tokenizer.json, which this exporter does not convert "
                        "for a llama yet (llama.cpp's convert_hf_to_gguf.py reads a Hugging Face snapshot)")
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


def bpe_keys(path, V):
    """gpt2: tokenizer.ggml.* of GPT-2's byte-level BPE (a tokenizer.json of its ByteLevel), pre-tokenizer
    gpt-2."""
    tok = read_json(path)
    if isinstance(tok, dict) and tok.get("type") == "char":
        raise ToolError(f"{path}: a character vocabulary; GGUF's byte-level BPE holds a token for each of the 256 "
                        f"bytes, this one {len(tok['vocab'])} characters: not exported")
    pre = tok.get("pre_tokenizer") if isinstance(tok, dict) else None
    gpt2_pre = isinstance(pre, dict) and pre.get("type") == "ByteLevel" and pre.get("use_regex", True) and \
        not pre.get("add_prefix_space") and tok.get("normalizer") is None
    if not gpt2_pre or (tok.get("model") or {}).get("type") != "BPE":
        raise ToolError(f"{path}: not GPT-2's byte-level BPE (a ByteLevel pre-tokenizer with its regex, no "
                        "normalizer): not exported")
    keys = ggufwrite.bpe_keys(tok, "gpt-2")
    if len(keys["tokenizer.ggml.tokens"][1]) > V:
        raise ToolError(f"{path}: {len(keys['tokenizer.ggml.tokens'][1])} tokens for a vocabulary of {V}")
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


def llama_tensors(c, raw):
    """GGUF name -> (type, shape, bytes) of a llama's tensors raw (normlab's name -> (type, shape, bytes))."""
    H, KVH, F, Dh = c["n_head"], c.get("n_kv_head", c["n_head"]), c["n_inner"], nlformat.head_width(c)
    out = {"token_embd.weight": raw.pop("wte.weight"), "output_norm.weight": as_f32(raw.pop("ln_f.weight"))}
    if "lm_head.weight" in raw:
        out["output.weight"] = raw.pop("lm_head.weight")
    for i in range(c["n_layer"]):
        h, b = f"h.{i}.", f"blk.{i}."
        q, k, v = split_rows(raw.pop(h + "attn.c_attn.weight"), (H * Dh, KVH * Dh, KVH * Dh))
        gate, up = split_rows(raw.pop(h + "mlp.c_fc.weight"), (F, F))
        out.update({b + "attn_norm.weight": as_f32(raw.pop(h + "ln_1.weight")), b + "attn_q.weight": q,
                    b + "attn_k.weight": k, b + "attn_v.weight": v,
                    b + "attn_output.weight": raw.pop(h + "attn.c_proj.weight"),
                    b + "ffn_norm.weight": as_f32(raw.pop(h + "ln_2.weight")), b + "ffn_gate.weight": gate,
                    b + "ffn_up.weight": up, b + "ffn_down.weight": raw.pop(h + "mlp.c_proj.weight")})
    return out


def gpt2_tensors(c, raw):
    """As llama_tensors, for GPT-2's layout: c_attn whole as attn_qkv, every linear biased, a tied head
    written out (llama.cpp's converter writes output.weight)."""
    wte = raw.pop("wte.weight")
    out = {"token_embd.weight": wte, "position_embd.weight": raw.pop("wpe.weight"),
           "output.weight": raw.pop("lm_head.weight", wte)}
    names = [("ln_f", "output_norm")] + [(f"h.{i}.{ours}", f"blk.{i}.{theirs}") for i in range(c["n_layer"])
                                         for ours, theirs in (("ln_1", "attn_norm"), ("attn.c_attn", "attn_qkv"),
                                                              ("attn.c_proj", "attn_output"), ("ln_2", "ffn_norm"),
                                                              ("mlp.c_fc", "ffn_up"), ("mlp.c_proj", "ffn_down"))]
    for ours, theirs in names:
        for part in ("weight", "bias"):
            t = raw.pop(f"{ours}.{part}")
            out[f"{theirs}.{part}"] = as_f32(t) if len(t[1]) == 1 else t
    return out


def llama_keys(c):
    H, D, Dh = c["n_head"], c["n_embd"], nlformat.head_width(c)
    keys = {"llama.vocab_size": c["vocab_size"], "llama.context_length": c["block_size"], "llama.embedding_length": D,
            "llama.block_count": c["n_layer"], "llama.feed_forward_length": c["n_inner"],
            "llama.rope.dimension_count": Dh, "llama.rope.freq_base": float(c.get("rope_theta", 10000.0)),
            "llama.attention.head_count": H, "llama.attention.head_count_kv": c.get("n_kv_head", H),
            "llama.attention.layer_norm_rms_epsilon": float(c["norm_eps"])}
    if Dh != D // H:
        keys.update({"llama.attention.key_length": Dh, "llama.attention.value_length": Dh})
    return keys


def gpt2_keys(c):
    return {"gpt2.context_length": c["block_size"], "gpt2.embedding_length": c["n_embd"],
            "gpt2.block_count": c["n_layer"], "gpt2.feed_forward_length": nlformat.mlp_width(c),
            "gpt2.attention.head_count": c["n_head"], "gpt2.attention.layer_norm_epsilon": float(c["norm_eps"])}


# llama.cpp's architecture -> its keys, its tensors and its tokenizer's keys, from normlab's.
WRITERS = {"llama": (llama_keys, llama_tensors, spm_keys), "gpt2": (gpt2_keys, gpt2_tensors, bpe_keys)}


def export(model, name):
    """(kvs, tensors, a warning or None) of the model folder."""
    c = read_json(os.path.join(model, "config.json"))
    arch = check_config(c, model)
    keys_of, tensors_of, tokenizer_of = WRITERS[arch]
    raw, _ = nlformat.read_safetensors_raw(os.path.join(model, "model.safetensors"))
    tensors = tensors_of(c, raw)
    if raw:
        raise ToolError(f"{model}: tensor {sorted(raw)[0]} has no place in llama.cpp's {arch} architecture")
    tensors = {name: (kind, tuple(shape), data) for name, (kind, shape, data) in tensors.items()}
    kinds = [kind for kind, shape, _ in tensors.values() if len(shape) == 2]
    kvs = {"general.architecture": arch, "general.name": name,
           "general.file_type": LLAMA_FTYPE[max(set(kinds), key=kinds.count)], **keys_of(c),
           **tokenizer_of(os.path.join(model, "tokenizer.json"), c["vocab_size"])}
    warning = None if c.get("activation") != "gelu" else (
        f"{model}: activation gelu; llama.cpp's gpt2 runs GELU's tanh form, so its logits differ a little from "
        "normlab's on the folder (normlab reads the GGUF as gelu_tanh)")
    return kvs, tensors, warning


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
    kvs, tensors, warning = export(a.model, os.path.basename(os.path.normpath(a.model)))
    with nltool.writing(a.out):
        nlformat.atomic_write(a.out, ggufwrite.gguf_bytes(kvs, tensors))
    arch = kvs["general.architecture"]
    print(f"wrote {a.out}: {arch}, {kvs[arch + '.block_count']} layers x {kvs[arch + '.embedding_length']}, "
          f"{len(tensors)} tensors, mostly {[k for k, v in LLAMA_FTYPE.items() if v == kvs['general.file_type']][0]}",
          file=sys.stderr)
    if warning:
        print(f"export_gguf.py: warning: {warning}", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("export_gguf.py", main, sys.argv[1:])
