# tests/cli/engine.sh — cli_test.sh's part: what reaches the engine: --norm and --placement, threads,
# BatchNorm and the other norms, the recurrent models, OpenBLAS's kernel family.
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

# ---- --norm and --placement reach the engine: logits against the naive double reference
# (tests/ref_logits.c, from docs/forward.md), every combination on two fixtures, 1e-4
REF=$(dirname "$(dirname "$BIN")")/build/rel/tests/ref_logits
[ -x "$REF" ] || REF=build/rel/tests/ref_logits
maxdiff() {
    paste -d' ' <(tr -d '[],' < "$1" | tr ' ' '\n' | grep -v '^$') <(tr -d '[],' < "$2" | tr ' ' '\n' | grep -v '^$') |
    awk 'BEGIN { m = 0; n = 0 } { d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d; n++ } END { printf "%g %d", m, n }'
}
for fx in ln-pre-bias rms-post-nobias bn-pre-bias deepnorm nonorm ln-peri-bias; do
    for norm in layernorm rmsnorm none batchnorm:batch batchnorm:running; do
        [ "$norm" = batchnorm:running ] && [ "$fx" != bn-pre-bias ] && continue  # no running statistics
        stats=${norm#*:}; [ "$stats" = "$norm" ] && stats=running
        for place in pre post peri; do
            [ "$norm $place" = "batchnorm:running peri" ] && continue  # none for the output norms either
            "$BIN" logits -m $FIX/$fx.json -p "ab cd" --norm ${norm%:*} --placement $place --bn-stats $stats \
                > "$TMP/got" 2>/dev/null
            "$REF" $FIX/$fx.json ${norm%:*} $place "ab cd" $stats > "$TMP/want"
            read -r d cnt <<< "$(maxdiff "$TMP/got" "$TMP/want")"
            awk -v d="$d" -v c="$cnt" 'BEGIN { exit !(c == 55 && d <= 1e-4) }' \
                && ok "logits of $fx as $norm/$place match the reference ($d)" \
                || bad "override $fx $norm/$place" "max diff $d over $cnt"
        done
    done
done

# ---- engine threads: the same bytes at any thread count, every worker used
awk 'BEGIN { srand(5); for (i = 0; i < 900; i++) printf "%s", substr("ab cd!,.:?\n", int(rand() * 11) + 1, 1) }' \
    > "$TMP/long.txt"
expect_ok "eval 1 thread" eval $M --text "$TMP/long.txt" --json --threads 1 --batch 3; cp "$TMP/out" "$TMP/eval1"
for t in 2 3; do
    expect_ok "eval $t threads" eval $M --text "$TMP/long.txt" --json --threads $t --batch 3 --profile
    cmp -s "$TMP/out" "$TMP/eval1" \
        && ok "eval: same bytes with $t threads" || bad "eval $t threads" "$(cat "$TMP/out") vs $(cat "$TMP/eval1")"
    grep -qF "threads $t ($t engine threads, each product on 1)" "$TMP/err" \
        && grep -q "(each summed over $t threads)" "$TMP/err" \
        && ok "eval --profile sums $t threads" || bad "eval profile threads" "$(grep -E 'engine|summed' "$TMP/err")"
done
# Fewer windows than threads: the threads left split each forward pass's products (with AVX-512
# kernels the sgemm too, linear.c), and the numbers stay those of one thread. A text shorter than
# shakespeare-pre-ln's window (99 rows, products of 2.4M multiply-adds a share), and shakespeare-bpe
# on 2 kB (9 windows, 2 groups: one each), every field of eval --json byte for byte.
head -c 100 tests/data/held_out.txt > "$TMP/short100.txt"
cat tests/data/held_out.txt tests/data/held_out.txt | head -c 2000 > "$TMP/bpe2k.txt"
for case in "shakespeare-pre-ln short100.txt" "shakespeare-bpe bpe2k.txt" "shakespeare-pre-ln long.txt"; do
    set -- $case
    expect_ok "eval $1 $2 1 thread" eval -m weights/$1 --text "$TMP/$2" --json --threads 1; cp "$TMP/out" "$TMP/e1"
    expect_ok "eval $1 $2 2 threads" eval -m weights/$1 --text "$TMP/$2" --json --threads 2 --profile
    cmp -s "$TMP/out" "$TMP/e1" && [ -s "$TMP/e1" ] && ok "eval $1 on $2: same bytes with 2 threads" \
        || bad "eval $1 $2 2 threads" "$(cat "$TMP/out") vs $(cat "$TMP/e1")"
done
run eval -m weights/shakespeare-pre-ln --text "$TMP/short100.txt" --threads 2 --profile
grep -qF "threads 2 (one engine thread, each product split over up to 2)" "$TMP/err" \
    && grep -qF "on 2 threads" "$TMP/err" && ok "eval on a text shorter than a window: its products on 2 threads" \
    || bad "eval short text threads" "$(grep -E 'engine thread|scored' "$TMP/err")"
expect_ok "eval batch 1" eval $M --text "$TMP/long.txt" --json --threads 1 --batch 1
n1=$(sed -n 's/.*"nats_per_char": \([^,]*\),.*/\1/p' "$TMP/out")
n3=$(sed -n 's/.*"nats_per_char": \([^,]*\),.*/\1/p' "$TMP/eval1")
awk -v a="$n1" -v b="$n3" 'BEGIN { d = a - b; exit !(a > 0 && d * d <= 1e-12 * a * a) }' \
    && ok "eval --batch 1 and 3 agree to 1e-6 relative" || bad "eval batch" "$n1 vs $n3"
expect_fail "batch zero" 2 "--batch must be an integer in [1, 256], got '0'" eval $M --text "$TMP/long.txt" --batch 0
expect_ok "samples 1 thread" generate $M -p "a b" -n 50 --seed 3 --samples 5 --batch 2 --json --threads 1
cp "$TMP/out" "$TMP/s1"
for t in 2 3; do
    expect_ok "samples $t threads" generate $M -p "a b" -n 50 --seed 3 --samples 5 --batch 2 --json --threads $t \
        --profile
    cmp -s <(grep '^{' "$TMP/out") "$TMP/s1" \
        && ok "samples: same bytes with $t threads" || bad "samples $t threads" "outputs differ"
    grep -qF "threads $t ($t engine threads, each product on 1)" "$TMP/err" \
        && ok "samples run on $t engine threads" || bad "samples threads" "$(grep engine "$TMP/err")"
done
expect_ok "compare 1 thread" compare $FIX/ln-pre-bias.json $FIX/rms-post-bias.json --text "$TMP/long.txt" \
    --repeats 1 --also-swap --csv "$TMP/c1.csv"
expect_ok "compare 2 threads" compare $FIX/ln-pre-bias.json $FIX/rms-post-bias.json --text "$TMP/long.txt" \
    --repeats 1 --also-swap --threads 2 --csv "$TMP/c2.csv"
# Model, settings and quality (columns 1-13), batch and cache differences and statistics (23-) do not
# depend on the threads; the speeds and the threads column do.
quality() { cut -d, -f1-13,23- "$1"; }
[ "$(wc -l < "$TMP/c2.csv")" -eq 9 ] && [ "$(quality "$TMP/c1.csv")" = "$(quality "$TMP/c2.csv")" ] \
    && ok "compare rows on 2 threads: same eight rows and quality" \
    || bad "compare threads" "$(quality "$TMP/c1.csv"; quality "$TMP/c2.csv")"
grep -q "rows measured side by side" "$TMP/out" \
    && ok "compare says rows ran side by side" || bad "compare side by side" "$(head -1 "$TMP/out")"

# ---- BatchNorm, no norm, peri-LN and DeepNorm (format version 2)
for f in bn-pre-bias bn-post-nobias bn-peri-bias ln-peri-bias rms-peri-nobias deepnorm nonorm; do
    expect_ok "$f: generate" generate -m $FIX/$f.json -p ab -n 30 -s 1 --no-echo \
        && [ "$(wc -c < "$TMP/out")" -eq 30 ] && ok "$f: 30 characters" || bad "$f: generate" "$(cat "$TMP/out")"
    expect_ok "$f: eval" eval -m $FIX/$f.json --text "$TMP/text.txt" --json
    expect_ok "$f: profile" profile -m $FIX/$f.json -p ab -n 5 --json
done
run info -m $FIX/deepnorm.json --json
grep -q '"placement":"post","residual_scale":1.414' "$TMP/out" && ok "info shows DeepNorm's residual scale" \
    || bad "info residual_scale" "$(head -c 300 "$TMP/out")"
run info -m $FIX/nonorm.json --json
grep -q '"norm":"none","placement":"pre"' "$TMP/out" && ok "info: a norm-free model without placement runs pre" \
    || bad "info nonorm" "$(head -c 300 "$TMP/out")"
# ---- recurrent models (format version 3)
for f in lstm-ln lstm-none gru-ln gru-none; do
    R="-m $FIX/$f.json"
    expect_ok "$f: generate" generate $R -p ab -n 300 -s 1 --no-echo \
        && [ "$(wc -c < "$TMP/out")" -eq 300 ] && ok "$f: 300 characters, with no window to shift" \
        || bad "$f: generate" "$(head -c 100 "$TMP/out")"
    grep -q "context shift" "$TMP/err" && bad "$f: shifts" "$(cat "$TMP/err")" || ok "$f: no context shift reported"
    cp "$TMP/out" "$TMP/rnn1"
    run generate $R -p ab -n 300 -s 1 --no-echo
    cmp -s "$TMP/out" "$TMP/rnn1" && ok "$f: the same seed, the same text" || bad "$f: seed" "outputs differ"
    expect_ok "$f: eval" eval $R --text "$TMP/long.txt" --json
    grep -q '"segments": 1}' "$TMP/out" && ok "$f: eval runs one unbroken state" || bad "$f: eval" "$(cat "$TMP/out")"
    one=$(sed 's/.*"nats_per_char": \([0-9.e-]*\).*/\1/' "$TMP/out")
    expect_ok "$f: eval --segments 4" eval $R --text "$TMP/long.txt" --json --segments 4
    four=$(sed 's/.*"nats_per_char": \([0-9.e-]*\).*/\1/' "$TMP/out")
    [ "$one" != "$four" ] && grep -q '"segments": 4}' "$TMP/out" \
        && ok "$f: four segments lose context, and say so" || bad "$f: segments" "$one vs $four"
    expect_ok "$f: profile" profile $R -p ab -n 5 --json
    for comp in input_proj recurrent_proj rnn_norm gates lm_head; do
        grep -q "\"component\":[[:space:]]*\"$comp\"" "$TMP/out" || bad "$f: profile $comp" "missing"
    done
    grep -q '"component":[[:space:]]*"qkv"' "$TMP/out" && bad "$f: profile" "lists transformer components" \
        || ok "$f: profile lists the recurrent components, not the transformer's"
done
run profile -m $FIX/lstm-ln.json -p "$(head -c 100 "$TMP/long.txt")" -n 5 --trace "$TMP/rnn-trace.json"
[ "$rc" -eq 0 ] && grep -q '"name": "layer 2"' "$TMP/rnn-trace.json" \
    && grep -q '"name": "gates"' "$TMP/rnn-trace.json" \
    && ok "rnn profile --trace holds a 100-character prompt's events, layers included" \
    || bad "rnn trace" "$(cat "$TMP/err")"
mkdir -p "$TMP/models" && cp $FIX/lstm-ln.json $FIX/ln-pre-bias.json "$TMP/models/"
NORMLAB_MODELS="$TMP/models" "$BIN" list --json > "$TMP/out" 2>/dev/null
grep -q '"name":"lstm-ln","path":"[^"]*","norm":"layernorm","arch":"lstm","placement":null' "$TMP/out" \
    && grep -q '"arch":"transformer","placement":"pre"' "$TMP/out" \
    && ok "list --json: a recurrent model has an arch and no placement" || bad "rnn list" "$(head -c 300 "$TMP/out")"
head -c 300 "$TMP/long.txt" > "$TMP/text300.txt"
expect_ok "rnn logits of 300 characters" logits -m $FIX/gru-ln.json -f "$TMP/text300.txt"
[ "$(wc -l < "$TMP/out")" -eq 300 ] && ok "rnn logits: a line per position, past one chunk" \
    || bad "rnn logits" "$(wc -l < "$TMP/out") lines"
run info -m $FIX/lstm-ln.json --json
grep -q '"arch":"lstm"' "$TMP/out" && grep -q '"n_hidden":5' "$TMP/out" && grep -q '"state_bytes":120' "$TMP/out" \
    && ! grep -q block_size "$TMP/out" && ok "info shows the recurrent config and state size" \
    || bad "rnn info" "$(head -c 400 "$TMP/out")"
expect_ok "rnn --norm none" generate -m $FIX/lstm-ln.json -p ab -n 5 --norm none
grep -q "trained as lstm/layernorm; running it as lstm/none" "$TMP/err" \
    && ok "running an LN-LSTM without its norms warns" || bad "rnn norm warning" "$(cat "$TMP/err")"
expect_fail "rnn placement" 2 "a placement applies to transformers, not to this recurrent (gru) model" \
    generate -m $FIX/gru-ln.json -p ab --placement post
expect_fail "rnn rmsnorm" 2 "a recurrent (lstm) model runs with norm layernorm or none, not rmsnorm" \
    eval -m $FIX/lstm-ln.json --text "$TMP/text.txt" --norm rmsnorm
expect_fail "rnn stride" 2 "--stride applies to transformers' windows" eval -m $FIX/gru-none.json \
    --text "$TMP/text.txt" --stride 4
expect_fail "rnn batch" 2 "--batch applies to transformers' windows" eval -m $FIX/gru-none.json \
    --text "$TMP/text.txt" --batch 4
expect_fail "transformer segments" 2 "--segments applies to recurrent (lstm, gru) models" eval $M \
    --text "$TMP/text.txt" --segments 4
expect_fail "rnn exact window" 2 "--exact-window applies to transformers" generate -m $FIX/lstm-none.json -p ab \
    --exact-window
expect_fail "segments past the text" 2 "segments" eval -m $FIX/lstm-none.json --text "$TMP/text.txt" --segments 99
expect_ok "compare transformers and recurrent models" compare $FIX/ln-pre-bias.json $FIX/lstm-ln.json \
    $FIX/gru-none.json --text "$TMP/long.txt" --repeats 1 --also-swap --json -o "$TMP/mixed.json"
/usr/bin/python3 - "$TMP/mixed.json" <<'PY' && ok "compare: transformer and recurrent rows in one table" \
    || bad "mixed compare" "$(head -c 400 "$TMP/mixed.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
runs = [(r["arch"], r["norm"], r["override"]) for r in rows]
assert ("lstm", "layernorm", "none") in runs and ("lstm", "none", "norm") in runs, runs
assert ("gru", "none", "none") in runs and ("transformer", "layernorm", "none") in runs, runs
lstm = [r for r in rows if r["arch"] == "lstm"][0]
assert lstm["placement"] is None and len(lstm["state_norm_h"]) == len(lstm["state_bucket_start"]) >= 8, lstm
assert len(lstm["state_norm_c"]) == len(lstm["state_norm_h"]) and "invariance" not in lstm
PY
run profile -m $FIX/ln-peri-bias.json -p ab -n 5
[ "$(grep -c ' norm1_post ' "$TMP/out")" -ge 2 ] && grep -q ' norm2_post ' "$TMP/out" \
    && ok "profile of peri-LN times its output norms" || bad "peri profile" "$(grep norm "$TMP/out" | head)"
expect_fail "bad --bn-stats" 2 "--bn-stats must be running or batch (any case), got 'mean'" \
    eval $M --text "$TMP/text.txt" --bn-stats mean
expect_fail "--norm batchnorm without running statistics" 2 \
    "needs tensor \"h.0.ln_1.running_mean\", which this layernorm model lacks; use batch statistics" \
    generate $M -p ab -n 1 --norm batchnorm
expect_fail "batchnorm/peri without running statistics for the output norms" 2 "h.0.ln_1_post.running_mean" \
    logits -m $FIX/bn-pre-bias.json -p ab --placement peri
expect_ok "--norm batchnorm --bn-stats batch runs a LayerNorm model" \
    logits $M -p "abcd!" --norm batchnorm --bn-stats batch
[ "$(wc -l < "$TMP/out")" -eq 5 ] && grep -q "running it as batchnorm/pre" "$TMP/err" \
    && ok "batch statistics on a LayerNorm model: 5 rows and a warning" || bad "bn batch override" "$(cat "$TMP/err")"
run logits $M -p "abcd!"; cp "$TMP/out" "$TMP/ln.jl"
run logits $M -p "abcd!" --norm none
[ "$rc" -eq 0 ] && ! cmp -s "$TMP/out" "$TMP/ln.jl" && grep -q "running it as none/pre" "$TMP/err" \
    && ok "--norm none removes the norms (other logits, a warning)" || bad "--norm none" "$(cat "$TMP/err")"
run logits -m $FIX/bn-pre-bias.json -p "abcd!"; cp "$TMP/out" "$TMP/run.jl"
run logits -m $FIX/bn-pre-bias.json -p "abcd!" --bn-stats batch
[ "$rc" -eq 0 ] && ! cmp -s "$TMP/out" "$TMP/run.jl" && ok "--bn-stats batch changes a BatchNorm model's logits" \
    || bad "--bn-stats batch" "$(cat "$TMP/err")"
expect_fail "--bn-stats both is for compare" 2 "--bn-stats must be running or batch (any case), got 'both'" \
    eval -m $FIX/bn-pre-bias.json --text "$TMP/text.txt" --bn-stats both
expect_ok "compare --bn-stats both" compare $FIX/bn-pre-bias.json $FIX/ln-peri-bias.json --text "$TMP/long.txt" \
    --repeats 1 --also-swap --bn-stats both --json -o "$TMP/bn.json"
/usr/bin/python3 - "$TMP/bn.json" <<'PY' && ok "compare: BatchNorm rows with both statistics; batch ones couple rows" \
    || bad "compare --bn-stats both" "$(head -c 600 "$TMP/bn.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
bn = [(r["placement"], r["bn_stats"], r["batch16_max_logit_diff"], r["cache_max_logit_diff"])
      for r in rows if r["norm"] == "batchnorm"]
peri = [r for r in rows if r["model"].endswith("ln-peri-bias.json") and r["override"] == "none"][0]
assert len(rows) == 10, len(rows)  # bn: as, layernorm, post, none + batch twice; peri: as, rmsnorm, pre, none
assert sorted((p, s) for p, s, _, _ in bn) == [("post", "batch"), ("post", "running"), ("pre", "batch"),
                                                ("pre", "running")], bn
assert all((d > 1e-3) == (s == "batch") for _, s, d, _ in bn), bn  # batch16: only batch statistics couple rows
assert all(c > 1e-3 for _, s, _, c in bn if s == "batch"), bn  # one-row decoding steps degenerate
assert len(peri["norm_post_std"]) == 2 and len(peri["norm_std"]) == 3 and len(peri["branch_rms"]) == 2, peri
PY

# Loader checks of version 2, on fixtures changed one thing at a time (each must name its problem).
mutate() {  # mutate NAME FIXTURE PYTHON: writes $TMP/NAME.json from the fixture, changed by PYTHON (d is the doc)
    /usr/bin/python3 -c "import json,sys; d=json.load(open('$FIX/$2.json')); $3; json.dump(d, open('$TMP/$1.json','w'))"
}
mutate no-var bn-pre-bias 'del d["tensors"]["h.0.ln_1.running_var"]'
expect_fail "batchnorm without running_var" 1 'missing tensor "h.0.ln_1.running_var"' info -m "$TMP/no-var.json"
mutate neg-var bn-pre-bias 'd["tensors"]["h.1.ln_2.running_var"]["data"][3] = -0.5'
expect_fail "negative running variance" 1 'tensor "h.1.ln_2.running_var" has a negative variance (-0.5) at index 3' \
    info -m "$TMP/neg-var.json"
mutate pre-alpha ln-peri-bias 'd["config"]["placement"] = "pre"; d["config"]["residual_scale"] = 2
[d["tensors"].pop(k) for k in list(d["tensors"]) if "_post" in k]'
expect_fail "residual_scale with pre" 1 '"residual_scale" is allowed only where the block' \
    info -m "$TMP/pre-alpha.json"
mutate zero-alpha deepnorm 'd["config"]["residual_scale"] = 0'
expect_fail "residual_scale 0" 1 '"residual_scale" = 0 is outside [0.001, 1000]' info -m "$TMP/zero-alpha.json"
mutate none-post nonorm 'd["config"]["placement"] = "post"'
expect_fail "norm none with post" 1 'norm "none" needs placement "pre"' info -m "$TMP/none-post.json"
mutate none-extra nonorm 'd["tensors"]["h.0.ln_1.weight"] = {"shape": [12], "data": [1.0] * 12}'
expect_fail "norm none with a norm tensor" 1 'unexpected tensor "h.0.ln_1.weight"' info -m "$TMP/none-extra.json"
mutate peri-missing ln-peri-bias 'del d["tensors"]["h.1.ln_2_post.bias"]'
expect_fail "peri without an output norm's bias" 1 'missing tensor "h.1.ln_2_post.bias"' \
    info -m "$TMP/peri-missing.json"
mutate pre-extra ln-pre-bias 'd["tensors"]["h.0.ln_1_post.weight"] = {"shape": [12], "data": [1.0] * 12}'
expect_fail "pre with an output norm" 1 'unexpected tensor "h.0.ln_1_post.weight"' info -m "$TMP/pre-extra.json"
# ---- a block recipe in config.json (issue 61; docs/format.md): pre spelled as steps runs pre's bytes;
# a norm the block names and the file lacks, a custom placement asked of a model without a block, and
# DyT on a model without its alpha each get one line
PRE_STEPS='["norm ln_1 x h", "attn h a", "add a", "norm ln_2 x g", "mlp g m", "add m"]'
mutate as-block ln-pre-bias "d['config']['format']['version'] = 5; del d['config']['placement']
d['config']['block'] = $PRE_STEPS"
"$BIN" logits -m $FIX/ln-pre-bias.json -p "ab cd" > "$TMP/want" 2>/dev/null
expect_ok "logits of a block spelling pre" logits -m "$TMP/as-block.json" -p "ab cd" \
    && { cmp -s "$TMP/out" "$TMP/want" && ok "a block spelling pre gives pre's logits, byte for byte" \
         || bad "block as pre" "$(head -c 200 "$TMP/out")"; }
expect_ok "info of a block model" info -m "$TMP/as-block.json"
grep -q "^placement *custom" "$TMP/out" && grep -q "^final_norm *true" "$TMP/out" \
    && ok "info: a block model's placement is custom, with its final norm" || bad "custom info" "$(cat "$TMP/out")"
mutate block-lacks ln-pre-bias "d['config']['format']['version'] = 5; del d['config']['placement']
d['config']['block'] = ['norm ln_1 x h', 'attn h a', 'norm ln_1_post a p', 'add p', 'norm ln_2 x g', 'mlp g m',
'add m']"
expect_fail "a block's norm without weights" 1 'missing tensor "h.0.ln_1_post.weight"' info -m "$TMP/block-lacks.json"
mutate block-bad ln-pre-bias "d['config']['format']['version'] = 5; del d['config']['placement']
d['config']['block'] = ['norm ln_1 x h', 'attn h a', 'add a', 'mlp q m', 'add m']"
expect_fail "a block reading an unknown slot" 1 '"block" step 4 "mlp q m": an unknown slot' \
    info -m "$TMP/block-bad.json"
expect_fail "placement custom without a block" 2 "placement \"custom\" runs a model's own \"block\" recipe" \
    generate -m $FIX/ln-pre-bias.json -p ab --placement custom
expect_fail "dyt on a model without alpha" 2 'dyt needs its alpha, tensor "h.0.ln_1.alpha"' \
    generate -m $FIX/ln-pre-bias.json -p ab --norm dyt
for place in post-sublayer parallel parallel-shared mix sub; do  # (mix: L/4 = 0 post layers of 2, pre's bytes)
    expect_ok "logits as $place" logits -m $FIX/ln-pre-bias.json -p "ab cd" --placement $place
    grep -q "running it as layernorm/$place" "$TMP/err" && { [ $place = mix ] || ! cmp -s "$TMP/out" "$TMP/want"; } \
        && ok "--placement $place: said, and its own logits" || bad "run as $place" "$(cat "$TMP/err")"
done
mutate ln-stats ln-pre-bias 'd["tensors"]["h.0.ln_1.running_mean"] = {"shape": [12], "data": [0.0] * 12}'
expect_fail "layernorm with running statistics" 1 'unexpected tensor "h.0.ln_1.running_mean"' \
    info -m "$TMP/ln-stats.json"
mutate big-loss ln-pre-untied 'w = d["tensors"]["lm_head.weight"]; w["data"] = [v * 2000 for v in w["data"]]'
run eval -m "$TMP/big-loss.json" --text "$TMP/text.txt" --json
/usr/bin/python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); assert d["nats_per_char"] > 709, d
assert d["perplexity"] is None and d["perplexity_stderr"] is None, d' "$TMP/out" \
    && ok "eval --json stays JSON when perplexity overflows (null)" \
    || bad "eval json inf" "$(cat "$TMP/out" "$TMP/err")"
