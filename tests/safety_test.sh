#!/bin/bash
# tests/safety_test.sh BINARY — the catalogue of ways a command line could destroy a user's files
# or lie in its messages (docs/files.md), one case or more per class. Each case
# checks the exit status, that stdout is empty on an error, how many lines stderr has, and the
# SHA-256 of every file that must survive, before and after.
set -u
BIN=${1:-./normlab}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
ROOT=$(pwd)
FIX=$ROOT/tests/fixtures
TMP=$(mktemp -d /tmp/normlab-safety-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0
. "$(dirname "$0")/skips.sh"
export LC_ALL=C.UTF-8
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
sums() { sha256sum "$@" 2>&1; }

# case NAME CODE LINES SUBSTRING -- ARGS...: runs the binary; checks exit CODE, empty stdout when
# CODE != 0, LINES lines of stderr (-1: any) containing SUBSTRING.
case_() {
    local name=$1 code=$2 lines=$3 msg=$4; shift 5
    "$BIN" "$@" > "$TMP/out" 2> "$TMP/err"; rc=$?
    if [ "$rc" -ne "$code" ]; then bad "$name" "exit $rc, expected $code: $(head -c 300 "$TMP/err")"
    elif [ "$code" -ne 0 ] && [ -s "$TMP/out" ]; then bad "$name" "stdout not empty: $(head -c 100 "$TMP/out")"
    elif [ "$lines" -ge 0 ] && [ "$(wc -l < "$TMP/err")" -ne "$lines" ]; then
        bad "$name" "stderr has $(wc -l < "$TMP/err") lines: $(cat "$TMP/err")"
    elif ! grep -qF -- "$msg" "$TMP/err"; then bad "$name" "stderr lacks '$msg': $(cat "$TMP/err")"
    else ok "$name"; fi
}
survives() {  # survives NAME BEFORE-SUMS FILES...: the files have the same SHA-256 as before
    local name=$1 before=$2; shift 2
    [ "$(sums "$@")" = "$before" ] && ok "$name: files unchanged" || bad "$name" "files changed: $(sums "$@")"
}

M="$TMP/m"
/usr/bin/python3 -c 'import numpy' 2>/dev/null || true
cp -r "$ROOT/weights/shakespeare-pre-ln" "$M" 2>/dev/null || mkdir -p "$M"
FILES="$M/config.json $M/tokenizer.json $M/model.safetensors"
printf 'ROMEO:\nWhat light through yonder window breaks?\n' > "$TMP/text.txt"
before=$(sums $FILES "$TMP/text.txt")

# ---- a model's own files as outputs: plain, ./ spelling, through a symlink; the text file
case_ "profile --json onto the model's config" 2 1 "is the input" -- profile -m "$M" -n 5 --json -o "$M/config.json"
case_ "profile --trace onto the weights" 2 1 "is the input" -- profile -m "$M" -n 5 --trace "$M/model.safetensors"
ln -s "$M/model.safetensors" "$TMP/link"
case_ "an output symlinked to the weights" 2 1 "is the input" -- profile -m "$M" -n 5 --json -o "$TMP/link"
(cd "$TMP" && "$BIN" compare ./m --text text.txt --repeats 1 --json -o ./m/tokenizer.json > out 2> err; echo $? > rc)
[ "$(cat "$TMP/rc")" -eq 2 ] && grep -q "is the input" "$TMP/err" && [ ! -s "$TMP/out" ] \
    && ok "compare --json onto ./m/tokenizer.json" \
    || bad "./ spelling" "exit $(cat "$TMP/rc"): $(cat "$TMP/err")"
case_ "compare --csv onto its --text file" 2 1 "is the input" -- \
    compare "$M" --text "$TMP/text.txt" --repeats 1 --csv "$TMP/text.txt"
case_ "two outputs, x and ./x" 2 1 "are the same file" -- \
    profile -m "$M" -n 5 --json -o "$TMP/x.json" --trace "$TMP/./x.json"
case_ "an output in the shipped models' folder" 2 1 "shipped models' folder" -- \
    profile -m "$M" -n 5 --json -o "$ROOT/weights/new.json"
survives "model and text after the alias cases" "$before" $FILES "$TMP/text.txt"
[ ! -e "$TMP/x.json" ] && [ -z "$(ls -a "$M" | grep normlab)" ] \
    && ok "nothing created by refused runs" || bad "created" "$(ls -a "$TMP" "$M")"

# ---- a pre-existing report: kept when the run fails, replaced whole when it succeeds
echo '{"old": "report"}' > "$TMP/report.json"
rep=$(sums "$TMP/report.json")
case_ "a failing compare with a pre-existing report" 1 1 "no such model" -- \
    compare "$M" "$TMP/nope" --text "$TMP/text.txt" --repeats 1 --json -o "$TMP/report.json"
survives "the report after a failed run" "$rep" "$TMP/report.json"
case_ "a succeeding profile over a pre-existing report" 0 -1 "" -- profile -m "$M" -n 5 --json -o "$TMP/report.json"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "phases" in d' "$TMP/report.json" \
    2>/dev/null && [ -f "$TMP/report.json" ] && [ ! -L "$TMP/report.json" ] \
    && ok "the report is replaced by a whole new one" || bad "replaced report" "$(head -c 200 "$TMP/report.json")"
[ -z "$(ls -a "$TMP" | grep '\.normlab-')" ] \
    && ok "no temporary file left behind" || bad "temporaries" "$(ls -a "$TMP")"
echo 'kept' > "$TMP/target.json"; ln -s target.json "$TMP/via-link.json"
case_ "an output through a symlink" 0 -1 "" -- profile -m "$M" -n 5 --json -o "$TMP/via-link.json"
[ -L "$TMP/via-link.json" ] && grep -q '"phases"' "$TMP/target.json" \
    && ok "the link is kept and its target replaced" || bad "symlink output" "$(ls -l "$TMP")"

# ---- non-regular outputs: a FIFO, a private /dev/full, standard output
mkfifo "$TMP/fifo"
case_ "a FIFO nobody reads" 1 1 "no process is reading this FIFO" -- profile -m "$M" -n 5 --json -o "$TMP/fifo"
timeout 20 cat "$TMP/fifo" > "$TMP/fifo.out" & reader=$!
sleep 0.2
case_ "a FIFO with a reader" 0 -1 "" -- profile -m "$M" -n 5 --json -o "$TMP/fifo"
wait "$reader"
[ -p "$TMP/fifo" ] && grep -q '"phases"' "$TMP/fifo.out" \
    && ok "the FIFO got the JSON and is still a FIFO" || bad "fifo" "$(ls -l "$TMP/fifo")"
if [ "$(id -u)" = 0 ] && mknod "$TMP/full" c 1 7 2>/dev/null; then
    case_ "an output on a full device (timing line, then the error)" 1 2 "No space left on device" -- \
        profile -m "$M" -n 5 --json -o "$TMP/full"
    [ -c "$TMP/full" ] && ok "the device node survives a failed write" || bad "device node" "$(ls -l "$TMP/full")"
    case_ "a failing run with a device output" 1 1 "no such model" -- \
        compare "$TMP/nope" --text "$TMP/text.txt" --json -o "$TMP/full"
    [ -c "$TMP/full" ] && ok "the device node survives a failed run" || bad "device node" "gone"
else
    echo "note: not root (or no mknod): the private /dev/full cases are skipped"
fi
"$BIN" profile -m "$M" -n 5 --json -o - > "$TMP/stdout.json" 2>/dev/null; rc=$?
[ "$rc" -eq 0 ] && grep -q '"phases"' "$TMP/stdout.json" \
    && ok "-o - writes to standard output" || bad "json -" "exit $rc"

# ---- closed standard descriptors
"$BIN" profile -m "$M" -n 5 --json -o "$TMP/closed.json" >&- 2>/dev/null; rc=$?
[ "$rc" -eq 0 ] && /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/closed.json" 2>/dev/null \
    && ok "stdout closed: the JSON file holds JSON alone" \
    || bad "closed stdout" "exit $rc: $(head -c 200 "$TMP/closed.json")"
"$BIN" compare "$TMP/nope" --text "$TMP/text.txt" --json -o "$TMP/closed2.json" 2>&-; rc=$?
[ "$rc" -eq 1 ] && [ ! -e "$TMP/closed2.json" ] \
    && ok "stderr closed: the error is an exit status, no file gets it" || bad "closed stderr" "exit $rc"
"$BIN" --version > /dev/full 2> "$TMP/err"; rc=$?
[ "$rc" -eq 1 ] && [ "$(wc -l < "$TMP/err")" -eq 1 ] \
    && ok "--version on a full stdout fails" || bad "--version /dev/full" "exit $rc"
"$BIN" help generate > /dev/full 2> "$TMP/err"; rc=$?
[ "$rc" -eq 1 ] && grep -q "cannot write to stdout" "$TMP/err" \
    && ok "help on a full stdout fails" || bad "help /dev/full" "exit $rc"

"$BIN" profile -m "$M" -n 5 --json -o "$TMP/closed3.json" 2>&- >/dev/null; rc=$?
[ "$rc" -eq 0 ] && /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/closed3.json" 2>/dev/null \
    && ok "stderr closed: the timing line does not land in the JSON file" \
    || bad "closed stderr json" "exit $rc: $(head -c 200 "$TMP/closed3.json")"
"$BIN" profile -m "$M" -n 5 --trace /dev/stdout > "$TMP/devstdout.txt" 2>/dev/null; rc=$?
[ "$rc" -eq 0 ] && grep -q '"traceEvents"' "$TMP/devstdout.txt" && grep -q "^== decode" "$TMP/devstdout.txt" \
    && [ -L /dev/stdout ] \
    && ok "--trace /dev/stdout into a redirected file: written in place, the link untouched" \
    || bad "/dev/stdout" "exit $rc"
"$BIN" compare "$TMP/nope" --text "$TMP/text.txt" --json -o /dev/stdout > /dev/null 2>&1; rc=$?
[ "$rc" -eq 1 ] && [ -L /dev/stdout ] \
    && ok "a failing run never removes /dev/stdout" || bad "/dev/stdout failing" "exit $rc"

# ---- messages that cannot lie: control characters, bidi overrides, NUL, long paths
mkdir -p "$TMP/esc"
case_ "a newline in a model path" 1 1 'no\nsuch' -- info -m "$TMP/no
such"
case_ "an escape sequence in a path" 1 1 '\u001b[2J' -- info -m "$TMP/$(printf '\033[2J')x"
case_ "a bidi override in a path" 1 1 '\u202e' -- info -m "$TMP/$(printf '\342\200\256')x"
case_ "a bidi override in a prompt character" 1 1 'U+202E' -- generate -m "$M" -p "$(printf 'a\342\200\256b')" -n 1
/usr/bin/python3 - "$FIX/ln-pre-bias.json" "$TMP" <<'PY'
import sys
src, out = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2]
cases = {
    "ctrl-key": src.replace('"n_head"', '"n_he\\u001b[2Jad"', 1),
    "nul-key": src.replace('"n_layer"', '"n_layer\\u0000junk"', 1),
    "nul-value": src.replace('"layernorm"', '"layernorm\\u0000x"', 1),
    "nul-tensor": src.replace('"wte.weight"', '"wte.weight\\u0000x"', 1),
    "nul-vocab": src.replace('"vocab": ["\\n"', '"vocab": ["\\n\\u0000"', 1),
}
for name, text in cases.items():
    open(f"{out}/{name}.json", "w", encoding="utf-8").write(text)
