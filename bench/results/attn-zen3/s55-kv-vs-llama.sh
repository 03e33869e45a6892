#!/bin/bash
# Stop 55: tg32 at depth with f16 and Q8_0 KV, Weft against llama-bench
# (flash attention on, which llama.cpp needs for a quantized V cache), one
# round each, this machine.
# Usage: s55-kv-vs-llama.sh WEFT LLAMA_BENCH
W=$1; LB=$2; M=/tmp/smol-q8_0.gguf
for kv in f16 q8_0; do
  echo "== weft $kv"
  $W bench model -m $M --threads 2 --reps 3 --pp 0 --tg 32 --depth 0,2000,4000 --batches "" \
    --kv-type $kv 2>&1 | grep -E "^\| tg|read bandwidth"
  echo "== llama-bench $kv"
  $LB -m $M -t 2 -p 0 -n 32 -d 0,2000,4000 -r 2 -fa 1 -ctk $kv -ctv $kv 2>&1 | grep -E "tg32"
done
