#!/bin/sh
# tests/fault_test.sh BINARY SHIM — outputs under injected faults (SQLite's way: one at a time).
# For each output-writing command, the shim (tests/fault/shim.c, LD_PRELOAD) fails the Nth write,
# close, rename, fsync or open of its outputs, for every N up to the count of an unfaulted run, with
# ENOSPC (odd N) or EIO (even N). Each faulted run must exit non-zero; leave every output either as it
# was before or whole and new (byte-identical to the unfaulted run's where the output is
# deterministic, else a complete JSON document or CSV of the same lines), all old or all new, never a
# mix; leave no temporary file; and
# print nothing on stdout (the table of profile --trace comes only after its trace is in place).
abs() { (cd "$(dirname "$1")" && printf '%s/%s' "$(pwd)" "$(basename "$1")"); }
bin=$(abs "$1") shim=$(abs "$2")
FIX=$(pwd)/tests/fixtures M=$(pwd)/tests/fixtures/ln-pre-bias.json
passed=0 failed=0
. "$(dirname "$0")/skips.sh"
TMP=$(mktemp -d /tmp/normlab-fault-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
printf 'ab ba ab\nba ab ba ab ab ba\n' > "$TMP/text.txt"

ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }

# whole KIND FILE REFERENCE: FILE is complete: the reference's bytes (exact), valid JSON (json), or
# the reference's line count (csv).
whole() {
    case $1 in
        exact) cmp -s "$2" "$3" ;;
        json) /usr/bin/python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$2" 2>/dev/null ;;
        csv) [ "$(wc -l < "$2")" -eq "$(wc -l < "$3")" ] && [ "$(tail -c 1 "$2" | od -An -c | tr -d ' ')" = '\n' ] ;;
    esac
}

# run_case NAME "FILE:KIND ..." COMMAND... — the command's file outputs (F, G) and how each is judged.
run_case() {
    name=$1 kinds=$2; shift 2
    D="$TMP/$name"; mkdir -p "$D/ref"
    (cd "$D/ref" && "$bin" "$@" > stdout 2> stderr) || { bad "$name: unfaulted run" "$(cat "$D/ref/stderr")"; return; }
    [ "$name" != profile-table ] || [ -s "$D/ref/stdout" ] || bad "$name: unfaulted run" "no table on stdout"
    (cd "$D/ref" && FAULT_COUNT="$D/counts" LD_PRELOAD="$shim" "$bin" "$@" > /dev/null 2>&1)
    n_files=$(echo $kinds | wc -w) synced=$(sed -n 's/^fsync //p' "$D/counts")
    dirs=$(sed -n 's/^fsync_dir //p' "$D/counts")
    [ "$dirs" -ge "$n_files" ] && [ $((synced - dirs)) -ge "$n_files" ] \
        && ok "$name: $((synced - dirs)) file and $dirs directory fsyncs for $n_files file(s)" \
        || bad "$name: fsync" "$synced fsync calls, $dirs of directories, for $n_files output file(s)"
    for call in write close rename fsync open; do
        count=$(sed -n "s/^$call //p" "$D/counts")
        n=1
        while [ "$n" -le "$count" ]; do
            one_fault "$name" "$kinds" "$call" "$n" "$@"
            n=$((n + 1))
        done
    done
}

