#!/bin/bash
# tg32 at depth, weft against llama-bench, alternating, on the 134M Q8_0
# and Gemma 3 270M Q4_K_M (stop 53, Zen 3 VM).
# usage: s53-depth.sh WEFT LLAMA_BENCH ROUNDS
WEFT=$1 LB=$2 ROUNDS=${3:-2}
for r in $(seq 1 "$ROUNDS"); do
  for m in /tmp/smol-q8_0.gguf models/gemma-3-270m-q4_k_m.gguf; do
    echo "== round $r $m llama-bench"
    "$LB" -m "$m" -t 2 -p 0 -n 32 -d 0,1000,2000,4000 -r 2 2>/dev/null | grep -E "tg32"
    echo "== round $r $m weft"
    "$WEFT" bench model -m "$m" --threads 2 --reps 3 --pp 0 --tg 32 --depth 0,1000,2000,4000 \
      --batches "" 2>&1 | grep -E "^\| tg32|read bandwidth"
  done
done
