#!/usr/bin/env bash
# pp512 only, base Weft, head Weft and llama-bench in turn per format and
# round (a lean form of ../ab.sh for a heavily loaded machine).
# usage: pp.sh BASE_WEFT HEAD_WEFT OUT_DIR [ROUNDS] [FORMATS]
set -euo pipefail
BASE=$1 HEAD=$2 OUT=$3 ROUNDS=${4:-2}
FORMATS=${5:-Q3_K_M Q5_K_M IQ4_XS}
LB=$(bash "$(dirname "$0")/../../../../tools/build_llamacpp.sh")
MODELS=${MODELS:-/tmp/weft-formats}
mkdir -p "$OUT"
for r in $(seq 1 "$ROUNDS"); do
  for t in $FORMATS; do
    echo "$t round $r: $(date -u +%H:%M:%S) $(uptime)" >> "$OUT/uptime.txt"
    for side in base head; do
      bin=$BASE
      [ "$side" = head ] && bin=$HEAD
      "$bin" bench model -m "$MODELS/$t.gguf" --threads 2 --reps 3 --pp 512 --tg 0 \
        --batches "" --json "$OUT/$t-$side-$r.json" > "$OUT/$t-$side-$r.txt" 2>&1
    done
    LD_LIBRARY_PATH=$LB "$LB/llama-bench" -m "$MODELS/$t.gguf" -t 2 -p 512 -n 0 -r 3 -o json \
      > "$OUT/$t-llama-$r.json" 2> /dev/null
  done
done