# a BatchNorm post model run as pre lacks running statistics for ln_f: compare runs that row with batch
# statistics only (with --bn-stats running it is left out), and never fails on it
expect_ok "compare --also-swap of a BatchNorm post model" compare $FIX/bn-post-nobias.json --text "$TMP/text.txt" \
    --repeats 1 --also-swap --bn-stats both --json -o "$TMP/bnpost.json"
/usr/bin/python3 - "$TMP/bnpost.json" <<'PY' && ok "its pre row runs with batch statistics only" \
    || bad "bn post swap rows" "$(head -c 400 "$TMP/bnpost.json")"
import json, sys
rows = [(r["norm"], r["placement"], r.get("bn_stats")) for r in json.load(open(sys.argv[1]))]
assert sorted(rows, key=str) == sorted([("batchnorm", "post", "running"), ("layernorm", "post", None),
                                        ("batchnorm", "pre", "batch"), ("none", "post", None),
                                        ("batchnorm", "post", "batch")], key=str), rows
PY
mutate peri4 ln-peri-bias 'd["config"]["n_layer"] = 4
d["tensors"].update({k.replace("h.0.", "h.2.").replace("h.1.", "h.3."): v for k, v in list(d["tensors"].items())
                     if k.startswith("h.")})'
expect_ok "profile --trace of a 4-layer peri model" profile -m "$TMP/peri4.json" -p ab -n 200 --trace "$TMP/peri.json"
grep -q '"norm2_post"' "$TMP/peri.json" && ok "the trace holds peri's output norms" || bad "peri trace" "no norm2_post"

