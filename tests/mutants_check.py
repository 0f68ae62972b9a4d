"""tests/mutants_check.py — every line of tests/mutants.txt still applies: four fields (FILE, the text as
it is, the text it becomes, what the bug is) of which none but the last holds a '|', a tracked file, and
the text occurring exactly once in it, as tests/mutate.sh needs; a mutant that no longer applies is
skipped there and quietly stops guarding anything. Standard library only."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    passed = failed = 0
    with open(os.path.join(ROOT, "tests", "mutants.txt"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        if not line or line.startswith("#"):
            continue
        fields = line.split("|")
        why = ""
        if len(fields) != 4:
            why = f"{len(fields)} fields, not 4 (a '|' inside one)"
        else:
            path, old, new, _ = fields
            full = os.path.join(ROOT, path)
            if not os.path.isfile(full):
                why = f"no file {path}"
            elif old == new:
                why = "the mutant changes nothing"
            else:
                with open(full, encoding="utf-8") as src:
                    count = src.read().count(old)
                if count != 1:
                    why = f"its text occurs {count} times in {path}"
        if why:
            failed += 1
            print(f"FAIL mutants.txt line {n}: {why}: {line[:100]}")
        else:
            passed += 1
    print(f"mutants_check: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
