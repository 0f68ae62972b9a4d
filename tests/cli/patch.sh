# tests/cli/patch.sh — cli_test.sh's part: normlab patch, its exact cells and its refusals. The
# float64 reference of every cell is tests/patch_test.py's (PyTorch); here, without it, the cells
# whose value the definition fixes: the stream leaving the last layer at the last position recovers
# exactly 1; a cell before the first position where the texts differ patches a row equal to the
# corrupted run's own, so recovers exactly 0; each cell's share is its logit difference's (1e-12).
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

P="-m weights/shakespeare-pre-ln"
expect_ok "patch --json" patch $P --clean "I am thy father" --corrupt "I am thy mother" --json
why=$(/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
rec, diff, c, k = d["recovered"], d["diff"], d["clean_diff"], d["corrupt_diff"]
clean, corrupt = d["clean"]["ids"], d["corrupt"]["ids"]
if (d["layers"], d["positions"]) != (5, 15) or len(rec) != 5 or any(len(r) != 15 for r in rec):
    sys.exit("shape %s x %s" % (d["layers"], d["positions"]))
if rec[-1][-1] != 1.0:
    sys.exit("last cell %r, not exactly 1" % rec[-1][-1])
first = next(i for i, (a, b) in enumerate(zip(clean, corrupt)) if a != b)
if first != 9 or any(r[p] != 0.0 for r in rec for p in range(first)):
    sys.exit("a cell before position %d is not exactly 0" % first)
if any(r[p] != 0.0 for p in range(15) for r in rec[-1:] if p < 14):
    sys.exit("the last layer recovers at a position other than the last")
bad = max(abs(rec[l][p] - (diff[l][p] - k) / (c - k)) for l in range(5) for p in range(15))
if bad > 1e-12:
    sys.exit("recovered is not (diff - corrupt) / (clean - corrupt): %g" % bad)
if not (d["target"] == 1 and d["foil"] == 6 and d["target_piece"] == " " and d["foil_piece"] == ","):
    sys.exit("target %r foil %r" % (d["target"], d["foil"]))
if not d["seconds_per_cell"] > 0:
    sys.exit("seconds_per_cell %r" % d["seconds_per_cell"])
' "$TMP/out" 2>&1)
[ -z "$why" ] && ok "patch: last layer, last position exactly 1; before the first difference exactly 0" \
    || bad "patch's map" "$why"
cp "$TMP/out" "$TMP/patch_default.json"
expect_ok "patch --target --foil" patch $P --clean "I am thy father" --corrupt "I am thy mother" --target 1 \
    --foil 6 --json
/usr/bin/python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(a["recovered"] != b["recovered"])' "$TMP/patch_default.json" "$TMP/out" \
    && ok "patch: --target 1 --foil 6 gives the default's map, bit for bit" || bad "patch ids" "maps differ"
expect_ok "patch --target 57 --foil 1" patch $P --clean "I am thy father" --corrupt "I am thy mother" \
    --target 57 --foil 1 --json
/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d["target"] == 57 and d["foil"] == 1 and d["recovered"][-1][-1] == 1.0))' "$TMP/out" \
    && ok "patch: chosen ids are measured, and the last cell is still exactly 1" \
    || bad "patch chosen ids" "$(head -c 200 "$TMP/out")"
expect_ok "patch (text)" patch $P --clean "I am thy father" --corrupt "I am thy mother" -o "$TMP/patch.txt"
grep -q "^4 (out)  *0.000 .* 1.000$" "$TMP/patch.txt" && grep -q "target 1 ' ', foil 6 ','" "$TMP/patch.txt" \
    && ok "patch's table: the last row ends in 1.000, target and foil named" \
    || bad "patch text" "$(cat "$TMP/patch.txt")"
expect_ok "patch of a llama model" patch -m weights/shakespeare-llama --clean "Good morrow, sir" \
    --corrupt "Good morrow, mad" --json
