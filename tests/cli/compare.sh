# tests/cli/compare.sh — cli_test.sh's part: compare: its table, JSON, CSV and plots.
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

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
# a Llama model: --also-swap adds the QK-norm switch; the table's "-qk"/"+qk*" is the JSON's qk_norm
expect_ok "compare llama --also-swap" compare weights/shakespeare-llama --text tests/data/held_out.txt --repeats 1 \
    --also-swap --json -o "$TMP/llswap.json"
run compare weights/shakespeare-llama --text tests/data/held_out.txt --repeats 1 --also-swap
/usr/bin/python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
table = [l.split()[1] for l in open(sys.argv[2]) if l.startswith("weights/shakespeare-llama ") and len(l.split()) > 10]
assert [(r["override"], r["qk_norm"]) for r in rows] == [("none", False), ("norm", False), ("placement", False),
                                                        ("norm", False), ("qk_norm", True)], rows
assert table == ["rmsnorm/pre-qk", "layernorm*/pre-qk", "rmsnorm/post*-qk", "none*/pre-qk", "rmsnorm/pre+qk*"], table
assert rows[4]["bits_per_token"] != rows[0]["bits_per_token"]
' "$TMP/llswap.json" "$TMP/out" 2>&1 \
    && ok "compare llama --also-swap: a QK-norm row, its qk_norm in the JSON as the table's +qk/-qk" \
    || bad "compare llama qk" "$(head -c 300 "$TMP/llswap.json")"
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
if have_python 13 matplotlib; then
    expect_ok "compare --plot-dir" compare $FIX/ln-pre-bias.json $FIX/rms-pre-bias.json --text "$TMP/text.txt" \
        --repeats 1 --plot-dir "$TMP/plots"
    want=""  # (no state_norm.png: no recurrent model is compared)
    for png in bits_per_char residual_rms branch_rms time_share; do
        [ "$(head -c 4 "$TMP/plots/$png.png" | od -An -c | tr -d ' ')" = "211PNG" ] \
            && ok "$png.png is a PNG" || bad "$png.png" "missing or not PNG"
        want="${want}normlab: wrote $TMP/plots/$png.png
"
    done
    [ "$(cat "$TMP/err")
" = "$want" ] && ok "compare --plot-dir names each plot where it is, on normlab's lines, once in place" \
        || bad "plot lines" "$(cat "$TMP/err")"
    [ ! -e "$TMP/plots/state_norm.png" ] && ok "compare --plot-dir: no state_norm.png without a recurrent model" \
        || bad "state_norm.png" "drawn without a recurrent model"
    # figures for a paper: every line and panel named once with its variant, the pattern one square
    # panel with its tokens, the sink's scale free of query 0
    expect_ok "compare --plot-dir with folds, the lens and attention" compare weights/shakespeare-pre-ln \
        weights/shakespeare-post-ln -f tests/data/held_out.txt --repeats 1 --fold --center --lens --attention \
        --attention-pattern 1.0 --plot-dir "$TMP/figs"
    why=$(png_check "$TMP/figs/lens.png" '(all(text.split("\n").count(l) == 1 for l in ["pre-ln [recompute]",
        "pre-ln fold [recompute]", "pre-ln fold+center [recompute]", "post-ln [last affine]",
        "post-ln fold [last affine]", "post-ln fold+center [last affine]"]) and w < 2400)')
    [ -z "$why" ] && ok "lens.png: each of six rows in the legend once, with its variant and reading" \
        || bad "lens.png" "$why"
    why=$(png_check "$TMP/figs/residual_rms.png" '"pre-ln fold+center" in text.split("\n")')
    [ -z "$why" ] && ok "residual_rms.png: the variants named in its legend" || bad "residual_rms.png" "$why"
    why=$(png_check "$TMP/figs/attention.png" '("pre-ln fold: layer 3" in text and "post-ln fold+center: layer 0"
        in text and "query 0 left out" in text and float(text.split("log scale, up to ")[1].split(")")[0]) < 0.99)')
    [ -z "$why" ] && ok "attention.png: each panel titled with its variant, query 0 out, a log colour scale" \
        || bad "attention.png" "$why"
    why=$(png_check "$TMP/figs/attention_pattern.png" '(abs(w - h) < 0.2 * w and w < 2000
        and "pre-ln: head 1.0 on the first window (and 5 other rows in the JSON)" in text)')
    [ -z "$why" ] && ok "attention_pattern.png: one square panel under 2000 pixels, its row and head in the title" \
        || bad "attention_pattern.png" "$why"
    # a Llama row is a transformer's (it once went to the recurrent plot and failed the whole call)
    expect_ok "compare --plot-dir with a llama model" compare weights/shakespeare-llama shakespeare-lstm-ln \
        --text tests/data/held_out.txt --repeats 1 --also-swap --plot-dir "$TMP/llplots"
    [ "$(ls "$TMP/llplots" | wc -l)" -eq 5 ] && ! grep -q "failed" "$TMP/err" \
        && ok "compare --plot-dir: a llama model beside an LSTM, every plot written" \
        || bad "llama plots" "$(cat "$TMP/err")"
