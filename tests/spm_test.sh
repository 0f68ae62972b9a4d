#!/bin/sh
# tests/spm_test.sh DRIVER [BINARY] — the sentencepiece tokenizer (tokenizer/spm.c, spm_hf.c) against
# independent implementations, and on the command line:
# - SentencePiece itself (Debian's python3-sentencepiece), the truth: tools/train/train_spm.py trains
#   shakespeare-llama's BPE again and must write the shipped tokenizer.json byte for byte; then,
#   sentencepiece's encoder on the shipped pieces (tools/lib/spmjson.py's to_model_proto), the
#   same ids on the whole corpus and on tests/data/spm_hard.txt (spaces at the start, runs of
#   spaces, newlines, digits, emoji, CJK, combining marks, a literal "▁", "<s>" typed in the text),
#   in normlab's form (merged by score) and in the Hugging Face form of the same pieces
#   (tools/lib/spmjson.py's to_hf: merged by rank); with bos, bos first; and llama2.c's run.c
#   encode() written out in Python on the same pieces.
# - Llama 2's own vocabulary and merges, from llama-tokenizer-js (npm, build/llama), written as
#   Meta's tokenizer.json by tools/interop/llama_vocab.py: the same ids as llama-tokenizer-js, and as
#   Hugging Face's tokenizers (npm, build/hf) where normlab reads typed control pieces as its
#   tokenizers always does (--special); without it they differ at "<s>" typed in the text, where
#   normlab follows sentencepiece (docs/llama.md, "Tokenizer").
# - The command line (BINARY, default ./normlab) on a small model with the shipped tokenizer:
#   tokenize, bos, the echoed prompt without the dummy prefix's space, </s> ending a stream unless
#   --ignore-eos; bad tokenizer files refused with one line, exit 1, nothing written.
# Without python3-sentencepiece, node or the npm packages, their checks are counted as skipped.
cd "$(dirname "$0")/.." || exit 1
. tests/skips.sh
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
DRIVER=${1:-build/rel/tests/spm_ids} BIN=${2:-./normlab}
CORPUS=${CORPUS:-../shared/data/tinyshakespeare.txt}
SHIPPED=weights/shakespeare-llama/tokenizer.json HARD=tests/data/spm_hard.txt
TMP=$(mktemp -d /tmp/normlab-spm-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
count() { tr ',' '\n' < "$1" | wc -l; }
texts=$HARD sp_checks=4  # (the corpus's: train_spm.py, sentencepiece's 2, llama-tokenizer-js's and tokenizers' 3)
if [ -f "$CORPUS" ]; then texts="$CORPUS $HARD" sp_checks=7; else
    skipped=$((skipped + 6)) absent="${absent:+$absent, }the corpus $CORPUS"
    echo "skip 6: the corpus $CORPUS is not there (give CORPUS=PATH)"
fi
/usr/bin/python3 -c "import sys; sys.path.insert(0, 'tools/lib'); import json, spmjson
json.dump(spmjson.to_hf(json.load(open('$SHIPPED', encoding='utf-8'))), open('$TMP/hf_ours.json', 'w'))"

# ---- SentencePiece, the truth
if have_python $sp_checks sentencepiece; then
    if [ -f "$CORPUS" ]; then
        /usr/bin/python3 tools/train/train_spm.py "$CORPUS" "$TMP/tokenizer.json" --model "$TMP/trained.model" \
            2> "$TMP/train.err" && cmp -s "$TMP/tokenizer.json" "$SHIPPED" \
            && ok "train_spm.py writes the shipped tokenizer.json again, byte for byte" \
            || bad "train_spm.py" "$(head -c 300 "$TMP/train.err"); differs from $SHIPPED"
    fi
    # sentencepiece's own encoder on the shipped pieces and scores (tools/lib/spmjson.py's
    # to_model_proto: a .model of exactly the JSON form, with or without the corpus)
    /usr/bin/python3 -c "import sys; sys.path.insert(0, 'tools/lib'); import json, spmjson
open('$TMP/sp.model', 'wb').write(spmjson.to_model_proto(json.load(open('$SHIPPED', encoding='utf-8'))))"
    sp_ids() {  # sp_ids FILE [bos]: sentencepiece's ids of FILE
        /usr/bin/python3 -c 'import json, sys, sentencepiece as s
p = s.SentencePieceProcessor(model_file=sys.argv[1])
print(json.dumps(p.encode(open(sys.argv[2], encoding="utf-8").read(), add_bos=len(sys.argv) > 3),
                 separators=(",", ":")))' "$TMP/sp.model" "$@"
    }
    for text in $texts; do
        sp_ids "$text" > "$TMP/sp.ids"
        "$DRIVER" "$SHIPPED" "$text" > "$TMP/c.ids" 2> "$TMP/c.err"; rc=$?
        [ "$rc" -eq 0 ] && [ -s "$TMP/sp.ids" ] && cmp -s "$TMP/c.ids" "$TMP/sp.ids" \
            && ok "$text: the same $(count "$TMP/c.ids") ids as sentencepiece, and the bytes join back" \
            || bad "$text (sentencepiece)" "rc $rc, $(head -c 200 "$TMP/c.err"); ids differ or none"
        "$DRIVER" "$TMP/hf_ours.json" "$text" > "$TMP/r.ids" 2> "$TMP/r.err"
        cmp -s "$TMP/r.ids" "$TMP/sp.ids" \
            && ok "$text: its Hugging Face form, merged by rank, gives sentencepiece's ids (merged by score)" \
            || bad "$text (ranks)" "$(head -c 200 "$TMP/r.err"); ids differ"
    done
    sp_ids "$HARD" bos > "$TMP/sp.ids"
    # (the shipped model was trained without a BOS, so its tokenizer adds none: a copy that does)
    sed 's/"add_bos": false/"add_bos": true/' "$SHIPPED" > "$TMP/bos.json"
    "$DRIVER" "$TMP/bos.json" "$HARD" --bos > "$TMP/c.ids"
    cmp -s "$TMP/c.ids" "$TMP/sp.ids" && ok "--bos: <s> first, as sentencepiece's add_bos" \
        || bad "bos" "$(head -c 100 "$TMP/c.ids")"
    # llama2.c's run.c encode() on the same pieces, written out: every character its piece, else its
    # bytes (ids 3 + byte); then the adjacent pair whose join is the best-scored piece (the first of
    # equals), merged, until none is.
    head -c 5000 "$CORPUS" 2> /dev/null | cat - "$HARD" > "$TMP/runc.txt"
    /usr/bin/python3 -c 'import json, sys
form = json.load(open(sys.argv[1], encoding="utf-8"))
pieces, scores = [p for p, _ in form["pieces"]], [s for _, s in form["pieces"]]
lookup = {p: i for i, p in enumerate(pieces) if i > 258}
text = open(sys.argv[2], encoding="utf-8").read()
text = "\u2581" + text.replace(" ", "\u2581")
ids = []
for ch in text:
    ids += [lookup[ch]] if ch in lookup else [3 + b for b in ch.encode("utf-8")]
while True:
    best, at = None, -1
    for i in range(len(ids) - 1):
        j = lookup.get(pieces[ids[i]] + pieces[ids[i + 1]])
        if j is not None and (best is None or scores[j] > scores[best]):
            best, at = j, i
    if best is None:
        break
    ids[at:at + 2] = [best]
print(json.dumps(ids, separators=(",", ":")))' "$SHIPPED" "$TMP/runc.txt" > "$TMP/runc.ids"
    "$DRIVER" "$SHIPPED" "$TMP/runc.txt" > "$TMP/c.ids"
    cmp -s "$TMP/c.ids" "$TMP/runc.ids" && ok "run.c's encode() rule: the same $(count "$TMP/c.ids") ids" \
        || bad "run.c's rule" "ids differ"
fi

# ---- Llama 2's vocabulary: llama-tokenizer-js and Hugging Face's tokenizers
LJS=build/llama/node_modules/llama-tokenizer-js/llama-tokenizer.js HF=build/hf/node_modules/tokenizers
if command -v node > /dev/null 2>&1 && [ -f "$LJS" ] && [ -d "$HF" ]; then
    /usr/bin/python3 tools/interop/llama_vocab.py "$LJS" --out "$TMP/llama" > "$TMP/vocab.log" 2>&1 \
        && grep -q '32000 pieces, 61249 merges' "$TMP/vocab.log" \
        && ok "Llama 2's tokenizer.json (32000 pieces, 61249 merges) written from llama-tokenizer-js's data" \
        || bad "llama_vocab.py" "$(cat "$TMP/vocab.log")"
    for text in $texts; do
        "$DRIVER" "$TMP/llama/tokenizer.json" "$text" > "$TMP/c.ids" 2> "$TMP/c.err"; rc=$?
        node tools/reference/llama_js_reference.js "$text" > "$TMP/js.ids" 2> "$TMP/js.err"
        [ "$rc" -eq 0 ] && [ -s "$TMP/js.ids" ] && cmp -s "$TMP/c.ids" "$TMP/js.ids" \
            && ok "$text: Llama 2's vocabulary, the same $(count "$TMP/c.ids") ids as llama-tokenizer-js" \
            || bad "$text (llama-tokenizer-js)" "rc $rc, $(cat "$TMP/c.err" "$TMP/js.err" | head -c 200)"
        "$DRIVER" "$TMP/llama/tokenizer.json" "$text" --special > "$TMP/cs.ids"
        node tools/reference/hf_bpe_reference.js "$TMP/llama/tokenizer.json" "$text" > "$TMP/hf.ids" 2> "$TMP/hf.err"
        [ -s "$TMP/hf.ids" ] && cmp -s "$TMP/cs.ids" "$TMP/hf.ids" \
            && ok "$text: Llama 2's vocabulary, the same ids as Hugging Face's tokenizers (--special)" \
            || bad "$text (tokenizers)" "$(head -c 200 "$TMP/hf.err"); ids differ or none"
        node tools/reference/hf_bpe_reference.js "$TMP/hf_ours.json" "$text" > "$TMP/hf.ids" 2> /dev/null
        "$DRIVER" "$TMP/hf_ours.json" "$text" --special > "$TMP/cs.ids"
        cmp -s "$TMP/cs.ids" "$TMP/hf.ids" && ok "$text: shakespeare-llama's Hugging Face form, as tokenizers" \
            || bad "$text (tokenizers, ours)" "ids differ"
    done
    # Gemma's layout of the same pieces: the normalizer Replace(" ", "▁") alone, so no dummy prefix
    /usr/bin/python3 -c 'import json, sys; t = json.load(open(sys.argv[1], encoding="utf-8"))
t["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
json.dump(t, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)' \
        "$TMP/llama/tokenizer.json" "$TMP/gemma.json"
    for text in $texts; do
        "$DRIVER" "$TMP/gemma.json" "$text" --special > "$TMP/cs.ids"
        node tools/reference/hf_bpe_reference.js "$TMP/gemma.json" "$text" > "$TMP/hf.ids" 2> "$TMP/hf.err"
        [ -s "$TMP/hf.ids" ] && cmp -s "$TMP/cs.ids" "$TMP/hf.ids" \
            && ok "$text: Gemma's layout (Replace alone, no dummy prefix), the same ids as tokenizers (--special)" \
            || bad "$text (Gemma's layout)" "$(head -c 200 "$TMP/hf.err"); ids differ or none"
    done
    "$DRIVER" "$TMP/llama/tokenizer.json" "$HARD" > "$TMP/c.ids"
    node tools/reference/hf_bpe_reference.js "$TMP/llama/tokenizer.json" "$HARD" > "$TMP/hf.ids"
    ! cmp -s "$TMP/c.ids" "$TMP/hf.ids" && grep -q ',1,' "$TMP/hf.ids" && ! grep -q ',1,' "$TMP/c.ids" \
        && ok "\"<s>\" typed: plain text by default (sentencepiece), the control piece in tokenizers" \
        || bad "typed <s>" "normlab and tokenizers should differ there, and only tokenizers hold id 1"
else
    n=$((1 + 4 * $(echo $texts | wc -w) + 1))
    skipped=$((skipped + n)) absent="${absent:+$absent, }llama-tokenizer-js or tokenizers (npm)"
    echo "skip $n: node, llama-tokenizer-js or tokenizers (npm) missing: tools/install-deps.sh --python"
fi

# ---- always: invalid UTF-8, and the command line
printf 'ok \377\376 bad\300\257 utf-8 \355\240\200 and a cut \342\202' > "$TMP/invalid.txt"
"$DRIVER" "$SHIPPED" "$TMP/invalid.txt" > /dev/null 2> "$TMP/inv.err" \
    && ok "invalid UTF-8: every byte its byte piece, decoded back to itself" \
    || bad "invalid UTF-8" "$(cat "$TMP/inv.err")"
# A small model (tests/fixtures' untied pre-LN transformer) with the shipped tokenizer, V = 512;
# rigged: every next token is </s> (ln_f's output its bias e_0, the head's row 2 the only one on it),
# and in sampled-bos.json <s> (row 1), as a TinyStories model ends a story for run.c;
# its tokenizer adds a BOS, as Llama 2's does (the shipped one does not: its model never saw one).
/usr/bin/python3 -c 'import json, random, sys
m, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2], encoding="utf-8"))
V, T, D, r = len(t["pieces"]), 64, m["config"]["n_embd"], random.Random(48)
m["config"].update(vocab_size=V, block_size=T)
rand = lambda *s: {"shape": list(s), "data": [round(r.gauss(0, 0.4), 4) for _ in range(s[0] * s[1])]}
m["tensors"].update({"wte.weight": rand(V, D), "wpe.weight": rand(T, D), "lm_head.weight": rand(V, D)})
m["tokenizer"] = dict(t, add_bos=True)
json.dump(m, open(sys.argv[3], "w"), ensure_ascii=False)
m["tensors"]["ln_f.weight"]["data"], m["tensors"]["ln_f.bias"]["data"] = [0.0] * D, [1.0] + [0.0] * (D - 1)
m["tensors"]["lm_head.weight"]["data"] = [10.0 if i == 2 * D else 0.0 for i in range(V * D)]
json.dump(m, open(sys.argv[4], "w"), ensure_ascii=False)
m["tensors"]["lm_head.weight"]["data"] = [10.0 if i == 1 * D else 0.0 for i in range(V * D)]
json.dump(m, open(sys.argv[5], "w"), ensure_ascii=False)' tests/fixtures/ln-pre-untied.json "$SHIPPED" \
    "$TMP/m.json" "$TMP/eos.json" "$TMP/sampled-bos.json"
