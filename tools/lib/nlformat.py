"""Read and write normlab model directories (config.json, tokenizer.json, model.safetensors).

The format is documented in docs/format.md. This module needs only the standard
library and numpy, so the export, reference and fixture tools share one reader and one writer.

Dimension letters: V vocabulary, T context (block_size), D width (n_embd), F MLP width, L layers.
"""
import contextlib
import ctypes
import json
import os
import shutil
import struct
import tempfile

import numpy as np

import nltool
import qformats

FORMAT = {"name": "normlab", "version": 1}
# Each placement's norms in a block (tools/lib/nlmodel.py runs them; docs/comparing.md)
BLOCK_NORMS = {
    "pre": ("ln_1", "ln_2"), "post": ("ln_1", "ln_2"), "mix": ("ln_1", "ln_2"),
    "peri": ("ln_1", "ln_2", "ln_1_post", "ln_2_post"), "post-sublayer": ("ln_1_post", "ln_2_post"),
    "parallel": ("ln_1", "ln_2"), "parallel-shared": ("ln_1",), "sub": ("ln_1", "ln_2", "ln_1_sub", "ln_2_sub"),
}


def format_version(config):
    """The lowest format version that describes config: 1 unless it uses a version-2 feature, so a
    model that an older normlab can run keeps the version it reads."""
    v5 = (config.get("norm") == "dyt" or config.get("placement", "pre") not in ("pre", "post", "peri")
          or "block" in config)  # version 5 adds norm dyt, docs/comparing.md's placements beyond these three, "block"
    if config.get("arch") == "llama":  # version 4 adds arch llama; 6 its head_dim and qk_norm "head"|"projection"
        v6 = any(k in config for k in ("head_dim", "rope_dims", "activation", "gated_mlp", "bias", "embed_scale",
                                       "attn_scale", "attn_softcap", "final_softcap"))
        if any(k in config for k in ("sliding_window", "sliding_window_pattern", "rope_local_theta")):
            return 7  # version 7 adds the sliding windows and the local layers' RoPE base
        return 6 if v6 or isinstance(config.get("qk_norm"), str) else 5 if v5 else 4
    if config.get("arch", "transformer") != "transformer":
        return 3  # version 3 adds arch lstm|gru
    if v5:
        return 5
    v2 = (config.get("norm") in ("batchnorm", "none") or config.get("placement") == "peri"
          or config.get("residual_scale", 1.0) != 1.0)
    return 2 if v2 else 1  # version 2 adds norm batchnorm|none, placement peri and residual_scale


def mlp_width(config):
    """F: n_inner when given, else mlp_ratio * n_embd."""
    if config.get("n_inner") is not None:
        return int(config["n_inner"])
    return int(config.get("mlp_ratio", 4) * config["n_embd"])


RNN_GATES = {"lstm": 4, "gru": 3}  # rows of weight_ih and weight_hh, in units of n_hidden


def rnn_tensor_shapes(config):
    """The tensor set of a recurrent model (arch lstm|gru), name -> shape. E n_embd, H n_hidden.
    LSTM gate rows f|i|o|g; GRU rows z|r|candidate (weight_hh's candidate rows are U)."""
    V, E, H, L = config["vocab_size"], config["n_embd"], config["n_hidden"], config["n_layer"]
    arch, ln = config["arch"], config["norm"] == "layernorm"
    G = RNN_GATES[arch]
    shapes = {"wte.weight": (V, E)}
    for i in range(L):
        p = f"rnn.{i}."
        shapes[p + "weight_ih"] = (G * H, E if i == 0 else H)
        shapes[p + "weight_hh"] = (G * H, H)
        if arch == "lstm":
            shapes[p + "bias"] = (4 * H,)
            norms = {"ln_ih": 4 * H, "ln_hh": 4 * H, "ln_cell": H}
        else:
            if not ln:
                shapes[p + "bias_ih"] = (3 * H,)
                shapes[p + "bias_hh"] = (3 * H,)
            norms = {"ln_ih": 2 * H, "ln_hh": 2 * H, "ln_ih_cand": H, "ln_hh_cand": H}
        if ln:
            for name, n in norms.items():
                shapes[p + name + ".weight"] = (n,)
                shapes[p + name + ".bias"] = (n,)
    shapes["lm_head.weight"] = (V, H)
    shapes["lm_head.bias"] = (V,)
    return shapes


