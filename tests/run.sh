#!/bin/sh
# tests/run.sh VARIANT BUILD_DIR BINARY — runs every test program of one build variant (unit tests,
# fuzz corpus replays, CLI tests, and for the plain build valgrind) and prints one summary line.
# Each test program ends with "NAME: N passed, M failed"; a program that does not, or that exits
# non-zero with no failure counted, counts as one failure. Exits non-zero when anything failed.
# NORMLAB_FAIL_FAST=1 (tests/mutate.sh) stops at the first program with a failure.
variant=$1 build=$2 bin=$3
passed=0 failed=0 broken=""
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
export NORMLAB_BIN="$bin"  # test_loader runs each malformed model through the CLI too

# tally NAME COMMAND...: runs it, shows all but its "ok" lines, adds its counts.
tally() {
    name=$1; shift
    out=$("$@" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -v '^ok ' | grep -v '^     ' || true
    line=$(printf '%s\n' "$out" | tail -n 1)
    p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*$/\1/p')
    f=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*$/\2/p')
    if [ -z "$p" ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then
        broken="$broken $name(rc=$rc)"; failed=$((failed + 1))
    else
        passed=$((passed + p)); failed=$((failed + f))
    fi
    stop_if_failed "$name"
}
stop_if_failed() {
    [ "${NORMLAB_FAIL_FAST:-0}" = 1 ] && [ "$failed" -gt 0 ] || return 0
    echo "$variant: stopped at the first failure ($1)"
    exit 1
}

for t in "$build"/tests/test_*; do
    [ -x "$t" ] && tally "$(basename "$t")" "$t"
done
for r in "$build"/tests/replay_*; do
    [ -x "$r" ] || continue
    h=${r##*/replay_}
    if out=$("$r" tests/fuzz/corpus/"$h"/* $(ls tests/fuzz/crashes/"$h"-* 2>/dev/null) 2>&1); then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)); echo "FAIL fuzz corpus replay $h: $(printf '%s' "$out" | tail -5)"
    fi
    stop_if_failed "replay_$h"
done
tally cli_test tests/cli_test.sh "$bin"
tally options_test tests/options_test.sh "$bin"
tally symbols_test tests/symbols_test.sh "$build/libnormlab.a"
[ "$variant" = plain ] && [ -x /usr/bin/python3 ] && tally docs_test /usr/bin/python3 tools/dev/docs.py --check
[ "$variant" = plain ] && tally examples_test tests/examples_test.sh "$bin"  # the short $ examples of the docs
[ "$variant" = plain ] && tally links_test tests/links_test.sh
[ "$variant" = plain ] && [ -x /usr/bin/python3 ] && tally nanogpt_test /usr/bin/python3 tests/nanogpt_test.py "$bin"
[ "$variant" = plain ] && [ -x /usr/bin/python3 ] && tally export_test /usr/bin/python3 tests/export_test.py "$bin"
[ "$variant" = plain ] && [ -x /usr/bin/python3 ] && tally torchzip_test /usr/bin/python3 tests/torchzip_test.py
[ "$variant" = plain ] && [ -x /usr/bin/python3 ] && tally split_test /usr/bin/python3 tests/split_test.py
[ "$variant" = plain ] && [ -x /usr/bin/python3 ] \
    && tally tool_errors_test /usr/bin/python3 tests/tool_errors_test.py "$bin"
[ "$variant" = plain ] && [ -x /usr/bin/python3 ] && tally readers_test /usr/bin/python3 tests/readers_test.py "$bin"
[ "$variant" = plain ] && [ -x /usr/bin/python3 ] && tally ddp_test /usr/bin/python3 tests/ddp_test.py "$bin"
[ "$variant" = plain ] && [ -x /usr/bin/python3 ] \
    && tally rnn_reference_test /usr/bin/python3 tests/rnn_reference_test.py
tally safety_test tests/safety_test.sh "$bin"
# the shim is preloaded into the plain build only: AddressSanitizer must be the first library loaded
[ "$variant" = plain ] && tally layers_test tests/layers_test.sh
[ "$variant" = plain ] && tally fault_test tests/fault_test.sh "$bin" build/fault_shim.so
[ "$variant" = plain ] && tally rewrite_test tests/rewrite_test.sh "$bin"  # a long decode: too slow sanitized
[ "$variant" = plain ] && tally valgrind tests/valgrind.sh "$bin"  # valgrind cannot run the sanitizer build
[ -n "$broken" ] && echo "broken test programs:$broken"
echo "$variant: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
