#!/usr/bin/env bash
# Side-by-side tg128 / pp512 of Weft and llama.cpp on 1B-shaped synthetic
# Q4_0 files of the newer dense families (issue #34's target: tg128 >= 1.0x
# llama.cpp's), one architecture after the other, each tool run back to back
# so both see the same machine load. Prints the raw outputs and the load
# average; bench/results/archs-1b-q4_0.md records a run.
#
# usage: bench/archs-1b.sh [WEFT] [LLAMA_BIN_DIR] [ARCHS...]
set -euo pipefail
WEFT=${1:-build/release/weft}
BIN=${2:-$(tools/build_llamacpp.sh)}
shift 2 2> /dev/null || true
ARCHS=("$@")
[[ ${#ARCHS[@]} -gt 0 ]] || ARCHS=(qwen3 gemma2 phi3)
VOCAB=${VOCAB:-../shared/models/ggml-vocab-llama-spm.gguf}
DIR=${DIR:-/tmp/weft-archs-1b}
mkdir -p "$DIR"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for arch in "${ARCHS[@]}"; do
  f="$DIR/$arch-1b-q4_0.gguf"
  if [[ ! -f $f ]]; then
    "$WEFT" make-model --arch "$arch" --dim 2048 --layers 16 --heads 32 --kv-heads 8 \
      --ffn 5632 --vocab-from "$VOCAB" --type q4_0 --threads 2 -o "$f" > /dev/null
  fi
  echo "== $arch ($(uptime | sed 's/.*load average/load average/'))"
  "$WEFT" bench model -m "$f" --threads 2 --reps 3 --pp 512 --tg 128 --batches ""
  "$BIN/llama-bench" -m "$f" -t 2 -p 512 -n 128 -r 3
  echo "   (after: $(uptime | sed 's/.*load average/load average/'))"
done
