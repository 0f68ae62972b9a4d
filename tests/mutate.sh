#!/bin/bash
# tests/mutate.sh [N | N-M] — mutation testing by hand (too slow for CI: a build and a test run each).
# For each line of tests/mutants.txt (or only the N-th, or the N-th to the M-th), copies the tracked
# tree to a scratch folder, applies the mutant (the text must occur exactly once), runs `make test-plain` there, and
# counts the mutant killed when that fails. Prints one line per mutant and the score. Reuses this
# checkout's plain build (build/rel), so that each mutant rebuilds only what it touches.
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
killed=0 total=0 i=0 sel=${1:-}
case "$sel" in ''|[0-9]*) ;; *) echo "usage: tests/mutate.sh [N | N-M]"; exit 2 ;; esac
# scratch: a copy of the tracked files and the plain build with their times kept, so that make
# rebuilds only what a mutant touches (run `make test-plain` here first)
scratch() {
    work=$(mktemp -d /tmp/normlab-mutant-XXXXXX)
    git ls-files -z | xargs -0 -I{} cp -p --parents {} "$work" 2>/dev/null
    mkdir -p "$work/build" && cp -a build/rel build/fault_shim.so "$work/build/" 2>/dev/null
    cp -p normlab "$work/" 2>/dev/null
}
scratch  # the unmutated copy must pass, or a "killed" mutant would mean nothing
if ! (cd "$work" && timeout 900 make -s test-plain > "$work.log" 2>&1); then
    echo "the unmutated copy fails its tests: $(grep -m1 -E '^FAIL|error:' "$work.log" | cut -c1-100)"
    exit 1
fi
rm -rf "$work" "$work.log"
while IFS='|' read -r file from to what; do
    case "$file" in ''|'#'*) continue ;; esac
    i=$((i + 1))
    [ -n "$sel" ] && { [ "$i" -lt "${sel%-*}" ] || [ "$i" -gt "${sel#*-}" ]; } && continue  # N or N-M
    total=$((total + 1))
    case "$what" in *'|'*) echo "SKIP $i: a field holds '|', the separator"; continue ;; esac
    scratch
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
    if (cd "$work" && NORMLAB_FAIL_FAST=1 timeout 900 make -s test-plain > "$work.log" 2>&1); then
        echo "LIVE $i $what"
    else
        killed=$((killed + 1))
        echo "dead $i $what ($(grep -m1 -E '^FAIL|error:' "$work.log" | cut -c1-100))"
    fi
    rm -rf "$work" "$work.log"
done < "$root/tests/mutants.txt"
echo "mutants: $killed killed of $total"
