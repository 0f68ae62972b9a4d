#!/bin/bash
# tests/options_test.sh BINARY — the option rows (each command's, in engine/cli/cmd_*.c), read from the binary's
# `normlab help --options-table`: (1) help CMD, the man page, the bash completion and docs/cli.md
# name every option of every command, and the parser takes each for its commands and refuses it for
# the others; (2) every numeric option at the edges of its range: the smallest and largest accepted
# values and the default run (exit 0, or still running when killed after a few seconds for -n 10^9),
# the default gives the output of no option at all, and the nearest values outside are refused with
# exit 2 and "must be". Each run is a fixture model and a few characters.
set -u
BIN=${1:-./normlab}
FIX=tests/fixtures
TMP=$(mktemp -d /tmp/normlab-options-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0
export LC_ALL=C.UTF-8
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }

"$BIN" help --options-table > "$TMP/table" || { echo "options_test: 0 passed, 1 failed"; exit 1; }
grep -v '^#' "$TMP/table" > "$TMP/rows"
tools/dev/make_man.sh "$BIN" > "$TMP/man"
tools/dev/make_completion.sh "$BIN" > "$TMP/completion"
"$BIN" help --markdown > "$TMP/cli.md"
cmp -s "$TMP/cli.md" docs/cli.md && ok "docs/cli.md is normlab help --markdown" \
    || bad "docs/cli.md" "differs from '$BIN help --markdown' (regenerate it: $BIN help --markdown > docs/cli.md)"
cmds=$(cut -f1 "$TMP/rows" | uniq)
all_longs=$(cut -f2 "$TMP/rows" | sort -u)

# ---- (1) every place that lists options agrees with the table
for c in $cmds; do
    "$BIN" help "$c" > "$TMP/help_$c"
    longs=$(awk -F'\t' -v c="$c" '$1 == c { print $2 }' "$TMP/rows")
    miss_help="" miss_man="" miss_comp="" miss_md="" miss_parse=""
    # the man page's section of c, and the completion's line of c
    sed -n "/^\\.SS $c\$/,/^\\.S[SH] /p" "$TMP/man" | sed 's/\\f[BIR]//g; s/\\-/-/g' > "$TMP/man_$c"
    grep "^        $c) " "$TMP/completion" > "$TMP/comp_$c"
    sed -n "/^## $c\$/,/^## /p" "$TMP/cli.md" > "$TMP/md_$c"
    for l in $longs; do
        grep -q -- "$l\\b" "$TMP/help_$c" || miss_help="$miss_help $l"
        grep -q -- "$l\\b" "$TMP/man_$c" || miss_man="$miss_man $l"
        grep -qE -- "[ \"]$l[ \"]" "$TMP/comp_$c" || miss_comp="$miss_comp $l"
        grep -q -- "$l\\b" "$TMP/md_$c" || miss_md="$miss_md $l"
        # the parser takes it for c: never "unknown" or "does not apply" (the value "1" may be refused)
        "$BIN" "$c" "$l" 1 -h > /dev/null 2> "$TMP/err"
        grep -qE "unknown option|does not apply" "$TMP/err" && miss_parse="$miss_parse $l"
    done
    [ -z "$miss_help" ] && ok "help $c lists its options" || bad "help $c" "lacks$miss_help"
    [ -z "$miss_man" ] && ok "man page section $c lists its options" || bad "man $c" "lacks$miss_man"
    [ -z "$miss_comp" ] && ok "completion of $c offers its options" || bad "completion $c" "lacks$miss_comp"
    [ -z "$miss_md" ] && ok "docs/cli.md section $c lists its options" || bad "docs/cli.md $c" "lacks$miss_md"
    [ -z "$miss_parse" ] && ok "the parser takes every option of $c" || bad "parser $c" "refuses$miss_parse"
    # every alias (llama.cpp's and nanoGPT's names): offered by the completion, taken by the parser
    miss_alias=""
    for a in $(awk -F'\t' -v c="$c" '$1 == c && $3 != "-" { print $3 }' "$TMP/rows"); do
        grep -qE -- "[ \"]--$a[ \"]" "$TMP/comp_$c" || miss_alias="$miss_alias completion:--$a"
        "$BIN" "$c" "--$a" 1 -h > /dev/null 2> "$TMP/err"
        grep -qE "unknown option|does not apply" "$TMP/err" && miss_alias="$miss_alias parser:--$a"
    done
    [ -z "$miss_alias" ] && ok "the aliases of $c: completed and parsed" || bad "aliases $c" "lack$miss_alias"
    extra=""
    for l in $all_longs; do
        printf '%s\n' $longs | grep -qx -- "$l" && continue
        "$BIN" "$c" "$l" 1 > /dev/null 2> "$TMP/err"
        grep -q "option '$l' does not apply to this command" "$TMP/err" || extra="$extra $l"
    done
    [ -z "$extra" ] && ok "the parser refuses other commands' options for $c" || bad "parser $c" "takes$extra"
done

# the man page is real man format: groff renders it without a warning, with its sections
if command -v groff > /dev/null 2>&1; then
    groff -man -Tutf8 -ww -z "$TMP/man" > "$TMP/groff.err" 2>&1 && [ ! -s "$TMP/groff.err" ] \
        && ok "the man page renders without a warning (groff -ww)" || bad "man groff" "$(head -3 "$TMP/groff.err")"
    groff -man -Tutf8 "$TMP/man" 2>/dev/null | sed 's/.\x08//g' > "$TMP/man.txt"
    miss=""
    for sec in NAME SYNOPSIS DESCRIPTION COMMANDS EXAMPLES ENVIRONMENT "EXIT STATUS"; do
        grep -q "^$sec\$" "$TMP/man.txt" || miss="$miss $sec"
    done
    [ "$(grep -c '^\.TP$' "$TMP/man")" -ge "$(grep -c '' "$TMP/rows")" ] && [ -z "$miss" ] \
        && ok "the man page: its sections, every option of every command a tagged paragraph (.TP)" \
        || bad "man sections" "lacks$miss"