fi
# Quantized rows: each one's cost is its bits/char less that of its own model's row as trained (the
# first of the model's rows), whatever the swaps between them; and the q8 row's bits/char is eval's
# with --quantize q8 (the same rounding of a copy, one window a call).
expect_ok "compare --quantize --quantize-act" compare $FIX/ln-pre-bias.json $FIX/ln-post-bias.json --also-swap \
    -f "$TMP/text.txt" --quantize q8 --quantize-act q8 --repeats 1 --csv "$TMP/quant.csv"
quant_check=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { m = $col["model"]; b = $col["bits_per_char"]; q = $col["quantize"]; a = $col["quantize_act"] }
    q == "none" && a == "none" && !(m in first) { first[m] = b }
    q != "none" || a != "none" { n++; d = $col["bits_per_char_cost"] - (b - first[m]); if (d * d > 1e-16) bad++ }
    q == "q8" && m ~ /ln-pre-bias/ { print "q8", b }
    END { print "rows", n + 0, "bad", bad + 0 }' "$TMP/quant.csv")
run eval -m $FIX/ln-pre-bias.json --text "$TMP/text.txt" --json --batch 1 --quantize q8
q8_eval=$(sed -n 's/.*"bits_per_char": \([^,]*\),.*/\1/p' "$TMP/out")
q8_row=$(echo "$quant_check" | sed -n 's/^q8 //p')
echo "$quant_check" | grep -qx "rows 4 bad 0" \
    && awk -v a="$q8_row" -v b="$q8_eval" 'BEGIN { d = a - b; exit !(a > 0 && d * d <= 1e-16 * a * a) }' \
    && ok "quantized rows: 4, each costed against its own model's float32 row; q8 is eval's ($q8_row)" \
    || bad "quantized rows" "$quant_check; eval --quantize q8: $q8_eval"
# the table's labels say their units; legends only for what the rows show
printf 'ab ba ab ba ab ba ab ba ab ba ab ba\n' > "$TMP/cmp_labels.txt"
expect_ok "compare labels" compare $FIX/ln-pre-bias.json $FIX/nonorm.json -f "$TMP/cmp_labels.txt" --repeats 1 \
    --invariance --outliers
head -2 "$TMP/out" | tail -1 | grep -q " prefill tok/s decode tok/s   norm%  vs batch16    vs cache$" \
    && ok "compare: speed columns in tok/s, the differences named vs batch16 and vs cache" \
    || bad "compare labels" "$(head -2 "$TMP/out" | tail -1)"
! grep -q "run otherwise than trained\|batchnorm:running" "$TMP/out" \
    && ok "compare: no legend for a * or a BatchNorm row that is not there" || bad "compare legends" "printed"
[ "$(grep -c '^hidden states' "$TMP/out")" -eq 1 ] \
    && grep -q '^hidden states, means over positions (docs/lab.md#hidden-states' "$TMP/out" \
    && ok "compare: the hidden states' explanation is one line pointing to docs/lab.md" || bad "hidden states line" "-"
grep -E "nonorm.json +none/pre +(layernorm|rmsnorm) +- +- +- +- +-$" "$TMP/out" | wc -l | grep -qx 2 \
    && ok "compare --invariance: a model without norms shows - (nothing to test), not 0" \
    || bad "invariance nonorm" "$(grep nonorm.json "$TMP/out")"
! grep -q '0\.00e+00' "$TMP/out" && grep -qE '^ +[0-9]+ [a-z_]+ +[0-9.]+ +0 ' "$TMP/out" \
    && ok "compare --outliers: a share of none is 0, not 0.00e+00" \
    || bad "outlier shares" "$(grep -m3 'residual' "$TMP/out")"
