#!/bin/bash
# Stop 54: alternating A/B of a base and a head build, this machine.
# Usage: s54-ab.sh [SUFFIX]; reads /tmp/s54-ab-{base,head}SUFFIX (attention_bench)
# and /tmp/s54-weft-{base,head}SUFFIX (weft).
#   no suffix: base c240ed9, head b99a3b1 (the AVX2 tile score kernel with
#              constant chain indices and a constant tile width) -> s54-ab.txt
#   2:         base b99a3b1, head f7e0909 (the tile score kernel over both
#              halves of a whole tile, two chains per pass) -> s54-ab2.txt
S=${1:-}
for r in 1 2 3; do
  for b in base head; do
    echo "== round $r $b attention_bench"
    /tmp/s54-ab-$b$S --benchmark_filter='BM_DecodeAttention(Cold)?/ctx:(1000|2000|4000)/B:(1|16)/threads:(1|2)' \
      --benchmark_min_time=0.3 2>/dev/null | grep -E "^BM" | awk '{print $1, $2, $3}'
  done
done
for r in 1 2 3; do
  for b in base head; do
    echo "== round $r $b model"
    /tmp/s54-weft-$b$S bench model -m /tmp/smol-q8_0.gguf --threads 2 --reps 5 --pp 256 --tg 0 \
      --depth 0,2000 --batches 1,16 2>&1 | grep -E "^\| (decode|prefill|pp)|read bandwidth"
  done
done
