"""What every Hugging Face decoder family's import shares (tools/interop/families/, one file each; the
registry is tools/interop/import_hf.py's FAMILIES): config.json's fields read and checked, the
tensors a family's layout names checked against the snapshot and converted, and the model folder
written. A family file gives:

    ARCHITECTURE   config.json's architectures[0]; MODEL_TYPE its model_type
    SUMMARY        one line: the family's block and twists (import_hf.py's list, the import's report)
    PREFIX         the tensors' name prefix ("model.": also read without it)
    config(cfg, where, ctx) -> normlab's arch llama config (nlformat.llama_config) from config.json
    layout(config) -> {normlab's tensor: Source}, the HF tensors each is made of
    and optionally DROPPED (buffers that are no weight), CONTEXT_KEY (config.json's context, if not
    max_position_embeddings) and from_weights(config, names) (a config field the tensors decide).

RoPE: Hugging Face rotates the halves of each head's turned dims (rotate_half: dim i with i + rot/2)
and its convert_llama_weights_to_hf.py permutes Meta's q and k rows to match; normlab rotates Meta's
interleaved pairs (2i, 2i+1). pair_rotary undoes the permute, as llama.cpp's converter does: in each
head, HF's row a rot/2 + i becomes row 2i + a (a = 0, 1), the rows past rot stay. q.k and the rotation
are then the same numbers in another order, so the logits are HF's exactly.
"""
import argparse
import hashlib
import os
import sys

import hfweights
import nlformat
import nltool
import spmjson
from import_hf_gpt2 import same_rows
from nltool import ToolError

import numpy as np

CTX_LIMIT = 1 << 16  # the most positions the engine's config takes (block_size, engine/config.c)
FLT_MAX = 3.4028234663852886e38  # the largest float: the engine keeps RoPE's table in float
DROPPED = ("rotary_emb.inv_freq",)  # RoPE's frequencies, which older checkpoints saved: not a weight


# ---- config.json's fields

def positive(cfg, key, where, default=None):
    """config.json's key, a positive integer (default where it is absent or null), else a ToolError."""
    v = cfg.get(key)
    v = default if v is None else v  # (HF writes num_key_value_heads: null for "as many as the heads")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ToolError(f"{where}: {key} is " + ("missing" if v is None else f"{v!r}, not a positive integer"))
    return v


def number(cfg, key, where, lo, hi, default=None):
    """config.json's key, a number in [lo, hi] (default where it is absent), else a ToolError naming it."""
    v = cfg.get(key, default)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not lo <= v <= hi:
        raise ToolError(f"{where}: {key} is {v!r}, not a number in [{lo:g}, {hi:g}]")
    return v


def refuse_unless(cfg, where, **wants):
    """Each key of config.json equal to its wanted value (or absent), else a ToolError naming it."""
    for key, want in wants.items():
        if cfg.get(key, want) != want:
            raise ToolError(f"{where}: {key} is {cfg[key]!r}, not {want!r}: normlab does not run it")


def heads(cfg, where):
    """(D, H, KVH, Dh) checked: H divides D unless head_dim is given, KVH divides H."""
    D, H = positive(cfg, "hidden_size", where), positive(cfg, "num_attention_heads", where)
    KVH = positive(cfg, "num_key_value_heads", where, H)
    if cfg.get("head_dim") is None and D % H:
        raise ToolError(f"{where}: num_attention_heads {H} does not divide hidden_size {D}, and no head_dim is given")
    if H % KVH:
        raise ToolError(f"{where}: num_key_value_heads {KVH} does not divide num_attention_heads {H}")
    return D, H, KVH, D // H if cfg.get("head_dim") is None else positive(cfg, "head_dim", where)


