#!/bin/bash
# tests/cli_test.sh BINARY — the command line as a user meets it: exit codes, one-line messages,
# empty stdout on errors, streaming output, seeds, and byte-exact golden outputs.
# Regression files (tests/regression/) were written by this engine and checked by hand against the
# reference (tests/test_forward.c checks the same greedy path against the double reference).
# Set UPDATE_GOLDEN=1 to rewrite them after an intended change.
set -u
BIN=${1:-./normlab}
FIX=tests/fixtures
GOLD=tests/regression
TMP=$(mktemp -d /tmp/normlab-cli-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0
. "$(dirname "$0")/skips.sh"
export LC_ALL=C.UTF-8

ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }

# run ARGS...: runs the binary, capturing stdout, stderr and status.
run() { "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }

# expect_fail NAME CODE SUBSTRING ARGS...: non-zero CODE, empty stdout, one-line stderr naming it.
expect_fail() {
    local name=$1 code=$2 msg=$3; shift 3
    run "$@"
    if [ "$rc" -ne "$code" ]; then bad "$name" "exit $rc, expected $code ($(head -c 200 "$TMP/err"))"
    elif [ -s "$TMP/out" ]; then bad "$name" "stdout not empty: $(head -c 100 "$TMP/out")"
    elif ! grep -qF -- "$msg" "$TMP/err"; then bad "$name" "stderr lacks '$msg': $(cat "$TMP/err")"
    elif [ "$(wc -l < "$TMP/err")" -ne 1 ]; then bad "$name" "stderr is not one line: $(cat "$TMP/err")"
    else ok "$name"; fi
}

expect_ok() {
    local name=$1; shift
    run "$@"
    if [ "$rc" -ne 0 ]; then bad "$name" "exit $rc: $(head -c 300 "$TMP/err")"; return 1; fi
    ok "$name"
}

golden() {  # golden NAME FILE: stdout equals the golden file byte for byte
    if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then cp "$TMP/out" "$GOLD/$2"; fi
    if cmp -s "$TMP/out" "$GOLD/$2"; then ok "$1"; else bad "$1" "output differs from $GOLD/$2"; fi
}

M="-m $FIX/ln-pre-bias.json"
U="-m $FIX/utf8.json"

# ---- usage errors: exit 2
run  # bare normlab: the commands, as git lists them, on stderr (a usage error)
[ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] && grep -q "^  generate " "$TMP/err" && grep -q "^  compare " "$TMP/err" \
    && ok "bare normlab lists the commands, exit 2" || bad "bare normlab" "exit $rc: $(head -3 "$TMP/err")"
# one dash: a long option's exact name only, never a prefix; -i and -b are no option of generate
expect_fail "-i is not --invariance's prefix" 2 "unknown option '-i'" generate $M -i
expect_fail "-b is unknown, with the options it starts" 2 "unknown option '-b' (did you mean --batch, --bn-stats?)" \
    generate $M -b
expect_fail "-e is unknown, with the options it starts" 2 "unknown option '-e' (did you mean --echo, --exact-window?)" \
    generate $M -e
expect_fail "one dash, a near miss: did you mean" 2 "unknown option '-jsn' (did you mean '--json'?)" generate $M -jsn
expect_fail "one dash and a prefix is no long option" 2 "unknown option '-exact' (did you mean --exact-window?)" \
    generate $M -exact
expect_fail "a flag takes no value" 2 "option '--json' takes no value" info $M --json=1
expect_fail "unknown command" 2 "unknown command 'sing'" sing
expect_fail "negative -n" 2 "-n must be an integer in [0, 1000000000], got '-1'" generate $M -n -1
expect_fail "non-numeric -n" 2 "got '12abc'" generate $M -n 12abc
expect_fail "negative temperature" 2 "--temperature must be 0 or a number in [1e-4, 1e4], got '-0.5'" \
    generate $M --temperature -0.5
expect_fail "nan temperature" 2 "got 'nan'" generate $M --temperature nan
expect_fail "inf temperature" 2 "got 'inf'" generate $M --temperature inf
expect_fail "trailing junk temperature" 2 "got '0.5x'" generate $M --temperature 0.5x
expect_fail "subnormal temperature" 2 "got '1e-310'" generate $M --temperature 1e-310
expect_fail "top-p zero" 2 "--top-p must be in (0, 1], got '0'" generate $M --top-p 0
expect_fail "top-p above one" 2 "--top-p must be in (0, 1], got '1.5'" generate $M --top-p 1.5
expect_fail "negative top-k" 2 "--top-k must be an integer >= 0" generate $M --top-k -3
expect_fail "unknown norm" 2 "--norm must be layernorm, rmsnorm, batchnorm or none (any case), got 'groupnorm'" \
    generate $M --norm groupnorm
expect_fail "unknown placement" 2 "--placement must be pre, post or peri (any case), got 'middle'" \
    generate $M --placement middle
expect_ok "choices without case" generate $M -p ab -n 5 -s 1 --norm RMSNorm --placement PRE --no-echo
expect_fail "negative seed" 2 "--seed must be -1 (random) or an integer in [0, 2^64-1], got '-2'" generate $M --seed -2
expect_ok "seed -1 is random" generate $M -p ab -n 5 --seed -1
grep -q "^normlab: seed [0-9]*$" "$TMP/err" && ok "a random seed is printed" || bad "seed -1" "$(cat "$TMP/err")"
expect_ok "given seed" generate $M -p ab -n 5 -s 3
! grep -q "seed" "$TMP/err" && ok "a given seed is not printed" || bad "given seed printed" "$(cat "$TMP/err")"
expect_fail "seed overflow" 2 "got '18446744073709551616'" generate $M --seed 18446744073709551616
expect_fail "zero threads" 2 "--threads must be an integer in [1, 1024]" generate $M --threads 0
expect_fail "unknown option" 2 "unknown option '--bogus'" generate $M --bogus
expect_ok "llama.cpp's one-dash long options" generate $M -p ab -temp 0 -n 5 -no-echo
[ "$(wc -m < "$TMP/out")" -eq 5 ] \
    && ok "-temp and -no-echo work as --temperature and --no-echo" || bad "one-dash" "$(cat "$TMP/out")"
expect_fail "two outputs on stdout" 2 "two outputs would both go to standard output" profile $M -n 3 --trace -
expect_fail "a command by its prefix" 2 "unknown command 'gen' (did you mean 'generate'?)" gen
expect_fail "ambiguous option" 2 "ambiguous option '--top' (--top-k, --top-p)" generate $M --top 5
expect_fail "mistyped option" 2 "unknown option '--tempreature' (did you mean '--temperature'?)" \
    generate $M --tempreature 1
expect_fail "mistyped command" 2 "unknown command 'genrate' (did you mean 'generate'?)" genrate
expect_fail "hex number" 2 "got '0x1p-1'" generate $M --temperature 0x1p-1
expect_fail "leading space" 2 "got ' 5'" generate $M -n " 5"
expect_fail "option before the command" 2 "the command comes first" -m x generate
expect_fail "missing value" 2 "option '-n' needs a value" generate $M -n
expect_fail "prompt and file" 2 "give -p or -f, not both" generate $M -p a -f /etc/hostname
expect_fail "stray argument" 2 "unexpected argument 'extra'" generate $M extra
expect_fail "option of another command" 2 "option '--seed' does not apply to this command" info $M --seed 1
expect_fail "short option of another command" 2 "option '-n' does not apply to this command" info $M -n 3
# a message names an option as it was typed (one dash, a prefix), not by its table name
expect_fail "one-dash spelling in a message" 2 "-temp must be 0 or a number" generate $M -temp -1
expect_fail "a prefix's spelling in a message" 2 "'--temp' needs a value" generate $M --temp
expect_fail "one-dash option of another command" 2 "option '-seed' does not apply to this command" info $M -seed 1
expect_fail "counters without profile" 2 "--counters needs --profile" generate $M --counters
expect_fail "two outputs, one file" 2 "are the same file" profile $M -n 3 -o "$TMP/same" --trace "$TMP/same"
expect_fail "eval without text" 2 "give the text with -f FILE" eval $M
expect_fail "help for unknown command" 2 "unknown command 'bogus'" help bogus

# ---- data errors: exit 1
expect_fail "missing model" 1 "/nonexistent: no such model" generate -m /nonexistent -n 3
expect_fail "unknown prompt character" 1 "character 'Z' (U+005A) at position 3 is not in the model's vocabulary" \
    generate $M -p "abZ" -n 3 --seed 1
expect_fail "missing prompt file" 1 "/nonexistent/prompt: cannot open" generate $M -f /nonexistent/prompt
expect_fail "prompt file is a directory" 1 "not a regular file" generate $M -f /tmp
expect_fail "eval missing text" 1 "cannot open" eval $M --text /nonexistent
printf 'ab\tc' > "$TMP/tab.txt"
expect_fail "eval unknown character" 1 "U+0009 at position 3" eval $M --text "$TMP/tab.txt"
printf 'a' > "$TMP/one.txt"
printf 'ab ba' > "$TMP/short.txt"
expect_fail "eval one character" 1 "at least 2 characters" eval $M --text "$TMP/one.txt"
expect_fail "eval stride above the context" 2 "--stride 10 is larger than the model's context (block_size 9)" \
    eval $M --text "$TMP/short.txt" --stride 10
expect_fail "model file instead of its directory" 1 "give the model directory that holds this file" \
    info -m weights/shakespeare-pre-ln/config.json
expect_fail "directory that is not a model" 1 "weights: not a model directory (it has no config.json)" info -m weights
NORMLAB_MODEL=/nonexistent/model "$BIN" info >"$TMP/out" 2>"$TMP/err"; rc=$?
[ "$rc" -eq 1 ] && grep -q "NORMLAB_MODEL=/nonexistent/model: no such model" "$TMP/err" \
    && ok "mistyped NORMLAB_MODEL named" || bad "NORMLAB_MODEL" "$(cat "$TMP/err")"
if [ -w /dev/full ]; then
    "$BIN" generate $M -n 5 --seed 1 > /dev/full 2>"$TMP/err"; rc=$?
    if [ "$rc" -eq 1 ] && grep -q "cannot write to stdout" "$TMP/err"; then ok "stdout on a full disk"
    else bad "stdout on a full disk" "rc=$rc $(cat "$TMP/err")"; fi
fi

expect_fail "logits overflow at run time" 1 "the model produced a non-finite logit after 0 generated tokens" \
    generate -m $FIX/overflow.json -p ab -n 5 --seed 1 --no-echo
expect_fail "eval loss overflows" 1 "non-finite loss at character 2" eval -m $FIX/overflow.json --text "$TMP/short.txt"
# an unreadable file, as an unprivileged user (root reads everything)
printf 'ab ba' > "$TMP/secret.txt"; chmod 000 "$TMP/secret.txt"; chmod 711 "$TMP"
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
if command -v setpriv >/dev/null && $NOBODY test -r "$FIX/ln-pre-bias.json" 2>/dev/null \
    && $NOBODY test -x "$BIN" 2>/dev/null; then
    $NOBODY "$BIN" eval $M --text "$TMP/secret.txt" >"$TMP/out" 2>"$TMP/err"; rc=$?
    [ "$rc" -eq 1 ] && [ ! -s "$TMP/out" ] && grep -q "secret.txt: cannot open: Permission denied" "$TMP/err" \
        && ok "unreadable file" || bad "unreadable file" "exit $rc: $(cat "$TMP/err")"
else
    echo "note: unreadable-file test skipped (no setpriv, or user nobody cannot reach the repository)"
fi
timeout 30 "$BIN" generate $M -n 100000000 --seed 1 2>"$TMP/err" | head -c 1 >/dev/null
rc=${PIPESTATUS[0]}
[ "$rc" -eq 141 ] && [ ! -s "$TMP/err" ] && ok "closed pipe ends the process at once and quietly (SIGPIPE)" \
    || bad "closed pipe" "exit $rc (124 = still running after 30 s), stderr: $(head -c 200 "$TMP/err")"

# ---- help and version
expect_ok "--help" --help && grep -q "commands:" "$TMP/out" \
    && ok "--help lists commands" || bad "--help lists commands" "$(head -3 "$TMP/out")"
expect_ok "help generate" help generate && grep -q -- "--top-p" "$TMP/out" \
    && ok "help generate lists --top-p" || bad "help generate" "no --top-p"
expect_fail "--version takes no arguments" 2 "--version takes no arguments, got 'extra'" --version extra
# eight names made out of order: a directory's own order coming out sorted by chance is 1 in 40,320
mkdir -p "$TMP/models" && for n in h c f a e b g d; do cp "$FIX/ln-pre-bias.json" "$TMP/models/$n.json"; done
NORMLAB_MODELS="$TMP/models" run generate -m nosuch -n 1
[ "$rc" -eq 1 ] && grep -qF "models found: a, b, c, d, e, f, g, h, shakespeare" "$TMP/err" \
    && ok "no such model: names in order" || bad "no such model: names in order" "exit $rc: $(cat "$TMP/err")"
expect_ok "--version" --version && grep -qE '^normlab [0-9]+\.[0-9]+\.[0-9]+$' "$TMP/out" \
    && ok "version format" || bad "version format" "$(cat "$TMP/out")"
cp "$TMP/out" "$TMP/version"
expect_ok "version, as a command" version && cmp -s "$TMP/out" "$TMP/version" \
    && ok "'normlab version' prints what --version does" || bad "version command" "$(cat "$TMP/out")"
expect_fail "version takes no arguments" 2 "version takes no arguments, got 'x'" version x

# ---- generation
expect_ok "greedy" generate $M -p "ab" -n 40 --temperature 0 --no-echo
golden "greedy golden" greedy.txt
expect_ok "sampled" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --temperature 0.8 --no-echo
golden "sampled golden" sampled.txt
cp "$TMP/out" "$TMP/first"; cp "$TMP/out" "$TMP/sampled"
expect_ok "same seed again" generate $M -p "a b" -n 60 -s 7 --top-k 5 --top-p 0.9 --no-echo
cmp -s "$TMP/out" "$TMP/first" && ok "same seed, same bytes" || bad "same seed, same bytes" "outputs differ"
expect_ok "two threads" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --temperature 0.8 --threads 2 \
    --no-echo
cmp -s "$TMP/out" "$TMP/first" && ok "same bytes with 2 threads" || bad "same bytes with 2 threads" "outputs differ"
expect_ok "--no-mmap" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --temperature 0.8 --no-mmap --no-echo
cmp -s "$TMP/out" "$TMP/first" && ok "--no-mmap prints the same text" || bad "--no-mmap" "outputs differ"
# 8-stream groups run sgemm on the loader's transposed copies where the kernels have them (linear.c)
expect_ok "samples, mapped" generate -m weights/shakespeare-pre-ln -p "ab" -n 30 --seed 5 --samples 9 --no-echo
cp "$TMP/out" "$TMP/samples_mapped"
expect_ok "samples, --no-mmap" generate -m weights/shakespeare-pre-ln -p "ab" -n 30 --seed 5 --samples 9 --no-echo \
    --no-mmap
cmp -s "$TMP/out" "$TMP/samples_mapped" && ok "--no-mmap samples the same text" || bad "--no-mmap samples" "differ"
expect_ok "--no-mmap directory model" info -m weights/shakespeare-pre-ln --no-mmap --json
grep -q '"parameters":818048' "$TMP/out" \
    && ok "--no-mmap loads a directory model" || bad "--no-mmap dir" "$(head -c 200 "$TMP/out")"
# the copies: every linear of the shipped model (3,179,008 bytes) with AVX2 or AVX-512 kernels, else none
grep -qE '"transposed_bytes":(3179008|0),' "$TMP/out" \
    && ok "info reports the transposed copies" || bad "transposed_bytes" "$(grep -o '"transposed[^,]*' "$TMP/out")"
expect_ok "other seed" generate $M -p "a b" -n 60 --seed 8 --top-k 5 --top-p 0.9 --temperature 0.8 --no-echo
cmp -s "$TMP/out" "$TMP/first" && bad "other seed, other bytes" "identical" || ok "other seed, other bytes"
expect_ok "echo by default" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9
[ "$(cat "$TMP/out")" = "a b$(cat "$GOLD/sampled.txt")" ] \
    && ok "the prompt is echoed before the continuation" || bad "echo" "$(head -c 80 "$TMP/out")"
expect_ok "-o FILE" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --no-echo -o "$TMP/gen.txt"
[ ! -s "$TMP/out" ] && cmp -s "$TMP/gen.txt" "$GOLD/sampled.txt" \
    && ok "-o writes the text to the file, nothing to stdout" || bad "-o" "$(head -c 80 "$TMP/gen.txt")"
expect_ok "utf8 model" generate $U -p "é" -n 50 --seed 3 --no-echo --temperature 1
n=$(wc -m < "$TMP/out")
[ "$n" -eq 50 ] && ok "-n counts characters, not bytes" || bad "-n counts characters" "got $n characters"
golden "utf8 golden" utf8.txt
expect_ok "-n 0" generate $M -n 0 --seed 1 --no-echo
[ ! -s "$TMP/out" ] && ok "-n 0 prints nothing" || bad "-n 0 prints nothing" "$(cat "$TMP/out")"
expect_ok "no seed" generate $M -n 5
grep -qE '^normlab: seed [0-9]+$' "$TMP/err" \
    && ok "random seed printed to stderr" || bad "random seed printed" "$(cat "$TMP/err")"
seed=$(sed -n 's/^normlab: seed \([0-9]*\)$/\1/p' "$TMP/err"); cp "$TMP/out" "$TMP/first"
expect_ok "printed seed repeats" generate $M -n 5 --seed "$seed"
cmp -s "$TMP/out" "$TMP/first" && ok "printed seed reproduces the run" || bad "printed seed reproduces" "differs"
expect_ok "empty prompt" generate $M -p "" -n 30 --seed 4; cp "$TMP/out" "$TMP/first"
expect_ok "newline prompt" generate $M -p $'\n' -n 30 --seed 4
cmp -s "$TMP/out" "$TMP/first" \
    && ok "empty prompt starts from a newline" || bad "empty prompt" "differs from a newline prompt"
printf 'ab ba' > "$TMP/prompt.txt"
expect_ok "prompt file" generate $M -f "$TMP/prompt.txt" -n 30 --seed 4; cp "$TMP/out" "$TMP/first"
expect_ok "prompt inline" generate $M -p 'ab ba' -n 30 --seed 4
cmp -s "$TMP/out" "$TMP/first" && ok "-f equals -p" || bad "-f equals -p" "differs"
expect_ok "echo" generate $M -p 'ab' -n 10 --seed 4 --echo
[ "$(head -c 2 "$TMP/out")" = "ab" ] && [ "$(wc -m < "$TMP/out")" -eq 12 ] \
    && ok "--echo prints the prompt first" || bad "--echo" "$(cat "$TMP/out")"
expect_ok "skip unknown" generate $M -p 'aZb' -n 10 --seed 4 --skip-unknown
grep -q "dropped 1 character outside" "$TMP/err" \
    && ok "--skip-unknown warns" || bad "--skip-unknown warns" "$(cat "$TMP/err")"
expect_ok "skip leaves nothing" generate $M -p "ZZ" -n 30 --seed 4 --skip-unknown; cp "$TMP/out" "$TMP/skipped"
expect_ok "newline prompt again" generate $M -p $'\n' -n 30 --seed 4
cmp -s "$TMP/out" "$TMP/skipped" \
    && ok "a prompt with nothing known left starts from a newline" || bad "skip leaves nothing" "differs"
expect_ok "prompt inline (for stdin)" generate $M -p 'ab ba' -n 30 --seed 4 && cp "$TMP/out" "$TMP/inline"
printf 'ab ba' | "$BIN" generate $M -f - -n 30 --seed 4 >"$TMP/stdin" 2>/dev/null
cmp -s "$TMP/stdin" "$TMP/inline" && ok "-f - reads the prompt from stdin" || bad "-f -" "differs"
expect_ok "past the window" generate $M -p 'ab' -n 100 --seed 4 --no-echo
[ "$(wc -m < "$TMP/out")" -eq 100 ] && grep -q "context shifts" "$TMP/err" \
    && ok "generation goes on past block_size" || bad "past the window" "$(cat "$TMP/err")"
expect_ok "exact window" generate $M -p 'ab' -n 100 --seed 4 --exact-window --no-echo
[ "$(wc -m < "$TMP/out")" -eq 100 ] && ok "--exact-window goes on past block_size" || bad "exact window" "short"
expect_ok "long prompt" generate $M -p 'ab ab ab ab ab ab' -n 3 --seed 4
grep -q "only the last 9 fit" "$TMP/err" \
    && ok "long prompt warns and keeps the last block_size" || bad "long prompt" "$(cat "$TMP/err")"
expect_ok "override" generate $M -p 'ab' -n 5 --seed 4 --norm rmsnorm --placement post
grep -q "warning: the model was trained as layernorm/pre; running it as rmsnorm/post" "$TMP/err" \
    && ok "override warns" || bad "override warns" "$(cat "$TMP/err")"
expect_ok "timing on stderr" generate $M -p 'ab' -n 5 --seed 4
grep -qE "prefill 2 tokens in .* tok/s\); 5 new characters \(the first from the prefill's logits\); decode 4 tokens" \
    "$TMP/err" && ok "timing reported on stderr, counting -n's characters" || bad "timing" "$(cat "$TMP/err")"
# every command takes -m; compare takes it repeated, beside positional models
expect_ok "compare -m -m" compare -m $FIX/ln-pre-bias.json -m $FIX/rms-pre-bias.json -f "$TMP/short.txt" --repeats 1
cp "$TMP/out" "$TMP/cmp_m"
expect_ok "compare positional and -m" compare $FIX/ln-pre-bias.json -m $FIX/rms-pre-bias.json -f "$TMP/short.txt" \
    --repeats 1
row='^tests/fixtures/(ln|rms)-pre-bias.json +(layernorm|rmsnorm)/pre +[0-9]'
[ "$(grep -cE "$row" "$TMP/out")" -eq 2 ] && [ "$(grep -cE "$row" "$TMP/cmp_m")" -eq 2 ] \
    && ok "compare: a row per -m and positional model" || bad "compare -m" "$(cat "$TMP/out")"
mkdir -p "$TMP/models"; cp $FIX/ln-pre-bias.json "$TMP/models/one.json"
NORMLAB_MODELS=$TMP/models expect_ok "list -m NAME" list -m one
[ "$(wc -l < "$TMP/out")" -eq 2 ] && grep -q "^one " "$TMP/out" \
    && ok "list -m NAME shows that name only" || bad "list -m" "$(cat "$TMP/out")"
NORMLAB_MODELS=$TMP/models expect_fail "list -m of no model" 1 "nosuch: no model of that name" list -m nosuch

expect_ok "warmup" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --temperature 0.8 --warmup --no-echo
cmp -s "$TMP/out" "$GOLD/sampled.txt" \
    && ok "--warmup leaves the output unchanged" || bad "--warmup output" "differs from the golden"

# ---- batched samples
expect_ok "samples" generate $M -p "a b" -n 40 --seed 20 --samples 4 --json --top-k 6
[ "$(wc -l < "$TMP/out")" -eq 4 ] \
    && ok "--samples 4 --json prints four lines" || bad "--samples lines" "$(cat "$TMP/out")"
cp "$TMP/out" "$TMP/samples.json"
for i in 0 1 2 3; do
    "$BIN" generate $M -p "a b" -n 40 --seed $((20 + i)) --top-k 6 --no-echo > "$TMP/single" 2>/dev/null
    want=$(sed -n 's/\\n/\n/g; p' "$TMP/single" | tr -d '\n')
    line=$(sed -n "$((i + 1))p" "$TMP/samples.json")
    case "$line" in
        "{\"sample\":$i,\"seed\":$((20 + i)),\"prompt\":\"a b\",\"text\":"*)
            ok "sample $i is labelled with seed $((20 + i))" ;;
        *) bad "sample $i label" "$line" ;;
    esac
    got=$(printf '%s' "$line" | sed 's/.*"text":"\(.*\)"}$/\1/; s/\\n/\n/g' | tr -d '\n')
    [ "$got" = "$want" ] \
        && ok "sample $i equals the single-stream run with seed $((20 + i))" \
        || bad "sample $i text" "got '$got' want '$want'"
