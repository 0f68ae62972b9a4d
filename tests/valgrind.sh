#!/bin/sh
# tests/valgrind.sh BINARY — one generate run, one eval and one error path under valgrind memcheck:
# zero errors and zero leaks (definite, indirect or possible) each.
BIN=${1:-./normlab}
passed=0 failed=0
check() {
    name=$1; shift
    log=$(mktemp)
    valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
        --show-leak-kinds=definite,indirect,possible "$@" >/dev/null 2>"$log"
    rc=$?
    if [ "$rc" -ne 99 ] && grep -q "ERROR SUMMARY: 0 errors" "$log" \
        && grep -q "All heap blocks were freed\|definitely lost: 0 bytes" "$log"; then
        passed=$((passed + 1)); echo "ok   valgrind: $name"
    else
        failed=$((failed + 1)); echo "FAIL valgrind: $name (rc=$rc)"; tail -20 "$log"
    fi
    rm -f "$log"
}
if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind: 0 passed, 1 failed (valgrind is not installed)"; exit 1
fi
check "generate" "$BIN" generate -m tests/fixtures/ln-pre-bias.json -p ab -n 30 --seed 1 --top-k 5 --top-p 0.9
check "eval --profile" "$BIN" eval -m tests/fixtures/rms-post-bias.json --text tests/fixtures/../data/held_out.txt \
    --skip-unknown --profile
check "error path: bad prompt" "$BIN" generate -m tests/fixtures/ln-pre-bias.json -p "abZ" -n 3
check "error path: malformed model" "$BIN" info -m tests/fuzz/corpus/config/ln-pre-bias.json
echo "valgrind: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
