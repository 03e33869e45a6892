#!/usr/bin/env bash
# Q4_1 before/after on the default model (SmolLM2-135M-Instruct Q4_1), side
# by side with llama.cpp, ROUNDS rounds in turn:
#   base-run  BASE's `weft run` (the dequantize fallback; its `weft bench
#             model` aborted on Q4_1), a ~500-token prompt then 128 tokens
#   head-run  HEAD's `weft run`, the same
#   head      HEAD's `weft bench model --pp 512 --tg 128 --batches ""`
#   llama     llama-bench -t 2 -p 512 -n 128
# usage: run.sh BASE_WEFT HEAD_WEFT OUT_DIR [ROUNDS]
set -euo pipefail
BASE=$1 HEAD=$2 OUT=$3 ROUNDS=${4:-3}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
M=$ROOT/models/smollm2-135m-instruct-q4_1.gguf
LB=$(bash "$ROOT/tools/build_llamacpp.sh")
mkdir -p "$OUT"
PARA="The history of the printing press begins in the fifteenth century, when movable type changed how books were made, how ideas travelled and who could read them. "
PROMPT=$(for i in $(seq 1 17); do printf '%s' "$PARA"; done)
for r in $(seq 1 "$ROUNDS"); do
  for who in base head; do
    bin=$BASE; [ "$who" = head ] && bin=$HEAD
    "$bin" run -m "$M" -p "$PROMPT" -n 128 --temp 0 --threads 2 --no-echo \
      > /dev/null 2> "$OUT/$who-run-$r.txt"
  done
  "$HEAD" bench model -m "$M" --pp 512 --tg 128 --batches "" --threads 2 \
    --json "$OUT/head-$r.json" > "$OUT/head-$r.txt" 2>&1
  "$LB/llama-bench" -m "$M" -t 2 -p 512 -n 128 -o json > "$OUT/llama-$r.json" 2> /dev/null
done
