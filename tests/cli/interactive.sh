# tests/cli/interactive.sh — cli_test.sh's part: generate -i, turns on one KV cache: from a pipe
# (each continuation is what a fresh greedy run on the text so far gives) and at a terminal, under
# tmux with send-keys and capture-pane (Ctrl-D ends it).
# Sourced by tests/cli_test.sh in order, in its shell: its helpers, $BIN, $TMP and the files earlier parts made.

IM="-m weights/shakespeare-pre-ln"
printf 'JULIET:\nNURSE:\n' | "$BIN" generate $IM -i -p 'ROMEO:' -n 25 --temperature 0 > "$TMP/i.out" 2> "$TMP/i.err"
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^> ' "$TMP/i.err")" -eq 3 ] \
    && ok "-i from a pipe: three turns asked with '> ', exit 0" \
    || bad "-i pipe" "exit $rc: $(cat "$TMP/i.err")"
# turn k's text is what generate gives for the text before it (greedy; within the context: no shift)
why=""
for line in 'JULIET:' 'NURSE:'; do
    /usr/bin/python3 -c '
import sys; t = open(sys.argv[1]).read(); sys.stdout.write(t[:t.index(sys.argv[2] + "\n") + len(sys.argv[2]) + 1])' \
        "$TMP/i.out" "$line" > "$TMP/before"  # (a file: its last newline is part of the text)
    "$BIN" generate $IM -f "$TMP/before" -n 25 --temperature 0 > "$TMP/fresh" 2>/dev/null
    /usr/bin/python3 -c '
import sys; t, f = open(sys.argv[1]).read(), open(sys.argv[2]).read(); sys.exit(0 if t.startswith(f) else 1)' \
        "$TMP/i.out" "$TMP/fresh" || why="$why after $line"
done
[ -z "$why" ] && ok "-i: each turn continues the whole text on the cache, as a fresh run on it does" \
    || bad "-i continuation" "differs$why: $(head -c 200 "$TMP/i.out")"
printf 'JULIET:\n' | "$BIN" generate $IM -i -p 'ROMEO:' -n 200 --temperature 0 --stop 'the' > "$TMP/is.out" 2>/dev/null
"$BIN" generate $IM -p 'ROMEO:' -n 200 --temperature 0 --stop 'the' > "$TMP/is1" 2>/dev/null
/usr/bin/python3 -c '
import sys; t, f = open(sys.argv[1]).read(), open(sys.argv[2]).read()
sys.exit(0 if t.startswith(f + "JULIET:\n") and t.count("the") == 0 else 1)' "$TMP/is.out" "$TMP/is1" \
    && ok "-i --stop: a turn ends before its stop text, and the next line follows" \
    || bad "-i --stop" "$(cat "$TMP/is.out")"
# a recurrent model: its state carries the text from turn to turn
printf 'JULIET:\n' | "$BIN" generate -m weights/shakespeare-lstm-ln -i -p 'ROMEO:' -n 20 --temperature 0 \
    > "$TMP/il.out" 2>/dev/null
/usr/bin/python3 -c '
import sys; t = open(sys.argv[1]).read(); sys.stdout.write(t[:t.index("JULIET:\n") + 8])' \
    "$TMP/il.out" > "$TMP/il.before"
"$BIN" generate -m weights/shakespeare-lstm-ln -f "$TMP/il.before" -n 20 --temperature 0 > "$TMP/il1" 2>/dev/null
[ -s "$TMP/il1" ] && cmp -s "$TMP/il.out" "$TMP/il1" && ok "-i with a recurrent model: the state carries the turns" \
    || bad "-i lstm" "$(head -c 120 "$TMP/il.out")"
