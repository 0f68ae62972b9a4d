"""The one PyTorch model of a normlab model, for every tool that runs one: training (tools/train/train.py),
the reference (tools/reference/reference.py, in float64), the benchmark's PyTorch contestant
(tools/bench/bench.py) and the ONNX export (tools/interop/export_onnx.py). docs/forward.md is the
specification; the engine's own twin, tests/ref_forward.c (C, double), is written apart from it.
Arch llama's model is tools/lib/nlmodel_llama.py's Llama, which build() and load() return for it.

    import nlmodel
    model = nlmodel.load("weights/shakespeare-pre-ln", dtype=torch.float64)  # eval mode, no autograd needed
    logits = model(torch.tensor([ids]))                                      # (B, n, V)
    model = nlmodel.Transformer(config)                                      # fresh weights, to train

Run options, as the engine's --norm, --placement and --bn-stats: a model built with a norm or placement
other than its config's computes that function on the tensors it has. A norm it lacks has unit gain and
no bias; BatchNorm on running statistics needs them (ValueError). Module names are train.py's checkpoint
keys (h.0.c_attn.weight); the model file's GPT-2 names (h.0.attn.c_attn.weight) go in and out through
load_tensors and export_tensors.

Simulated quantization, as the engine's --quantize, --quantize-only and --quantize-act
(engine/quantize.c): build(..., quantize="q8", quantize_only=("mlp",)) rounds the file's float32
matrices with the engine's float32 arithmetic (quantize_tensors), so both run the same rounded weights;
quantize_act="q8" rounds every linear's input rows in the model's dtype (round_rows) before the product.

Dimension letters: B sequences, n positions, T context, D width, H heads, Dh head width, F MLP width,
V vocabulary; recurrent models: E embedding width, S state width, L layers.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as Fn

import nlformat

NORMS = ("layernorm", "rmsnorm", "batchnorm", "dyt", "none")
PLACEMENTS = ("pre", "post", "peri", "post-sublayer", "parallel", "parallel-shared", "mix", "sub")
BLOCK_NORMS = nlformat.BLOCK_NORMS  # each placement's norms in a block, by module name
# DyT's alpha at initialisation (Zhu et al. 2025): 0.5 in every norm; their Llama recipe's 0.8 in the
# attention branch, 0.2 in the MLP's and the final norm.
DYT_ALPHA = (0.5, 0.5, 0.5)


def has_final_norm(placement):
    """Every placement but post ends the stack with ln_f."""
    return placement != "post"


def mix_post_layers(c):
    """Mix-LN's count of leading post layers: c's mix_post_layers, default floor(L/4)."""
    return int(c.get("mix_post_layers", c["n_layer"] // 4))


def layer_placement(placement, i, c):
    """The placement layer i runs: mix's first mix_post_layers(c) layers post, the rest pre."""
    if placement == "mix":
        return "post" if i < mix_post_layers(c) else "pre"
    return placement


def run_placement(placement, x, attn, mlp, norms, alpha=1.0):
    """One block's equations (docs/comparing.md): x (B, n, D) the stream, attn and mlp the branches,
    norms[name] the block's norms (sub's inner ones live in its branches), alpha DeepNorm's residual
    scale (post only)."""
    n = norms
    if placement in ("pre", "sub"):
        x = x + attn(n["ln_1"](x))
        return x + mlp(n["ln_2"](x))
    if placement == "peri":
        x = x + n["ln_1_post"](attn(n["ln_1"](x)))
        return x + n["ln_2_post"](mlp(n["ln_2"](x)))
    if placement == "post-sublayer":
        x = x + n["ln_1_post"](attn(x))
        return x + n["ln_2_post"](mlp(x))
    if placement == "parallel":
        return x + attn(n["ln_1"](x)) + mlp(n["ln_2"](x))
    if placement == "parallel-shared":
        h = n["ln_1"](x)
        return x + attn(h) + mlp(h)
    assert placement == "post", placement
    x = n["ln_1"](alpha * x + attn(x))
    return n["ln_2"](alpha * x + mlp(x))
