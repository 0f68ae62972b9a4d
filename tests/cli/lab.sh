# tests/cli/lab.sh — cli_test.sh's part: eval --lens and --attention, against compare's figures for
# the same model and text. compare's are checked against the float64 reference in tests/test_lab.c
# (1e-6 bits); eval reads the same pass on one state with its products split over the threads, so the
# two agree to float32 rounding: 1e-6 here. And the refusals.
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

head -c 600 tests/data/held_out.txt > "$TMP/lab.txt"
for m in shakespeare-pre-ln shakespeare-llama; do
    if ! "$BIN" compare "weights/$m" -f "$TMP/lab.txt" --repeats 1 --lens --attention --json -o "$TMP/lab_c.json" \
        2>"$TMP/err"; then
        bad "compare --lens --attention $m" "$(head -c 300 "$TMP/err")"
        continue
    fi
    expect_ok "eval --lens --attention $m" eval -m "weights/$m" -f "$TMP/lab.txt" --lens --attention --json
    why=$(/usr/bin/python3 -c '
import json, sys
e, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))[0]
L = len(c["lens_kl_bits"]) - 1
if len(e["lens"]) != L + 1 or len(e["attention"]) != L:
    sys.exit("layers: lens %d, attention %d, expected %d and %d" % (len(e["lens"]), len(e["attention"]), L + 1, L))
worst = 0.0
for l, y in enumerate(e["lens"]):
    for k, ck in (("bits_per_token", "lens_bits_per_char"), ("kl_bits", "lens_kl_bits"),
                  ("entropy_bits", "lens_entropy_bits"), ("top1_agreement", "lens_top1_agreement")):
        worst = max(worst, abs(y[k] - c[ck][l]))
for l, heads in enumerate(e["attention"]):
    for h, a in enumerate(heads):
        for k in ("entropy_bits", "sink", "self", "distance"):
            worst = max(worst, abs(a[k] - c["attention"][k][l][h]))
        if a["queries"] != c["attention"]["queries"]:
            sys.exit("queries %d, compare %d" % (a["queries"], c["attention"]["queries"]))
if worst > 1e-6:
    sys.exit("largest difference from compare %g" % worst)
if e["lens"][L]["kl_bits"] != 0.0 or abs(e["lens"][L]["bits_per_token"] - e["bits_per_token"]) > 1e-6:
    sys.exit("the last layer: kl %r, bits %r against eval %r"
             % (e["lens"][L]["kl_bits"], e["lens"][L]["bits_per_token"], e["bits_per_token"]))
' "$TMP/out" "$TMP/lab_c.json" 2>&1)
    [ -z "$why" ] && ok "eval --lens --attention $m: every figure within 1e-6 of compare's, the last layer's KL 0" \
        || bad "eval --lens --attention $m" "$why"
done
expect_ok "eval --lens (text)" eval -m weights/shakespeare-pre-ln -f "$TMP/lab.txt" --lens
grep -q "^lens 4 bits .* kl_bits 0.000000 +/- 0.000000 " "$TMP/out" && ! grep -q "^attention" "$TMP/out" \
    && ok "eval --lens prints a line a layer, the last with KL 0, and no attention" \
    || bad "eval --lens" "$(cat "$TMP/out")"
expect_fail "eval --lens of an LSTM" 2 "--lens reads a residual stream and attention: a recurrent model has neither" \
    eval -m weights/shakespeare-lstm-ln -f "$TMP/lab.txt" --lens
expect_fail "eval --attention --batch" 2 "--attention runs one window a call" \
    eval -m weights/shakespeare-pre-ln -f "$TMP/lab.txt" --attention --batch 4

