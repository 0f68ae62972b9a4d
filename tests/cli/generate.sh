# tests/cli/generate.sh — cli_test.sh's part: generate: streaming, seeds, echo, golden outputs, batched samples.
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

# ---- generation
expect_ok "greedy" generate $M -p "ab" -n 40 --temperature 0 --no-echo
golden "greedy golden" greedy.txt
expect_ok "sampled" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --temperature 0.8 --no-echo
golden "sampled golden" sampled.txt
cp "$TMP/out" "$TMP/first"; cp "$TMP/out" "$TMP/sampled"
expect_ok "same seed again" generate $M -p "a b" -n 60 -s 7 --top-k 5 --top-p 0.9 --no-echo
cmp -s "$TMP/out" "$TMP/first" && ok "same seed, same bytes" || bad "same seed, same bytes" "outputs differ"
expect_ok "two threads" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --temperature 0.8 --threads 2 \
    --no-echo
cmp -s "$TMP/out" "$TMP/first" && ok "same bytes with 2 threads" || bad "same bytes with 2 threads" "outputs differ"
expect_ok "--no-mmap" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --temperature 0.8 --no-mmap --no-echo
cmp -s "$TMP/out" "$TMP/first" && ok "--no-mmap prints the same text" || bad "--no-mmap" "outputs differ"
# 8-stream groups run sgemm on the loader's transposed copies where the kernels have them (linear.c)
expect_ok "samples, mapped" generate -m weights/shakespeare-pre-ln -p "ab" -n 30 --seed 5 --samples 9 --no-echo
cp "$TMP/out" "$TMP/samples_mapped"
expect_ok "samples, --no-mmap" generate -m weights/shakespeare-pre-ln -p "ab" -n 30 --seed 5 --samples 9 --no-echo \
    --no-mmap
cmp -s "$TMP/out" "$TMP/samples_mapped" && ok "--no-mmap samples the same text" || bad "--no-mmap samples" "differ"
expect_ok "--no-mmap directory model" info -m weights/shakespeare-pre-ln --no-mmap --json
grep -q '"parameters":818048' "$TMP/out" \
    && ok "--no-mmap loads a directory model" || bad "--no-mmap dir" "$(head -c 200 "$TMP/out")"
# the copies: every linear of the shipped model (3,179,008 bytes) with AVX2 or AVX-512 kernels, else none
grep -qE '"transposed_bytes":(3179008|0),' "$TMP/out" \
    && ok "info reports the transposed copies" || bad "transposed_bytes" "$(grep -o '"transposed[^,]*' "$TMP/out")"
expect_ok "other seed" generate $M -p "a b" -n 60 --seed 8 --top-k 5 --top-p 0.9 --temperature 0.8 --no-echo
cmp -s "$TMP/out" "$TMP/first" && bad "other seed, other bytes" "identical" || ok "other seed, other bytes"
expect_ok "echo by default" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9
[ "$(cat "$TMP/out")" = "a b$(cat "$GOLD/sampled.txt")" ] \
    && ok "the prompt is echoed before the continuation" || bad "echo" "$(head -c 80 "$TMP/out")"
expect_ok "-o FILE" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --no-echo -o "$TMP/gen.txt"
[ ! -s "$TMP/out" ] && cmp -s "$TMP/gen.txt" "$GOLD/sampled.txt" \
    && ok "-o writes the text to the file, nothing to stdout" || bad "-o" "$(head -c 80 "$TMP/gen.txt")"
expect_ok "utf8 model" generate $U -p "é" -n 50 --seed 3 --no-echo --temperature 1
n=$(wc -m < "$TMP/out")
[ "$n" -eq 50 ] && ok "-n counts characters, not bytes" || bad "-n counts characters" "got $n characters"
golden "utf8 golden" utf8.txt
expect_ok "-n 0" generate $M -n 0 --seed 1 --no-echo
[ ! -s "$TMP/out" ] && ok "-n 0 prints nothing" || bad "-n 0 prints nothing" "$(cat "$TMP/out")"
expect_ok "no seed" generate $M -n 5
grep -qE '^normlab: seed [0-9]+$' "$TMP/err" \
    && ok "random seed printed to stderr" || bad "random seed printed" "$(cat "$TMP/err")"
