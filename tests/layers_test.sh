#!/bin/sh
# tests/layers_test.sh — the three layers depend one way (README "Layout", docs/layout.md), read from the sources'
# #include "..." lines:
#   core (engine/*, tokenizer/*)  includes no header of the lab (engine/lab/, normlab_lab.h) or the command line;
#   lab (engine/lab/*)            includes no header of the command line (engine/cli/), and of the
#                                 core only the public normlab.h and the one internal header made for
#                                 it (engine/internal/normlab_internal.h): it calls no other private core function;
#   command line (engine/cli/*)   includes only the public headers (include/normlab/: normlab.h,
#                                 normlab_lab.h) and its own, like any embedder.
# And no file outside the config parser (config.c), the family files (transformer.c,
# transformer_weights.c, rnn.c; families.c, the registry, picks the family) and the enum's own header
# (normlab.h) names an arch (NL_ARCH_*): the loader, the command line and the lab ask the family's
# table (nl_family_info, nl_config_describe, ...) instead.
# It also plants one violation of each rule in a scratch copy and checks that each is caught, by this
# reading and by the compiler (the Makefile's per-layer -I and the headers' #error guards).
cd "$(dirname "$0")/.." || exit 1
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
PUBLIC="normlab.h normlab_error.h normlab_tokenizer.h normlab_lab.h"
LAB_SEES="normlab.h normlab_internal.h"