fi

# the completion at work: the commands with version, and compare's positional models from 'normlab list'
complete_words() {  # complete_words WORD...: what the completion offers for the last word
    bash -c '. "$1"; shift; normlab() { "$BIN" "$@"; }; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _normlab
        printf "%s\n" "${COMPREPLY[@]}"' _ "$TMP/completion" "$@"
}
export BIN
complete_words normlab vers | grep -qx version && ok "completion: version among the commands" \
    || bad "completion version" "$(complete_words normlab vers)"
complete_words normlab compare shakespeare-pre-r | grep -qx shakespeare-pre-rms \
    && ok "completion: compare's positional models" \
    || bad "completion compare" "$(complete_words normlab compare shakespeare-pre-r)"
complete_words normlab generate --max-new | grep -qx -- --max-new-tokens \
    && ok "completion: an alias (--max-new-tokens)" \
    || bad "completion alias" "$(complete_words normlab generate --max-new)"

# ---- (2) numeric options at the edges of their ranges
printf 'ab ba ab' > "$TMP/short.txt"
awk 'BEGIN { for (i = 0; i < 1100; i++) printf "ab ba " }' > "$TMP/long.txt"  # 6600 characters
base() {  # base CMD OPTION: a cheap run of CMD that the option's value is added to (without that option)
    local n="-n 3" seed="--seed 1"
    [ "$2" = --steps ] && n=""
    [ "$2" = --seed ] && seed=""
    case "$1 $2" in
        "eval --segments") echo "eval -m $FIX/lstm-none.json --text $TMP/long.txt" ;;
        eval*) echo "eval -m $FIX/ln-pre-bias.json --text $TMP/short.txt" ;;
        "generate --n-probs") echo "generate -m $FIX/ln-pre-bias.json -p ab $n $seed --json" ;;  # (JSON only)
        generate*) echo "generate -m $FIX/ln-pre-bias.json -p ab $n $seed" ;;
        profile*) echo "profile -m $FIX/ln-pre-bias.json -p ab $n" ;;
        logits*) echo "logits -m $FIX/ln-pre-bias.json -p ab" ;;
        compare*) echo "compare $FIX/ln-pre-bias.json --text $TMP/short.txt --repeats 1" ;;
        bench*) echo "bench -m $FIX/ln-pre-t70.json -p 4 -n 4 -t 1" ;;
        "patch --threads") echo "patch -m $FIX/ln-pre-bias.json --clean abcab --corrupt abbab" ;;
        "patch --target") echo "patch -m $FIX/ln-pre-bias.json --clean abcab --corrupt abbab --foil 1" ;;
        "patch --foil") echo "patch -m $FIX/ln-pre-bias.json --clean abcab --corrupt abbab --target 2" ;;
    esac
}
# Accepted values a fixture cannot run, with the message that says why (still not "must be").
model_limit() {
    case "$1 $2 $3" in
        "eval --stride 65536" | "eval --chunk 65536") echo "is larger than the model's context" ;;
        "generate --steps -1" | "profile --steps -1") echo "goes with" ;;  # (generate -i's)
        "patch --target 1048576" | "patch --foil 1048576") echo "is outside the vocabulary" ;;
    esac
}
while IFS=$'\t' read -r c long alias short type arg def choices accepted refused; do
    [ "$accepted" = "-" ] && continue
    b=$(base "$c" "$long")
    for v in $accepted; do
        timeout 3 "$BIN" $b "$long" "$v" > "$TMP/out" 2> "$TMP/err"; rc=$?
        limit=$(model_limit "$c" "$long" "$v")
        if [ -n "$limit" ]; then
            grep -qF "$limit" "$TMP/err" && ! grep -q "must be" "$TMP/err" \
                && ok "$c $long $v accepted (the fixture's limit: $limit)" || bad "$c $long $v" "$(cat "$TMP/err")"
        elif [ "$rc" -eq 0 ] || { [ "$rc" -eq 124 ] && [ "$v" = 1000000000 ]; }; then
            ok "$c $long $v accepted and runs"
        else bad "$c $long $v" "exit $rc: $(head -c 300 "$TMP/err")"; fi
    done
    for v in $refused; do
        "$BIN" $b "$long" "$v" > "$TMP/out" 2> "$TMP/err"; rc=$?
        [ "$rc" -eq 2 ] && grep -q -- "must be" "$TMP/err" && [ ! -s "$TMP/out" ] \
            && ok "$c $long $v refused, exit 2" || bad "$c $long $v" "exit $rc: $(head -c 300 "$TMP/err")"
    done
    # the default given explicitly is the default: the same output (commands without timings in it)
    # (not the random seed, -1)
    # (nor --n-probs, whose runs are JSON with their timings)
    if [ "$def" != "-" ] && [ "$def" != "-1" ] && [ "$c" != profile ] && [ "$c" != compare ] && [ "$c" != bench ] \
        && [ "$long" != --n-probs ]; then
        "$BIN" $b > "$TMP/plain" 2>/dev/null
        "$BIN" $b "$long" "$def" > "$TMP/out" 2>/dev/null
        cmp -s "$TMP/plain" "$TMP/out" && ok "$c $long $def is the default" || bad "$c $long $def" "output differs"
    fi
done < "$TMP/rows"

echo "options_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
