#!/bin/sh
# tools/dev/make_man.sh BINARY — writes the normlab(1) man page to stdout, from the binary's own help
# texts (`normlab --help` and `normlab help CMD` for every command of `normlab help --options-table`),
# all generated from the option table, so that it cannot drift.
set -eu
BIN=${1:-./normlab}
version=$("$BIN" --version | sed 's/^normlab //')
# roff: a backslash is \e, a line starting with . or ' must be escaped.
roff() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
cat <<HEAD
.TH NORMLAB 1 "" "normlab $version" "User Commands"
.SH NAME
normlab \\- a small transformer inference engine with switchable normalization
.SH SYNOPSIS
.B normlab
.I COMMAND
[\\fIoptions\\fR]
.SH DESCRIPTION
.nf
HEAD
"$BIN" --help | roff
echo ".fi"
for cmd in $("$BIN" help --options-table | grep -v '^#' | cut -f1 | uniq); do
    echo ".SH $(echo "$cmd" | tr a-z A-Z)"
    echo ".nf"
    "$BIN" help "$cmd" | roff
    echo ".fi"
done
cat <<'TAIL'
.SH ENVIRONMENT
.TP
.B NORMLAB_MODEL
the default model, by name or path
.TP
.B NORMLAB_MODELS
folders searched for models by name, before weights/ beside the binary and share/normlab/models
.TP
.B OPENBLAS_CORETYPE
OpenBLAS's kernel family; normlab never overrides it (NORMLAB_BLAS_AUTO=0 turns off its own choice)
.SH EXIT STATUS
0 ok, 1 runtime or data error, 2 usage error.
TAIL
