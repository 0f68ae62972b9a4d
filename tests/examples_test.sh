#!/bin/bash
# tests/examples_test.sh [--long] [--list] [BINARY] [DOC.md ...] — runs every example of README.md and
# docs/*.md (or of the DOCs named)
# (docs/testing.md "How examples are marked" is the rule a writer follows):
#   - an example is a line "$ COMMAND" in a fenced block whose info string is sh; a line ending in
#     "\" continues the command; the block's other lines are the output shown to the reader, and each
#     (but "...") must be a substring of one line the command printed (stdout or stderr), "..." inside
#     it matching anything; every command must exit 0;
#   - a block's commands run in order in one bash, in a scratch copy of the checkout made for each
#     document (tracked and untracked files, BINARY as ./normlab, build/libnormlab.a, ../shared),
#     with stdin from /dev/null, so nothing in the checkout changes;
#   - "<!-- examples: long -->" on the line before a fence: run only with --long (make docs-check);
#   - "<!-- file: NAME -->" on the line before a fence: the block's text is written to NAME in the
#     scratch copy before the document's examples run (the C programs are compiled that way);
#   - a fence marked bash, shell or console, or an sh block without a "$ " line, is a failure.
# --list prints every example (document:line, short or long, the command) and runs nothing.
# BINARY defaults to ./normlab. Prints one line per example and "examples_test: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
long=0 list=0 bin=./normlab docs=""
for a in "$@"; do
    case $a in
        --long) long=1 ;;
        --list) list=1 ;;
        -*) echo "usage: tests/examples_test.sh [--long] [--list] [BINARY] [DOC.md ...]" >&2; exit 2 ;;
        *.md) docs="$docs $a" ;;
        *) bin=$a ;;
    esac