expect_ok "compare --also-swap legend" compare $FIX/ln-pre-bias.json -f "$TMP/cmp_labels.txt" --repeats 1 --also-swap
grep -q "; \* run otherwise than trained" "$TMP/out" && ok "compare: the * legend where a row is swapped" \
    || bad "swap legend" "$(grep -A1 '^(vs' "$TMP/out")"
# A BPE model beside a character one: each row counts its own tokens and bytes, the per-token figures
# say bits/tok in every section, and the JSON names each row's unit (units and consistent: eval.sh).
printf 'ROMEO: ab ba ab, ba ab ba.\nJULIET: ba ab ba ab ba ab ab.\n' > "$TMP/cmp_bpe.txt"
expect_ok "compare, a BPE and a character model" compare weights/shakespeare-bpe weights/shakespeare-pre-ln \
    -f "$TMP/cmp_bpe.txt" --repeats 1 --lens --quantize q8 --json -o "$TMP/cmp_bpe.json"
run compare weights/shakespeare-bpe weights/shakespeare-pre-ln -f "$TMP/cmp_bpe.txt" --repeats 1 --lens --quantize q8
cp "$TMP/out" "$TMP/cmp_bpe.out"
rows=$(python3 -c 'import json, sys
for r in json.load(open(sys.argv[1])):
    print(r["model"], r["quantize"], r["unit"], r["tokens"], r["chars"], r["bits_per_token"], r["bits_per_char"],
          r["nats_per_token"], r["bytes"], r["bits_per_byte"], r["lens_bits_per_token"] == r["lens_bits_per_char"])
' "$TMP/cmp_bpe.json" 2>&1)
echo "$rows" | awk '{ t = $6 * $4 / $9 - $10; n = $8 / log(2) - $6
        good += ($2 == "none" || $2 == "q8") && $4 == $5 && $6 == $7 && t * t <= 1e-18 && n * n <= 1e-18 * $6 * $6 &&
                $11 == "True" && ($1 ~ /bpe/ ? $3 == "token" : $3 == "char") }
    END { exit good != 4 }' \
    && ok "compare --json: unit token for the BPE rows, char for the others; tokens, bits_per_token consistent" \
    || bad "compare json units" "$rows"
# the table's tokens and bytes columns hold each row's own counts: the JSON's (a BPE row's bytes are fewer:
# its first token is not scored)
table=$(awk '/^weights\/shakespeare-(bpe|pre-ln) +layernorm\/pre +[0-9]/ && !seen[$1]++ { print $1, $7, $8 }' \
    "$TMP/cmp_bpe.out")
json=$(echo "$rows" | awk '$2 == "none" { print $1, $4, $9 }')
[ "$table" = "$json" ] && [ "$(echo "$table" | awk '{ print $3 }' | sort -u | wc -l)" -eq 2 ] \
    && grep -q "^normlab compare: .*tokens, bytes: what each row scored)" "$TMP/cmp_bpe.out" \
    && ! grep -q "bytes scored" "$TMP/cmp_bpe.out" \
    && ok "compare: each row's own tokens and bytes, in the table and its JSON" \
    || bad "compare counts" "table: $table; json: $json; $(head -1 "$TMP/cmp_bpe.out")"
grep -q "cost = bits/tok$" "$TMP/cmp_bpe.out" && grep -q "^model .* rounded  *bits/tok  *cost " "$TMP/cmp_bpe.out" \
    && grep -q "^logit lens (--lens-scale recompute): bits/tok with" "$TMP/cmp_bpe.out" \
    && ! grep -q "bits/char" "$TMP/cmp_bpe.out" \
    && ok "compare: the quantization and lens sections say bits/tok beside a BPE model" \
    || bad "compare bpe sections" "$(grep -n 'bits/' "$TMP/cmp_bpe.out")"
expect_ok "compare, character models only" compare $FIX/ln-pre-bias.json -f "$TMP/text.txt" --repeats 1 --lens \
    --quantize q8 --json -o "$TMP/cmp_char.json"
