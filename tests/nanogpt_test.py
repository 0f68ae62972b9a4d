#!/usr/bin/python3
"""tools/interop/import_nanogpt.py against checkpoints written in nanoGPT's exact format by a small GPT that
follows nanoGPT's model.py formulas (written here, not imported: pre-LN blocks, LayerNorm eps 1e-5
with an optional bias, exact GELU, MLP 4x, tied lm_head/wte, a causal-mask buffer attn.bias).

Each imported model must give `normlab logits` within 1e-4 of the GPT's own logits at every
position, and `normlab eval` within 1e-5 relative of the GPT's loss over the same windows (block_size,
stride block_size/2). Also: torch.compile's _orig_mod. prefix, meta.pkl found as sample.py finds it,
beside the checkpoint or with --meta, the provenance in `normlab info`, and clear refusals (no
meta.pkl, a meta.pkl naming a class, a vocabulary that disagrees with the model). Without meta.pkl, GPT-2's
BPE: both a from-scratch checkpoint padded to 50304 rows and one fine-tuned from GPT-2 (init_from='gpt2',
exactly 50257 rows) import with GPT-2's tokenizer and give the GPT's logits over its 50257 tokens.

    /usr/bin/python3 tests/nanogpt_test.py [NORMLAB_BINARY]      (make test runs it when torch is installed)
"""
import json
import math
import os
import pickle
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
os.environ["NORMLAB_BIN"] = BIN  # the binary whose loader checks what the importer writes
TOOL = os.path.join(ROOT, "tools", "interop", "import_nanogpt.py")
TEXT = os.path.join(ROOT, "tests", "data", "held_out.txt")
LOGIT_ATOL, EVAL_RTOL = 1e-4, 1e-5
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, make_read_only, skip_unless, snapshot, undo_read_only  # noqa: E402

check = Checks("nanogpt_test")


def ok(name):
    check(True, name)


def bad(name, why):
    check(False, name, why)