out=$("$BIN" tokenize -m "$TMP/m.json" -p "ROMEO: <s>" 2>&1)
want=$(printf "     1 -> '' (bos)\n   378 -> ' R'\n   479 -> 'O'\n   489 -> 'M'\n   477 -> 'E'\n   479 -> 'O'\n%b" \
    "   471 -> ':'\n   448 -> ' '\n    63 -> '<'\n   454 -> 's'\n    65 -> '>'")
[ "$out" = "$want" ] && ok "tokenize: <s> first, \"▁\" shown as a space, a typed <s> as text" \
    || bad "tokenize" "$out"
json=$("$BIN" tokenize -m "$TMP/m.json" -p "a <s>" --special --json 2>&1)
[ "$json" = '{"tokenizer":"sentencepiece","ids":[1,261,448,1],"pieces":[""," a"," ",""]}' ] \
    && ok "tokenize --special --json: a typed <s> is the control piece" || bad "tokenize --special" "$json"
"$BIN" tokenize -m "$TMP/m.json" -p "<s>a" --special --json > "$TMP/bos2.out" 2> "$TMP/bos2.err"
"$BIN" tokenize -m "$TMP/m.json" -p "a<s>" --special --json > /dev/null 2> "$TMP/bos1.err"
grep -q '"ids":\[1,1,' "$TMP/bos2.out" && [ "$(wc -l < "$TMP/bos2.err")" -eq 1 ] && [ ! -s "$TMP/bos1.err" ] \
    && grep -qF "warning: prompt: the text starts with a bos of its own after the one the model adds" "$TMP/bos2.err" \
    && ok "a text starting with <s> (--special) after the added bos: two, and one line warns (a later <s> does not)" \
    || bad "double bos" "$(cat "$TMP/bos2.out" "$TMP/bos2.err" "$TMP/bos1.err")"
