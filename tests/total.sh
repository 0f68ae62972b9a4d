#!/bin/sh
# tests/total.sh — make test's last line: the counts of its four parts added up.
#   tests/total.sh --record PART PASSED FAILED SKIPPED ABSENT   keeps one part's counts (build/counts/PART)
#   tests/total.sh --count PART COMMAND...                      runs a suite and keeps its closing line's counts
#   tests/total.sh PART...                                      prints the total; a part that kept no counts
#                                                               (its build failed) counts as one failure
# The total reads "N passed, M failed", then ", K skipped (PACKAGES missing: tools/install-deps.sh
# --python)" where checks could not run; it exits non-zero when anything failed.
set -u
dir=build/counts
case "${1:-}" in
--record)
    mkdir -p "$dir" && printf '%s %s %s %s\n' "$3" "$4" "$5" "$6" > "$dir/$2"
    exit 0 ;;
--count)
    part=$2; shift 2
    out=$("$@" 2>&1); rc=$?
    printf '%s\n' "$out"
    line=$(printf '%s\n' "$out" | tail -n 1)
    p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*$/\1/p')
    f=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*$/\2/p')
    s=$(printf '%s' "$line" | sed -n 's/.* failed, \([0-9]*\) skipped.*$/\1/p')
    a=$(printf '%s' "$line" | sed -n 's/.* skipped (\(.*\) missing.*/\1/p')
    if [ -z "$p" ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then p=${p:-0} f=$((${f:-0} + 1)); fi
    "$0" --record "$part" "$p" "$f" "${s:-0}" "$a"
    exit "$rc" ;;
esac
passed=0 failed=0 skipped=0 absent=""
for part in "$@"; do
    if [ -r "$dir/$part" ]; then
        read -r p f s a < "$dir/$part"
    else
        echo "$part: kept no counts (it did not run to its end)"
        p=0 f=1 s=0 a=""
    fi
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    old_ifs=$IFS IFS=,
    for pkg in $a; do
        pkg=${pkg# }
        [ -n "$pkg" ] || continue
        case ", $absent, " in *", $pkg, "*) ;; *) absent="${absent:+$absent, }$pkg" ;; esac
    done
    IFS=$old_ifs
done
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped ($absent missing: tools/install-deps.sh --python)"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
