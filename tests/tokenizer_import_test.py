#!/usr/bin/python3
"""A family's byte-level tokenizer.json end to end (docs/families.md, "Their tokenizers"): a random
Qwen3 snapshot of tools/dev/make_llama_snapshot.py given Qwen's tokenizer.json layout
(tools/dev/make_bpe_tokenizers.py: NFC, Qwen 2's Split pattern, added tokens past a vocabulary smaller
than vocab_size) imports through tools/interop/import_hf.py with the file as it is; the loader pads it
to vocab_size (info's tokenizer_padding); the logits are tools/reference/llama_reference.py's within
1e-4; the engine's ids are those the rules give (--special, NFC, one digit a piece, a non-special
added token) and, where tokenizers (npm) is installed, Hugging Face's own.

    /usr/bin/python3 tests/tokenizer_import_test.py [NORMLAB_BINARY]      (make test runs it)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, skip_unless, snapshot  # noqa: E402

skip_unless("tokenizer_import_test", "numpy")
for d in ("lib", "dev", "reference"):
    sys.path.insert(0, os.path.join(ROOT, "tools", d))
from gpt2bpe import byte_alphabet  # noqa: E402
from llama_import_test import HF, engine_logit_diff, run  # noqa: E402
from llama_parity import LOGIT_ATOL  # noqa: E402
import make_bpe_tokenizers  # noqa: E402
import make_llama_snapshot as mk  # noqa: E402

check = Checks("tokenizer_import_test")


def byte_level_tokenizer(tmp):
    """A Qwen3 snapshot with Qwen's byte-level tokenizer.json (NFC, its Split pattern, added tokens past
    285 tokens, vocab_size 320): imported as it is, padded by the loader with 30 tokens of no text, its
    logits the reference's, and its ids Hugging Face tokenizers' where that is installed (npm)."""
    folder = os.path.join(tmp, "qwen-bpe")
    mk.make(folder, seed=11, family="qwen3")
    hf, out, a = os.path.join(folder, "hf"), os.path.join(tmp, "qwen-bpe-out"), byte_alphabet()
    vocab, merges = {a[b]: b for b in range(256)}, []
    for left, right in [("t", "h"), ("th", "e"), ("\u0120", "th"), ("\u0120th", "e"), ("\u0120", "k"), ("i", "n"),
                        ("\u0120k", "in"), ("\u0120kin", "g"), ("o", "u"), ("\u0120th", "ou")]:
        vocab[left + right] = len(vocab)
        merges.append(f"{left} {right}")
    vocab.update({f"\u0120{w}": len(vocab) + i for i, w in enumerate("abcdefghijlmnopqrsu")})
    merges += [f"\u0120 {w}" for w in "abcdefghijlmnopqrsu"]
    base = {"model": {"type": "BPE", "vocab": vocab, "merges": merges}}
    with open(os.path.join(hf, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(make_bpe_tokenizers.family_tokenizer(base, "qwen2"), f)
    rc, err = run(HF, hf, "--out", out)
    info = subprocess.run([BIN, "info", "-m", out, "--json"], capture_output=True, text=True).stdout
    info = json.loads(info) if info.startswith("{") else {}
    check(rc == 0 and snapshot(os.path.join(out, "tokenizer.json")) == snapshot(os.path.join(hf, "tokenizer.json"))
          and (info.get("tokenizer_size"), info.get("tokenizer_padding")) == (320, 30) and
          engine_logit_diff(out, hf) <= LOGIT_ATOL, "Qwen's byte-level tokenizer.json (285 tokens + 5 added, "
          "vocab_size 320): imported as it is, loaded padded, logits within 1e-4 of the reference", err)
    text = os.path.join(tmp, "qwen-bpe.txt")
    open(text, "w", encoding="utf-8").write("<|im_start|>the king thou e\u0301 123 <think>Ab</think><|im_end|>\n")
    r = subprocess.run([BIN, "tokenize", "-m", out, "-f", text, "--special", "--json"], capture_output=True, text=True)
    ids = json.loads(r.stdout)["ids"] if r.returncode == 0 else []
    check(ids[:3] == [286, 257, 263] and ids[5:7] == [195, 169] and ids[8:11] == [49, 50, 51] and 288 in ids and
          ids[-2] == 287, "its ids: <|im_start|> 286 with --special, the merges (the, \u0120king), e + U+0301 "
          "composed (NFC), each digit alone, <think> 288", r.stderr.strip() or f"{ids}")
    if not shutil.which("node") or not os.path.isdir(os.path.join(ROOT, "build", "hf", "node_modules", "tokenizers")):
        return check.skip(1, ["tokenizers (npm)"], "the same ids as Hugging Face tokenizers")
    hf_ids = subprocess.run(["node", os.path.join(ROOT, "tools", "reference", "hf_bpe_reference.js"),
                             os.path.join(out, "tokenizer.json"), text], capture_output=True, text=True).stdout
    check(hf_ids.strip() and json.loads(hf_ids) == ids, "the same ids as Hugging Face tokenizers (--special)",
          hf_ids[:200])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        byte_level_tokenizer(tmp)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
