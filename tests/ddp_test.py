#!/usr/bin/python3
"""tools/train/train.py under PyTorch's distributed data parallel (torchrun, gloo on CPUs) against one
process: 3 steps of 2 processes x 4 sequences must give the losses of 1 process x 8 (within 1e-5
relative: the same global batch, data order and initial weights; only the order of the float sums
differs), and the same weights (the written models' logits within 1e-4 through normlab). --resume
under both: a run stopped after 2 steps (--stop-after) and resumed gives the same 3 losses. The
written model loads in normlab; only rank 0 writes.

No run may hang the test or outlive it: each runs in its own session and has RUN_TIMEOUT seconds
(a clear FAIL, not a traceback, when they pass), its process group is killed when it ends, and no
process of this test's temporary directory may be left. torchrun gets a rendezvous of its own
(port 0: none shared with another run's --standalone 29400) with a join timeout, and train.py
--dist-timeout 60 for its rendezvous and every collective. Two runs prove the fail-fast path,
through train.py's test-only NORMLAB_TEST_FAULT: rank 1 leaving at step 2 (exit 0, which torchrun
does not count as a failure) and rank 1 hanging at step 2; rank 0 must end non-zero with its
one-line message and no traceback, the first before --dist-timeout, the second after it.

    /usr/bin/python3 tests/ddp_test.py [NORMLAB_BINARY]     (make test runs it when torch is installed)
"""
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import skip_unless  # noqa: E402

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
CORPUS = os.path.join(ROOT, "tests", "data", "held_out.txt")  # a small text: 3 steps need little
RTOL, LOGIT_ATOL = 1e-5, 1e-4
RUN_TIMEOUT = 120  # seconds for one run; the slowest, the hanging peer's, takes about 20 under load
DIST_TIMEOUT, HANG_TIMEOUT = 60, 10  # train.py --dist-timeout: every run's, the hanging peer run's
passed = failed = 0