seed=$(sed -n 's/^normlab: seed \([0-9]*\)$/\1/p' "$TMP/err"); cp "$TMP/out" "$TMP/first"
expect_ok "printed seed repeats" generate $M -n 5 --seed "$seed"
cmp -s "$TMP/out" "$TMP/first" && ok "printed seed reproduces the run" || bad "printed seed reproduces" "differs"
expect_ok "empty prompt" generate $M -p "" -n 30 --seed 4; cp "$TMP/out" "$TMP/first"
expect_ok "newline prompt" generate $M -p $'\n' -n 30 --seed 4
cmp -s "$TMP/out" "$TMP/first" \
    && ok "empty prompt starts from a newline" || bad "empty prompt" "differs from a newline prompt"
printf 'ab ba' > "$TMP/prompt.txt"
expect_ok "prompt file" generate $M -f "$TMP/prompt.txt" -n 30 --seed 4; cp "$TMP/out" "$TMP/first"
expect_ok "prompt inline" generate $M -p 'ab ba' -n 30 --seed 4
cmp -s "$TMP/out" "$TMP/first" && ok "-f equals -p" || bad "-f equals -p" "differs"
expect_ok "echo" generate $M -p 'ab' -n 10 --seed 4 --echo
[ "$(head -c 2 "$TMP/out")" = "ab" ] && [ "$(wc -m < "$TMP/out")" -eq 12 ] \
    && ok "--echo prints the prompt first" || bad "--echo" "$(cat "$TMP/out")"
expect_ok "skip unknown" generate $M -p 'aZb' -n 10 --seed 4 --skip-unknown
grep -q "dropped 1 character outside" "$TMP/err" \
    && ok "--skip-unknown warns" || bad "--skip-unknown warns" "$(cat "$TMP/err")"
expect_ok "skip leaves nothing" generate $M -p "ZZ" -n 30 --seed 4 --skip-unknown; cp "$TMP/out" "$TMP/skipped"
expect_ok "newline prompt again" generate $M -p $'\n' -n 30 --seed 4
cmp -s "$TMP/out" "$TMP/skipped" \
    && ok "a prompt with nothing known left starts from a newline" || bad "skip leaves nothing" "differs"
expect_ok "prompt inline (for stdin)" generate $M -p 'ab ba' -n 30 --seed 4 && cp "$TMP/out" "$TMP/inline"
printf 'ab ba' | "$BIN" generate $M -f - -n 30 --seed 4 >"$TMP/stdin" 2>/dev/null
cmp -s "$TMP/stdin" "$TMP/inline" && ok "-f - reads the prompt from stdin" || bad "-f -" "differs"
expect_ok "past the window" generate $M -p 'ab' -n 100 --seed 4 --no-echo
[ "$(wc -m < "$TMP/out")" -eq 100 ] && grep -q "context shifts" "$TMP/err" \
    && ok "generation goes on past block_size" || bad "past the window" "$(cat "$TMP/err")"
"$BIN" generate $M -p 'ab' -n 100 --seed 4 --json > "$TMP/shift.json" 2>/dev/null
why=$(strict_json "$TMP/shift.json" "d['context_shifts'] > 0 and 0 < d['shift_seconds'] < d['decode_seconds']") \
    && ok "--json: the context shifts' share of decode_seconds (shift_seconds)" || bad "shift_seconds" "$why"
expect_ok "exact window" generate $M -p 'ab' -n 100 --seed 4 --exact-window --no-echo
[ "$(wc -m < "$TMP/out")" -eq 100 ] && ok "--exact-window goes on past block_size" || bad "exact window" "short"
# a prompt over the context (9) keeps room for -n: 17 characters, -n 3: the last 7, so the 2 fed back
# need no shift; the warning says what went; the echo is what the model saw
expect_ok "long prompt" generate $M -p 'ab ab ab ab ab ab' -n 3 --seed 4
grep -qF "the prompt has 17 characters, more than the context's 9: its first 10 (10 bytes) are dropped, leaving \
room for 2 new characters before a context shift" "$TMP/err" && ! grep -q "context shift in" "$TMP/err" \
    && [ "$(head -c 7 "$TMP/out")" = "b ab ab" ] \
    && ok "long prompt: cut to leave room for -n, what was dropped said, no shift" \
    || bad "long prompt" "$(cat "$TMP/err")"
expect_ok "long prompt, many new" generate $M -p 'ab ab ab ab ab ab' -n 30 --seed 4 --no-echo
grep -qF "its first 12 (12 bytes) are dropped, leaving room for 4 new characters" "$TMP/err" \
    && grep -qE "decode [0-9]+ tokens in [0-9.]+ ms \([0-9]+ tok/s\); [0-9]+ context shifts in [0-9.]+ ms" "$TMP/err" \
    && ok "long prompt, -n past the window: room for half the window; the shifts' time said apart" \
    || bad "long prompt -n 30" "$(cat "$TMP/err")"
