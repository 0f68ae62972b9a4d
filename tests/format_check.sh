#!/bin/sh
# tests/format_check.sh — checks, never rewrites: every tracked C file is as clang-format
# (.clang-format) would leave it, no tracked source line (C, shell, Python, Makefile) is over
# 120 characters, and no file is over the house's size for one job: 600 lines for a source of the
# engine, the tokenizer, the public headers and the tools (the generated tokenizer/unicode_tables.c
# aside), 700 for a test. One check per file; prints the files that fail and
# "format_check: N passed, M failed".
# To fix: clang-format -i FILE (C), or wrap the line by hand.
cd "$(dirname "$0")/.." || exit 1
if ! command -v clang-format >/dev/null 2>&1; then
    echo "format_check: clang-format not found (tools/install-deps.sh installs it)"; exit 1
fi
# sources PATTERN...: the tracked files matching; outside a git checkout, the same files found on disk.
sources() {
    if command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1; then git ls-files "$@"; else
        for p in "$@"; do
            find . -path ./build -prune -o -path "./$p" -type f -print -o -name "$p" -type f -print
        done | sed 's|^\./||' | sort -u
    fi
}
passed=0 failed=0
for f in $(sources '*.c' '*.h'); do
    if clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL $f: not as clang-format leaves it (clang-format -i $f)"
    fi
done
for f in $(sources '*.c' '*.h' '*.sh' '*.py' Makefile .ci/run); do
    # characters, not bytes: UTF-8 continuation bytes (0x80-0xBF) are not counted
    long=$(LC_ALL=C awk '{ s = $0; gsub(/[\200-\277]/, "", s) }
        length(s) > 120 { printf "%d (%d characters) ", FNR, length(s) }' "$f")
    if [ -z "$long" ]; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL $f: lines over 120 characters:" $long
    fi
done
# too_long LIMIT FILE...: each file over LIMIT lines fails (split it by job)
too_long() {
    limit=$1
    shift
    for f in "$@"; do
        n=$(wc -l < "$f")
        if [ "$n" -le "$limit" ]; then passed=$((passed + 1)); else
            failed=$((failed + 1)); echo "FAIL $f: $n lines, over $limit (split it by job)"
        fi
    done
}
too_long 600 $(sources 'engine/*.c' 'engine/*.h' 'tokenizer/*.c' 'tokenizer/*.h' 'include/*.h' 'tools/*.py' \
    'tools/*.c' 'tools/*.js' | grep -v '^tokenizer/unicode_tables\.c$')
too_long 700 $(sources 'tests/*.c' 'tests/*.h' 'tests/*.py' 'tests/*.sh')
echo "format_check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