def check(cond, name, why=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {why}")


skip_unless("ddp_test", "torch", "numpy", "tqdm")
import torch  # noqa: E402
import torch.distributed  # noqa: E402

if not (torch.distributed.is_available() and torch.distributed.is_gloo_available()):
    print("ddp_test: 0 passed, 0 failed, 1 skipped (python3-torch with gloo missing: tools/install-deps.sh --python)")
    sys.exit(0)

TRAIN = ["--data", CORPUS, "--n-layer", "2", "--n-head", "2", "--n-embd", "16", "--block-size", "16",
         "--batch-size", "8", "--steps", "3", "--warmup", "1", "--eval-every", "3", "--eval-batches", "1",
         "--threads", "1", "--no-progress"]


class Run:
    def __init__(self, returncode, stdout, stderr, seconds, timed_out, left):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr
        self.seconds, self.timed_out, self.left = seconds, timed_out, left

    def why(self, tail=500):
        """What a FAIL line shows: the timeout or the processes left behind, then stderr's tail."""
        if self.timed_out:
            return f"no result within {RUN_TIMEOUT} s, its process group killed; stderr: {self.stderr[-tail:]}"
        if self.left:
            return f"processes of the run outlived it (killed): {self.left}; stderr: {self.stderr[-tail:]}"
        return self.stderr[-tail:]


def ours(path):
    """Processes whose command line names path (a run's --out, this test's temporary directory)."""
    r = subprocess.run(["pgrep", "-f", path], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def train(out, procs, *extra, env=None, dist_timeout=DIST_TIMEOUT):
    """One training run in a session of its own: killed whole (os.killpg) when it runs past
    RUN_TIMEOUT, and in any case when it ends; Run.left lists what outlived torchrun or train.py."""
    if procs == 1:
        cmd = ["/usr/bin/python3", os.path.join(ROOT, "tools", "train", "train.py")]
    else:
        # --redirects 1 --tee 1: Debian 12's torchrun (PyTorch 1.13 on Python 3.11) parses the default
        # "0" as None and fails; 1 sends the workers' stdout to its logs and to ours. Not --standalone:
        # its rendezvous store is on port 29400, shared with any other torchrun on the machine (another
        # make test's), which joins it or fails when it goes; port 0 gives this run a store of its own.
        # --monitor_interval 1: torchrun looks at its workers every second, not every 5
        cmd = ["/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes", "1", "--rdzv_backend", "c10d",
               "--rdzv_endpoint", "localhost:0", "--rdzv_id", os.path.basename(out),
               "--rdzv_conf", f"join_timeout={DIST_TIMEOUT}", "--monitor_interval", "1",
               "--nproc_per_node", str(procs), "--redirects", "1", "--tee", "1",
               os.path.join(ROOT, "tools", "train", "train.py")]
    env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    args = TRAIN + ["--out", out, "--dist-timeout", str(dist_timeout), *extra]
    t0 = time.time()
    p = subprocess.Popen(cmd + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    timed_out = False
    try:
        stdout, stderr = p.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(p.pid, signal.SIGKILL)
        stdout, stderr = p.communicate()
    seconds = time.time() - t0
    left = ours(out)
    try:
        os.killpg(p.pid, signal.SIGKILL)  # what is left of the session's group (the ranks)
    except ProcessLookupError:
        pass
    return Run(None if timed_out else p.returncode, stdout, stderr, seconds, timed_out, left)


def fails_fast(tmp, how):
    """Rank 1 leaves (exit 0) or hangs at step 2: rank 0 must end the run non-zero with its one line.
    The check's arguments."""
    timeout = DIST_TIMEOUT if how == "exit" else HANG_TIMEOUT
    r = train(os.path.join(tmp, f"fault-{how}"), 2, env={"NORMLAB_TEST_FAULT": f"1:2:{how}"}, dist_timeout=timeout)
    said = ("train.py: rank 0 of 2: the all_reduce of the loss (this run's step 2) failed after at most "
            f"--dist-timeout {timeout} s") in r.stderr
    traceback = 'tools/train/train.py", line' in r.stderr
    when = r.seconds < timeout if how == "exit" else timeout <= r.seconds
    name = ("rank 1 leaving at step 2 (exit 0): rank 0 fails before --dist-timeout" if how == "exit" else
            f"rank 1 hanging at step 2: rank 0 fails after --dist-timeout {timeout} s")
    return (not r.timed_out and r.returncode not in (0, None) and said and not traceback and when and not r.left,
            f"{name}, non-zero, one line and no traceback, nothing left ({r.seconds:.0f} s)",
            f"exit {r.returncode}, message {said}, traceback {traceback}, {r.seconds:.0f} s; {r.why(1500)}")


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
        check(r1.returncode == 0 and not r1.left, "one process trains", r1.why())
        check(r2.returncode == 0 and not r2.left, "2 processes under torchrun (gloo) train", r2.why(800))
        if r1.returncode != 0 or r2.returncode != 0:
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
            stopped = first.returncode == 0 and not first.left and os.path.exists(os.path.join(out, "ckpt.pt")) and \
                not os.path.exists(os.path.join(out, "model.safetensors"))
            check(stopped, f"{procs} process(es): --stop-after 2 leaves a checkpoint and no model", first.why())
            second = train(out, procs, "--resume")
            ok = second.returncode == 0 and not second.left and "resumed from" in second.stderr \
                and close(losses(out), a)
            check(ok, f"{procs} process(es): --resume finishes with the uninterrupted run's losses",
                  second.why() + str(losses(out) if second.returncode == 0 else ""))
        with concurrent.futures.ThreadPoolExecutor(2) as pool:  # side by side: the hanging run mostly waits
            for result in list(pool.map(lambda how: fails_fast(tmp, how), ("exit", "hang"))):
                check(*result)
        left = ours(tmp)
        check(not left, "no process of this test outlives it", str(left))
    print(f"ddp_test: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