run compare $FIX/ln-pre-bias.json -f "$TMP/text.txt" --repeats 1 --lens --quantize q8
grep -q "cost = bits/char$" "$TMP/out" && grep -q "^model .* rounded  *bits/char  *cost " "$TMP/out" \
    && grep -q "^logit lens (--lens-scale recompute): bits/char with" "$TMP/out" \
    && grep -q "(26 characters scored)" "$TMP/out" \
    && ! grep -q "bits/tok" "$TMP/out" \
    && ok "compare: the sections say bits/char for character models" || bad "compare char sections" "$(cat "$TMP/out")"
u=$(units "$TMP/cmp_char.json")
consistent "$u" char && echo "$u" | awk '{ exit !($2 == $3 && $2 == 26 && $4 == $5) }' \
    && ok "compare --json of a character model: unit char, tokens = chars" || bad "compare char units" "$u"
expect_fail "compare: one BPE token counts tokens" 1 "$TMP/one_token.txt: the text needs at least 2 tokens" \
    compare weights/shakespeare-bpe -f "$TMP/one_token.txt"
printf 'a' > "$TMP/one_char.txt"
expect_fail "compare: one character counts characters" 1 \
    "$TMP/one_char.txt: the text needs at least 2 known characters" \
    compare $FIX/ln-pre-bias.json -f "$TMP/one_char.txt"
# --attention and the lens's statistics in every format: JSON per head (null for a recurrent row), the
# pattern's rows summing to 1, the lens's KL 0 at the last layer, the CSV's columns; the bad patterns
expect_ok "compare --attention --attention-pattern" compare $FIX/ln-pre-bias.json $FIX/lstm-ln.json \
    -f "$TMP/text.txt" --repeats 1 --lens --attention --attention-pattern 1.1 --json -o "$TMP/cmp_attn.json" \
    --csv "$TMP/cmp_attn.csv"
got=$(python3 -c 'import json, sys
rows = json.load(open(sys.argv[1]))
t, r = rows[0], rows[1]
a, p = t["attention"], t["attention_pattern"]
L, H = len(a["sink"]), len(a["sink"][0])
sums = [sum(row) for row in p["probabilities"]]
print(L, H, a["queries"], all(0 < s < 1 for h in a["sink"] for s in h), max(abs(s - 1) for s in sums) < 1e-6,
      p["layer"], p["head"], t["lens_kl_bits"][-1], t["lens_top1_agreement"][-1], t["lens_kl_bits"][0] > 0,
      r["attention"], r["attention_pattern"], r["lens_kl_bits"])
' "$TMP/cmp_attn.json" 2>&1)
# eval's windows of 9 positions moving 4 over 26 inputs: 1 + ceil(17 / 4) = 6 windows of 9 queries each
[ "$got" = "2 3 54 True True 1 1 0 1 True None None None" ] \
    && ok "compare --attention: per head, the pattern's rows sum to 1, the lens's last KL 0; null if recurrent" \
    || bad "compare attention json" "$got"
cols=$(head -1 "$TMP/cmp_attn.csv" | tr ',' '\n' | grep -c '^attention_\|^lens_kl_bits_[0-9]')
# (the lens's columns run to the deepest row's layers, the LSTM's 3; the attention's to the transformer's 2;
# and attention_uniform, one a row)
[ "$cols" -eq $((4 * 2 * 3 + 4 + 1)) ] && ok "compare --attention --csv: a column per statistic, layer and head" \
    || bad "compare attention csv" "$cols columns"
run compare $FIX/ln-pre-bias.json -f "$TMP/text.txt" --repeats 1 --attention
grep -q "^attention per layer and head" "$TMP/out" \
    && grep -q "^    layer 1  *entropy_bits  *[0-9.]*/[0-9.]*/" "$TMP/out" \
    && ok "compare --attention: the text section" || bad "compare attention text" "$(tail -5 "$TMP/out")"
expect_fail "compare --attention-pattern beyond the model" 1 "no attention pattern 2.0: the model has 2 layers" \
    compare $FIX/ln-pre-bias.json -f "$TMP/text.txt" --repeats 1 --attention --attention-pattern 2.0
expect_fail "compare --attention-pattern not LAYER.HEAD" 2 "'1' is not LAYER.HEAD" \
    compare $FIX/ln-pre-bias.json -f "$TMP/text.txt" --attention --attention-pattern 1
expect_fail "compare --attention-pattern without --attention" 2 "--attention-pattern needs --attention" \
    compare $FIX/ln-pre-bias.json -f "$TMP/text.txt" --attention-pattern 0.0
