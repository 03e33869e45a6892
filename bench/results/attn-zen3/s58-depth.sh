#!/bin/bash
# Stop 58: tiled values a tile at a time, whole last tile (4f36ffd..375d637) end to end: tg32 and the B=16
# decode at depth on the 134M Q8_0, weft before (e79d893, code as 1a5bfba) and after,
# alternating with llama-bench in each round, Zen 3 VM.
# Usage: s57-depth.sh WEFT_BASE WEFT_HEAD LLAMA_BENCH [ROUNDS]
B=$1 H=$2 LB=$3 R=${4:-2} M=/tmp/smol-q8_0.gguf
for r in $(seq 1 "$R"); do
  echo "== round $r llama-bench"
  "$LB" -m $M -t 2 -p 0 -n 32 -d 0,1000,2000,4000 -r 2 2>/dev/null | grep -E "tg32"
  for w in "$B" "$H"; do
    echo "== round $r $w"
    "$w" bench model -m $M --threads 2 --reps 3 --pp 0 --tg 32 --depth 0,1000,2000,4000 \
      --batches 16 2>&1 | grep -E "^\| (tg|decode)|read bandwidth"
  done
done
