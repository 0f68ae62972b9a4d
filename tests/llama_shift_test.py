"""The Llama family's context shift (docs/llama.md) against an independent float64 implementation of
the same rule: when the window of T is full, the first `keep` tokens stay, half of the rest go,
and the cached keys of the others are turned back by as many positions (RoPE's rotations compose),
with no re-prefill (llama.cpp's context shift). The reference is numpy, written from the rule, on
a random llama model of the normlab layout with a character vocabulary, so that the engine's
greedy text is its ids: the text of `normlab generate --temp 0` across three shifts must equal the
reference's, and the log-probabilities it reports (--n-probs) must agree within 1e-4 nats. A second
model's sentencepiece tokenizer adds a bos, which every shift keeps at slot 0 (keep = 1, llama.cpp's
n_keep): its drawn ids must equal the reference's with keep = 1, and differ from keep = 0's. A third
model has Gemma 3's windows (format v7): layer 0 sees its last 5 positions, its keys turned at RoPE
base 100, layer 1 every position at 10000; across the shifts each layer's keys turn back at its own base.
Usage: llama_shift_test.py [NORMLAB]"""
import json
import os
import subprocess
import sys
import tempfile

from tooltest import ROOT, Checks, skip_unless

skip_unless("llama_shift_test", "numpy")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
import nlformat  # noqa: E402

