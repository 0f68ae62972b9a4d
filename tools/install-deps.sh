#!/bin/sh
# Installs what normlab needs from Debian packages, or says exactly what to run.
#   tools/install-deps.sh            C build and tests: OpenBLAS, cJSON, pkg-config, a C compiler, valgrind,
#                                    clang-format, tmux
#   tools/install-deps.sh --fuzz     also clang and its libFuzzer runtime (make fuzz)
#   tools/install-deps.sh --python   also the Python tools: python3-torch, python3-numpy, python3-tqdm,
#                                    python3-matplotlib, python3-onnx, python3-sentencepiece; and
#                                    Node.js with ONNX Runtime (onnxruntime-node from npm, into build/ort,
#                                    never globally), and gpt-tokenizer (npm, into build/npm) and tokenizers
#                                    (Hugging Face's, npm, into build/hf): the BPE references
set -eu
missing=""
have_pc() { command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "$1"; }
command -v cc >/dev/null 2>&1 || missing="$missing gcc"
command -v make >/dev/null 2>&1 || missing="$missing make"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"     # make test's memcheck runs
command -v clang-format >/dev/null 2>&1 || missing="$missing clang-format"  # make test's format-check
command -v tmux >/dev/null 2>&1 || missing="$missing tmux"  # make test's interactive session (generate -i)
have_pc openblas || missing="$missing libopenblas-dev"
have_pc libcjson || missing="$missing libcjson-dev"
if [ "${1:-}" = "--fuzz" ]; then
    command -v clang >/dev/null 2>&1 || missing="$missing clang"
    ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 \
        || missing="$missing libclang-rt-dev"
fi
if [ "${1:-}" = "--python" ]; then
    /usr/bin/python3 -c 'import torch' 2>/dev/null || missing="$missing python3-torch"
    /usr/bin/python3 -c 'import numpy' 2>/dev/null || missing="$missing python3-numpy"
    /usr/bin/python3 -c 'import tqdm' 2>/dev/null || missing="$missing python3-tqdm"
    /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || missing="$missing python3-matplotlib"
    /usr/bin/python3 -c 'import onnx' 2>/dev/null || missing="$missing python3-onnx"
    /usr/bin/python3 -c 'import sentencepiece' 2>/dev/null || missing="$missing python3-sentencepiece"
    command -v node >/dev/null 2>&1 || missing="$missing nodejs"
    command -v npm >/dev/null 2>&1 || missing="$missing npm"
    [ -x /usr/bin/time ] || missing="$missing time"    # make bench: peak RSS
fi
# npm_into FOLDER PACKAGE VERSION: the npm package, pinned, into build/FOLDER (the checkout's own
# folder; never global), unless it is there.
npm_into() {
    dir="$(cd "$(dirname "$0")/.." && pwd)/build/$1"
    [ -d "$dir/node_modules/$2" ] && return 0
    mkdir -p "$dir"
    echo "installing: $2 $3 into build/$1" >&2
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$2@$3" >&2
}
# With --python: ONNX Runtime for Node.js (its install script would download CUDA libraries; the
# CPU runtime ships in the package), and GPT-2's BPE twice, the independent references
# tests/bpe_test.sh checks the C tokenizer against: gpt-tokenizer (JavaScript, with GPT-2's ranks,
# r50k_base) and Hugging Face's tokenizers (its Rust library; the binary ships in the package).
node_packages() {
    [ "${1:-}" = "--python" ] || return 0
    export ONNXRUNTIME_NODE_INSTALL=skip  # (read by onnxruntime-node's install script)
    npm_into ort onnxruntime-node 1.30.0 && npm_into npm gpt-tokenizer 3.4.0 && npm_into hf tokenizers 0.23.2
}
if [ -z "$missing" ]; then node_packages "${1:-}"; exit $?; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing:$missing" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >&2
    node_packages "${1:-}"
    exit $?
fi
echo "normlab needs:$missing" >&2
echo "run: sudo apt-get update && sudo apt-get install -y$missing" >&2
exit 1
