#!/bin/bash
# Stop 54: tg32 at depth on Gemma 3 270M (GQA 4), c240ed9 against this
# stop's head, alternating, two rounds. /tmp/s54-weft-base: c240ed9;
# /tmp/s54-weft-final: bdbc9b3.
for r in 1 2; do
  for b in base final; do
    echo "== round $r $b model"
    /tmp/s54-weft-$b bench model -m models/gemma-3-270m-q4_k_m.gguf --threads 2 --reps 3 --pp 0 \
      --tg 32 --depth 0,2000,4000 --batches 1 2>&1 | grep -E "^\| tg|read bandwidth"
  done
done
