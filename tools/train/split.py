#!/usr/bin/python3
"""Write the validation split of a corpus: its last 10% of characters (the split tools/train/train.py uses).

    /usr/bin/python3 tools/train/split.py ../shared/data/tinyshakespeare.txt /tmp/val.txt

OUT is written whole or not at all, and may not be the corpus itself.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nltool  # noqa: E402


def main(argv):
    if len(argv) != 2:
        print("usage: split.py CORPUS OUT  (writes the last 10% of CORPUS's characters to OUT)", file=sys.stderr)
        sys.exit(2)
    corpus, out = argv
    real = nltool.check_out(out, [corpus], want_dir=False)
    try:
        with open(corpus, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise nltool.ToolError(f"{corpus}: not UTF-8 text (byte {e.start})")
    n_train = int(0.9 * len(text))
    with nltool.writing(out):
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(real), prefix=".split-")
        os.chmod(tmp, nltool.new_file_mode())  # as open() would create it
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text[n_train:])
            os.replace(tmp, real)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    print(f"{out}: {len(text) - n_train} characters (corpus {len(text)}, train {n_train})", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("split.py", main, sys.argv[1:])