expect_fail "-i with --samples" 2 "--samples does not go with it" generate $IM -i --samples 2
expect_fail "-i with --json" 2 "--json does not go with it" generate $IM -i --json
expect_fail "-i with -f -" 2 "-f - does not go with it" generate $IM -i -f -
"$BIN" generate $IM -i -p 'ROMEO:' -n 10 --temperature 0 < /dev/null > "$TMP/i0" 2>/dev/null; rc=$?
"$BIN" generate $IM -p 'ROMEO:' -n 10 --temperature 0 > "$TMP/i1" 2>/dev/null
[ "$rc" -eq 0 ] && cmp -s "$TMP/i0" "$TMP/i1" && ok "-i with no input: the prompt's turn, then the end" \
    || bad "-i eof" "exit $rc"
# past a full window: the prompt's turn of 300 tokens shifts the 128-token window four times (at 128,
# 192, 256 and 320 positions), as generate's own loop does
"$BIN" generate $IM -i -p 'ROMEO:' -n 300 --temperature 0 < /dev/null > "$TMP/iw0" 2>/dev/null; rc=$?
"$BIN" generate $IM -p 'ROMEO:' -n 300 --temperature 0 > "$TMP/iw1" 2>/dev/null
[ "$rc" -eq 0 ] && [ "$(wc -c < "$TMP/iw1")" -ge 306 ] && cmp -s "$TMP/iw0" "$TMP/iw1" \
    && ok "-i across context shifts: the greedy turn equals generate's, byte for byte" \
    || bad "-i shift" "exit $rc; $(cmp "$TMP/iw0" "$TMP/iw1" 2>&1)"

# at a terminal: tmux, its own server; every wait bounded
if command -v tmux > /dev/null 2>&1; then
    sock="normlab-test-$$"
    pane() { tmux -L "$sock" capture-pane -p -J -t s 2>/dev/null; }
    wait_prompts() {  # wait_prompts N: until the pane shows N "> " prompts (10 s at most)
        for _ in $(seq 100); do
            [ "$(pane | grep -c '^> ')" -ge "$1" ] && return 0
            sleep 0.1
        done
        return 1
    }
    tmux -L "$sock" new-session -d -s s -x 200 -y 50 \
        "$BIN generate $IM -i -p ROMEO: -n 25 --temperature 0; echo \$? > $TMP/tmux.rc; sleep 20"
    wait_prompts 1 && tmux -L "$sock" send-keys -t s 'JULIET:' Enter && wait_prompts 2 \
        && tmux -L "$sock" send-keys -t s 'NURSE:' Enter && wait_prompts 3
    pane > "$TMP/pane"
    tmux -L "$sock" send-keys -t s C-d
    for _ in $(seq 100); do [ -s "$TMP/tmux.rc" ] && break; sleep 0.1; done
    tmux -L "$sock" kill-server 2>/dev/null
    # the pane: the transcript of the piped session, each typed line after a "> "
    /usr/bin/python3 -c '
