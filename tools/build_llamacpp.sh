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
# CPUs with AMX: ggml's AMX matmul (compiled in by -march=native) crashes
# where the kernel does not grant the tile state (seen in a VM on a
# Sapphire Rapids Xeon: SIGSEGV in ggml_backend_amx_mul_mat at llama-bench
# -d, --repack 0 avoids it at 0.6x the speed). There the build names the
# ISA extensions the CPU lists instead of -march=native, AMX left out, in
# a build directory of its own.
ISA_FLAGS=(-DGGML_NATIVE=ON)
BUILD=build
if grep -qw amx_tile /proc/cpuinfo 2> /dev/null; then
  has() { grep -qw "$1" /proc/cpuinfo; }
  onoff() { has "$1" && echo ON || echo OFF; }
  ISA_FLAGS=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=$(onoff avx2) -DGGML_FMA=$(onoff fma)
    -DGGML_F16C=$(onoff f16c) -DGGML_BMI2=$(onoff bmi2) -DGGML_AVX_VNNI=$(onoff avx_vnni)
    -DGGML_AVX512=$(onoff avx512f) -DGGML_AVX512_VBMI=$(onoff avx512vbmi)
    -DGGML_AVX512_VNNI=$(onoff avx512_vnni) -DGGML_AVX512_BF16=$(onoff avx512_bf16)
    -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
  BUILD=build-noamx
fi
BIN="$SRC/$BUILD/bin"

if [[ ! -x "$BIN/llama-bench" || ! -x "$BIN/llama-server" || ! -x "$BIN/llama-quantize" ]]; then
  if [[ ! -d "$SRC" ]]; then
    python3 -m pip download --quiet --no-deps --no-binary :all: \
      "llama-cpp-python==$VERSION" -d "$DIR" >&2
    tar xzf "$DIR/llama_cpp_python-$VERSION.tar.gz" -C "$DIR"
  fi
  command -v cmake > /dev/null && command -v ninja > /dev/null ||
    { echo "build_llamacpp: needs cmake and ninja (make deps)" >&2; exit 2; }
  cmake -S "$SRC" -B "$SRC/$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "${ISA_FLAGS[@]}" -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2
  cmake --build "$SRC/$BUILD" --target llama-bench llama-server llama-quantize >&2
fi
echo "$BIN"
