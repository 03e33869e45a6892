#!/bin/bash
# Stop 55: Q8_0 KV attention, the dequantized-tile path (base: the head with
# the Q8_0 kernels switched off in model/attention.cc, which is the code
# before a42479f) against the Q8_0 kernels (head), alternating rounds.
# Reads /tmp/s55-ab-{base,head} (attention_bench) and /tmp/s55-weft-{base,head}.
# Usage: s55-q8-ab.sh [ROUNDS]
R=${1:-3}
for r in $(seq 1 $R); do
  for b in base head; do
    echo "== round $r $b attention_bench"
    /tmp/s55-ab-$b --benchmark_filter='BM_DecodeAttention(Q8)?/ctx:(1000|2000)/B:(1|16)/threads:(1|2)' \
      --benchmark_min_time=0.3 2>/dev/null | grep -E "^BM" | awk '{print $1, $2, $3}'
  done
done
for r in $(seq 1 $R); do
  for b in base head; do
    echo "== round $r $b model (q8_0 KV)"
    /tmp/s55-weft-$b bench model -m /tmp/smol-q8_0.gguf --threads 2 --reps 3 --pp 512 --tg 32 \
      --depth 0,2000,4000 --batches 16 --kv-type q8_0 2>&1 | grep -E "^\| (tg|pp|decode)|read bandwidth"
  done
done
