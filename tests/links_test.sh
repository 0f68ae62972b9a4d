#!/bin/sh
# tests/links_test.sh — the links of README.md and docs/*.md: every relative link and image
# ([text](path), ![alt](path), outside code) names a file or folder that exists, every #anchor a
# heading of the document it points into (GitHub's rule: lower case, punctuation dropped, spaces as
# hyphens, a repeated heading suffixed -1, -2, ...), and README.md links every docs/*.md.
# Links to http(s) and mailto are not followed. Prints "links_test: N passed, M failed".
cd "$(dirname "$0")/.." || exit 1
passed=0 failed=0
TMP=$(mktemp -d /tmp/normlab-links-XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# anchors DOC: the anchors of DOC's headings, one a line.
anchors() {
    awk '/^```/ { code = !code; next }
        !code && /^#+ / {
            h = $0; sub(/^#+ +/, "", h); sub(/ +#* *$/, "", h); h = tolower(h)
            gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h)
            n = seen[h]++; print (n ? h "-" n : h)
        }' "$1"
}

# links DOC: "LINE TARGET" for every link of DOC outside fenced code and inline code.
links() {
    awk '/^```/ { code = !code; next }
        !code {
            s = $0; gsub(/`[^`]*`/, "", s)
            while (match(s, /\]\([^) ]+\)/)) {
                print FNR, substr(s, RSTART + 2, RLENGTH - 3); s = substr(s, RSTART + RLENGTH)
            }
        }' "$1"
}

for doc in README.md docs/*.md; do
    [ -f "$doc" ] || continue
    dir=$(dirname "$doc") n=0 bad=""
    links "$doc" > "$TMP/links"
    while read -r line target; do
        case $target in http://* | https://* | mailto:*) continue ;; esac
        n=$((n + 1))
        path=${target%%#*} anchor=""
        case $target in *#*) anchor=${target#*#} ;; esac
        if [ -z "$path" ]; then file=$doc; else file=$dir/$path; fi
        if [ ! -e "$file" ]; then
            bad="$bad $doc:$line $target (no such file);"
        elif [ -n "$anchor" ]; then
            case $file in
                *.md) anchors "$file" | grep -qxF "$anchor" || bad="$bad $doc:$line $target (no such heading);" ;;
                *) bad="$bad $doc:$line $target (an anchor into a file that is not Markdown);" ;;
            esac
        fi
    done < "$TMP/links"
    if [ -z "$bad" ]; then
        passed=$((passed + 1)); echo "ok   $doc: $n links"
    else
        failed=$((failed + 1)); echo "FAIL $doc:$bad"
    fi
done
links README.md | awk '{ print $2 }' | sed 's/#.*//' > "$TMP/readme"
for doc in docs/*.md; do
    if grep -qxF "$doc" "$TMP/readme"; then
        passed=$((passed + 1)); echo "ok   README.md links $doc"
    else
        failed=$((failed + 1)); echo "FAIL README.md does not link $doc"
    fi
done
echo "links_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