def llama_tensor_shapes(config):
    """The tensor set of arch llama (format version 4), name -> shape: no position table; c_attn's rows
    q (H*Dh), k (KVH*Dh), v (KVH*Dh), RoPE's pairs interleaved (dims 2i, 2i+1 of a head); c_fc's rows
    the gate (F), then the up projection (F) (gated_mlp false: F rows, no gate); with bias every linear
    has one. KVH n_kv_head, Dh head_width(config). The norms are the
    config's, as the engine binds them: RMSNorm a gain, LayerNorm a gain and a bias, none nothing
    (QK-norm's too: (Dh) per head, (H*Dh) and (KVH*Dh) over the projection); each block's are its
    placement's (BLOCK_NORMS: peri adds ln_1_post and ln_2_post), and post has no ln_f."""
    V, D, L, H, KVH, F = (config[k] for k in ("vocab_size", "n_embd", "n_layer", "n_head", "n_kv_head", "n_inner"))
    Dh = head_width(config)
    kind, placement = config.get("norm", "rmsnorm"), config.get("placement", "pre")
    qk, bias = qk_norm_kind(config), config.get("bias", False)
    block = BLOCK_NORMS[placement]
    shapes = {"wte.weight": (V, D)}

    def norm(name, width):
        if kind != "none":
            shapes[name + ".weight"] = (width,)
        if kind == "layernorm":
            shapes[name + ".bias"] = (width,)

    for i in range(L):
        p = f"h.{i}."
        if "ln_1" in block:
            norm(p + "ln_1", D)
        shapes[p + "attn.c_attn.weight"] = ((H + 2 * KVH) * Dh, D)
        if config.get("attn_bias") or bias:
            shapes[p + "attn.c_attn.bias"] = ((H + 2 * KVH) * Dh,)
        if qk:
            norm(p + "attn.q_norm", H * Dh if qk == "projection" else Dh)
            norm(p + "attn.k_norm", KVH * Dh if qk == "projection" else Dh)
        shapes[p + "attn.c_proj.weight"] = (D, H * Dh)
        if bias:
            shapes[p + "attn.c_proj.bias"] = (D,)
        if "ln_1_post" in block:
            norm(p + "ln_1_post", D)
        if "ln_2" in block:
            norm(p + "ln_2", D)
        up = 2 * F if config.get("gated_mlp", True) else F
        shapes[p + "mlp.c_fc.weight"] = (up, D)
        if bias:
            shapes[p + "mlp.c_fc.bias"] = (up,)
        shapes[p + "mlp.c_proj.weight"] = (D, F)
        if bias:
            shapes[p + "mlp.c_proj.bias"] = (D,)
        if "ln_2_post" in block:
            norm(p + "ln_2_post", D)
    if placement != "post":
        norm("ln_f", D)
    if not config["tie_embeddings"]:
        shapes["lm_head.weight"] = (V, D)
    if config.get("head_bias"):  # (normlab fold writes it: a norm's bias moved into the head)
        shapes["lm_head.bias"] = (V,)
    return shapes


