#!/usr/bin/python3
"""Train a character-level normlab model on a UTF-8 text file and write it in the engine's format.

    /usr/bin/python3 tools/train/train.py --data ../shared/data/tinyshakespeare.txt \
        --norm layernorm --placement pre --out weights/shakespeare-pre-ln

Recurrent models (format version 3): --arch lstm|gru --norm layernorm|none with --n-embd E (the
embedding) and --n-hidden S (the state); the shipped ones are `make rnn-models`. They train with
truncated back-propagation through time: the training split is cut into --batch-size contiguous
streams, and each step takes the next --block-size characters of every stream, starting from the
state the previous step left (detached: gradients flow --block-size steps back); the state restarts
from zero when the streams wrap round to their beginnings, and after --resume. Validation runs the
whole split as --batch-size contiguous streams, each through one state.

Split: the first 90% of the characters train, the last 10% validate (nanoGPT's convention).

GPT-2's byte-level BPE instead of characters: --tokenizer FILE, a Hugging Face tokenizer.json of a
byte-level BPE (the shipped weights/shakespeare-bpe/tokenizer.json is GPT-2's), as nanoGPT's
data/shakespeare/prepare.py does with tiktoken: the text is split at 90% of its characters, and each
part is encoded alone (tools/lib/gpt2bpe.py). The model's vocabulary is the tokenizer's, and its
tokenizer.json is a copy of FILE. --tokenizer also takes normlab's sentencepiece tokenizer.json
(docs/format.md), encoded by tools/lib/spmbpe.py with each part of the split one document: the dummy
prefix once at its start, its newlines the byte token <0x0A> unless a piece holds them, no BOS.

Llama (format version 4): --arch llama, the model of tools/lib/nlmodel_llama.py: RoPE on interleaved
pairs (--rope-theta), --n-kv-head key/value heads, the gated SiLU MLP of width --n-inner, RMSNorm by
default (--norm layernorm|none, --placement as the transformer's), no biases, optionally --qk-norm.
Interrupted runs resume from OUT/ckpt.pt with --resume; the checkpoint is deleted when training ends.

Distributed data parallel: the same command under torchrun, on any number of processes and nodes,
with the gloo backend for --device cpu and nccl for --device cuda:

    /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 2 tools/train/train.py ...
    /usr/bin/python3 -m torch.distributed.run --nnodes 2 --node_rank 0 --nproc_per_node 8 \
        --rdzv_backend c10d --rdzv_endpoint HOST:29500 --rdzv_id run1 tools/train/train.py --device cuda ...

Every process draws the same global batch of --batch-size sequences from the same generator and
trains on its own contiguous share (batch_size / world size of them), so the data order and the
global batch are those of one process: 2 processes of 16 sequences reproduce 1 process of 32, to
float rounding. Rank 0 alone evaluates, writes the checkpoint, the log and the model directory (on
several nodes OUT must be on a filesystem every node sees, for --resume). BatchNorm's batch
statistics are each process's own share, as PyTorch's BatchNorm without SyncBatchNorm.
The model is tools/lib/nlmodel.py's Transformer or Recurrent (its initialisation included); a
checkpoint holds its state_dict, under its module names.
Dimension letters: B batch, T context, D width, H heads, F MLP width, V vocabulary; recurrent models:
E embedding width, S state width.
"""
import argparse
import datetime
import hashlib
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy", "torch", "tqdm")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as Fn  # noqa: E402

import nlformat  # noqa: E402
import nlmodel  # noqa: E402
import nlmodel_llama  # noqa: E402
import gpt2bpe  # noqa: E402
import spmbpe  # noqa: E402
import nltool  # noqa: E402
import torchzip  # noqa: E402


