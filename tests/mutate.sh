#!/bin/bash
# tests/mutate.sh [N] — mutation testing by hand (too slow for CI: a build and a test run each).
# For each line of tests/mutants.txt (or only the N-th), copies the tracked tree to a scratch
# folder, applies the mutant (the text must occur exactly once), runs `make test-plain` there, and
# counts the mutant killed when that fails. Prints one line per mutant and the score.
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
killed=0 total=0 i=0
while IFS='|' read -r file from to what; do
    case "$file" in ''|'#'*) continue ;; esac
    i=$((i + 1))
    [ -n "${1:-}" ] && [ "$1" != "$i" ] && continue
    total=$((total + 1))
    work=$(mktemp -d /tmp/normlab-mutant-XXXXXX)
    git ls-files -z | xargs -0 -I{} cp --parents {} "$work" 2>/dev/null
    if ! /usr/bin/python3 - "$work/$file" "$from" "$to" <<'PY'
import sys
path, old, new = sys.argv[1:4]
s = open(path).read()
if s.count(old) != 1:
    sys.exit(f"the text occurs {s.count(old)} times in {path}")
open(path, "w").write(s.replace(old, new))
PY
    then
        echo "SKIP $i $what: mutant does not apply"; rm -rf "$work"; continue
    fi
    if (cd "$work" && timeout 900 make -s test-plain > "$work.log" 2>&1); then
        echo "LIVE $i $what"
    else
        killed=$((killed + 1))
        echo "dead $i $what ($(grep -m1 -E '^FAIL|error:' "$work.log" | cut -c1-100))"
    fi
    rm -rf "$work" "$work.log"
done < "$root/tests/mutants.txt"
echo "mutants: $killed killed of $total"
