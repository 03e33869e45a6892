#!/bin/bash
# What one sequence's attention costs with its KV in cache on the Zen 4 VM:
# the bare kernels over 2 layers (attn-zen3/s59_bare.cc built with
# -DLAYERS=2 as /tmp/p60/bare2: 3 MB, L3-resident), per layer x 30 = a
# whole step's arithmetic; beside it the 30-layer bare read and kernels
# from memory. Usage: l3.sh [ROUNDS]
for r in $(seq 1 "${1:-3}"); do
  echo "== round $r $(date -u +%H:%M:%S)"
  "$(dirname "$0")/../../../build/release/weft" bench model -m /tmp/smol-q8_0.gguf --threads 2 \
    --reps 1 --pp 0 --tg 1 2>&1 | grep -o 'same run): [0-9.]* GB/s before'
  for t in 1 2; do /tmp/p60/bare2 3 $t 0; done
  /tmp/p60/bare 0 2 1
  /tmp/p60/bare 3 2 1
done