def parse_args(argv):
    p = nltool.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="UTF-8 text file to train on")
    p.add_argument("--out", required=True, help="model directory to write")
    p.add_argument("--tokenizer", metavar="FILE",
                   help="a byte-level BPE tokenizer.json (GPT-2's) or normlab's sentencepiece tokenizer.json "
                   "instead of the text's characters")
    p.add_argument("--arch", choices=["transformer", "lstm", "gru", "llama"], default="transformer")
    p.add_argument("--norm", choices=list(nlmodel.NORMS),
                   help="default layernorm; llama: rmsnorm; dyt: Zhu et al.'s tanh in place of every norm")
    p.add_argument("--placement", choices=list(nlmodel.PLACEMENTS), default="pre",
                   help="where the norms sit in a block (docs/comparing.md)")
    p.add_argument("--mix-post-layers", type=int, metavar="K",
                   help="--placement mix: the leading post layers (default n_layer // 4)")
    p.add_argument("--dyt-alpha", metavar="A[,M,F]",
                   help="--norm dyt: alpha at initialisation, one for every norm or three for the attention's, "
                   "the MLP's and the final norm (default 0.5; Zhu et al.'s Llama recipe 0.8,0.2,0.2)")
    p.add_argument("--deepnorm", action="store_true",
                   help="DeepNorm: post placement, residual scaled by (2L)^(1/4), DeepNet's beta-scaled init")
    p.add_argument("--rms-bias", action="store_true", help="give RMSNorm layers a bias")
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--n-hidden", type=int, default=128, help="lstm/gru: state width S")
    p.add_argument("--block-size", type=int, default=128,
                   help="context (transformer) or truncated back-propagation window (lstm/gru)")
    p.add_argument("--mlp-ratio", type=int, default=4)
    p.add_argument("--n-kv-head", type=int, help="llama: key/value heads, dividing --n-head (default --n-head)")
    p.add_argument("--n-inner", type=int, metavar="F",
                   help="llama: the gated MLP's hidden width (default 2/3 of 4 n_embd, up to a multiple of 16)")
    p.add_argument("--rope-theta", type=float, help="llama: RoPE's base (default 10000)")
    p.add_argument("--qk-norm", action="store_true", help="llama: q and k of each head normalized before RoPE")
    p.add_argument("--activation", choices=sorted(nlmodel.ACTIVATIONS), default="gelu")
    p.add_argument("--no-bias", action="store_true", help="linears without biases")
    p.add_argument("--untied", action="store_true", help="separate lm_head instead of tied embeddings")
    p.add_argument("--norm-eps", type=float, default=1e-5)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min-lr", type=float, default=2e-4)
    p.add_argument("--warmup", type=int, default=100, help="linear warm-up steps, then cosine decay")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--eval-batches", type=int, default=20)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.pt")
    p.add_argument("--stop-after", type=int, default=0, metavar="N",
                   help="train at most N steps in this run, then checkpoint and stop (continue with --resume)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="cpu (distributed: gloo) or cuda (distributed: nccl, one GPU per process)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--dist-timeout", type=float, default=300, metavar="SECONDS",
                   help="under torchrun: how long the rendezvous and each collective wait for the other processes")
    return p.parse_args(argv)


def lr_at(step, a):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    t = (step - a.warmup) / max(1, a.steps - a.warmup)
    return a.min_lr + 0.5 * (a.lr - a.min_lr) * (1 + math.cos(math.pi * min(t, 1.0)))


def get_batch(data, a, gen, rank=0, world=1):
    """This process's share of the global batch: every process draws the same batch_size offsets."""
    ix = torch.randint(len(data) - a.block_size - 1, (a.batch_size,), generator=gen)
    share = a.batch_size // world
    ix = ix[rank * share:(rank + 1) * share]
    x = torch.stack([data[i:i + a.block_size] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + a.block_size] for i in ix])
    return x.to(a.device), y.to(a.device)


