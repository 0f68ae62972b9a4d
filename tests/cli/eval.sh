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
[ "$rows" -eq 14 ] && [ -z "$odd" ] && ok "README's 14 models have the parameters list counts" \
    || bad "README parameters" "$rows rows:$odd"