ids=$("$BIN" tokenize -m "$TMP/m.json" -p "a" --ids 2>&1)
nobos=$("$BIN" tokenize -m "$TMP/m.json" -p "a" --ids --no-bos 2>&1)
[ "$ids" = "[1, 261]" ] && [ "$nobos" = "[261]" ] && ok "tokenize --ids: [1, 261]; --no-bos leaves the bos out: [261]" \
    || bad "--no-bos" "$ids / $nobos"
# an empty prompt, one rule: the bos alone where the model adds one (tokenize and generate alike)
empty=$("$BIN" tokenize -m "$TMP/m.json" -p "" --ids 2>&1)
"$BIN" generate -m "$TMP/m.json" -p "" -n 2 --seed 1 --json > "$TMP/empty.json" 2> /dev/null
[ "$empty" = "[1]" ] && grep -q '"prompt":"",.*"prompt_tokens":1,' "$TMP/empty.json" \
    && ok "an empty prompt is the bos alone, in tokenize and in generate" \
    || bad "empty prompt" "$empty $(head -c 300 "$TMP/empty.json")"
echoed=$("$BIN" generate -m "$TMP/m.json" -p "ROMEO: to be" -n 3 --seed 1 --echo 2> /dev/null | head -c 12)
[ "$echoed" = "ROMEO: to be" ] && ok "generate --echo: the prompt as typed (no dummy prefix's space)" \
    || bad "echo" "'$echoed'"