# ---- OpenBLAS kernel family (docs/performance.md)
expect_ok "info json" info $M --json
blas_re='"blas_core":"[A-Za-z0-9_]+","blas_core_source":"(openblas|environment)",'
blas_re=$blas_re'"blas_core_openblas":"[A-Za-z0-9_]+"'
grep -qE "$blas_re" "$TMP/out" \
    && ok "info names the kernel family and who chose it" || bad "info blas" "$(cat "$TMP/out")"
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { case " $flags " in *" $1 "*) return 0;; esac; return 1; }
want=""
if has avx512f && has avx512bw && has avx512vl && has avx512dq && has avx2 && has fma; then want=SkylakeX
elif has avx2 && has fma; then want=Haswell; fi
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
    # Set by the environment: normlab must run it as it is, even when OpenBLAS "fell back".
    NORMLAB_BLAS_PRETEND=Prescott "$BIN" info $M --json > "$TMP/out" 2>&1
    grep -q '"blas_core_source":"environment"' "$TMP/out" \
        && ok "a set OPENBLAS_CORETYPE is left alone" || bad "env left alone" "$(cat "$TMP/out")"
else
    # Unset here: the fallback is simulated, and normlab restarts itself on the family the CPU supports.
    NORMLAB_BLAS_PRETEND=Prescott "$BIN" info $M --json > "$TMP/out" 2>&1
    if [ -n "$want" ]; then
        grep -q "\"blas_core\":\"$want\",\"blas_core_source\":\"normlab\",\"blas_core_openblas\":\"Prescott\"" \
            "$TMP/out" \
            && ok "after a fallback normlab restarts on $want" || bad "restart on $want" "$(cat "$TMP/out")"
    else
        grep -q '"blas_core_source":"openblas"' "$TMP/out" \
            && ok "no wider family to pick" || bad "no pick" "$(cat "$TMP/out")"
    fi
    NORMLAB_BLAS_AUTO=0 NORMLAB_BLAS_PRETEND=Prescott "$BIN" info $M --json > "$TMP/out" 2>&1
    grep -q "\"blas_core\":\"$core\",\"blas_core_source\":\"openblas\"" "$TMP/out" \
        && ok "NORMLAB_BLAS_AUTO=0 opts out" || bad "opt-out" "$(cat "$TMP/out")"
    # A set variable is left alone. Set to the family OpenBLAS picks here anyway, for this one command,
    # so that no test runs on other kernels than the environment's.
    OPENBLAS_CORETYPE=$core NORMLAB_BLAS_PRETEND=Prescott "$BIN" info $M --json > "$TMP/out" 2>&1
    grep -q "\"blas_core\":\"$core\",\"blas_core_source\":\"environment\"" "$TMP/out" \
        && ok "a set OPENBLAS_CORETYPE is left alone" || bad "env left alone" "$(cat "$TMP/out")"
