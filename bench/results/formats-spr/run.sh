#!/usr/bin/env bash
# Every weight format of #30 side by side with llama.cpp, on one 138M
# synthetic llama (dim 768, 12 layers, 12 heads, ffn 2560, GPT-2 vocab, tied
# embeddings; every matrix dimension a multiple of 256, so that
# llama-quantize keeps each K-quant and IQ4_XS on the matrices instead of
# falling back to Q4_0/Q5_0/Q8_0 as it does on the 576-wide SmolLM2 shape),
# made once in F16 by `weft make-model` and quantized to each format by
# llama.cpp's `llama-quantize`. ROUNDS rounds in turn, per format:
#   head   `weft bench model --pp 512 --tg 128 --batches ""` (and --reps 3)
#   llama  `llama-bench -t 2 -p 512 -n 128 -r 3`
#   bw     `weft bench kv`'s bandwidth probe is in head's JSON (bandwidth_gbs)
# usage: run.sh WEFT OUT_DIR [ROUNDS] [FORMATS]
set -euo pipefail
WEFT=$1 OUT=$2 ROUNDS=${3:-2}
FORMATS=${4:-Q4_1 Q5_1 Q2_K Q3_K_M Q5_K_M IQ4_NL IQ4_XS}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
LB=$(bash "$ROOT/tools/build_llamacpp.sh")
MODELS=${MODELS:-/tmp/weft-formats}
mkdir -p "$OUT" "$MODELS"
if [ ! -s "$MODELS/f16.gguf" ]; then
  "$WEFT" make-model --arch llama --dim 768 --layers 12 --heads 12 --kv-heads 12 \
    --ffn 2560 --vocab-from "$ROOT/../shared/models/ggml-vocab-gpt-2.gguf" --type f16 \
    --tie-embeddings -o "$MODELS/f16.gguf"
fi
for t in $FORMATS; do
  [ -s "$MODELS/$t.gguf" ] ||
    "$LB/llama-quantize" "$MODELS/f16.gguf" "$MODELS/$t.gguf" "$t" 2 > "$OUT/quantize-$t.log" 2>&1
  "$WEFT" inspect "$MODELS/$t.gguf" > "$OUT/inspect-$t.txt" 2>&1
done
for r in $(seq 1 "$ROUNDS"); do
  for t in $FORMATS; do
    "$WEFT" bench model -m "$MODELS/$t.gguf" --threads 2 --reps 3 --pp 512 --tg 128 \
      --batches "" --json "$OUT/$t-head-$r.json" > "$OUT/$t-head-$r.txt" 2>&1
    "$LB/llama-bench" -m "$MODELS/$t.gguf" -t 2 -p 512 -n 128 -r 3 -o json \
      > "$OUT/$t-llama-$r.json" 2> /dev/null
  done
done