done
expect_ok "samples plain" generate $M -p "a b" -n 10 --seed 20 --samples 2
[ "$(grep -c '^--- sample [01], seed 2[01] ---$' "$TMP/out")" -eq 2 ] \
    && ok "--samples without --json labels each sample" || bad "samples plain" "$(cat "$TMP/out")"
expect_ok "json, one sample" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --json
/usr/bin/python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["seed"] == 7 and d["prompt"] == "a b" and d["text"] == open(sys.argv[2]).read(), d
assert d["decode_tokens"] == 59 and d["decode_tok_s"] > 0
' "$TMP/out" "$GOLD/sampled.txt" 2>/dev/null \
    && ok "--json prints one object with the text, seed and timings" || bad "json one" "$(cat "$TMP/out")"
expect_fail "samples zero" 2 "--samples must be an integer in [1, 256]" generate $M --samples 0

# ---- info and eval
expect_ok "info json" info $M --json
# kv_cache_bytes: 2 * L 2 * 32 positions (9 rounded to a tile) * D 12 * 4
for key in '"vocab_size":11' '"n_layer":2' '"n_head":3' '"n_embd":12' '"block_size":9' '"norm":"layernorm"' \
           '"placement":"pre"' '"activation":"gelu"' '"bias":true' '"tie_embeddings":true' '"parameters":2632' \
           '"weight_bytes":10528' '"kv_cache_bytes":6144'; do
    grep -qF "$key" "$TMP/out" && ok "info json has $key" || bad "info json has $key" "$(cat "$TMP/out")"