class Dist:
    """The process group under torchrun (WORLD_SIZE set), else one process alone.

    The rendezvous and every collective give up after --dist-timeout seconds: a rank whose peer
    exited, or hangs, ends with a one-line message on stderr and exit status 1 (and torchrun then
    stops the others), where PyTorch's default would wait 30 minutes. A process of a group ends in
    close() or fail(), by os._exit after flushing its output, never by the interpreter's teardown:
    there, the last reference to the ProcessGroupGloo (DDP's reducer) is dropped with the GIL held
    and its destructor joins the gloo worker threads, while one of them may still be freeing a
    finished work whose tensor has a Python object, which takes the GIL: a deadlock (seen under
    load: rank 1 stuck in ~ProcessGroupGloo's join, a gloo worker waiting for the GIL). torchrun
    then waits for that rank for ever, rank 0 having exited 0, and the rank's TCPStore client
    thread spins at 100% CPU once rank 0, which hosts the store, is gone.

    Test-only: NORMLAB_TEST_FAULT=RANK:STEP:exit|hang makes rank RANK, before the all_reduce of
    the loss of this run's STEPth step, exit 0 without a word (a peer gone, which torchrun does not
    see as a failure) or sleep (a peer that hangs). tests/ddp_test.py checks the other fails fast."""

    MARKS = ("gloo", "nccl", "c10d", "tcpstore", "connection", "broken pipe", "timed out", "timeout")

    def __init__(self, a):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local = int(os.environ.get("LOCAL_RANK", "0"))
        self.timeout, self.steps, self.fault = a.dist_timeout, 0, None
        if a.device == "cuda":
            if not torch.cuda.is_available():
                sys.exit("train.py: --device cuda, but PyTorch sees no GPU")
            torch.cuda.set_device(self.local)
            a.device = f"cuda:{self.local}"
        if self.world > 1:
            if a.batch_size % self.world:
                sys.exit(f"train.py: --batch-size {a.batch_size} is not divisible by {self.world} processes")
            if os.environ.get("NORMLAB_TEST_FAULT"):
                r, s, how = os.environ["NORMLAB_TEST_FAULT"].split(":")
                self.fault = (int(r), int(s), how)
            sys.excepthook = self._uncaught  # DDP's own collectives (its broadcast, backward's all_reduce)
            try:
                torch.distributed.init_process_group("nccl" if a.device.startswith("cuda") else "gloo",
                                                     timeout=datetime.timedelta(seconds=a.dist_timeout))
            except RuntimeError as e:
                self.fail("joining the process group", e)

    def fail(self, what, err):
        """End this process of the group: one line on stderr, exit status 1, no teardown (see above)."""
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        print(f"train.py: rank {self.rank} of {self.world}: {what} failed after at most --dist-timeout "
              f"{self.timeout:g} s (a peer exited or hangs): {first}", file=sys.stderr)
        self.close(1)

    def _uncaught(self, kind, err, tb):
        if issubclass(kind, RuntimeError) and any(m in str(err).lower() for m in self.MARKS):
            self.fail("a collective", err)
        sys.__excepthook__(kind, err, tb)  # not the process group's: the whole traceback
        self.close(1)

    def mean(self, value):
        """The mean of a float over every process (the global batch's loss from the shares')."""
        if self.world == 1:
            return value
        self.steps += 1
        if self.fault and self.fault[:2] == (self.rank, self.steps):
            if self.fault[2] == "exit":
                os._exit(0)
            time.sleep(3600)
        t = torch.tensor([value], dtype=torch.float64)
        try:
            torch.distributed.all_reduce(t)
        except RuntimeError as e:
            self.fail(f"the all_reduce of the loss (this run's step {self.steps})", e)
        return t.item() / self.world

    def barrier(self):
        if self.world > 1:
            try:
                torch.distributed.barrier()
            except RuntimeError as e:
                self.fail("the closing barrier", e)

    def close(self, code=0):
        """In a group: end the process with `code` (os._exit after flushing; see above). Alone: return."""
        if self.world > 1:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


