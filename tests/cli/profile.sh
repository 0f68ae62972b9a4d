# tests/cli/profile.sh — cli_test.sh's part: profile: its reports, the trace, the prompt line.
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

# ---- profile
expect_ok "profile" profile $M -p "ab" -n 20 --trace "$TMP/trace.json"
grep -q "^== prefill: 2 positions" "$TMP/out" && grep -q "^== decode: " "$TMP/out" \
    && grep -q "not covered by any row" "$TMP/out" \
    && ok "profile prints both phases and the footer" || bad "profile table" "$(head -5 "$TMP/out")"
core=$("$BIN" info $M --json | sed -n 's/.*"blas_core":"\([^"]*\)".*/\1/p')
threads_re="OpenBLAS $core kernels \(chosen by (openblas|environment|normlab)\), "
threads_re=$threads_re"threads ([0-9]+) \\(one engine thread, each product split over up to \\2\\);"
grep -qE "$threads_re" "$TMP/out" \
    && ok "profile reports the kernel family and threads" || bad "profile threads" "$(head -2 "$TMP/out")"
run profile $M -p "ab" -n 20 --json -o "$TMP/prof.json"
[ ! -s "$TMP/out" ] && grep -q '"phase":[[:space:]]*"decode"' "$TMP/prof.json" \
    && ok "profile --json -o written" || bad "profile --json" "$(head -c 200 "$TMP/prof.json")"
run profile $M -p "ab" -n 20 --json
grep -q '"phase":[[:space:]]*"decode"' "$TMP/out" && ! grep -q "^== decode" "$TMP/out" \
    && ok "profile --json prints JSON instead of the table" || bad "profile --json stdout" "$(head -c 200 "$TMP/out")"
grep -q '"traceEvents"' "$TMP/trace.json" && grep -q '"name": "layer 1"' "$TMP/trace.json" \
    && ok "profile --trace written" || bad "profile --trace" "$(head -c 200 "$TMP/trace.json")"
expect_fail "profile unwritable json" 2 "output /nonexistent/dir/p.json: its directory cannot be used" \
    profile $M -n 5 -o /nonexistent/dir/p.json
expect_fail "profile unwritable trace" 2 "its directory cannot be used" \
    profile $M -n 5 -o "$TMP/p2.json" --trace /nonexistent/t.json
[ ! -e "$TMP/p2.json" ] && ok "no half-written profile left behind" || bad "half-written profile" "$TMP/p2.json exists"
# the summary (default) and the full table (--layers); sums read from one run's output
expect_ok "profile summary" profile $M -p "ab" -n 3
grep -qxF 'prompt: "ab" (2 characters, -p)' "$TMP/out" && ok "profile names its -p prompt" \
    || bad "profile -p prompt line" "$(sed -n 2p "$TMP/out")"
grep -q "^-- per layer, slowest first" "$TMP/out" && grep -q "^  all qkv " "$TMP/out" \
    && ! grep -q "^    0 norm1 " "$TMP/out" && ok "profile prints the summary, not the layer x component rows" \
    || bad "profile summary" "$(head -12 "$TMP/out")"
