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

# png_check FILE EXPR: FILE is a PNG; EXPR, Python of w and h (its size in pixels) and text (its
# Description: the titles and legend labels the plotting tools write there), holds. Prints what failed.
png_check() {
    /usr/bin/python3 -c '
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
if d[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("not a PNG")
w, h = struct.unpack(">II", d[16:24])
text, at = "", 8
while at < len(d):
    n, kind = struct.unpack(">I4s", d[at:at + 8])
    body = d[at + 8:at + 8 + n]
    if kind == b"tEXt" and body.startswith(b"Description\0"):
        text = body.split(b"\0", 1)[1].decode("latin-1")
    if kind == b"zTXt" and body.startswith(b"Description\0"):
        text = zlib.decompress(body.split(b"\0", 1)[1][1:]).decode("latin-1")
    if kind == b"iTXt" and body.startswith(b"Description\0"):
        text = body.split(b"\0", 5)[5].decode("utf-8")
    at += 12 + n
sys.exit(0 if eval(sys.argv[2]) else "%s is false (w %d, h %d, text %r)" % (sys.argv[2], w, h, text[:300]))' \
        "$1" "$2" 2>&1 | head -c 500
}

M="-m $FIX/ln-pre-bias.json"
U="-m $FIX/utf8.json"

# The checks, command by command, in one shell (later parts use files earlier ones made).
for part in errors generate eval profile compare engine streams many sampling kl bench interactive fold patch lab; do
    . "$(dirname "$0")/cli/$part.sh"
done

closing cli_test
[ "$failed" -eq 0 ]
