#!/bin/bash
# One sequence's decode attention at ctx 2,000 from memory, 2 threads, on
# the Zen 4 VM, against what the same bytes allow, alternating in each
# round: weft's read-bandwidth probe (1 GiB, the roofline weft bench model
# quotes), the bare read of the 46 MB of KV tiles in attention's order
# (attn-zen3/s59_bare.cc mode 0, built as /tmp/p60/bare, which runs the
# AVX-512 table here), the bare kernels (mode 3), the same through the
# pool, and attention_bench's Cold case.
# Usage: bare.sh WEFT ATTENTION_BENCH [ROUNDS]
W=$1 A=$2 R=${3:-3}
for r in $(seq 1 "$R"); do
  echo "== round $r $(date -u +%H:%M:%S)"
  "$W" bench model -m /tmp/smol-q8_0.gguf --threads 2 --reps 1 --pp 0 --tg 1 2>&1 |
    grep -o 'same run): [0-9.]* GB/s before'
  /tmp/p60/bare 0 2 1
  /tmp/p60/bare 3 2 1
  POOL=1 WAKE=1 /tmp/p60/bare 3 2 1
  "$A" --benchmark_filter='Cold/ctx:2000/B:1/threads:2' --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true 2>/dev/null | grep median
done
