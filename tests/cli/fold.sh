# tests/cli/fold.sh — cli_test.sh's part: normlab fold and compare --fold on every shipped
# transformer. The reference is the model as trained, run by the same engine: a folded model's
# log-probabilities equal its own up to float32 rounding, both models' own, since the fold changes
# every weight: |folded - trained| <= |folded - exact| + |trained - exact|. Each term is bounded by
# 1e-4, test_golden's bound on a float32 forward pass against float64, so the tolerance is 2e-4
# (measured 1e-5 to 1.02e-4 on the shipped models, docs/lab.md). compare's own consistency checks
# no longer measure that rounding: a batch and the KV cache run the same chains as one row (0).
# tests/fold_test.py holds the fold itself to 1e-5, in float64.
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

head -c 400 tests/data/held_out.txt > "$TMP/fold.txt"
# fold_check MODEL CENTER_EXPECT: compare --fold (--center) on MODEL; every folded row within the
# tolerance, and with CENTER_EXPECT "far" its centred row at least 1e-2 away (not exact).
fold_check() {
    local m=$1 center=$2 args="--fold"
    [ "$center" != none ] && args="--fold --center"
    if ! "$BIN" compare "weights/$m" -f "$TMP/fold.txt" --repeats 1 $args --json -o "$TMP/fold.json" 2>"$TMP/err"; then
        bad "compare --fold $m" "$(head -c 300 "$TMP/err")"
        return
    fi
    why=$(/usr/bin/python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
tol = 2e-4
for r in rows:
    if r["folded"] == "fold" and not r["fold_max_dlogp"] <= tol:
        sys.exit("fold: max |d log p| %.3g > %.3g" % (r["fold_max_dlogp"], tol))
    if r["folded"] == "fold+center":
        d = r["fold_max_dlogp"]
        if sys.argv[2] == "exact" and not d <= tol:
            sys.exit("fold+center: %.3g > %.3g" % (d, tol))
        if sys.argv[2] == "far" and not d >= 1e-2:
            sys.exit("fold+center: %.3g, expected the inexact centering to show (>= 1e-2)" % d)
n = {k: sum(r["folded"] == k for r in rows) for k in ("none", "fold", "fold+center")}
if n != {"none": 1, "fold": 1, "fold+center": 0 if sys.argv[2] == "none" else 1}:
    sys.exit("rows %s" % n)
print("ok %.3g" % max(r.get("fold_max_dlogp", 0) for r in rows))' "$TMP/fold.json" "$center" 2>&1)
    case $why in
    ok*) ok "compare --fold $m ${center/none/}: folded within 2e-4 (two float32 passes), largest ${why#ok }" ;;
    *) bad "compare --fold $m" "$why" ;;
    esac
}
for m in shakespeare-pre-ln shakespeare-peri-ln; do fold_check $m exact; done
for m in shakespeare-pre-rms shakespeare-post-ln shakespeare-pre-bn; do fold_check $m far; done
for m in shakespeare-post-rms shakespeare-post-bn shakespeare-deepnorm shakespeare-nonorm shakespeare-llama \
    shakespeare-bpe; do fold_check $m none; done

# normlab fold itself: what it writes, and what it refuses
F="$TMP/folded"
expect_ok "fold writes a model folder" fold -m weights/shakespeare-pre-ln -o "$F"
grep -q "9 norms folded, 0 kept; the head untied from wte; the head has a bias" "$TMP/out" \
    && ok "fold reports 9 norms folded, the head untied, its bias" || bad "fold report" "$(cat "$TMP/out")"