done
printf 'ab ba ab\nba ab ba ab ab ba\n' > "$TMP/text.txt"
expect_ok "eval json" eval $M --text "$TMP/text.txt" --json
fields='^\{"chars": 26, "nats_per_char": [0-9.e-]+, "nats_per_char_stderr": [0-9.e-]+, "bits_per_char": [0-9.e-]+, '
fields=$fields'"bits_per_char_stderr": [0-9.e-]+, "perplexity": [0-9.e-]+, "perplexity_stderr": [0-9.e-]+'
grep -qE "$fields" "$TMP/out" \
    && ok "eval json fields" || bad "eval json fields" "$(cat "$TMP/out")"
nats=$(sed -n 's/.*"nats_per_char": \([^,]*\),.*/\1/p' "$TMP/out")
bits=$(sed -n 's/.*"bits_per_char": \([^,]*\),.*/\1/p' "$TMP/out")
awk -v n="$nats" -v b="$bits" 'BEGIN { exit !(b > 0 && (n / b - log(2)) ^ 2 < 1e-12) }' \
    && ok "bits = nats / ln 2" || bad "bits = nats / ln 2" "$nats $bits"
# README's table of the shipped models gives each the parameters that list (and info) count.
env -u NORMLAB_MODELS "$BIN" list > "$TMP/list.txt" 2> /dev/null
rows=0 odd=""
for m in $(sed -n 's/^| `\(shakespeare-[a-z-]*\)`.*/\1/p' README.md); do
    readme=$(grep "^| \`$m\`" README.md | awk -F'|' '{ gsub(/[ ,]/, "", $6); print $6 }')
    listed=$(awk -v m="$m" '$1 == m { print $4 }' "$TMP/list.txt")
    rows=$((rows + 1)); [ "$readme" = "$listed" ] || odd="$odd $m (README $readme, list $listed)"
done
[ "$rows" -eq 13 ] && [ -z "$odd" ] && ok "README's 13 models have the parameters list counts" \
    || bad "README parameters" "$rows rows:$odd"

# ---- profile
expect_ok "profile" profile $M -p "ab" -n 20 --trace "$TMP/trace.json"
grep -q "^== prefill: 2 positions" "$TMP/out" && grep -q "^== decode: " "$TMP/out" \
    && grep -q "not covered by any row" "$TMP/out" \
    && ok "profile prints both phases and the footer" || bad "profile table" "$(head -5 "$TMP/out")"
core=$("$BIN" info $M --json | sed -n 's/.*"blas_core":"\([^"]*\)".*/\1/p')
threads_re="OpenBLAS $core kernels \(chosen by (openblas|environment|normlab)\), "
threads_re=$threads_re"threads up to [0-9]+; engine threads 1;"
grep -qE "$threads_re" "$TMP/out" \
    && ok "profile reports the kernel family and threads" || bad "profile threads" "$(head -2 "$TMP/out")"
run profile $M -p "ab" -n 20 --json -o "$TMP/prof.json"
[ ! -s "$TMP/out" ] && grep -q '"phase":[[:space:]]*"decode"' "$TMP/prof.json" \
    && ok "profile --json -o written" || bad "profile --json" "$(head -c 200 "$TMP/prof.json")"
run profile $M -p "ab" -n 20 --json
grep -q '"phase":[[:space:]]*"decode"' "$TMP/out" && ! grep -q "^== decode" "$TMP/out" \
    && ok "profile --json prints JSON instead of the table" || bad "profile --json stdout" "$(head -c 200 "$TMP/out")"
grep -q '"traceEvents"' "$TMP/trace.json" && grep -q '"name": "layer 1"' "$TMP/trace.json" \
    && ok "profile --trace written" || bad "profile --trace" "$(head -c 200 "$TMP/trace.json")"
expect_fail "profile unwritable json" 2 "output /nonexistent/dir/p.json: its directory cannot be used" \
    profile $M -n 5 -o /nonexistent/dir/p.json
expect_fail "profile unwritable trace" 2 "its directory cannot be used" \
    profile $M -n 5 -o "$TMP/p2.json" --trace /nonexistent/t.json
[ ! -e "$TMP/p2.json" ] && ok "no half-written profile left behind" || bad "half-written profile" "$TMP/p2.json exists"
# the summary (default) and the full table (--layers); sums read from one run's output
expect_ok "profile summary" profile $M -p "ab" -n 3
grep -qxF 'prompt: "ab" (2 characters, -p)' "$TMP/out" && ok "profile names its -p prompt" \
    || bad "profile -p prompt line" "$(sed -n 2p "$TMP/out")"
grep -q "^-- per layer, slowest first" "$TMP/out" && grep -q "^  all qkv " "$TMP/out" \
    && ! grep -q "^    0 norm1 " "$TMP/out" && ok "profile prints the summary, not the layer x component rows" \
    || bad "profile summary" "$(head -12 "$TMP/out")"