raw = src.encode().replace(b'"layernorm"', b'"layer\x00norm"', 1)
open(f"{out}/nul-raw.json", "wb").write(raw)
PY
case_ "a control-character key" 1 1 'unknown key "n_he\u001b[2Jad"' -- info -m "$TMP/ctrl-key.json"
case_ "NUL in a key" 1 1 'the key "n_layer\u0000junk" has a NUL character' -- info -m "$TMP/nul-key.json"
case_ "NUL in a value" 1 1 'a string in "norm" has a NUL character' -- info -m "$TMP/nul-value.json"
case_ "NUL in a tensor name" 1 1 'the key "wte.weight\u0000x" has a NUL character' -- info -m "$TMP/nul-tensor.json"
case_ "NUL in a vocabulary entry" 1 1 'a string in "vocab" has a NUL character' -- info -m "$TMP/nul-vocab.json"
case_ "a raw NUL byte in a value" 1 1 'a string in "norm" has a NUL character' -- info -m "$TMP/nul-raw.json"
long="$TMP/$(head -c 5000 /dev/zero | tr '\0' 'a')"
long=${long:0:4095}  # exactly PATH_MAX - 1 bytes
case_ "a model path of PATH_MAX-1 bytes" 2 1 "path too long" -- info -m "$long"
grep -q "…\|\.\.\." "$TMP/err" \
    && ok "the long path is cut in the middle, the reason kept" || bad "cut" "$(cat "$TMP/err")"
