#!/bin/sh
# tools/dev/make_man.sh BINARY — writes the normlab(1) man page to stdout: its COMMANDS section (every
# command's usage, paragraph and options as tagged paragraphs) from `normlab help --man`, and the
# command list from `normlab --help`, both generated from the command and option tables, so that
# they cannot drift; the examples, environment and exit status are written here.
set -eu
BIN=${1:-./normlab}
version=$("$BIN" --version | sed 's/^normlab //')
cat <<HEAD
.TH NORMLAB 1 "" "normlab $version" "User Commands"
.SH NAME
normlab \\- a small transformer inference engine with switchable normalization
.SH SYNOPSIS
.B normlab
.I COMMAND
[\\fIoptions\\fR]
.br
.B normlab help
.I COMMAND
.SH DESCRIPTION
normlab loads models described in JSON (character-level models trained on tiny Shakespeare, GPT-2
with its byte-level BPE) and runs them on the CPU through OpenBLAS: it generates text, scores a
text, compares models that differ only in their normalization, and profiles where a forward pass
spends its time. The commands:
HEAD
# "  generate   streams ..." lines of normlab --help, up to the blank line after them
"$BIN" --help | sed -n '/^commands:/,/^$/p' | sed -nE 's/^  ([a-z]+( CMD)?) +(.*)$/.TP\n.B \1\n\3/p' \
    | sed 's/\\/\\e/g; s/-/\\-/g; s/^\\\.TP$/.TP/; s/^\\\.B /.B /'
cat <<'MID'
.PP
Models are named by path or by name (\fB\-m shakespeare\-post\-rms\fR), looked up in
\fB$NORMLAB_MODELS\fR, \fIweights/\fR beside the binary and the installed
\fIshare/normlab/models\fR (\fBnormlab list\fR). A long option may be shortened to any unambiguous
prefix after two dashes, written with one dash by its exact name (\fB\-temp\fR), and with \fB_\fR for
\fB\-\fR (\fB\-\-max_new_tokens\fR).
MID
"$BIN" help --man
cat <<'TAIL'
.SH EXAMPLES
Generate 200 characters after a prompt with a newline in it, reproducibly:
.PP
.RS
.nf
normlab generate \-e \-p 'KING:\enROMEO:' \-n 200 \-\-seed 1
.fi
.RE
.PP
Stop at the first blank line, with llama.cpp's samplers:
.PP
.RS
.nf
normlab generate \-p 'ROMEO:' \-\-stop '\en\en' \-e \-\-min\-p 0.05 \-\-repeat\-penalty 1.1
.fi
.RE
.PP
Continue a text turn after turn (Ctrl\-D ends it):
.PP
.RS
.nf
normlab generate \-i \-p 'ROMEO:' \-n 100
.fi
.RE
.PP
Score a text, and judge a quantization by its KL divergence from the float32 model:
.PP
.RS
.nf
normlab eval \-f held_out.txt \-\-kl\-base base.kl
normlab eval \-f held_out.txt \-\-quantize q8 \-\-kl base.kl
.fi
.RE
.PP
Compare two placements of the norm on one text, and measure speed as llama\-bench does:
.PP
.RS
.nf
normlab compare shakespeare\-pre\-ln shakespeare\-post\-ln \-f held_out.txt
normlab bench \-m shakespeare\-pre\-ln \-p 128 \-n 128 \-t 1,2
.fi
.RE
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
.SH SEE ALSO
The project's docs/usage.md and docs/cli.md (every command's help, from the same tables).
TAIL