fi
NORMLAB_BLAS_PRETEND=Prescott "$BIN" generate $M -p "a b" -n 60 --seed 7 --top-k 5 --top-p 0.9 --no-echo \
    > "$TMP/out" 2>/dev/null
cmp -s "$TMP/out" "$TMP/sampled" && ok "a restarted run prints the same text" || bad "restarted run" "outputs differ"

# ---- commands that run nothing read no weight: info, tokenize and list on a 150 MB model
# shakespeare-pre-ln's shape 8 times as wide, 3 layers, 150 MB of random finite float32 weights (the
# top byte of each fixed: |w| in [2^-7, 2^-5)). Their peak RSS must stay under a quarter of the file
# (they map it and check its headers: seen 7 MB on the 152 MB; reading every weight took 167 MB);
# generate still runs the model, and refuses it once a weight is NaN.
BIG="$TMP/big"
/usr/bin/python3 - weights/shakespeare-pre-ln "$BIG" <<'PY'
import json, os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst)
cfg = json.load(open(os.path.join(src, "config.json")))
cfg.update(n_layer=3, n_embd=1024, block_size=1024, n_head=8)
json.dump(cfg, open(os.path.join(dst, "config.json"), "w"))
open(os.path.join(dst, "tokenizer.json"), "w").write(open(os.path.join(src, "tokenizer.json")).read())
b = open(os.path.join(src, "model.safetensors"), "rb").read()
head = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
header, at = {}, 0
for name, t in head.items():
    if name == "__metadata__" or name.startswith("h.3."):
        continue
    shape = [d * 8 if d % 128 == 0 else d for d in t["shape"]]
    n = 4
    for d in shape:
        n *= d
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + n]}
    at += n
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
data = bytearray(os.urandom(at))
data[3::4] = b"\x3c" * (at // 4)
data[7::8] = b"\xbc" * (at // 8)
with open(os.path.join(dst, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + data)
PY
big_kb=$(( $(stat -c %s "$BIG/model.safetensors") / 1024 ))
peak_kb() {  # peak_kb ARGS...: the binary's peak RSS in KB on ARGS (stdout to $TMP/out), "" if it failed
    /usr/bin/time -f "%M" -o "$TMP/rss" "$BIN" "$@" > "$TMP/out" 2>"$TMP/err" && cat "$TMP/rss"
}
for args in "info -m $BIG" "info -m $BIG --json" "tokenize -m $BIG -p ROMEO" "list -m big"; do
    kb=$(NORMLAB_MODELS="$TMP" peak_kb $args)
    [ -n "$kb" ] && [ "$kb" -lt $((big_kb / 4)) ] && ok "$args: $kb KB peak against a $big_kb KB file" \
        || bad "$args reads the weights" "peak ${kb:-failed} KB, file $big_kb KB: $(head -c 200 "$TMP/err")"
done
grep -qx 'parameters  *38905856' <("$BIN" info -m "$BIG") && ok "info counts the big model's parameters" \
    || bad "big info" "$("$BIN" info -m "$BIG" 2>&1 | head -c 300)"
kb=$(peak_kb generate -m "$BIG" -p ROMEO -n 4 --seed 1)
[ -n "$kb" ] && [ "$(wc -c < "$TMP/out")" -ge 9 ] && [ "$kb" -gt $((big_kb / 2)) ] \
    && ok "generate runs the big model (it reads every weight: $kb KB)" \
    || bad "big generate" "peak ${kb:-failed} KB: $(head -c 200 "$TMP/err")"
/usr/bin/python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(-4000, 2); f.write(b"\0\0\xc0\x7f")' \
    "$BIG/model.safetensors"
expect_fail "generate refuses the big model's NaN weight" 1 "has a non-finite value (nan)" generate -m "$BIG" -p ROMEO
kb=$(peak_kb info -m "$BIG")
[ -n "$kb" ] && [ "$kb" -lt $((big_kb / 4)) ] && ok "info describes it without reading it ($kb KB)" \
    || bad "info of a NaN weight" "peak ${kb:-failed} KB: $(head -c 200 "$TMP/err")"
expect_fail "info --check-weights reads them, and refuses the NaN" 1 "has a non-finite value (nan)" \
    info -m "$BIG" --check-weights
rm -rf "$BIG"
# --qk-norm switches the slot at run time (its values against float64: make parity's llama_parity.py)
QK=weights/shakespeare-llama
"$BIN" logits -m "$QK" -p "ROMEO:" > "$TMP/qk_as" 2>/dev/null
"$BIN" logits -m "$QK" -p "ROMEO:" --qk-norm off > "$TMP/qk_off" 2>/dev/null
"$BIN" logits -m "$QK" -p "ROMEO:" --qk-norm on > "$TMP/qk_on" 2>/dev/null
[ -s "$TMP/qk_as" ] && [ -s "$TMP/qk_on" ] && cmp -s "$TMP/qk_as" "$TMP/qk_off" && ! cmp -s "$TMP/qk_as" "$TMP/qk_on" \
    && ok "--qk-norm: off is shakespeare-llama as trained, on (unit gains) changes its logits" \
    || bad "--qk-norm switch" "$(head -c 200 "$TMP/qk_on")"
