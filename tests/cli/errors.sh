# tests/cli/errors.sh — cli_test.sh's part: usage errors (exit 2), data errors (exit 1), help and version.
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

# ---- usage errors: exit 2
run  # bare normlab: the commands, as git lists them, on stderr (a usage error)
[ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] && grep -q "^  generate " "$TMP/err" && grep -q "^  compare " "$TMP/err" \
    && ok "bare normlab lists the commands, exit 2" || bad "bare normlab" "exit $rc: $(head -3 "$TMP/err")"
# one dash: a long option's exact name only, never a prefix; -b is no option of generate
expect_fail "-i is generate's, not --invariance's prefix" 2 "option '-i' does not apply to this command" compare $M -i
expect_fail "-b is unknown, with the options it starts" 2 "unknown option '-b' (did you mean --batch, --bn-stats?)" \
    generate $M -b
expect_fail "-q is unknown, with the options it starts" 2 \
    "unknown option '-q' (did you mean --qk-norm, --quantize, --quantize-only, --quantize-act?)" \
    generate $M -q
expect_fail "one dash, a near miss: did you mean" 2 "unknown option '-jsn' (did you mean '--json'?)" generate $M -jsn
expect_fail "one dash and a prefix is no long option" 2 "unknown option '-exact' (did you mean --exact-window?)" \
    generate $M -exact
expect_fail "a flag takes no value" 2 "option '--json' takes no value" info $M --json=1
expect_fail "unknown command" 2 "unknown command 'sing'" sing
expect_fail "negative -n" 2 "-n must be an integer in [-1, 1000000000], got '-2'" generate $M -n -2
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
expect_fail "unknown norm" 2 "--norm must be layernorm, rmsnorm, batchnorm, dyt or none (any case), got 'groupnorm'" \
    generate $M --norm groupnorm
PLACES="pre, post, peri, post-sublayer, parallel, parallel-shared, mix, sub or custom"
expect_fail "unknown placement" 2 "--placement must be $PLACES (any case), got 'middle'" \
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
printf 'ak42' > "$TMP/stories.bin"
expect_fail "a llama2.c .bin given as the model" 1 \
    "stories.bin: a .bin file, not a normlab model: llama2.c's? tools/interop/import_llama2c.py" \
    info -m "$TMP/stories.bin"
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
expect_fail "eval loss overflows" 1 "non-finite loss at token 2" eval -m $FIX/overflow.json --text "$TMP/short.txt"
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
want="nosuch: no such model \([0-9]+ models found: 'normlab list' shows them; searched $TMP/models:"
[ "$rc" -eq 1 ] && grep -qE "$want" "$TMP/err" && ! grep -q "did you mean\|shakespeare" "$TMP/err" \
    && ok "no such model: a count, no list (list names them)" \
    || bad "no such model: count" "exit $rc: $(cat "$TMP/err")"
NORMLAB_MODELS="$TMP/models" run generate -m gg -n 1
[ "$rc" -eq 1 ] && grep -qF "gg: no such model (did you mean 'g'?" "$TMP/err" \
    && ok "no such model: did you mean the nearest name" \
    || bad "no such model: did you mean" "exit $rc: $(cat "$TMP/err")"
NORMLAB_MODELS="$TMP/models" "$BIN" list | awk 'NR > 1 { printf "%s ", $1 }' > "$TMP/names"
grep -q "^a b c d e f g h shakespeare" "$TMP/names" && ok "list: the names in order" \
    || bad "list: names in order" "$(cat "$TMP/names")"
expect_ok "--version" --version && grep -qE '^normlab [0-9]+\.[0-9]+\.[0-9]+$' "$TMP/out" \
    && ok "version format" || bad "version format" "$(cat "$TMP/out")"
cp "$TMP/out" "$TMP/version"
expect_ok "version, as a command" version && cmp -s "$TMP/out" "$TMP/version" \
    && ok "'normlab version' prints what --version does" || bad "version command" "$(cat "$TMP/out")"
expect_fail "version takes no arguments" 2 "version takes no arguments, got 'x'" version x

