#!/bin/bash
# Stop 54 (second change): alternating A/B of base (b99a3b1) and head (the AVX2 tile score
# kernel over both halves of a whole tile, two chains per pass), this machine.
# /tmp/s54-ab-{base,head}: attention_bench; /tmp/s54-weft-{base,head}: weft.
for r in 1 2 3; do
  for b in base head; do
    echo "== round $r $b attention_bench"
    /tmp/s54-ab-${b}2 --benchmark_filter='BM_DecodeAttention(Cold)?/ctx:(1000|2000|4000)/B:(1|16)/threads:(1|2)' \
      --benchmark_min_time=0.3 2>/dev/null | grep -E "^BM" | awk '{print $1, $2, $3}'
  done
done
for r in 1 2 3; do
  for b in base head; do
    echo "== round $r $b model"
    /tmp/s54-weft-${b}2 bench model -m /tmp/smol-q8_0.gguf --threads 2 --reps 5 --pp 256 --tg 0 \
      --depth 0,2000 --batches 1,16 2>&1 | grep -E "^\| (decode|prefill|pp)|read bandwidth"
  done
done