# A model that begins a text with BOS (shakespeare-llama with add_bos): eval's windows move by half a
# window, so only the first begins with it, and compare says so; a text of one window has it in every one.
mkdir -p "$TMP/bosm"
for f in config.json model.safetensors; do ln -sf "$PWD/weights/shakespeare-llama/$f" "$TMP/bosm/$f"; done
sed 's/"add_bos": false/"add_bos": true/' weights/shakespeare-llama/tokenizer.json > "$TMP/bosm/tokenizer.json"
expect_ok "compare --attention of a bos model" compare "$TMP/bosm" -f tests/data/held_out.txt --attention --repeats 1
grep -q "^    sink: BOS in the first window only; later windows begin anywhere" "$TMP/out" \
    && ok "compare --attention says that only the first window's sink is BOS" \
    || bad "compare --attention bos" "$(grep -A1 'queries a head' "$TMP/out")"
expect_ok "eval --attention of a bos model" eval -m "$TMP/bosm" -f tests/data/held_out.txt --attention --json
why=$(strict_json "$TMP/out" 'd["sink_token"] == "bos_first_window"')
[ -z "$why" ] && ok "eval --attention says that only the first window's sink is BOS" || bad "eval sink_token" "$why"
head -c 100 tests/data/held_out.txt > "$TMP/bos_short.txt"
expect_ok "compare --attention --json of a bos model, one window" \
    compare "$TMP/bosm" -f "$TMP/bos_short.txt" --attention --repeats 1 --json
why=$(strict_json "$TMP/out" '(d[0]["attention"]["sink_token"] == "bos"
    and d[0]["attention"]["queries_past_first"] < d[0]["attention"]["queries"])')
[ -z "$why" ] && ok "one window: sink_token bos, sink and self over the queries past the first" \
    || bad "compare --json sink_token" "$why"
expect_ok "compare --attention of a model without bos" compare weights/shakespeare-pre-ln -f "$TMP/bos_short.txt" \
    --attention --repeats 1 --fold --json
why=$(strict_json "$TMP/out" '(d[0]["attention"]["sink_token"] == "text" and abs(d[0]["attention"]["uniform"]
    - sum(1 / (t + 1) for t in range(1, d[0]["attention"]["queries_past_first"] + 1))
    / d[0]["attention"]["queries_past_first"]) < 1e-12)')
[ -z "$why" ] && ok "no bos: sink_token text; uniform = the mean of 1/(t+1) over the queries past the first" \
    || bad "compare --json uniform" "$why"

# --lens-scale: the final norm with the last layer's scale (TransformerLens) against its own (tuned-lens);
# on pre-LN the embeddings' KL from the last layer is 16.3 bits one way and 3.2 the other (held_out.txt)
expect_ok "eval --lens --lens-scale final" eval -m weights/shakespeare-pre-ln -f tests/data/held_out.txt --lens \
    --lens-scale final --json
cp "$TMP/out" "$TMP/lens_final.json"
expect_ok "eval --lens (recompute)" eval -m weights/shakespeare-pre-ln -f tests/data/held_out.txt --lens --json
why=$(/usr/bin/python3 -c '
import json, sys
f, r = (json.load(open(p)) for p in sys.argv[1:3])
if (f["lens_reading"], r["lens_reading"]) != ("final", "recompute"):
    sys.exit("readings %s, %s" % (f["lens_reading"], r["lens_reading"]))
if not (abs(f["lens"][0]["kl_bits"] - 3.22) < 0.01 and abs(r["lens"][0]["kl_bits"] - 16.31) < 0.01):
    sys.exit("layer 0 KL: final %r, recompute %r" % (f["lens"][0]["kl_bits"], r["lens"][0]["kl_bits"]))
if f["lens"][-1] != r["lens"][-1]:
    sys.exit("the last layer differs: %r %r" % (f["lens"][-1], r["lens"][-1]))' "$TMP/lens_final.json" "$TMP/out" 2>&1)
[ -z "$why" ] && ok "--lens-scale final: labelled, layer 0's KL 3.22 bits against recompute's 16.31, the last equal" \
    || bad "--lens-scale" "$why"
expect_fail "--lens-scale without --lens" 2 "--lens-scale is how --lens reads a layer: give --lens too" \
    compare weights/shakespeare-pre-ln -f "$TMP/lab.txt" --lens-scale final
