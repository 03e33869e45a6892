#!/usr/bin/env bash
# pp512 rounds for the formats at the 1.2x line on the Zen 3 VM: per round
# and format, weft HEAD (and BASE when given) then llama-bench, in turn.
# usage: pp.sh HEAD_WEFT OUT_DIR ROUNDS "FORMATS" [BASE_WEFT]
set -euo pipefail
HEAD=$1 OUT=$2 ROUNDS=$3 FORMATS=$4 BASE=${5:-}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
LB=$(bash "$ROOT/tools/build_llamacpp.sh")
MODELS=${MODELS:-/tmp/weft-formats}
mkdir -p "$OUT"
for r in $(seq 1 "$ROUNDS"); do
  for t in $FORMATS; do
    for side in head base; do
      bin=$HEAD; [ "$side" = base ] && bin=$BASE
      [ -n "$bin" ] || continue
      "$bin" bench model -m "$MODELS/$t.gguf" --threads 2 --reps 3 --pp 512 --tg 0 \
        --batches "" --json "$OUT/pp-$t-$side-$r.json" > /dev/null 2>&1
    done
    "$LB/llama-bench" -m "$MODELS/$t.gguf" -t 2 -p 512 -n 0 -r 3 -o json \
      > "$OUT/pp-$t-llama-$r.json" 2> /dev/null
  done
done
