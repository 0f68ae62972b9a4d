#!/bin/sh
# tests/run.sh VARIANT BUILD_DIR BINARY — runs every test program of one build variant (unit tests,
# fuzz corpus replays, CLI tests, and for the plain build valgrind) and prints one summary line.
# Each test program ends with "NAME: N passed, M failed"; a program that does not, or that exits
# non-zero with no failure counted, counts as one failure. Exits non-zero when anything failed.
# NORMLAB_FAIL_FAST=1 (tests/mutate.sh) stops at the first program with a failure.
variant=$1 build=$2 bin=$3
passed=0 failed=0 skipped=0 absent="" broken=""
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
export NORMLAB_BIN="$bin"  # test_loader runs each malformed model through the CLI too

# tally NAME COMMAND...: runs it, shows all but its "ok" lines, adds its counts. Its closing line is
# "NAME: N passed, M failed", with ", K skipped (PACKAGES missing: ...)" where it could not run some
# checks. A program that checks nothing without counting a skip, or prints a Python traceback, is broken.
tally() {
    name=$1; shift
    out=$("$@" 2>&1 < /dev/null); rc=$?  # (no test reads the runner's stdin: generate would take it as a prompt)
    printf '%s\n' "$out" | grep -v '^ok ' | grep -v '^     ' || true
    line=$(printf '%s\n' "$out" | tail -n 1)
    p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*$/\1/p')
    f=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*$/\2/p')
    s=$(printf '%s' "$line" | sed -n 's/.* failed, \([0-9]*\) skipped.*$/\1/p')
    if [ -z "$p" ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; } || [ "$p$f${s:-0}" = 000 ] \
        || printf '%s' "$out" | grep -q '^Traceback (most recent call last)'; then
        broken="$broken $name(rc=$rc)"; failed=$((failed + 1))
    else
        passed=$((passed + p)); failed=$((failed + f)); note_skips "${s:-0}" "$line"
    fi
    stop_if_failed "$name"
}
# note_skips COUNT LINE: adds COUNT skipped checks and the packages LINE names as missing.
note_skips() {
    [ "$1" -gt 0 ] || return 0
    skipped=$((skipped + $1))
    pkgs=$(printf '%s' "$2" | sed -n 's/.* skipped (\(.*\) missing.*/\1/p' | sed 's/, /\n/g')
    while IFS= read -r pkg; do
        [ -n "$pkg" ] || continue
        case ", $absent, " in *", $pkg, "*) ;; *) absent="${absent:+$absent, }$pkg" ;; esac
    done <<EOF
$pkgs
EOF
}
# py_tally NAME ARGS...: a Python suite, run by Debian's /usr/bin/python3; skipped without it.
py_tally() {
    name=$1; shift
    if [ -x /usr/bin/python3 ]; then tally "$name" /usr/bin/python3 "$@"
    else echo "skip $name: python3 missing"; note_skips 1 "x skipped (python3 missing)"; fi
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
tally bpe_test tests/bpe_test.sh "$build/tests/bpe_ids"  # GPT-2's BPE against gpt-tokenizer
tally spm_test tests/spm_test.sh "$build/tests/spm_ids" "$bin"  # sentencepiece against sentencepiece, tokenizers
tally cli_test tests/cli_test.sh "$bin"
tally options_test tests/options_test.sh "$bin"
tally symbols_test tests/symbols_test.sh "$build/libnormlab.a"
[ "$variant" = plain ] && py_tally docs_test tools/dev/docs.py --check
[ "$variant" = plain ] && tally examples_test tests/examples_test.sh "$bin"  # the short $ examples of the docs
[ "$variant" = plain ] && tally links_test tests/links_test.sh
[ "$variant" = plain ] && py_tally nanogpt_test tests/nanogpt_test.py "$bin"
[ "$variant" = plain ] && py_tally hf_gpt2_test tests/hf_gpt2_test.py "$bin"
[ "$variant" = plain ] && py_tally llama_import_test tests/llama_import_test.py "$bin"
[ "$variant" = plain ] && py_tally parallel_import_test tests/parallel_import_test.py "$bin"
[ "$variant" = plain ] && py_tally tokenizer_import_test tests/tokenizer_import_test.py "$bin"
[ "$variant" = plain ] && py_tally family_commands_test tests/family_commands_test.py "$bin"
[ "$variant" = plain ] && py_tally gguf_test tests/gguf_test.py "$bin"
[ "$variant" = plain ] && py_tally export_gguf_test tests/export_gguf_test.py "$bin"
[ "$variant" = plain ] && py_tally llama_shift_test tests/llama_shift_test.py "$bin"
[ "$variant" = plain ] && py_tally llama_train_test tests/llama_train_test.py "$bin"
[ "$variant" = plain ] && py_tally export_test tests/export_test.py "$bin"
[ "$variant" = plain ] && py_tally quant_test tests/quant_test.py "$bin"  # normlab quantize against numpy's ggml rules
[ "$variant" = plain ] && py_tally patch_test tests/patch_test.py "$bin"  # normlab patch against a float64 reference
[ "$variant" = plain ] && py_tally lens_attention_test tests/lens_attention_test.py "$bin"  # the lab against float64
[ "$variant" = plain ] && py_tally fold_test tests/fold_test.py "$bin"  # normlab fold measured in float64
[ "$variant" = plain ] && py_tally torchzip_test tests/torchzip_test.py
[ "$variant" = plain ] && py_tally split_test tests/split_test.py
[ "$variant" = plain ] && py_tally tool_errors_test tests/tool_errors_test.py "$bin"
# both builds under rewrites: 10,000 reads, 2,000 sanitized (a sanitized read takes 5x as long: 80 ms)
reads=10000; [ "$variant" = sanitizers ] && reads=2000
py_tally readers_test tests/readers_test.py "$bin" --reads "$reads"
[ "$variant" = plain ] && py_tally ddp_test tests/ddp_test.py "$bin"
[ "$variant" = plain ] && py_tally rnn_reference_test tests/rnn_reference_test.py
tally safety_test tests/safety_test.sh "$bin"
# the shim is preloaded into the plain build only: AddressSanitizer must be the first library loaded
[ "$variant" = plain ] && tally layers_test tests/layers_test.sh
[ "$variant" = plain ] && tally layout_test tests/layout_test.sh  # docs/layout.md names every file
[ "$variant" = plain ] && py_tally mutants_check tests/mutants_check.py  # every mutant of mutants.txt still applies
[ "$variant" = plain ] && tally fault_test tests/fault_test.sh "$bin" build/fault_shim.so
[ "$variant" = plain ] && tally rewrite_test tests/rewrite_test.sh "$bin"  # a long decode: too slow sanitized
[ "$variant" = plain ] && tally valgrind tests/valgrind.sh "$bin"  # valgrind cannot run the sanitizer build
[ -n "$broken" ] && echo "broken test programs:$broken"
summary="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && summary="$summary, $skipped skipped ($absent missing: tools/install-deps.sh --python)"
echo "$variant: $summary"
tests/total.sh --record "$variant" "$passed" "$failed" "$skipped" "$absent"  # for make test's last line
[ "$failed" -eq 0 ]