def stream_batch(data, a, step, rank=0, world=1):
    """lstm/gru: window `step` of batch_size contiguous streams that split data in equal parts (this
    process's share of them); the state carries from one window to the next, and restarts (first=True)
    when the streams wrap round to their beginnings."""
    length = len(data) // a.batch_size
    windows = (length - 1) // a.block_size
    w = step % windows
    share = a.batch_size // world
    starts = [(rank * share + b) * length + w * a.block_size for b in range(share)]
    x = torch.stack([data[i:i + a.block_size] for i in starts])
    y = torch.stack([data[i + 1:i + 1 + a.block_size] for i in starts])
    return x.to(a.device), y.to(a.device), w == 0


@torch.no_grad()
def estimate_val_recurrent(model, val, a):
    """lstm/gru: mean loss over the whole validation split, cut into batch_size contiguous streams,
    each read through one unbroken state."""
    model.eval()
    length = len(val) // a.batch_size
    streams = torch.stack([val[b * length:(b + 1) * length] for b in range(a.batch_size)]).to(a.device)
    state, total, count = None, 0.0, 0
    for lo in range(0, length - 1, a.block_size):
        hi = min(lo + a.block_size, length - 1)
        logits, state = model(streams[:, lo:hi], state)
        y = streams[:, lo + 1:hi + 1]
        total += Fn.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum").item()
        count += y.numel()
    model.train()
    return total / count


@torch.no_grad()
def estimate_val(model, val, a):
    """Mean loss over eval_batches fixed, evenly spaced windows of the validation split."""
    model.eval()
    n = len(val) - a.block_size - 1
    starts = torch.linspace(0, n, a.eval_batches * a.batch_size).long()
    losses = []
    for chunk in starts.split(a.batch_size):
        x = torch.stack([val[i:i + a.block_size] for i in chunk]).to(a.device)
        y = torch.stack([val[i + 1:i + 1 + a.block_size] for i in chunk]).to(a.device)
        logits = model(x)
        losses.append(Fn.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item())
    model.train()
    return float(np.mean(losses))


def write_diverged(a, log, step, wall):
    """A run whose loss became non-finite: its log (the curve up to that step, diverged_at) is
    written to OUT/train_log.json, and no model (its weights are not finite)."""
    os.makedirs(a.out, exist_ok=True)
    doc = {"diverged_at": step, "steps": step, "wall_seconds": round(wall, 1), "seed": a.seed,
           "batch_size": a.batch_size, "lr": a.lr, "min_lr": a.min_lr, "warmup": a.warmup,
           "args": vars(a), "loss_curve": log}
    nlformat.atomic_write(os.path.join(a.out, "train_log.json"), json.dumps(doc, indent=1) + "\n", "w")
    print(f"diverged: loss not finite at step {step}; wrote {a.out}/train_log.json and no model", file=sys.stderr)


LLAMA_ONLY = ("n_kv_head", "n_inner", "rope_theta", "qk_norm")


def check_block_options(a):
    """--mix-post-layers and --dyt-alpha checked and resolved (a.dyt_alpha a triple or None), or one line
    and exit 1."""
    if a.mix_post_layers is not None and (a.placement != "mix" or not 0 <= a.mix_post_layers <= a.n_layer):
        sys.exit(f"train.py: --mix-post-layers takes 0 to --n-layer {a.n_layer} with --placement mix")
    if a.dyt_alpha is None:
        return
    if a.norm != "dyt":
        sys.exit("train.py: --dyt-alpha is for --norm dyt")
    try:
        alpha = [float(v) for v in a.dyt_alpha.split(",")]
    except ValueError:
        alpha = []
    if len(alpha) not in (1, 3) or not all(0 < v < 1e3 for v in alpha):
        sys.exit(f"train.py: --dyt-alpha must be one or three positive numbers below 1000, got {a.dyt_alpha!r}")
    a.dyt_alpha = tuple(alpha * 3 if len(alpha) == 1 else alpha)


