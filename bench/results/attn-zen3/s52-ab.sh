#!/bin/bash
# Alternating A/B of base (3c9d0e1) and head, this machine.
cd /work/main
for r in 1 2 3; do
  for b in base head; do
    echo "== round $r $b attention_bench"
    /tmp/ab-$b --benchmark_filter='BM_DecodeAttention(Cold)?/ctx:(1000|2000|4000)/B:(1|16)/threads:2' --benchmark_min_time=0.5 2>/dev/null | grep -E "^BM" | awk '{print $1, $2, $3}'
  done
done
for r in 1 2 3; do
  for b in base head; do
    echo "== round $r $b model"
    /tmp/weft-$b bench model -m /tmp/smol-q8_0.gguf --threads 2 --reps 5 --pp 256 --tg 0 --depth 0,2000 --batches 1,16 2>&1 | grep -E "^\| (decode|prefill|pp)|read bandwidth"
  done
done