one_fault() {
    name=$1 kinds=$2 call=$3 n=$4; shift 4
    W="$D/run"; rm -rf "$W"; mkdir "$W"
    printf 'old F\n' > "$W/F"; printf 'old G\n' > "$W/G"
    errno=ENOSPC; [ $((n % 2)) -eq 0 ] && errno=EIO
    (cd "$W" && FAULT_CALL=$call FAULT_N=$n FAULT_ERRNO=$errno LD_PRELOAD="$shim" "$bin" "$@" \
        > "$D/stdout" 2> "$D/stderr")
    rc=$?
    label="$name: $call #$n fails ($errno)"
    [ "$rc" -ne 0 ] || { bad "$label" "exit 0"; return; }
    [ "$(wc -l < "$D/stderr")" -ge 1 ] && [ ! -s "$D/stdout" ] \
        || { bad "$label" "stdout not empty or no message"; return; }
    olds=0 news=0
    for output in $kinds; do
        f=${output%%:*} kind=${output#*:}
        if [ "$(cat "$W/$f" 2>/dev/null)" = "old $f" ]; then olds=$((olds + 1)); continue; fi
        whole "$kind" "$W/$f" "$D/ref/$f" \
            || { bad "$label" "$f is neither old nor whole: $(head -c 100 "$W/$f")"; return; }
        news=$((news + 1))
    done
    [ "$olds" -eq 0 ] || [ "$news" -eq 0 ] || { bad "$label" "$news output(s) new beside $olds old: a mix"; return; }
    left=$(ls -A "$W" | grep -v '^[FG]$')
    [ -z "$left" ] || { bad "$label" "left behind: $left"; return; }
    ok "$label: exit $rc, outputs old or whole, nothing left"
}

run_case compare "F:json G:csv" compare "$FIX/ln-pre-bias.json" "$FIX/rms-post-bias.json" \
    --text "$TMP/text.txt" --repeats 1 --json -o F --csv G
run_case profile "F:json G:json" profile -m "$M" -p ab -n 5 --json -o F --trace G
run_case profile-table "G:json" profile -m "$M" -p ab -n 5 --trace G
run_case eval "F:exact" eval -m "$M" --text "$TMP/text.txt" --json -o F
run_case info "F:exact" info -m "$M" --json -o F
run_case list "F:exact" list --json -o F
run_case logits "F:exact" logits -m "$M" -p abab -o F
run_case generate "F:exact" generate -m "$M" -p ab -n 20 --seed 3 -o F

# Two new outputs (no old file): a failed rename leaves neither, never one alone.
for case in "compare F G" "profile F G"; do
    set -- $case
    W="$TMP/new-$1"
    for n in 1 2; do
        rm -rf "$W"; mkdir -p "$W"
        if [ "$1" = compare ]; then
            args="compare $M $FIX/rms-post-bias.json --text $TMP/text.txt --repeats 1 --json -o F --csv G"
        else args="profile -m $M -p ab -n 5 --json -o F --trace G"; fi
        (cd "$W" && FAULT_CALL=rename FAULT_N=$n LD_PRELOAD="$shim" "$bin" $args > /dev/null 2>&1); rc=$?
        [ "$rc" -ne 0 ] && [ -z "$(ls -A "$W")" ] \
            && ok "$1, both outputs new: rename #$n fails: exit $rc, neither left" \
            || bad "$1 new outputs, rename #$n" "exit $rc, left: $(ls -A "$W")"
    done
done

# No hard links (FAULT_NO_LINKS) and the second rename fails: the first output renamed (profile renames
# its --trace first) cannot be put back, so it keeps its whole new content and is named; no output is
# lost, no temporary file is left.
W="$TMP/nolinks"; mkdir -p "$W"; printf 'old F\n' > "$W/F"; printf 'old G\n' > "$W/G"
(cd "$W" && FAULT_NO_LINKS=1 FAULT_CALL=rename FAULT_N=2 LD_PRELOAD="$shim" "$bin" profile -m "$M" -p ab -n 5 \
    --json -o F --trace G > /dev/null 2> "$TMP/nolinks.err"); rc=$?
[ "$rc" -ne 0 ] && whole json "$W/G" && [ "$(cat "$W/F")" = "old F" ] && [ "$(ls -A "$W" | wc -l)" -eq 2 ] \
    && grep -q "G: keeps its new content" "$TMP/nolinks.err" \
    && ok "no hard links, rename #2 fails: G stays new and whole and is named, F old, nothing lost or left" \
    || bad "no hard links" "exit $rc: $(ls -A "$W"); $(cat "$TMP/nolinks.err")"

# compare's plots are renamed in with its other outputs: a failure at any of the renames leaves all
# six files (-o, --csv and the four plots: no state_norm.png without a recurrent model) as they were.
P="$TMP/plots"; mkdir -p "$P"
plots="bits_per_char.png residual_rms.png branch_rms.png time_share.png"
n=1
have_python 7 matplotlib || n=7  # the 6 faulted runs and the unfaulted one need the plotting tool
while [ "$n" -le 6 ]; do
    printf 'old F\n' > "$P/F"; printf 'old G\n' > "$P/G"
    for p in $plots; do printf 'old %s\n' "$p" > "$P/$p"; done
    (cd "$P" && FAULT_CALL=rename FAULT_N=$n LD_PRELOAD="$shim" "$bin" compare "$M" --text "$TMP/text.txt" \
        --repeats 1 --json -o F --csv G --plot-dir . > /dev/null 2>&1)
    rc=$? kept=0
    for f in F G $plots; do [ "$(cat "$P/$f")" = "old $f" ] && kept=$((kept + 1)); done
    [ "$rc" -ne 0 ] && [ "$kept" -eq 6 ] && [ "$(ls -A "$P" | wc -l)" -eq 6 ] \
        && ok "compare --plot-dir: rename #$n fails: exit $rc, all 6 outputs as they were, nothing left" \
        || bad "compare --plot-dir: rename #$n" "exit $rc, $kept of 6 kept: $(ls -A "$P")"
    n=$((n + 1))
done
if [ "$skipped" -eq 0 ]; then
    (cd "$P" && "$bin" compare "$M" --text "$TMP/text.txt" --repeats 1 --json -o F --csv G --plot-dir . \
        > /dev/null 2>&1)
    kept=0
    for f in F G $plots; do [ "$(cat "$P/$f")" = "old $f" ] && kept=$((kept + 1)); done
    [ "$kept" -eq 0 ] && ok "compare --plot-dir unfaulted: all 6 outputs replaced" \
        || bad "compare --plot-dir" "$kept kept"
fi
# A model folder swapped for another while it is read (the shim plays the writer at the worst moment:
# after the folder was opened, before one of its files): the load reads the new model from the path,
# never fails (docs/files.md).
for file in config.json tokenizer.json model.safetensors; do
    rm -rf "$TMP/swap" "$TMP/swap-new"
    cp -r weights/shakespeare-pre-ln "$TMP/swap" && cp -r weights/shakespeare-gru "$TMP/swap-new"
    FAULT_SWAP="$file:$TMP/swap:$TMP/swap-new" LD_PRELOAD="$shim" "$bin" info -m "$TMP/swap" --json \
        > "$TMP/swap.out" 2> "$TMP/swap.err"; rc=$?
    [ "$rc" -eq 0 ] && grep -q '"arch":"gru"' "$TMP/swap.out" && [ -z "$(ls -A "$TMP/swap-new")" ] \
        && ok "the folder swapped away before its $file was opened: the new model loads" \
        || bad "swapped before $file" "exit $rc: $(head -c 200 "$TMP/swap.out") $(cat "$TMP/swap.err")"
done
closing fault_test
[ "$failed" -eq 0 ]
