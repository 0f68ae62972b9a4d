#!/usr/bin/python3
"""Readers during rewrites: `normlab eval`, `generate`, `info` and `list` in loops while
tools/interop/import_nanogpt.py and tools/train/train.py --out rewrite the very models they read,
again and again, each alternating between two different models.

Every read must exit 0 and give exactly what one of the two models gives alone (measured first):
eval its bits/char, generate its text, info its description (but for its path and metadata), list
its entry without an error. A reader that saw a mix (one model's config or tokenizer with the other's
weights, a file half written, a folder whose files were being deleted) fails or gives a third
answer. Both writers build a new folder and swap it in (tools/lib/nlformat.py write_model_dir, then
delete the old one); the loader reads a folder through one descriptor and, where the folder was
swapped away as it read, reads it again from the path (engine/model.c, docs/files.md).

The writers go on until both have made at least REWRITES rewrites and the readers at least READS
reads, so that every read counted ran while the models were being replaced; DEADLINE_S bounds the
whole run. make test runs it on the plain and the sanitizer builds.

    /usr/bin/python3 tests/readers_test.py [NORMLAB_BINARY] [--reads N] [--rewrites N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless  # noqa: E402

skip_unless("readers_test", "torch", "numpy", "tqdm")

parser = argparse.ArgumentParser(prog="readers_test.py")
parser.add_argument("binary", nargs="?", default=os.path.join(ROOT, "normlab"))
parser.add_argument("--reads", type=int, default=10000)
parser.add_argument("--rewrites", type=int, default=20)
cli = parser.parse_args()
BIN, READS, REWRITES = os.path.abspath(cli.binary), cli.reads, cli.rewrites
READERS = 2
DEADLINE_S = 540  # the whole run; a run past it fails (the readers or writers were too slow), never hangs
CMD_TIMEOUT_S = 60
os.environ["NORMLAB_BIN"] = BIN  # the writers' own checks of what they write use the same build
TEXT = os.path.join(ROOT, "tests", "data", "held_out.txt")
check = Checks("readers_test")
TRAIN = ["--data", TEXT, "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size",
         "4", "--steps", "2", "--warmup", "1", "--eval-every", "2", "--eval-batches", "1", "--threads", "1",
         "--no-progress"]


def normlab(*args, env=None):
    r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=CMD_TIMEOUT_S, env=env)
    return r.returncode, r.stdout, r.stderr.strip()


def read(kind, model, search):
    """One read of model by kind: what it gives (comparable across runs), or ("error", rc, stderr)."""
    name = os.path.basename(model)
    if kind == "eval":
        rc, out, err = normlab("eval", "-m", model, "-f", TEXT, "--json", "--threads", "1")
        got = rc == 0 and json.loads(out)["bits_per_char"]
    elif kind == "generate":
        rc, out, err = normlab("generate", "-m", model, "-p", "ab", "-n", "8", "-s", "1", "--no-echo", "--threads", "1")
        got = rc == 0 and out
    elif kind == "info":
        rc, out, err = normlab("info", "-m", model, "--json")
        got = rc == 0 and json.dumps({k: v for k, v in json.loads(out).items() if k not in ("model", "metadata")})
    else:  # list, with model's folder as the search path
        rc, out, err = normlab("list", "-m", name, "--json", env={**os.environ, "NORMLAB_MODELS": search})
        entry = rc == 0 and json.loads(out)[0]
        got = entry and "error" not in entry and entry["parameters"]
        err = err or (entry and entry.get("error"))
    return got if rc == 0 and got is not False else ("error", rc, err[-300:])


KINDS = ("eval", "generate", "info", "list")


def answers(models, search):
    """What each kind of read gives for each model alone: {kind: set of answers}."""
    return {kind: {read(kind, m, search) for m in models} for kind in KINDS}


def run(*cmd, env=None):
    r = subprocess.run(list(cmd), capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{os.path.basename(cmd[1])}: {r.stderr.strip()[-300:]}")


def importer(tmp, search):
    """The model import_nanogpt.py writes and its rewrite(i); the two models it alternates between."""
    import torch
    import nanogpt_test as ng  # its nanoGPT-format GPT and checkpoint writer
    chars = sorted(set(open(TEXT, encoding="utf-8").read()))
    args = {"n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 32, "bias": True, "vocab_size": len(chars)}
    meta = os.path.join(tmp, "meta.pkl")
    ng.write_meta(meta, chars)
    tool = os.path.join(ROOT, "tools", "interop", "import_nanogpt.py")
    ckpts, alone = [], []
    for seed in (1, 2):
        torch.manual_seed(seed)
        ckpts.append(os.path.join(tmp, f"ckpt{seed}.pt"))
        ng.write_checkpoint(ckpts[-1], ng.GPT(args).eval(), args)
        alone.append(os.path.join(tmp, f"imported{seed}"))
        run("/usr/bin/python3", tool, ckpts[-1], "--out", alone[-1], "--meta", meta)
    model = os.path.join(search, "imported")
    run("/usr/bin/python3", tool, ckpts[0], "--out", model, "--meta", meta)
    return model, alone, lambda i: run("/usr/bin/python3", tool, ckpts[(i + 1) % 2], "--out", model, "--meta", meta)


def trainer(tmp, search):
    """The model train.py --out writes and its rewrite(i); the two models (two seeds) it alternates between."""
    tool = os.path.join(ROOT, "tools", "train", "train.py")
    env = dict(os.environ, OMP_NUM_THREADS="1")

    def train(out, seed):
        run("/usr/bin/python3", tool, *TRAIN, "--seed", str(seed), "--out", out, env=env)
    alone = [os.path.join(tmp, f"trained{seed}") for seed in (1, 2)]
    for seed, out in zip((1, 2), alone):
        train(out, seed)
    model = os.path.join(search, "trained")
    train(model, 1)
    return model, alone, lambda i: train(model, 1 + (i + 1) % 2)


def stress(writers, expected, search):
    """Runs the writers and READERS reader threads until each writer has made REWRITES rewrites and
    the readers READS reads; returns ({(model, kind): [answers]}, [rewrites per writer], errors)."""
    results, counts, errors, lock = {}, [0] * len(writers), [], threading.Lock()
    done_reading, start = threading.Event(), time.monotonic()

    def late():
        return time.monotonic() - start > DEADLINE_S

    def reader(r):
        plan = [(m, k) for m in expected for k in KINDS]
        i = r
        while not done_reading.is_set() and not late():
            model, kind = plan[i % len(plan)]
            got = read(kind, model, search)
            with lock:
                results.setdefault((model, kind), []).append(got)
                if sum(map(len, results.values())) >= READS:
                    done_reading.set()
            i += 1

    def writer(w):
        rewrite = writers[w]
        try:
            while (counts[w] < REWRITES or not done_reading.is_set()) and not late():
                rewrite(counts[w])
                counts[w] += 1
        except Exception as e:  # noqa: BLE001 - reported as the check's reason
            errors.append(f"writer {w}: {e}")
        finally:
            if counts[w] < REWRITES:
                done_reading.set()  # nothing more to test against
    threads = [threading.Thread(target=reader, args=(r,)) for r in range(READERS)]
    threads += [threading.Thread(target=writer, args=(w,)) for w in range(len(writers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if late():
        errors.append(f"ran past {DEADLINE_S} s")
    return results, counts, errors


def main():
    with tempfile.TemporaryDirectory() as tmp:
        search = os.path.join(tmp, "models")
        os.makedirs(search)
        parts = [importer(tmp, search), trainer(tmp, search)]
        expected = {}
        for model, alone, _ in parts:
            expected[model] = answers(alone, tmp)
            ok = all(not isinstance(a, tuple) for kind in KINDS for a in expected[model][kind])
            check(ok and len(expected[model]["eval"]) == 2 and len(expected[model]["generate"]) == 2,
                  f"{os.path.basename(model)}: both models read alone, and their eval and generate differ",
                  str(expected[model]))
        results, counts, errors = stress([rewrite for _, _, rewrite in parts], expected, search)
        total = sum(map(len, results.values()))
        check(not errors and min(counts) >= REWRITES and total >= READS,
              f"{total} reads during {counts[0]} rewrites by import_nanogpt.py and {counts[1]} by train.py --out",
              "; ".join(errors) or f"wanted {READS} reads and {REWRITES} rewrites each")
        for (model, kind), got in sorted(results.items()):
            odd = [g for g in got if g not in expected[model][kind]]
            check(not odd, f"{kind} of {os.path.basename(model)}: {len(got)} reads, each exactly one of the two models",
                  f"{len(odd)} unexpected, e.g. {odd[:2]}")
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
