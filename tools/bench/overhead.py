#!/usr/bin/python3
"""Cost of profiling: `normlab generate` with and without --profile, same seed, interleaved runs.
Prints the median generation time of each (prefill + decode as normlab reports them, so process
start and model load are left out), their ratio, and whether the generated text is byte-identical.

    /usr/bin/python3 tools/bench/overhead.py [-m MODEL] [-n 256] [--runs 15] [--threads 1]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import nltool  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def run(cmd):
    """(seconds of prefill + decode as normlab reports them on stderr, stdout bytes)."""
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        raise nltool.ToolError(p.stderr.decode("utf-8", "replace").strip()[-300:])
    m = re.search(rb"prefill \d+ tokens in ([0-9.]+) ms .* decode \d+ tokens in ([0-9.]+) ms", p.stderr)
    return (float(m.group(1)) + float(m.group(2))) / 1e3, p.stdout


def main(argv):
    ap = nltool.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=os.path.join(ROOT, "weights", "shakespeare-pre-ln"))
    ap.add_argument("-n", type=int, default=256)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cpu", type=int, help="pin both to this CPU (taskset), so both see the same core")
    a = ap.parse_args(argv)
    if a.n < 1 or a.runs < 1 or a.threads < 1:
        ap.error("-n, --runs and --threads must be at least 1")
    nltool.check_model(a.model)
    pin = ["taskset", "-c", str(a.cpu)] if a.cpu is not None else []
    base = pin + [os.path.join(ROOT, "normlab"), "generate", "-m", a.model, "-p", "ROMEO:", "-n", str(a.n),
                  "--seed", "7", "--threads", str(a.threads)]
    plain, profiled, same = [], [], True
    run(base)  # warm the page cache
    for _ in range(a.runs):
        t, out_plain = run(base)
        plain.append(t)
        t, out_prof = run(base + ["--profile"])
        profiled.append(t)
        same &= out_plain == out_prof
    mp, mq = statistics.median(plain), statistics.median(profiled)
    print(f"generate -n {a.n}, {a.runs} interleaved runs each, threads {a.threads}"
          + (f", pinned to CPU {a.cpu}" if a.cpu is not None else ""))
    print(f"  without --profile: median {1e3 * mp:.2f} ms (min {1e3 * min(plain):.2f}, max {1e3 * max(plain):.2f})")
    print(f"  with --profile:    median {1e3 * mq:.2f} ms "
          f"(min {1e3 * min(profiled):.2f}, max {1e3 * max(profiled):.2f})")
    print(f"  ratio {mq / mp:.3f} ({100 * (mq / mp - 1):+.1f}%); generated text byte-identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    nltool.run("overhead.py", lambda argv: sys.exit(main(argv)), sys.argv[1:])