case_ "an output path of PATH_MAX-1 bytes" 2 1 "path too long" -- profile -m "$M" -n 5 --json -o "$long"

# ---- found in review: each once a way to break a rule above
printf '{"%s\0": 1}' "$(printf 'a%.0s' $(seq 87))" > "$TMP/longkey.json"
case_ "a long key with a raw NUL (once a stack overflow)" 1 1 "has a NUL character" -- info -m "$TMP/longkey.json"
ln -s "$ROOT/weights/shakespeare-post-ln/config.json" "$TMP/shipped-link.json"
shipped=$(sums "$ROOT/weights/shakespeare-post-ln/config.json")
case_ "an output symlinked into the shipped models" 2 1 "shipped models' folder" -- \
    profile -m "$M" -n 3 -o "$TMP/shipped-link.json"
survives "the shipped model behind the link" "$shipped" "$ROOT/weights/shakespeare-post-ln/config.json"
ln -s "$TMP/dangling-target.json" "$TMP/dangling.json"
case_ "an output through a dangling symlink" 0 -1 "" -- profile -m "$M" -n 3 --json -o "$TMP/dangling.json"
[ -L "$TMP/dangling.json" ] && grep -q '"phases"' "$TMP/dangling-target.json" \
    && ok "the dangling link stays and its target is written" \
    || bad "dangling link" "$(ls -l "$TMP" | grep dangling)"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    shm=$(mktemp /dev/shm/normlab-safety-XXXXXX)
    "$BIN" profile -m "$M" -n 3 --json -o "$shm" 2>/dev/null && "$BIN" profile -m "$M" -n 3 --json -o "$shm" 2>/dev/null
    /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$shm" 2>/dev/null \
        && ok "a regular file under /dev is replaced, not appended to" || bad "/dev/shm" "$(head -c 100 "$shm")"
    rm -f "$shm"
