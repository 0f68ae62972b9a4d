#!/usr/bin/python3
"""Convert a Hugging Face snapshot of a parallel-block family into a normlab model directory of arch
llama (docs/format.md, version 6): GPTNeoXForCausalLM (Pythia: placement parallel, or pre where
use_parallel_residual is false; LayerNorm with biases; query_key_value re-laid from its per-head
[q, k, v] rows into q, k, v; partial rotary over the first int(Dh rotary_pct) dims; biases on every
linear; gelu; the untied embed_out) and PhiForCausalLM (Phi-2: placement parallel-shared, one LayerNorm
read by attention and MLP; biases on q, k, v, dense, fc1, fc2 and lm_head; gelu_new, normlab's
gelu_tanh; partial rotary by partial_rotary_factor). Run through tools/interop/import_hf.py:

    /usr/bin/python3 tools/interop/import_hf.py pythia-160m --out weights/pythia-160m [--dtype ...] [--ctx N]

The files, types, --dtype and --ctx as tools/interop/import_hf_llama.py reads them. RoPE: both
families rotate the halves of the turned dims (rotate_half over the first rot dims: dim i pairs with
i + rot/2); normlab pairs (2i, 2i+1), so within each head's first rot rows of q and k (and their
biases) HF's row a rot/2 + i becomes row 2i + a, and the rest stay: the same numbers in another order.

Refused with one line naming the file and what it says: hidden_size not divisible by
num_attention_heads, a rotary fraction whose dims are odd or none, an activation other than the
family's, Phi's qk_layernorm, rope_scaling, a tensor missing or of the wrong shape or one the family
has not, a NaN or Inf in a weight, tie_word_embeddings true (both families untie their head). The
written model is checked by the engine's loader before it replaces anything.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

import hfweights  # noqa: E402
import nlformat  # noqa: E402
from import_hf_llama import finite, number, options, positive, write_import  # noqa: E402
from nltool import ToolError  # noqa: E402

ARCHES = {"GPTNeoXForCausalLM": "gpt_neox", "PhiForCausalLM": "phi"}
ACTIVATION = {"gpt_neox": ("gelu", "gelu"), "phi": ("gelu_new", "gelu_tanh")}  # HF's name, normlab's
PREFIX = {"gpt_neox": "gpt_neox.", "phi": "model."}
# normlab's name -> HF's (without the prefix), per family; {i} a layer; q, k and v come apart below
NAMES = {
    "gpt_neox": {"wte.weight": "embed_in.weight", "ln_f": "final_layer_norm", "lm_head.weight": "embed_out.weight",
                 "ln_1": "input_layernorm", "ln_2": "post_attention_layernorm", "attn.c_proj": "attention.dense",
                 "mlp.c_fc": "mlp.dense_h_to_4h", "mlp.c_proj": "mlp.dense_4h_to_h"},
    "phi": {"wte.weight": "embed_tokens.weight", "ln_f": "final_layernorm", "lm_head.weight": "lm_head.weight",
            "lm_head.bias": "lm_head.bias", "ln_1": "input_layernorm", "attn.c_proj": "self_attn.dense",
            "mlp.c_fc": "mlp.fc1", "mlp.c_proj": "mlp.fc2"},
}


def convert_config(cfg, kind, where, ctx):
    """normlab's arch llama config from a GPT-NeoX or Phi config.json (a dict), every field checked."""
    D, H = positive(cfg, "hidden_size", where), positive(cfg, "num_attention_heads", where)
    KVH = positive(cfg, "num_key_value_heads", where, H) if kind == "phi" else H
    if D % H or H % KVH:
        raise ToolError(f"{where}: num_attention_heads {H} does not divide hidden_size {D}" if D % H else
                        f"{where}: num_key_value_heads {KVH} does not divide num_attention_heads {H}")
    key = "rotary_pct" if kind == "gpt_neox" else "partial_rotary_factor"
    rot = int(D // H * number(cfg, key, where, 0, 1, 0.25 if kind == "gpt_neox" else 0.5))
    if rot < 2 or rot % 2:
        raise ToolError(f"{where}: {key} {cfg.get(key)!r} turns {rot} dims of a head of {D // H}: RoPE needs an even "
                        "count of 2 or more")
    act, ours = ACTIVATION[kind]
    for k, want in (("hidden_act", act), ("rope_scaling", None), ("qk_layernorm", False),
                    ("tie_word_embeddings", False)):
        if cfg.get(k, want) != want:
            raise ToolError(f"{where}: {k} is {cfg[k]!r}, not {want!r}: normlab does not run it")
    theta = number(cfg, "rotary_emb_base" if kind == "gpt_neox" else "rope_theta", where, 1, 3.4e38, 10000)
    parallel = kind == "phi" or cfg.get("use_parallel_residual", True) is True
    return nlformat.llama_config(
        positive(cfg, "vocab_size", where), positive(cfg, "num_hidden_layers", where), H, KVH, D,
        min(positive(cfg, "max_position_embeddings", where), ctx), positive(cfg, "intermediate_size", where),
        number(cfg, "layer_norm_eps", where, 1e-12, 0.5, 1e-5), theta, False, norm="layernorm",
        placement=("parallel-shared" if kind == "phi" else "parallel") if parallel else "pre",
        rope_dims=rot if rot < D // H else None, activation=ours, gated_mlp=False, bias=True,
        head_bias=True if kind == "phi" else None)


def interleave_rot(a, heads, rot):
    """Each head's first rot rows of a (rows or a vector) from rotate_half's halves into (2i, 2i+1)
    pairs; the head's other rows as they are."""
    per = a.shape[0] // heads
    h = a.reshape((heads, per) + a.shape[1:]).copy()
    first = h[:, :rot]
    h[:, :rot] = first.reshape((heads, 2, rot // 2) + a.shape[1:]).swapaxes(1, 2).reshape(first.shape)
    return np.ascontiguousarray(h.reshape(a.shape))


def hf_shapes(c, kind):
    """The HF tensors (names without the prefix) the config needs, name -> shape."""
    V, D, H, KVH, F = c["vocab_size"], c["n_embd"], c["n_head"], c["n_kv_head"], c["n_inner"]
    Dh = D // H
    n = NAMES[kind]
    want = {n["wte.weight"]: (V, D), n["lm_head.weight"]: (V, D), n["ln_f"] + ".weight": (D,),
            n["ln_f"] + ".bias": (D,)}
    if kind == "phi":
        want[n["lm_head.bias"]] = (V,)
    for i in range(c["n_layer"]):
        p = f"layers.{i}."
        lin = {"attn.c_proj": (D, H * Dh), "mlp.c_fc": (F, D), "mlp.c_proj": (D, F)}
        if kind == "gpt_neox":
            lin["qkv"] = (3 * D, D)
        for name, shape in lin.items():
            hf = "attention.query_key_value" if name == "qkv" else n[name]
            want.update({p + hf + ".weight": shape, p + hf + ".bias": shape[:1]})
        for m, rows in (("q_proj", H * Dh), ("k_proj", KVH * Dh), ("v_proj", KVH * Dh)) if kind == "phi" else ():
            want.update({p + f"self_attn.{m}.weight": (rows, D), p + f"self_attn.{m}.bias": (rows,)})
        for norm in ("ln_1", "ln_2") if kind == "gpt_neox" else ("ln_1",):
            want.update({p + n[norm] + ".weight": (D,), p + n[norm] + ".bias": (D,)})
    return want


def plain_names(src, kind):
    """HF's tensors by their names without the family's prefix; buffers that are no weight dropped
    (rotary_emb.inv_freq, GPT-NeoX's attention.bias and masked_bias causal masks)."""
    out = {}
    for k, v in src.items():
        name = k[len(PREFIX[kind]):] if k.startswith(PREFIX[kind]) else k
        if name.endswith(("rotary_emb.inv_freq", "attention.bias", "attention.masked_bias")):
            continue
        if name in out:
            raise ToolError(f"{v.path}: holds {name} twice, with and without the {PREFIX[kind]} prefix")
        v.hf_name = k
        out[name] = v
    return out


def convert_tensors(src, config, kind, where, dtype=None):
    """normlab's tensors (Deferred) from HF's, every shape checked first."""
    hf = plain_names(src, kind)
    want = hf_shapes(config, kind)
    for name, shape in want.items():
        if name not in hf:
            raise ToolError(f"the weights lack {name} (or {PREFIX[kind]}{name}), which {where} needs")
        if tuple(hf[name].shape) != shape:
            raise ToolError(f"{hf[name].path}: {hf[name].hf_name} has shape {tuple(hf[name].shape)}, {where} says "
                            f"{shape} (hidden_size {config['n_embd']}, num_attention_heads {config['n_head']}, "
                            f"intermediate_size {config['n_inner']}, vocab_size {config['vocab_size']})")
    extra = sorted(set(hf) - set(want))
    if extra:
        raise ToolError(f"{hf[extra[0]].path}: holds tensors that {where} does not describe: "
                        + ", ".join(hf[n].hf_name for n in extra[:4]))
    H, KVH, Dh = config["n_head"], config["n_kv_head"], nlformat.head_width(config)
    rot, n = config.get("rope_dims", Dh), NAMES[kind]

    def get(name):
        return finite(hf[name], name)

    def qkv(p, part):  # c_attn's weight or bias: q, k (their rotary rows paired), v
        if kind == "gpt_neox":  # rows per head: q, k, v of Dh each
            a = get(p + "attention.query_key_value." + part)
            a = a.reshape((H, 3, Dh) + a.shape[1:])
            q, k, v = (a[:, j].reshape((H * Dh,) + a.shape[3:]) for j in range(3))
        else:
            q, k, v = (get(p + f"self_attn.{m}.{part}") for m in ("q_proj", "k_proj", "v_proj"))
        return np.concatenate([interleave_rot(q, H, rot), interleave_rot(k, KVH, rot), v])

    def source(name):
        """(load, the HF tensors a matrix comes from, or None for a norm or a bias)."""
        if name in n:
            return (lambda: get(n[name])), ([hf[n[name]]] if name.endswith("weight") and "ln" not in name else None)
        if name.startswith("ln_f."):
            return (lambda: get(n["ln_f"] + name[4:])), None
        _, i, rest = name.split(".", 2)
        p = f"layers.{i}."
        mod, part = rest.rsplit(".", 1)
        if mod == "attn.c_attn":
            parts = [hf[p + "attention.query_key_value.weight"]] if kind == "gpt_neox" else \
                [hf[p + f"self_attn.{m}.weight"] for m in ("q_proj", "k_proj", "v_proj")]
            return (lambda: qkv(p, part)), (parts if part == "weight" else None)
        hf_name = p + n[mod] + "." + part
        return (lambda: get(hf_name)), ([hf[hf_name]] if part == "weight" and not mod.startswith("ln") else None)
    out = {}
    for name, shape in nlformat.llama_tensor_shapes(config).items():
        load, parts = source(name)
        if parts is None:  # a norm's gain or bias, or a linear's bias: float32 always
            out[name] = nlformat.Deferred(shape, load)
            continue
        k = hfweights.matrix_type(parts, dtype)
        names = " | ".join(t.hf_name for t in parts)
        out[name] = nlformat.Deferred(shape, lambda f=load, k=k, w=parts[0].path, n=names: hfweights.storable(
            f(), k, w, n), k)
    return out


def main(argv, cfg, arch):
    a = hfweights.snapshot_arguments("import_hf.py", __doc__, argv, "config.json, weights, tokenizer.json", options)
    where = os.path.join(a.snapshot, "config.json")
    kind = ARCHES[arch]
    config = convert_config(cfg, kind, where, a.ctx)
    src, files = hfweights.read_weights(a.snapshot)
    tensors = convert_tensors(src, config, kind, where, hfweights.DTYPE_FLAGS[a.dtype])
    write_import(a, where, arch, config, tensors, files)
    print(f"wrote {a.out}: {arch}, {config['n_layer']} layers x {config['n_embd']}, {config['n_head']} heads, "
          f"placement {config['placement']}, RoPE on {config.get('rope_dims', nlformat.head_width(config))} of "
          f"{nlformat.head_width(config)} dims, vocabulary {config['vocab_size']}, context {config['block_size']}",
          file=sys.stderr)