def llama_config(cfg, where, ctx, tied=False, **fields):
    """normlab's arch llama config from a Llama-layout config.json (RMSNorm by rms_norm_eps, RoPE over
    whole heads by rope_theta, unscaled), every common field checked; its context
    max_position_embeddings capped at ctx; fields: nlformat.llama_config's keywords (None: unset)."""
    D, H, KVH, Dh = heads(cfg, where)
    if Dh % 2 or Dh > 1024:
        raise ToolError(f"{where}: head width {Dh} is " + ("odd: RoPE rotates pairs of dimensions" if Dh % 2
                                                          else "over 1024, the engine's limit"))
    theta = cfg.get("rope_theta", 10000.0)
    if not isinstance(theta, (int, float)) or isinstance(theta, bool) or not 1 <= theta <= FLT_MAX:
        raise ToolError(f"{where}: rope_theta is {theta!r}, not a number in [1, {FLT_MAX:g}] (RoPE's base, a float)")
    if cfg.get("rope_scaling") is not None:
        raise ToolError(f"{where}: rope_scaling {cfg['rope_scaling']!r} is set: normlab runs RoPE unscaled only")
    eps = cfg.get("rms_norm_eps", 1e-6)
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not 0 < eps < 1:
        raise ToolError(f"{where}: rms_norm_eps is {eps!r}, not a number in (0, 1)")
    refuse_unless(cfg, where, mlp_bias=False, use_sliding_window=False)
    T = min(positive(cfg, "max_position_embeddings", where), ctx)
    return nlformat.llama_config(
        positive(cfg, "vocab_size", where), positive(cfg, "num_hidden_layers", where), H, KVH, D,
        T, positive(cfg, "intermediate_size", where), eps, theta,
        bool(cfg.get("tie_word_embeddings", tied)), head_dim=Dh, **fields)


def extend(config, **fields):
    """config with fields added in their order, those None left out (nlformat.llama_config's rule)."""
    config.update({k: v for k, v in fields.items() if v is not None})
    return config


def options(p):
    """The options of a decoder family's import, added to the argparse parser p."""
    hfweights.dtype_option(p)
    p.add_argument("--ctx", type=context_cap, default=CTX_LIMIT, metavar="N",
                   help=f"the most positions the model keeps (block_size): max_position_embeddings, capped at N "
                        f"(default {CTX_LIMIT}, the engine's limit)")


