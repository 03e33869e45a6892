#!/usr/bin/env bash
# Decode at depth, side by side with llama.cpp, ROUNDS rounds in turn:
#   base   BASE's `weft bench model` (before context slices; it has no
#          --depth): the B=1 (and B=16) decode step at --ctx D, D > 0
#   head   HEAD's `weft bench model --depth DEPTHS`: tg32 from each depth
#          and the decode curve there
#   llama  llama-bench -t 2 -p 0 -n 32 -d DEPTHS -r 3
# usage: run.sh BASE_WEFT|- HEAD_WEFT MODEL NAME OUT_DIR [ROUNDS] [DEPTHS] [BATCHES]
set -euo pipefail
BASE=$1 HEAD=$2 M=$3 NAME=$4 OUT=$5 ROUNDS=${6:-2} DEPTHS=${7:-0,1000,2000,4000}
BATCHES=${8-1,16}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
LB=$(bash "$ROOT/tools/build_llamacpp.sh")
mkdir -p "$OUT"
for r in $(seq 1 "$ROUNDS"); do
  if [ "$BASE" != - ] && [ -n "$BATCHES" ]; then
    for d in ${DEPTHS//,/ }; do
      [ "$d" = 0 ] && continue
      "$BASE" bench model -m "$M" --threads 2 --reps 3 --pp 0 --tg 0 --ctx "$d" \
        --batches "$BATCHES" --json "$OUT/$NAME-base-d$d-$r.json" > "$OUT/$NAME-base-d$d-$r.txt" 2>&1
    done
  fi
  "$HEAD" bench model -m "$M" --threads 2 --reps 3 --pp 0 --tg 32 --depth "$DEPTHS" \
    --batches "$BATCHES" --json "$OUT/$NAME-head-$r.json" > "$OUT/$NAME-head-$r.txt" 2>&1
  "$LB/llama-bench" -m "$M" -t 2 -p 0 -n 32 -d "$DEPTHS" -r 3 -o json \
    > "$OUT/$NAME-llama-$r.json" 2> /dev/null
done
