#!/bin/bash
# tg32 at depth on the 1B-shaped Q4_0 (make-model dim 2048, 16 layers,
# 32/8 heads, ffn 5632), weft against llama-bench, one round (stop 53).
# usage: s53-depth-1b.sh WEFT LLAMA_BENCH MODEL
WEFT=$1 LB=$2 M=$3
echo "== llama-bench"
"$LB" -m "$M" -t 2 -p 0 -n 32 -d 1000,2000,4000 -r 1 2>/dev/null | grep -E "tg32"
echo "== weft"
"$WEFT" bench model -m "$M" --threads 2 --reps 2 --pp 0 --tg 32 --depth 1000,2000,4000 \
  --batches "" 2>&1 | grep -E "^\| tg32|read bandwidth"
