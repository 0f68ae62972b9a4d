# tests/skips.sh — sourced by the shell suites. A check that needs a Python package is counted as
# skipped where the package is missing, and the suite's closing line names it:
#   NAME: N passed, M failed, K skipped (python3-matplotlib missing: tools/install-deps.sh --python)
# tests/run.sh adds the counts up, so that a machine without the packages reads as such, not as green.
skipped=0 absent=""

# have_python COUNT MODULE...: 0 when /usr/bin/python3 imports every module; else counts COUNT checks
# as skipped, notes the Debian packages (python3-MODULE) and returns 1.
have_python() {
    count=$1; shift
    miss=""
    for m in "$@"; do
        [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import $m" 2>/dev/null || miss="$miss python3-$m"
    done
    [ -z "$miss" ] && return 0
    skipped=$((skipped + count))
    for p in $miss; do case " $absent " in *" $p "*) ;; *) absent="${absent:+$absent, }$p" ;; esac; done
    echo "skip $count (of this suite's checks):$miss missing"
    return 1
}

# closing NAME: the suite's last line, from $passed, $failed and what have_python skipped.
closing() {
    if [ "$skipped" -gt 0 ]; then
        echo "$1: $passed passed, $failed failed, $skipped skipped ($absent missing: tools/install-deps.sh --python)"
    else
        echo "$1: $passed passed, $failed failed"
    fi
}