# st_check FOLDER EXPR: the folder's model.safetensors read by the standard library (t: name -> floats)
st_check() {
    /usr/bin/python3 -c '
import json, struct, sys
d = open(sys.argv[1] + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", d[:8])[0]; h = json.loads(d[8:8 + n]); meta = h.pop("__metadata__", {})
t = {k: struct.unpack("<%df" % ((v["data_offsets"][1] - v["data_offsets"][0]) // 4),
                      d[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items()}
assert all(v["dtype"] == "F32" for v in h.values()), "not all F32"
cfg = json.load(open(sys.argv[1] + "/config.json"))
assert eval(sys.argv[2]), sys.argv[2]' "$@" 2>&1 | tail -1
}
expr='all(x == 1.0 for k in t if k.endswith(("ln_1.weight", "ln_2.weight")) or k == "ln_f.weight" for x in t[k])'
expr+=' and all(x == 0.0 for k in t if k.endswith(("ln_1.bias", "ln_2.bias")) or k == "ln_f.bias" for x in t[k])'
expr+=' and len(t["lm_head.bias"]) == 65 and cfg["tie_embeddings"] is False and cfg["head_bias"] is True'
expr+=' and meta["folded"] == "gains" and meta["parameters"] == str(818048 + 65 * 128 + 65)'
w=$(st_check "$F" "$expr")
[ -z "$w" ] && ok "fold: every norm the identity, lm_head, config untied with head_bias, parameters counted anew" \
    || bad "fold's tensors" "$w"
"$BIN" fold -m weights/shakespeare-pre-ln -o "$TMP/folded2" > /dev/null 2>&1
cmp -s "$F/model.safetensors" "$TMP/folded2/model.safetensors" && ok "fold writes the same bytes twice" \
    || bad "fold determinism" "the two files differ"
expect_ok "fold --center" fold -m weights/shakespeare-pre-ln --center -o "$TMP/centred"
expr='all(abs(sum(t["wte.weight"][r * 128:(r + 1) * 128]) / 128) < 1e-6 for r in range(65))'
expr+=' and all(abs(sum(t["h.0.attn.c_proj.weight"][i * 128 + j] for i in range(128)) / 128) < 1e-6'
expr+='         for j in range(128))'
expr+=' and all(abs(sum(t["lm_head.weight"][v * 128 + j] for v in range(65)) / 65) < 1e-6 for j in range(128))'
expr+=' and all(abs(sum(t["h.%d.%s.c_proj.bias" % (l, k)]) / 128) < 1e-6 for l in range(4) for k in ("attn", "mlp"))'
expr+=' and meta["folded"] == "gains,center"'
w=$(st_check "$TMP/centred" "$expr")
[ -z "$w" ] \
    && ok "fold --center: wte's rows, c_proj's columns and biases (every writer), the head's over V mean 0 (1e-6)" \
    || bad "fold --center's tensors" "$w"
expect_ok "fold of a folded model" fold -m "$F" -o "$TMP/folded3"
grep -q "9 norms folded" "$TMP/out" && ! grep -q "untied" "$TMP/out" && ok "folding again keeps the head as it is" \
    || bad "fold again" "$(cat "$TMP/out")"
expect_ok "fold of post placement" fold -m weights/shakespeare-post-ln -o "$TMP/post"
grep -q "1 norm folded, 7 kept (h.0.ln_1: post placement" "$TMP/out" && ok "post placement folds only its last norm" \
    || bad "post's fold" "$(cat "$TMP/out")"
expect_ok "fold of peri placement" fold -m weights/shakespeare-peri-ln -o "$TMP/peri"
grep -q "9 norms folded, 8 kept (h.0.ln_1_post: peri's output norm" "$TMP/out" && ok "peri keeps its 8 output norms" \
    || bad "peri's fold" "$(cat "$TMP/out")"
# a refusal of a model for an option exits 2, as patch's and eval --lens's do
expect_fail "fold --center on RMSNorm is refused" 2 "centering is exact only where every reader" \
    fold -m weights/shakespeare-pre-rms --center -o "$TMP/rms"
[ ! -e "$TMP/rms" ] && ok "a refused fold writes no folder" || bad "refused fold" "$TMP/rms exists"
expect_ok "fold --center --force on RMSNorm" fold -m weights/shakespeare-pre-rms --center --force -o "$TMP/rms"
grep -q "note: not exact: centering is exact only" "$TMP/err" && ok "a forced centering says it is not exact" \
    || bad "forced note" "$(cat "$TMP/err")"
w=$(st_check "$TMP/rms" 'meta["folded"] == "gains,center-forced"')
[ -z "$w" ] && ok "a forced centering is tagged gains,center-forced, not as an exact one" || bad "forced tag" "$w"
# list: the folded model's stored loss with ", fold" (the same function); none for the forced one
mkdir -p "$TMP/listed"
ln -s "$F" "$TMP/listed/exact" && ln -s "$TMP/rms" "$TMP/listed/forced"
NORMLAB_MODELS="$TMP/listed" "$BIN" list > "$TMP/out" 2> "$TMP/err"
grep -q "^exact .* [0-9.]* (train.py, fold) " "$TMP/out" && grep -q "^forced .* - (forced) " "$TMP/out" \
    && ok "list: a folded model's stored loss marked fold; a forced centering's not shown" \
    || bad "list of folded models" "$(cat "$TMP/out" "$TMP/err")"
expect_ok "compare --fold's table" compare weights/shakespeare-pre-ln -f tests/data/held_out.txt --fold --repeats 1
grep -q "^model .* bits/tok  max |d log p|$" "$TMP/out" && ok "compare --fold: no float32 column that reads 0" \
    || bad "compare --fold's table" "$(grep -A2 '^folding' "$TMP/out")"
expect_fail "fold --force needs --center" 2 "--force centres where it is not exact" \
    fold -m weights/shakespeare-pre-rms --force -o "$TMP/x"
expect_fail "fold of an LSTM is refused" 2 "arch lstm: its norms sit inside the recurrence" \
    fold -m weights/shakespeare-lstm-ln -o "$TMP/x"
expect_fail "fold needs -o" 2 "needs -o DIR" fold -m weights/shakespeare-pre-ln
expect_fail "fold onto its input is refused" 2 "is the input model" fold -m "$F" -o "$F"
expect_fail "fold of a single .json model is refused" 2 "cannot be folded: give a model directory" \
    fold $M -o "$TMP/x"
expect_fail "compare --center needs --fold" 2 "give --fold too" \
    compare weights/shakespeare-pre-ln -f "$TMP/fold.txt" --center
# The lens on post placement takes the writing norm's affine off and puts the last one on, so the exact
# fold (the last ln_2's affine moved into the head) leaves every layer's readout as it was: within
# float32 rounding (1e-4 bits/char; it moved 7.31 -> 10.02 at post-LN's layer 1 when the lens read the
# head alone)
for m in post-ln deepnorm post-rms; do
    expect_ok "compare --lens --fold $m" compare "weights/shakespeare-$m" -f tests/data/held_out.txt --lens --fold \
        --repeats 1 --json
    why=$(strict_json "$TMP/out" '(d[1]["folded"] == "fold" and d[0]["lens_reading"] == "last affine"
        and max(abs(a - b) for a, b in zip(d[0]["lens_bits_per_char"], d[1]["lens_bits_per_char"])) < 1e-4
        and max(abs(a - b) for a, b in zip(d[0]["lens_kl_bits"], d[1]["lens_kl_bits"])) < 1e-4)')
    [ -z "$why" ] && ok "the lens of folded $m: every layer within 1e-4 of the model as trained" \
        || bad "the lens after a fold, $m" "$why"
done
