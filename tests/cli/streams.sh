# tests/cli/streams.sh — cli_test.sh's part: JSON, model lookup and the standard streams.
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

# ---- JSON, lookup and standard streams (the command line)
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
# where a model shakespeare-pre-ln is, and a weights/ holding one too, finds no default; naming the
# working folder's loads it.
mkdir -p "$TMP/lonely/bin" && cp "$BINABS" "$TMP/lonely/bin/normlab" && cp -r "$TMP/cwd" "$TMP/lonely/cwd"
cp $FIX/lstm-ln.json "$TMP/lonely/cwd/shakespeare-pre-ln.json"
mkdir -p "$TMP/lonely/cwd/weights" && cp $FIX/gru-ln.json "$TMP/lonely/cwd/weights/shakespeare-pre-ln.json"
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