V, L, H, KVH, D, T, F = 40, 2, 4, 2, 32, 16, 48
DH, EPS, THETA = D // H, 1e-5, 10000.0
VOCAB = [chr(ord("a") + i) for i in range(26)] + [chr(ord("A") + i) for i in range(V - 27)] + ["\n"]
# A sentencepiece tokenizer that adds a bos (<s>, id 1): <unk> <s> </s>, the 256 byte pieces, then
# "\u2581" (the space) and a to z, one piece each, so "abcdefg" is bos, the space, then a letter a token.
SPM_PIECES = ([["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0]] + [[f"<0x{b:02X}>", 0.0] for b in range(256)] +
              [["\u2581", -1.0]] + [[chr(ord("a") + i), -1.0] for i in range(26)])
SPM = {"type": "sentencepiece", "pieces": SPM_PIECES, "unk_id": 0, "bos_id": 1, "eos_id": 2, "add_bos": True,
       "add_dummy_prefix": True, "byte_fallback": True}


WINDOWS = {"sliding_window": 5, "sliding_window_pattern": 2, "rope_local_theta": 100.0}


def make_model(path, seed, V=V, vocab=VOCAB, windows=None):
    """A random llama model (GQA 4/2, untied head), its logits peaked so greedy is not decided by
    rounding; the weights as float64 copies of the float32 file's."""
    rng = np.random.default_rng(seed)
    t = {"wte.weight": rng.normal(0, 1, (V, D)), "ln_f.weight": 1 + 0.2 * rng.normal(size=D),
         "lm_head.weight": rng.normal(0, 1.5, (V, D))}
    for l in range(L):
        t[f"h.{l}.ln_1.weight"] = 1 + 0.2 * rng.normal(size=D)
        t[f"h.{l}.attn.c_attn.weight"] = rng.normal(0, 0.5, ((H + 2 * KVH) * DH, D))
        t[f"h.{l}.attn.c_proj.weight"] = rng.normal(0, 0.3, (D, D))
        t[f"h.{l}.ln_2.weight"] = 1 + 0.2 * rng.normal(size=D)
        t[f"h.{l}.mlp.c_fc.weight"] = rng.normal(0, 0.3, (2 * F, D))
        t[f"h.{l}.mlp.c_proj.weight"] = rng.normal(0, 0.3, (D, F))
    config = {"format": {"name": "normlab", "version": 4}, "arch": "llama", "vocab_size": V, "n_layer": L,
              "n_head": H, "n_kv_head": KVH, "n_embd": D, "block_size": T, "n_inner": F, "norm": "rmsnorm",
              "placement": "pre", "norm_eps": EPS, "rope_theta": THETA, "tie_embeddings": False}
    if windows:
        config.update(windows, format={"name": "normlab", "version": 7})
    t = {k: v.astype(np.float32) for k, v in t.items()}
    nlformat.write_model_dir(path, config, vocab, t)
    return {k: v.astype(np.float64) for k, v in t.items()}


def rotate(x, angle_positions, theta=THETA):
    """RoPE's interleaved pairs of x (..., Dh) turned by angle_positions positions' angles."""
    i = np.arange(0, DH, 2)
    a = angle_positions * theta ** (-i / DH)
    c, s = np.cos(a), np.sin(a)
    y = np.empty_like(x)
    y[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    y[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return y


class Reference:
    """One sequence, token by token, over an explicit cache of rotated keys and values per layer."""

    def __init__(self, w, windows=None):
        self.w, self.keys, self.values = w, [[] for _ in range(L)], [[] for _ in range(L)]
        local = windows and [(l + 1) % windows["sliding_window_pattern"] != 0 for l in range(L)]
        self.window = [windows["sliding_window"] if local and local[l] else 0 for l in range(L)]  # 0: all
        self.theta = [windows["rope_local_theta"] if local and local[l] else THETA for l in range(L)]

    def rms(self, x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * g

    def step(self, token):
        w, pos = self.w, len(self.keys[0])
        x = w["wte.weight"][token]
        for l in range(L):
            qkv = w[f"h.{l}.attn.c_attn.weight"] @ self.rms(x, w[f"h.{l}.ln_1.weight"])
            q = rotate(qkv[:H * DH].reshape(H, DH), pos, self.theta[l])
            self.keys[l].append(rotate(qkv[H * DH:(H + KVH) * DH].reshape(KVH, DH), pos, self.theta[l]))
            self.values[l].append(qkv[(H + KVH) * DH:].reshape(KVH, DH))
            K, Vs = np.array(self.keys[l]), np.array(self.values[l])  # (len, KVH, Dh)
            K, Vs = (K[-self.window[l]:], Vs[-self.window[l]:]) if self.window[l] else (K, Vs)
            att = np.empty((H, DH))
            for h in range(H):
                g = h // (H // KVH)
                s = K[:, g] @ q[h] / np.sqrt(DH)
                p = np.exp(s - s.max())
                att[h] = (p / p.sum()) @ Vs[:, g]
            x = x + w[f"h.{l}.attn.c_proj.weight"] @ att.reshape(D)
            gu = w[f"h.{l}.mlp.c_fc.weight"] @ self.rms(x, w[f"h.{l}.ln_2.weight"])
            gate, up = gu[:F], gu[F:]
            x = x + w[f"h.{l}.mlp.c_proj.weight"] @ (gate / (1 + np.exp(-gate)) * up)
        logits = w["lm_head.weight"] @ self.rms(x, w["ln_f.weight"])
        return logits - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))  # log-probabilities

    def shift(self, keep):
        """The rule: keep the first `keep`, drop half of the rest, turn the others' keys back."""
        n = len(self.keys[0])
        drop = (n - keep) // 2
        for l in range(L):
            kept = [rotate(k, -drop, self.theta[l]) for k in self.keys[l][keep + drop:]]
            self.keys[l] = self.keys[l][:keep] + kept
            self.values[l] = self.values[l][:keep] + self.values[l][keep + drop:]
        return drop


def reference_generate(w, prompt_ids, n_new, keep, windows=None):
    ref, logp, out, shifts = Reference(w, windows), None, [], 0
    for t in prompt_ids:
        logp = ref.step(t)
    for i in range(n_new):
        token = int(np.argmax(logp))
        out.append((token, float(logp[token])))
        if i == n_new - 1:
            break
        if len(ref.keys[0]) == T:
            ref.shift(keep)
            shifts += 1
        logp = ref.step(token)
    return out, shifts


def main():
    normlab = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab")
    check = Checks("llama_shift_test")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in (1, 2, 3):
            model, windows = os.path.join(tmp, f"m{seed}"), WINDOWS if seed == 3 else None
            w = make_model(model, seed, windows=windows)
            prompt, n_new = "abcdefg", 40
            want, shifts = reference_generate(w, [VOCAB.index(c) for c in prompt], n_new, 0, windows)
            r = subprocess.run([normlab, "generate", "-m", model, "-p", prompt, "-n", str(n_new), "--temp", "0",
                                "--json", "--n-probs", "1"], capture_output=True, text=True)
            if r.returncode != 0:
                check(False, f"seed {seed}: normlab generate runs", r.stderr.strip())
                continue
            got = json.loads(r.stdout.splitlines()[0])
            text = "".join(VOCAB[t] for t, _ in want)
            check(shifts >= 3 and got["context_shifts"] == shifts,
                  f"seed {seed}: the engine shifted as often as the rule ({shifts}, a window of {T})",
                  f"engine {got['context_shifts']}, reference {shifts}")
            check(got["text"] == text, f"seed {seed}: {n_new} greedy tokens across the shifts equal the reference's",
                  f"engine {got['text']!r}, reference {text!r}")
            probs = [p["logprob"] for p in got.get("completion_probabilities", [])]
            worst = max((abs(a - b) for a, (_, b) in zip(probs, want)), default=float("inf"))
            check(len(probs) == n_new and worst < 1e-4,
                  f"seed {seed}: each drawn token's log-probability within 1e-4 of the reference's "
                  f"(largest difference {worst:.2g})", f"{len(probs)} probabilities")
        check_bos_kept(check, normlab, tmp)
    return check.summary()


def check_bos_kept(check, normlab, tmp):
    """A model that adds a bos keeps it at slot 0 through every shift: the engine's drawn ids are the
    reference's with keep = 1 (--ignore-eos: a drawn <s> or </s> would end the text)."""
    model = os.path.join(tmp, "bos")
    w = make_model(model, 3, V=len(SPM_PIECES), vocab=json.dumps(SPM))
    prompt_ids = [1, 259] + [260 + i for i in range(7)]  # <s>, the dummy prefix's space, "abcdefg"
    n_new = 40
    want, shifts = reference_generate(w, prompt_ids, n_new, keep=1)
    without, _ = reference_generate(w, prompt_ids, n_new, keep=0)
    r = subprocess.run([normlab, "generate", "-m", model, "-p", "abcdefg", "-n", str(n_new), "--temp", "0",
                        "--ignore-eos", "--json", "--n-probs", "1"], capture_output=True, text=True)
    got = json.loads(r.stdout.splitlines()[0]) if r.returncode == 0 and r.stdout else {}
    ids = [p["id"] for p in got.get("completion_probabilities", [])]
    check(got.get("prompt_tokens") == len(prompt_ids) and shifts >= 3 and got.get("context_shifts") == shifts,
          f"a bos model: the prompt is bos and {len(prompt_ids) - 1} tokens, shifted {shifts} times as the rule",
          f"{got.get('prompt_tokens')} tokens, {got.get('context_shifts')} shifts: {r.stderr.strip()[-300:]}")
    check(ids == [t for t, _ in want] and ids != [t for t, _ in without],
          f"a bos model: {n_new} greedy ids across the shifts equal the reference's with keep = 1 (not keep = 0's)",
          f"engine {ids}, keep 1 {[t for t, _ in want]}, keep 0 {[t for t, _ in without]}")


if __name__ == "__main__":
    sys.exit(main())
