#!/usr/bin/python3
"""tools/train.py under PyTorch's distributed data parallel (torchrun, gloo on CPUs) against one
process: 3 steps of 2 processes x 4 sequences must give the losses of 1 process x 8 (within 1e-5
relative: the same global batch, data order and initial weights; only the order of the float sums
differs), and the same weights (the written models' logits within 1e-4 through normlab). --resume
under both: a run stopped after 2 steps (--stop-after) and resumed gives the same 3 losses. The
written model loads in normlab; only rank 0 writes.

    /usr/bin/python3 tests/ddp_test.py [NORMLAB_BINARY]     (make test runs it when torch is installed)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
CORPUS = os.path.join(ROOT, "tests", "data", "held_out.txt")  # a small text: 3 steps need little
RTOL, LOGIT_ATOL = 1e-5, 1e-4
passed = failed = 0


def check(cond, name, why=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {why}")


try:
    import torch  # noqa: F401
    import torch.distributed  # noqa: F401
    have = torch.distributed.is_available() and torch.distributed.is_gloo_available()
except ImportError:
    have = False
if not have:
    print("note: python3-torch with gloo missing; distributed training is not tested here "
          "(tools/install-deps.sh --python)")
    print("ddp_test: 0 passed, 0 failed")
    sys.exit(0)

TRAIN = ["--data", CORPUS, "--n-layer", "2", "--n-head", "2", "--n-embd", "16", "--block-size", "16",
         "--batch-size", "8", "--steps", "3", "--warmup", "1", "--eval-every", "3", "--eval-batches", "1",
         "--threads", "1", "--no-progress"]


def train(out, procs, *extra):
    if procs == 1:
        cmd = ["/usr/bin/python3", os.path.join(ROOT, "tools", "train.py")]
    else:
        # --redirects 1 --tee 1: Debian 12's torchrun (PyTorch 1.13 on Python 3.11) parses the default
        # "0" as None and fails; 1 sends the workers' stdout to its logs and to ours
        cmd = ["/usr/bin/python3", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(procs),
               "--redirects", "1", "--tee", "1", os.path.join(ROOT, "tools", "train.py")]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(cmd + TRAIN + ["--out", out, *extra], capture_output=True, text=True, env=env, timeout=600)


def losses(out):
    return [v for _, v in json.load(open(os.path.join(out, "train_log.json")))["loss_curve"]["train"]]


def close(a, b):
    return len(a) == len(b) == 3 and all(abs(x - y) <= RTOL * abs(y) for x, y in zip(a, b))


def logits(model):
    r = subprocess.run([BIN, "logits", "-m", model, "-p", "KING:\nNow speak"], capture_output=True, text=True)
    return [json.loads(line) for line in r.stdout.splitlines()] if r.returncode == 0 else None


def main():
    with tempfile.TemporaryDirectory() as tmp:
        one, two = os.path.join(tmp, "one"), os.path.join(tmp, "two")
        r1, r2 = train(one, 1), train(two, 2)
        check(r1.returncode == 0, "one process trains", r1.stderr[-500:])
        check(r2.returncode == 0, "2 processes under torchrun (gloo) train", r2.stderr[-800:])
        if r1.returncode or r2.returncode:
            print(f"ddp_test: {passed} passed, {failed} failed")
            return 1
        a, b = losses(one), losses(two)
        check(close(b, a), f"2 x 4 sequences give 1 x 8's losses to 1e-5 relative ({b} vs {a})", f"{b} vs {a}")
        log = json.load(open(os.path.join(two, "train_log.json")))
        check(log["processes"] == 2 and log["batch_size"] == 8, "the log records 2 processes, global batch 8",
              str({k: log.get(k) for k in ("processes", "batch_size")}))
        check(r2.stderr.count("wrote ") == 1 and sorted(os.listdir(two)) == ["config.json", "model.safetensors",
                                                                             "tokenizer.json", "train_log.json"],
              "rank 0 alone writes the model (one 'wrote', no checkpoint left)", f"{os.listdir(two)} {r2.stderr}")
        la, lb = logits(one), logits(two)
        d = max(abs(x - y) for ra, rb in zip(la, lb) for x, y in zip(ra, rb)) if la and lb else float("inf")
        check(d <= LOGIT_ATOL, f"the written model loads in normlab; logits of 1 and 2 processes within {d:.2g}")
        for procs in (1, 2):
            out = os.path.join(tmp, f"resumed-{procs}")
            first = train(out, procs, "--stop-after", "2")
            stopped = first.returncode == 0 and os.path.exists(os.path.join(out, "ckpt.pt")) and \
                not os.path.exists(os.path.join(out, "model.safetensors"))
            check(stopped, f"{procs} process(es): --stop-after 2 leaves a checkpoint and no model", first.stderr[-500:])
            second = train(out, procs, "--resume")
            ok = second.returncode == 0 and "resumed from" in second.stderr and close(losses(out), a)
            check(ok, f"{procs} process(es): --resume finishes with the uninterrupted run's losses",
                  second.stderr[-500:] + str(losses(out) if second.returncode == 0 else ""))
    print(f"ddp_test: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
