#!/usr/bin/env bash
# Runs every libFuzzer binary BUILD_DIR/tests/fuzz/*_fuzz for SECONDS each on
# its corpus tests/fuzz/corpus/<name without _fuzz>/. New inputs go to a
# scratch folder (the committed corpus is not modified); crashes are written
# to BUILD_DIR/fuzz-artifacts/. Exits non-zero on the first failing target.
#
# usage: bash scripts/fuzz.sh BUILD_DIR SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
BUILD_DIR=$1
SECONDS_EACH=$2

shopt -s nullglob
targets=("$BUILD_DIR"/tests/fuzz/*_fuzz)
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no *_fuzz binaries in $BUILD_DIR/tests/fuzz (configure with WEFT_FUZZ=ON)" >&2
  exit 1
fi
artifacts="$BUILD_DIR/fuzz-artifacts"
mkdir -p "$artifacts"
for bin in "${targets[@]}"; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  corpus="tests/fuzz/corpus/${name%_fuzz}"
  scratch="$BUILD_DIR/fuzz-corpus/${name%_fuzz}"
  mkdir -p "$scratch"
  dirs=("$scratch")
  [ -d "$corpus" ] && dirs+=("$corpus")
  # An optional libFuzzer dictionary: tests/fuzz/<name without _fuzz>.dict.
  extra=()
  dict="tests/fuzz/${name%_fuzz}.dict"
  [ -f "$dict" ] && extra+=("-dict=$dict")
  echo "fuzz: $name for ${SECONDS_EACH}s on ${dirs[*]}"
  "$bin" -max_total_time="$SECONDS_EACH" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 "${extra[@]}" \
    -artifact_prefix="$artifacts/$name-" "${dirs[@]}"
done
echo "fuzz: all targets ran clean"
