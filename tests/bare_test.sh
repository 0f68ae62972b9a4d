#!/bin/sh
# tests/bare_test.sh COMMAND... — runs COMMAND (make test) as on a machine where only `make run` has
# installed: in a private mount namespace whose Debian Python package folders are hidden by empty
# bind mounts, so that /usr/bin/python3 has its standard library and nothing else. Then it checks
# what a bare machine must see: COMMAND exits 0, its last line counts skipped checks and names the
# missing packages, and no Python traceback was printed anywhere.
# Needs root (CAP_SYS_ADMIN) for unshare -m, as CI and the developers' machines have.
set -u
if [ "${NORMLAB_BARE_INSIDE:-}" != 1 ]; then
    command -v unshare > /dev/null 2>&1 || { echo "bare: unshare (util-linux) is missing"; exit 1; }
    log=$(mktemp /tmp/normlab-bare-XXXXXX)
    NORMLAB_BARE_INSIDE=1 unshare -m "$0" "$@" 2>&1 | tee "$log"
    rc=$(tail -n 1 "$log" | sed -n 's/^bare: exit \([0-9]*\)$/\1/p')
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)  # make test's total
    fail=""
    [ "$rc" = 0 ] || fail="$fail; the tests exited ${rc:-without a status}"
    grep -q '^Traceback (most recent call last)' "$log" && fail="$fail; a Python traceback was printed"
    want='^[0-9]+ passed, 0 failed, [0-9]+ skipped \(.* missing: tools/install-deps.sh --python\)$'
    printf '%s' "$last" | grep -Eq "$want" \
        || fail="$fail; the total does not count skips and name the missing packages: $last"
    rm -f "$log"
    if [ -n "$fail" ]; then echo "bare: FAIL${fail}"; exit 1; fi
    echo "bare: ok (no traceback, every suite that could not run counted as skipped)"
    exit 0
fi
# Inside the namespace: hide every folder Python finds packages in beyond its standard library.
mount --make-rprivate / 2> /dev/null
empty=$(mktemp -d /tmp/normlab-bare-empty-XXXXXX)
for d in /usr/lib/python3/dist-packages /usr/lib/python3.*/dist-packages /usr/local/lib/python3*/dist-packages \
         /usr/local/lib/python3*/site-packages "$HOME"/.local/lib/python3*/site-packages; do
    [ -d "$d" ] || continue
    mount --bind "$empty" "$d" || { echo "bare: cannot hide $d"; echo "bare: exit 1"; exit 1; }
done
if /usr/bin/python3 -c 'import numpy' 2> /dev/null || /usr/bin/python3 -c 'import torch' 2> /dev/null; then
    echo "bare: numpy or torch still imports; the packages were not hidden"; echo "bare: exit 1"; exit 1
fi
"$@"
echo "bare: exit $?"