expect_ok "override" generate $M -p 'ab' -n 5 --seed 4 --norm rmsnorm --placement post
grep -q "warning: the model was trained as layernorm/pre; running it as rmsnorm/post" "$TMP/err" \
    && ok "override warns" || bad "override warns" "$(cat "$TMP/err")"
expect_ok "timing on stderr" generate $M -p 'ab' -n 5 --seed 4
grep -qE "prefill 2 tokens in .* tok/s\); 5 new characters \(the first from the prefill's logits\); decode 4 tokens" \
    "$TMP/err" && ok "timing reported on stderr, counting -n's characters" || bad "timing" "$(cat "$TMP/err")"
# every command takes -m; compare takes it repeated, beside positional models
expect_ok "compare -m -m" compare -m $FIX/ln-pre-bias.json -m $FIX/rms-pre-bias.json -f "$TMP/short.txt" --repeats 1
cp "$TMP/out" "$TMP/cmp_m"
expect_ok "compare positional and -m" compare $FIX/ln-pre-bias.json -m $FIX/rms-pre-bias.json -f "$TMP/short.txt" \
    --repeats 1
row='^tests/fixtures/(ln|rms)-pre-bias.json +(layernorm|rmsnorm)/pre +[0-9]'
[ "$(grep -cE "$row" "$TMP/out")" -eq 2 ] && [ "$(grep -cE "$row" "$TMP/cmp_m")" -eq 2 ] \
    && ok "compare: a row per -m and positional model" || bad "compare -m" "$(cat "$TMP/out")"
mkdir -p "$TMP/models"; cp $FIX/ln-pre-bias.json "$TMP/models/one.json"
NORMLAB_MODELS=$TMP/models expect_ok "list -m NAME" list -m one
[ "$(wc -l < "$TMP/out")" -eq 2 ] && grep -q "^one " "$TMP/out" \
    && ok "list -m NAME shows that name only" || bad "list -m" "$(cat "$TMP/out")"
NORMLAB_MODELS=$TMP/models expect_fail "list -m of no model" 1 "nosuch: no model of that name" list -m nosuch

expect_ok "warmup" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --temperature 0.8 --warmup --no-echo
cmp -s "$TMP/out" "$GOLD/sampled.txt" \
    && ok "--warmup leaves the output unchanged" || bad "--warmup output" "differs from the golden"

# ---- batched samples
expect_ok "samples" generate $M -p "a b" -n 40 --seed 20 --samples 4 --json --top-k 6
[ "$(wc -l < "$TMP/out")" -eq 4 ] \
    && ok "--samples 4 --json prints four lines" || bad "--samples lines" "$(cat "$TMP/out")"
cp "$TMP/out" "$TMP/samples.json"
for i in 0 1 2 3; do
    "$BIN" generate $M -p "a b" -n 40 --seed $((20 + i)) --top-k 6 --no-echo > "$TMP/single" 2>/dev/null
    want=$(sed -n 's/\\n/\n/g; p' "$TMP/single" | tr -d '\n')
    line=$(sed -n "$((i + 1))p" "$TMP/samples.json")
    case "$line" in
        "{\"sample\":$i,\"seed\":$((20 + i)),\"prompt\":\"a b\",\"text\":"*)
            ok "sample $i is labelled with seed $((20 + i))" ;;
        *) bad "sample $i label" "$line" ;;
    esac
    got=$(printf '%s' "$line" | sed 's/.*"text":"\(.*\)"}$/\1/; s/\\n/\n/g' | tr -d '\n')
    [ "$got" = "$want" ] \
        && ok "sample $i equals the single-stream run with seed $((20 + i))" \
        || bad "sample $i text" "got '$got' want '$want'"
done
expect_ok "samples plain" generate $M -p "a b" -n 10 --seed 20 --samples 2
[ "$(grep -c '^--- sample [01], seed 2[01] ---$' "$TMP/out")" -eq 2 ] \
    && ok "--samples without --json labels each sample" || bad "samples plain" "$(cat "$TMP/out")"
expect_ok "json, one sample" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --json
/usr/bin/python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["seed"] == 7 and d["prompt"] == "a b" and d["text"] == open(sys.argv[2]).read(), d
assert d["decode_tokens"] == 59 and d["decode_tok_s"] > 0
' "$TMP/out" "$GOLD/sampled.txt" 2>/dev/null \
    && ok "--json prints one object with the text, seed and timings" || bad "json one" "$(cat "$TMP/out")"
expect_fail "samples zero" 2 "--samples must be an integer in [1, 256]" generate $M --samples 0
