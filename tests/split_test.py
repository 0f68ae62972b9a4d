#!/usr/bin/python3
"""tools/train/split.py: the validation split is the last 10% of the corpus's characters (as train.py
cuts it), written whole or not at all; a bad corpus or OUT is one line and exit 1, the corpus never
changes.

    /usr/bin/python3 tests/split_test.py      (make test runs it)
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks, snapshot  # noqa: E402

SPLIT = os.path.join(ROOT, "tools", "train", "split.py")
check = Checks("split_test")


def split(*args):
    return subprocess.run(["/usr/bin/python3", SPLIT, *args], capture_output=True, text=True)


def refused(label, r, words):
    line = r.stderr.strip()
    check(r.returncode == 1 and "\n" not in line and all(w in line for w in words), label,
          f"exit {r.returncode}: {r.stderr[-300:]}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        text = "".join(chr(0x61 + i % 26) for i in range(95)) + "é" * 5  # 100 characters, 105 bytes
        open(corpus, "w", encoding="utf-8").write(text)
        before = snapshot(tmp)
        out = os.path.join(tmp, "val.txt")
        r = split(corpus, out)
        got = open(out, encoding="utf-8").read() if os.path.exists(out) else None
        check(r.returncode == 0 and got == text[90:], "the split is the last 10% of the characters (not bytes)",
              f"exit {r.returncode}: {got!r} {r.stderr}")
        check(os.stat(out).st_mode & 0o777 == 0o666 & ~current_umask(), "OUT gets the mode open() would give it")
        os.unlink(out)
        refused("a missing corpus", split(os.path.join(tmp, "none.txt"), out), ["none.txt", "No such file"])
        refused("OUT is the corpus", split(corpus, corpus), ["it is the input"])
        refused("OUT is a directory", split(corpus, tmp), ["is a directory"])
        refused("OUT in a missing directory", split(corpus, os.path.join(tmp, "no", "v.txt")), ["no directory"])
        binary = os.path.join(tmp, "bin.dat")
        open(binary, "wb").write(b"ab\xff\xfecd")
        refused("a corpus that is not UTF-8", split(binary, out), ["not UTF-8", "byte 2"])
        os.unlink(binary)
        check(snapshot(tmp) == before, "the corpus is unchanged and no partial or temporary file is left")
        r = split(corpus)
        check(r.returncode == 2 and r.stderr.startswith("usage: split.py"), "a missing OUT is a usage error, exit 2")
    return check.summary()


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


if __name__ == "__main__":
    sys.exit(main())