# per phase: component totals sum to the wall line's rows; unattributed = wall - rows; layers slowest first
why=$(awk '/^== /{ph=$2; sum=0; last=1e30}
    /^  all /{sum += $4}
    / \(all\) /{if ($4 > last) print ph " layers not slowest first"; last=$4}
    /^wall /{w=$2; r=$5; u=$12; if (sum-r > 0.001*13 || r-sum > 0.001*13) print ph " components " sum " != rows " r;
             if (w-r-u > 0.0015 || u-(w-r) > 0.0015) print ph " unattributed " u " != " w " - " r}' "$TMP/out")
[ -z "$why" ] && grep -c "^wall " "$TMP/out" | grep -qx 2 && ok "profile summary: totals add up, layers ordered" \
    || bad "profile summary sums" "$why"
note='* layer 1: from attention on, each pass computes only its last position, the one a logit needs'
grep -qxF "$note (1 of 2 positions; the rows no logit reads are pruned)" "$TMP/out" \
    && [ "$(grep -c '^\* layer' "$TMP/out")" = 1 ] && ok "profile explains the last layer's pruned prefill rows" \
    || bad "profile pruned footnote" "$(grep '^\*' "$TMP/out")"
expect_ok "profile --layers" profile $M -p "ab" -n 3 --layers
grep -q "^    0 norm1 " "$TMP/out" && grep -q "^-- per layer$" "$TMP/out" \
    && grep -q "^-- per component, all layers" "$TMP/out" && grep -q "^   1\* attention " "$TMP/out" \
    && grep -q "^   1\* (all) " "$TMP/out" && ! grep -q "^   0\*" "$TMP/out" \
    && grep -q '^\* layer 1: ' "$TMP/out" && ok "profile --layers prints the full table, the pruned rows marked" \
    || bad "profile --layers" "$(grep -E '^ +1|^\*' "$TMP/out" | head)"
expect_ok "profile of a recurrent model" profile -m $FIX/lstm-ln.json -p "abab" -n 3 --layers
! grep -q '^\*' "$TMP/out" && ! grep -q '^ *[0-9]\*' "$TMP/out" && grep -q "^    0 recurrent_proj " "$TMP/out" \
    && ok "a recurrent prefill prunes nothing: no row marked, no footnote" \
    || bad "recurrent profile" "$(grep -E '^\*|^ +[0-9]' "$TMP/out" | head)"
expect_ok "profile of one position" profile $M -p "" -n 3 --layers
! grep -q '^\*' "$TMP/out" && ! grep -q '^ *[0-9]\*' "$TMP/out" \
    && grep -qxF 'prompt: "\n" (1 character: -p gave an empty prompt)' "$TMP/out" \
    && ok "no pruned rows, no footnote, for a 1-position prompt" \
    || bad "1-position profile" "$(grep -E '^\*|^prompt' "$TMP/out")"
printf 'ab' > "$TMP/prompt.txt"
expect_ok "profile -f" profile $M -f "$TMP/prompt.txt" -n 3
grep -qxF "prompt: the file \"$TMP/prompt.txt\" (-f)" "$TMP/out" && ok "profile names its -f prompt" \
    || bad "profile -f prompt line" "$(sed -n 2p "$TMP/out")"
expect_ok "profile, default prompt" profile -m weights/shakespeare-pre-ln -n 2
king='"KING:\nNow speak, good friend, and tell me true:\nWhat news from Milan?\n"'
grep -qxF "prompt: $king (70 characters, the default)" "$TMP/out" \
    && grep -q "^-- the 3 slowest of 4 layers" "$TMP/out" \
    && [ "$(grep -c '^\* layer 3: from attention on' "$TMP/out")" = 1 ] \
    && ok "profile names its default prompt and shows the 3 slowest of 4 layers" \
    || bad "profile default prompt" "$(grep -E '^prompt|^--|^\*' "$TMP/out")"
expect_ok "profile, default prompt missing from the vocabulary" profile $M -n 2
grep -qxF "prompt: \"\\n\" (1 character: the default's characters are not all in this vocabulary)" "$TMP/out" \
    && ok "profile says when its default prompt did not fit the vocabulary" \
    || bad "default fallback" "$(sed -n 2p "$TMP/out")"
expect_ok "generate plain" generate $M -p "ab" -n 40 --seed 9; cp "$TMP/out" "$TMP/first"
expect_ok "generate --profile" generate $M -p "ab" -n 40 --seed 9 --profile
cmp -s "$TMP/out" "$TMP/first" && ok "--profile leaves stdout byte-identical" || bad "--profile stdout" "differs"
grep -q "^== decode" "$TMP/err" && ok "--profile table on stderr" || bad "--profile table" "$(head -3 "$TMP/err")"
expect_ok "eval --profile" eval $M --text "$TMP/text.txt" --profile
grep -q "^== prefill" "$TMP/err" && ok "eval --profile table on stderr" || bad "eval --profile" "$(head -3 "$TMP/err")"

# ---- compare
expect_ok "compare" compare $FIX/ln-pre-bias.json $FIX/rms-post-bias.json --text "$TMP/text.txt" --repeats 2 \
    --csv "$TMP/cmp.csv"
cp "$TMP/out" "$TMP/cmp.txt"
run compare $FIX/ln-pre-bias.json $FIX/rms-post-bias.json -f "$TMP/text.txt" --repeats 2 --json -o "$TMP/cmp.json"
cp "$TMP/cmp.txt" "$TMP/out"
[ "$(grep -c '^tests/fixtures/' "$TMP/out")" -ge 2 ] && grep -q "bits/char" "$TMP/out" \
    && ok "compare prints a row per model" || bad "compare table" "$(cat "$TMP/out")"
[ "$(head -1 "$TMP/cmp.csv" | cut -d, -f1-4)" = "model,norm,placement,override" ] \
    && [ "$(wc -l < "$TMP/cmp.csv")" -eq 3 ] \
    && ok "compare --csv has a header and a row per model" || bad "compare csv" "$(cat "$TMP/cmp.csv")"
cmp_bits=$(grep -m1 '"bits_per_char"' "$TMP/cmp.json" | sed -n 's/.*"bits_per_char":[[:space:]]*\([0-9.eE+-]*\).*/\1/p')
run eval $M --text "$TMP/text.txt" --json --batch 1  # compare scores one window a call: the same float sums
eval_bits=$(sed -n 's/.*"bits_per_char": \([^,]*\),.*/\1/p' "$TMP/out")
awk -v a="$cmp_bits" -v b="$eval_bits" 'BEGIN { d = a - b; exit !(a > 0 && d * d <= 1e-16 * a * a) }' \
    && ok "compare's bits/char is eval's ($cmp_bits)" || bad "compare bits/char" "compare $cmp_bits eval $eval_bits"
expect_ok "compare --also-swap" compare $FIX/ln-post-bias.json --text "$TMP/text.txt" --repeats 1 --also-swap \
    --json -o "$TMP/swap.json"
[ "$(grep -c '"override":' "$TMP/swap.json")" -eq 4 ] \
    && [ "$(grep -c '"override":[[:space:]]*"norm"' "$TMP/swap.json")" -eq 2 ] \
    && grep -q '"override":[[:space:]]*"placement"' "$TMP/swap.json" \
    && grep -q '"placement":[[:space:]]*"pre"' "$TMP/swap.json" \
    && grep -q '"norm":[[:space:]]*"none"' "$TMP/swap.json" \
    && ok "--also-swap adds the other norm, the other placement and no norm" \
    || bad "--also-swap rows" "$(grep override "$TMP/swap.json")"
expect_ok "compare --invariance" compare $FIX/ln-pre-bias.json --text "$TMP/text.txt" --repeats 1 --invariance
grep -q "scale_0.5" "$TMP/out" && grep -q "shift_1" "$TMP/out" \
    && ok "invariance table printed" || bad "invariance table" "$(tail -4 "$TMP/out")"
expect_fail "compare without models" 2 "give at least one MODEL" compare --text "$TMP/text.txt"
expect_fail "compare without text" 2 "give the text with -f FILE" compare $FIX/ln-pre-bias.json
expect_fail "compare bad model" 1 "/nonexistent: no such model" \
    compare $FIX/ln-pre-bias.json /nonexistent --text "$TMP/text.txt" --json -o "$TMP/bad.json"
[ ! -e "$TMP/bad.json" ] && ok "no half-written compare JSON" || bad "half-written compare JSON" "exists"
expect_fail "compare unknown characters" 1 "U+0009 at position 3" compare $FIX/ln-pre-bias.json --text "$TMP/tab.txt"
expect_fail "compare unwritable json" 2 "output /nonexistent/x.json: its directory cannot be used" \
    compare $FIX/ln-pre-bias.json --text "$TMP/text.txt" --json -o /nonexistent/x.json
# An output whose folder is a regular file, executable or not, is refused before any work.
printf '#!/bin/sh\n' > "$TMP/exe" && chmod +x "$TMP/exe" && printf 'x\n' > "$TMP/plain"
NOT_DIR="its directory cannot be used: Not a directory"
expect_fail "output inside an executable file" 2 "output $TMP/exe/x.json: $NOT_DIR" \
    info $M --json -o "$TMP/exe/x.json"
expect_fail "output inside a plain file" 2 "output $TMP/plain/x.txt: $NOT_DIR" \
    generate $M -p ab -n 2 -s 1 -o "$TMP/plain/x.txt"
if have_python 7 matplotlib; then
    expect_ok "compare --plot-dir" compare $FIX/ln-pre-bias.json $FIX/rms-pre-bias.json --text "$TMP/text.txt" \
        --repeats 1 --plot-dir "$TMP/plots"
    want=""
    for png in bits_per_char residual_rms branch_rms time_share state_norm; do
        [ "$(head -c 4 "$TMP/plots/$png.png" | od -An -c | tr -d ' ')" = "211PNG" ] \
            && ok "$png.png is a PNG" || bad "$png.png" "missing or not PNG"
        want="${want}normlab: wrote $TMP/plots/$png.png
"
    done
    [ "$(cat "$TMP/err")
" = "$want" ] && ok "compare --plot-dir names each plot where it is, on normlab's lines, once in place" \
        || bad "plot lines" "$(cat "$TMP/err")"
fi

# ---- --norm and --placement reach the engine: logits against the naive double reference
# (tests/ref_logits.c, from docs/forward.md), every combination on two fixtures, 1e-4
REF=$(dirname "$(dirname "$BIN")")/build/rel/tests/ref_logits
[ -x "$REF" ] || REF=build/rel/tests/ref_logits
maxdiff() {
    paste -d' ' <(tr -d '[],' < "$1" | tr ' ' '\n' | grep -v '^$') <(tr -d '[],' < "$2" | tr ' ' '\n' | grep -v '^$') |
    awk 'BEGIN { m = 0; n = 0 } { d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d; n++ } END { printf "%g %d", m, n }'
}
for fx in ln-pre-bias rms-post-nobias bn-pre-bias deepnorm nonorm ln-peri-bias; do
    for norm in layernorm rmsnorm none batchnorm:batch batchnorm:running; do
        [ "$norm" = batchnorm:running ] && [ "$fx" != bn-pre-bias ] && continue  # no running statistics
        stats=${norm#*:}; [ "$stats" = "$norm" ] && stats=running
        for place in pre post peri; do
            [ "$norm $place" = "batchnorm:running peri" ] && continue  # none for the output norms either
            "$BIN" logits -m $FIX/$fx.json -p "ab cd" --norm ${norm%:*} --placement $place --bn-stats $stats \
                > "$TMP/got" 2>/dev/null
            "$REF" $FIX/$fx.json ${norm%:*} $place "ab cd" $stats > "$TMP/want"
            read -r d cnt <<< "$(maxdiff "$TMP/got" "$TMP/want")"
            awk -v d="$d" -v c="$cnt" 'BEGIN { exit !(c == 55 && d <= 1e-4) }' \
                && ok "logits of $fx as $norm/$place match the reference ($d)" \
                || bad "override $fx $norm/$place" "max diff $d over $cnt"
        done
    done
done

# ---- engine threads: the same bytes at any thread count, every worker used
awk 'BEGIN { srand(5); for (i = 0; i < 900; i++) printf "%s", substr("ab cd!,.:?\n", int(rand() * 11) + 1, 1) }' \
    > "$TMP/long.txt"
expect_ok "eval 1 thread" eval $M --text "$TMP/long.txt" --json --threads 1 --batch 3; cp "$TMP/out" "$TMP/eval1"
for t in 2 3; do
    expect_ok "eval $t threads" eval $M --text "$TMP/long.txt" --json --threads $t --batch 3 --profile
    cmp -s "$TMP/out" "$TMP/eval1" \
        && ok "eval: same bytes with $t threads" || bad "eval $t threads" "$(cat "$TMP/out") vs $(cat "$TMP/eval1")"
    grep -q "engine threads $t;" "$TMP/err" && grep -q "(each summed over $t threads)" "$TMP/err" \
        && ok "eval --profile sums $t threads" || bad "eval profile threads" "$(grep -E 'engine|summed' "$TMP/err")"
done
expect_ok "eval batch 1" eval $M --text "$TMP/long.txt" --json --threads 1 --batch 1
n1=$(sed -n 's/.*"nats_per_char": \([^,]*\),.*/\1/p' "$TMP/out")
n3=$(sed -n 's/.*"nats_per_char": \([^,]*\),.*/\1/p' "$TMP/eval1")
awk -v a="$n1" -v b="$n3" 'BEGIN { d = a - b; exit !(a > 0 && d * d <= 1e-12 * a * a) }' \
    && ok "eval --batch 1 and 3 agree to 1e-6 relative" || bad "eval batch" "$n1 vs $n3"
expect_fail "batch zero" 2 "--batch must be an integer in [1, 256], got '0'" eval $M --text "$TMP/long.txt" --batch 0
expect_ok "samples 1 thread" generate $M -p "a b" -n 50 --seed 3 --samples 5 --batch 2 --json --threads 1
cp "$TMP/out" "$TMP/s1"
for t in 2 3; do
    expect_ok "samples $t threads" generate $M -p "a b" -n 50 --seed 3 --samples 5 --batch 2 --json --threads $t \
        --profile
    cmp -s <(grep '^{' "$TMP/out") "$TMP/s1" \
        && ok "samples: same bytes with $t threads" || bad "samples $t threads" "outputs differ"
    grep -q "engine threads $t;" "$TMP/err" \
        && ok "samples run on $t engine threads" || bad "samples threads" "$(grep engine "$TMP/err")"
done
expect_ok "compare 1 thread" compare $FIX/ln-pre-bias.json $FIX/rms-post-bias.json --text "$TMP/long.txt" \
    --repeats 1 --also-swap --csv "$TMP/c1.csv"
expect_ok "compare 2 threads" compare $FIX/ln-pre-bias.json $FIX/rms-post-bias.json --text "$TMP/long.txt" \
    --repeats 1 --also-swap --threads 2 --csv "$TMP/c2.csv"
# Model, settings and quality (columns 1-13), batch and cache differences and statistics (23-) do not
# depend on the threads; the speeds and the threads column do.
quality() { cut -d, -f1-13,23- "$1"; }
[ "$(wc -l < "$TMP/c2.csv")" -eq 9 ] && [ "$(quality "$TMP/c1.csv")" = "$(quality "$TMP/c2.csv")" ] \
    && ok "compare rows on 2 threads: same eight rows and quality" \
    || bad "compare threads" "$(quality "$TMP/c1.csv"; quality "$TMP/c2.csv")"
grep -q "rows measured side by side" "$TMP/out" \
    && ok "compare says rows ran side by side" || bad "compare side by side" "$(head -1 "$TMP/out")"

# ---- BatchNorm, no norm, peri-LN and DeepNorm (format version 2)
for f in bn-pre-bias bn-post-nobias bn-peri-bias ln-peri-bias rms-peri-nobias deepnorm nonorm; do
    expect_ok "$f: generate" generate -m $FIX/$f.json -p ab -n 30 -s 1 --no-echo \
        && [ "$(wc -c < "$TMP/out")" -eq 30 ] && ok "$f: 30 characters" || bad "$f: generate" "$(cat "$TMP/out")"
    expect_ok "$f: eval" eval -m $FIX/$f.json --text "$TMP/text.txt" --json
    expect_ok "$f: profile" profile -m $FIX/$f.json -p ab -n 5 --json
done
run info -m $FIX/deepnorm.json --json
grep -q '"placement":"post","residual_scale":1.414' "$TMP/out" && ok "info shows DeepNorm's residual scale" \
    || bad "info residual_scale" "$(head -c 300 "$TMP/out")"
run info -m $FIX/nonorm.json --json
grep -q '"norm":"none","placement":"pre"' "$TMP/out" && ok "info: a norm-free model without placement runs pre" \
    || bad "info nonorm" "$(head -c 300 "$TMP/out")"
# ---- recurrent models (format version 3)
for f in lstm-ln lstm-none gru-ln gru-none; do
    R="-m $FIX/$f.json"
    expect_ok "$f: generate" generate $R -p ab -n 300 -s 1 --no-echo \
        && [ "$(wc -c < "$TMP/out")" -eq 300 ] && ok "$f: 300 characters, with no window to shift" \
        || bad "$f: generate" "$(head -c 100 "$TMP/out")"
    grep -q "context shift" "$TMP/err" && bad "$f: shifts" "$(cat "$TMP/err")" || ok "$f: no context shift reported"
    cp "$TMP/out" "$TMP/rnn1"
    run generate $R -p ab -n 300 -s 1 --no-echo
    cmp -s "$TMP/out" "$TMP/rnn1" && ok "$f: the same seed, the same text" || bad "$f: seed" "outputs differ"
    expect_ok "$f: eval" eval $R --text "$TMP/long.txt" --json
    grep -q '"segments": 1}' "$TMP/out" && ok "$f: eval runs one unbroken state" || bad "$f: eval" "$(cat "$TMP/out")"
    one=$(sed 's/.*"nats_per_char": \([0-9.e-]*\).*/\1/' "$TMP/out")
    expect_ok "$f: eval --segments 4" eval $R --text "$TMP/long.txt" --json --segments 4
    four=$(sed 's/.*"nats_per_char": \([0-9.e-]*\).*/\1/' "$TMP/out")
    [ "$one" != "$four" ] && grep -q '"segments": 4}' "$TMP/out" \
        && ok "$f: four segments lose context, and say so" || bad "$f: segments" "$one vs $four"
    expect_ok "$f: profile" profile $R -p ab -n 5 --json
    for comp in input_proj recurrent_proj rnn_norm gates lm_head; do
        grep -q "\"component\":[[:space:]]*\"$comp\"" "$TMP/out" || bad "$f: profile $comp" "missing"
    done
    grep -q '"component":[[:space:]]*"qkv"' "$TMP/out" && bad "$f: profile" "lists transformer components" \
        || ok "$f: profile lists the recurrent components, not the transformer's"
done
run profile -m $FIX/lstm-ln.json -p "$(head -c 100 "$TMP/long.txt")" -n 5 --trace "$TMP/rnn-trace.json"
[ "$rc" -eq 0 ] && grep -q '"name": "layer 2"' "$TMP/rnn-trace.json" \
    && grep -q '"name": "gates"' "$TMP/rnn-trace.json" \
    && ok "rnn profile --trace holds a 100-character prompt's events, layers included" \
    || bad "rnn trace" "$(cat "$TMP/err")"
mkdir -p "$TMP/models" && cp $FIX/lstm-ln.json $FIX/ln-pre-bias.json "$TMP/models/"
NORMLAB_MODELS="$TMP/models" "$BIN" list --json > "$TMP/out" 2>/dev/null
grep -q '"name":"lstm-ln","path":"[^"]*","norm":"layernorm","arch":"lstm","placement":null' "$TMP/out" \
    && grep -q '"arch":"transformer","placement":"pre"' "$TMP/out" \
    && ok "list --json: a recurrent model has an arch and no placement" || bad "rnn list" "$(head -c 300 "$TMP/out")"
head -c 300 "$TMP/long.txt" > "$TMP/text300.txt"
expect_ok "rnn logits of 300 characters" logits -m $FIX/gru-ln.json -f "$TMP/text300.txt"
[ "$(wc -l < "$TMP/out")" -eq 300 ] && ok "rnn logits: a line per position, past one chunk" \
    || bad "rnn logits" "$(wc -l < "$TMP/out") lines"
run info -m $FIX/lstm-ln.json --json
grep -q '"arch":"lstm"' "$TMP/out" && grep -q '"n_hidden":5' "$TMP/out" && grep -q '"state_bytes":120' "$TMP/out" \
    && ! grep -q block_size "$TMP/out" && ok "info shows the recurrent config and state size" \
    || bad "rnn info" "$(head -c 400 "$TMP/out")"
expect_ok "rnn --norm none" generate -m $FIX/lstm-ln.json -p ab -n 5 --norm none
grep -q "trained as lstm/layernorm; running it as lstm/none" "$TMP/err" \
    && ok "running an LN-LSTM without its norms warns" || bad "rnn norm warning" "$(cat "$TMP/err")"
expect_fail "rnn placement" 2 "a placement applies to transformers, not to this recurrent (gru) model" \
    generate -m $FIX/gru-ln.json -p ab --placement post
expect_fail "rnn rmsnorm" 2 "a recurrent (lstm) model runs with norm layernorm or none, not rmsnorm" \
    eval -m $FIX/lstm-ln.json --text "$TMP/text.txt" --norm rmsnorm
expect_fail "rnn stride" 2 "--stride applies to transformers' windows" eval -m $FIX/gru-none.json \
    --text "$TMP/text.txt" --stride 4
expect_fail "rnn batch" 2 "--batch applies to transformers' windows" eval -m $FIX/gru-none.json \
    --text "$TMP/text.txt" --batch 4
expect_fail "transformer segments" 2 "--segments applies to recurrent (lstm, gru) models" eval $M \
    --text "$TMP/text.txt" --segments 4
expect_fail "rnn exact window" 2 "--exact-window applies to transformers" generate -m $FIX/lstm-none.json -p ab \
    --exact-window
expect_fail "segments past the text" 2 "segments" eval -m $FIX/lstm-none.json --text "$TMP/text.txt" --segments 99
expect_ok "compare transformers and recurrent models" compare $FIX/ln-pre-bias.json $FIX/lstm-ln.json \
    $FIX/gru-none.json --text "$TMP/long.txt" --repeats 1 --also-swap --json -o "$TMP/mixed.json"
/usr/bin/python3 - "$TMP/mixed.json" <<'PY' && ok "compare: transformer and recurrent rows in one table" \
    || bad "mixed compare" "$(head -c 400 "$TMP/mixed.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
runs = [(r["arch"], r["norm"], r["override"]) for r in rows]
assert ("lstm", "layernorm", "none") in runs and ("lstm", "none", "norm") in runs, runs
assert ("gru", "none", "none") in runs and ("transformer", "layernorm", "none") in runs, runs
lstm = [r for r in rows if r["arch"] == "lstm"][0]
assert lstm["placement"] is None and len(lstm["state_norm_h"]) == len(lstm["state_bucket_start"]) >= 8, lstm
assert len(lstm["state_norm_c"]) == len(lstm["state_norm_h"]) and "invariance" not in lstm
PY
run profile -m $FIX/ln-peri-bias.json -p ab -n 5
[ "$(grep -c ' norm1_post ' "$TMP/out")" -ge 2 ] && grep -q ' norm2_post ' "$TMP/out" \
    && ok "profile of peri-LN times its output norms" || bad "peri profile" "$(grep norm "$TMP/out" | head)"
expect_fail "bad --bn-stats" 2 "--bn-stats must be running or batch (any case), got 'mean'" \
    eval $M --text "$TMP/text.txt" --bn-stats mean
expect_fail "--norm batchnorm without running statistics" 2 \
    "needs tensor \"h.0.ln_1.running_mean\", which this layernorm model lacks; use batch statistics" \
    generate $M -p ab -n 1 --norm batchnorm
expect_fail "batchnorm/peri without running statistics for the output norms" 2 "h.0.ln_1_post.running_mean" \
    logits -m $FIX/bn-pre-bias.json -p ab --placement peri
expect_ok "--norm batchnorm --bn-stats batch runs a LayerNorm model" \
    logits $M -p "abcd!" --norm batchnorm --bn-stats batch
[ "$(wc -l < "$TMP/out")" -eq 5 ] && grep -q "running it as batchnorm/pre" "$TMP/err" \
    && ok "batch statistics on a LayerNorm model: 5 rows and a warning" || bad "bn batch override" "$(cat "$TMP/err")"
run logits $M -p "abcd!"; cp "$TMP/out" "$TMP/ln.jl"
run logits $M -p "abcd!" --norm none
[ "$rc" -eq 0 ] && ! cmp -s "$TMP/out" "$TMP/ln.jl" && grep -q "running it as none/pre" "$TMP/err" \
    && ok "--norm none removes the norms (other logits, a warning)" || bad "--norm none" "$(cat "$TMP/err")"
run logits -m $FIX/bn-pre-bias.json -p "abcd!"; cp "$TMP/out" "$TMP/run.jl"
run logits -m $FIX/bn-pre-bias.json -p "abcd!" --bn-stats batch
[ "$rc" -eq 0 ] && ! cmp -s "$TMP/out" "$TMP/run.jl" && ok "--bn-stats batch changes a BatchNorm model's logits" \
    || bad "--bn-stats batch" "$(cat "$TMP/err")"
expect_fail "--bn-stats both is for compare" 2 "--bn-stats must be running or batch (any case), got 'both'" \
    eval -m $FIX/bn-pre-bias.json --text "$TMP/text.txt" --bn-stats both
expect_ok "compare --bn-stats both" compare $FIX/bn-pre-bias.json $FIX/ln-peri-bias.json --text "$TMP/long.txt" \
    --repeats 1 --also-swap --bn-stats both --json -o "$TMP/bn.json"
/usr/bin/python3 - "$TMP/bn.json" <<'PY' && ok "compare: BatchNorm rows with both statistics; batch ones couple rows" \
    || bad "compare --bn-stats both" "$(head -c 600 "$TMP/bn.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
bn = [(r["placement"], r["bn_stats"], r["batch16_max_logit_diff"], r["cache_max_logit_diff"])
      for r in rows if r["norm"] == "batchnorm"]
peri = [r for r in rows if r["model"].endswith("ln-peri-bias.json") and r["override"] == "none"][0]
assert len(rows) == 10, len(rows)  # bn: as, layernorm, post, none + batch twice; peri: as, rmsnorm, pre, none
assert sorted((p, s) for p, s, _, _ in bn) == [("post", "batch"), ("post", "running"), ("pre", "batch"),
                                                ("pre", "running")], bn
assert all((d > 1e-3) == (s == "batch") for _, s, d, _ in bn), bn  # batch16: only batch statistics couple rows
assert all(c > 1e-3 for _, s, _, c in bn if s == "batch"), bn  # one-row decoding steps degenerate
assert len(peri["norm_post_std"]) == 2 and len(peri["norm_std"]) == 3 and len(peri["branch_rms"]) == 2, peri
PY

# Loader checks of version 2, on fixtures changed one thing at a time (each must name its problem).
mutate() {  # mutate NAME FIXTURE PYTHON: writes $TMP/NAME.json from the fixture, changed by PYTHON (d is the doc)
    /usr/bin/python3 -c "import json,sys; d=json.load(open('$FIX/$2.json')); $3; json.dump(d, open('$TMP/$1.json','w'))"
}
mutate no-var bn-pre-bias 'del d["tensors"]["h.0.ln_1.running_var"]'
expect_fail "batchnorm without running_var" 1 'missing tensor "h.0.ln_1.running_var"' info -m "$TMP/no-var.json"
mutate neg-var bn-pre-bias 'd["tensors"]["h.1.ln_2.running_var"]["data"][3] = -0.5'
expect_fail "negative running variance" 1 'tensor "h.1.ln_2.running_var" has a negative variance (-0.5) at index 3' \
    info -m "$TMP/neg-var.json"
mutate pre-alpha ln-peri-bias 'd["config"]["placement"] = "pre"; d["config"]["residual_scale"] = 2
[d["tensors"].pop(k) for k in list(d["tensors"]) if "_post" in k]'
expect_fail "residual_scale with pre" 1 '"residual_scale" is allowed with placement "post" only' \
    info -m "$TMP/pre-alpha.json"
mutate zero-alpha deepnorm 'd["config"]["residual_scale"] = 0'
expect_fail "residual_scale 0" 1 '"residual_scale" = 0 is outside [0.001, 1000]' info -m "$TMP/zero-alpha.json"
mutate none-post nonorm 'd["config"]["placement"] = "post"'
expect_fail "norm none with post" 1 'norm "none" needs placement "pre"' info -m "$TMP/none-post.json"
mutate none-extra nonorm 'd["tensors"]["h.0.ln_1.weight"] = {"shape": [12], "data": [1.0] * 12}'
expect_fail "norm none with a norm tensor" 1 'unexpected tensor "h.0.ln_1.weight"' info -m "$TMP/none-extra.json"
mutate peri-missing ln-peri-bias 'del d["tensors"]["h.1.ln_2_post.bias"]'
expect_fail "peri without an output norm's bias" 1 'missing tensor "h.1.ln_2_post.bias"' \
    info -m "$TMP/peri-missing.json"
mutate pre-extra ln-pre-bias 'd["tensors"]["h.0.ln_1_post.weight"] = {"shape": [12], "data": [1.0] * 12}'
expect_fail "pre with an output norm" 1 'unexpected tensor "h.0.ln_1_post.weight"' info -m "$TMP/pre-extra.json"
mutate ln-stats ln-pre-bias 'd["tensors"]["h.0.ln_1.running_mean"] = {"shape": [12], "data": [0.0] * 12}'
expect_fail "layernorm with running statistics" 1 'unexpected tensor "h.0.ln_1.running_mean"' \
    info -m "$TMP/ln-stats.json"
mutate big-loss ln-pre-untied 'w = d["tensors"]["lm_head.weight"]; w["data"] = [v * 2000 for v in w["data"]]'
run eval -m "$TMP/big-loss.json" --text "$TMP/text.txt" --json
/usr/bin/python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); assert d["nats_per_char"] > 709, d
assert d["perplexity"] is None and d["perplexity_stderr"] is None, d' "$TMP/out" \
    && ok "eval --json stays JSON when perplexity overflows (null)" \
    || bad "eval json inf" "$(cat "$TMP/out" "$TMP/err")"
# a BatchNorm post model run as pre lacks running statistics for ln_f: compare runs that row with batch
# statistics only (with --bn-stats running it is left out), and never fails on it
expect_ok "compare --also-swap of a BatchNorm post model" compare $FIX/bn-post-nobias.json --text "$TMP/text.txt" \
    --repeats 1 --also-swap --bn-stats both --json -o "$TMP/bnpost.json"
/usr/bin/python3 - "$TMP/bnpost.json" <<'PY' && ok "its pre row runs with batch statistics only" \
    || bad "bn post swap rows" "$(head -c 400 "$TMP/bnpost.json")"
import json, sys
rows = [(r["norm"], r["placement"], r.get("bn_stats")) for r in json.load(open(sys.argv[1]))]
assert sorted(rows, key=str) == sorted([("batchnorm", "post", "running"), ("layernorm", "post", None),
                                        ("batchnorm", "pre", "batch"), ("none", "post", None),
                                        ("batchnorm", "post", "batch")], key=str), rows
PY
mutate peri4 ln-peri-bias 'd["config"]["n_layer"] = 4
d["tensors"].update({k.replace("h.0.", "h.2.").replace("h.1.", "h.3."): v for k, v in list(d["tensors"].items())
                     if k.startswith("h.")})'
expect_ok "profile --trace of a 4-layer peri model" profile -m "$TMP/peri4.json" -p ab -n 200 --trace "$TMP/peri.json"
grep -q '"norm2_post"' "$TMP/peri.json" && ok "the trace holds peri's output norms" || bad "peri trace" "no norm2_post"

# ---- OpenBLAS kernel family (docs/performance.md)
expect_ok "info json" info $M --json
blas_re='"blas_core":"[A-Za-z0-9_]+","blas_core_source":"(openblas|environment)",'
blas_re=$blas_re'"blas_core_openblas":"[A-Za-z0-9_]+"'
grep -qE "$blas_re" "$TMP/out" \
    && ok "info names the kernel family and who chose it" || bad "info blas" "$(cat "$TMP/out")"
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { case " $flags " in *" $1 "*) return 0;; esac; return 1; }
want=""
if has avx512f && has avx512bw && has avx512vl && has avx512dq && has avx2 && has fma; then want=SkylakeX
elif has avx2 && has fma; then want=Haswell; fi
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
    # Set by the environment: normlab must run it as it is, even when OpenBLAS "fell back".
    NORMLAB_BLAS_PRETEND=Prescott "$BIN" info $M --json > "$TMP/out" 2>&1
    grep -q '"blas_core_source":"environment"' "$TMP/out" \
        && ok "a set OPENBLAS_CORETYPE is left alone" || bad "env left alone" "$(cat "$TMP/out")"
else
    # Unset here: the fallback is simulated, and normlab restarts itself on the family the CPU supports.
    NORMLAB_BLAS_PRETEND=Prescott "$BIN" info $M --json > "$TMP/out" 2>&1
    if [ -n "$want" ]; then
        grep -q "\"blas_core\":\"$want\",\"blas_core_source\":\"normlab\",\"blas_core_openblas\":\"Prescott\"" \
            "$TMP/out" \
            && ok "after a fallback normlab restarts on $want" || bad "restart on $want" "$(cat "$TMP/out")"
    else
        grep -q '"blas_core_source":"openblas"' "$TMP/out" \
            && ok "no wider family to pick" || bad "no pick" "$(cat "$TMP/out")"
    fi
    NORMLAB_BLAS_AUTO=0 NORMLAB_BLAS_PRETEND=Prescott "$BIN" info $M --json > "$TMP/out" 2>&1
    grep -q "\"blas_core\":\"$core\",\"blas_core_source\":\"openblas\"" "$TMP/out" \
        && ok "NORMLAB_BLAS_AUTO=0 opts out" || bad "opt-out" "$(cat "$TMP/out")"
    # A set variable is left alone. Set to the family OpenBLAS picks here anyway, for this one command,
    # so that no test runs on other kernels than the environment's.
    OPENBLAS_CORETYPE=$core NORMLAB_BLAS_PRETEND=Prescott "$BIN" info $M --json > "$TMP/out" 2>&1
    grep -q "\"blas_core\":\"$core\",\"blas_core_source\":\"environment\"" "$TMP/out" \
        && ok "a set OPENBLAS_CORETYPE is left alone" || bad "env left alone" "$(cat "$TMP/out")"
fi
NORMLAB_BLAS_PRETEND=Prescott "$BIN" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --no-echo \
    > "$TMP/out" 2>/dev/null
cmp -s "$TMP/out" "$TMP/sampled" && ok "a restarted run prints the same text" || bad "restarted run" "outputs differ"

# ---- JSON, lookup and standard streams (the command line)
# strict_json FILE EXPR: FILE is UTF-8, decoded strictly, and one JSON value whose objects have no
# repeated key; EXPR, Python of the value d, holds. Prints what failed.
strict_json() {
    /usr/bin/python3 -c '
import json, sys
def pairs(kv):
    keys = [k for k, _ in kv]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        sys.exit("repeated keys %s" % dup)
    return dict(kv)
try:
    d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", "strict"), object_pairs_hook=pairs)
except ValueError as e:
    sys.exit("not strict JSON: %s" % e)
sys.exit(0 if eval(sys.argv[2]) else "%s is false of %r" % (sys.argv[2], d))' "$1" "$2" 2>&1 | head -c 400
    return "${PIPESTATUS[0]}"
}
# A name with a stray byte, an overlong '/', a surrogate and a code point above U+10FFFF: ten bytes
# that are not UTF-8, each one U+FFFD in JSON.
BADN=$(printf 'm\377\300\257\355\240\200\364\220\200\200')
FFFD='"m" + "\ufffd" * 10 + ".json"'
mkdir -p "$TMP/badname" && cp $FIX/ln-pre-bias.json "$TMP/badname/$BADN.json"
NORMLAB_MODELS="$TMP/badname" "$BIN" list --json > "$TMP/j.json" 2>/dev/null
why=$(strict_json "$TMP/j.json" "d[0]['name'] + '.json' == $FFFD and d[0]['path'].endswith('/' + $FFFD)") \
    && ok "list --json writes each byte that is not UTF-8 as U+FFFD" || bad "list --json utf-8" "$why"
# utf8_json LABEL EXPR COMMAND...: COMMAND writes "$TMP/j.json" (an OUT in its arguments), which must
# parse as strict UTF-8 JSON with EXPR true.
utf8_json() {
    label=$1 expr=$2; shift 2
    "$@" > "$TMP/j.out" 2>/dev/null
    [ -s "$TMP/j.json" ] || cp "$TMP/j.out" "$TMP/j.json"
    why=$(strict_json "$TMP/j.json" "$expr") && ok "$label writes each byte that is not UTF-8 as U+FFFD" \
        || bad "$label utf-8" "$why"
    rm -f "$TMP/j.json"
}
rm -f "$TMP/j.json"
utf8_json "info --json" "d['model'].endswith('/' + $FFFD)" "$BIN" info -m "$TMP/badname/$BADN.json" --json
utf8_json "profile --trace" "d['otherData']['model'].endswith('/' + $FFFD)" \
    "$BIN" profile -m "$TMP/badname/$BADN.json" -n 2 --trace "$TMP/j.json"
utf8_json "profile --json" "d['model'].endswith('/' + $FFFD)" "$BIN" profile -m "$TMP/badname/$BADN.json" -n 2 --json
utf8_json "compare --json" "d[0]['model'].endswith('/' + $FFFD)" \
    "$BIN" compare "$TMP/badname/$BADN.json" -f "$TMP/short.txt" --repeats 1 --json

# A directory model whose metadata has both losses (train.py's final_val_loss, nanoGPT's
# best_val_loss) and a value that is not UTF-8.
mkdir -p "$TMP/losses/both" && cp weights/shakespeare-pre-ln/config.json weights/shakespeare-pre-ln/tokenizer.json \
    "$TMP/losses/both/"
/usr/bin/python3 - weights/shakespeare-pre-ln/model.safetensors "$TMP/losses/both/model.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
head["__metadata__"].update({"final_val_loss": "1.5", "best_val_loss": "1.25", "note": "@", "neg": "-0.5e3",
                             "zeros": "007", "hash": "1234abcd", "cut": "1e", "big": "123456789012345678901234567890"})
text = json.dumps(head).encode().replace(b'"@"', b'"\xff\xfe"')
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
NORMLAB_MODELS="$TMP/losses" "$BIN" list --json > "$TMP/j.json" 2>/dev/null
why=$(strict_json "$TMP/j.json" "d[0]['name'] == 'both' and d[0]['val_loss'] == 1.5 and \
d[0]['val_loss_by'] == 'train.py'") \
    && ok "list --json: one val_loss (train.py's) when the metadata has both" || bad "list unique keys" "$why"
NORMLAB_MODELS="$TMP/losses" "$BIN" list > "$TMP/out" 2>/dev/null
head -1 "$TMP/out" | grep -q "est. val bits/char (by)" && grep -q "^both .* 2.1640 (train.py) " "$TMP/out" \
    && ok "list: the loss column says its unit and whose estimate each value is" \
    || bad "list header" "$(cat "$TMP/out")"
"$BIN" info -m "$TMP/losses/both" --json > "$TMP/j.json" 2>/dev/null
why=$(strict_json "$TMP/j.json" "d['metadata']['note'] == '\ufffd\ufffd'") \
    && ok "info --json: a metadata value that is not UTF-8 comes out as U+FFFD" || bad "info metadata utf-8" "$why"
why=$(strict_json "$TMP/j.json" "d['metadata']['neg'] == -500 and d['metadata']['final_val_loss'] == 1.5 and \
d['metadata']['big'] == 123456789012345678901234567890 and \
[d['metadata'][k] for k in ('zeros', 'hash', 'cut')] == ['007', '1234abcd', '1e']") \
    && ok "info --json: metadata numbers are numbers, digit for digit; other values stay strings" \
    || bad "info metadata numbers" "$why"

# More entries in one folder than any fixed buffer would hold: 1,101 that do not load, then a model
# named to sort last.
mkdir -p "$TMP/many" && (cd "$TMP/many" && for i in $(seq 1000 2100); do : > "e$i.json"; done)
cp $FIX/ln-pre-bias.json "$TMP/many/zzz.json"
NORMLAB_MODELS="$TMP/many" "$BIN" list --json > "$TMP/j.json" 2>/dev/null
why=$(strict_json "$TMP/j.json" \
    "len([m for m in d if '/many/' in m['path']]) == 1102 and d[1101]['name'] == 'zzz' and 'error' not in d[1101]") \
    && ok "list sees every entry of a folder of 1,102" || bad "list every entry" "$why"

# A search path longer than any fixed buffer: 700 folders that do not exist, then one that holds
# the model.
mkdir -p "$TMP/far" && cp $FIX/deepnorm.json "$TMP/far/far-model.json"
long=$(printf '/nonexistent/%04d:' $(seq 1 700))
NORMLAB_MODELS="$long$TMP/far" run info -m far-model --json
[ "$rc" -eq 0 ] && grep -qF "\"model\":\"$TMP/far/far-model.json\"" "$TMP/out" \
    && ok "a search path of 12,600 bytes finds a model in its last folder" || bad "long search path" "$(cat "$TMP/err")"
NORMLAB_MODELS="$long$TMP/far" "$BIN" list > "$TMP/out" 2>/dev/null
grep -q "^far-model " "$TMP/out" && ok "list reads a search path of 12,600 bytes to its end" \
    || bad "list long search path" "$(head -c 300 "$TMP/out")"
# A first folder whose path is too long for the system holds the model too: an error, not the
# second folder's model of that name.
deep="$TMP/far"; for i in $(seq 2100); do deep="$deep/."; done
mkdir -p "$TMP/far2" && cp $FIX/ln-pre-bias.json "$TMP/far2/far-model.json"
NORMLAB_MODELS="$deep:$TMP/far2" run info -m far-model --json
[ "$rc" -ne 0 ] && [ ! -s "$TMP/out" ] && grep -q "path too long" "$TMP/err" \
    && ok "a folder too long to search is an error, not the next folder's model" \
    || bad "too long to search" "exit $rc: $(head -c 200 "$TMP/out") $(cat "$TMP/err")"

# -m NAME: the search path first, the working folder only when the name is found nowhere in it.
mkdir -p "$TMP/search" "$TMP/cwd" && cp $FIX/deepnorm.json "$TMP/search/twin.json"
ln -sf "$PWD/weights/shakespeare-pre-ln" "$TMP/cwd/twin" && cp $FIX/lstm-ln.json "$TMP/cwd/here.json"
BINABS=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
(cd "$TMP/cwd" && NORMLAB_MODELS="$TMP/search" "$BINABS" info -m twin --json) > "$TMP/out" 2>"$TMP/err"
grep -qF "\"model\":\"$TMP/search/twin.json\"" "$TMP/out" && grep -q '"n_layer":2,' "$TMP/out" \
    && ok "-m NAME loads the search path's model before the working folder's" \
    || bad "lookup order" "$(head -c 200 "$TMP/out") $(cat "$TMP/err")"
(cd "$TMP/cwd" && NORMLAB_MODELS="$TMP/search" "$BINABS" list) > "$TMP/out" 2>/dev/null
grep -q "^twin .*$TMP/search/twin.json" "$TMP/out" && ok "list shows the model -m NAME loads" \
    || bad "list and lookup" "$(head -c 300 "$TMP/out")"
(cd "$TMP/cwd" && NORMLAB_MODELS="$TMP/badname" "$BINABS" info -m twin --json) > "$TMP/out" 2>"$TMP/err"
grep -q '"model":"twin"' "$TMP/out" && grep -q '"n_layer":4,' "$TMP/out" \
    && ok "-m NAME found nowhere in the search path is a path in the working folder" \
    || bad "working folder fallback" "$(head -c 200 "$TMP/out") $(cat "$TMP/err")"
(cd "$TMP/cwd" && NORMLAB_MODELS="$TMP/search" "$BINABS" info -m here.json --json) > "$TMP/out" 2>"$TMP/err"
grep -q '"model":"here.json","arch":"lstm"' "$TMP/out" && ok "-m FILE.json in the working folder still loads" \
    || bad "-m FILE.json" "$(head -c 200 "$TMP/out") $(cat "$TMP/err")"
# The default model is never taken from the working folder: a binary with no weights/ beside it, run
# where a folder shakespeare-pre-ln is, finds no default; naming that folder loads it.
mkdir -p "$TMP/lonely/bin" && cp "$BINABS" "$TMP/lonely/bin/normlab" && cp -r "$TMP/cwd" "$TMP/lonely/cwd"
cp $FIX/lstm-ln.json "$TMP/lonely/cwd/shakespeare-pre-ln.json"
(cd "$TMP/lonely/cwd" && env -u NORMLAB_MODEL NORMLAB_MODELS="$TMP/badname" ../bin/normlab info --json) \
    > "$TMP/out" 2> "$TMP/err"; rc=$?
[ "$rc" -eq 1 ] && [ ! -s "$TMP/out" ] && grep -q "shakespeare-pre-ln: no such model" "$TMP/err" \
    && ok "the default model is not looked for in the working folder" \
    || bad "default from the working folder" "exit $rc: $(head -c 200 "$TMP/out") $(cat "$TMP/err")"
(cd "$TMP/lonely/cwd" && NORMLAB_MODELS="$TMP/badname" ../bin/normlab info -m shakespeare-pre-ln.json --json) \
    > "$TMP/out" 2> "$TMP/err"
grep -q '"arch":"lstm"' "$TMP/out" && ok "...but a name the user gives is" || bad "given name" "$(cat "$TMP/err")"

# Closed standard streams: a result meant for a closed stdout, or a text read from a closed stdin,
# is an error before any work, not a silent success.
CLOSED_OUT="normlab: cannot write to standard output: it is closed"
CLOSED_IN="normlab: -: cannot read standard input: it is closed"
# closed CODE MESSAGE NAME ARGS...: exit CODE and the one-line MESSAGE, with stdout and stdin closed
# as the caller's redirection says (run through closed_out / closed_in).
closed() {
    local name=$1 want=$2 redir=$3; shift 3
    case $redir in
        out) "$BIN" "$@" >&- 2>"$TMP/err"; rc=$? ;;
        in) "$BIN" "$@" <&- >"$TMP/out" 2>"$TMP/err"; rc=$? ;;
    esac
    if [ "$rc" -eq 1 ] && [ "$(cat "$TMP/err")" = "$want" ]; then ok "$name"
    else bad "$name" "exit $rc: $(head -c 300 "$TMP/err")"; fi
}
closed "info, stdout closed" "$CLOSED_OUT" out info $M
closed "info --json, stdout closed" "$CLOSED_OUT" out info $M --json
closed "list, stdout closed" "$CLOSED_OUT" out list
closed "logits, stdout closed" "$CLOSED_OUT" out logits $M -p ab
closed "eval, stdout closed" "$CLOSED_OUT" out eval $M -f "$TMP/short.txt"
closed "compare, stdout closed" "$CLOSED_OUT" out compare $FIX/ln-pre-bias.json -f "$TMP/short.txt" --repeats 1
closed "profile, stdout closed" "$CLOSED_OUT" out profile $M -n 2
closed "profile --trace -, stdout closed" "$CLOSED_OUT" out profile $M -n 2 -o "$TMP/p.txt" --trace -
closed "generate, stdout closed" "$CLOSED_OUT" out generate $M -n 2 -s 1
closed "--help, stdout closed" "$CLOSED_OUT" out --help
closed "--version, stdout closed" "$CLOSED_OUT" out --version
closed "help generate, stdout closed" "$CLOSED_OUT" out help generate
closed "generate -f -, stdin closed" "$CLOSED_IN" in generate $M -f - -n 2 -s 1
closed "logits -f -, stdin closed" "$CLOSED_IN" in logits $M -f -
closed "profile -f -, stdin closed" "$CLOSED_IN" in profile $M -f - -n 2
closed "eval --text -, stdin closed" "$CLOSED_IN" in eval $M --text -
closed "compare -f -, stdin closed" "$CLOSED_IN" in compare $FIX/ln-pre-bias.json -f - --repeats 1
# A standard input that cannot be read (a directory; a descriptor open only for writing) is named with
# the system's reason.
NO_STDIN="normlab: -: cannot read standard input"
mkdir -p "$TMP/stdin-dir"
"$BIN" generate $M -f - -n 2 -s 1 < "$TMP/stdin-dir" > "$TMP/out" 2> "$TMP/err"; rc=$?
[ "$rc" -eq 1 ] && [ ! -s "$TMP/out" ] && [ "$(cat "$TMP/err")" = "$NO_STDIN: Is a directory" ] \
    && ok "-f - with a directory on stdin: the reason, exit 1" || bad "stdin a directory" "exit $rc: $(cat "$TMP/err")"