BN_STATS = ("running", "batch")
ACTIVATIONS = {
    "gelu": Fn.gelu,
    "gelu_tanh": lambda x: Fn.gelu(x, approximate="tanh"),
    "relu": Fn.relu,
}
# module name -> file name, inside a block (h.{i}.c_attn.weight is h.{i}.attn.c_attn.weight in the file)
FILE_NAMES = {"c_attn": "attn.c_attn", "attn_proj": "attn.c_proj", "c_fc": "mlp.c_fc", "mlp_proj": "mlp.c_proj"}
# the engine's NlQuant: levels each side of 0, and columns per group (None: the whole row)
QUANTS = {"q8": (127, None), "q4": (7, 32)}
QUANT_CLASSES = ("attn", "mlp", "head", "embed", "recurrent")  # --quantize-only's names, as the engine's


def _round_half_away(a):
    """roundf: the nearest integer, halves away from zero, exact in a's own dtype (numpy or torch):
    |a| - floor(|a|) is exact, where floor(|a| + 0.5) may round the sum up (float32 0.49999997 + 0.5 is 1)."""
    lib = torch if isinstance(a, torch.Tensor) else np
    m = lib.abs(a)
    whole = lib.floor(m)
    return lib.sign(a) * (whole + (m - whole >= 0.5))


def quantize_matrix(w, q):
    """The engine's nl_quantize_rows on a float32 matrix w (rows, cols) as stored, in float32
    arithmetic, so that the result is the engine's to the bit: per row (q8) or per group of 32 columns
    of a row (q4, the last one shorter), scale = max |w| / levels, w / scale rounded half away from zero,
    clamped to [-levels, levels], times scale; a zero group stays zero."""
    levels, group = QUANTS[q]
    w = np.asarray(w, dtype=np.float32)
    out = np.zeros_like(w)
    step = group or w.shape[1]
    lim = np.float32(levels)
    for c in range(0, w.shape[1], step):
        part = w[:, c:c + step]
        amax = np.abs(part).max(axis=1, keepdims=True)
        scale = amax / lim  # float32 / float32: the engine's division
        live = (amax != 0)[:, 0]
        quot = part[live] / scale[live]
        out[live, c:c + step] = np.clip(_round_half_away(quot), -lim, lim).astype(np.float32) * scale[live]
    return out


def quant_classes(config):
    """File name -> --quantize-only class of every matrix the engine rounds (a tied head is wte's)."""
    if is_recurrent(config):
        names = {f"rnn.{i}.weight_{k}": "recurrent" for i in range(config["n_layer"]) for k in ("ih", "hh")}
    else:
        names = {f"h.{i}.{part}.weight": cls for i in range(config["n_layer"])
                 for part, cls in (("attn.c_attn", "attn"), ("attn.c_proj", "attn"), ("mlp.c_fc", "mlp"),
                                   ("mlp.c_proj", "mlp"))}
        names["wpe.weight"] = "embed"
    names["wte.weight"] = "embed"
    if is_recurrent(config) or not config["tie_embeddings"]:
        names["lm_head.weight"] = "head"
    return names


def quantize_tensors(config, tensors, q, only=None):
    """A copy of the file's tensors with the matrices of the classes `only` (default all of
    QUANT_CLASSES) rounded by quantize_matrix, as the engine's --quantize q --quantize-only. A tied
    head is wte: rounded once, when either head or embed is picked. Norm gains, biases and running
    statistics stay as they are. An unknown q or class, or no matrix of the classes, is a ValueError."""
    if q not in QUANTS:
        raise ValueError(f"unknown quantization {q!r}")
    pick = set(QUANT_CLASSES if only is None else only)
    if pick - set(QUANT_CLASSES):
        raise ValueError(f"unknown quantization class {sorted(pick - set(QUANT_CLASSES))[0]!r}")
    tied = not is_recurrent(config) and config["tie_embeddings"]
    chosen = [n for n, cls in quant_classes(config).items()
              if cls in pick or (tied and n == "wte.weight" and "head" in pick)]
    if not chosen:
        raise ValueError(f"this model has no matrix of the classes {','.join(sorted(pick))} to quantize")
    out = dict(tensors)
    for name in chosen:
        out[name] = quantize_matrix(tensors[name], q)
    return out


