#!/bin/sh
# tests/install_test.sh DESTDIR PREFIX — the installed normlab as a user meets it, from another
# folder: a model by bare name, `list`, the man page, every installed header compiled alone, programs
# built against the installed headers and library with pkg-config (the engine's and the lab's), and a
# second install at another prefix.
set -u
root=$1 prefix=$2
here=$(cd "$(dirname "$0")" && pwd)
bin=$root$prefix/bin/normlab
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
. "$here/skips.sh"
work=$(mktemp -d /tmp/normlab-installed-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
# The installed tree lives under DESTDIR here, so the binary finds share/ beside itself.
out=$(env -u NORMLAB_MODEL -u NORMLAB_MODELS "$bin" generate -m shakespeare-pre-ln -p ROMEO: -n 20 -s 1 \
    --no-echo 2>/dev/null); rc=$?
[ "$rc" -eq 0 ] && [ "$(printf '%s' "$out" | wc -m)" -eq 20 ] \
    && ok "installed binary runs a model by bare name from elsewhere" || bad "by name" "exit $rc: $out"
env -u NORMLAB_MODELS "$bin" list > list.txt 2>&1
grep -q "^shakespeare-post-rms .*$root$prefix/share/normlab/models/shakespeare-post-rms" list.txt \
    && ok "list shows the installed models" \
    || bad "list" "$(cat list.txt)"
# A working folder whose weights/ holds a decoy of the same name (a GRU): the installed binary must not
# look there (docs/usage.md); only an explicit path reaches the working folder.
mkdir -p decoy/weights && cp -r "$here/../weights/shakespeare-gru" decoy/weights/shakespeare-pre-ln
info=$(cd decoy && env -u NORMLAB_MODEL -u NORMLAB_MODELS "$bin" info 2>&1)
by_name=$(cd decoy && env -u NORMLAB_MODEL -u NORMLAB_MODELS "$bin" info -m shakespeare-pre-ln 2>&1)
by_path=$(cd decoy && env -u NORMLAB_MODEL -u NORMLAB_MODELS "$bin" info -m weights/shakespeare-pre-ln 2>&1)
printf '%s\n%s\n' "$info" "$by_name" | grep -q "arch.*gru" \
    && bad "decoy weights/" "the working folder's weights/ was used: $info" \
    || { printf '%s' "$info" | grep -q "share/normlab/models/shakespeare-pre-ln" \
         && printf '%s' "$by_name" | grep -q "share/normlab/models/shakespeare-pre-ln" \
         && printf '%s' "$by_path" | grep -q "gru" \
         && ok "a decoy weights/ here: the default and -m NAME load the installed model, a path the decoy" \
         || bad "decoy weights/" "info: $info; -m name: $by_name; -m path: $by_path"; }
if have_python 1 matplotlib; then
    printf 'ab ba ab\n' > text.txt
    "$bin" compare -m "$root$prefix/share/normlab/models/shakespeare-pre-ln" -f text.txt --repeats 1 \
        --plot-dir plots > compare.out 2> compare.err \
        && [ "$(head -c 4 plots/bits_per_char.png | od -An -c | tr -d ' ')" = "211PNG" ] \
        && ok "the installed compare --plot-dir draws with the installed plot script" \
        || bad "installed plots" "$(cat compare.err)"
fi
man -l "$root$prefix/share/man/man1/normlab.1" 2>/dev/null | grep -q "normlab generate" \
    && ok "man -l renders the page" || bad "man" "does not render"
bash -n "$root$prefix/share/bash-completion/completions/normlab" \
    && ok "the bash completion parses" || bad "completion" "syntax"
# pkg-config reads the .pc of the staged tree; its prefix points at PREFIX, so aim it at DESTDIR too.
flags=$(PKG_CONFIG_PATH="$root$prefix/lib/pkgconfig" pkg-config --define-variable=prefix="$root$prefix" \
    --cflags --libs normlab)
if cc -std=c11 -Wall -Werror -o embed "$here/embed_example.c" $flags 2> cc.err; then
    ./embed "$root$prefix/share/normlab/models/shakespeare-pre-ln" > embed.out 2>&1 \
        && grep -q "^next after a newline: token [0-9]* of 65 (1 bytes)$" embed.out \
        && ok "an embedding program builds with pkg-config and runs" || bad "embed run" "$(cat embed.out)"
else
    bad "embed build" "$(cat cc.err)"
fi
# Every installed header compiles alone with pkg-config's flags (as <normlab/X.h> too, the way one
# under /usr/local/include is reached), and a program on the lab's header builds, links and runs: the
# profiler counts the positions of one prompt through the forward pass.
incdir=$root$prefix/include/normlab
for h in "$incdir"/*.h; do
    name=${h##*/}
    printf '#include <%s>\n' "$name" > alone.c
    printf '#include <normlab/%s>\n' "$name" > nested.c
    if cc -std=c11 -Wall -Werror -fsyntax-only $flags alone.c 2> cc.err \
        && cc -std=c11 -Wall -Werror -fsyntax-only -I"$root$prefix/include" nested.c 2>> cc.err; then
        ok "the installed $name compiles alone"
    else
        bad "installed $name alone" "$(cat cc.err)"
    fi