"$BIN" eval $M --text - 0> "$TMP/write-only" > "$TMP/out" 2> "$TMP/err"; rc=$?
[ "$rc" -eq 1 ] && [ ! -s "$TMP/out" ] && [ "$(cat "$TMP/err")" = "$NO_STDIN: Bad file descriptor" ] \
    && ok "--text - with a write-only stdin: the reason, exit 1" || bad "stdin write-only" "exit $rc: $(cat "$TMP/err")"
NORMLAB_BLAS_PRETEND=Prescott "$BIN" info $M >&- 2>"$TMP/err"; rc=$?  # restarts on wider kernels where it can
[ "$rc" -eq 1 ] && [ "$(cat "$TMP/err")" = "$CLOSED_OUT" ] \
    && ok "a closed stdout is still known after normlab restarts itself" \
    || bad "closed, restarted" "exit $rc: $(cat "$TMP/err")"
"$BIN" info $M --json -o "$TMP/info.json" >&- 2>"$TMP/err"; rc=$?
[ "$rc" -eq 0 ] && [ ! -s "$TMP/err" ] && grep -q '"n_layer":2' "$TMP/info.json" \
    && ok "-o FILE works with stdout closed: the result does not need it" \
    || bad "-o with stdout closed" "exit $rc: $(cat "$TMP/err")"
