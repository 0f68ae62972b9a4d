"""The PyTorch side of make bench (tools/bench/bench.py): tools/lib/nlmodel.py's model in float32
eager PyTorch, generating nanoGPT-style (the cropped context recomputed for every token) and with a
KV cache, and scoring batched eval windows; and the thread count PyTorch and the OpenBLAS it calls run.
bench.py imports it after setting OMP_WAIT_POLICY and tools/lib on the path.
"""
import ctypes
import os
import time

import torch

import nlmodel
import nltool


# ---- PyTorch baselines (float32, eager, no autograd)

class TorchModel:
    """tools/lib/nlmodel.py's model in float32 PyTorch, with and without a KV cache."""

    def __init__(self, path):
        if not os.path.exists(path):
            raise nltool.ToolError(f"{path}: no such model")
        self.model, self.vocab = nlmodel.load(path)
        self.c = self.model.c
        if nlmodel.is_recurrent(self.c):
            raise nltool.ToolError(f"{path}: a recurrent model; the benchmark runs transformers")
        self.stoi = {ch: i for i, ch in enumerate(self.vocab)}
        self.T = self.c["block_size"]

    @torch.no_grad()
    def forward(self, ids, cache=None):
        """The logits (V,) of the last of ids (a list), at the positions after the cache's (or from 0)."""
        return self.model.head(self.model.stream(torch.tensor([ids]), cache)[:, -1:])[0, -1]

    def sample(self, logits, gen):
        return int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen))

    def generate_nanogpt(self, prompt, n, seed):
        """(a): the whole cropped context recomputed for every token. Returns (first-token s, decode tok/s)."""
        gen, ids = torch.Generator().manual_seed(seed), self.encode(prompt)
        t0 = time.perf_counter()
        for i in range(n):
            ids.append(self.sample(self.forward(ids[-self.T:]), gen))
            if i == 0:
                t1 = time.perf_counter()
        return t1 - t0, (n - 1) / (time.perf_counter() - t1)

    def generate_cached(self, prompt, n, seed):
        """(b): prefill, then one position per step against a KV cache (context shift when full)."""
        gen, ids = torch.Generator().manual_seed(seed), self.encode(prompt)[-self.T:]
        cache = self.model.new_cache()
        t0 = time.perf_counter()
        logits, pos = self.forward(ids, cache), len(ids)
        for i in range(n):
            tok = self.sample(logits, gen)
            if i == 0:
                t1 = time.perf_counter()
            ids.append(tok)
            if pos == self.T:  # keep the most recent half, as normlab does
                ids = ids[-(self.T // 2):]
                cache = self.model.new_cache()
                logits, pos = self.forward(ids, cache), len(ids)
            else:
                logits, pos = self.forward([tok], cache), pos + 1
        return t1 - t0, (n - 1) / (time.perf_counter() - t1)

    def prefill_rate(self, text):
        ids = self.encode(text)
        t0 = time.perf_counter()
        self.forward(ids)
        return len(ids) / (time.perf_counter() - t0)

    @torch.no_grad()
    def eval_batched(self, text, batch=32):
        """(characters scored per second, nats/char) with normlab's windows (stride T/2), `batch`
        windows per call, as a user scoring a text with PyTorch would batch them."""
        ids, T, stride = self.encode(text), self.T, self.T // 2
        wins, scored, n_in = [], 0, len(ids) - 1
        while scored < n_in:
            end = min(n_in, T) if scored == 0 else min(scored + stride, n_in)
            wins.append((max(0, end - T), scored, end))
            scored = end
        t0, nll = time.perf_counter(), 0.0
        for g in range(0, len(wins), batch):
            group = wins[g:g + batch]
            logp = torch.log_softmax(self.model(torch.tensor([ids[s:e] for s, _, e in group])), -1)
            for j, (s, b, e) in enumerate(group):
                nll -= float(logp[j, b - s:e - s].gather(1, torch.tensor(ids[b + 1:e + 1])[:, None]).sum())
        return n_in / (time.perf_counter() - t0), nll / n_in

    def encode(self, text):
        return [self.stoi[ch] for ch in text]


# ---- normlab, through its command line


def set_torch_threads(threads):
    """PyTorch on `threads` threads: its own (OpenMP) and those of the OpenBLAS it calls. Debian's
    torch loads OpenBLAS twice (as libblas.so.3 and as libopenblas.so.0), each sized to every CPU
    when it loads; left so, 1-thread torch would run 2 OpenBLAS threads per product, and 2-thread
    torch 2 x 2 on 2 cores."""
    torch.set_num_threads(threads)
    for name in ("libblas.so.3", "libopenblas.so.0"):
        try:
            ctypes.CDLL(name).openblas_set_num_threads(threads)
        except (OSError, AttributeError):
            pass