# violations ROOT: one line per include that breaks a rule, "FILE includes HEADER (LAYER's)".
violations() {
    root=$1
    for f in $(cd "$root" && ls engine/*.[ch] engine/lab/*.[ch] engine/cli/*.[ch] tokenizer/*.[ch] 2>/dev/null); do
        case $f in engine/lab/*) layer=lab ;; engine/cli/*) layer=cli ;; *) layer=core ;; esac
        for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$root/$f"); do
            owner=core  # where the compiler finds it: beside the file, then the -I folders, in order
            for d in "$(dirname "$f")" include/normlab engine/internal engine engine/lab engine/cli tokenizer; do
                [ -f "$root/$d/$h" ] || continue
                case $(realpath -m --relative-to="$root" "$root/$d/$h") in
                    engine/cli/*) owner=cli ;;
                    engine/lab/* | include/normlab/normlab_lab.h) owner=lab ;;
                    *) owner=core ;;
                esac
                break
            done
            case $layer:$owner in
                core:lab | core:cli | lab:cli) echo "$f includes $h ($owner's)" ;;
                lab:core) case " $LAB_SEES " in *" $h "*) ;; *) echo "$f includes $h (a private core header)" ;; esac ;;
                cli:cli) ;;
                cli:*) case " $PUBLIC " in *" $h "*) ;; *) echo "$f includes $h (a private $owner header)" ;; esac ;;
            esac
        done
    done
}

# arch_tests ROOT: "FILE:LINE" of each arch named outside the files that may.
arch_tests() {
    (cd "$1" && grep -n 'NL_ARCH_[A-Z]' engine/*.[ch] engine/lab/*.[ch] engine/cli/*.[ch] tokenizer/*.[ch]) |
        grep -v -E '^engine/(config|transformer|transformer_weights|rnn|families)\.c:' | cut -d: -f1,2
}

found=$(violations .)
[ -z "$found" ] && ok "every #include follows the layers: core <- lab <- command line" \
    || bad "layers" "$(echo "$found" | tr '\n' ';')"
for n in $(ls engine/*.c engine/lab/*.c engine/cli/*.c tokenizer/*.c | wc -l); do
    [ "$n" -ge 20 ] && ok "the check read $n source files" || bad "sources" "only $n found"
done

# Planted violations, one per rule, each in a fresh copy: each must be reported.
TMP=$(mktemp -d /tmp/normlab-layers-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
plant() {  # plant LABEL FILE HEADER
    rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"
    cp -r include engine tokenizer "$TMP/tree/"
    printf '#include "%s"\n' "$3" >> "$TMP/tree/$2"
    violations "$TMP/tree" | grep -q "^$2 includes $3 " && ok "a planted violation is caught: $1" \
        || bad "planted: $1" "$2 including $3 went unreported"
}
plant "the core includes the lab" engine/transformer.c normlab_lab.h
plant "the core includes the command line" engine/model.c report_profile.h
plant "the lab includes the command line" engine/lab/stats.c cli.h
plant "the lab includes a private core header" engine/lab/stats.c kernels.h
plant "the lab includes the family table" engine/lab/profile.c family.h
plant "the command line includes a private core header" engine/cli/models.c model.h
plant "the command line includes a private lab-adjacent header" engine/cli/report_compare.c kernels.h
plant "the command line includes the internal core header" engine/cli/report_compare.c normlab_internal.h
plant "the core includes the lab by a path" engine/transformer.c ../include/normlab/normlab_lab.h
plant "the command line includes a core header by a path" engine/cli/models.c ../model.h
# arch_compares ROOT: "FILE:LINE" of each arch compared or switched on outside the loader and the
# family files, by any name (c->arch != 0 as well as NL_ARCH_LSTM): the family's table answers.
arch_compares() {
    (cd "$1" && grep -nE '(->|\.)arch *[!=]=|[!=]= *[A-Za-z_]*(->|\.)arch\b|switch *\([^)]*arch' \
        engine/*.[ch] engine/lab/*.[ch] engine/cli/*.[ch] tokenizer/*.[ch]) |
        grep -v -E '^engine/(config|transformer|transformer_weights|rnn|families)\.c:' | cut -d: -f1,2
}
# window_sentinels ROOT: "FILE:LINE" of a window tested against SIZE_MAX (a recurrent model's) outside
# the family files: the capability asked by its name is the family's windowed.
window_sentinels() {
    (cd "$1" && grep -nE '[!=]= *SIZE_MAX|SIZE_MAX *[!=]=' engine/*.c engine/lab/*.c engine/cli/*.c) |
        grep -E 'window|context|\bT\b' | grep -v -E '^engine/(transformer|rnn)\.c:' | cut -d: -f1,2
}
# rnn_constants ROOT: "FILE:LINE" of the recurrent family's own constant (NL_RNN_LOGITS) outside
# its files: the most logits a call returns is the family's answer (NlModelDesc.call_logits).
rnn_constants() {
    (cd "$1" && grep -n 'NL_RNN_LOGITS' engine/*.[ch] engine/lab/*.[ch] engine/cli/*.[ch] tokenizer/*.[ch] \
        include/normlab/*.h) | grep -v -E '^engine/rnn\.[ch]:' | cut -d: -f1,2
}
# placement_values ROOT: "FILE:LINE" naming a placement's value (NL_PLACE_*) outside the recipe code
# (engine/recipe.c, engine/internal/recipe.h): a block's shape is its recipe's, asked, never tested.
placement_values() {
    (cd "$1" && grep -n 'NL_PLACE_[A-Z]' engine/*.[ch] engine/internal/*.h engine/lab/*.[ch] engine/cli/*.[ch] \
        tokenizer/*.[ch]) | grep -v -E '^engine/(recipe\.c|internal/recipe\.h):' | cut -d: -f1,2
}
found=$(placement_values .)
[ -z "$found" ] && ok "no placement value is named outside the recipe code" \
    || bad "placement named" "$(echo "$found" | tr '\n' ' ')"
found=$(rnn_constants .)
[ -z "$found" ] && ok "NL_RNN_LOGITS is the recurrent family's alone" \
    || bad "NL_RNN_LOGITS outside rnn.c" "$(echo "$found" | tr '\n' ' ')"
found=$(arch_compares .)
[ -z "$found" ] && ok "no arch is compared or switched on outside the loader and the family files" \
    || bad "arch compared" "$(echo "$found" | tr '\n' ' ')"
found=$(window_sentinels .)
[ -z "$found" ] && ok "no window is tested against SIZE_MAX outside the family files" \
    || bad "window sentinel" "$(echo "$found" | tr '\n' ' ')"
for planted in "engine/cli/report_compare.c|int planted(const NlConfig *c) { return c->arch != 0; }|arch_compares" \
               "engine/lab/stats.c|int planted(const NlConfig *c) { switch (c->arch) { default: return 0; } }|\
arch_compares" \
               "engine/eval.c|int planted(size_t window) { return window == SIZE_MAX; }|window_sentinels" \
               "engine/cli/cmd_eval.c|int planted(void) { return NL_RNN_LOGITS; }|rnn_constants" \
               "engine/lab/compare.c|int planted(void) { return NL_RNN_LOGITS; }|rnn_constants" \
               "engine/cli/report_compare.c|int planted(NlPlacement p) { return p == NL_PLACE_PERI; }|\
placement_values" \
               "engine/lab/lens.c|int planted(const NlConfig *c) { return c->placement != NL_PLACE_POST; }|\
placement_values" \
               "engine/transformer.c|int planted(const NlConfig *c) { return c->placement == NL_PLACE_PRE; }|\
placement_values"; do
    f=${planted%%|*} rest=${planted#*|}; code=${rest%|*} check=${rest##*|}
    rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"
    cp -r include engine tokenizer "$TMP/tree/"
    printf '%s\n' "$code" >> "$TMP/tree/$f"
    $check "$TMP/tree" | grep -q "^$f:" && ok "a planted test is caught ($check): $f" \
        || bad "planted $check" "$f: '$code' went unreported"
done
found=$(arch_tests .)
[ -z "$found" ] && ok "no arch is tested outside the loader and the family files" \
    || bad "arch tests" "$(echo "$found" | tr '\n' ' ')"
for f in engine/cli/report_profile.c engine/lab/profile.c; do  # planted: a test of the arch in the CLI, in the lab
    rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"
    cp -r include engine tokenizer "$TMP/tree/"
    printf 'int planted(const NlConfig *c) { return c->arch == NL_ARCH_LSTM; }\n' >> "$TMP/tree/$f"
    arch_tests "$TMP/tree" | grep -q "^$f:" && ok "a planted arch test is caught: $f" \
        || bad "planted arch test" "$f testing NL_ARCH_LSTM went unreported"
done
# The compiler keeps the layers too (the Makefile's per-layer -I): in a copy of the tree, a file of a
# layer that includes a header of a higher one does not build; including a lower layer's does.
compiles() {  # compiles FILE HEADER: 0 when FILE, holding only #include "HEADER", builds with make
    rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"
    cp -r Makefile include engine tokenizer tests "$TMP/tree/"
    printf '#include "%s"\nint planted_%s(void);\n' "$2" "$(echo "$2" | tr -c 'a-z\n' _)" > "$TMP/tree/$1"
    make -C "$TMP/tree" --no-print-directory -s "build/rel/${1%.c}.o" > "$TMP/cc.log" 2>&1
}
# Refused: by "No such file" (not on the layer's -I) or by the header's own #error.
for case in "engine/planted.c normlab_lab.h" "engine/planted.c report_profile.h" "tokenizer/planted.c normlab_lab.h" \
            "engine/lab/planted.c cli.h" "engine/lab/planted.c family.h" "engine/lab/planted.c kernels.h" \
            "engine/cli/planted.c model.h" "engine/cli/planted.c family.h" "engine/cli/planted.c bpe.h" \
            "engine/cli/planted.c normlab_internal.h" "engine/cli/planted.c tokenizer.h"; do
    set -- $case
    compiles "$1" "$2" && bad "compiler: $1 including $2" "it built" \
        || { grep -q -E "$2: No such file|#error" "$TMP/cc.log" && ok "the compiler refuses $1 including $2" \
             || bad "compiler: $1 including $2" "$(head -c 200 "$TMP/cc.log")"; }
done
# The public config is a handle: the command line reads a model through NlModelDesc, and a file of
# it that reads a config's field does not build (a family's fields are the core's and the lab's).
rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"
cp -r Makefile include engine tokenizer tests "$TMP/tree/"
planted='int planted(const NlConfig *c);\nint planted(const NlConfig *c) { return c->vocab_size; }'
printf '#include "normlab.h"\n%b\n' "$planted" \
    > "$TMP/tree/engine/cli/planted.c"
make -C "$TMP/tree" --no-print-directory -s build/rel/engine/cli/planted.o > "$TMP/cc.log" 2>&1 \
    && bad "compiler: the command line reads a config field" "it built" \
    || { grep -q "incomplete" "$TMP/cc.log" && ok "the compiler refuses a command-line file reading NlConfig's fields" \
         || bad "compiler: config field" "$(head -c 200 "$TMP/cc.log")"; }
compiles engine/cli/planted.c normlab_lab.h && compiles engine/lab/planted.c normlab.h \
    && compiles engine/lab/planted.c normlab_internal.h && compiles engine/planted.c normlab_internal.h \
    && ok "...and builds a layer including a lower one's header" || bad "compiler, lower" "$(head -c 200 "$TMP/cc.log")"
echo "layers_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
