#!/usr/bin/env bash
# Builds llama.cpp's llama-bench and llama-server for this machine (native
# ISA flags, Release) from the llama.cpp tree vendored in the PyPI sdist of
# llama-cpp-python (PyPI is reachable here, GitHub is not), for side-by-side
# runs against `weft bench model` and `weft bench serve`
# (bench/serve-vs-llama-server.sh). Not part of the tests. Idempotent: an
# existing build is reused.
#
# usage: tools/build_llamacpp.sh [DIR] [VERSION]
#   DIR      work directory (default /tmp/llamacpp)
#   VERSION  llama-cpp-python version (default 0.3.36)
# prints the bin directory (DIR/.../build/bin) on stdout.
set -euo pipefail

DIR=${1:-/tmp/llamacpp}
VERSION=${2:-0.3.36}
mkdir -p "$DIR"
SRC="$DIR/llama_cpp_python-$VERSION/vendor/llama.cpp"
BIN="$SRC/build/bin"

if [[ ! -x "$BIN/llama-bench" || ! -x "$BIN/llama-server" ]]; then
  if [[ ! -d "$SRC" ]]; then
    python3 -m pip download --quiet --no-deps --no-binary :all: \
      "llama-cpp-python==$VERSION" -d "$DIR" >&2
    tar xzf "$DIR/llama_cpp_python-$VERSION.tar.gz" -C "$DIR"
  fi
  command -v cmake > /dev/null && command -v ninja > /dev/null ||
    { echo "build_llamacpp: needs cmake and ninja (make deps)" >&2; exit 2; }
  cmake -S "$SRC" -B "$SRC/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2
  cmake --build "$SRC/build" --target llama-bench llama-server >&2
fi
echo "$BIN"
