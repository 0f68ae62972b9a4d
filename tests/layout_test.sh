#!/bin/sh
# tests/layout_test.sh — docs/layout.md names every file of engine/, tokenizer/ and tools/ (a header
# counts as named where the .c of its module is), so that the page cannot fall behind the tree.
cd "$(dirname "$0")/.." || exit 1
passed=0 failed=0 missing=""
files=$(git ls-files engine tokenizer tools 2>/dev/null || find engine tokenizer tools -type f)
for f in $files; do
    b=$(basename "$f")
    case $b in *.h) pair=${b%.h}.c ;; *) pair=$b ;; esac
    if grep -qF "$b" docs/layout.md || { [ -f "$(dirname "$f")/$pair" ] && grep -qF "$pair" docs/layout.md; }; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)); missing="$missing $f"
    fi
done
[ -n "$missing" ] && echo "FAIL docs/layout.md does not name:$missing"
[ "$passed" -ge 60 ] || { echo "FAIL only $passed files found"; failed=$((failed + 1)); }
echo "layout_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
