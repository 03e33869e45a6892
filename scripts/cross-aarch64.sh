#!/usr/bin/env bash
# Builds Weft for 64-bit Arm Linux (the scalar and NEON kernels: no x86 ISA
# file is compiled there) with Debian's cross toolchain and runs C++ tests under
# qemu-user, so that "builds and runs on aarch64" stays checked on an x86
# machine. Installs, idempotently, what that needs: the arm64 architecture
# for dpkg, g++-aarch64-linux-gnu, qemu-user and the arm64 -dev packages
# of the libraries Weft links.
#
#   scripts/cross-aarch64.sh [BUILD_DIR] [ctest args...]
#
# BUILD_DIR defaults to build/aarch64; the ctest arguments default to the
# C++ unit tests (-L unit -E '_py$': the Python tests run natively and
# cannot start an aarch64 weft). Exits non-zero when the build or a test
# fails.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build/aarch64}"
shift || true
CTEST_SELECT=("$@")
if [ "${#CTEST_SELECT[@]}" -eq 0 ]; then CTEST_SELECT=(-L unit -E '_py$'); fi
JOBS="${JOBS:-$(nproc)}"

source scripts/apt.sh
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  # The arm64 packages below are then missing, so apt_install_missing runs
  # apt-get update, which fetches the new architecture's lists.
  echo "cross-aarch64: adding the arm64 architecture to dpkg"
  $SUDO dpkg --add-architecture arm64
fi
apt_install_missing cross-aarch64 \
  g++-aarch64-linux-gnu qemu-user \
  libgtest-dev:arm64 libgmock-dev:arm64 libpcre2-dev:arm64 libboost1.81-dev:arm64 \
  libssl-dev:arm64

cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release -DWEFT_WERROR=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
# ctest runs each C++ test through CMAKE_CROSSCOMPILING_EMULATOR (qemu).
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" "${CTEST_SELECT[@]}"
