#!/bin/sh
# tests/symbols_test.sh LIBRARY — the library's symbols are its contract: (1) every global symbol it
# defines carries the project's prefix (nl_ or NL_), so that linking libnormlab.a into a program
# cannot clash with its names; (2) the symbols a shared object built from it would export (default
# visibility) are exactly the functions the public headers declare; everything else is hidden.
lib=${1:-build/rel/libnormlab.a}
cd "$(dirname "$0")/.." || exit 1
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }

unprefixed=$(nm -g --defined-only "$lib" | awk 'NF == 3 { print $3 }' | grep -v -E '^(nl_|NL_)' | sort -u)
n=$(nm -g --defined-only "$lib" | awk 'NF == 3' | wc -l)
if [ -z "$unprefixed" ] && [ "$n" -gt 0 ]; then ok "all $n global symbols of $lib start with nl_"
else bad "symbols without the nl_ prefix" "$(echo "$unprefixed" | tr '\n' ' ')"; fi

public=$(cat include/normlab/*.h |
    grep -o 'nl_[a-z0-9_]* *(' | tr -d ' (' | sort -u)
# defined, not local: "VISIBILITY NAME" (a target_clones dispatcher's resolver counts as its function)
readelf -sW "$lib" | awk '$5 != "LOCAL" && $5 != "Bind" && $7 != "UND" && NF == 8 { print $6, $8 }' |
    sed 's/\.resolver$//' | sort -u > "${TMPDIR:-/tmp}/normlab-symbols.$$"
exported=$(awk '$1 == "DEFAULT" { print $2 }' "${TMPDIR:-/tmp}/normlab-symbols.$$" | sort -u)
hidden=$(awk '$1 == "HIDDEN" { print $2 }' "${TMPDIR:-/tmp}/normlab-symbols.$$" | sort -u)
rm -f "${TMPDIR:-/tmp}/normlab-symbols.$$"
leaked=$(echo "$exported" | grep -vxF "$public")
hidden_public=$(echo "$hidden" | grep -xF "$public")
if [ -n "$exported" ] && [ -z "$leaked" ]; then ok "$(echo "$exported" | wc -l) default-visibility symbols, all public"
else bad "internal symbols with default visibility" "$(echo "$leaked" | tr '\n' ' ')"; fi
if [ -n "$hidden" ] && [ -z "$hidden_public" ]; then ok "$(echo "$hidden" | wc -l) internal symbols hidden"
else bad "public functions hidden" "$(echo "$hidden_public" | tr '\n' ' ')"; fi
# The engine's public headers stay small: at most 35 functions outside the lab's header (normlab.h
# with the error and tokenizer headers it includes).
engine_api=$(cat include/normlab/normlab.h include/normlab/normlab_error.h include/normlab/normlab_tokenizer.h |
    grep -v '^[[:space:]]*//' | grep -oE '\bnl_[a-z0-9_]+\(' | sort -u | wc -l)
[ "$engine_api" -gt 0 ] && [ "$engine_api" -le 35 ] \
    && ok "normlab.h and the headers it includes declare $engine_api functions (at most 35)" \
    || bad "normlab.h's functions" "$engine_api, more than 35 (or none read)"
echo "symbols_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
