#!/bin/bash
# #30's two floor targets on the issue's machine (2-vCPU AMD EPYC Zen 4,
# AVX-512), each round: the read bandwidth and the B=16 step at depth 2,000
# (weft bench model, same run), then attention_bench's ctx 2,000 cases on 2
# threads: f16 KV one sequence warm and from memory, sixteen warm, and the
# same warm cases with Q8_0 KV.
# Usage: floors.sh WEFT ATTENTION_BENCH [ROUNDS]
W=$1 A=$2 R=${3:-3} M=/tmp/smol-q8_0.gguf
for r in $(seq 1 "$R"); do
  echo "== round $r $(date -u +%H:%M:%S)"
  "$W" bench model -m $M --threads 2 --reps 3 --pp 0 --tg 32 --depth 2000 --batches 16 2>&1 |
    grep -E "^\| (tg|decode)|read bandwidth"
  "$A" --benchmark_filter='ctx:2000/B:(1|16)/threads:2' --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true 2>/dev/null | grep median
done
