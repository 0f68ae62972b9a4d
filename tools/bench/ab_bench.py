#!/usr/bin/python3
"""Two normlab binaries, paired and interleaved: wall time of the same invocations, A then B then B
then A, and so on, and the ratio B/A of their medians per model and task. For a change that must
not cost speed (issue 61's recipes: within 3% on decode, 16 streams and eval). The machine should
be otherwise idle: no training, no tests.

    /usr/bin/python3 tools/bench/ab_bench.py BIN_A BIN_B [--repeats 5] [--models a,b] [--gpt2-small]

Tasks per model: decode (one stream, -n N tokens), streams (--samples 16), eval (a text of the
corpus's first --eval-chars characters, or tests/data/held_out.txt when the corpus is absent).
--gpt2-small adds a random float32 model of GPT-2 small's shape (12 x 768, 50,257 tokens, context
1,024; written once to build/ab_bench/, 498 MB) with shorter runs.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import nltool  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CORPUS = os.path.join(ROOT, "..", "shared", "data", "tinyshakespeare.txt")
MODELS = ["shakespeare-pre-ln", "shakespeare-post-ln", "shakespeare-peri-ln", "shakespeare-llama"]


def tasks(model, text, small, decode_tokens):
    n, m = (max(1, decode_tokens // 8), 32) if small else (decode_tokens, 256)
    return {
        "decode": ["generate", "-m", model, "-p", "ROMEO:", "-n", str(n), "-s", "1", "--ignore-eos"],
        "streams16": ["generate", "-m", model, "-p", "ROMEO:", "-n", str(m // 2 if small else m), "--samples", "16",
                      "-s", "1", "--ignore-eos"],
        "eval": ["eval", "-m", model, "-f", text, "--json"],
    }


def wall(binary, args):
    t = time.perf_counter()
    subprocess.run([binary] + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def gpt2_small(folder):
    """A random GPT-2-small-shaped model (pre-LN, tied, biases) in folder, written once."""
    if os.path.isfile(os.path.join(folder, "model.safetensors")):
        return folder
    import numpy as np
    import nlformat
    cfg = {"vocab_size": 50257, "n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024, "mlp_ratio": 4,
           "norm": "layernorm", "placement": "pre", "norm_eps": 1e-5, "activation": "gelu", "bias": True,
           "tie_embeddings": True}
    rng = np.random.default_rng(124)
    tensors = {}
    for name, shape in nlformat.tensor_shapes(cfg).items():
        base = 1.0 if name.endswith(".weight") and (".ln_" in name or name.startswith("ln_f")) else 0.0
        tensors[name] = (base + 0.02 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
    vocab = ["\n", " "] + [chr(c) for c in range(33, 127)]
    vocab += [chr(0x10000 + i) for i in range(cfg["vocab_size"] - len(vocab))]
    nlformat.write_model_dir(folder, cfg, vocab, tensors, metadata={"source": "tools/bench/ab_bench.py"})
    return folder


def main(argv):
    p = nltool.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", metavar="BIN_A", help="the baseline normlab binary")
    p.add_argument("b", metavar="BIN_B", help="the changed normlab binary")
    p.add_argument("--repeats", type=int, default=5, help="pairs per task (default 5)")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated model names or paths")
    p.add_argument("--eval-chars", type=int, default=100000, help="characters of the corpus eval scores")
    p.add_argument("--gpt2-small", action="store_true", help="add a random model of GPT-2 small's shape")
    p.add_argument("--tasks", default="decode,streams16,eval", help="comma-separated: decode, streams16, eval")
    p.add_argument("--decode-tokens", type=int, default=512, help="tokens a decode run generates (GPT-2 small: 1/8)")
    a = p.parse_args(argv)
    for b in (a.a, a.b):
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            sys.exit(f"ab_bench.py: {b}: not an executable file")
    if not 1 <= a.repeats <= 100 or not 1000 <= a.eval_chars <= 1000000 or not 8 <= a.decode_tokens <= 65536:
        sys.exit("ab_bench.py: --repeats must be 1 to 100, --eval-chars 1000 to 1000000, --decode-tokens 8 to 65536")
    chosen = [t for t in a.tasks.split(",") if t]
    if not chosen or set(chosen) - {"decode", "streams16", "eval"}:
        sys.exit(f"ab_bench.py: --tasks takes decode, streams16 and eval, got {a.tasks!r}")
    os.makedirs(os.path.join(ROOT, "build", "ab_bench"), exist_ok=True)
    text = os.path.join(ROOT, "tests", "data", "held_out.txt")
    if os.path.isfile(CORPUS):
        with open(CORPUS, encoding="utf-8") as f:
            head = f.read(a.eval_chars)
        text = os.path.join(ROOT, "build", "ab_bench", "text.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.write(head)
    runs = [(m, False) for m in a.models.split(",") if m]
    if a.gpt2_small:
        runs.append((gpt2_small(os.path.join(ROOT, "build", "ab_bench", "gpt2-small")), True))
    print(f"{'model':<28} {'task':<10} {'A median s':>11} {'B median s':>11} {'B/A':>7}")
    for model, small in runs:
        small_text = os.path.join(ROOT, "tests", "data", "held_out.txt")
        for task, args in tasks(model, small_text if small else text, small, a.decode_tokens).items():
            if task not in chosen:
                continue
            try:
                wall(a.a, args)  # warm the page cache and both binaries' first touches
                wall(a.b, args)
                ta, tb = [], []
                for r in range(a.repeats):  # A B, then B A: neither always runs first
                    first, second = (a.a, a.b) if r % 2 == 0 else (a.b, a.a)
                    t1, t2 = wall(first, args), wall(second, args)
                    (ta, tb)[first == a.b].append(t1)
                    (ta, tb)[second == a.b].append(t2)
            except subprocess.CalledProcessError as e:
                sys.exit(f"ab_bench.py: {' '.join(e.cmd[:4])} ... failed (exit {e.returncode})")
            ma, mb = statistics.median(ta), statistics.median(tb)
            print(f"{os.path.basename(model):<28} {task:<10} {ma:11.4f} {mb:11.4f} {mb / ma:7.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