# a prompt longer than the window (T 64) keeps its bos: 80 " the" (one piece each) cropped for -n 5 to
# bos and the last 59 are the ids of 59 " the", so the greedy texts agree (without the bos they differ);
# the 21 dropped hold 83 bytes of the text (the first one's space is the dummy prefix), and the echo
# of the cut prompt keeps its first piece's space, which is the text's
long=$(printf 'the %.0s' $(seq 80)) short=$(printf 'the %.0s' $(seq 59))
"$BIN" generate -m "$TMP/m.json" -p "${long% }" -n 5 --temp 0 > "$TMP/crop.out" 2> "$TMP/crop.err"
"$BIN" generate -m "$TMP/m.json" -p "${short% }" -n 5 --temp 0 > "$TMP/short.out" 2> /dev/null
{ printf ' '; cat "$TMP/short.out"; } | cmp -s "$TMP/crop.out" - && [ -s "$TMP/short.out" ] \
    && grep -q 'has 81 tokens, more than the context.s 64: its first 21 after the bos (83 bytes)' "$TMP/crop.err" \
    && ok "a prompt cut to the window keeps its bos (llama.cpp's n_keep), and says so" \
    || bad "crop keeps bos" "$(head -c 300 "$TMP/crop.err"; od -c "$TMP/crop.out" "$TMP/short.out" | head -6)"
