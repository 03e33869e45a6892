#!/bin/bash
# Stop 56's AVX-512 Q8_0 attention kernels (3f10cb7) timed on the Zen 4 VM:
# attention_bench's Q8_0 KV cases, HEAD against HEAD with the AVX-512
# table's scores_q8_0 / wsum_q8_0 left null (attention then dequantizes
# each block of rows into a float tile, the path before 3f10cb7),
# alternating in each round. NOQ8_BENCH was built in a worktree of HEAD
# with the two assignments in avx512_attention_q8.cc's FillAttentionQ8
# replaced by (void)ScoresQ8; (void)WsumQ8; (cmake --preset release, target
# attention_bench). Usage: q8-ab.sh HEAD_BENCH NOQ8_BENCH [ROUNDS]
H=$1 N=$2 R=${3:-3}
for r in $(seq 1 "$R"); do
  for b in "$N" "$H"; do
    echo "== round $r $b $(date -u +%H:%M:%S)"
    "$b" --benchmark_filter='Q8/ctx:(1000|2000)/B:(1|16)/threads:(1|2)' --benchmark_repetitions=5 \
      --benchmark_report_aggregates_only=true 2>/dev/null | grep median
  done
done
