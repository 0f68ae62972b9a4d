# tests/cli/eval.sh — cli_test.sh's part: info and eval.
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

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
shipped=$(ls weights/*/config.json | wc -l)
[ "$rows" -eq "$shipped" ] && [ -z "$odd" ] && ok "README's $rows models (all shipped) have list's parameter counts" \
    || bad "README parameters" "$rows rows:$odd"
# The units by name: eval's JSON says "unit", and holds tokens, bits_per_token and bits_per_byte for
# either kind of model (a character model's are its per-char figures, under their old keys too).
BPE_M="-m weights/shakespeare-bpe"
# units FILE: "unit tokens chars bits_per_token bits_per_char nats_per_token bytes bits_per_byte" of one JSON
units() {
    python3 -c 'import json, sys
e = json.load(open(sys.argv[1])); e = e[0] if isinstance(e, list) else e
print(*(e.get(k, "-") for k in ("unit", "tokens", "chars", "bits_per_token", "bits_per_char", "nats_per_token",
                                "bytes", "bits_per_byte")))' "$1"
}
# consistent "U T C BT BC NT B BB" WANT_UNIT: the unit, bits = nats / ln 2 and bits/token x tokens / bytes =
# bits/byte (within 1e-8 relative: eval prints 9 significant digits)
consistent() {
    echo "$1" | awk -v want="$2" '{ t = $4 * $2 / $7 - $8; n = $6 / log(2) - $4
        exit !($1 == want && $2 > 0 && t * t <= 1e-16 * $8 * $8 && n * n <= 1e-16 * $4 * $4) }'
}
expect_ok "eval json, a character model" eval $M --text "$TMP/text.txt" --json
cp "$TMP/out" "$TMP/eval_char.json"; u=$(units "$TMP/eval_char.json")
consistent "$u" char && echo "$u" | awk '{ exit !($2 == $3 && $2 == 26 && $4 == $5) }' \
    && ok "eval json of a character model: unit char, tokens = chars, bits_per_token = bits_per_char" \
    || bad "eval units, char" "$u"
expect_ok "eval json, a BPE model" eval $BPE_M --text "$TMP/text.txt" --json
cp "$TMP/out" "$TMP/eval_bpe.json"; u=$(units "$TMP/eval_bpe.json")
consistent "$u" token && echo "$u" | awk '{ exit !($3 == "-" && $5 == "-" && $2 < 26) }' \
    && ok "eval json of a BPE model: unit token, its tokens, no chars keys" || bad "eval units, bpe" "$u"
printf 'hello' > "$TMP/one_token.txt"
expect_fail "eval of one BPE token counts tokens" 1 \
    "$TMP/one_token.txt: the text needs at least 2 tokens to score one" \
    eval $BPE_M --text "$TMP/one_token.txt"
# logits refuses a text longer than the context, counted in the model's tokens
head -c 1000 tests/data/held_out.txt > "$TMP/long_prompt.txt"
expect_fail "logits: a BPE text over the context counts tokens" 1 "tokens, more than the model's context of 128" \
    logits $BPE_M -f "$TMP/long_prompt.txt"
printf 'ab ba ab ba ab' > "$TMP/long_ab.txt"
expect_fail "logits: a character text over the context counts characters" 1 \
    "$TMP/long_ab.txt: 14 characters, more than the model's context of 9" logits $M -f "$TMP/long_ab.txt"
# the progress line (a terminal's, from a second in) counts a BPE model's tokens
if command -v script > /dev/null 2>&1; then
    for i in $(seq 40); do cat tests/data/held_out.txt; done > "$TMP/long.txt"
    script -qec "$BIN eval $BPE_M -f $TMP/long.txt --threads 1 > /dev/null" /dev/null < /dev/null | tr '\r' '\n' \
        > "$TMP/progress.txt"
    grep -qE '^eval: [0-9]+ / [0-9]+ tokens \([0-9]+%\), [0-9]+ tok/s, [0-9]+ s left' "$TMP/progress.txt" \
        && ! grep -q 'characters\|chars/s' "$TMP/progress.txt" \
        && ok "eval's progress line counts a BPE model's tokens" \
        || bad "eval progress" "$(head -c 300 "$TMP/progress.txt")"
fi
run logits --help
tr '\n' ' ' < "$TMP/out" | grep -q "at most block_size tokens: characters, or a BPE model's tokens" \
    && ok "logits' help counts the context in tokens" || bad "logits help" "$(head -3 "$TMP/out")"
