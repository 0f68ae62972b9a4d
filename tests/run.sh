#!/bin/sh
# tests/run.sh VARIANT BUILD_DIR BINARY — runs every unit test binary and the CLI tests of one build
# variant and prints one summary line. Exits non-zero when anything failed.
variant=$1 build=$2 bin=$3
passed=0 failed=0 broken=""
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
export NORMLAB_BIN="$bin"  # test_loader runs each malformed model through the CLI too
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    out=$("$t" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -v '^ok ' | grep -v '^     ' || true
    line=$(printf '%s\n' "$out" | tail -n 1)
    p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    if [ -z "$p" ]; then broken="$broken $(basename "$t")(rc=$rc)"; failed=$((failed + 1)); continue; fi
    passed=$((passed + p)); failed=$((failed + f))
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && { broken="$broken $(basename "$t")(rc=$rc)"; failed=$((failed + 1)); }
done
for r in "$build"/tests/replay_*; do
    [ -x "$r" ] || continue
    h=${r##*/replay_}
    if out=$("$r" tests/fuzz/corpus/"$h"/* $(ls tests/fuzz/crashes/"$h"-* 2>/dev/null) 2>&1); then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)); echo "FAIL fuzz corpus replay $h: $(printf '%s' "$out" | tail -5)"
    fi
done
out=$(tests/cli_test.sh "$bin" 2>&1); rc=$?
printf '%s\n' "$out" | grep -v '^ok ' || true
line=$(printf '%s\n' "$out" | tail -n 1)
p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
f=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
if [ -z "$p" ]; then broken="$broken cli_test(rc=$rc)"; failed=$((failed + 1)); else passed=$((passed + p)); failed=$((failed + f)); fi
if [ "$variant" = plain ]; then  # valgrind cannot run the sanitizer build
    out=$(tests/valgrind.sh "$bin" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -v '^ok ' || true
    line=$(printf '%s\n' "$out" | tail -n 1)
    p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*$/\1/p')
    f=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*$/\2/p')
    if [ -z "$p" ]; then broken="$broken valgrind(rc=$rc)"; failed=$((failed + 1)); else passed=$((passed + p)); failed=$((failed + f)); fi
fi
[ -n "$broken" ] && echo "broken test programs:$broken"
echo "$variant: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
