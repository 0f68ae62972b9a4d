#!/bin/sh
# tests/symbols_test.sh LIBRARY — every global symbol the library defines carries the project's
# prefix (nl_ or NL_), so that linking libnormlab.a into a program cannot clash with its names.
lib=${1:-build/rel/libnormlab.a}
bad=$(nm -g --defined-only "$lib" | awk 'NF == 3 { print $3 }' | grep -v -E '^(nl_|NL_)' | sort -u)
n=$(nm -g --defined-only "$lib" | awk 'NF == 3' | wc -l)
if [ -z "$bad" ] && [ "$n" -gt 0 ]; then
    echo "ok   all $n global symbols of $lib start with nl_"
    echo "symbols_test: 1 passed, 0 failed"
else
    echo "FAIL symbols without the nl_ prefix: $(echo "$bad" | tr '\n' ' ')"
    echo "symbols_test: 0 passed, 1 failed"
    exit 1
fi
