#!/usr/bin/python3
"""Write the validation split of a corpus: its last 10% of characters (the split tools/train/train.py uses).

    /usr/bin/python3 tools/train/split.py ../shared/data/tinyshakespeare.txt /tmp/val.txt
"""
import sys


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: split.py CORPUS OUT  (writes the last 10% of CORPUS's characters to OUT)")
    with open(argv[0], encoding="utf-8") as f:
        text = f.read()
    n_train = int(0.9 * len(text))
    with open(argv[1], "w", encoding="utf-8") as f:
        f.write(text[n_train:])
    print(f"{argv[1]}: {len(text) - n_train} characters (corpus {len(text)}, train {n_train})", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