"$BIN" generate -m "$TMP/eos.json" -p "ROMEO:" -n 5 --temp 0 > "$TMP/eos.out" 2> "$TMP/eos.err"
"$BIN" generate -m "$TMP/eos.json" -p "ROMEO:" -n 5 --temp 0 --ignore-eos > "$TMP/ign.out" 2> "$TMP/ign.err"
[ "$(cat "$TMP/eos.out" "$TMP/ign.out")" = "ROMEO:ROMEO:" ] \
    && grep -q '; 1 new token .*ended by the end-of-sequence token (counted, not printed)' "$TMP/eos.err" \
    && grep -q '; 5 new tokens' "$TMP/ign.err" && ! grep -q 'ended by' "$TMP/ign.err" \
    && ok "</s> ends the stream unprinted; --ignore-eos runs -n 5" \
    || bad "eos" "$(cat "$TMP/eos.err" "$TMP/ign.err" | head -c 300)"
"$BIN" generate -m "$TMP/eos.json" -p "ROMEO:" -n 5 --temp 0 --samples 2 --json > "$TMP/s.out" 2> "$TMP/s.err"
[ "$(grep -c '"text":"","stop_type":"eos","stopping_word":""' "$TMP/s.out")" = 2 ] \
    && grep -q 'ended by the end-of-sequence' "$TMP/s.err" \
    && ok "--samples 2 --json: each stream ends at </s>, stop_type eos (llama-server's)" \
    || bad "eos samples" "$(head -c 300 "$TMP/s.out" "$TMP/s.err")"
