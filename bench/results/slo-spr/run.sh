#!/usr/bin/env bash
# #32's two benchmarks on the default model (SmolLM2-135M-Instruct Q4_1):
#
# 1. S2 in process (`weft bench engine --workload S2`: 8 streams, prompt 64,
#    output 512, a 2,048-token prompt every 10 s, 3 times): the fixed budgets
#    swept (prefill chunk CHUNKS, budget 160) side by side with passes sized
#    to TARGET ms (--target-itl-ms) and to 1.5x / 2x the decodes' own time
#    (--target-itl-ratio). TARGET defaults to 1.5x the streams'
#    undisturbed ITL p50 (gaps overlapping no prefill) in a short S2 run.
# 2. Goodput: S1 prompts (256 in, 128 out) at Poisson rates RATES against
#    `weft serve` (fixed budget, and --target-itl-ratio 2)
#    and llama-server
#    (-np 16), in turn, SLO TTFT 2 s / TPOT 100 ms (vLLM's --goodput
#    spelling); the capacity (highest rate with 90% in SLO) of each.
#
# usage: run.sh WEFT OUT_DIR
#   (env: CHUNKS, TARGET, RATES, N, MODEL, STREAM_OUT, INTERVAL)
set -euo pipefail
WEFT=$1 OUT=$2
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
MODEL=${MODEL:-$ROOT/models/smollm2-135m-instruct-q4_1.gguf}
CHUNKS=${CHUNKS:-8,16,24,32,48,64,96}
RATES=${RATES:-1,2,3,4,5,6}
N=${N:-60}
# S2's streams must outlive the long prompts' arrivals (the first at 1x the
# interval): 8 streams of 1,536 tokens run ~20 s here; prompts at 5, 10, 15 s.
STREAM_OUT=${STREAM_OUT:-1536}
INTERVAL=${INTERVAL:-5}
mkdir -p "$OUT"
LB=$(bash "$ROOT/tools/build_llamacpp.sh")

# Undisturbed: the streams' gaps that overlap no prefill (itl_base_ms), in
# a short S2 run with one long prompt.
if [ -z "${TARGET:-}" ]; then
  "$WEFT" bench engine -m "$MODEL" -t 2 --workload S2 --no-unchunked --s2-long-count 1 \
    --s2-interval 2 --json "$OUT/s2-undisturbed.json" > "$OUT/s2-undisturbed.md" 2>&1
  TARGET=$(python3 -c "
import json; d = json.load(open('$OUT/s2-undisturbed.json'))
print(round(1.5 * d['runs'][0]['s2']['itl_base_ms']['p50'], 1))")
fi
echo "target ITL: $TARGET ms" | tee "$OUT/target.txt"

"$WEFT" bench engine -m "$MODEL" -t 2 --workload S2 --no-unchunked --max-batched-tokens 160 \
  --output-len "$STREAM_OUT" --s2-interval "$INTERVAL" \
  --prefill-chunk "$CHUNKS" --target-itl-ms "$TARGET" --target-itl-ratio 1.5,2 \
  --json "$OUT/s2.json" \
  --trace "$OUT/s2-trace.jsonl" > "$OUT/s2.md" 2>&1

serve_run() {  # NAME PORT -- server command...
  local name=$1 port=$2; shift 3
  "$@" > "$OUT/$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break
    sleep 0.5
  done
  "$WEFT" bench serve --url "http://127.0.0.1:$port" --workload S1 --request-rate "$RATES" \
    --num-requests "$N" --warmup 2 --goodput ttft:2000,tpot:100 --label "$name" --no-progress \
    --out "$OUT/$name.json" > "$OUT/$name.md" 2>&1 || true
  kill "$pid"; wait "$pid" 2> /dev/null || true
}
serve_run weft 18090 -- "$WEFT" serve -m "$MODEL" --port 18090 -t 2
serve_run weft-ratio 18093 -- "$WEFT" serve -m "$MODEL" --port 18093 -t 2 \
  --target-itl-ratio 2
serve_run llama-server 18092 -- "$LB/llama-server" -m "$MODEL" --port 18092 -t 2 -np 16 \
  -c $((2048 * 16))
"$WEFT" bench compare "$OUT/llama-server.json" "$OUT/weft.json" > "$OUT/compare-weft.md" || true
for w in weft-ratio; do
  "$WEFT" bench compare "$OUT/llama-server.json" "$OUT/$w.json" > "$OUT/compare-$w.md" || true
done