"$BIN" generate $M -p ab -n 3 -s 1 -o "$TMP/gen3.txt" <&- >&- 2>"$TMP/err"; rc=$?
[ "$rc" -eq 0 ] && [ "$(wc -m < "$TMP/gen3.txt")" -eq 5 ] \
    && ok "generate -p -o FILE works with stdin and stdout closed" \
    || bad "closed, not needed" "exit $rc: $(cat "$TMP/err")"

# ---- generate with several models (-m repeated): the same prompt, seed and dice through each
# blocks FILE PREFIX: the blocks of a several-model text output, PREFIX.h its header lines and PREFIX.1,
# PREFIX.2, ... what each block printed after its header (the prompt, the text and the block's newline).
blocks() {
    rm -f "$2".*
    awk -v p="$2" '/^=== .* ===$/ { n++; print > (p ".h"); next } { printf "%s\n", $0 > (p "." n) }' "$1"
}
# single FILE ARGS...: a single-model run's stdout, with the newline that ends a block, into FILE
single() { local f=$1; shift; { "$BIN" "$@" 2>/dev/null; echo; } > "$f"; }
PRE=weights/shakespeare-pre-ln POST=weights/shakespeare-post-ln
mkdir -p "$TMP/twin1" "$TMP/twin2"
cp "$PRE"/config.json "$PRE"/tokenizer.json "$PRE"/model.safetensors "$TMP/twin1/"
cp "$PRE"/config.json "$PRE"/tokenizer.json "$PRE"/model.safetensors "$TMP/twin2/"
# (a) one model in two folders: identical weights and the same random numbers give identical blocks
expect_ok "two -m of one model" generate -m "$TMP/twin1" -m "$TMP/twin2" -p "ROMEO:" -n 120 -s 11 --temperature 1.2
blocks "$TMP/out" "$TMP/tw"
[ "$(cat "$TMP/tw.h")" = "=== $TMP/twin1 (layernorm/pre) ===
=== $TMP/twin2 (layernorm/pre) ===" ] && [ ! -e "$TMP/tw.3" ] \
    && ok "a header per model, naming it and its run, in the order given" || bad "twin headers" "$(cat "$TMP/out")"
[ "$(head -c 6 "$TMP/tw.1")" = "ROMEO:" ] && [ "$(wc -m < "$TMP/tw.1")" -eq 127 ] && cmp -s "$TMP/tw.1" "$TMP/tw.2" \
    && ok "identical weights, the same seed, temperature 1.2: byte-identical blocks" \
    || bad "twin blocks" "$(cat "$TMP/out")"
expect_ok "two -m of one model, another seed" generate -m "$TMP/twin1" -m "$TMP/twin2" -p "ROMEO:" -n 120 -s 12 \
    --temperature 1.2
blocks "$TMP/out" "$TMP/tw12"
cmp -s "$TMP/tw12.1" "$TMP/tw12.2" && ! cmp -s "$TMP/tw12.1" "$TMP/tw.1" \
    && ok "another seed: other text, still the same in both" || bad "twin, seed 12" "$(cat "$TMP/out")"
# (b) two shipped models: each block is what a single run with that seed prints
expect_ok "pre-ln and post-ln" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 80 -s 7 --top-k 20
blocks "$TMP/out" "$TMP/pp"
single "$TMP/pre1" generate -m "$PRE" -p "ROMEO:" -n 80 -s 7 --top-k 20
single "$TMP/post1" generate -m "$POST" -p "ROMEO:" -n 80 -s 7 --top-k 20
[ "$(cat "$TMP/pp.h")" = "=== $PRE (layernorm/pre) ===
=== $POST (layernorm/post) ===" ] && ok "the headers name pre and post" || bad "pre/post headers" "$(cat "$TMP/pp.h")"
cmp -s "$TMP/pp.1" "$TMP/pre1" && cmp -s "$TMP/pp.2" "$TMP/post1" && ! cmp -s "$TMP/pp.1" "$TMP/pp.2" \
    && ok "each model's block equals its single run with the same seed (and the two differ)" \
    || bad "blocks against single runs" "$(cat "$TMP/out")"
[ "$(grep -c "^normlab: $PRE: prefill 6 tokens" "$TMP/err")" -eq 1 ] \
    && [ "$(grep -c "^normlab: $POST: prefill 6 tokens" "$TMP/err")" -eq 1 ] \
    && ok "a timing line per model, naming it" || bad "timing per model" "$(cat "$TMP/err")"
expect_ok "several models, --no-echo" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 80 -s 7 --top-k 20 --no-echo
blocks "$TMP/out" "$TMP/ne"
single "$TMP/pre1" generate -m "$PRE" -p "ROMEO:" -n 80 -s 7 --top-k 20 --no-echo
cmp -s "$TMP/ne.1" "$TMP/pre1" && [ "$(head -c 6 "$TMP/ne.1")" != "ROMEO:" ] \
    && ok "--no-echo: the blocks without the prompt" || bad "several, --no-echo" "$(cat "$TMP/out")"
expect_ok "several models, -o FILE" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 80 -s 7 --top-k 20 -o "$TMP/pp.txt"
blocks "$TMP/pp.txt" "$TMP/po"
[ ! -s "$TMP/out" ] && cmp -s "$TMP/po.1" "$TMP/pp.1" && cmp -s "$TMP/po.2" "$TMP/pp.2" \
    && ok "several models, -o FILE holds every block" || bad "several, -o" "$(cat "$TMP/pp.txt")"
# (c) --json: one object per model, the single run's object with "model" and "run"
expect_ok "several models --json" generate -m "$PRE" -m "$POST" -m shakespeare-lstm-ln -p "ROMEO:" -n 40 -s 9 --json
cp "$TMP/out" "$TMP/many.json"
"$BIN" generate -m "$PRE" -p "ROMEO:" -n 40 -s 9 --json > "$TMP/pre.json" 2>/dev/null
"$BIN" generate -m "$POST" -p "ROMEO:" -n 40 -s 9 --json > "$TMP/post.json" 2>/dev/null
/usr/bin/python3 -c '
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert len(lines) == 4 and lines[3] == "", lines
got = [json.loads(l) for l in lines[:3]]
want = [(sys.argv[4], "layernorm/pre"), (sys.argv[5], "layernorm/post"), ("shakespeare-lstm-ln", "lstm/layernorm")]
assert [(g["model"], g["run"]) for g in got] == want, got
assert all(list(g)[:2] == ["model", "run"] and g["seed"] == 9 for g in got), got
for g, f in zip(got, sys.argv[2:4]):
    one = json.loads(open(f).read())
    assert set(g) == set(one) | {"model", "run"}, (g, one)
    assert g["text"] == one["text"] and g["prompt"] == one["prompt"] == "ROMEO:", (g, one)
assert got[0]["text"] != got[1]["text"]
' "$TMP/many.json" "$TMP/pre.json" "$TMP/post.json" "$PRE" "$POST" 2>&1 \
    && ok "--json: one object per model with model and run, its text the single run's" \
    || bad "several --json" "$(cat "$TMP/many.json")"
expect_ok "several models --samples 2 --json" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 30 -s 9 --samples 2 --json
/usr/bin/python3 -c '
import json, sys
got = [json.loads(l) for l in open(sys.argv[1])]
want = [(m, r, i, 9 + i) for m, r in ((sys.argv[2], "layernorm/pre"), (sys.argv[3], "layernorm/post")) for i in (0, 1)]
assert [(g["model"], g["run"], g["sample"], g["seed"]) for g in got] == want, got
' "$TMP/out" "$PRE" "$POST" 2>&1 \
    && ok "--samples 2 --json: a line per model and sample, each with model and run" \
    || bad "several --samples --json" "$(cat "$TMP/out")"
cp "$TMP/out" "$TMP/many_samples.json"
"$BIN" generate -m "$POST" -p "ROMEO:" -n 30 -s 10 --json > "$TMP/post10.json" 2>/dev/null
[ "$(sed -n 4p "$TMP/many_samples.json" | sed 's/.*"text":\(".*"\)}$/\1/')" = \
  "$(sed 's/.*"text":\(".*"\),"prompt_tokens".*/\1/' "$TMP/post10.json")" ] \
    && ok "the second model's sample 1 is its single run with seed S+1" \
    || bad "several samples text" "$(sed -n 4p "$TMP/many_samples.json")"
expect_ok "several models --samples 2" generate -m "$PRE" -m "$POST" -p "RO" -n 10 -s 9 --samples 2
[ "$(grep -c '^=== ' "$TMP/out")" -eq 2 ] && [ "$(grep -c '^--- sample [01], seed 1\?[09] ---$' "$TMP/out")" -eq 4 ] \
    && [ "$(sed -n 1p "$TMP/out")" = "=== $PRE (layernorm/pre) ===" ] \
    && [ "$(sed -n 2p "$TMP/out")" = "--- sample 0, seed 9 ---" ] \
    && ok "--samples: each model's samples under its header" || bad "several --samples" "$(cat "$TMP/out")"
# (d) a prompt character one model lacks: an error naming the model and the character, nothing printed
expect_fail "the second model lacks a prompt character" 1 \
    "prompt (for $FIX/utf8.json): character 'c' (U+0063) at position 2 is not in the model's vocabulary" \
    generate -m $FIX/ln-pre-bias.json -m $FIX/utf8.json -p "ac" -n 5 -s 1
expect_fail "the first model lacks a prompt character" 1 \
    "prompt (for $FIX/ln-pre-bias.json): character 'é' (U+00E9) at position 2 is not in the model's vocabulary" \
    generate -m $FIX/utf8.json -m $FIX/ln-pre-bias.json -p "aé" -n 5 -s 1 --json
printf 'ac' > "$TMP/ac.txt"
expect_fail "a prompt file one model cannot encode" 1 "$TMP/ac.txt (for $FIX/utf8.json): character 'c'" \
    generate -m $FIX/ln-pre-bias.json -m $FIX/utf8.json -f "$TMP/ac.txt" -n 5 -s 1 -o "$TMP/never.txt"
[ ! -e "$TMP/never.txt" ] && ok "no -o file when a model cannot encode the prompt" || bad "never.txt" "written"
expect_ok "--skip-unknown drops each model's unknown characters" \
    generate -m $FIX/ln-pre-bias.json -m $FIX/utf8.json -p "ac" -n 5 -s 1 --skip-unknown
blocks "$TMP/out" "$TMP/sk"
# (utf8.json has no 'c' to sample: its block starts with the "a" it kept)
[ "$(head -c 2 "$TMP/sk.1")" = "ac" ] && [ "$(head -c 1 "$TMP/sk.2")" = "a" ] \
    && [ "$(head -c 2 "$TMP/sk.2")" != "ac" ] \
    && grep -q "warning: prompt (for $FIX/utf8.json): dropped 1 character outside" "$TMP/err" \
    && ok "--skip-unknown: each model's prompt as it encodes it, the drop named" \
    || bad "several skip" "$(cat "$TMP/out")"
printf 'ab' | "$BIN" generate -m $FIX/ln-pre-bias.json -m $FIX/rms-pre-bias.json -f - -n 5 -s 1 >"$TMP/out" 2>/dev/null
blocks "$TMP/out" "$TMP/si"
[ "$(head -c 2 "$TMP/si.1")" = "ab" ] && [ "$(head -c 2 "$TMP/si.2")" = "ab" ] \
    && ok "-f - is read once and encoded for every model" || bad "several -f -" "$(cat "$TMP/out")"
# (e) a seed drawn from the OS is drawn once, printed once, and repeats the run
expect_ok "several models, seed -1" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 30
[ "$(grep -c '^normlab: seed ' "$TMP/err")" -eq 1 ] && grep -qE '^normlab: seed [0-9]+$' "$TMP/err" \
    && ok "seed -1 with two models: one seed, printed once" || bad "several, seed -1" "$(cat "$TMP/err")"
seed=$(sed -n 's/^normlab: seed \([0-9]*\)$/\1/p' "$TMP/err"); cp "$TMP/out" "$TMP/first"
expect_ok "several models, the printed seed" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 30 -s "$seed"
cmp -s "$TMP/out" "$TMP/first" && ! grep -q '^normlab: seed' "$TMP/err" \
    && ok "the printed seed repeats every model's block" || bad "several, printed seed" "differs"
# what takes one model
expect_fail "--profile takes one model" 2 "--profile takes one model, got 2 (-m)" \
    generate -m $FIX/ln-pre-bias.json -m $FIX/rms-pre-bias.json -p ab -n 5 --profile
expect_fail "--exact-window names the recurrent model" 2 \
    "--exact-window applies to transformers; $FIX/lstm-ln.json is a recurrent model (no window)" \
    generate -m $FIX/ln-pre-bias.json -m $FIX/lstm-ln.json -p ab -n 5 -s 1 --exact-window
expect_fail "a model that does not load: nothing printed" 1 "nosuch: no such model" \
    generate -m $FIX/ln-pre-bias.json -m nosuch -p ab -n 5 -s 1
expect_ok "the other commands keep one -m: the last wins" info -m $FIX/ln-pre-bias.json -m $FIX/rms-pre-bias.json --json
grep -q '"norm":"rmsnorm"' "$TMP/out" && ! grep -q '"norm":"layernorm"' "$TMP/out" \
    && ok "info -m A -m B shows B" || bad "info -m -m" "$(head -c 200 "$TMP/out")"

closing cli_test
[ "$failed" -eq 0 ]
