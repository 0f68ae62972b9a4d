# tests/cli/many.sh — cli_test.sh's part: generate with several models (-m repeated).
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

# ---- generate with several models (-m repeated): the same prompt, seed and dice through each
# blocks FILE PREFIX: the blocks of a several-model text output, PREFIX.h its header lines and PREFIX.1,
# PREFIX.2, ... what each block printed after its header (the prompt, the text and the block's newline).
blocks() {
    rm -f "$2".*
    awk -v p="$2" '/^=== .* ===$/ { n++; print > (p ".h"); next } { printf "%s\n", $0 > (p "." n) }' "$1"
}
# single FILE ARGS...: a single-model run's stdout, with the newline that ends a block, into FILE
single() { local f=$1; shift; { "$BIN" "$@" 2>/dev/null; echo; } > "$f"; }
PRE=weights/shakespeare-pre-ln POST=weights/shakespeare-post-ln
mkdir -p "$TMP/twin1" "$TMP/twin2"
cp "$PRE"/config.json "$PRE"/tokenizer.json "$PRE"/model.safetensors "$TMP/twin1/"
cp "$PRE"/config.json "$PRE"/tokenizer.json "$PRE"/model.safetensors "$TMP/twin2/"
# (a) one model in two folders: identical weights and the same random numbers give identical blocks
expect_ok "two -m of one model" generate -m "$TMP/twin1" -m "$TMP/twin2" -p "ROMEO:" -n 120 -s 11 --temperature 1.2
blocks "$TMP/out" "$TMP/tw"
[ "$(cat "$TMP/tw.h")" = "=== $TMP/twin1 (layernorm/pre) ===
=== $TMP/twin2 (layernorm/pre) ===" ] && [ ! -e "$TMP/tw.3" ] \
    && ok "a header per model, naming it and its run, in the order given" || bad "twin headers" "$(cat "$TMP/out")"
[ "$(head -c 6 "$TMP/tw.1")" = "ROMEO:" ] && [ "$(wc -m < "$TMP/tw.1")" -eq 127 ] && cmp -s "$TMP/tw.1" "$TMP/tw.2" \
    && ok "identical weights, the same seed, temperature 1.2: byte-identical blocks" \
    || bad "twin blocks" "$(cat "$TMP/out")"
expect_ok "two -m of one model, another seed" generate -m "$TMP/twin1" -m "$TMP/twin2" -p "ROMEO:" -n 120 -s 12 \
    --temperature 1.2
blocks "$TMP/out" "$TMP/tw12"
cmp -s "$TMP/tw12.1" "$TMP/tw12.2" && ! cmp -s "$TMP/tw12.1" "$TMP/tw.1" \
    && ok "another seed: other text, still the same in both" || bad "twin, seed 12" "$(cat "$TMP/out")"
# (b) two shipped models: each block is what a single run with that seed prints
expect_ok "pre-ln and post-ln" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 80 -s 7 --top-k 20
blocks "$TMP/out" "$TMP/pp"
single "$TMP/pre1" generate -m "$PRE" -p "ROMEO:" -n 80 -s 7 --top-k 20
single "$TMP/post1" generate -m "$POST" -p "ROMEO:" -n 80 -s 7 --top-k 20
[ "$(cat "$TMP/pp.h")" = "=== $PRE (layernorm/pre) ===
=== $POST (layernorm/post) ===" ] && ok "the headers name pre and post" || bad "pre/post headers" "$(cat "$TMP/pp.h")"
cmp -s "$TMP/pp.1" "$TMP/pre1" && cmp -s "$TMP/pp.2" "$TMP/post1" && ! cmp -s "$TMP/pp.1" "$TMP/pp.2" \
    && ok "each model's block equals its single run with the same seed (and the two differ)" \
    || bad "blocks against single runs" "$(cat "$TMP/out")"
[ "$(grep -c "^normlab: $PRE: prefill 6 tokens" "$TMP/err")" -eq 1 ] \
    && [ "$(grep -c "^normlab: $POST: prefill 6 tokens" "$TMP/err")" -eq 1 ] \
    && ok "a timing line per model, naming it" || bad "timing per model" "$(cat "$TMP/err")"
# a Llama model's run says whether QK-norm runs, as compare's rows do; switching it warns as --norm does
LL=weights/shakespeare-llama
expect_ok "llama beside pre-ln" generate -m "$LL" -m "$PRE" -p "ROMEO:" -n 5 -s 7
blocks "$TMP/out" "$TMP/ll"
expect_ok "llama twice, --qk-norm on" generate -m "$LL" -m "$LL" -p "ROMEO:" -n 5 -s 7 --qk-norm on
blocks "$TMP/out" "$TMP/llon"
[ "$(cat "$TMP/ll.h")" = "=== $LL (rmsnorm/pre-qk) ===
=== $PRE (layernorm/pre) ===" ] && [ "$(cat "$TMP/llon.h")" = "=== $LL (rmsnorm/pre+qk) ===
=== $LL (rmsnorm/pre+qk) ===" ] \
    && grep -qF "warning: the model was trained as rmsnorm/pre-qk; running it as rmsnorm/pre+qk" "$TMP/err" \
    && ok "a llama header says -qk or +qk (--qk-norm on), and switching it warns" \
    || bad "llama run names" "$(cat "$TMP/ll.h" "$TMP/llon.h" "$TMP/err")"
expect_ok "several models, --no-echo" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 80 -s 7 --top-k 20 --no-echo
blocks "$TMP/out" "$TMP/ne"
single "$TMP/pre1" generate -m "$PRE" -p "ROMEO:" -n 80 -s 7 --top-k 20 --no-echo
cmp -s "$TMP/ne.1" "$TMP/pre1" && [ "$(head -c 6 "$TMP/ne.1")" != "ROMEO:" ] \
    && ok "--no-echo: the blocks without the prompt" || bad "several, --no-echo" "$(cat "$TMP/out")"
expect_ok "several models, -o FILE" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 80 -s 7 --top-k 20 -o "$TMP/pp.txt"
blocks "$TMP/pp.txt" "$TMP/po"
[ ! -s "$TMP/out" ] && cmp -s "$TMP/po.1" "$TMP/pp.1" && cmp -s "$TMP/po.2" "$TMP/pp.2" \
    && ok "several models, -o FILE holds every block" || bad "several, -o" "$(cat "$TMP/pp.txt")"
# (c) --json: one object per model, the single run's object with "model" and "run"
expect_ok "several models --json" generate -m "$PRE" -m "$POST" -m shakespeare-lstm-ln -p "ROMEO:" -n 40 -s 9 --json
cp "$TMP/out" "$TMP/many.json"
"$BIN" generate -m "$PRE" -p "ROMEO:" -n 40 -s 9 --json > "$TMP/pre.json" 2>/dev/null
"$BIN" generate -m "$POST" -p "ROMEO:" -n 40 -s 9 --json > "$TMP/post.json" 2>/dev/null
/usr/bin/python3 -c '
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert len(lines) == 4 and lines[3] == "", lines
got = [json.loads(l) for l in lines[:3]]
want = [(sys.argv[4], "layernorm/pre"), (sys.argv[5], "layernorm/post"), ("shakespeare-lstm-ln", "lstm/layernorm")]
assert [(g["model"], g["run"]) for g in got] == want, got
assert all(list(g)[:2] == ["model", "run"] and g["seed"] == 9 for g in got), got
for g, f in zip(got, sys.argv[2:4]):
    one = json.loads(open(f).read())
    assert set(g) == set(one) | {"model", "run"}, (g, one)
    assert g["text"] == one["text"] and g["prompt"] == one["prompt"] == "ROMEO:", (g, one)
assert got[0]["text"] != got[1]["text"]
' "$TMP/many.json" "$TMP/pre.json" "$TMP/post.json" "$PRE" "$POST" 2>&1 \
    && ok "--json: one object per model with model and run, its text the single run's" \
    || bad "several --json" "$(cat "$TMP/many.json")"
expect_ok "several models --samples 2 --json" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 30 -s 9 --samples 2 --json
/usr/bin/python3 -c '
import json, sys
got = [json.loads(l) for l in open(sys.argv[1])]
want = [(m, r, i, 9 + i) for m, r in ((sys.argv[2], "layernorm/pre"), (sys.argv[3], "layernorm/post")) for i in (0, 1)]
assert [(g["model"], g["run"], g["sample"], g["seed"]) for g in got] == want, got
' "$TMP/out" "$PRE" "$POST" 2>&1 \
    && ok "--samples 2 --json: a line per model and sample, each with model and run" \
    || bad "several --samples --json" "$(cat "$TMP/out")"
cp "$TMP/out" "$TMP/many_samples.json"
"$BIN" generate -m "$POST" -p "ROMEO:" -n 30 -s 10 --json > "$TMP/post10.json" 2>/dev/null
[ "$(sed -n 4p "$TMP/many_samples.json" | sed 's/.*"text":\(".*"\)}$/\1/')" = \
  "$(sed 's/.*"text":\(".*"\),"prompt_tokens".*/\1/' "$TMP/post10.json")" ] \
    && ok "the second model's sample 1 is its single run with seed S+1" \
    || bad "several samples text" "$(sed -n 4p "$TMP/many_samples.json")"
expect_ok "several models --samples 2" generate -m "$PRE" -m "$POST" -p "RO" -n 10 -s 9 --samples 2
[ "$(grep -c '^=== ' "$TMP/out")" -eq 2 ] && [ "$(grep -c '^--- sample [01], seed 1\?[09] ---$' "$TMP/out")" -eq 4 ] \
    && [ "$(sed -n 1p "$TMP/out")" = "=== $PRE (layernorm/pre) ===" ] \
    && [ "$(sed -n 2p "$TMP/out")" = "--- sample 0, seed 9 ---" ] \
    && ok "--samples: each model's samples under its header" || bad "several --samples" "$(cat "$TMP/out")"
# (d) a prompt character one model lacks: an error naming the model and the character, nothing printed
expect_fail "the second model lacks a prompt character" 1 \
    "prompt (for $FIX/utf8.json): character 'c' (U+0063) at position 2 is not in the model's vocabulary" \
    generate -m $FIX/ln-pre-bias.json -m $FIX/utf8.json -p "ac" -n 5 -s 1
expect_fail "the first model lacks a prompt character" 1 \
    "prompt (for $FIX/ln-pre-bias.json): character 'é' (U+00E9) at position 2 is not in the model's vocabulary" \
    generate -m $FIX/utf8.json -m $FIX/ln-pre-bias.json -p "aé" -n 5 -s 1 --json
printf 'ac' > "$TMP/ac.txt"
expect_fail "a prompt file one model cannot encode" 1 "$TMP/ac.txt (for $FIX/utf8.json): character 'c'" \
    generate -m $FIX/ln-pre-bias.json -m $FIX/utf8.json -f "$TMP/ac.txt" -n 5 -s 1 -o "$TMP/never.txt"
[ ! -e "$TMP/never.txt" ] && ok "no -o file when a model cannot encode the prompt" || bad "never.txt" "written"
expect_ok "--skip-unknown drops each model's unknown characters" \
    generate -m $FIX/ln-pre-bias.json -m $FIX/utf8.json -p "ac" -n 5 -s 1 --skip-unknown
blocks "$TMP/out" "$TMP/sk"
# (utf8.json has no 'c' to sample: its block starts with the "a" it kept)
[ "$(head -c 2 "$TMP/sk.1")" = "ac" ] && [ "$(head -c 1 "$TMP/sk.2")" = "a" ] \
    && [ "$(head -c 2 "$TMP/sk.2")" != "ac" ] \
    && grep -q "warning: prompt (for $FIX/utf8.json): dropped 1 character outside" "$TMP/err" \
    && ok "--skip-unknown: each model's prompt as it encodes it, the drop named" \
    || bad "several skip" "$(cat "$TMP/out")"
printf 'ab' | "$BIN" generate -m $FIX/ln-pre-bias.json -m $FIX/rms-pre-bias.json -f - -n 5 -s 1 >"$TMP/out" 2>/dev/null
blocks "$TMP/out" "$TMP/si"
[ "$(head -c 2 "$TMP/si.1")" = "ab" ] && [ "$(head -c 2 "$TMP/si.2")" = "ab" ] \
    && ok "-f - is read once and encoded for every model" || bad "several -f -" "$(cat "$TMP/out")"
# (e) a seed drawn from the OS is drawn once, printed once, and repeats the run
expect_ok "several models, seed -1" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 30
[ "$(grep -c '^normlab: seed ' "$TMP/err")" -eq 1 ] && grep -qE '^normlab: seed [0-9]+$' "$TMP/err" \
    && ok "seed -1 with two models: one seed, printed once" || bad "several, seed -1" "$(cat "$TMP/err")"
seed=$(sed -n 's/^normlab: seed \([0-9]*\)$/\1/p' "$TMP/err"); cp "$TMP/out" "$TMP/first"
expect_ok "several models, the printed seed" generate -m "$PRE" -m "$POST" -p "ROMEO:" -n 30 -s "$seed"
cmp -s "$TMP/out" "$TMP/first" && ! grep -q '^normlab: seed' "$TMP/err" \
    && ok "the printed seed repeats every model's block" || bad "several, printed seed" "differs"
# what takes one model
expect_fail "--profile takes one model" 2 "--profile takes one model, got 2 (-m)" \
    generate -m $FIX/ln-pre-bias.json -m $FIX/rms-pre-bias.json -p ab -n 5 --profile
expect_fail "--exact-window names the recurrent model" 2 \
    "--exact-window applies to transformers; $FIX/lstm-ln.json is a recurrent model (no window)" \
    generate -m $FIX/ln-pre-bias.json -m $FIX/lstm-ln.json -p ab -n 5 -s 1 --exact-window
expect_fail "a model that does not load: nothing printed" 1 "nosuch: no such model" \
    generate -m $FIX/ln-pre-bias.json -m nosuch -p ab -n 5 -s 1
expect_ok "the other commands keep one -m: the last wins" info -m $FIX/ln-pre-bias.json -m $FIX/rms-pre-bias.json --json
grep -q '"norm":"rmsnorm"' "$TMP/out" && ! grep -q '"norm":"layernorm"' "$TMP/out" \
    && ok "info -m A -m B shows B" || bad "info -m -m" "$(head -c 200 "$TMP/out")"