# per phase: component totals sum to the wall line's rows; unattributed = wall - rows; layers slowest first
why=$(awk '/^== /{ph=$2; sum=0; last=1e30}
    /^  all /{sum += $4}
    / \(all\) /{if ($4 > last) print ph " layers not slowest first"; last=$4}
    /^wall /{w=$2; r=$5; u=$12; if (sum-r > 0.001*13 || r-sum > 0.001*13) print ph " components " sum " != rows " r;
             if (w-r-u > 0.0015 || u-(w-r) > 0.0015) print ph " unattributed " u " != " w " - " r}' "$TMP/out")
[ -z "$why" ] && grep -c "^wall " "$TMP/out" | grep -qx 2 && ok "profile summary: totals add up, layers ordered" \
    || bad "profile summary sums" "$why"
note='* layer 1: from attention on, each pass computes only its last position, the one a logit needs'
grep -qxF "$note (1 of 2 positions; the rows no logit reads are pruned)" "$TMP/out" \
    && [ "$(grep -c '^\* layer' "$TMP/out")" = 1 ] && ok "profile explains the last layer's pruned prefill rows" \
    || bad "profile pruned footnote" "$(grep '^\*' "$TMP/out")"
expect_ok "profile --layers" profile $M -p "ab" -n 3 --layers
grep -q "^    0 norm1 " "$TMP/out" && grep -q "^-- per layer$" "$TMP/out" \
    && grep -q "^-- per component, all layers" "$TMP/out" && grep -q "^   1\* attention " "$TMP/out" \
    && grep -q "^   1\* (all) " "$TMP/out" && ! grep -q "^   0\*" "$TMP/out" \
    && grep -q '^\* layer 1: ' "$TMP/out" && ok "profile --layers prints the full table, the pruned rows marked" \
    || bad "profile --layers" "$(grep -E '^ +1|^\*' "$TMP/out" | head)"
expect_ok "profile of a recurrent model" profile -m $FIX/lstm-ln.json -p "abab" -n 3 --layers
! grep -q '^\*' "$TMP/out" && ! grep -q '^ *[0-9]\*' "$TMP/out" && grep -q "^    0 recurrent_proj " "$TMP/out" \
    && ok "a recurrent prefill prunes nothing: no row marked, no footnote" \
    || bad "recurrent profile" "$(grep -E '^\*|^ +[0-9]' "$TMP/out" | head)"
expect_ok "profile of one position" profile $M -p "" -n 3 --layers
! grep -q '^\*' "$TMP/out" && ! grep -q '^ *[0-9]\*' "$TMP/out" \
    && grep -qxF 'prompt: "\n" (1 character: -p gave an empty prompt)' "$TMP/out" \
    && ok "no pruned rows, no footnote, for a 1-position prompt" \
    || bad "1-position profile" "$(grep -E '^\*|^prompt' "$TMP/out")"
printf 'ab' > "$TMP/prompt.txt"
expect_ok "profile -f" profile $M -f "$TMP/prompt.txt" -n 3
grep -qxF "prompt: the file \"$TMP/prompt.txt\" (-f)" "$TMP/out" && ok "profile names its -f prompt" \
    || bad "profile -f prompt line" "$(sed -n 2p "$TMP/out")"
expect_ok "profile, default prompt" profile -m weights/shakespeare-pre-ln -n 2
king='"KING:\nNow speak, good friend, and tell me true:\nWhat news from Milan?\n"'
grep -qxF "prompt: $king (70 characters, the default)" "$TMP/out" \
    && grep -q "^-- the 3 slowest of 4 layers" "$TMP/out" \
    && [ "$(grep -c '^\* layer 3: from attention on' "$TMP/out")" = 1 ] \
    && ok "profile names its default prompt and shows the 3 slowest of 4 layers" \
    || bad "profile default prompt" "$(grep -E '^prompt|^--|^\*' "$TMP/out")"
expect_ok "profile, default prompt missing from the vocabulary" profile $M -n 2
grep -qxF "prompt: \"\\n\" (1 character: the default's characters are not all in this vocabulary)" "$TMP/out" \
    && ok "profile says when its default prompt did not fit the vocabulary" \
    || bad "default fallback" "$(sed -n 2p "$TMP/out")"
expect_ok "generate plain" generate $M -p "ab" -n 40 --seed 9; cp "$TMP/out" "$TMP/first"
expect_ok "generate --profile" generate $M -p "ab" -n 40 --seed 9 --profile
cmp -s "$TMP/out" "$TMP/first" && ok "--profile leaves stdout byte-identical" || bad "--profile stdout" "differs"
grep -q "^== decode" "$TMP/err" && ok "--profile table on stderr" || bad "--profile table" "$(head -3 "$TMP/err")"
expect_ok "eval --profile" eval $M --text "$TMP/text.txt" --profile
grep -q "^== prefill" "$TMP/err" && ok "eval --profile table on stderr" || bad "eval --profile" "$(head -3 "$TMP/err")"
# after context shifts a decode re-runs positions: us/token divides by the tokens decoded, and says so
expect_ok "profile with context shifts" profile $M -p "ab" -n 40 --layers
why=$(awk '/^== decode: 39 tokens \([0-9]+ positions through the forward pass\)$/ { d = 1; next }
    d && $1 == "all" && $2 == "qkv" { printf "%.3f %.3f", $5, $4 * 1000 / 39; exit }' "$TMP/out")
[ -n "$why" ] && awk -v a="${why% *}" -v b="${why#* }" 'BEGIN { exit !(a - b < 0.02 && b - a < 0.02 && a > 0.1) }' \
    && ok "profile: decode's us/token is per decoded token (39), not per position" \
    || bad "profile us/token" "'$why' $(grep '^== decode' "$TMP/out")"
expect_ok "profile --quantize" profile $M -p "ab" -n 5 --quantize q8 --quantize-act q8
grep -q "; rounded (simulated): weights q8, activations q8; " "$TMP/out" \
    && ok "profile: a --quantize run says so in its header" || bad "profile quantize" "$(head -1 "$TMP/out")"
# the prompt line counts a BPE model's prompt in its tokens, a character model's in characters
"$BIN" profile -m weights/shakespeare-bpe -p hello -n 2 > "$TMP/pb" 2>/dev/null
"$BIN" profile -m weights/shakespeare-pre-ln -p hello -n 2 > "$TMP/pc" 2>/dev/null
grep -qF 'prompt: "hello" (1 token, -p)' "$TMP/pb" && grep -qF 'prompt: "hello" (5 characters, -p)' "$TMP/pc" \
    && ok "profile's prompt line: a BPE model's tokens, a character model's characters" \
    || bad "profile prompt unit" "$(grep prompt: "$TMP/pb" "$TMP/pc")"