def check_llama(a):
    """--arch llama's options resolved to their defaults, or one line and exit 1 (before anything is read)."""
    given = [k for k in LLAMA_ONLY if getattr(a, k) not in (None, False)]
    if a.arch != "llama":
        if given:
            sys.exit(f"train.py: --{given[0].replace('_', '-')} is for --arch llama")
        return
    if (a.norm not in nlmodel_llama.NORMS or a.deepnorm or a.rms_bias
            or a.placement not in nlmodel_llama.PLACEMENTS):
        sys.exit(f"train.py: --arch llama takes --norm {'|'.join(nlmodel_llama.NORMS)} and --placement "
                 f"{'|'.join(nlmodel_llama.PLACEMENTS)}, without --deepnorm or --rms-bias")
    a.n_kv_head = a.n_head if a.n_kv_head is None else a.n_kv_head
    a.n_inner = nlmodel_llama.default_inner(a.n_embd) if a.n_inner is None else a.n_inner
    a.rope_theta = 10000.0 if a.rope_theta is None else a.rope_theta
    if a.n_head < 1 or a.n_embd % a.n_head or (a.n_embd // a.n_head) % 2:
        sys.exit(f"train.py: --n-embd {a.n_embd} over --n-head {a.n_head} is not a whole, even head width")
    if a.n_kv_head < 1 or a.n_head % a.n_kv_head:
        sys.exit(f"train.py: --n-kv-head {a.n_kv_head} does not divide --n-head {a.n_head}")
    if a.n_inner < 1 or not a.rope_theta > 0:
        sys.exit(f"train.py: --n-inner {a.n_inner} and --rope-theta {a.rope_theta:g} must be positive")
    if not 1 <= a.rope_theta <= 3.4028234663852886e38:
        sys.exit(f"train.py: --rope-theta {a.rope_theta:g} must be in [1, 3.40282e+38] (RoPE's base, a float)")
    if a.qk_norm and a.norm == "none":
        sys.exit("train.py: --qk-norm needs a norm (not --norm none)")


def load_tokenizer(path):
    """(tokenizer, its file's text): normlab's sentencepiece tokenizer.json (tools/lib/spmbpe.py) or a
    byte-level BPE (tools/lib/gpt2bpe.py); one line and exit 1 when it is neither."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()  # written into the model as it is
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            doc = None  # gpt2bpe says what is wrong (or reads a folder)
        if isinstance(doc, dict) and doc.get("type") == "sentencepiece":
            return spmbpe.Spm(doc, path), text
        return gpt2bpe.load(path), text
    except (spmbpe.SpmError, gpt2bpe.BpeError, OSError, UnicodeDecodeError) as e:
        sys.exit(f"train.py: --tokenizer {path}: {getattr(e, 'strerror', None) or e}")


def main(argv):
    a = parse_args(argv)
    if a.norm is None:
        a.norm = "rmsnorm" if a.arch == "llama" else "layernorm"
    check_llama(a)
    if a.deepnorm and a.placement != "post":
        sys.exit("train.py: --deepnorm needs --placement post")
    if a.norm == "none" and a.placement != "pre":
        sys.exit("train.py: --norm none needs --placement pre")
    check_block_options(a)
    recurrent = a.arch in ("lstm", "gru")
    if recurrent and a.norm not in ("layernorm", "none"):
        sys.exit(f"train.py: --arch {a.arch} takes --norm layernorm or none")
    torch.set_num_threads(a.threads)
    dist = Dist(a)
    try:
        with open(a.data, "rb") as f:
            raw = f.read()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        sys.exit(f"train.py: --data {a.data}: {getattr(e, 'strerror', None) or e}")
    n_train = int(0.9 * len(text))
    if a.tokenizer:
        bpe, vocab = load_tokenizer(a.tokenizer)
        vocab_size = bpe.size
        train, val = (torch.tensor(bpe.encode(part), dtype=torch.long) for part in (text[:n_train], text[n_train:]))
    else:
        vocab = sorted(set(text))
        vocab_size = len(vocab)
        stoi = {ch: i for i, ch in enumerate(vocab)}
        data = torch.tensor([stoi[ch] for ch in text], dtype=torch.long)
        train, val = data[:n_train], data[n_train:]
    config = nlformat.llama_config(vocab_size, a.n_layer, a.n_head, a.n_kv_head, a.n_embd, a.block_size, a.n_inner,
                                   a.norm_eps, a.rope_theta, not a.untied, a.qk_norm, False, a.norm, a.placement
                                   ) if a.arch == "llama" else {
        "arch": a.arch, "vocab_size": vocab_size, "n_layer": a.n_layer, "n_embd": a.n_embd, "n_hidden": a.n_hidden,
        "norm": a.norm, "norm_eps": a.norm_eps,
    } if recurrent else {
        "vocab_size": vocab_size, "n_layer": a.n_layer, "n_head": a.n_head, "n_embd": a.n_embd,
        "block_size": a.block_size, "mlp_ratio": a.mlp_ratio, "norm": a.norm,
        "placement": a.placement, "norm_eps": a.norm_eps, "activation": a.activation,
        "bias": not a.no_bias, "tie_embeddings": not a.untied,
    }
    if a.deepnorm:
        config["residual_scale"] = (2 * a.n_layer) ** 0.25
    if a.rms_bias:
        config["rms_bias"] = True  # training-only keys: not written to config.json
    if a.deepnorm:
        config["deepnorm_init"] = True
    if a.mix_post_layers is not None:
        config["mix_post_layers"] = a.mix_post_layers
    if a.dyt_alpha is not None:
        config["dyt_alpha"] = a.dyt_alpha

    torch.manual_seed(a.seed)
    # the same initial weights in every process (the same seed)
    family = nlmodel.Recurrent if recurrent else nlmodel_llama.Llama if a.arch == "llama" else nlmodel.Transformer
    model = family(config).to(a.device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.99))
    gen = torch.Generator().manual_seed(a.seed)
    log = {"train": [], "val": []}
    step, wall_before = 0, 0.0
    if dist.rank == 0:
        os.makedirs(a.out, exist_ok=True)
    ckpt_path = os.path.join(a.out, "ckpt.pt")
    if a.resume and os.path.exists(ckpt_path):
        try:  # read as any checkpoint is: torchzip runs nothing its pickle names
            ck = torchzip.to_torch(torchzip.load(ckpt_path))
        except torchzip.CheckpointError as e:
            sys.exit(f"train.py: --resume: {e}")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        gen.set_state(ck["gen"])
        step, log, wall_before = ck["step"], ck["log"], ck["wall"]
        print(f"resumed from {ckpt_path} at step {step}", file=sys.stderr)

    n_params = sum(p.numel() for p in model.parameters())
    lead = dist.rank == 0  # evaluates, prints, writes
    if lead:
        kind = f"{a.arch}/{a.norm}" if recurrent else f"{a.norm}/{a.placement}"
        if a.arch == "llama":
            kind = f"llama/{kind}, {a.n_head} heads over {a.n_kv_head} KV heads, F {a.n_inner}"
        unit = "tokens" if a.tokenizer else "chars"
        print(f"{kind}: {n_params} parameters, {len(train)} train / {len(val)} val {unit}"
              + (f", {dist.world} processes" if dist.world > 1 else ""), file=sys.stderr)
    # DDP averages the shares' gradients: the gradient of the global batch's mean loss
    net = model if dist.world == 1 else torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[dist.local] if a.device.startswith("cuda") else None)
    t0 = time.time()
    try:
        from tqdm import tqdm
        bar = tqdm(total=a.steps, initial=step, disable=a.no_progress or not lead, file=sys.stderr)
    except ImportError:
        bar = None
    tokens_per_step = a.batch_size * a.block_size
    stop_at = min(a.steps, step + a.stop_after) if a.stop_after > 0 else a.steps
    state = None  # lstm/gru: carried between windows, detached (a resumed run starts it afresh)
    while step < stop_at:
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        t_step = time.time()
        if recurrent:
            x, y, first = stream_batch(train, a, step, dist.rank, dist.world)
            logits, state = net(x, None if first else state)
            state = [tuple(t.detach() for t in s) for s in state]
        else:
            x, y = get_batch(train, a, gen, dist.rank, dist.world)
            logits = net(x)
        loss = Fn.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        opt.step()
        step += 1
        loss_value = dist.mean(loss.item())
        if not math.isfinite(loss_value):  # diverged: a result to report, not a model to write
            log["train"].append([step, None])
            if lead:
                write_diverged(a, log, step, wall_before + time.time() - t0)
            dist.barrier()
            dist.close(3)
            sys.exit(3)
        log["train"].append([step, round(loss_value, 5)])
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss_value:.3f}", tok_s=f"{tokens_per_step / (time.time() - t_step):.0f}")
        evaluate = step % a.eval_every == 0 or step == a.steps
        if evaluate and lead:
            v = (estimate_val_recurrent if recurrent else estimate_val)(model, val, a)
            log["val"].append([step, round(v, 5)])
            msg = f"step {step}: train {loss_value:.4f} val {v:.4f}"
            (bar.write(msg, file=sys.stderr) if bar is not None else print(msg, file=sys.stderr))
        if (evaluate or step == stop_at) and lead:  # and where --stop-after stops: a checkpoint to resume from
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "gen": gen.get_state(),
                        "step": step, "log": log, "wall": wall_before + time.time() - t0}, ckpt_path + ".tmp")
            os.replace(ckpt_path + ".tmp", ckpt_path)  # a crash mid-save keeps the previous checkpoint
    if bar is not None:
        bar.close()
    wall = wall_before + time.time() - t0
    if step < a.steps:  # stopped by --stop-after
        if lead:
            print(f"stopped at step {step} of {a.steps}; continue with --resume", file=sys.stderr)
        dist.barrier()
        dist.close()
        return
    if not lead:
        dist.barrier()  # rank 0 writes the model; the others wait for it, then leave
        dist.close()
        return

    provenance = {
        "corpus_sha256": hashlib.sha256(raw).hexdigest(), "corpus_bytes": len(raw),
        "corpus_chars": len(text), "split": "first 90% of characters train, last 10% validate",
        **({"tokenizer": ("SentencePiece BPE (" if isinstance(bpe, spmbpe.Spm) else "byte-level BPE (")
            + os.path.basename(a.tokenizer) + ")", "train_tokens": len(train),
            "val_tokens": len(val), "train_chars": n_train, "val_chars": len(text) - n_train} if a.tokenizer else
           {"train_chars": len(train), "val_chars": len(val)}), "seed": a.seed, "steps": step,
        "batch_size": a.batch_size, "lr": a.lr, "min_lr": a.min_lr, "warmup": a.warmup,
        "weight_decay": a.weight_decay, "parameters": n_params, "wall_seconds": round(wall, 1),
        "threads": a.threads, "processes": dist.world, "device": a.device.split(":")[0],
        "final_train_loss": log["train"][-1][1],
        "final_val_loss": log["val"][-1][1] if log["val"] else None,
    }
    export_cfg = {k: v for k, v in config.items() if k not in ("rms_bias", "deepnorm_init", "dyt_alpha")}
    train_log = json.dumps({**provenance, "args": vars(a), "loss_curve": log}, indent=1) + "\n"
    nlformat.write_model_dir(a.out, export_cfg, vocab, model.export_tensors(), metadata=provenance,
                             extra={"train_log.json": train_log})  # replaced whole, never in place
    if os.path.exists(ckpt_path):
        os.remove(ckpt_path)
    print(f"wrote {a.out} ({wall:.0f} s, val {provenance['final_val_loss']})", file=sys.stderr)
    dist.barrier()
    dist.close()


if __name__ == "__main__":
    main(sys.argv[1:])
