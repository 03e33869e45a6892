#!/usr/bin/env bash
# #32's S2 target as the issue states it: 8 streams (prompt 64, output 512)
# and ONE 2,048-token prompt (arriving at 2 s), on the default model.
#
# 1. The streams' undisturbed ITL: the p50 of their token gaps that overlap
#    no prefill (itl_base_ms), in a run of this same workload with the
#    default fixed budget; TARGET = 1.5x that, unless given.
# 2. ROUNDS sweeps, each: fixed budgets (budget 160, prefill chunk CHUNKS)
#    side by side with passes sized to TARGET ms (--target-itl-ms).
# 3. summarize_s2.py: per configuration the streams' ITL during the long
#    prefill (p50/p99/max, median over rounds) and the long prompt's TTFT;
#    whether the target run's p99 <= 1.1x TARGET; the best fixed budget
#    whose p99 is no higher, and the TTFT ratio.
#
# usage: run-s2-one.sh WEFT OUT_DIR
#   (env: TARGET, CHUNKS, ROUNDS, MODEL, MIN_PREFILL: the timed passes'
#   --min-prefill-tokens, default the scheduler's 8)
set -euo pipefail
WEFT=$1 OUT=$2
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
MODEL=${MODEL:-$ROOT/models/smollm2-135m-instruct-q4_1.gguf}
CHUNKS=${CHUNKS:-8,12,16,24,32,48}
ROUNDS=${ROUNDS:-3}
MIN_PREFILL=${MIN_PREFILL:-8}
S2=(--workload S2 --no-unchunked --s2-long-count 1 --s2-interval 2)
mkdir -p "$OUT"
if [ -z "${TARGET:-}" ]; then
  "$WEFT" bench engine -m "$MODEL" -t 2 "${S2[@]}" --json "$OUT/s2-base.json" \
    > "$OUT/s2-base.md" 2>&1
  TARGET=$(python3 -c "
import json; d = json.load(open('$OUT/s2-base.json'))
print(round(1.5 * d['runs'][0]['s2']['itl_base_ms']['p50'], 1))")
fi
echo "target ITL: $TARGET ms" | tee "$OUT/target.txt"
for r in $(seq 1 "$ROUNDS"); do
  "$WEFT" bench engine -m "$MODEL" -t 2 "${S2[@]}" --max-batched-tokens 160 \
    --prefill-chunk "$CHUNKS" --target-itl-ms "$TARGET" --min-prefill-tokens "$MIN_PREFILL" \
    --json "$OUT/s2-r$r.json" > "$OUT/s2-r$r.md" 2>&1
done
python3 "$(dirname "$0")/summarize_s2.py" "$TARGET" "$OUT"/s2-r*.json | tee "$OUT/summary.md"
