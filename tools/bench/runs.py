"""What make bench's parts share (tools/bench/bench.py): the paths of the binaries it runs, one
child process run and timed, normlab's generate and eval rates as they print them, and the
summaries (median, min-max) every table shows, and the machine they ran on."""
import argparse
import ctypes
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import nltool  # tools/lib, on the path of every caller

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BIN = os.path.join(ROOT, "normlab")
BLASBENCH = os.path.join(ROOT, "build", "blasbench")
BLASLAYOUT = os.path.join(ROOT, "build", "blaslayout")
ATTNROWS = os.path.join(ROOT, "build", "attnrows")
PROMPT = "ROMEO:\n"
TEXT = open(os.path.join(ROOT, "tests", "data", "held_out.txt"), encoding="utf-8").read()


def run(cmd, env=None):
    """(stdout bytes, stderr text, wall seconds) of one child process, with `env` added to this
    process's environment (a value of None removes the variable); raises if it fails."""
    full = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed: {err.decode()[-300:]}")
    return out, err.decode(), wall


def peak_rss(cmd):
    """Peak RSS in bytes of one run of cmd, measured by GNU time (Debian package "time"): it forks
    the command from its own small process. A child forked or spawned from this Python process would
    have this process's pages (torch included) counted in its ru_maxrss, which Linux carries over exec."""
    p = subprocess.run(["/usr/bin/time", "-f", "maxrss_kib %M"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, check=True)
    return int(re.findall(r"maxrss_kib (\d+)", p.stderr)[-1]) * 1024


SHIFTS = re.compile(r"(\d+) context shifts?")
TIMING = re.compile(r"prefill (\d+) tokens? in ([0-9.]+) ms .*decode (\d+) tokens?(?: \(.*?\))? in ([0-9.]+) ms")


def normlab_generate(model, prompt, n, seed, threads, samples=1, warmup=False, env=None, extra=()):
    cmd = [BIN, "generate", "-m", model, "-p", prompt, "-n", str(n), "--seed", str(seed), "--threads", str(threads)]
    cmd += (["--warmup"] if warmup else []) + list(extra)
    if samples > 1:
        cmd += ["--samples", str(samples), "--json"]
    _, err, _ = run(cmd, env)
    m, shifts = TIMING.search(err), SHIFTS.search(err)
    pre_n, pre_ms, dec_n, dec_ms = int(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4))
    return {"first_token_s": pre_ms / 1e3, "prefill_tok_s": pre_n / (pre_ms / 1e3),
            "decode_tok_s": dec_n / (dec_ms / 1e3) if dec_ms > 0 else 0.0,  # dec_n counts every stream
            "context_shifts": int(shifts.group(1)) if shifts else 0}


def imported_model(path, maker, flags):
    """path (under build/), a model imported by tools/interop/import_hf.py from a random Hugging Face
    snapshot that tools/dev/MAKER writes with flags and that is removed afterwards; made once."""
    if os.path.exists(os.path.join(path, "config.json")):
        return path
    src = path + "-snapshot"
    shutil.rmtree(src, ignore_errors=True)
    run(["/usr/bin/python3", os.path.join(ROOT, "tools", "dev", maker), "--out", src, *flags])
    run(["/usr/bin/python3", os.path.join(ROOT, "tools", "interop", "import_hf.py"), os.path.join(src, "hf"),
         "--out", path])
    shutil.rmtree(src)
    return path


def normlab_eval_rate(model, path, threads, chars, env=None):
    _, _, wall = run([BIN, "eval", "-m", model, "--text", path, "--threads", str(threads), "--json"], env)
    return chars / wall


def validation_text(limit):
    """The first `limit` characters of the validation split (the last 10% of the corpus,
    tools/train/split.py) when the corpus is at ../shared/data, else the held-out test text repeated
    to that length."""
    corpus = os.path.join(ROOT, "..", "shared", "data", "tinyshakespeare.txt")
    if os.path.exists(corpus):
        text = open(corpus, encoding="utf-8").read()
        return text[int(0.9 * len(text)):][:limit]
    return (TEXT * (limit // len(TEXT) + 1))[:limit]


# ---- statistics

def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": len(values)}


def fmt(s, unit=""):
    return f"{s['median']:>10.1f}{unit} [{s['min']:.1f}-{s['max']:.1f}]"


# ---- the machine

def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def machine():
    """What every figure was measured on: the CPU as /proc/cpuinfo names it (with its family and model
    numbers, which tell AMD's generations apart where the name does not), the CPUs this process may
    use, the kernel, OpenBLAS as it describes itself, and the day (UTC)."""
    cpu = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            cpu.setdefault(key.strip(), value.strip())
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_config.restype = ctypes.c_char_p
        openblas = lib.openblas_get_config().decode()
    except (OSError, AttributeError):
        openblas = None
    return {"cpu_model": cpu.get("model name"), "cpu_family": cpu.get("cpu family"),
            "cpu_model_number": cpu.get("model"), "cpus": len(os.sched_getaffinity(0)), "arch": os.uname().machine,
            "kernel": os.uname().release, "openblas": openblas, "date": time.strftime("%Y-%m-%d", time.gmtime())}


# ---- a part of make bench run alone

def run_alone(name, doc, rows):
    """The command line of a part of make bench run by itself: `--repeats N` (at least 1, 5 by
    default), then rows(N, {}), with the tools' one-line errors."""
    def main(argv):
        ap = nltool.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
        ap.add_argument("--repeats", type=int, default=5)
        a = ap.parse_args(argv)
        if a.repeats < 1:
            ap.error("--repeats must be at least 1")
        rows(a.repeats, {})
    nltool.run(name, main, sys.argv[1:])