done
cat > lab.c <<'EOF_C'
#include <stdio.h>

#include <normlab_lab.h>

int main(int argc, char **argv) {
    NlError err;
    NlModel *model = NULL;
    NlState *state = NULL;
    NlProfiler *prof = NULL;
    if (argc != 2 || nl_model_load(&model, argv[1], NULL, &err) != 0 || nl_state_create(&state, model, NULL, &err) != 0
        || nl_profiler_create(&prof, nl_state_config(state), 0, 0, &err) != 0) {
        fprintf(stderr, "lab: %s\n", argc != 2 ? "usage: lab MODEL" : err.msg);
        return 1;
    }
    nl_state_set_profiler(state, prof);
    nl_profiler_set_phase(prof, NL_PHASE_PREFILL);
    int ids[3] = {0, 1, 2};
    nl_forward(state, ids, 3, 0, 1);
    printf("profiled %llu positions, %s\n", (unsigned long long)nl_profiler_tokens(prof, NL_PHASE_PREFILL),
           nl_quant_name(NL_QUANT_Q8));
    nl_state_set_profiler(state, NULL);
    nl_profiler_free(prof);
    nl_state_free(state);
    nl_model_free(model);
    return 0;
}
EOF_C
if cc -std=c11 -Wall -Werror -o lab lab.c $flags 2> cc.err; then
    ./lab "$root$prefix/share/normlab/models/shakespeare-pre-ln" > lab.out 2>&1 \
        && grep -qx "profiled 3 positions, q8" lab.out \
        && ok "a program on the installed lab header builds, links and runs" || bad "lab run" "$(cat lab.out)"
else
    bad "lab build" "$(cat cc.err)"
fi
# A second install at another prefix, after the first: every generated file is remade for it, so its
# normlab.pc names the second prefix. No DESTDIR, so that pkg-config reads the file as installed.
second=$work/second
if make -C "$here/.." --no-print-directory -s install PREFIX="$second" > second.log 2>&1; then
    grep -qx "prefix=$second" "$second/lib/pkgconfig/normlab.pc" \
        && ok "a second install's normlab.pc names its own prefix" \
        || bad "second prefix" "$(grep '^prefix=' "$second/lib/pkgconfig/normlab.pc")"
    printf '#include "normlab.h"\n' > inc.c
    cc -fsyntax-only $(PKG_CONFIG_PATH="$second/lib/pkgconfig" pkg-config --cflags normlab) inc.c 2> cc.err \
        && ok "pkg-config --cflags of the second install finds normlab.h" || bad "second cflags" "$(cat cc.err)"
else
    bad "second install" "$(tail -5 second.log)"
fi
closing install_test
[ "$failed" -eq 0 ]
