#!/usr/bin/python3
"""A GGUF file (llama.cpp's format, version 3, little-endian, alignment 32) of a random Llama snapshot
of tools/dev/make_llama_snapshot.py, written as llama.cpp's convert_hf_to_gguf.py lays one out, for
the GGUF reader's tests (written from ggml's docs/gguf.md, no llama.cpp code):

    /usr/bin/python3 tools/dev/make_gguf.py SNAPSHOT_DIR --out model.gguf [--type f32|f16|bf16|q8_0|q4_0]

SNAPSHOT_DIR is make_llama_snapshot.py's --out (its hf/ folder is read). Keys: general.architecture
"llama", general.name, general.file_type, llama.context_length, .embedding_length, .block_count,
.feed_forward_length, .rope.dimension_count, .rope.freq_base, .attention.head_count, .head_count_kv,
.attention.layer_norm_rms_epsilon, .vocab_size, tokenizer.ggml.model "llama" with its tokens, scores
(SentencePiece's: a merged piece -rank, others 0) and token types (normal 1, unknown 2, control 3,
byte 6), bos/eos/unknown ids, add_bos_token. Tensors: token_embd, blk.N.attn_norm, attn_q, attn_k,
attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down, output_norm, output (absent when tied); q's
and k's rows moved from HF's rotate_half order to Meta's interleaved pairs (as the converter's
permute); the matrices stored as --type (tools/lib/qformats.py, ggml's rules), the norms F32.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/dev
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

from ggufwrite import FILE_TYPES, bpe_keys, gguf_bytes  # noqa: E402
import hfweights  # noqa: E402
import make_llama_snapshot as mk  # noqa: E402
import nlformat  # noqa: E402
import nltool  # noqa: E402
import qformats  # noqa: E402
from hf_decoder import pair_rotary  # noqa: E402
from nltool import ToolError  # noqa: E402



def tokenizer_keys(V):
    toks = mk.pieces(V)
    scores, rank = [], 0
    for _, merge in toks:
        rank += 1 if merge else 0
        scores.append(-float(rank) if merge else 0.0)
    types = [2 if t == "<unk>" else 3 if t in ("<s>", "</s>") else 6 if t.startswith("<0x") else 1 for t, _ in toks]
    return {"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": ("str", [t for t, _ in toks]),
            "tokenizer.ggml.scores": ("f32", scores), "tokenizer.ggml.token_type": ("i32", types),
            "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.unknown_token_id": 0,
            "tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.add_eos_token": False}


def convert(snapshot, kind, bpe=None, arch="llama"):
    """(kvs, tensors) of the Llama snapshot folder (its hf/), matrices stored as kind; bpe: (its
    tokenizer.json as a dict, llama.cpp's pre-tokenizer name) for a byte-level BPE, else the snapshot's
    SentencePiece pieces. arch: "llama" (q's and k's rows permuted into interleaved pairs), or "qwen2"
    (q/k/v biases), "qwen3" (attn_q_norm, attn_k_norm), "olmo2" (post_attention_norm and post_ffw_norm,
    no input norms; QK-norm over the projection), "gemma", "gemma2" or "gemma3" (their norms written
    1 + w, as llama.cpp's converter adds the 1; Gemma 2's soft-caps and window, Gemma 3's window, its
    pattern and local RoPE base), whose q and k stay in HF's rotate_half order (llama.cpp's NEOX RoPE)."""
    hf = os.path.join(snapshot, "hf")
    with open(os.path.join(hf, "config.json")) as f:
        c = json.load(f)
    src, _ = hfweights.read_weights(hf)
    w = {k.removeprefix("model."): t.load().astype(np.float32) for k, t in src.items()}
    if arch.startswith("gemma"):
        w = {k: np.float32(1) + v if k.endswith("norm.weight") else v for k, v in w.items()}
    D, H, L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
    KVH, Dh = c.get("num_key_value_heads") or H, c.get("head_dim") or D // H
    a = arch + "."
    kvs = {"general.architecture": arch, "general.name": "random " + arch, "general.file_type": FILE_TYPES[kind],
           a + "vocab_size": c["vocab_size"], a + "context_length": c["max_position_embeddings"],
           a + "embedding_length": D, a + "block_count": L, a + "feed_forward_length": c["intermediate_size"],
           a + "rope.dimension_count": Dh, a + "rope.freq_base": float(c.get("rope_theta", 10000.0)),
           a + "attention.head_count": H, a + "attention.head_count_kv": KVH,
           a + "attention.layer_norm_rms_epsilon": float(c["rms_norm_eps"]),
           **(bpe_keys(*bpe) if bpe else tokenizer_keys(c["vocab_size"]))}
    if Dh != D // H:
        kvs.update({a + "attention.key_length": Dh, a + "attention.value_length": Dh})
    if arch in ("gemma2", "gemma3"):
        kvs[a + "attention.sliding_window"] = c["sliding_window"]
    if arch == "gemma2":
        kvs.update({a + "attn_logit_softcapping": float(c["attn_logit_softcapping"]),
                    a + "final_logit_softcapping": float(c["final_logit_softcapping"])})
    if arch == "gemma3":
        kvs.update({a + "attention.sliding_window_pattern": c.get("sliding_window_pattern", 6),
                    a + "rope.freq_base_swa": float(c.get("rope_local_base_freq", 10000.0))})

    def pairs(t, heads):  # llama's converter permutes q and k; the NEOX archs keep HF's order
        return pair_rotary(t, heads, Dh) if arch == "llama" else t

    def matrix(a):
        return kind, a.shape, qformats.quantize(a, kind).tobytes()

    def vector(a):
        return "F32", a.shape, a.astype("<f4").tobytes()
    tensors = {"token_embd.weight": matrix(w["embed_tokens.weight"])}
    for i in range(L):
        p = f"layers.{i}."
        norms = {"post_attention_norm": "post_attention_layernorm", "post_ffw_norm": "post_feedforward_layernorm"} \
            if arch == "olmo2" else {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
        if arch in ("gemma2", "gemma3"):  # the sandwich
            norms = {"attn_norm": "input_layernorm", "post_attention_norm": "post_attention_layernorm",
                     "ffn_norm": "pre_feedforward_layernorm", "post_ffw_norm": "post_feedforward_layernorm"}
        tensors.update({f"blk.{i}.{ours}.weight": vector(w[p + theirs + ".weight"]) for ours, theirs in norms.items()})
        tensors.update({
            f"blk.{i}.attn_q.weight": matrix(pairs(w[p + "self_attn.q_proj.weight"], H)),
            f"blk.{i}.attn_k.weight": matrix(pairs(w[p + "self_attn.k_proj.weight"], KVH)),
            f"blk.{i}.attn_v.weight": matrix(w[p + "self_attn.v_proj.weight"]),
            f"blk.{i}.attn_output.weight": matrix(w[p + "self_attn.o_proj.weight"]),
            f"blk.{i}.ffn_gate.weight": matrix(w[p + "mlp.gate_proj.weight"]),
            f"blk.{i}.ffn_up.weight": matrix(w[p + "mlp.up_proj.weight"]),
            f"blk.{i}.ffn_down.weight": matrix(w[p + "mlp.down_proj.weight"])})
        if arch == "qwen2":
            tensors.update({f"blk.{i}.attn_{m}.bias": vector(w[p + f"self_attn.{m}_proj.bias"]) for m in "qkv"})
        if arch in ("qwen3", "olmo2", "gemma3"):
            tensors.update({f"blk.{i}.attn_{m}_norm.weight": vector(w[p + f"self_attn.{m}_norm.weight"]) for m in "qk"})
    tensors["output_norm.weight"] = vector(w["norm.weight"])
    if "lm_head.weight" in w:
        tensors["output.weight"] = matrix(w["lm_head.weight"])
    return kvs, tensors


def convert_parallel(snapshot, kind, arch, fused=False):
    """(kvs, tensors) of a make_parallel_snapshot.py folder as llama.cpp lays out "phi2" (separate q, k,
    v with biases, or with fused as its older converter wrote them: one attn_qkv of all q rows, all k,
    all v; one LayerNorm; lm_head's bias as output.bias) or "gptneox" (attn_qkv as HF fuses it,
    its rows per head q, k, v; two LayerNorms; use_parallel_residual); q and k in HF's rotate_half order
    (llama.cpp's NEOX RoPE) over the first rope.dimension_count dims of a head."""
    hf = os.path.join(snapshot, "hf")
    with open(os.path.join(hf, "config.json")) as f:
        c = json.load(f)
    src, _ = hfweights.read_weights(hf)
    neox = arch == "gptneox"
    w = {k.split(".", 1)[1] if k.startswith(("gpt_neox.", "model.")) else k: t.load().astype(np.float32)
         for k, t in src.items()}
    D, H, L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
    rot = int(D // H * c["rotary_pct" if neox else "partial_rotary_factor"])
    a = arch + "."
    kvs = {"general.architecture": arch, "general.name": "random " + arch, "general.file_type": FILE_TYPES[kind],
           a + "context_length": c["max_position_embeddings"], a + "embedding_length": D, a + "block_count": L,
           a + "feed_forward_length": c["intermediate_size"], a + "rope.dimension_count": rot,
           a + "attention.head_count": H, a + "attention.layer_norm_epsilon": float(c["layer_norm_eps"]),
           **tokenizer_keys(c["vocab_size"])}
    if neox:
        kvs[a + "use_parallel_residual"] = bool(c.get("use_parallel_residual", True))

    def matrix(t):
        return kind, t.shape, qformats.quantize(t, kind).tobytes()

    def vector(t):
        return "F32", t.shape, t.astype("<f4").tobytes()

    def pair(_, ours, theirs, kind_of=matrix):
        return {f"{ours}.weight": kind_of(w[theirs + ".weight"]), f"{ours}.bias": vector(w[theirs + ".bias"])}
    tensors = {"token_embd.weight": matrix(w["embed_in.weight" if neox else "embed_tokens.weight"])}
    for i in range(L):
        p, b = f"layers.{i}.", f"blk.{i}."
        tensors.update(pair(None, b + "attn_norm", p + "input_layernorm", vector))
        if neox:
            tensors.update(pair(None, b + "attn_qkv", p + "attention.query_key_value"))
            tensors.update(pair(None, b + "attn_output", p + "attention.dense"))
            tensors.update(pair(None, b + "ffn_norm", p + "post_attention_layernorm", vector))
            tensors.update(pair(None, b + "ffn_up", p + "mlp.dense_h_to_4h"))
            tensors.update(pair(None, b + "ffn_down", p + "mlp.dense_4h_to_h"))
            continue
        for m in "qkv" if not fused else ():
            tensors.update(pair(None, b + f"attn_{m}", p + f"self_attn.{m}_proj"))
        if fused:
            qkv = [f"{p}self_attn.{m}_proj" for m in "qkv"]
            tensors.update({b + "attn_qkv.weight": matrix(np.concatenate([w[n + ".weight"] for n in qkv])),
                            b + "attn_qkv.bias": vector(np.concatenate([w[n + ".bias"] for n in qkv]))})
        tensors.update(pair(None, b + "attn_output", p + "self_attn.dense"))
        tensors.update(pair(None, b + "ffn_up", p + "mlp.fc1"))
        tensors.update(pair(None, b + "ffn_down", p + "mlp.fc2"))
    tensors.update(pair(None, "output_norm", "final_layer_norm" if neox else "final_layernorm", vector))
    if neox:
        tensors["output.weight"] = matrix(w["embed_out.weight"])
    else:
        tensors.update(pair(None, "output", "lm_head"))
    return kvs, tensors


def convert_gpt2(folder, kind):
    """(kvs, tensors) of a Hugging Face GPT-2 snapshot folder (config.json, model.safetensors with or
    without the transformer. prefix, tokenizer.json) as llama.cpp lays out "gpt2": its Conv1D weights
    transposed to (out, in), c_attn as attn_qkv (q, k, v rows one after the other), output.weight a copy
    of token_embd (llama.cpp's converter writes one), the byte-level BPE with pre-tokenizer gpt-2."""
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        tokenizer = json.load(f)
    src, _ = hfweights.read_weights(folder)
    w = {k.removeprefix("transformer."): t.load().astype(np.float32) for k, t in src.items()}
    D, L = c["n_embd"], c["n_layer"]
    a = "gpt2."
    kvs = {"general.architecture": "gpt2", "general.name": "random gpt2", "general.file_type": FILE_TYPES[kind],
           a + "context_length": c["n_positions"], a + "embedding_length": D, a + "block_count": L,
           a + "feed_forward_length": c.get("n_inner") or 4 * D, a + "attention.head_count": c["n_head"],
           a + "attention.layer_norm_epsilon": float(c["layer_norm_epsilon"]), **bpe_keys(tokenizer, "gpt-2")}

    def matrix(t):
        return kind, t.shape, qformats.quantize(t, kind).tobytes()

    def vector(t):
        return "F32", t.shape, t.astype("<f4").tobytes()
    tensors = {"token_embd.weight": matrix(w["wte.weight"]), "position_embd.weight": vector(w["wpe.weight"])}
    for i in range(L):
        p, b = f"h.{i}.", f"blk.{i}."
        for ours, theirs, linear in (("attn_norm", "ln_1", False), ("attn_qkv", "attn.c_attn", True),
                                     ("attn_output", "attn.c_proj", True), ("ffn_norm", "ln_2", False),
                                     ("ffn_up", "mlp.c_fc", True), ("ffn_down", "mlp.c_proj", True)):
            weight = w[p + theirs + ".weight"]
            tensors[b + ours + ".weight"] = matrix(np.ascontiguousarray(weight.T)) if linear else vector(weight)
            tensors[b + ours + ".bias"] = vector(w[p + theirs + ".bias"])
    tensors.update({"output_norm.weight": vector(w["ln_f.weight"]), "output_norm.bias": vector(w["ln_f.bias"]),
                    "output.weight": matrix(w["wte.weight"])})
    return kvs, tensors


def main(argv):
    p = nltool.ArgumentParser(prog="make_gguf.py", description=__doc__)
    p.add_argument("snapshot", help="make_llama_snapshot.py's --out folder")
    p.add_argument("--out", required=True, help="the .gguf file to write")
    p.add_argument("--type", choices=sorted(qformats.NAMES), default="f32", help="the matrices' type")
    a = p.parse_args(argv)
    if not os.path.isdir(os.path.join(a.snapshot, "hf")):
        raise ToolError(f"{a.snapshot}: has no hf/ folder (make_llama_snapshot.py's --out)")
    data = gguf_bytes(*convert(a.snapshot, qformats.NAMES[a.type]))
    with nltool.writing(a.out):
        with nlformat.atomic_file(a.out) as f:
            f.write(data)
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("make_gguf.py", main, sys.argv[1:])
