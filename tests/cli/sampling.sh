# tests/cli/sampling.sh — cli_test.sh's part: llama.cpp's and nanoGPT's habits in generate: escapes,
# a piped prompt, stop strings, min-p, the penalties, token probabilities and the familiar names.
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

CH="-m weights/shakespeare-pre-ln" BPE="-m weights/shakespeare-bpe"

# ---- -e: escapes in -p and --stop
# the BPE model's pieces are its bytes: every escape, decoded, is the bytes the tokenizer saw
"$BIN" tokenize $BPE -e -p 'A\x42\u00e9\u20ac\\\n\t\r\x27\"' --json > "$TMP/esc.json" 2> "$TMP/err"
why=$(strict_json "$TMP/esc.json" "''.join(d['pieces']) == 'AB\u00e9\u20ac\\\\\\n\\t\\r\\'\"'") \
    && ok "-e: \\x, \\u, \\\\, \\n, \\t, \\r, \\' and \\\" become their bytes" \
    || bad "-e escapes" "$why $(cat "$TMP/err")"
# \u at each UTF-8 length's edges: the bytes the tokenizer sees are the shell's printf of that UTF-8
why=""
for pair in '007f:\x7f' '0080:\xc2\x80' '07ff:\xdf\xbf' '0800:\xe0\xa0\x80' 'ffff:\xef\xbf\xbf'; do
    cp=${pair%%:*} bytes=${pair#*:}
    got=$("$BIN" tokenize $BPE -e -p "a\\u${cp}b" --json 2>&1)
    want=$("$BIN" tokenize $BPE -p "$(printf "a${bytes}b")" --json 2>&1)
    [ -n "$want" ] && [ "$got" = "$want" ] || why="$why U+$cp ($got against $want);"
done
[ -z "$why" ] && ok "-e: \\u007f, \\u0080, \\u07ff, \\u0800 and \\uffff are their 1, 2, 2, 3 and 3 UTF-8 bytes" \
    || bad "-e UTF-8 lengths" "$why"
"$BIN" tokenize $BPE -p 'a\nb' --json > "$TMP/raw.json" 2>/dev/null
why=$(strict_json "$TMP/raw.json" "''.join(d['pieces']) == 'a\\\\nb'") \
    && ok "without -e a backslash is a backslash" || bad "no -e" "$why"
expect_fail "-e: an unknown escape" 2 "-p: unknown escape '\\q' (known:" generate $CH -e -p 'ab\qc' -n 1
expect_fail "-e: \\x needs two hex digits" 2 "-p: '\\x' needs 2 hex digits at byte 2 (-e)" \
    generate $CH -e -p 'a\x4' -n 1
expect_fail "-e: \\u needs four" 2 "'\\u' needs 4 hex digits" generate $CH -e -p '\u12' -n 1
expect_fail "-e: a NUL is refused" 2 "'\\x00' is a NUL" generate $CH -e -p 'a\x00' -n 1
expect_fail "-e: a surrogate is refused" 2 "'\\ud800' is a surrogate" generate $CH -e -p '\ud800' -n 1
expect_fail "-e: a lone backslash at the end" 2 "-p: a lone '\\' at the end at byte 2" generate $CH -e -p 'a\' -n 1
expect_fail "-e: in --stop too" 2 "--stop: unknown escape '\\z'" generate $CH -e -p a --stop 'x\z' -n 1
expect_fail "a backslash outside the vocabulary: the hint names -e" 1 \
    "(U+005C) at position 6 is not in the model's vocabulary (-e reads escapes such as \\n" \
    generate $CH -p 'KING:\nROMEO' -n 1
"$BIN" generate $CH -e -p 'KING:\nROMEO' -n 20 --seed 4 > "$TMP/e1" 2>/dev/null
"$BIN" generate $CH -p "$(printf 'KING:\nROMEO')" -n 20 --seed 4 > "$TMP/e2" 2>/dev/null
[ -s "$TMP/e1" ] && cmp -s "$TMP/e1" "$TMP/e2" && ok "-e -p 'KING:\\nROMEO' is the prompt with a newline" \
    || bad "-e prompt" "$(head -c 100 "$TMP/e1")"

# ---- a prompt on standard input
"$BIN" generate $CH -p 'ROMEO:' -n 30 --seed 2 > "$TMP/p1" 2>/dev/null
printf 'ROMEO:' | "$BIN" generate $CH -n 30 --seed 2 > "$TMP/p2" 2>/dev/null
printf 'ROMEO:' > "$TMP/prompt.txt"
"$BIN" generate $CH -n 30 --seed 2 < "$TMP/prompt.txt" > "$TMP/p3" 2>/dev/null
printf 'JULIET:' | "$BIN" generate $CH -p 'ROMEO:' -n 30 --seed 2 > "$TMP/p4" 2>/dev/null
{ [ -s "$TMP/p1" ] && cmp -s "$TMP/p1" "$TMP/p2" && cmp -s "$TMP/p1" "$TMP/p3"; } \
    && ok "a piped or redirected standard input is the prompt (as -f -)" || bad "stdin prompt" "$(head -c 80 "$TMP/p2")"
cmp -s "$TMP/p1" "$TMP/p4" && ok "with -p, a piped standard input is not read" \
    || bad "-p and a pipe" "$(head -c 80 "$TMP/p4")"
"$BIN" generate $CH -p '' -n 30 --seed 2 > "$TMP/p5" 2>/dev/null
"$BIN" generate $CH -n 30 --seed 2 < /dev/null > "$TMP/p6" 2>/dev/null
cmp -s "$TMP/p5" "$TMP/p6" && ok "standard input not a pipe or file (/dev/null): a newline, as before" \
    || bad "/dev/null stdin" "$(head -c 80 "$TMP/p6")"
# a pipe held open and silent is not waited for (the run would otherwise hang)
(sleep 5 | timeout 4 "$BIN" generate $CH -n 30 --seed 2 > "$TMP/p7" 2>/dev/null); rc=$?
[ "$rc" -eq 0 ] && cmp -s "$TMP/p5" "$TMP/p7" && ok "a silent pipe is not waited for" || bad "silent pipe" "exit $rc"
printf 'ROMEO:' | "$BIN" tokenize $CH --json > "$TMP/t1" 2>/dev/null
"$BIN" tokenize $CH -p 'ROMEO:' --json > "$TMP/t2" 2>/dev/null
[ -s "$TMP/t1" ] && cmp -s "$TMP/t1" "$TMP/t2" && ok "tokenize reads a piped text too" \
    || bad "tokenize stdin" "$(cat "$TMP/t1")"

# ---- --stop
cut_at() {  # cut_at FILE PREFIX_LEN STOP...: FILE's bytes after PREFIX_LEN, up to the first stop
    /usr/bin/python3 -c '
import sys
data = open(sys.argv[1], "rb").read()[int(sys.argv[2]):]
at = min([data.find(s.encode()) for s in sys.argv[3:] if data.find(s.encode()) >= 0] or [len(data)])
sys.stdout.buffer.write(data[:at])' "$@"
}
"$BIN" generate $CH -p 'ROMEO:' -n 300 --seed 5 --no-echo > "$TMP/full" 2>/dev/null
for stops in "e" "the" "ing" "the|,"; do
    IFS='|' read -r -a list <<< "$stops"
    args=() && for s in "${list[@]}"; do args+=(--stop "$s"); done
    "$BIN" generate $CH -p 'ROMEO:' -n 300 --seed 5 --no-echo "${args[@]}" > "$TMP/cut" 2> "$TMP/err"
    cut_at "$TMP/full" 0 "${list[@]}" > "$TMP/want"
    [ -s "$TMP/want" ] && cmp -s "$TMP/cut" "$TMP/want" \
    && ok "--stop $stops: the text up to the first, the stop not printed" \
        || bad "--stop $stops" "got '$(head -c 80 "$TMP/cut")', want '$(head -c 80 "$TMP/want")'"
done
# Several stop texts: the one that starts first in the text wins, whichever was listed first (llama.cpp).
# "xy" at the first place where y has not appeared before: --stop y alone would print the x.
pair=$(/usr/bin/python3 -c '
import sys
t = open(sys.argv[1], "rb").read().decode()
p = next(i for i in range(1, len(t) - 1) if t[i].isalpha() and t[i + 1].isalpha() and t[i + 1] not in t[:i + 1])
print(t[p:p + 2])' "$TMP/full")
x=${pair%?} y=${pair#?}
cut_at "$TMP/full" 0 "$pair" > "$TMP/want_xy"
why=""
for order in "$pair $y" "$y $pair"; do
    read -r s1 s2 <<< "$order"
    "$BIN" generate $CH -p 'ROMEO:' -n 300 --seed 5 --no-echo --stop "$s1" --stop "$s2" > "$TMP/xy" 2>/dev/null
    cmp -s "$TMP/xy" "$TMP/want_xy" || why="$why streamed, --stop $s1 --stop $s2;"
    "$BIN" generate $CH -p 'ROMEO:' -n 300 --seed 5 --stop "$s1" --stop "$s2" --json > "$TMP/xy.json" 2>/dev/null
    strict_json "$TMP/xy.json" \
        "d['text'].encode() == open('$TMP/want_xy', 'rb').read() and d['stopping_word'] == '$pair'" \
        > /dev/null || why="$why --json, --stop $s1 --stop $s2;"
done
[ -s "$TMP/want_xy" ] && [ -z "$why" ] \
    && ok "--stop '$pair' --stop '$y' (either order): the earliest in the text wins" \
    || bad "--stop earliest" "$why got '$(head -c 80 "$TMP/xy")'"
n=$(wc -c < "$TMP/want")
grep -q "; $((n + 3)) new characters" "$TMP/err" && ok "--stop: the timing line counts the characters generated" \
    || bad "--stop count" "$(cat "$TMP/err") (want $((n + 3)): the text, then the stop ',')"
"$BIN" generate $CH -p 'ROMEO:' -n 300 --seed 5 --stop the > "$TMP/echoed" 2>/dev/null
{ printf 'ROMEO:'; cut_at "$TMP/full" 0 the; } | cmp -s - "$TMP/echoed" \
    && ok "--stop: the prompt is echoed, not searched" \
    || bad "--stop echo" "$(head -c 80 "$TMP/echoed")"
"$BIN" generate $CH -p 'ROMEO:' -n 300 --seed 5 --stop the --json > "$TMP/stop.json" 2>/dev/null
cut_at "$TMP/full" 0 the > "$TMP/want"
want_stop="d['text'].encode() == open('$TMP/want', 'rb').read() and d['stop_type'] == 'word'"
why=$(strict_json "$TMP/stop.json" "$want_stop and d['stopping_word'] == 'the'") \
    && ok "--stop --json: the same text, stop_type word and the stopping word" || bad "--stop --json" "$why"
"$BIN" generate $CH -p 'ROMEO:' -n 20 --seed 5 --stop zzzz --json > "$TMP/limit.json" 2>/dev/null
why=$(strict_json "$TMP/limit.json" "len(d['text']) == 20 and d['stop_type'] == 'limit' and d['stopping_word'] == ''") \
    && ok "--stop never met: stop_type limit after -n" || bad "--stop limit" "$why"
"$BIN" generate $CH -p 'ROMEO:' -n 20 --seed 5 --json > "$TMP/nostop.json" 2>/dev/null
why=$(strict_json "$TMP/nostop.json" "'stop_type' not in d and 'completion_probabilities' not in d") \
    && ok "without --stop or --n-probs the JSON keys are as before" || bad "json keys" "$why"
# streams: each sample stops on its own, the same bytes at any thread count, each cut from its own full text
"$BIN" generate $CH -p 'ROMEO:' -n 200 --seed 9 --samples 5 --batch 2 -t 1 > "$TMP/s_full" 2>/dev/null
"$BIN" generate $CH -p 'ROMEO:' -n 200 --seed 9 --samples 5 --batch 2 -t 1 --stop 'the' --json > "$TMP/s1" 2>/dev/null
"$BIN" generate $CH -p 'ROMEO:' -n 200 --seed 9 --samples 5 --batch 2 -t 2 --stop 'the' --json > "$TMP/s2" 2>/dev/null
[ -s "$TMP/s1" ] && cmp -s "$TMP/s1" "$TMP/s2" && ok "--stop with --samples: the same bytes at 1 and 2 threads" \
    || bad "--stop samples threads" "differ"
"$BIN" generate $CH -p 'ROMEO:' -n 200 --seed 9 --samples 5 --batch 2 -t 1 --json > "$TMP/s0" 2>/dev/null
why=$(/usr/bin/python3 -c '
import json, sys
full = [json.loads(l)["text"] for l in open(sys.argv[1])]
cut = [json.loads(l) for l in open(sys.argv[2])]
for f, c in zip(full, cut):
    want = f[:f.find("the")] if "the" in f else f
    if c["text"] != want or c["stop_type"] != ("word" if "the" in f else "limit"):
        sys.exit("sample %d: %r, want %r" % (c["sample"], c["text"][:40], want[:40]))
' "$TMP/s0" "$TMP/s1" 2>&1) && ok "--stop with --samples: each stream cut where its own text holds the stop" \
    || bad "--stop samples" "$why"
# a BPE model: the stop spans two tokens (the last byte of one, the first of the next)
"$BIN" generate $BPE -p 'ROMEO:' -n 40 --seed 1 --json --n-probs 1 > "$TMP/bpe.json" 2>/dev/null
span=$(/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
toks = [bytes(t["bytes"]) for t in d["completion_probabilities"]]
for i in range(5, len(toks) - 1):
    s = toks[i][-1:] + toks[i + 1][:1]
    at = sum(map(len, toks[:i])) + len(toks[i]) - 1  # where the stop starts: inside token i
    if len(toks[i]) > 1 and s.isascii() and s.decode().isalpha() and d["text"].encode().find(s) == at:
        print(s.decode()); break' "$TMP/bpe.json")
"$BIN" generate $BPE -p 'ROMEO:' -n 40 --seed 1 --no-echo > "$TMP/bfull" 2>/dev/null
"$BIN" generate $BPE -p 'ROMEO:' -n 40 --seed 1 --no-echo --stop "$span" > "$TMP/bcut" 2>/dev/null
cut_at "$TMP/bfull" 0 "$span" > "$TMP/want"
[ -n "$span" ] && [ -s "$TMP/want" ] && cmp -s "$TMP/bcut" "$TMP/want" \
    && ok "--stop '$span' across two BPE tokens: found, not printed" \
    || bad "--stop bpe" "'$span': $(head -c 80 "$TMP/bcut")"
expect_fail "--stop needs a text" 2 "--stop needs a text, got an empty one" generate $CH -p a --stop ''
"$BIN" generate $CH -p 'ROMEO:' -n 300 --seed 5 --no-echo -r the > "$TMP/r" 2>/dev/null
cut_at "$TMP/full" 0 the | cmp -s - "$TMP/r" && ok "-r is --stop (llama.cpp's --reverse-prompt)" || bad "-r" "differs"

# ---- min-p and the penalties
"$BIN" generate $CH -p 'ROMEO:' -n 80 --temperature 0 > "$TMP/greedy" 2>/dev/null
"$BIN" generate $CH -p 'ROMEO:' -n 80 --seed 3 --min-p 1 > "$TMP/minp1" 2>/dev/null
cmp -s "$TMP/greedy" "$TMP/minp1" && ok "--min-p 1 keeps the most likely only: greedy's text" \
    || bad "--min-p 1" "differs"
"$BIN" generate $CH -p 'ROMEO:' -n 80 --seed 3 --min-p 0.05 > "$TMP/minp" 2>/dev/null
"$BIN" generate $CH -p 'ROMEO:' -n 80 --seed 3 > "$TMP/plain" 2>/dev/null
! cmp -s "$TMP/minp" "$TMP/plain" && ok "--min-p 0.05 changes a sampled text" || bad "--min-p" "same text as without"
# greedy with a presence penalty of 1e3 over the last 40: no new character is among the 40 before it (the
# prompt's included)
"$BIN" generate $CH -p 'ROMEO:' -n 200 --temperature 0 --presence-penalty 1e3 --repeat-last-n 40 \
    > "$TMP/pres" 2>/dev/null
why=$(/usr/bin/python3 -c '
import sys
t = open(sys.argv[1], encoding="utf-8").read()
bad = [i for i in range(6, len(t)) if t[i] in t[max(0, i - 40):i]]
sys.exit("windows with a repeat: %s" % bad[:3] if bad or len(t) != 206 else 0)' "$TMP/pres") \
    && ok "--presence-penalty 1e3 --repeat-last-n 40: greedy repeats none of the last 40 characters" \
    || bad "presence" "$why"
for opts in "--repeat-penalty 1.3" "--frequency-penalty 0.4 --presence-penalty 0.2" \
    "--repeat-penalty 1.1 --repeat-last-n -1"; do
    "$BIN" generate $CH -p 'ROMEO:' -n 100 --seed 6 --samples 4 --batch 2 -t 1 $opts > "$TMP/q1" 2>/dev/null
    "$BIN" generate $CH -p 'ROMEO:' -n 100 --seed 6 --samples 4 --batch 2 -t 2 $opts > "$TMP/q2" 2>/dev/null
    "$BIN" generate $CH -p 'ROMEO:' -n 100 --seed 6 --samples 4 --batch 2 -t 1 > "$TMP/q0" 2>/dev/null
    [ -s "$TMP/q1" ] && cmp -s "$TMP/q1" "$TMP/q2" && ! cmp -s "$TMP/q1" "$TMP/q0" \
        && ok "$opts: changes the text, the same bytes at 1 and 2 threads" || bad "$opts" "threads differ or no effect"
done
"$BIN" generate $CH -p 'ROMEO:' -n 60 --seed 6 --repeat-penalty 1.3 --repeat-last-n 0 > "$TMP/q3" 2>/dev/null
"$BIN" generate $CH -p 'ROMEO:' -n 60 --seed 6 > "$TMP/q4" 2>/dev/null
cmp -s "$TMP/q3" "$TMP/q4" && ok "--repeat-last-n 0 turns the penalties off" || bad "last-n 0" "differs"

# ---- --n-probs
expect_fail "--n-probs needs --json" 2 "--n-probs goes with --json" generate $CH -p a --n-probs 3
"$BIN" generate $CH -p 'ROMEO:' -n 12 --temperature 0 --json --n-probs 65 > "$TMP/np.json" 2>/dev/null
cp="d['completion_probabilities']"
np_ok="len($cp) == 12 and ''.join(t['token'] for t in $cp) == d['text']"
tops="[[x['logprob'] for x in t['top_logprobs']] for t in d['completion_probabilities']]"
np_ok="$np_ok and all(len(lp) == 65 and abs(sum(map(__import__('math').exp, lp)) - 1) < 1e-6"
np_ok="$np_ok and lp == sorted(lp)[::-1] for lp in $tops)"
np_ok="$np_ok and all(t['id'] == t['top_logprobs'][0]['id'] and t['logprob'] == t['top_logprobs'][0]['logprob']"
np_ok="$np_ok for t in d['completion_probabilities'])"
why=$(strict_json "$TMP/np.json" "$np_ok") \
    && ok "--n-probs 65 (all of V): each token's top sums to 1, sorted, greedy's pick first, tokens spell the text" \
    || bad "--n-probs" "$why"
# the first token's probabilities are the softmax of the prompt's last logits (normlab logits)
"$BIN" logits $CH -p 'ROMEO:' > "$TMP/lg" 2>/dev/null
"$BIN" generate $CH -p 'ROMEO:' -n 1 --seed 1 --json --n-probs 3 > "$TMP/np1.json" 2>/dev/null
why=$(/usr/bin/python3 -c '
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
last = rows[-1]
m = max(last); lse = m + math.log(sum(math.exp(x - m) for x in last))
top = json.load(open(sys.argv[2]))["completion_probabilities"][0]["top_logprobs"]
want = sorted(range(len(last)), key=lambda i: (-last[i], i))[:3]
if [t["id"] for t in top] != want or any(abs(t["logprob"] - (last[t["id"]] - lse)) > 1e-4 for t in top):
    sys.exit("%r against %r" % ([(t["id"], t["logprob"]) for t in top], [(i, last[i] - lse) for i in want]))
' "$TMP/lg" "$TMP/np1.json" 2>&1) && ok "--n-probs: the top 3 are the softmax of logits' last row (1e-4)" \
    || bad "n-probs vs logits" "$why"

# ---- llama.cpp's and nanoGPT's names
"$BIN" generate $CH -p 'ROMEO:' -n 7 --seed 8 --top-k 5 --samples 2 > "$TMP/n0" 2>/dev/null
for alt in "--n-predict 7 --top_k=5 --num-samples 2" "--max-new-tokens 7 --top_k 5 --num_samples=2" \
    "--max_new_tokens=7 -top-k 5 --samples 2"; do
    "$BIN" generate $CH -p 'ROMEO:' $alt --seed 8 > "$TMP/n1" 2>/dev/null
    cmp -s "$TMP/n0" "$TMP/n1" && ok "$alt: the same run" || bad "$alt" "differs"
done
"$BIN" generate $CH --start 'ROMEO:' -n 7 --seed 8 --top-k 5 --samples 2 > "$TMP/n2" 2>/dev/null
cmp -s "$TMP/n0" "$TMP/n2" && ok "--start is the prompt (nanoGPT's)" || bad "--start" "differs"
expect_fail "-c: llama.cpp's context size has no counterpart" 2 \
    "option '-c' has no counterpart here: llama.cpp's context size; the context is the model's block_size" \
    generate $CH -c 512
expect_fail "--ctx-size too" 2 "option '--ctx-size' has no counterpart here: llama.cpp's" generate $CH --ctx-size=512
expect_fail "-ngl is not -n" 2 \
    "option '-ngl' has no counterpart here: llama.cpp's GPU layers; normlab runs on the CPU" \
    generate $CH -ngl 99
expect_fail "a stray prompt: the hint says -p" 2 \
    "unexpected argument 'ROMEO:' (a prompt is given with -p: -p 'ROMEO:')" \
    generate $CH ROMEO:
expect_fail "a stray model: the hint says -m" 2 "unexpected argument 'shakespeare-pre-ln' (a model is named with -m" \
    info shakespeare-pre-ln
expect_fail "a stray file: the hint says -f" 2 \
    "unexpected argument 'README.md' (a file is read with -f: -f README.md)" \
    eval $CH README.md
"$BIN" generate -m $FIX/deepnorm.json -m $FIX/ln-pre-bias.json -p ab -n 3 --seed 1 > "$TMP/hdr" 2>/dev/null
grep -qx "=== $FIX/deepnorm.json (layernorm/post, DeepNorm alpha 1.414) ===" "$TMP/hdr" \
    && grep -qx "=== $FIX/ln-pre-bias.json (layernorm/pre) ===" "$TMP/hdr" \
    && ok "several -m: a DeepNorm model's header gives its alpha" || bad "deepnorm header" "$(grep '^===' "$TMP/hdr")"
expect_fail "-no-cnv: llama-cli's chat mode, not -n" 2 \
    "option '-no-cnv' has no counterpart here: llama.cpp's chat mode" \
    generate $CH -no-cnv
expect_fail "nanoGPT's --device" 2 \
    "option '--device' has no counterpart here: nanoGPT's: normlab runs float32 on the CPU" \
    generate $CH --device=cpu
expect_fail "nanoGPT's --out_dir" 2 "option '--out_dir' has no counterpart here: nanoGPT's: a model is named with -m" \
    generate $CH --out_dir=out
expect_fail "-pg: llama-bench's" 2 "option '-pg' has no counterpart here: llama-bench's pp+tg test" bench $CH -pg 16,4
expect_fail "a stray argument after -p: no -p hint" 2 "unexpected argument 'extra' (see" generate $CH -p ab extra
expect_fail "a stray number: no -p hint" 2 "unexpected argument '10' (see" generate $CH -n 5 10
expect_fail "help takes one command" 2 "help takes one command, got 'eval' after 'generate'" help generate eval
printf 'ROMEO:' > "$TMP/start.txt"
"$BIN" generate $CH --start="FILE:$TMP/start.txt" -n 12 --seed 8 > "$TMP/st1" 2>/dev/null
"$BIN" generate $CH --start 'ROMEO:' -n 12 --seed 8 > "$TMP/st2" 2>/dev/null
"$BIN" generate $CH -p 'ROMEO:' -n 12 --seed 8 > "$TMP/st3" 2>/dev/null
[ -s "$TMP/st1" ] && cmp -s "$TMP/st1" "$TMP/st3" && cmp -s "$TMP/st2" "$TMP/st3" \
    && ok "--start TEXT and --start=FILE:PATH are nanoGPT's prompt" || bad "--start" "differs"
expect_fail "--start with -p" 2 "give --start, -p or -f, one of them" generate $CH --start a -p b

# a prompt holding a NUL byte (a BPE model has a token for it) is echoed whole: streamed, in
# --samples' blocks and in --json
printf 'ROMEO\0: hi' > "$TMP/nul.txt"
"$BIN" generate $BPE -f "$TMP/nul.txt" -n 3 --temperature 0 > "$TMP/nul.out" 2>/dev/null
"$BIN" generate $BPE -f "$TMP/nul.txt" -n 3 --temperature 0 --samples 2 > "$TMP/nul2.out" 2>/dev/null
"$BIN" generate $BPE -f "$TMP/nul.txt" -n 3 --temperature 0 --json > "$TMP/nul.json" 2>/dev/null
why=$(/usr/bin/python3 -c '
import json, sys
p = open(sys.argv[1], "rb").read()
one, two, d = open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read(), json.load(open(sys.argv[4]))
if not one.startswith(p) or len(one) <= len(p): sys.exit("streamed: %r" % one[:20])
if two.count(b"---\n" + p) != 2: sys.exit("samples: %r" % two[:80])
if d["prompt"].encode() != p: sys.exit("json: %r" % d["prompt"])' \
    "$TMP/nul.txt" "$TMP/nul.out" "$TMP/nul2.out" "$TMP/nul.json") \
    && ok "a prompt with a NUL byte is echoed whole (streamed, --samples, --json)" || bad "NUL prompt" "$why"
