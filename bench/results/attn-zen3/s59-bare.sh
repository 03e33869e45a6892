#!/bin/bash
# Stop 59: the bare kernels (s59_bare.cc, built as /tmp/p59/bare with
# -DLAYERS=30 and /tmp/p59/bare2 with -DLAYERS=2) against attention_bench
# (ATT), alternating, one sequence at ctx 2,000. Usage: s59-bare.sh ATT [ROUNDS]
ATT=$1 R=${2:-4}
for r in $(seq 1 "$R"); do
  echo "== round $r $(date -u +%H:%M:%S)"
  /tmp/p59/bare 0 2 1
  /tmp/p59/bare 3 2 1
  POOL=1 /tmp/p59/bare 3 2 1
  WAKE=1 POOL=1 /tmp/p59/bare 3 2 1
  "$ATT" --benchmark_filter='Cold/ctx:2000/B:1/threads:2' --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true 2>/dev/null | grep median
  /tmp/p59/bare 5 2 1
  for m in 3 5; do for t in 1 2; do /tmp/p59/bare2 $m $t 0; done; done
done
