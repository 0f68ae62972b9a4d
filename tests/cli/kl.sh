# tests/cli/kl.sh — cli_test.sh's part: eval's per-token losses (--json -o), its reference file
# (--kl-base) and the KL divergence from it (--kl), against an independent computation in Python
# from `normlab logits` (one window: the text is shorter than the context, 128).
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

KM="-m weights/shakespeare-pre-ln"
printf 'ROMEO:\nI will go to the market and buy some bread for my mother, and then home.\n' > "$TMP/own.txt"
"$BIN" eval $KM -f "$TMP/own.txt" --kl-base "$TMP/base.kl" -t 1 > /dev/null 2>&1
"$BIN" eval $KM -f "$TMP/own.txt" --kl-base "$TMP/base2.kl" -t 2 > /dev/null 2>&1
[ -s "$TMP/base.kl" ] && cmp -s "$TMP/base.kl" "$TMP/base2.kl" && ok "--kl-base: the same bytes at 1 and 2 threads" \
    || bad "--kl-base threads" "differ or missing"
"$BIN" logits $KM -f "$TMP/own.txt" > "$TMP/lg_base" 2>/dev/null
"$BIN" logits $KM -f "$TMP/own.txt" --quantize q4 > "$TMP/lg_q4" 2>/dev/null
# kl_ref BASE_LOGITS RUN_LOGITS: mean KL(base || run), same top, mean loss difference, each position's loss
kl_ref() {
    /usr/bin/python3 -c '
import json, math, sys

base = [json.loads(l) for l in open(sys.argv[1])]
run = [json.loads(l) for l in open(sys.argv[2])]
def logsm(row):
    m = max(row); lse = m + math.log(sum(math.exp(x - m) for x in row)); return [x - lse for x in row]
kl, same, dn, nll = [], [], [], []
ids = [int(t) for t in sys.argv[4].split(",")]
for p in range(len(ids) - 1):
    b, r = logsm(base[p]), logsm(run[p])
    kl.append(sum(math.exp(x) * (x - y) for x, y in zip(b, r)))
    same.append(max(range(len(b)), key=lambda i: (b[i], -i)) == max(range(len(r)), key=lambda i: (r[i], -i)))
    dn.append(-r[ids[p + 1]] + b[ids[p + 1]]); nll.append(-r[ids[p + 1]])
n = len(kl)
print(json.dumps({"kl": sum(kl) / n, "same": sum(same) / n, "dn": sum(dn) / n, "nll": nll}))' "$@"
}
ids=$("$BIN" tokenize $KM -f "$TMP/own.txt" --json 2>/dev/null | /usr/bin/python3 -c '
import json, sys; print(",".join(map(str, json.load(sys.stdin)["ids"])))')
kl_ref "$TMP/lg_base" "$TMP/lg_q4" "$TMP/own.txt" "$ids" > "$TMP/ref.json"
"$BIN" eval $KM -f "$TMP/own.txt" --quantize q4 --kl "$TMP/base.kl" --json -o "$TMP/q4.json" 2>/dev/null
why=$(/usr/bin/python3 -c '
import json, sys
ref, got = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
checks = [("kl_divergence", got["kl_divergence"], ref["kl"], 1e-5), ("same_top", got["same_top"], ref["same"], 1e-8),
          ("ln_ppl_ratio", got["ln_ppl_ratio"], ref["dn"], 1e-5)]
checks += [("token_nll[%d]" % i, a, b, 1e-5) for i, (a, b) in enumerate(zip(got["token_nll"], ref["nll"]))]
bad = [(k, a, b) for k, a, b, tol in checks if abs(a - b) > tol]
if len(got["token_nll"]) != len(ref["nll"]) or got["kl_divergence"] <= 0 or bad:
    sys.exit("%r (%d losses, want %d)" % (bad[:3], len(got["token_nll"]), len(ref["nll"])))
if abs(sum(got["token_nll"]) / got["chars"] - got["nats_per_char"]) > 1e-8:
    sys.exit("the losses do not average to nats_per_char")' "$TMP/ref.json" "$TMP/q4.json" 2>&1) \
    && ok "--kl, --quantize q4: KL, same top, ln ratio and each token's loss as computed from logits (1e-5)" \
    || bad "--kl reference" "$why"
# llama-perplexity's names: --kl-divergence-base writes the same file, --kl-divergence reads it as --kl does
"$BIN" eval $KM -f "$TMP/own.txt" --kl-divergence-base "$TMP/base3.kl" -t 1 > /dev/null 2>&1
"$BIN" eval $KM -f "$TMP/own.txt" --quantize q4 --kl-divergence "$TMP/base.kl" --json -o "$TMP/q4b.json" 2>/dev/null
cmp -s "$TMP/base.kl" "$TMP/base3.kl" && cmp -s "$TMP/q4.json" "$TMP/q4b.json" \
    && ok "--kl-divergence-base and --kl-divergence are --kl-base and --kl" || bad "kl aliases" "outputs differ"
"$BIN" eval $KM -f "$TMP/own.txt" --kl "$TMP/base.kl" --json > "$TMP/self.json" 2>/dev/null
why=$(strict_json "$TMP/self.json" "d['kl_divergence'] < 1e-6 and d['same_top'] == 1 and abs(d['ln_ppl_ratio']) < 1e-6 \
and d['kl_divergence_max'] < 1e-6 and 'token_nll' not in d") \
    && ok "--kl against its own base: 0, the same top everywhere (float32 rows: 1e-6); no losses on stdout" \
    || bad "--kl self" "$why"
"$BIN" eval $KM -f "$TMP/own.txt" --quantize q4 --kl "$TMP/base.kl" > "$TMP/kltext" 2>/dev/null
"$BIN" eval $KM -f "$TMP/own.txt" --quantize q4 --kl-divergence-base "$TMP/base.kl" --kl-divergence \
    > "$TMP/kl2" 2>/dev/null
cmp -s "$TMP/kltext" "$TMP/kl2" && grep -q '^kl_divergence ' "$TMP/kl2" \
    && ok "llama-perplexity's two-flag form (--kl-divergence-base F --kl-divergence) reads F, as --kl F" \
    || bad "kl two-flag form" "$(diff "$TMP/kltext" "$TMP/kl2" | head -5)"
expect_fail "a bare --kl without --kl-base" 2 "--kl with no FILE reads the --kl-base FILE" \
    eval $KM -f "$TMP/own.txt" --kl-divergence
grep -qE '^kl_divergence [0-9.]+ \+/- [0-9.]+$' "$TMP/kltext" \
    && grep -qE '^same_top [0-9.]+% \+/- [0-9.]+%$' "$TMP/kltext" \
    && grep -qE '^ln\(PPL/PPL\(base\)\) -?[0-9.]+ \+/- [0-9.]+$' "$TMP/kltext" \
    && ok "--kl as text: kl_divergence, same_top and ln(PPL/PPL(base)) lines" || bad "--kl text" "$(cat "$TMP/kltext")"
"$BIN" eval $KM -f "$TMP/own.txt" > "$TMP/plain_eval" 2>/dev/null
head -7 "$TMP/kltext" > "$TMP/kl7" && "$BIN" eval $KM -f "$TMP/own.txt" --quantize q4 > "$TMP/q4_eval" 2>/dev/null
cmp -s "$TMP/kl7" "$TMP/q4_eval" && ok "--kl adds lines after eval's own, unchanged" \
    || bad "--kl lines" "eval's part differs"
# the file: its header and size
why=$(/usr/bin/python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
magic, ver, V, n, cut, stride = d[:8], *struct.unpack("<IIQ", d[8:24]), *struct.unpack("<II", d[32:40])
if magic != b"NLKLBASE" or ver != 1 or V != 65 or n != int(sys.argv[2]) - 1 or (cut, stride) != (0, 64) \
        or len(d) != 40 + 4 * V * n:
    sys.exit("header %r %d %d %d, %d bytes" % (magic, ver, V, n, len(d)))' \
    "$TMP/base.kl" "$(echo "$ids" | tr ',' '\n' | wc -l)" 2>&1) \
    && ok "--kl-base: NLKLBASE, version 1, V, positions, the stride, 40 + 4 V N bytes" || bad "--kl-base header" "$why"
# refused: both, another vocabulary, another text, a cut file, no header, a NaN
expect_fail "--kl and --kl-base together" 2 "give --kl-base (write the reference) or --kl (compare with it), not both" \
    eval $KM -f "$TMP/own.txt" --kl "$TMP/base.kl" --kl-base "$TMP/x.kl"
expect_fail "--kl: another vocabulary" 1 "base.kl: written for a vocabulary of 65, this model's has 50257" \
    eval -m weights/shakespeare-bpe -f "$TMP/own.txt" --kl "$TMP/base.kl"
sed 's/market/bakery/' "$TMP/own.txt" > "$TMP/other.txt"
expect_fail "--kl: another text of the same length" 1 "base.kl: written for another text (its tokens differ)" \
    eval $KM -f "$TMP/other.txt" --kl "$TMP/base.kl"
head -c 30 "$TMP/own.txt" > "$TMP/short.txt"
expect_fail "--kl: a text of another length" 1 "holds 79 positions, this text scores 29" \
    eval $KM -f "$TMP/short.txt" --kl "$TMP/base.kl"
expect_fail "--kl: another stride, other contexts" 1 "base.kl: written with --stride 64, this run has --stride 32" \
    eval $KM -f "$TMP/own.txt" --kl "$TMP/base.kl" --stride 32
head -c 1000 "$TMP/base.kl" > "$TMP/cut.kl"
expect_fail "--kl: a cut file" 1 "cut.kl: 1000 bytes, want 20580 for its header and rows" \
    eval $KM -f "$TMP/own.txt" --kl "$TMP/cut.kl"
expect_fail "--kl: not such a file" 1 "own.txt: not a --kl-base file (no NLKLBASE header)" \
    eval $KM -f "$TMP/own.txt" --kl "$TMP/own.txt"
/usr/bin/python3 -c '
import sys
d = bytearray(open(sys.argv[1], "rb").read()); d[40 + 4 * 65 * 5 + 8:40 + 4 * 65 * 5 + 12] = b"\x00\x00\xc0\x7f"
open(sys.argv[2], "wb").write(d)' "$TMP/base.kl" "$TMP/nan.kl"
expect_fail "--kl: a NaN in the file" 1 "nan.kl: position 5 holds a value that is not finite" \
    eval $KM -f "$TMP/own.txt" --kl "$TMP/nan.kl"
# whole or not at all: a failing run leaves an existing --kl-base file as it was
cp "$TMP/base.kl" "$TMP/keep.kl"
expect_fail "--kl-base: a failing run" 1 "no such model" eval -m nosuch -f "$TMP/own.txt" --kl-base "$TMP/keep.kl"
cmp -s "$TMP/base.kl" "$TMP/keep.kl" && ok "--kl-base: a failing run leaves the file as it was" \
    || bad "kl-base whole" "changed"
# compare's quantized rows: the same KL divergence and top-1 agreement as eval --kl at one window a call
"$BIN" eval $KM -f "$TMP/own.txt" --kl-base "$TMP/b1.kl" --batch 1 > /dev/null 2>&1
"$BIN" eval $KM -f "$TMP/own.txt" --kl "$TMP/b1.kl" --batch 1 --quantize-act q8 --json > "$TMP/ev.json" 2>/dev/null
"$BIN" compare $KM -f "$TMP/own.txt" --quantize q4 --quantize-act q8 --repeats 1 --json > "$TMP/cq.json" 2>/dev/null
why=$(/usr/bin/python3 -c '
import json, sys
ev, rows = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ref = json.load(open(sys.argv[3]))
act = [r for r in rows if r["quantize_act"] == "q8"][0]; w4 = [r for r in rows if r["quantize"] == "q4"][0]
if "kl_divergence" in rows[0]: sys.exit("the float32 row has a KL")
if abs(act["kl_divergence"] - ev["kl_divergence"]) > 1e-3 * ev["kl_divergence"] or act["same_top"] != ev["same_top"]:
    sys.exit("a:q8 %r against eval %r" % ((act["kl_divergence"], act["same_top"]),
                                          (ev["kl_divergence"], ev["same_top"])))
if abs(w4["kl_divergence"] - ref["kl"]) > 1e-5 or abs(w4["same_top"] - ref["same"]) > 1e-8:
    sys.exit("w:q4 %r against the logits reference %r" % (w4["kl_divergence"], ref["kl"]))' \
    "$TMP/ev.json" "$TMP/cq.json" "$TMP/ref.json" 2>&1) \
    && ok "compare --quantize: each rounded row's KL and same top, as eval --kl and the Python reference give" \
    || bad "compare kl" "$why"
"$BIN" compare $KM -f "$TMP/own.txt" --quantize q8 --repeats 1 > "$TMP/cq.txt" 2>/dev/null
grep -qE "w:q8 +[0-9.]+ +[-+][0-9.]+ +[0-9.e-]+ ± [0-9.e-]+ +[0-9.]+%$" "$TMP/cq.txt" \
    && ok "compare's quantization table: KL ± its error and same top" \
    || bad "compare kl text" "$(grep 'w:q8' "$TMP/cq.txt")"
"$BIN" compare $KM -f "$TMP/own.txt" --quantize q4 --repeats 1 --csv "$TMP/cq.csv" > /dev/null 2>&1
why=$(/usr/bin/python3 -c '
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1]))); ref = json.load(open(sys.argv[2]))
if rows[0]["kl_divergence"] != "" or abs(float(rows[1]["kl_divergence"]) - ref["kl"]) > 1e-5:
    sys.exit("%r" % [(r["quantize"], r["kl_divergence"]) for r in rows])' "$TMP/cq.csv" "$TMP/ref.json" 2>&1) \
    && ok "compare --csv: kl_divergence and same_top of the rounded row, empty for the float32 one" \
    || bad "compare kl csv" "$why"
