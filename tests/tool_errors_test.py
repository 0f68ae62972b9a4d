#!/usr/bin/python3
"""Every Python tool, given a bad input or flag, says so in one line and exits non-zero: never a
traceback, never a silent run that ignores what it was told. One case or more per tool; the
tools' own suites (nanogpt_test, export_test, split_test, ...) test their rules in depth.

    /usr/bin/python3 tests/tool_errors_test.py [NORMLAB_BINARY]      (make test runs it)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks  # noqa: E402
import needs  # noqa: E402  (tools/lib, on the path through tooltest)

os.environ["NORMLAB_BIN"] = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
check = Checks("tool_errors_test")
NONE = "/nonexistent/model"
SCRATCH = tempfile.mkdtemp(prefix="normlab-tool-errors-")  # outputs the cases name (none is written)
OUT = os.path.join(SCRATCH, "out")
TEXT = os.path.join(ROOT, "tests", "data", "held_out.txt")
CASES = [  # (tool, arguments, a word the line must hold)
    ("lab/plot_compare.py", [NONE, OUT], "No such file"),
    ("lab/plot_compare.py", [TEXT, OUT], "not compare --json output"),
    ("lab/rnn_report.py", [NONE, OUT], "no such file"),
    ("lab/depth_study.py", ["bogus"], "invalid choice"),
    ("interop/onnx_parity.py", ["--bogus"], "unknown option"),
    ("interop/onnx_parity.py", [NONE], "no such model"),
    ("interop/import_nanogpt.py", [NONE, "--out", OUT], "no such file"),
    ("interop/import_nanogpt.py", [os.path.join(ROOT, "tests"), "--out", OUT], "is a directory; give the checkpoint"),
    ("interop/export_onnx.py", [NONE, "--out", OUT + ".onnx"], "no such model"),
    ("interop/export_gguf.py", [NONE, "--out", OUT + ".gguf"], "not a model directory"),
    ("bench/overhead.py", ["-m", NONE], "no such model"),
    ("bench/overhead.py", ["--runs", "0"], "at least 1"),
    ("bench/family_bench.py", ["--repeats", "0"], "at least 1"),
    ("bench/bench.py", ["-m", os.path.join(ROOT, "weights", "shakespeare-lstm-ln")], "recurrent"),
    ("reference/reference.py", ["logits", "-m", NONE, "-p", "ab"], "no such model"),
    ("reference/parity.py", ["--bogus"], "unrecognized arguments"),
    ("train/train.py", ["--data", NONE, "--out", OUT], "No such file"),
    ("train/split.py", [NONE, OUT], "No such file"),
    ("train/train.py", ["--data", TEXT, "--out", OUT, "--bogus"], "unrecognized arguments"),
    ("bench/bench.py", ["--bogus"], "unrecognized arguments"),
    ("bench/ab_bench.py", [NONE, NONE], "not an executable file"),
    ("bench/ab_bench.py", [os.path.join(ROOT, "normlab"), os.path.join(ROOT, "normlab"), "--tasks", "x"], "--tasks"),
    ("dev/make_fixtures.py", ["--bogus"], "takes no arguments"),
    ("dev/make_fuzz_seeds.py", ["--bogus"], "takes no arguments"),
    ("dev/fit_erf.py", ["--bogus"], "takes no arguments"),
    ("dev/docs.py", ["--bogus"], "usage"),
    ("dev/unicode_tables.py", ["--bogus"], "usage"),
    ("dev/make_bpe_tokenizers.py", [NONE, "--out", OUT], "No such file"),
    ("dev/make_bpe_tokenizers.py", [TEXT, "--out", OUT], TEXT),
    ("interop/gpt2_vocab.py", [NONE, "--out", OUT], "No such file"),
    ("interop/gpt2_vocab.py", [TEXT, "--out", OUT], 'is not "BASE64 RANK"'),
    ("interop/import_hf_gpt2.py", [NONE, "--out", OUT], "not a folder"),
    ("interop/import_hf_gpt2.py", [os.path.join(ROOT, "tests"), "--out", OUT], "config.json"),
    ("reference/hf_gpt2_parity.py", ["--bogus"], "unrecognized arguments"),
    ("train/train.py", ["--data", TEXT, "--out", OUT, "--tokenizer", NONE], "--tokenizer"),
    ("train/train.py", ["--data", TEXT, "--out", OUT, "--arch", "llama", "--n-kv-head", "3"], "does not divide"),
    ("train/train.py", ["--data", TEXT, "--out", OUT, "--norm", "dyt", "--dyt-alpha", "0.8,0.2"], "one or three"),
    ("train/train.py", ["--data", TEXT, "--out", OUT, "--dyt-alpha", "0.5"], "is for --norm dyt"),
    ("train/train.py", ["--data", TEXT, "--out", OUT, "--placement", "mix", "--mix-post-layers", "5"], "0 to"),
    ("train/train.py", ["--data", TEXT, "--out", OUT, "--mix-post-layers", "1"], "with --placement mix"),
    ("train/train.py", ["--data", TEXT, "--out", OUT, "--arch", "llama", "--placement", "sub"], "--placement"),
    ("lib/gpt2bpe.py", [NONE, TEXT], "No such file"),
    ("interop/import_hf.py", [NONE, "--out", OUT], "not a folder"),
    ("interop/import_hf.py", [os.path.join(ROOT, "tests"), "--out", OUT], "config.json"),
    ("interop/import_hf.py", [os.path.join(ROOT, "tests"), "--out", OUT, "--ctx", "0"], "--ctx: '0' is not a number"),
    ("interop/import_hf.py", [os.path.join(ROOT, "tests"), "--out", OUT, "--dtype", "q8_0"], "invalid choice"),
    ("interop/import_llama2c.py", [NONE, "--out", OUT], "no such file"),
    ("interop/import_llama2c.py", [os.path.join(ROOT, "tests"), "--out", OUT], "is a directory"),
    ("interop/import_llama2c.py", [TEXT, "--out", OUT], "--tokenizer"),
    ("reference/llama_reference.py", [NONE, "--ids", "1"], "not a folder"),
    ("reference/llama_reference.py", [NONE, "--ids", "x"], "not comma-separated"),
    ("reference/llama_parity.py", ["--bogus"], "unrecognized arguments"),
    ("dev/make_llama_snapshot.py", ["--out", OUT, "--vocab", "5"], "--vocab 5"),
    ("dev/make_llama_snapshot.py", ["--out", OUT, "--heads", "4", "--kv-heads", "3"], "--kv-heads 3 does not divide"),
    ("dev/make_llama_snapshot.py", ["--out", OUT, "--heads", "64"], "head width 1 is not even"),
    ("dev/make_llama_snapshot.py", ["--out", OUT, "--heads", "5", "--kv-heads", "5"],
     "--heads 5 does not divide --dim 64"),
    ("dev/make_parallel_snapshot.py", ["--out", OUT, "--family", "phi", "--rotary", "0.01"], "turns 0 dims"),
    ("dev/make_parallel_snapshot.py", ["--out", OUT, "--family", "phi", "--sequential"], "--sequential is GPT-NeoX's"),
    ("reference/parallel_reference.py", [OUT, "--ids", "1,x"], "not comma-separated integers"),
    ("reference/gptj_reference.py", [OUT, "--ids", "1,x"], "not comma-separated integers"),
    ("reference/gptj_reference.py", [os.path.join(ROOT, "weights", "shakespeare-bpe"), "--ids", "1"],
     "model_type None: this reference runs gptj"),
]


def declared_needs(tool, top_only):
    """The modules tool asks needs.packages for: at its top (before any argument is read), or anywhere."""
    src = open(os.path.join(ROOT, "tools", tool)).read()
    calls = re.findall(r"^needs\.packages\((.*)\)$" if top_only else r"needs\.packages\((.*)\)$", src, re.M)
    return [m for call in calls for m in re.findall(r'"(\w+)"', call)]


def run(tool, args, env=None):
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", tool), *args], capture_output=True,
                       text=True, timeout=300, env=env)
    return r.returncode, r.stderr.strip()
RUN_TO_NEEDS = {"lab/depth_study.py": ["plot"]}  # arguments that reach a need asked for below the top


def main():
    for tool, args, word in CASES:
        absent = needs.missing(*declared_needs(tool, top_only=True))
        rc, err = run(tool, args)
        want = f"{', '.join(absent)}, which is not installed: run {needs.INSTALL}" if absent else word
        check(rc != 0 and err.count("\n") == 0 and want in err and "Traceback" not in err and (rc == 1 or not absent),
              f"{tool} {' '.join(a.replace(ROOT + '/', '') for a in args)}: one line, exit {rc}"
              + (f" ({', '.join(absent)} missing)" if absent else ""), f"exit {rc}, stderr: {err[-400:]}")
    hidden_packages()
    check(os.listdir(SCRATCH) == [], "no case wrote an output", str(os.listdir(SCRATCH)))
    shutil.rmtree(SCRATCH)
    return check.summary()


def hidden_packages():
    """Each tool that needs a package, run where that package cannot be imported (a folder on
    PYTHONPATH whose module of that name raises ImportError), says which Debian package to install
    and how, in one line, exit 1: on every machine, not only on one without the packages."""
    with tempfile.TemporaryDirectory() as stubs:
        for module in needs.DEBIAN:
            os.makedirs(os.path.join(stubs, module))
            with open(os.path.join(stubs, module, "__init__.py"), "w") as f:
                f.write("raise ImportError('hidden by tool_errors_test')\n")
        env = {**os.environ, "PYTHONPATH": stubs}
        tools = sorted({tool for tool, _, _ in CASES})
        for tool in tools:
            modules = declared_needs(tool, top_only=False)
            if not modules:
                continue
            rc, err = run(tool, RUN_TO_NEEDS.get(tool, []), env)
            named = all(needs.DEBIAN[m] in err for m in modules)
            check(rc == 1 and err.count("\n") == 0 and named and needs.INSTALL in err and "Traceback" not in err,
                  f"{tool} without {', '.join(needs.DEBIAN[m] for m in modules)}: one line naming them, exit 1",
                  f"exit {rc}, stderr: {err[-400:]}")


if __name__ == "__main__":
    sys.exit(main())