# -o onto a read-only file is refused, as the shell's > refuses it ("Permission denied"), and the file
# keeps its bytes; root runs it without the capability that writes any file (setpriv)
if [ "$(id -u)" != 0 ]; then as_user() { "$@"; }
elif command -v setpriv > /dev/null 2>&1; then as_user() { setpriv --bounding-set=-dac_override,-dac_read_search "$@"; }
else as_user() { return 99; }; fi
printf 'old\n' > "$TMP/ro.txt" && chmod 444 "$TMP/ro.txt"
as_user "$BIN" generate $M -p ab -n 5 --seed 1 -o "$TMP/ro.txt" > "$TMP/out" 2> "$TMP/err"; rc=$?
as_user "$BIN" eval $M -f tests/data/held_out.txt -o "$TMP/ro.txt" > /dev/null 2> "$TMP/err2"; rc2=$?
if [ "$rc" = 99 ]; then
    echo "skip -o read-only: root without setpriv"
else
    [ "$rc" -eq 2 ] && [ "$rc2" -eq 2 ] && grep -qF "output '$TMP/ro.txt': Permission denied" "$TMP/err" \
        && [ "$(wc -l < "$TMP/err")" -eq 1 ] && [ "$(cat "$TMP/ro.txt")" = old ] \
        && ok "-o onto a read-only file: refused (Permission denied), the file unchanged" \
        || bad "-o read-only" "exit $rc/$rc2: $(cat "$TMP/err" "$TMP/err2")"
fi
chmod 644 "$TMP/ro.txt"
run generate $M -p ab -n 5 --seed 1 -o "$TMP/ro.txt"
[ "$rc" -eq 0 ] && [ "$(cat "$TMP/ro.txt")" != old ] && ok "-o onto a writable file replaces it" \
    || bad "-o writable" "exit $rc: $(cat "$TMP/err")"

# llama.cpp's flags and names: refused with a reason, or with normlab's name (never read as other flags)
expect_fail "-fa is not -f a" 2 "option '-fa' has no counterpart here: llama.cpp's flash attention" generate $M -fa
expect_fail "--flash-attn" 2 "option '--flash-attn' has no counterpart here" generate $M --flash-attn -p ab
expect_fail "--no-display-prompt names --no-echo" 2 "unknown option '--no-display-prompt' (normlab's is --no-echo)" \
    generate $M --no-display-prompt -p ab
expect_fail "--prompt-file names -f" 2 "unknown option '--prompt-file' (normlab's is -f FILE)" \
    generate $M --prompt-file x
run tokenize $M --ids -p ab
ids=$(cat "$TMP/out"); run tokenize $M --json -p ab
[ "$ids" = "$(/usr/bin/python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["ids"]))' < "$TMP/out")" ] \
    && [ "$ids" != "[]" ] && ok "tokenize --ids: llama-tokenize's one line '[a, b]', the --json ids" \
    || bad "tokenize --ids" "'$ids' $(cat "$TMP/out")"
expect_fail "tokenize --ids with --json" 2 "give --ids or --json, not both" tokenize $M --ids --json -p ab
# run.c's and llama.cpp's flags that read as others here: refused with the reason, or warned of
expect_fail "-sys is not -s ys" 2 "option '-sys' has no counterpart here: llama.cpp's system prompt" \
    generate $M -sys X -p ab
expect_fail "--grammar: no constrained sampling" 2 \
    "option '--grammar' has no counterpart here: llama.cpp's constrained" \
    generate $M --grammar x -p ab
expect_fail "generate --keep: what normlab keeps at a shift" 2 \
    "option '--keep' does not apply to this command: it is quantize's (matrices kept float32); llama.cpp's --keep" \
    generate $M --keep 4 -p ab
expect_fail "-t 0: run.c's temperature is --temp" 2 \
    "(the threads: run.c's -t, the temperature, is --temp here), got '0'" \
    generate $M -t 0 -p ab
expect_fail "-z: run.c's tokenizer" 2 "option '-z' has no counterpart here: run.c's tokenizer file" \
    generate $M -z tokenizer.bin -p ab
run generate $M -p 0.9 -n 2 -s 1 --skip-unknown
grep -qF "warning: the prompt is '0.9', a number: -p is the prompt here (run.c's -p, top-p, is --top-p)" "$TMP/err" \
    && [ "$rc" -eq 0 ] && run generate $M -p "0.9 x" -n 2 -s 1 --skip-unknown && ! grep -q "a number" "$TMP/err" \
    && ok "-p 0.9: a warning that -p is the prompt (run.c's top-p is --top-p); '0.9 x' none" \
    || bad "-p number" "exit $rc: $(cat "$TMP/err")"
expect_fail "perplexity names eval" 2 "unknown command 'perplexity' (normlab's is 'eval'" perplexity -m x