def round_rows(x, q):
    """x (..., in) with every row (the last dimension) rounded by the rule of quantize_matrix, in x's own
    dtype: the engine's --quantize-act on a linear's input, one row per position."""
    levels, group = QUANTS[q]
    if group is not None:
        return torch.cat([_round_rows(x[..., c:c + group], levels) for c in range(0, x.shape[-1], group)], -1)
    return _round_rows(x, levels)


def _round_rows(x, levels):
    amax = x.abs().amax(-1, keepdim=True)
    scale = amax / levels
    quot = x / torch.where(amax == 0, torch.ones_like(scale), scale)
    return _round_half_away(quot).clamp(-levels, levels) * scale


class _ActRounding:
    """quant_act: None, or the QUANTS name every linear's input rows are rounded with (build sets it)."""
    quant_act = None

    def _qa(self, x):
        return x if self.quant_act is None else round_rows(x, self.quant_act)


class Norm(nn.Module):
    """LayerNorm (biased variance) or RMSNorm over the last dimension, BatchNorm over every row, or DyT
    (Zhu et al. 2025: weight * tanh(alpha * x) + bias, alpha one learned scalar, no statistics).

    BatchNorm follows torch.nn.BatchNorm1d on the (B*n, D) rows: in training it normalises with the
    statistics of every position of every sequence of the call (so a position sees the later positions
    of its own sequence, and the other sequences) and updates the running averages (momentum 0.1, the
    variance unbiased); out of training it uses the running averages, or with stats "batch" the mean and
    biased variance of the call's rows, as the engine's --bn-stats batch."""

    def __init__(self, kind, D, eps, bias, stats="running", alpha=0.5):
        super().__init__()
        self.kind, self.D, self.eps, self.stats = kind, D, eps, stats  # D static: the ONNX graph's shapes
        self.weight = nn.Parameter(torch.ones(D))
        self.bias = nn.Parameter(torch.zeros(D)) if bias else None
        if kind == "dyt":  # one learned scalar
            self.alpha = nn.Parameter(torch.full((1,), float(alpha)))
        if kind == "batchnorm":
            self.register_buffer("running_mean", torch.zeros(D))
            self.register_buffer("running_var", torch.ones(D))

    def forward(self, x):
        if self.kind == "layernorm":
            return Fn.layer_norm(x, (self.D,), self.weight, self.bias, self.eps)
        if self.kind == "dyt":  # Zhu et al. 2025: gamma * tanh(alpha x) + beta
            y = torch.tanh(self.alpha * x) * self.weight
            return y if self.bias is None else y + self.bias
        if self.kind == "batchnorm":
            rows = x.reshape(-1, self.D)  # (B*n, D)
            if self.training:
                return Fn.batch_norm(rows, self.running_mean, self.running_var, self.weight, self.bias,
                                     training=True, momentum=0.1, eps=self.eps).reshape(x.shape)
            if self.stats == "batch":  # one row is exact: every output is the bias
                mu = rows.mean(0)
                var = ((rows - mu) ** 2).mean(0)
            else:
                mu, var = self.running_mean, self.running_var
            y = ((rows - mu) / torch.sqrt(var + self.eps) * self.weight).reshape(x.shape)
            return y if self.bias is None else y + self.bias
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        return y if self.bias is None else y + self.bias


