#!/bin/bash
# tests/rewrite_test.sh BINARY — a model rewritten by the tools under running readers (issue: models
# are replaced, never rewritten in place). A reader decoding from the model while tools/lib/nlformat.py
# rewrites it twenty times must finish normally (a file rewritten in place under its mapping would
# kill it with SIGBUS), and readers that load the model while it is being replaced must load it or
# fail with a message, never die of a signal. Needs /usr/bin/python3 with numpy; skipped without.
set -u
BIN=${1:-./normlab}
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
. "$(dirname "$0")/skips.sh"
if ! have_python 1 numpy; then
    closing rewrite_test
    exit 0
fi
TMP=$(mktemp -d /tmp/normlab-rewrite-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# rewrite N: writes the fixture's model to $TMP/m N times, weights scaled anew each time.
rewrite() {
    /usr/bin/python3 - "$TMP/m" "$1" <<'PY'
import sys
sys.path.insert(0, "tools/lib")
import nlformat
cfg, vocab, arrays = nlformat.load_model("tests/fixtures/ln-pre-bias.json")
cfg = {k: v for k, v in cfg.items() if k != "format"}
for i in range(int(sys.argv[2])):
    nlformat.write_model_dir(sys.argv[1], cfg, vocab, {k: a * (1 + 0.01 * (i % 3)) for k, a in arrays.items()},
                             metadata={"generation": str(i)})
PY
}
rewrite 1
"$BIN" generate -m "$TMP/m" -p "ab" -n 3000000 --seed 1 --threads 1 > /dev/null 2> "$TMP/reader.err" &
reader=$!
sleep 0.2
rewrite 20
for i in 1 2 3 4 5 6 7 8; do  # loads racing the replacements
    "$BIN" info -m "$TMP/m" > /dev/null 2>> "$TMP/loads.err" & loads="${loads:-} $!"
done
rewrite 10
wait "$reader"; rc=$?
[ "$rc" -eq 0 ] \
    && ok "a decoding reader survives 30 rewrites of its model" || bad "reader" "exit $rc: $(tail -2 "$TMP/reader.err")"
worst=0
for p in $loads; do wait "$p"; r=$?; [ "$r" -gt "$worst" ] && worst=$r; done
[ "$worst" -le 1 ] && ok "loads racing the rewrites load or fail with a message (worst exit $worst)" \
    || bad "racing loads" "exit $worst: $(tail -2 "$TMP/loads.err")"
"$BIN" info -m "$TMP/m" --json | grep -qE '"generation":9[,}]' && ok "the last rewrite is the model in place" \
    || bad "final model" "$("$BIN" info -m "$TMP/m" 2>&1 | tail -2)"
[ -z "$(find "$TMP" -maxdepth 1 -name '.m.*')" ] && ok "no temporary directory left beside the model" \
    || bad "leftovers" "$(ls -a "$TMP")"
ln -s m "$TMP/alias"
mkdir -p "$TMP/m/notes" && echo kept > "$TMP/m/notes/a.txt"
/usr/bin/python3 - "$TMP/alias" <<'PY'
import sys
sys.path.insert(0, "tools/lib")
import nlformat
cfg, vocab, arrays = nlformat.load_model("tests/fixtures/ln-pre-bias.json")
nlformat.write_model_dir(sys.argv[1], {k: v for k, v in cfg.items() if k != "format"}, vocab, arrays,
                         metadata={"generation": "via-link"})
PY
[ -L "$TMP/alias" ] && [ -d "$TMP/m" ] && [ ! -L "$TMP/m" ] && grep -q kept "$TMP/m/notes/a.txt" \
    && "$BIN" info -m "$TMP/alias" --json | grep -q '"generation":"via-link"' \
    && ok "a model rewritten through a symlink: the link kept, the folder's subfolder too" \
    || bad "symlinked model" "$(ls -la "$TMP")"
closing rewrite_test
[ "$failed" -eq 0 ]