"$BIN" generate -m "$TMP/sampled-bos.json" -p "ROMEO:" -n 5 --temp 0 > "$TMP/sbos.out" 2> "$TMP/sbos.err"
"$BIN" generate -m "$TMP/sampled-bos.json" -p "ROMEO:" -n 5 --temp 0 --ignore-eos > "$TMP/bign.out" 2> "$TMP/bign.err"
"$BIN" generate -m "$TMP/sampled-bos.json" -p "ROMEO:" -n 5 --temp 0 --samples 2 --json > "$TMP/bs.out" 2> /dev/null
[ "$(cat "$TMP/sbos.out" "$TMP/bign.out")" = "ROMEO:ROMEO:" ] \
    && grep -q '; 1 new token .*ended by a sampled begin-of-sequence token (where run.c ends)' "$TMP/sbos.err" \
    && grep -q '; 5 new tokens' "$TMP/bign.err" && ! grep -q 'ended by' "$TMP/bign.err" \
    && [ "$(grep -c '"text":"","stop_type":"eos","stopping_word":""' "$TMP/bs.out")" = 2 ] \
    && ok "a sampled <s> ends the stream unprinted as run.c stops, stop_type eos; --ignore-eos runs -n 5" \
    || bad "bos ends" "$(cat "$TMP/sbos.err" "$TMP/bign.err" "$TMP/bs.out" | head -c 400)"
"$BIN" generate -m "$TMP/eos.json" -p "ROMEO:" -n 3 --temp 0 --ignore-eos --json --stop zzz > "$TMP/l.out" 2>&1
grep -q '"stop_type":"limit","stopping_word":""' "$TMP/l.out" \
    && ok "--ignore-eos --stop: stop_type limit after -n" || bad "eos limit" "$(head -c 300 "$TMP/l.out")"
# bad tokenizers (in a model's one-file form): one line naming the file and the entry, exit 1, no
# output written
/usr/bin/python3 -c 'import json, sys
m = json.load(open(sys.argv[1], encoding="utf-8"))
for name, change in (("nobyte", lambda t: t["pieces"].pop(3 + 0x41)), ("bos", lambda t: t.update(bos_id=-5)),
                     ("score", lambda t: t["pieces"][300].__setitem__(1, "high")),
                     ("unigram", lambda t: (t.clear(), t.update(model={"type": "Unigram", "vocab": []})))):
    u = json.loads(json.dumps(m)); change(u["tokenizer"])
    json.dump(u, open(sys.argv[2] + "/" + name + ".json", "w"), ensure_ascii=False)' "$TMP/m.json" "$TMP"
for c in "nobyte:no byte piece <0x41>" "bos:\"bos_id\": -5 is outside" "score:pieces[300] is not [text, score]" \
         "unigram:a Unigram tokenizer (model.type)"; do
    name=${c%%:*} word=${c#*:}
    "$BIN" tokenize -m "$TMP/$name.json" -p hi -o "$TMP/$name.out" > "$TMP/o" 2> "$TMP/e"; rc=$?
    err=$(cat "$TMP/e")
    [ "$rc" -eq 1 ] && [ "$(wc -l < "$TMP/e")" -eq 1 ] && [ ! -e "$TMP/$name.out" ] && [ ! -s "$TMP/o" ] \
        && case "$err" in *"$name.json"*"$word"*) true ;; *) false ;; esac \
        && ok "a tokenizer with $name wrong: one line naming it, exit 1, nothing written" \
        || bad "bad $name" "rc $rc: $err"
done
closing spm_test
[ "$failed" -eq 0 ]