done
passed=0 failed=0 skipped=0 tab=$(printf '\t')
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
TMP=$(mktemp -d /tmp/normlab-examples-XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# plan DOC: the document's blocks as records, one a line, fields split by a tab:
#   F LINE NAME / T TEXT (a line of the file) / B LINE KIND (a block of examples: short or long) /
#   C LINE CMD (a command; continuation lines as further "M TEXT" records) / O TEXT (shown output) /
#   X (end of a block) / E LINE MESSAGE (a malformed block)
plan() {
    awk '
    function flush() { if (mode == "sh" && ncmd == 0) printf "E\t%d\tan sh block with no \"$ \" line\n", start
                       if (mode == "sh") print "X"; if (mode == "file") print "X" }
    BEGIN { mode = ""; mark = ""; file = "" }
    mode == "" && /^<!-- examples: long -->[[:space:]]*$/ { mark = "long"; next }
    mode == "" && /^<!-- file: [^ ]+ -->[[:space:]]*$/ { file = $3; next }
    mode == "" && /^```/ {
        info = substr($0, 4); sub(/[[:space:]].*/, "", info)
        start = FNR; ncmd = 0; cont = 0
        if (info == "bash" || info == "shell" || info == "console")
            printf "E\t%d\ta fence marked \"%s\": examples are marked sh\n", FNR, info
        if (file != "") { mode = "file"; printf "F\t%d\t%s\n", FNR, file }
        else if (info == "sh") { mode = "sh"; printf "B\t%d\t%s\n", FNR, (mark == "long" ? "long" : "short") }
        else mode = "other"
        mark = ""; file = ""; next
    }
    mode == "" { if ($0 !~ /^[[:space:]]*$/) { mark = ""; file = "" }; next }
    /^```[[:space:]]*$/ { flush(); mode = ""; next }
    mode == "file" { printf "T\t%s\n", $0; next }
    mode == "sh" && cont { printf "M\t%s\n", $0; cont = /\\$/; next }
    mode == "sh" && /^\$ / { ncmd++; printf "C\t%d\t%s\n", FNR, substr($0, 3); cont = /\\$/; next }
    mode == "sh" { printf "O\t%s\n", $0; next }
    END { if (mode != "") printf "E\t%d\ta fence that is never closed\n", start }
    ' "$1"
}

# scratch: a fresh copy of the checkout at $TMP/main (from one copy made at the first call), with
# ../shared beside it.
scratch() {
    if [ ! -d "$TMP/pristine" ]; then
        mkdir -p "$TMP/pristine/build"
        # the files git knows (tracked, or untracked and not ignored); outside a git checkout (a
        # copy such as this test's own scratch, where README's `make test` runs it again) every
        # file but build/
        if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
            git ls-files -z --cached --others --exclude-standard
        else
            find . -path ./build -prune -o -type f -print0
        fi | tar --null -T - -cf - 2>/dev/null | tar -xf - -C "$TMP/pristine"
        cp -p "$bin" "$TMP/pristine/normlab"
        # The plain objects, so that make there compiles nothing, but no library: a document that
        # uses build/libnormlab.a gets it from a plain `make` in its copy (make_library).
        [ -d build/rel ] && cp -a build/rel "$TMP/pristine/build/" && rm -rf "$TMP/pristine/build/rel/tests" \
            && rm -f "$TMP/pristine/build/rel/libnormlab.a"
        if [ "$long" = 1 ]; then  # what the tools find built: ONNX Runtime
            [ -d build/ort ] && ln -s "$root/build/ort" "$TMP/pristine/build/ort"
        fi
        [ -d ../shared ] && ln -s "$(cd .. && pwd)/shared" "$TMP/shared"
    fi
    rm -rf "$TMP/main"
    cp -a "$TMP/pristine" "$TMP/main"
}

# make_library DOC: a plain `make` in the document's copy, which must leave build/libnormlab.a there
# (README.md and docs/embedding.md promise it).
make_library() {
    (cd "$TMP/main" && timeout 600 make -s > "$TMP/make.log" 2>&1)
    [ -f "$TMP/main/build/libnormlab.a" ] && ok "$1: a plain make builds build/libnormlab.a for its examples" \
        || bad "$1: make" "no build/libnormlab.a after a plain make: $(tail -n 3 "$TMP/make.log" | tr '\n' ' ')"
}

# found WANT FILE: WANT's pieces between "..." occur, in order, within one line of FILE.
found() {
    awk -v want="$1" 'BEGIN { n = split(want, seg, /\.\.\./) }
        { s = $0; hit = 1
          for (i = 1; i <= n; i++) {
              if (seg[i] == "") continue
              j = index(s, seg[i]); if (!j) { hit = 0; break }
              s = substr(s, j + length(seg[i]))
          }
          if (hit) { any = 1; exit } }
        END { exit !any }' "$2"
}

# run_block DOC: runs the block collected in $TMP/block (commands C_i with their shown output O_i).
run_block() {
    doc=$1
    limit=120; [ "$kind" = long ] && limit=7200
    script=$TMP/block.sh
    { echo 'cd "$1" || exit 1'
      for i in $(seq 1 "$ncmd"); do
          printf '{\n%s\n} > "$2/out.%d" 2>&1 < /dev/null; echo $? > "$2/rc.%d"\n' "$(cat "$TMP/cmd.$i")" "$i" "$i"
      done
    } > "$script"
    rm -rf "$TMP/res"; mkdir -p "$TMP/res"
    (unset NORMLAB_MODEL NORMLAB_MODELS; export NORMLAB_BIN="$TMP/main/normlab" MPLCONFIGDIR="$TMP/mpl"
     timeout "$limit" bash "$script" "$TMP/main" "$TMP/res") > /dev/null 2>&1
    for i in $(seq 1 "$ncmd"); do
        what="$doc:${line[$i]} $(head -n 1 "$TMP/cmd.$i" | cut -c1-90)"
        if [ ! -f "$TMP/res/rc.$i" ]; then
            bad "$what" "did not finish (a block may run ${limit} s)"; continue
        fi
        rc=$(cat "$TMP/res/rc.$i") missing=""
        while IFS= read -r want; do
            want=${want%"${want##*[![:space:]]}"}
            [ -z "$want" ] || [ "$want" = "..." ] && continue
            found "$want" "$TMP/res/out.$i" || missing="$missing [$want]"
        done < "$TMP/want.$i"
        if [ "$rc" -ne 0 ]; then
            bad "$what" "exit $rc: $(tail -n 3 "$TMP/res/out.$i" | tr '\n' ' ' | cut -c1-300)"
        elif [ -n "$missing" ]; then
            bad "$what" "output lacks$missing; it printed: $(head -n 5 "$TMP/res/out.$i" | tr '\n' ' ' | cut -c1-300)"
        else
            ok "$what"
        fi
    done
}

for doc in ${docs:-README.md docs/*.md}; do
    [ -f "$doc" ] || { [ -n "$docs" ] && bad "$doc" "no such document"; continue; }
    plan "$doc" > "$TMP/plan"
    grep -q "^[BE]$tab" "$TMP/plan" || continue
    kind="" ncmd=0
    # first the files the document's examples use, then its blocks in order
    if [ "$list" = 0 ] && { [ "$long" = 1 ] || grep -q "^B$tab[0-9]*${tab}short" "$TMP/plan"; }; then
        scratch
        grep -q "libnormlab\.a" "$TMP/plan" && make_library "$doc"
        awk -F'\t' -v dir="$TMP/main" '$1 == "F" { out = dir "/" $3; printf "" > out; next }
            $1 == "T" && out != "" { print substr($0, 3) >> out; next } $1 == "X" { out = "" }' "$TMP/plan"
    fi
    while IFS= read -r rec; do
        tag=${rec%%"$tab"*} rest=${rec#*"$tab"}
        case $tag in
            E) bad "$doc:${rest%%"$tab"*}" "${rest#*"$tab"}" ;;
            F) infile=1 ;;
            B) kind=${rest#*"$tab"} ncmd=0 infile=0; rm -f "$TMP"/cmd.* "$TMP"/want.* ;;
            C) ncmd=$((ncmd + 1)); line[$ncmd]=${rest%%"$tab"*}
               printf '%s\n' "${rest#*"$tab"}" > "$TMP/cmd.$ncmd"; : > "$TMP/want.$ncmd" ;;
            M) printf '%s\n' "$rest" >> "$TMP/cmd.$ncmd" ;;
            O) [ "$ncmd" -gt 0 ] && printf '%s\n' "$rest" >> "$TMP/want.$ncmd" ;;
            X) [ "${infile:-0}" = 1 ] && { infile=0; continue; }
               [ "$ncmd" -eq 0 ] && continue
               if [ "$list" = 1 ]; then
                   for i in $(seq 1 "$ncmd"); do
                       printf '%s:%s\t%s\t%s\n' "$doc" "${line[$i]}" "$kind" "$(head -n 1 "$TMP/cmd.$i")"
                   done
               elif [ "$kind" = long ] && [ "$long" = 0 ]; then
                   skipped=$((skipped + ncmd))
               else
                   run_block "$doc"
               fi ;;
        esac
    done < "$TMP/plan"
done
[ "$list" = 1 ] && exit 0
[ "$skipped" -gt 0 ] && echo "($skipped long examples not run: tests/examples_test.sh --long runs them)"
echo "examples_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