skip_unless("nanogpt_test", "torch", "numpy")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class LayerNorm(nn.Module):
    def __init__(self, D, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(D))
        self.bias = nn.Parameter(torch.zeros(D)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class Attention(nn.Module):
    def __init__(self, a):
        super().__init__()
        D, T = a["n_embd"], a["block_size"]
        self.H = a["n_head"]
        self.c_attn = nn.Linear(D, 3 * D, bias=a["bias"])
        self.c_proj = nn.Linear(D, D, bias=a["bias"])
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))  # saved, as old PyTorch did

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.c_attn(x).split(D, dim=2)
        q, k, v = (t.view(B, T, self.H, D // self.H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, D))


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        D = a["n_embd"]
        self.ln_1, self.attn, self.ln_2 = LayerNorm(D, a["bias"]), Attention(a), LayerNorm(D, a["bias"])
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(D, 4 * D, bias=a["bias"]),
                                      c_proj=nn.Linear(4 * D, D, bias=a["bias"])))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(a["vocab_size"], a["n_embd"]), wpe=nn.Embedding(a["block_size"], a["n_embd"]),
            h=nn.ModuleList(Block(a) for _ in range(a["n_layer"])), ln_f=LayerNorm(a["n_embd"], a["bias"])))
        self.lm_head = nn.Linear(a["n_embd"], a["vocab_size"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied, as nanoGPT does
        with torch.no_grad():  # weights large enough that the logits say something
            for name, p in self.named_parameters():
                if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                    p.copy_(1 + 0.3 * torch.randn_like(p))
                else:
                    p.copy_(0.3 * torch.randn_like(p))

    def forward(self, idx):  # (B, T) -> (B, T, V)
        T = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def write_checkpoint(path, model, args, compiled=False, dataset="shakespeare_char", init_from="scratch"):
    state = model.state_dict()
    if compiled:
        state = {"_orig_mod." + k: v for k, v in state.items()}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ckpt = {"model": state, "optimizer": opt.state_dict(), "model_args": dict(args, dropout=0.2), "iter_num": 250,
            "best_val_loss": torch.tensor(1.4697),
            "config": {"dataset": dataset, "batch_size": 64, "block_size": args["block_size"], "dropout": 0.2,
                       "compile": compiled, "learning_rate": 1e-3, "init_from": init_from}}
    torch.save(ckpt, path)


def write_meta(path, chars):
    stoi = {ch: i for i, ch in enumerate(chars)}
    with open(path, "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": {i: ch for i, ch in enumerate(chars)}, "stoi": stoi}, f)


class Payload:
    """Pickles as a call of fn(*args): what a hostile checkpoint hides in its pickle."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def payloads(marker, inner_ckpt):
    """Each (label, Payload) creates the file marker if it ever runs."""
    import builtins
    return [("os.system", Payload(os.system, f"touch {marker}")),
            ("builtins.eval", Payload(builtins.eval, f"open({marker!r}, 'w').close()")),
            ("subprocess.Popen", Payload(subprocess.Popen, ["touch", marker])),
            ("torch.load", Payload(torch.load, inner_ckpt))]  # inner_ckpt: itself runs os.system


def hostile_checkpoint(path, model, args, where, payload):
    """A real nanoGPT checkpoint with payload planted in its config, model_args or state dict."""
    write_checkpoint(path, model, args)
    ckpt = torch.load(path)  # our own file, just written: safe to load whole here
    if where == "config":
        ckpt["config"]["dataset"] = payload
    elif where == "model_args":
        ckpt["model_args"]["n_embd"] = payload
    else:
        ckpt["model"]["transformer.wte.weight"] = payload
    torch.save(ckpt, path)


def check_hostile(tmp, model, args, meta):
    """Every payload, in every place, is refused by name with nothing run."""
    marker = os.path.join(tmp, "marker")
    inner = os.path.join(tmp, "inner.pt")
    torch.save({"x": Payload(os.system, f"touch {marker}")}, inner)
    live = os.path.join(tmp, "live.pt")
    hostile_checkpoint(live, model, args, "config", payloads(marker, inner)[0][1])
    r = run("/usr/bin/python3", "-c", f"import torch; torch.load({live!r})")  # what an unguarded reader does
    check(os.path.exists(marker), "the planted payload is live: an unguarded torch.load runs it", r.stderr[-200:])
    for where in ("config", "model_args", "state dict"):
        for label, payload in payloads(marker, inner):
            if os.path.exists(marker):
                os.remove(marker)
            path = os.path.join(tmp, "hostile.pt")
            hostile_checkpoint(path, model, args, where, payload)
            out = os.path.join(tmp, "hostile-model")
            r = import_model(path, out, "--meta", meta)
            named = label.split(".")[-1] in r.stderr and "nothing was run" in r.stderr
            check(r.returncode == 1 and named and len(r.stderr.splitlines()) == 1 and not os.path.exists(marker)
                  and not os.path.exists(out), f"a checkpoint naming {label} in its {where} is refused, nothing run",
                  f"rc {r.returncode}, marker {os.path.exists(marker)}: {r.stderr.strip()[-300:]}")


def edited_checkpoint(path, model, args, edit):
    """A nanoGPT checkpoint of model, then edit(ckpt) applied to it."""
    write_checkpoint(path, model, args)
    ckpt = torch.load(path)  # our own file
    edit(ckpt)
    torch.save(ckpt, path)


def refused(r, name, words, out, before=None):
    """The import failed with exit 1 and one line holding every one of words; out is as it was."""
    after = snapshot(out)
    one_line = len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr
    check(r.returncode == 1 and one_line and all(w in r.stderr for w in words) and after == before,
          name, f"rc {r.returncode}, out changed {after != before}: {r.stderr.strip()[-300:]}")


def set_tensor(name, value):
    def edit(ckpt):
        w = ckpt["model"][name]
        w.view(-1)[3] = value
    return edit


def check_engine_rules(tmp, model, args, chars, meta):
    """What normlab refuses, the importer refuses, with the loader's own words, writing nothing."""
    ckpt = os.path.join(tmp, "rules.pt")
    out = os.path.join(tmp, "rules-model")

    def args_edit(**kw):
        return lambda c: c["model_args"].update(kw)

    def long_context(c):
        c["model_args"]["block_size"] = 100000
        c["model"]["transformer.wpe.weight"] = torch.zeros(100000, args["n_embd"])
    cases = [("n_head 0", args_edit(n_head=0), ["n_head"]),
             ("an n_head that does not divide n_embd", args_edit(n_head=3), ["n_head", "n_embd"]),
             ("block_size 100,000", long_context, ["block_size"]),
             ("a NaN weight", set_tensor("transformer.h.0.mlp.c_fc.weight", float("nan")), ["non-finite"]),
             ("an Inf weight", set_tensor("transformer.wpe.weight", float("inf")), ["non-finite"])]
    for label, edit, words in cases:
        edited_checkpoint(ckpt, model, args, edit)
        refused(import_model(ckpt, out, "--meta", meta), f"the importer refuses {label} as normlab does",
                words + [out + "/"], out)
    write_checkpoint(ckpt, model, args)
    for label, vocab, words in (("a duplicate character", [chars[0]] + chars[:-1], ["the same character"]),
                                ("a NUL character", ["\0"] + chars[1:], ["NUL"]),
                                ("a lone surrogate", ["\ud800"] + chars[1:], ["surrogate"])):
        bad_meta = os.path.join(tmp, "bad-meta.pkl")
        write_meta(bad_meta, vocab)
        refused(import_model(ckpt, out, "--meta", bad_meta), f"the importer refuses a vocabulary with {label}",
                words, out)
    check(import_model(ckpt, out, "--meta", meta).returncode == 0, "the unedited checkpoint imports")
    before = snapshot(out)
    edited_checkpoint(ckpt, model, args, args_edit(n_head=0))
    refused(import_model(ckpt, out, "--meta", meta), "a refused import leaves the model at --out as it was",
            ["n_head"], out, before)


def check_odd_fields(tmp, model, args, meta):
    """Fields of odd types: a refusal in one line, or an import that records them as a note."""
    ckpt, out = os.path.join(tmp, "odd.pt"), os.path.join(tmp, "odd-model")
    edited_checkpoint(ckpt, model, args, lambda c: c.update(model_args=[1]))
    refused(import_model(ckpt, out, "--meta", meta), "model_args that is a list is one line", ["model_args"], out)

    def odd(c):
        c["config"][("a", "b")] = 1  # a key JSON cannot hold
        c["iter_num"] = 10 ** 5000  # an int str() refuses to print
    edited_checkpoint(ckpt, model, args, odd)
    r = import_model(ckpt, out, "--meta", meta)
    info = run(BIN, "info", "-m", out, "--json")
    meta_out = json.loads(info.stdout).get("metadata", {}) if info.returncode == 0 else {}
    noted = meta_out.get("iter_num") == "<int>" and "not JSON" in meta_out.get("nanogpt_config", "")
    check(r.returncode == 0 and noted, "a config JSON cannot hold and a huge iter_num are recorded as notes, "
          "the model imported", r.stderr[-300:])


def check_out_paths(tmp, model, args, meta):
    """--out: never empty, never an input, never a file or a folder that holds no model; a failure
    to write is one line."""
    ckpt = os.path.join(tmp, "paths.pt")
    write_checkpoint(ckpt, model, args)
    here = os.path.join(tmp, "cwd")
    os.makedirs(here)
    open(os.path.join(here, "notes.txt"), "w").write("mine\n")
    before = snapshot(here)
    refused(import_model(ckpt, "", "--meta", meta, cwd=here), "--out '' is refused, the working folder untouched",
            ["--out is empty"], here, before)
    refused(import_model(ckpt, ckpt, "--meta", meta), "--out naming the checkpoint is refused", ["is the input"],
            ckpt, snapshot(ckpt))
    refused(import_model(ckpt, meta, "--meta", meta), "--out naming meta.pkl is refused", ["is the input"], meta,
            snapshot(meta))
    plain = os.path.join(tmp, "plain.txt")
    open(plain, "w").write("a file\n")
    refused(import_model(ckpt, plain, "--meta", meta), "--out on a regular file is refused",
            ["not a directory"], plain, snapshot(plain))
    refused(import_model(ckpt, here, "--meta", meta), "--out on a folder that holds no model is refused",
            ["holds no model"], here, before)
    missing = os.path.join(tmp, "no", "such", "m")
    refused(import_model(ckpt, missing, "--meta", meta), "--out in a missing directory is one line",
            ["no directory"], missing)
    locked = os.path.join(tmp, "locked")
    os.makedirs(locked)
    if make_read_only(locked):
        refused(import_model(ckpt, os.path.join(locked, "m"), "--meta", meta),
                "--out in a read-only directory is one line", ["cannot write"], os.path.join(locked, "m"))
        undo_read_only(locked)
    else:
        print("note: no way to make a read-only directory here (chattr, mount); that case is not tested")
    junk = os.path.join(tmp, "junk.pt")
    open(junk, "wb").write(b"not a zip at all")
    refused(import_model(junk, os.path.join(tmp, "j"), "--meta", meta), "a file that is no checkpoint is one line",
            ["not a zip-format"], os.path.join(tmp, "j"))
    cut = os.path.join(tmp, "cut.pt")
    open(cut, "wb").write(open(ckpt, "rb").read()[:-4000])
    refused(import_model(cut, os.path.join(tmp, "j"), "--meta", meta), "a truncated checkpoint is one line",
            ["cut.pt"], os.path.join(tmp, "j"))
    bad_pickle = os.path.join(tmp, "bad.pkl")
    open(bad_pickle, "wb").write(b"\x80\x04garbage")
    refused(import_model(ckpt, os.path.join(tmp, "j"), "--meta", bad_pickle), "a meta.pkl that is no pickle is "
            "one line", ["not a readable pickle"], os.path.join(tmp, "j"))


def run(*cmd, cwd=None):
    return subprocess.run(list(cmd), capture_output=True, text=True, cwd=cwd)


def import_model(ckpt, out, *extra, cwd=None):
    return run("/usr/bin/python3", TOOL, ckpt, "--out", out, *extra, cwd=cwd)


@torch.no_grad()
def gpt_eval(model, ids, T):
    """nats/char over ids[1:] with normlab's documented windows: the first T inputs, then every
    T/2 new ones with the T before them."""
    n_inputs, scored, total, stride = len(ids) - 1, 0, 0.0, max(1, T // 2)
    while scored < n_inputs:
        end = min(n_inputs, T) if scored == 0 else min(scored + stride, n_inputs)
        start = max(0, end - T)
        logp = torch.log_softmax(model(torch.tensor([ids[start:end]]))[0].double(), -1)
        total -= sum(logp[p - start, ids[p + 1]].item() for p in range(scored, end))
        scored = end
    return total / n_inputs


def check_import(label, model, args, chars, out):
    prompt = "ROMEO:\nWhat light is this upon the eastern wall, and who"[:args["block_size"]]
    r = run(BIN, "logits", "-m", out, "-p", prompt)
    if r.returncode != 0:
        bad(f"{label}: normlab logits", r.stderr.strip())
        return
    got = torch.tensor([json.loads(line) for line in r.stdout.splitlines()], dtype=torch.float64)
    stoi = {ch: i for i, ch in enumerate(chars)}
    with torch.no_grad():
        want = model(torch.tensor([[stoi[c] for c in prompt]]))[0].double()
    d = (got - want).abs().max().item() if got.shape == want.shape else float("inf")
    check(d <= LOGIT_ATOL, f"{label}: logits match nanoGPT's to {d:.2g} (<= {LOGIT_ATOL:g})", f"{d} {got.shape}")
    r = run(BIN, "eval", "-m", out, "--text", TEXT, "--json")
    text = open(TEXT, encoding="utf-8").read()
    want_nats = gpt_eval(model, [stoi[c] for c in text], args["block_size"])
    got_nats = json.loads(r.stdout)["nats_per_char"] if r.returncode == 0 else float("nan")
    rel = abs(got_nats - want_nats) / want_nats
    check(rel <= EVAL_RTOL, f"{label}: eval {got_nats:.6f} vs nanoGPT {want_nats:.6f} nats/char (rel {rel:.2g})",
          r.stderr.strip())


def check_bpe(tmp, rows, init_from):
    """A checkpoint without meta.pkl, of rows embedding rows: nanoGPT's BPE recipe from scratch pads
    vocab_size to 50304; a run from init_from='gpt2' keeps GPT-2's exact 50257. Either imports with
    GPT-2's 50257 tokens and its tokenizer.json, and the logits match the GPT's first 50257 at every
    position."""
    args = {"n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 32, "bias": True, "vocab_size": rows}
    label = f"BPE checkpoint of {rows} rows (init_from={init_from!r})"
    model = GPT(args)
    folder = os.path.join(tmp, f"bpe-run-{rows}")
    os.makedirs(folder)
    write_checkpoint(os.path.join(folder, "ckpt.pt"), model, args, dataset="shakespeare", init_from=init_from)
    out = os.path.join(tmp, f"bpe-model-{rows}")
    r = import_model(os.path.join(folder, "ckpt.pt"), out, cwd=folder)
    check(r.returncode == 0 and "GPT-2's BPE (50257 tokens)" in r.stderr,
          f"{label}, no meta.pkl: imported with GPT-2's BPE", r.stderr.strip())
    if r.returncode != 0:
        return
    info = json.loads(run(BIN, "info", "-m", out, "--json").stdout or "{}")
    check(info.get("tokenizer") == "bpe" and info.get("tokenizer_size") == 50257 and info.get("vocab_size") == 50257,
          f"{label}: info shows a BPE tokenizer of 50257 tokens and vocab_size 50257", str(info)[:300])
    prompt = "ROMEO:\nWhat light"
    ids = json.loads(run(BIN, "tokenize", "-m", out, "-p", prompt, "--json").stdout)["ids"]
    r = run(BIN, "logits", "-m", out, "-p", prompt)
    got = torch.tensor([json.loads(line) for line in r.stdout.splitlines()], dtype=torch.float64)
    with torch.no_grad():
        want = model(torch.tensor([ids]))[0, :, :50257].double()
    d = (got - want).abs().max().item() if got.shape == want.shape else float("inf")
    check(ids[:3] == [33676, 4720, 25] and d <= LOGIT_ATOL,
          f"{label}: ROMEO: is [33676, 4720, 25] (ROM EO :); logits match nanoGPT's first 50257 to {d:.2g}",
          f"{ids} {got.shape}")


def main():
    torch.manual_seed(1337)
    chars = sorted(set(open(TEXT, encoding="utf-8").read()))
    with tempfile.TemporaryDirectory() as tmp:
        for bias, compiled in ((True, False), (False, True)):
            args = {"n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 64, "bias": bias, "vocab_size": len(chars)}
            model = GPT(args).eval()
            label = f"bias={bias}" + (", _orig_mod. prefix" if compiled else "")
            run_dir = os.path.join(tmp, f"run-{bias}")  # like nanoGPT's checkout: out-*/ckpt.pt, data/*/meta.pkl
            os.makedirs(os.path.join(run_dir, "out"))
            os.makedirs(os.path.join(run_dir, "data", "shakespeare_char"))
            ckpt = os.path.join(run_dir, "out", "ckpt.pt")
            write_checkpoint(ckpt, model, args, compiled)
            if bias:  # found where sample.py looks: data/<dataset>/meta.pkl under the current directory
                write_meta(os.path.join(run_dir, "data", "shakespeare_char", "meta.pkl"), chars)
            else:  # found beside the checkpoint
                write_meta(os.path.join(run_dir, "out", "meta.pkl"), chars)
            out = os.path.join(tmp, f"model-{bias}")
            r = import_model(ckpt, out, cwd=run_dir)
            check(r.returncode == 0, f"{label}: imports", r.stderr.strip())
            if r.returncode == 0:
                check_import(label, model, args, chars, out)
        # provenance, and --meta
        r = import_model(os.path.join(tmp, "run-True", "out", "ckpt.pt"), os.path.join(tmp, "m3"), "--meta",
                         os.path.join(tmp, "run-True", "data", "shakespeare_char", "meta.pkl"))
        check(r.returncode == 0, "--meta names the vocabulary", r.stderr.strip())
        r = run(BIN, "info", "-m", os.path.join(tmp, "m3"), "--json")
        meta = json.loads(r.stdout).get("metadata", {}) if r.returncode == 0 else {}
        check(meta.get("iter_num") == 250 and str(meta.get("best_val_loss", "")).startswith("1.469")
              and len(meta.get("source_sha256", "")) == 64 and "shakespeare_char" in meta.get("nanogpt_config", ""),
              "normlab info shows the provenance (iter_num, best_val_loss, source hash, nanoGPT config)", str(meta))
        r = run(BIN, "info", "-m", os.path.join(tmp, "m3"))
        check("metadata.iter_num" in r.stdout, "info's text shows it too", r.stdout[-300:])
        # refusals: one line naming the problem, non-zero, nothing written
        bare = os.path.join(tmp, "bare")
        os.makedirs(bare)
        write_checkpoint(os.path.join(bare, "ckpt.pt"), GPT(args), args, dataset="openwebtext")
        r = import_model(os.path.join(bare, "ckpt.pt"), os.path.join(tmp, "m4"), cwd=bare)
        check(r.returncode != 0 and "GPT-2's BPE" in r.stderr and "--meta" in r.stderr and not os.path.exists(
            os.path.join(tmp, "m4")), "no meta.pkl means GPT-2's BPE: a 65-row vocabulary is refused, naming --meta",
            r.stderr.strip())
        check_bpe(tmp, 50304, "scratch")
        check_bpe(tmp, 50257, "gpt2")
        evil = os.path.join(tmp, "evil.pkl")
        with open(evil, "wb") as f:
            pickle.dump({"itos": {0: "a"}, "hook": os.system}, f)
        r = import_model(os.path.join(bare, "ckpt.pt"), os.path.join(tmp, "m5"), "--meta", evil)
        check(r.returncode != 0 and "only plain dicts" in r.stderr, "a meta.pkl naming a function is not run",
              r.stderr.strip())
        short = os.path.join(tmp, "short.pkl")
        write_meta(short, chars[:-1])
        r = import_model(os.path.join(bare, "ckpt.pt"), os.path.join(tmp, "m6"), "--meta", short)
        check(r.returncode != 0 and "normlab needs them equal" in r.stderr, "a vocabulary of the wrong size is refused",
              r.stderr.strip())
        torch.save({"model": {}, "hook": os.system}, os.path.join(tmp, "evil.pt"))
        r = import_model(os.path.join(tmp, "evil.pt"), os.path.join(tmp, "m8"), "--meta", short)
        check(r.returncode != 0 and "system" in r.stderr and len(r.stderr.splitlines()) == 1,
              "a checkpoint naming a function is not run", r.stderr.strip())
        check_engine_rules(tmp, GPT(args), args, chars,
                           os.path.join(tmp, "run-True", "data", "shakespeare_char", "meta.pkl"))
        check_out_paths(tmp, GPT(args), args, os.path.join(tmp, "run-True", "data", "shakespeare_char", "meta.pkl"))
        check_odd_fields(tmp, GPT(args), args, os.path.join(tmp, "run-True", "data", "shakespeare_char", "meta.pkl"))
        check_hostile(tmp, GPT(args), args, os.path.join(tmp, "run-True", "data", "shakespeare_char", "meta.pkl"))
        r = import_model(os.path.join(tmp, "nonexistent.pt"), os.path.join(tmp, "m7"))
        check(r.returncode != 0 and "no such file" in r.stderr, "a missing checkpoint is named", r.stderr.strip())
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
