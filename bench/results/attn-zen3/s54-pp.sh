#!/bin/bash
# Stop 54: prefill at depth, alternating base (b99a3b1) and head (tile
# scores over both halves), this machine.
for r in 1 2 3; do
  for b in base head; do
    echo "== round $r $b model"
    /tmp/s54-weft-${b}2 bench model -m /tmp/smol-q8_0.gguf --threads 2 --reps 3 --pp 512 --tg 0 \
      --depth 4000 --batches "" 2>&1 | grep -E "^\| (pp)|read bandwidth"
  done
done