def context_cap(text):
    """--ctx's value: a number of positions the engine can hold, else a usage error."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= CTX_LIMIT:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of positions from 1 to {CTX_LIMIT} "
                                         "(the engine's limit)")
    return n


# ---- the layout: which HF tensors make each of normlab's

class Source:
    """One normlab tensor from the snapshot's: parts [(HF name without the prefix, shape)], joined by
    join(arrays) -> array; matrix: a weight matrix, kept in its stored type (else a norm gain or a
    bias: float32)."""

    def __init__(self, parts, join=None, matrix=False):
        self.parts, self.join, self.matrix = list(parts), join or (lambda a: a[0]), matrix


def pair_rotary(a, heads, rot):
    """Each of heads heads' first rot rows of a (rows or a vector) from rotate_half's halves into
    (2i, 2i+1) pairs: the inverse of convert_llama_weights_to_hf.py's permute; the other rows stay."""
    per = a.shape[0] // heads
    h = a.reshape((heads, per) + a.shape[1:]).copy()
    first = h[:, :rot]
    h[:, :rot] = first.reshape((heads, 2, rot // 2) + a.shape[1:]).swapaxes(1, 2).reshape(first.shape)
    return np.ascontiguousarray(h.reshape(a.shape))


def qkv_rows(config):
    """q's, k's and v's rows (H*Dh, KVH*Dh, KVH*Dh), the heads of q and k, and RoPE's dims of a head."""
    H, KVH, Dh = config["n_head"], config["n_kv_head"], nlformat.head_width(config)
    return (H * Dh, KVH * Dh, KVH * Dh), (H, KVH), config.get("rope_dims", Dh)


def qkv_source(config, names, part, D):
    """c_attn's weight (part "weight") or bias from q, k and v's tensors names (HF's, without
    ".weight"), their rotary rows paired."""
    rows, (H, KVH), rot = qkv_rows(config)
    shapes = [(r, D) if part == "weight" else (r,) for r in rows]
    return Source([(n + "." + part, s) for n, s in zip(names, shapes)],
                  lambda a: np.concatenate([pair_rotary(a[0], H, rot), pair_rotary(a[1], KVH, rot), a[2]]),
                  part == "weight")


def gain(name, width, one_plus=False):
    """A norm gain of width values; one_plus: HF multiplies by (1 + w), computed in float32 (Gemma's),
    baked in here so that the gain is 1 + w."""
    return Source([(name, (width,))], (lambda a: np.float32(1) + a[0].astype(np.float32)) if one_plus else None)


PRE_NORMS = {"ln_1": "input_layernorm", "ln_2": "post_attention_layernorm"}  # normlab's -> HF's, pre-norm


def llama_layout(config, norms, one_plus=False):
    """The Llama layout (q/k/v/o_proj, gate/up/down_proj, embed_tokens, norm, lm_head unless tied):
    normlab's tensor -> Source; norms: normlab's block norm -> HF's module (the family's placement);
    q_norm/k_norm per head (Dh) or over the projection (H*Dh, KVH*Dh), paired as q's rows are."""
    V, D, F, L = (config[k] for k in ("vocab_size", "n_embd", "n_inner", "n_layer"))
    rows, (H, KVH), Dh = qkv_rows(config)
    whole = nlformat.qk_norm_kind(config) == "projection"
    out = {"wte.weight": Source([("embed_tokens.weight", (V, D))], matrix=True),
           "ln_f.weight": gain("norm.weight", D, one_plus)}
    if not config["tie_embeddings"]:
        out["lm_head.weight"] = Source([("lm_head.weight", (V, D))], matrix=True)
    for i in range(L):
        p, h, a = f"layers.{i}.", f"h.{i}.", f"layers.{i}.self_attn."
        out.update({h + ours + ".weight": gain(p + theirs + ".weight", D, one_plus) for ours, theirs in norms.items()})
        qkv = [a + m for m in ("q_proj", "k_proj", "v_proj")]
        out[h + "attn.c_attn.weight"] = qkv_source(config, qkv, "weight", D)
        out[h + "attn.c_attn.bias"] = qkv_source(config, qkv, "bias", D)
        for m, heads_, width in (("q_norm", H, rows[0]), ("k_norm", KVH, rows[1])):
            g, n = gain(a + m + ".weight", width if whole else Dh, one_plus), heads_ if whole else 1
            out[h + f"attn.{m}.weight"] = Source(g.parts, lambda x, g=g, n=n: pair_rotary(g.join(x), n, Dh))
        out[h + "attn.c_proj.weight"] = Source([(a + "o_proj.weight", (D, rows[0]))], matrix=True)
        out[h + "mlp.c_fc.weight"] = Source([(p + "mlp.gate_proj.weight", (F, D)), (p + "mlp.up_proj.weight", (F, D))],
                                            np.concatenate, True)
        out[h + "mlp.c_proj.weight"] = Source([(p + "mlp.down_proj.weight", (D, F))], matrix=True)
    return out


# ---- the conversion and the written folder

def plain_names(src, prefix, dropped):
    """HF's tensors by their names without the prefix, the buffers that are no weight dropped."""
    out = {}
    for k, v in src.items():
        name = k[len(prefix):] if k.startswith(prefix) else k
        if name.endswith(dropped):
            continue
        if name in out:
            raise ToolError(f"{v.path}: holds {name} twice, with and without the {prefix} prefix")
        v.hf_name = k  # its name in the file, for the messages
        out[name] = v
    return out


def finite(t):
    """t's values, refused when one is NaN or Inf (a damaged or overflowed F16/BF16 weight)."""
    a = t.load()
    if not np.all(np.isfinite(a)):
        bad = "a NaN" if np.isnan(a).any() else "an Inf"
        raise ToolError(f"{t.path}: tensor {t.hf_name} ({t.dtype}) holds {bad}")
    return a


def check_tensors(hf, want, config, where, prefix):
    """Every tensor want names present in hf with its shape, and no other, else a ToolError."""
    for name, shape in want.items():
        if name not in hf:
            raise ToolError(f"the weights lack {name} (or {prefix}{name}), which {where} needs"
                            + (" (tie_word_embeddings is false)" if name == "lm_head.weight" else ""))
        if tuple(hf[name].shape) != shape:
            raise ToolError(f"{hf[name].path}: {hf[name].hf_name} has shape {tuple(hf[name].shape)}, "
                            f"{where} says {shape} "
                            f"(hidden_size {config['n_embd']}, num_attention_heads {config['n_head']}, "
                            f"num_key_value_heads {config['n_kv_head']}, intermediate_size {config['n_inner']}, "
                            f"vocab_size {config['vocab_size']})")
    extra = sorted(set(hf) - set(want))
    if extra:
        raise ToolError(f"{hf[extra[0]].path}: holds tensors that {where} does not describe: "
                        + ", ".join(hf[n].hf_name for n in extra[:4]))


def convert_tensors(src, config, family, where, dtype=None):
    """normlab's tensors (Deferred: read when written) from HF's by the family's layout, every shape
    checked first; the matrices written as hfweights.matrix_type says, norm gains and biases float32."""
    hf = plain_names(src, family.PREFIX, getattr(family, "DROPPED", DROPPED))
    if "lm_head.weight" in hf and config["tie_embeddings"]:
        head, emb = hf.pop("lm_head.weight"), hf.get("embed_tokens.weight")
        if emb is None or head.shape != emb.shape or not same_rows(head, emb, head.shape[0]):
            raise ToolError(f"{head.path}: lm_head.weight differs from embed_tokens.weight, but {where} says "
                            "tie_word_embeddings: true")
    shapes = nlformat.llama_tensor_shapes(config)
    table = family.layout(config)
    check_tensors(hf, {n: s for name in shapes for n, s in table[name].parts}, config, where, family.PREFIX)
    out = {}
    for name, shape in shapes.items():
        source = table[name]

        def load(s=source):
            return s.join([finite(hf[n]) for n, _ in s.parts])
        if not source.matrix:
            out[name] = nlformat.Deferred(shape, load)
            continue
        parts = [hf[n] for n, _ in source.parts]
        kind = hfweights.matrix_type(parts, dtype)
        names = " | ".join(t.hf_name for t in parts)
        out[name] = nlformat.Deferred(
            shape, lambda f=load, k=kind, w=parts[0].path, n=names: hfweights.storable(f(), k, w, n), kind)
    return out


def read_tokenizer(folder):
    """(the tokenizer.json text, the file it came from): tokenizer.json as it is, else tokenizer.model
    (SentencePiece) in normlab's sentencepiece form (tools/lib/spmjson.py)."""
    tj, tm = os.path.join(folder, "tokenizer.json"), os.path.join(folder, "tokenizer.model")
    if os.path.isfile(tj):
        with open(tj, "rb") as f:
            return f.read().decode("utf-8", "replace"), tj
    if not os.path.isfile(tm):
        raise ToolError(f"{folder}: has neither tokenizer.json nor tokenizer.model")
    with open(tm, "rb") as f:
        data = f.read(64 << 20)
    try:
        return spmjson.dumps(spmjson.read_model_proto(data)), tm
    except ValueError as e:
        raise ToolError(f"{tm}: {e}")


def write_import(a, where, arch, config, tensors, files):
    """The model folder a.out of config and tensors, with the snapshot's tokenizer and its provenance
    (the weight files' names and digest), checked by the engine's loader before it replaces anything."""
    tokenizer, tj = read_tokenizer(a.snapshot)
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            digest.update(hashlib.file_digest(f, "sha256").digest())
    meta = {"source": f"Hugging Face {arch} snapshot (tools/interop/import_hf.py)",
            "source_files": ",".join(os.path.basename(f) for f in files), "source_sha256": digest.hexdigest()}
    shown = {"config.json": where, "tokenizer.json": tj, "model.safetensors": files[0]}
    with nltool.writing(a.out):
        nlformat.write_model_dir(a.out, config, tokenizer, tensors, metadata=meta,
                                 check=lambda new, _: nltool.check_model(new, a.snapshot, shown))


def run(a, cfg, family):
    """Import the snapshot a.snapshot (config.json cfg) of family into a.out; report what was written."""
    where = os.path.join(a.snapshot, "config.json")
    config = family.config(cfg, where, a.ctx)
    src, files = hfweights.read_weights(a.snapshot)
    if hasattr(family, "from_weights"):
        family.from_weights(config, src)
    tensors = convert_tensors(src, config, family, where, hfweights.DTYPE_FLAGS[a.dtype])
    write_import(a, where, family.ARCHITECTURE, config, tensors, files)
    kinds = sorted({t.dtype for t in tensors.values()} - {"F32"})
    key = getattr(family, "CONTEXT_KEY", "max_position_embeddings")
    Dh, capped = nlformat.head_width(config), cfg[key] > config["block_size"]
    print(f"wrote {a.out}: {family.ARCHITECTURE}, {config['n_layer']} layers x {config['n_embd']}, "
          f"{config['n_head']} heads over {config['n_kv_head']} KV heads"
          + (f", placement {config['placement']}" if config["placement"] != "pre" else "")
          + (f", RoPE on {config['rope_dims']} of {Dh} dims" if "rope_dims" in config else "")
          + f", vocabulary {config['vocab_size']}, context {config['block_size']}"
          + (f" ({key} {cfg[key]} capped by --ctx)" if capped else "")
          + f", head {'tied' if config['tie_embeddings'] else 'untied'}{', QK-norm' if config['qk_norm'] else ''}"
          + (f", matrices stored {'/'.join(kinds)}" if kinds else ""), file=sys.stderr)
