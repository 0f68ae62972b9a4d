#!/usr/bin/python3
"""Readers during a rewrite: `normlab eval` in a loop while tools/interop/import_nanogpt.py, then
tools/train/train.py, rewrite the very model it reads, again and again, alternating two different models.

Every eval must exit 0 and give exactly the bits/char of one of the two models (each measured alone
first): a reader that saw a mix (one model's config or tokenizer with the other's weights, or a
file half written) would fail or give a third number. Both writers replace a model directory by
building a new one and swapping the two in one step (tools/lib/nlformat.py write_model_dir), and
normlab opens a model's files through one descriptor of its directory.

    /usr/bin/python3 tests/readers_test.py [NORMLAB_BINARY]      (make test runs it when torch is installed)
"""
import json
import os
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks  # noqa: E402

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
os.environ["NORMLAB_BIN"] = BIN
TEXT = os.path.join(ROOT, "tests", "data", "held_out.txt")
REWRITES = 6
check = Checks("readers_test")
TRAIN = ["--data", TEXT, "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size",
         "4", "--steps", "2", "--warmup", "1", "--eval-every", "2", "--eval-batches", "1", "--threads", "1",
         "--no-progress"]


def bits(model):
    """eval's bits/char of model, or (rc, stderr) when it failed."""
    r = subprocess.run([BIN, "eval", "-m", model, "--text", TEXT, "--json", "--threads", "1"], capture_output=True,
                       text=True)
    return json.loads(r.stdout)["bits_per_char"] if r.returncode == 0 else (r.returncode, r.stderr.strip())


def read_while(model, rewrite):
    """Runs rewrite() while a thread evaluates model in a loop; returns the evals' results."""
    results, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            results.append(bits(model))
    t = threading.Thread(target=reader)
    t.start()
    try:
        rewrite()
    finally:
        stop.set()
        t.join()
    return results


def judge(label, results, allowed):
    odd = [r for r in results if r not in allowed]
    check(len(results) >= REWRITES and not odd, f"{label}: {len(results)} evals during {REWRITES} rewrites, each "
          "exactly one of the two models", f"{len(results)} evals, unexpected: {odd[:3]}")


def run(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}...: {r.stderr.strip()[-300:]}")


def importer_case(tmp):
    import torch
    import nanogpt_test as ng  # its nanoGPT-format GPT and checkpoint writer
    chars = sorted(set(open(TEXT, encoding="utf-8").read()))
    args = {"n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 32, "bias": True, "vocab_size": len(chars)}
    meta = os.path.join(tmp, "meta.pkl")
    ng.write_meta(meta, chars)
    ckpts = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        ckpts.append(os.path.join(tmp, f"ckpt{seed}.pt"))
        ng.write_checkpoint(ckpts[-1], ng.GPT(args).eval(), args)
    tool = os.path.join(ROOT, "tools", "interop", "import_nanogpt.py")
    allowed = []
    for i, c in enumerate(ckpts):
        run("/usr/bin/python3", tool, c, "--out", os.path.join(tmp, f"alone{i}"), "--meta", meta)
        allowed.append(bits(os.path.join(tmp, f"alone{i}")))
    model = os.path.join(tmp, "imported")
    run("/usr/bin/python3", tool, ckpts[0], "--out", model, "--meta", meta)

    def rewrite():
        for i in range(REWRITES):
            run("/usr/bin/python3", tool, ckpts[(i + 1) % 2], "--out", model, "--meta", meta)
    judge("import_nanogpt.py rewriting the model", read_while(model, rewrite), allowed)


def train_case(tmp):
    tool = os.path.join(ROOT, "tools", "train", "train.py")
    env = dict(os.environ, OMP_NUM_THREADS="1")

    def train(out, seed):
        r = subprocess.run(["/usr/bin/python3", tool, *TRAIN, "--seed", str(seed), "--out", out],
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"train.py: {r.stderr.strip()[-300:]}")
    allowed = []
    for seed in (1, 2):
        train(os.path.join(tmp, f"trained{seed}"), seed)
        allowed.append(bits(os.path.join(tmp, f"trained{seed}")))
    check(allowed[0] != allowed[1], "the two trained models differ", str(allowed))
    model = os.path.join(tmp, "trained")
    train(model, 1)
    judge("train.py --out rewriting the model", read_while(model, lambda: [train(model, 1 + (i + 1) % 2)
                                                                          for i in range(REWRITES)]), allowed)


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("note: python3-torch missing; readers during a rewrite are not tested here")
        return check.summary()
    with tempfile.TemporaryDirectory() as tmp:
        importer_case(tmp)
        train_case(tmp)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