expect_fail "patch: texts of different lengths" 2 \
    "the clean text is 18 tokens and the corrupted one 19: patching needs the same length" \
    patch $P --clean "ROMEO: I love thee" --corrupt "JULIET: I love thee"
expect_fail "patch: --corrupt missing" 2 "give both texts: --clean TEXT --corrupt TEXT" patch $P --clean "abc"
expect_fail "patch: --target alone" 2 "--target goes with --foil" patch $P --clean abc --corrupt abd --target 3
expect_fail "patch: the same top token" 2 "target and foil are both token 1" \
    patch $P --clean "thy lord" --corrupt "thy Lord" --target 1 --foil 1
expect_fail "patch: a target outside the vocabulary" 2 "target id 65 is outside the vocabulary (0..64)" \
    patch $P --clean abc --corrupt abd --target 65 --foil 1
expect_fail "patch: an LSTM has no residual stream" 2 "arch lstm has no residual stream to patch" \
    patch -m weights/shakespeare-lstm-ln --clean abc --corrupt abd
long=$(head -c 300 tests/data/held_out.txt | tr -d '\n')
expect_fail "patch: texts past the window" 2 "the texts are 290 tokens: patching needs 1 to 128 (the context window)" \
    patch $P --clean "$long" --corrupt "$long"
expect_fail "patch: a character outside the vocabulary" 1 "--clean:" patch $P --clean "é" --corrupt "a"
if have_python 3 matplotlib; then
    expect_ok "patch --plot-dir" patch $P --clean "thy lord" --corrupt "thy lady" --plot-dir "$TMP/patchplots"
    [ "$(head -c 4 "$TMP/patchplots/patch.png" | od -An -c | tr -d ' ')" = "211PNG" ] \
        && [ "$(ls -A "$TMP/patchplots")" = patch.png ] && ok "patch --plot-dir writes patch.png alone" \
        || bad "patch.png" "$(ls -A "$TMP/patchplots")"
    why=$(png_check "$TMP/patchplots/patch.png" '(text.startswith("shakespeare-pre-ln: clean \x27thy lord\x27, "
        "corrupted \x27thy lady\x27") and "/" not in text.split("\n")[0] and w < 2400)')
    [ -z "$why" ] && ok "patch.png: titled by the model and the two texts, not a path" || bad "patch.png title" "$why"
fi

# docs/lab.md's example: its default target and foil differ on every character model (the earlier
# pair's collided on 6 of 9), and its table prints spaces visibly and no -0.000.
E=(--clean "ROMEO and JULIE" --corrupt "Romeo and Julie")
n=0
for m in pre-ln post-ln pre-rms post-rms pre-bn post-bn peri-ln deepnorm nonorm; do
    "$BIN" patch -m "weights/shakespeare-$m" "${E[@]}" > /dev/null 2>&1 && n=$((n + 1))
done
[ "$n" -eq 9 ] && ok "patch: the docs' example runs with its default target and foil on all 9 character models" \
    || bad "patch: the docs' example" "$n of 9 models"
expect_ok "patch (text) of the docs' example, post-ln" patch -m weights/shakespeare-post-ln "${E[@]}"
grep -q "^layer  .* ␣ .* ␣ " "$TMP/out" && ! grep -q -- "-0\.000" "$TMP/out" && [ ! -s "$TMP/err" ] \
    && ok "patch's table: spaces shown as ␣ in its header, 0.000 never signed, no warning" \
    || bad "patch's header and zeros" "$(head -c 600 "$TMP/out")"
expect_ok "patch with a difference the model hardly makes" patch -m weights/shakespeare-pre-rms \
    --clean "I am thy father" --corrupt "I am thy mother" --target 1 --foil 6
grep -q "^normlab: warning: |clean - corrupted| is 0.039 logits, below 1: every share" "$TMP/err" \
    && [ "$(wc -l < "$TMP/err")" -eq 1 ] && ok "patch warns in one line when |clean - corrupted| is below 1 logit" \
    || bad "patch's warning" "$(cat "$TMP/err")"
