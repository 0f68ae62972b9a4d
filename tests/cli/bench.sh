# tests/cli/bench.sh — cli_test.sh's part: normlab bench, llama-bench's rows without Python: every
# model x thread count x test, its repetitions, and the four formats agreeing on them.
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

BM="-m $FIX/ln-pre-t70.json"
expect_ok "bench --format json" bench $BM -p 8,16 -n 8 -t 1,2 -r 3 --format json
cp "$TMP/out" "$TMP/bench.json"
want="[(1, 'pp8'), (1, 'pp16'), (1, 'tg8'), (2, 'pp8'), (2, 'pp16'), (2, 'tg8')]"
why=$(strict_json "$TMP/bench.json" "[(r['n_threads'], r['test']) for r in d] == $want \
and all(len(r['samples_ns']) == 3 == r['repetitions'] and r['avg_ts'] > 0 \
and abs(r['avg_ts'] - sum(r['samples_ts']) / 3) < 1e-9 * r['avg_ts'] \
and all(abs(t - (r['n_prompt'] + r['n_gen']) / (ns * 1e-9)) < 1e-3 * t \
for t, ns in zip(r['samples_ts'], r['samples_ns'])) \
and abs(r['stddev_ts'] - __import__('statistics').stdev(r['samples_ts'])) < 1e-6 * r['avg_ts'] for r in d)") \
    && ok "bench: a row per thread count x test, 3 repetitions, mean and sd of their tok/s" || bad "bench json" "$why"
expect_ok "bench --format csv" bench $BM -p 8 -n 8 -t 1 -r 2 --format csv -m "$FIX/lstm-ln.json"
why=$(/usr/bin/python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
want = [("ln-pre-t70.json", "pp8"), ("ln-pre-t70.json", "tg8"), ("lstm-ln.json", "pp8"), ("lstm-ln.json", "tg8")]
got = [(r["model_filename"].rsplit("/", 1)[1], r["test"]) for r in rows]
if got != want or any(float(r["avg_ts"]) <= 0 or r["repetitions"] != "2" for r in rows):
    sys.exit("%r" % got)' "$TMP/out" 2>&1) \
    && ok "bench --format csv: the models in the order given, with -m repeated" \
    || bad "bench csv" "$why"
# the stored type and size per row (llama-bench's model and size columns): three models that differ only in them
for q in q8_0 q4_0; do "$BIN" quantize -m weights/shakespeare-pre-ln --type $q -o "$TMP/bench-$q" > /dev/null 2>&1; done
"$BIN" bench -m weights/shakespeare-pre-ln -m "$TMP/bench-q8_0" -m "$TMP/bench-q4_0" -p 8 -n 0 -t 1 -r 1 \
    --format csv > "$TMP/typed.csv" 2> /dev/null
"$BIN" bench -m weights/shakespeare-pre-ln -m "$TMP/bench-q4_0" -p 8 -n 0 -t 1 -r 1 > "$TMP/typed.md" 2> /dev/null
sizes=$(for m in weights/shakespeare-pre-ln "$TMP/bench-q8_0" "$TMP/bench-q4_0"; do
    "$BIN" info -m "$m" --json 2>/dev/null \
        | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["weight_bytes"])'
done | tr '\n' ,)
why=$(/usr/bin/python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
got = [(r["model_type"], r["model_size"]) for r in rows]
want = list(zip(["f32", "q8_0", "q4_0"], sys.argv[2].strip(",").split(",")))
md = open(sys.argv[3]).read()
if got != want or "|   3.12 MiB |" not in md or "| q4_0  |" not in md or "| type  |" not in md:
    sys.exit("%r against %r; %s" % (got, want, md))' "$TMP/typed.csv" "$sizes" "$TMP/typed.md" 2>&1) \
    && ok "bench: each row's stored type and size (f32, q8_0, q4_0: info's weight_bytes; MiB in the table)" \
    || bad "bench type and size" "$why"
expect_ok "bench markdown (the default)" bench $BM -p 8 -n 8 -t 1 -r 1
[ "$(grep -c '^| ' "$TMP/out")" -eq 4 ] && sed -n 2p "$TMP/out" | grep -q '^| --- |' \
    && ok "bench: a Markdown table, a header, its rule and two rows" || bad "bench md" "$(cat "$TMP/out")"
expect_ok "bench --format text" bench $BM -p 8 -n 0 -t 1 -r 1 --format text
[ "$(wc -l < "$TMP/out")" -eq 2 ] && ! grep -q '|' "$TMP/out" && grep -q ' pp8 ' "$TMP/out" \
    && ok "bench --format text: aligned columns, -n 0 runs no generation test" || bad "bench text" "$(cat "$TMP/out")"
"$BIN" bench $BM -p 8 -n 8 -t 1 -r 1 -o "$TMP/bench.md" > "$TMP/out" 2>/dev/null
[ ! -s "$TMP/out" ] && grep -q ' tg8 ' "$TMP/bench.md" && ok "bench -o FILE: the table in the file" \
    || bad "bench -o" "missing"
expect_fail "bench: a test longer than the context" 2 \
    "ln-pre-t70.json: a test of 200 tokens is longer than the model's context (70)" \
    bench $BM -p 200
expect_fail "bench: a list with a word" 2 \
    "--n-prompt must be a list of at most 32 integers in [0, 1048576], comma-separated: 'x' (item 2 of '8,x')" \
    bench $BM -p 8,x
expect_fail "bench: an empty item" 2 "integers in [0, 1048576], comma-separated: '' (item 2 of '8,,9') is not one" \
    bench $BM -n 8,,9
expect_fail "bench: threads 0" 2 "--threads must be a list of at most 32 integers in [1, 1024]" bench $BM -t 0
expect_fail "bench: nothing to measure" 2 "nothing to measure: every -p and -n is 0" bench $BM -p 0 -n 0
expect_fail "bench: a bad format" 2 "--format must be md, text, csv or json" bench $BM --format xml
expect_fail "bench -o json: llama-bench's format flag is --format here" 2 \
    "-o names the output file; the format is --format (md, text, csv or json), got '-o json'" bench $BM -o json
[ ! -e json ] && ok "bench -o json: no file named json" || { rm -f json; bad "bench -o json" "wrote ./json"; }
cpus=$("$BIN" info $BM --json 2>/dev/null | sed -n 's/.*"cpus":[[:space:]]*\([0-9]*\).*/\1/p')
"$BIN" bench $BM -p 4 -n 0 -t "$((cpus + 1))" -r 1 > /dev/null 2> "$TMP/err"
grep -q "warning: --threads $((cpus + 1)): this process may use $cpus CPUs, so its threads share them" "$TMP/err" \
    && ok "bench: more threads than CPUs is said" || bad "bench threads warning" "$(cat "$TMP/err")"
# --json, as every other command takes it: --format json's rows
"$BIN" bench -m weights/shakespeare-pre-ln -p 8 -n 2 -r 1 -t 1 --json > "$TMP/bj.json" 2>/dev/null
"$BIN" bench -m weights/shakespeare-pre-ln -p 8 -n 2 -r 1 -t 1 --format json > "$TMP/bf.json" 2>/dev/null
why=$(strict_json "$TMP/bj.json" "[sorted(r) for r in d] == [sorted(r) for r in json.load(open('$TMP/bf.json'))] \
and [r['test'] for r in d] == ['pp8', 'tg2']") && ok "bench --json: --format json's rows" || bad "bench --json" "$why"
