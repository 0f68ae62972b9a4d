"""The PyTorch model of arch llama (docs/format.md, "Llama (arch llama, version 4)"), nlmodel.py's
family in a file of its own: training (tools/train/train.py --arch llama) and nlmodel.build() in any
dtype (float64 for the reference checks).

    import nlmodel_llama
    model = nlmodel_llama.Llama(config)            # fresh weights, to train
    logits = model(torch.tensor([ids]))            # (B, n, V)
    tensors = model.export_tensors()               # the file's names, nlformat.llama_tensor_shapes' order

Its module names are the file's names (h.0.attn.c_attn.weight), so a checkpoint's state_dict keys and
the model file's tensors are one set. RoPE pairs interleaved dimensions (2i, 2i+1) of each head, as
Meta's reference code, llama2.c and the engine do; query head i reads KV head i // (H / KVH).

Dimension letters: B sequences, n positions, D width, H query heads, KVH key/value heads, Dh head
width, F MLP hidden width, V vocabulary, L layers.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as Fn

import nlformat
from nlmodel import ACTIVATIONS, BLOCK_NORMS, Norm, layer_placement, run_placement

NORMS = ("rmsnorm", "layernorm", "none")
# the placements its tools run: every one of nlmodel.py's but sub (the engine runs that too)
PLACEMENTS = ("pre", "post", "peri", "post-sublayer", "parallel", "parallel-shared", "mix")


def default_inner(D):
    """F when --n-inner is not given: llama2.c's rule (Meta's, with multiple_of 16): 2/3 of 4D, rounded up
    to a multiple of 16 (352 for D = 128)."""
    return 16 * -(-int(2 * 4 * D / 3) // 16)


def rope(x, pos, theta, rot=None):
    """x (B, heads, n, Dh) with position pos + j at row j: pair (2i, 2i+1) of each head's first rot dims
    (default all Dh) turned by the angle (pos + j) theta^(-2i/rot), as llama2.c's run.c: (x0 cos - x1 sin,
    x0 sin + x1 cos); the dims from rot on as they are (partial rotary)."""
    n, rot = x.shape[-2], rot or x.shape[-1]
    inv = theta ** (-torch.arange(0, rot, 2, dtype=torch.float64) / rot)  # (rot/2)
    angle = torch.outer(torch.arange(pos, pos + n, dtype=torch.float64), inv)  # (n, rot/2)
    cos, sin = angle.cos().to(x.dtype).to(x.device), angle.sin().to(x.dtype).to(x.device)
    x0, x1 = x[..., 0:rot:2], x[..., 1:rot:2]
    return torch.cat([torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], -1).flatten(-2), x[..., rot:]], -1)


class LlamaBlock(nn.Module):
    """One layer: attention (grouped KV heads, QK-norm optional per head or over the projection, RoPE) and
    the gated SiLU MLP, with their norms where the placement puts them (nlmodel.run_placement)."""

    def __init__(self, c, placement, make_norm, layer=0):
        super().__init__()
        D, H, KVH, F = c["n_embd"], c["n_head"], c["n_kv_head"], c["n_inner"]
        Dh = nlformat.head_width(c)
        self.placement, self.H, self.KVH, self.Dh, self.F, self.theta = placement, H, KVH, Dh, F, c["rope_theta"]
        every = c.get("sliding_window_pattern")  # a local layer (format v7): its last W positions, its RoPE base
        self.window = 0 if every and (layer + 1) % every == 0 else c.get("sliding_window", 0)
        if self.window and c.get("rope_local_theta"):
            self.theta = c["rope_local_theta"]
        names = BLOCK_NORMS[placement]
        if "ln_1" in names:
            self.ln_1 = make_norm(D)
        bias = c.get("bias", False)  # every linear's (GPT-NeoX, Phi); attn_bias c_attn's alone (Qwen2)
        self.rot, self.gated = c.get("rope_dims"), c.get("gated_mlp", True)
        self.scale, self.softcap = c.get("attn_scale") or 1 / math.sqrt(Dh), c.get("attn_softcap")
        self.act = {**ACTIVATIONS, "silu": Fn.silu}[c.get("activation", "silu")]
        self.attn = nn.ModuleDict({"c_attn": nn.Linear(D, (H + 2 * KVH) * Dh, bias=c.get("attn_bias", False) or bias),
                                   "c_proj": nn.Linear(H * Dh, D, bias=bias)})
        self.qk_norm = nlformat.qk_norm_kind(c)
        if self.qk_norm:
            whole = self.qk_norm == "projection"
            self.attn["q_norm"] = make_norm(H * Dh if whole else Dh)
            self.attn["k_norm"] = make_norm(KVH * Dh if whole else Dh)
        if "ln_2" in names:
            self.ln_2 = make_norm(D)
        self.mlp = nn.ModuleDict({"c_fc": nn.Linear(D, 2 * F if self.gated else F, bias=bias),
                                  "c_proj": nn.Linear(F, D, bias=bias)})
        for name in ("ln_1_post", "ln_2_post"):
            if name in names:
                setattr(self, name, make_norm(D))
        self.norms = {name: getattr(self, name) for name in names}

    def attention(self, x, future, pos, cache):
        """x (B, n, D) at positions pos..pos+n-1; future (n, pos + n) True where key j lies after query
        i; cache: this layer's rotated keys and values of the positions before x (a dict, extended in
        place), or None."""
        B, n = x.shape[0], x.shape[1]
        H, KVH, Dh = self.H, self.KVH, self.Dh
        q, k, v = self.attn["c_attn"](x).split([H * Dh, KVH * Dh, KVH * Dh], dim=2)
        if self.qk_norm == "projection":  # (B, n, H*Dh) and (B, n, KVH*Dh), before the heads are split
            q, k = self.attn["q_norm"](q), self.attn["k_norm"](k)
        q = q.reshape(B, n, H, Dh).transpose(1, 2)  # (B, H, n, Dh)
        k, v = (t.reshape(B, n, KVH, Dh).transpose(1, 2) for t in (k, v))  # (B, KVH, n, Dh)
        if self.qk_norm == "head":
            q, k = self.attn["q_norm"](q), self.attn["k_norm"](k)
        q, k = rope(q, pos, self.theta, self.rot), rope(k, pos, self.theta, self.rot)
        if cache is not None:
            if cache:
                k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        # query head i reads KV head i // G, G = H / KVH: the queries in groups of G against their KV
        # head, broadcast (the same products as repeating the keys, and a graph ONNX keeps for any n)
        q = q.reshape(B, KVH, H // KVH, n, Dh)
        k, v = k[:, :, None], v[:, :, None]  # (B, KVH, 1, m, Dh)
        att = (q @ k.transpose(-2, -1)) * self.scale  # (B, KVH, G, n, m)
        if self.softcap:  # Gemma 2's soft-capping, before the mask
            att = torch.tanh(att / self.softcap) * self.softcap
        if self.window:  # key j hidden from query i (at pos + i) when j <= pos + i - W
            m = att.shape[-1]
            future = future | (torch.arange(m)[None, :] <= torch.arange(m - n, m)[:, None] - self.window)
        att = att.masked_fill(future, float("-inf")).softmax(-1)
        out = (att @ v).reshape(B, H, n, Dh)
        return self.attn["c_proj"](out.transpose(1, 2).reshape(B, n, H * Dh))

    def feed_forward(self, x):
        """c_proj(act(gate x) * up x): c_fc's rows 0..F-1 the gate, F..2F-1 the up projection; without
        gated_mlp c_proj(act(c_fc x))."""
        if not self.gated:
            return self.mlp["c_proj"](self.act(self.mlp["c_fc"](x)))
        gate, up = self.mlp["c_fc"](x).split(self.F, dim=-1)
        return self.mlp["c_proj"](self.act(gate) * up)

    def forward(self, x, future, pos, cache=None):
        return run_placement(self.placement, x, lambda h: self.attention(h, future, pos, cache), self.feed_forward,
                             self.norms)


class Llama(nn.Module):
    """The Llama of config c, run with norm and placement (default: c's; a norm the file lacks has unit
    gain and zero bias), its parameters in dtype. Fresh weights are GPT-2's initialisation, as
    nlmodel.Transformer's and llama2.c's model.py: N(0, 0.02), the residual projections (attn.c_proj,
    mlp.c_proj) N(0, 0.02 / sqrt(2L)), norm gains 1."""

    def __init__(self, c, norm=None, placement=None, dtype=torch.float32):
        super().__init__()
        self.c = c
        self.norm = norm or c.get("norm", "rmsnorm")
        self.placement = placement or c.get("placement", "pre")
        D, L = c["n_embd"], c["n_layer"]

        def make_norm(width):
            if self.norm == "none":
                return nn.Identity()
            return Norm(self.norm, width, c["norm_eps"], self.norm == "layernorm")

        self.wte = nn.Embedding(c["vocab_size"], D)
        self.h = nn.ModuleList(LlamaBlock(c, layer_placement(self.placement, i, c), make_norm, i) for i in range(L))
        self.ln_f = make_norm(D) if self.placement != "post" else None
        if c["tie_embeddings"] and c.get("head_bias"):
            raise ValueError("head_bias with a head tied to wte is not built here")
        head_bias = c.get("head_bias", False)
        self.lm_head = None if c["tie_embeddings"] else nn.Linear(D, c["vocab_size"], bias=head_bias)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):  # attn.c_proj and mlp.c_proj: the residual projections
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * L))
            elif p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)
        self.to(dtype)

    def forward(self, idx, cache=None):
        """idx (B, n) token ids -> logits (B, n, V): head(stream(idx, cache))."""
        return self.head(self.stream(idx, cache))

    def stream(self, idx, cache=None):
        """The residual stream (B, n, D) after the last block. cache: None (idx at positions 0..n-1), or
        new_cache()'s list, holding the keys and values of the positions before idx, extended by these."""
        n = idx.shape[1]
        pos = cache[0]["k"].shape[2] if cache and cache[0] else 0  # positions before idx
        at = torch.arange(n, device=idx.device) + pos
        future = torch.arange(pos + n, device=idx.device)[None, :] > at[:, None]  # (n, pos + n)
        x = self.wte(idx)
        if self.c.get("embed_scale"):  # Gemma's sqrt(D), rounded to the model's dtype as it multiplies
            x = x * torch.tensor(self.c["embed_scale"], dtype=x.dtype)
        for i, block in enumerate(self.h):
            x = block(x, future, pos, None if cache is None else cache[i])
        return x

    def head(self, x):
        """Logits (B, n, V) of stream rows x (B, n, D): ln_f where the placement has one, then lm_head
        (the embedding, tied)."""
        if self.ln_f is not None:
            x = self.ln_f(x)
        logits = x @ self.wte.weight.t() if self.lm_head is None else self.lm_head(x)
        cap = self.c.get("final_softcap")  # Gemma 2's logits, cap tanh(logit / cap)
        return torch.tanh(logits / cap) * cap if cap else logits

    def new_cache(self):
        """An empty KV cache for forward: one dict per layer."""
        return [{} for _ in self.h]

    def load_tensors(self, tensors):
        """Sets every parameter from a model file's tensors (file name -> numpy array). A norm tensor the
        file lacks keeps unit gain and zero bias (a model run with another norm or placement); any other
        missing tensor is a ValueError."""
        with torch.no_grad():
            for name, t in self.state_dict().items():
                if name in tensors:
                    t.copy_(torch.from_numpy(np.asarray(tensors[name])))
                elif not isinstance(self.get_submodule(name.rsplit(".", 1)[0]), Norm):
                    raise ValueError(f"the model has no tensor {name}")
        return self

    def export_tensors(self):
        """Float32 tensors under the file's names, in the order nlformat.llama_tensor_shapes lists them."""
        own = {k: t.detach().cpu().numpy().astype(np.float32) for k, t in self.state_dict().items()}
        order = nlformat.llama_tensor_shapes(self.c)
        assert set(order) == set(own), (set(order) ^ set(own))
        return {n: own[n] for n in order}