class Block(_ActRounding, nn.Module):
    """One layer: attention and MLP, with their norms where the placement puts them."""

    def __init__(self, c, placement, make_norm):
        super().__init__()
        D, F, b = c["n_embd"], nlformat.mlp_width(c), c["bias"]
        self.placement, self.D, self.H = placement, D, c["n_head"]  # static: only B and n vary in a graph
        self.alpha = c.get("residual_scale", 1.0)  # DeepNorm's a; only post placement has it in its formula
        for name in BLOCK_NORMS[placement]:  # make_norm(width, branch): 0 attention's, 1 the MLP's
            setattr(self, name, make_norm(F if name == "ln_2_sub" else D, 0 if name.startswith("ln_1") else 1))
        self.c_attn = nn.Linear(D, 3 * D, bias=b)
        self.attn_proj = nn.Linear(D, D, bias=b)
        self.c_fc = nn.Linear(D, F, bias=b)
        self.mlp_proj = nn.Linear(F, D, bias=b)
        self.act = ACTIVATIONS[c["activation"]]
        self.norms = {name: getattr(self, name) for name in BLOCK_NORMS[placement]}
        self.inner = (self.norms.get("ln_1_sub", nn.Identity()), self.norms.get("ln_2_sub", nn.Identity()))

    def attn(self, x, future, cache):
        """x (B, n, D); future (n, m) True where key j lies after query i; cache: this layer's keys and
        values of the m - n positions before x (a dict, extended in place), or None."""
        B, n, D = x.shape[0], x.shape[1], self.D
        qkv = self.c_attn(self._qa(x)).split(D, dim=2)
        q, k, v = (t.reshape(B, n, self.H, D // self.H).transpose(1, 2) for t in qkv)
        if cache is not None:
            if cache:
                k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // self.H)  # (B, H, n, m)
        att = att.masked_fill(future, float("-inf")).softmax(-1)
        return self.attn_proj(self._qa(self.inner[0]((att @ v).transpose(1, 2).reshape(B, n, D))))

    def mlp(self, x):
        return self.mlp_proj(self._qa(self.inner[1](self.act(self.c_fc(self._qa(x))))))

    def forward(self, x, future, cache=None):
        return run_placement(self.placement, x, lambda h: self.attn(h, future, cache), self.mlp, self.norms,
                             self.alpha)


class Transformer(_ActRounding, nn.Module):
    """The transformer of config c, run with norm and placement (default: c's) and, outside training,
    BatchNorm's bn_stats ("running" or "batch"), its parameters in dtype. Fresh weights are GPT-2's
    initialisation (DeepNet's with c["deepnorm_init"]); c["rms_bias"] gives RMSNorm a bias."""

    def __init__(self, c, norm=None, placement=None, bn_stats="running", dtype=torch.float32):
        super().__init__()
        self.c = c
        self.norm = norm or c["norm"]
        self.placement = placement or c.get("placement", "pre")
        D, L = c["n_embd"], c["n_layer"]
        bias = self.norm in ("layernorm", "batchnorm", "dyt") or c.get("rms_bias", False)
        alpha0 = c.get("dyt_alpha", DYT_ALPHA)  # training only: DyT's alpha at init, by branch

        def make_norm(width=D, branch=2):
            if self.norm == "none":
                return nn.Identity()
            return Norm(self.norm, width, c["norm_eps"], bias, bn_stats, alpha0[branch])

        self.wte = nn.Embedding(c["vocab_size"], D)
        self.wpe = nn.Embedding(c["block_size"], D)
        self.h = nn.ModuleList(Block(c, layer_placement(self.placement, i, c), make_norm) for i in range(L))
        self.ln_f = make_norm() if has_final_norm(self.placement) else None
        if c["tie_embeddings"] and c.get("head_bias"):
            raise ValueError("head_bias with a head tied to wte is not built here")
        head_bias = c.get("head_bias", False)
        self.lm_head = None if c["tie_embeddings"] else nn.Linear(D, c["vocab_size"], bias=head_bias)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2's scaled init of residual projections
            if name.endswith("attn_proj.weight") or name.endswith("mlp_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * L))
        if c.get("deepnorm_init"):
            self._deepnorm_init()
        self.to(dtype)

    def _deepnorm_init(self):
        """DeepNet (Wang et al. 2022) for a decoder-only stack of N layers: Xavier-normal weights,
        scaled by beta = (8N)^(-1/4) in the MLP and the attention's value and output projections,
        by 1 in its query and key projections."""
        beta = (8 * self.c["n_layer"]) ** -0.25
        D = self.c["n_embd"]
        with torch.no_grad():
            for block in self.h:
                w = block.c_attn.weight  # (3D, D): q | k | v rows
                for j, gain in enumerate((1.0, 1.0, beta)):
                    nn.init.xavier_normal_(w[j * D:(j + 1) * D], gain=gain)
                for lin in (block.attn_proj, block.c_fc, block.mlp_proj):
                    nn.init.xavier_normal_(lin.weight, gain=beta)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, cache=None):
        """idx (B, n) token ids -> logits (B, n, V): head(stream(idx, cache))."""
        return self.head(self.stream(idx, cache))

    def stream(self, idx, cache=None):
        """The residual stream (B, n, D) after the last block. cache: None (idx at positions 0..n-1), or
        new_cache()'s list, which holds the keys and values of the positions before idx and is extended
        by these."""
        n = idx.shape[1]
        pos = cache[0]["k"].shape[2] if cache and cache[0] else 0  # positions before idx
        at = torch.arange(n, device=idx.device) + pos
        future = torch.arange(pos + n, device=idx.device)[None, :] > at[:, None]  # (n, pos + n)
        x = self.wte(idx) + self.wpe(at)
        for i, block in enumerate(self.h):
            x = block(x, future, None if cache is None else cache[i])
        return x

    def head(self, x):
        """Logits (B, n, V) of stream rows x (B, n, D): the final norm where the placement has one, and
        lm_head (the embedding, tied). Generation passes the last row alone."""
        if self.ln_f is not None:
            x = self.ln_f(x)
        x = self._qa(x)
        return x @ self.wte.weight.t() if self.lm_head is None else self.lm_head(x)

    def new_cache(self):
        """An empty KV cache for forward: one dict per layer."""
        return [{} for _ in self.h]

    def _file_name(self, key):
        parts = key.split(".")
        if parts[0] == "h" and parts[2] in FILE_NAMES:
            parts[2] = FILE_NAMES[parts[2]]
        return ".".join(parts)

    def load_tensors(self, tensors):
        """Sets every parameter and buffer from a model file's tensors (file name -> numpy array). A norm
        tensor the file lacks keeps unit gain and zero bias (a model run with another norm or placement);
        a missing running statistic, or any other tensor, is a ValueError."""
        with torch.no_grad():
            for key, t in self.state_dict().items():
                name, owner = self._file_name(key), self.get_submodule(key.rsplit(".", 1)[0])
                if name in tensors:
                    t.copy_(torch.from_numpy(np.asarray(tensors[name])))
                elif not isinstance(owner, Norm):
                    raise ValueError(f"the model has no tensor {name}")
                elif "running_" in name and owner.stats == "running":
                    raise ValueError(f"batchnorm with running statistics needs {name}")
                elif name.endswith(".alpha"):
                    raise ValueError(f"dyt needs its alpha {name}, which the model lacks")
        return self

    def export_tensors(self):
        """Float32 tensors under the file's names, in the order nlformat.tensor_shapes lists them."""
        own = {self._file_name(k): t.detach().cpu().numpy().astype(np.float32) for k, t in self.state_dict().items()}
        order = nlformat.tensor_shapes(self.c, self.c.get("rms_bias", False))
        assert set(order) == set(own), (set(order) ^ set(own))
        return {n: own[n] for n in order}


class Recurrent(_ActRounding, nn.Module):
    """A stacked LSTM or GRU (docs/forward.md), LayerNorm or plain sums with biases, an embedding
    in and a linear head out, run with norm ("layernorm" or "none"; default c's), its parameters in dtype.
    Each layer projects its input for a whole window at once (and normalises it: LayerNorm is per
    position), then steps the recurrence. The parameters are the tensors nlformat.rnn_tensor_shapes names
    for c; a bias the model lacks is 0, a LayerNorm it lacks has unit gain. The state, (h, c) per layer
    for the LSTM and (h,) for the GRU, carries across windows (truncated back-propagation through time).
    Fresh weights are PyTorch's nn.LSTM/nn.GRU initialisation, the LSTM's forget-gate bias 1."""

    def __init__(self, c, norm=None, dtype=torch.float32):
        super().__init__()
        self.c = c
        self.norm = norm or c["norm"]
        V, E, S = c["vocab_size"], c["n_embd"], c["n_hidden"]
        self.S, self.eps = S, c["norm_eps"]
        self.wte = nn.Embedding(V, E)
        self.params = nn.ParameterDict()
        bound = 1 / math.sqrt(S)
        for name, shape in nlformat.rnn_tensor_shapes(c).items():
            if name.startswith("rnn."):
                if ".ln_" in name:
                    t = torch.ones(shape) if name.endswith(".weight") else torch.zeros(shape)
                else:
                    t = torch.empty(shape).uniform_(-bound, bound)
                if c["arch"] == "lstm" and name.endswith(".bias") and ".ln_" not in name:
                    t = torch.zeros(shape)
                    t[:S] = 1.0  # forget-gate bias 1 (Jozefowicz et al. 2015), LN or not
                self.params[name.replace(".", "_")] = nn.Parameter(t)
        self.lm_head = nn.Linear(S, V)
        self.to(dtype)

    def p(self, i, name):
        """Layer i's tensor `name` (file name less "rnn.{i}."), or None where the model lacks it."""
        return self.params.get(f"rnn_{i}_{name}".replace(".", "_"))

    def ln(self, x, i, name):
        """LayerNorm over the whole vector of each row (unit gain, no bias where the model lacks them),
        or the identity for norm none."""
        if self.norm == "none":
            return x
        return Fn.layer_norm(x, x.shape[-1:], self.p(i, name + ".weight"), self.p(i, name + ".bias"), self.eps)

    @staticmethod
    def _plus(x, b):
        return x if b is None else x + b

    def lstm_layer(self, x, i, state):  # x (B, n, in) -> (B, n, S)
        """[f i o g] = N_hh(W_h h) + N_ih(W_x x) + b;  c = s(f) c + s(i) tanh(g);  h = s(o) tanh(N_cell(c))"""
        h, c = state
        xp = self.ln(self._qa(x) @ self.p(i, "weight_ih").t(), i, "ln_ih")  # (B, n, 4S)
        xp = self._plus(xp, self.p(i, "bias"))
        w_hh, out = self.p(i, "weight_hh").t(), []
        for t in range(x.shape[1]):
            f, ig, o, g = (xp[:, t] + self.ln(self._qa(h) @ w_hh, i, "ln_hh")).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(ig) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(self.ln(c, i, "ln_cell"))
            out.append(h)
        return torch.stack(out, 1), (h, c)

    def gru_layer(self, x, i, state):
        """[z r] = N_hh(W_h h) + b_hh + N_ih(W_x x) + b_ih;  h = (1 - s(z)) h + s(z) cand, with
        cand = tanh(N_ih_cand(W_xc x) + b_ih + s(r) (N_hh_cand(U h) + b_hh))"""
        h, S = state[0], self.S
        b_ih, b_hh = self.p(i, "bias_ih"), self.p(i, "bias_hh")
        xp = self._qa(x) @ self.p(i, "weight_ih").t()  # (B, n, 3S): z | r | candidate
        xzr = self._plus(self.ln(xp[..., :2 * S], i, "ln_ih"), None if b_ih is None else b_ih[:2 * S])
        xc = self._plus(self.ln(xp[..., 2 * S:], i, "ln_ih_cand"), None if b_ih is None else b_ih[2 * S:])
        w_hh, out = self.p(i, "weight_hh").t(), []
        for t in range(x.shape[1]):
            hp = self._qa(h) @ w_hh
            hzr = self._plus(self.ln(hp[:, :2 * S], i, "ln_hh"), None if b_hh is None else b_hh[:2 * S])
            hc = self._plus(self.ln(hp[:, 2 * S:], i, "ln_hh_cand"), None if b_hh is None else b_hh[2 * S:])
            z, r = (xzr[:, t] + hzr).chunk(2, dim=-1)
            cand = torch.tanh(xc[:, t] + torch.sigmoid(r) * hc)
            z = torch.sigmoid(z)
            h = (1 - z) * h + z * cand
            out.append(h)
        return torch.stack(out, 1), (h,)

    def zero_state(self, B):
        """The state every sequence starts from, in the model's dtype and device."""
        w = self.wte.weight
        n = 2 if self.c["arch"] == "lstm" else 1
        return [tuple(w.new_zeros(B, self.S) for _ in range(n)) for _ in range(self.c["n_layer"])]

    def forward(self, idx, state=None):
        """idx (B, n) -> (logits (B, n, V), the state after the window); state None: the zero state."""
        x = self.wte(idx)
        state = state or self.zero_state(idx.shape[0])
        layer = self.lstm_layer if self.c["arch"] == "lstm" else self.gru_layer
        new_state = []
        for i in range(self.c["n_layer"]):
            x, s = layer(x, i, state[i])
            new_state.append(s)
        return self.lm_head(self._qa(x)), new_state

    def _own(self):
        """File name -> parameter, in the order nlformat.rnn_tensor_shapes lists them."""
        top = {"wte.weight": self.wte.weight, "lm_head.weight": self.lm_head.weight, "lm_head.bias": self.lm_head.bias}
        return {name: top[name] if name in top else self.params[name.replace(".", "_")]
                for name in nlformat.rnn_tensor_shapes(self.c)}

    def load_tensors(self, tensors):
        """Sets every parameter from a model file's tensors (file name -> numpy array)."""
        with torch.no_grad():
            for name, p in self._own().items():
                if name not in tensors:
                    raise ValueError(f"the model has no tensor {name}")
                p.copy_(torch.from_numpy(np.asarray(tensors[name])))
        return self

    def export_tensors(self):
        """Float32 tensors under the file's names."""
        return {n: t.detach().cpu().numpy().astype(np.float32) for n, t in self._own().items()}


def is_recurrent(config):
    return config.get("arch", "transformer") != "transformer"


def build(config, tensors, norm=None, placement=None, bn_stats="running", dtype=torch.float32, quantize=None,
          quantize_only=None, quantize_act=None):
    """The model of config with the file's tensors, in eval mode, run with norm, placement and bn_stats
    (the engine's --norm, --placement, --bn-stats), the tensors rounded by quantize_tensors(quantize,
    quantize_only) (--quantize, --quantize-only; None: as stored) and every linear's input by
    round_rows(quantize_act) (--quantize-act). An option the model cannot run is a ValueError."""
    if config.get("arch") == "llama":  # its own file, which imports Norm from here
        import nlmodel_llama
        if quantize is not None or quantize_only is not None or quantize_act is not None or bn_stats != "running":
            raise ValueError("arch llama is built here without quantization or BatchNorm statistics")
        if (norm or "rmsnorm") not in nlmodel_llama.NORMS or (placement or "pre") not in nlmodel_llama.PLACEMENTS:
            raise ValueError(f"arch llama runs with norm {'|'.join(nlmodel_llama.NORMS)} and placement "
                             f"{'|'.join(nlmodel_llama.PLACEMENTS)}")
        return nlmodel_llama.Llama(config, norm, placement, dtype).load_tensors(tensors).eval()
    if quantize is not None:
        tensors = quantize_tensors(config, tensors, quantize, quantize_only)
    elif quantize_only is not None:
        raise ValueError("quantize_only needs quantize")
    if quantize_act is not None and quantize_act not in QUANTS:
        raise ValueError(f"unknown activation quantization {quantize_act!r}")
    if norm is not None and norm not in NORMS:
        raise ValueError(f"unknown norm {norm!r}")
    if bn_stats not in BN_STATS:
        raise ValueError(f"unknown BatchNorm statistics {bn_stats!r}")
    if is_recurrent(config):
        if config["arch"] not in ("lstm", "gru"):
            raise ValueError(f"unknown arch {config['arch']!r}")
        if (norm or config["norm"]) not in ("layernorm", "none"):
            raise ValueError(f"a recurrent model runs with norm layernorm or none, not {norm}")
        if placement is not None:
            raise ValueError(f"a recurrent model has no placement (got {placement})")
        if bn_stats != "running":
            raise ValueError("a recurrent model has no BatchNorm statistics to choose")
        model = Recurrent(config, norm, dtype)
    else:
        if placement is not None and placement not in PLACEMENTS:
            raise ValueError(f"unknown placement {placement!r}")
        # every norm gets a bias, zero where the file has none: RMSNorm's is optional, and a model run
        # with another norm takes the bias its own norms have
        model = Transformer(dict(config, rms_bias=True), norm, placement, bn_stats, dtype)
    for m in model.modules():
        if isinstance(m, _ActRounding):
            m.quant_act = quantize_act
    return model.load_tensors(tensors).eval()


def load(path, norm=None, placement=None, bn_stats="running", dtype=torch.float32):
    """(model, vocab) of the model directory or .json file at path: build() on its files."""
    config, vocab, tensors = nlformat.load_model(path)
    return build(config, tensors, norm, placement, bn_stats, dtype), vocab