def llama_config(V, L, H, KVH, D, T, F, eps, theta, tied, qk_norm=False, attn_bias=False, norm="rmsnorm",
                 placement="pre", head_dim=None, **v6):
    """An arch llama config (docs/format.md), its keys in the documented order. qk_norm: False, True (per
    head) or "projection"; head_dim: Dh where it is not D / H; v6: rope_dims, activation, gated_mlp, bias,
    embed_scale and head_bias where a family sets them (GPT-NeoX, Phi, Gemma)."""
    c = {"arch": "llama", "vocab_size": V, "n_layer": L, "n_head": H, "n_kv_head": KVH, "n_embd": D,
         "block_size": T, "n_inner": F, "norm": norm, "placement": placement, "norm_eps": float(eps),
         "rope_theta": float(theta), "tie_embeddings": bool(tied),
         "qk_norm": qk_norm if qk_norm == "projection" else bool(qk_norm), "attn_bias": bool(attn_bias)}
    if head_dim is not None and (head_dim != D // H or D % H):
        c["head_dim"] = int(head_dim)
    c.update({k: v for k, v in v6.items() if v is not None})
    return c


def head_width(config):
    """Dh: config's head_dim, else n_embd / n_head."""
    return int(config.get("head_dim") or config["n_embd"] // config["n_head"])


def qk_norm_kind(config):
    """None, "head" (qk_norm true or "head": each head's Dh values) or "projection" (OLMo 2's: q's H*Dh
    and k's KVH*Dh values at once)."""
    qk = config.get("qk_norm", False)
    return qk if isinstance(qk, str) else "head" if qk else None


def block_recipe_norms(steps):
    """The norms a config.json "block" names (docs/format.md's grammar): each norm step's, and each
    branch's inner one (its fourth word); the engine checks the rest of the grammar."""
    names = set()
    for step in steps:
        words = str(step).split()
        if words[:1] == ["norm"] and len(words) == 4:
            names.add(words[1])
        elif words[:1] in (["attn"], ["mlp"]) and len(words) == 4:
            names.add(words[3])
    return tuple(sorted(names))


def tensor_shapes(config, rms_bias=False):
    """The exact tensor set a config requires, name -> shape (torch.nn.Linear layout (out, in))."""
    if config.get("arch") == "llama":
        return llama_tensor_shapes(config)
    if config.get("arch", "transformer") != "transformer":
        return rnn_tensor_shapes(config)
    V, T, D, L = config["vocab_size"], config["block_size"], config["n_embd"], config["n_layer"]
    F = mlp_width(config)
    kind = config["norm"]
    placement = config.get("placement", "custom" if "block" in config else "pre")
    norm_has_bias = kind in ("layernorm", "batchnorm", "dyt") or rms_bias
    shapes = {"wte.weight": (V, D), "wpe.weight": (T, D)}
    block_norms = block_recipe_norms(config["block"]) if "block" in config else BLOCK_NORMS[placement]
    final_norm = config.get("final_norm", True) if "block" in config else placement != "post"

    def norm(name, width=D):
        if kind == "none":
            return
        shapes[name + ".weight"] = (width,)
        if norm_has_bias:
            shapes[name + ".bias"] = (width,)
        if kind == "batchnorm":
            shapes[name + ".running_mean"] = (width,)
            shapes[name + ".running_var"] = (width,)
        if kind == "dyt":
            shapes[name + ".alpha"] = (1,)

    def linear(name, n_out, n_in):
        shapes[name + ".weight"] = (n_out, n_in)
        if config["bias"]:
            shapes[name + ".bias"] = (n_out,)

    for i in range(L):  # the attention (1), then the MLP (2): input norm, in, inner norm, out, output norm
        for part, branch, first, width in (("1", "attn", "c_attn", D), ("2", "mlp", "c_fc", F)):
            if "ln_" + part in block_norms:
                norm(f"h.{i}.ln_{part}")
            linear(f"h.{i}.{branch}.{first}", 3 * D if part == "1" else F, D)
            if f"ln_{part}_sub" in block_norms:
                norm(f"h.{i}.ln_{part}_sub", width)
            linear(f"h.{i}.{branch}.c_proj", D, width)
            if f"ln_{part}_post" in block_norms:
                norm(f"h.{i}.ln_{part}_post")
    if final_norm:
        norm("ln_f")
    if not config["tie_embeddings"]:
        shapes["lm_head.weight"] = (V, D)
    if config.get("head_bias"):  # (normlab fold writes it: a norm's bias moved into the head)
        shapes["lm_head.bias"] = (V,)
    return shapes


@contextlib.contextmanager
def atomic_file(path, mode="wb"):
    """A file to write path's new contents into: a temporary file beside it, renamed over path when
    the block ends, or removed if it raises. A reader sees the old file or the new one, never a mix,
    and a program that has the old file mapped keeps its pages (rewriting a mapped file in place
    kills that program with SIGBUS). The file gets the mode open() would give it (0o666 less the
    umask), not tempfile's 0o600."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, nltool.new_file_mode())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(d)


def atomic_write(path, data, mode="wb"):
    """Write data to path whole or not at all (atomic_file)."""
    with atomic_file(path, mode) as f:
        f.write(data)


def fsync_dir(path):
    """Makes a rename in directory path durable (the file's own data was fsynced before it)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _exchange(a, b):
    """Atomically swaps two paths (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    return fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0


class Deferred:
    """A tensor whose values are made when write_safetensors reaches it: its shape now, its values
    from load() (an array of that shape) then. The writer drops each array once written, so a model
    of deferred tensors is written holding one tensor at a time (an importer's peak memory). dtype is
    the type it is stored as: F32, or F16 or BF16 for a weight matrix (docs/format.md, "Stored
    types"), whose values the loader must give exactly (rounded_exactly)."""

    def __init__(self, shape, load, dtype="F32"):
        self.shape, self.load, self.dtype = tuple(int(d) for d in shape), load, dtype


ITEM_BYTES = {"F32": 4, "F16": 2, "BF16": 2}


def _dtype(t):
    return getattr(t, "dtype", "F32") if isinstance(t, Deferred) else "F32"


def float32_first(tensors):
    """tensors (name -> array or Deferred) reordered F32 first, then the 16-bit ones, each group in
    its order, so that every tensor's data starts aligned for its values (as normlab quantize
    writes them). The same dict where all are F32."""
    return {**{n: t for n, t in tensors.items() if _dtype(t) == "F32"},
            **{n: t for n, t in tensors.items() if _dtype(t) != "F32"}}


def safetensors_header(tensors, metadata=None):
    """The length field and JSON header of a safetensors file of tensors (name -> array or Deferred,
    F32 unless a Deferred says F16 or BF16), contiguous, in order."""
    header = {}
    offset = 0
    for name, t in tensors.items():
        nbytes = ITEM_BYTES[_dtype(t)] * int(np.prod(t.shape, dtype=np.int64))
        header[name] = {"dtype": _dtype(t), "shape": list(t.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    head = json.dumps(header, separators=(",", ":")).encode()
    # pad so the data section starts on a cache line: memory-mapped weights read from a 64-byte aligned
    # start decoded 1.3-1.9x faster than from 8 past one (docs/families.md, "Speed")
    head += b" " * (-(8 + len(head)) % 64)
    return struct.pack("<Q", len(head)) + head


def stored_bits(a, dtype):
    """a's values as dtype stores them: float32, or F16's or BF16's bits rounded to nearest even."""
    if dtype == "F16":
        return qformats.f16_bits(a)
    if dtype == "BF16":
        return qformats.bf16_bits(a)
    return np.asarray(a, dtype="<f4", order="C")


def write_safetensors(path, tensors, metadata=None):
    """Write tensors (name -> numpy array or Deferred) contiguously, F32 first (float32_first), then
    in the order given, replacing path; one tensor at a time, so the file is never held in memory
    whole."""
    tensors = float32_first(tensors)
    with atomic_file(path) as f:
        f.write(safetensors_header(tensors, metadata))
        for name, t in tensors.items():
            a = np.asarray(t.load() if isinstance(t, Deferred) else t, dtype="<f4", order="C")  # (0-d stays 0-d)
            if tuple(a.shape) != tuple(t.shape):
                raise ValueError(f"{name}: load() gave shape {a.shape}, not {t.shape}")
            f.write(memoryview(np.ascontiguousarray(stored_bits(a, _dtype(t)))).cast("B"))
            del a


DTYPE_KEY = "dtype."  # __metadata__'s "dtype.NAME": the blocks a U8 tensor NAME holds (docs/format.md)


def read_safetensors_raw(path):
    """Return (name -> (type, shape of its weights, stored bytes), metadata dict without the "dtype."
    entries): type "F32", "F16", "BF16", or the "Q8_0"/"Q4_0" a U8 tensor's entry names. Trusts the
    file: for tools, not the engine."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, e in header.items():
        kind, shape = e["dtype"], list(e["shape"])
        if kind == "U8":
            kind = meta[DTYPE_KEY + name]
            shape[1] = shape[1] // qformats.BLOCK_BYTES[kind] * qformats.BLOCK
        if kind not in ("F32", "F16", "BF16", "Q8_0", "Q4_0"):
            raise ValueError(f"{path}: tensor {name!r} has dtype {kind}, which normlab does not write")
        lo, hi = e["data_offsets"]
        out[name] = (kind, shape, data[base + lo:base + hi])
    return out, {k: v for k, v in meta.items() if not k.startswith(DTYPE_KEY)}


def read_safetensors(path):
    """Return (name -> float32 array, metadata dict): 16-bit and block tensors widened as the engine
    reads them (qformats.dequantize). Trusts the file: for tools, not the engine."""
    raw, meta = read_safetensors_raw(path)
    return {name: qformats.dequantize(b, kind, shape) for name, (kind, shape, b) in raw.items()}, meta


TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "merges.txt")


def write_model_dir(out_dir, config, vocab, tensors, metadata=None, extra=None, check=None):
    """Write a model directory. vocab: list of one-character strings, index = token id; or the text
    of a tokenizer.json (Hugging Face's, or normlab's sentencepiece form), written as it is; or None, for
    GPT-2's older vocab.json + merges.txt, given in extra.

    A model that exists is replaced whole: the new files go into a new directory beside it, the
    other files of the old one (a training log, a checkpoint) are linked in, and the two directories
    are swapped in one step (renameat2 RENAME_EXCHANGE; elsewhere two renames, with a moment where
    the model is missing, never a mix). normlab reads a model's files through one descriptor of its
    directory, so a reader gets the old model or the new one, and one that has the old weights
    mapped keeps them. extra: more files written with the model (name -> text), e.g. its training log.
    check: called as check(new directory, out_dir) before it replaces anything (nltool.check_model:
    the engine's loader); whatever it raises leaves out_dir as it was."""
    out_dir = os.path.realpath(out_dir)  # a symlinked model folder: replace where it points, keep the link
    parent = os.path.dirname(out_dir)
    made = []  # missing parents made here (as save_pretrained does), removed again if the model is not written
    try:
        for d in missing_parents(parent):
            os.mkdir(d)
            made.append(d)
            fsync_dir(os.path.dirname(d))
        write_new_model_dir(out_dir, parent, config, vocab, tensors, metadata, extra, check)
    except BaseException:
        for d in reversed(made):
            with contextlib.suppress(OSError):
                os.rmdir(d)
        raise


def missing_parents(path):
    """The folders from the first missing one down to path that mkdir must make, outermost first."""
    missing = []
    while not os.path.isdir(path) and path != os.path.dirname(path):
        missing.append(path)
        path = os.path.dirname(path)
    return missing[::-1]


def write_new_model_dir(out_dir, parent, config, vocab, tensors, metadata, extra, check):
    """write_model_dir's work, once out_dir's parent exists."""
    new = tempfile.mkdtemp(prefix="." + os.path.basename(out_dir) + ".", suffix=".new", dir=parent)
    try:
        cfg = {"format": {**FORMAT, "version": format_version(config)}, **config}
        atomic_write(os.path.join(new, "config.json"), json.dumps(cfg, indent=2) + "\n", "w")
        if vocab is not None:
            atomic_write(os.path.join(new, "tokenizer.json"), vocab if isinstance(vocab, str) else
                         json.dumps({"type": "char", "vocab": vocab}, ensure_ascii=False, indent=1) + "\n", "w")
        write_safetensors(os.path.join(new, "model.safetensors"), tensors, metadata)
        for name, text in (extra or {}).items():
            atomic_write(os.path.join(new, name), text, "w")
        os.chmod(new, nltool.new_file_mode(directory=True))
        if check:
            check(new, out_dir)
        if not os.path.isdir(out_dir):
            os.rename(new, out_dir)
            fsync_dir(parent)
            return
        for name in os.listdir(out_dir):  # keep what else the folder holds (not an old tokenizer)
            src, dst = os.path.join(out_dir, name), os.path.join(new, name)
            if os.path.lexists(dst) or name in TOKENIZER_FILES:
                continue
            if os.path.isdir(src) and not os.path.islink(src):
                shutil.copytree(src, dst, symlinks=True)
            else:
                try:
                    os.link(src, dst, follow_symlinks=False)
                except OSError:
                    shutil.copy2(src, dst, follow_symlinks=False)
        fsync_dir(new)  # the links too
        if not _exchange(new, out_dir):
            old = new + ".old"
            os.rename(out_dir, old)
            try:
                os.rename(new, out_dir)
            except OSError:
                os.rename(old, out_dir)  # put the old model back rather than leave none
                raise
            new = old
        fsync_dir(parent)
    finally:
        shutil.rmtree(new, ignore_errors=True)


def write_inline_json(path, config, vocab, tensors):
    """Write the single-file form: {"config", "tokenizer", "tensors": {name: {shape, data}}}."""
    doc = {
        "config": {"format": {**FORMAT, "version": format_version(config)}, **config},
        "tokenizer": {"type": "char", "vocab": vocab},
        "tensors": {name: {"shape": list(np.shape(a)),
                           "data": [float(x) for x in np.asarray(a, dtype=np.float32).ravel()]}
                    for name, a in tensors.items()},
    }
    atomic_write(path, json.dumps(doc, ensure_ascii=False) + "\n", "w")


def load_model(path):
    """Load a model directory or single .json file -> (config, vocab, tensors). vocab: the character
    list of a char tokenizer, or the document of a Hugging Face tokenizer.json (a dict)."""
    if os.path.isdir(path):
        with open(os.path.join(path, "config.json")) as f:
            config = json.load(f)
        with open(os.path.join(path, "tokenizer.json"), encoding="utf-8") as f:
            doc = json.load(f)
        vocab = doc["vocab"] if doc.get("type") == "char" else doc
        tensors, _ = read_safetensors(os.path.join(path, "model.safetensors"))
        return config, vocab, tensors
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    tensors = {n: np.asarray(e["data"], dtype=np.float32).reshape(e["shape"])
               for n, e in doc["tensors"].items()}
    return doc["config"], doc["tokenizer"]["vocab"], tensors