import sys
want = open(sys.argv[1]).read().replace("JULIET:\n", "\n> JULIET:\n").replace("NURSE:\n", "\n> NURSE:\n") + "\n> "
got = open(sys.argv[2]).read().rstrip("\n")
sys.exit(0 if got == want.rstrip("\n ") + ">" or got.rstrip() == want.rstrip() else "%r\nwant %r" % (got, want))' \
        "$TMP/i.out" "$TMP/pane" && ok "-i at a terminal (tmux): typed lines continue the text, as from a pipe" \
        || bad "-i tmux" "$(cat "$TMP/pane")"
    [ "$(cat "$TMP/tmux.rc" 2>/dev/null)" = 0 ] && ok "-i at a terminal: Ctrl-D ends it, exit 0" \
        || bad "-i tmux Ctrl-D" "rc '$(cat "$TMP/tmux.rc" 2>/dev/null)'"
    # Ctrl-C, as in llama-cli: during a turn it ends the turn (the next "> " comes), at the prompt it
    # ends the session, exit 130, with the session's timings
    : > "$TMP/tmux.rc"
    tmux -L "$sock" new-session -d -s s -x 200 -y 50 \
        "$BIN generate -m weights/shakespeare-lstm-ln -i -p ROMEO: -n 100000000 --seed 1 2> $TMP/cc.err; \
echo \$? > $TMP/tmux.rc; sleep 20"
    err_prompts() {  # err_prompts N: until cc.err shows N "> " prompts (10 s at most)
        for _ in $(seq 100); do
            [ "$(grep -c '^> ' "$TMP/cc.err" 2>/dev/null)" -ge "$1" ] && return 0
            sleep 0.1
        done
        return 1
    }
    sleep 0.5 && tmux -L "$sock" send-keys -t s C-c && err_prompts 1 \
        && tmux -L "$sock" send-keys -t s 'JULIET:' Enter && sleep 0.5 && tmux -L "$sock" send-keys -t s C-c \
        && err_prompts 2 && tmux -L "$sock" send-keys -t s C-c
    for _ in $(seq 100); do [ -s "$TMP/tmux.rc" ] && break; sleep 0.1; done
    tmux -L "$sock" kill-server 2>/dev/null
    [ "$(cat "$TMP/tmux.rc")" = 130 ] && [ "$(grep -c '^> ' "$TMP/cc.err")" -eq 2 ] \
        && grep -qE "^normlab: 2 turns; [0-9]+ tokens read in .*; [0-9]+ new characters in " "$TMP/cc.err" \
        && ok "-i: Ctrl-C ends a turn, then at the prompt the session (exit 130, with its timings)" \
        || bad "-i Ctrl-C" "rc '$(cat "$TMP/tmux.rc")': $(tail -c 300 "$TMP/cc.err")"
    # at a terminal generate's text ends its line (the shell's next output starts its own); a pipe gets
    # the bytes alone (every golden test)
    tmux -L "$sock" new-session -d -s s -x 200 -y 50 \
        "$BIN generate $IM -p ROMEO: -n 12 --temperature 0 2>/dev/null; echo END-MARK; sleep 20"
    for _ in $(seq 100); do pane | grep -q END-MARK && break; sleep 0.1; done
    pane > "$TMP/pane2"
    tmux -L "$sock" kill-server 2>/dev/null
    "$BIN" generate $IM -p ROMEO: -n 12 --temperature 0 2>/dev/null > "$TMP/g12"
    { cat "$TMP/g12"; printf '\nEND-MARK'; } > "$TMP/want2"
    [ "$(tail -c 1 "$TMP/g12")" != "" ] && [ "$(grep -v '^$' "$TMP/pane2")" = "$(grep -v '^$' "$TMP/want2")" ] \
        && ok "generate at a terminal ends its text's line; to a pipe, the text's bytes alone" \
        || bad "terminal newline" "$(cat "$TMP/pane2")"
else
    skipped=$((skipped + 4)); absent="${absent:+$absent, }tmux"
    echo "skip 4 (of this suite's checks): tmux missing"
fi
# -n -1: each turn until the window is full (128 here): the prompt's turn fills it, with no shift
printf '' | "$BIN" generate $IM -i -p 'ROMEO:' -n -1 --temperature 0 > "$TMP/im1" 2> "$TMP/im1.err"
"$BIN" generate $IM -p 'ROMEO:' -n 122 --temperature 0 > "$TMP/im2" 2>/dev/null
cmp -s "$TMP/im1" "$TMP/im2" && grep -qE "^normlab: 1 turn; 6 tokens read in .*; 122 new characters in" "$TMP/im1.err" \
    && ok "-i -n -1: a turn runs until the window is full (122 new after a 6-token prompt); the timings at the end" \
    || bad "-i -n -1" "$(tail -c 300 "$TMP/im1.err")"
expect_fail "-n -1 without -i" 2 "-n -1 (each turn until the window is full) goes with -i" generate $IM -n -1 -p a
expect_fail "-i -n -1 with a recurrent model" 2 "a recurrent model has none" \
    generate -m weights/shakespeare-lstm-ln -i -n -1 -p a
