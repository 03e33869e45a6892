#!/bin/bash
# Stop 54: pp512 at depth 0 and 4,000 on the 134M Q8_0, llama-bench and
# weft alternating, two rounds. Usage: s54-pp-vs-llama.sh WEFT LLAMA_BENCH
W=$1; LB=$2
for r in 1 2; do
  echo "== round $r llama"
  $LB -m /tmp/smol-q8_0.gguf -t 2 -p 512 -n 0 -d 0,4000 -r 2 2>/dev/null | grep -E "pp512"
  echo "== round $r weft"
  $W bench model -m /tmp/smol-q8_0.gguf --threads 2 --reps 2 --pp 512 --tg 0 --depth 0,4000 \
    --batches "" 2>&1 | grep -E "^\| pp|read bandwidth"
done