fi
case_ "profile --trace over several sample groups on one thread" 0 -1 "" -- \
    profile -m "$M" -n 20 --samples 16 --threads 1 --trace "$TMP/groups-trace.json"
mkdir -p "$TMP/$(printf 'esc\033[31mdir')"
cp -r "$M" "$TMP/$(printf 'esc\033[31mdir')/m"
"$BIN" generate -m "$TMP/$(printf 'esc\033[31mdir')/m" -p R -n 3 -s 1 --profile > /dev/null 2> "$TMP/err"
! grep -q "$(printf '\033')" "$TMP/err" && grep -q 'esc\\u001b\[31mdir' "$TMP/err" \
    && ok "the profile header escapes the model path" \
    || bad "profile header" "$(head -c 300 "$TMP/err" | od -c | head -3)"
if have_python 2 matplotlib; then
    mkdir -p "$TMP/plots"
    for f in bits_per_char residual_rms branch_rms time_share; do echo "old $f" > "$TMP/plots/$f.png"; done
    plots=$(sums "$TMP"/plots/*.png)
    if [ -c /dev/full ]; then
        case_ "a compare whose CSV fails" 1 -1 "No space left on device" -- \
            compare "$M" -f "$TMP/text.txt" --repeats 1 --plot-dir "$TMP/plots" --csv /dev/full
        survives "the old plots after a failed compare" "$plots" "$TMP"/plots/*.png
    fi
fi

# ---- numbers that cannot lie, and memory a flag sizes
case_ "logits refuses non-finite values" 1 1 "is not finite" -- logits -m "$FIX/overflow.json" -p "ab"
timeout 2 "$BIN" profile -m "$FIX/ln-pre-bias.json" -n 1000000000 --trace "$TMP/big-trace.json" \
    > /dev/null 2> "$TMP/err"; rc=$?
[ "$rc" -eq 124 ] \
    && ok "profile -n 1e9 --trace runs instead of reserving 5e10 events up front" \
    || bad "trace size" "exit $rc: $(head -2 "$TMP/err")"
rm -f "$TMP"/.big-trace.json.normlab-*

closing safety_test
[ "$failed" -eq 0 ]
