#!/usr/bin/env bash
# Side-by-side serving benchmark of `weft serve` (A) and llama.cpp's
# llama-server (B) on the same GGUF file, per docs/benchmarks: both on
# loopback, llama-server with `-t 2 -np C -c CTX*C`, the same workload run
# against each, interleaved A, B, A, B, ...; writes every JSON result and a
# compare table (B/A) per round.
#
# usage: LLAMA_SERVER=/path/to/llama-server bench/serve-vs-llama-server.sh \
#            MODEL.gguf [WORKLOAD] [-- extra `weft bench serve` flags]
#
# environment (all optional except LLAMA_SERVER):
#   WEFT            weft binary                    (build/release/weft)
#   CONCURRENCY     closed-loop ladder             (1,4,8,16)
#   CTX             context per slot, in tokens    (2048)
#   THREADS         threads for both servers       (2)
#   ROUNDS          A/B rounds                     (2)
#   PORT_A, PORT_B  loopback ports                 (18080, 18081)
#   OUT_DIR         where results go               (bench/results/serve-<time>)
#   WEFT_SERVE_ARGS extra flags for `weft serve`   ("")
#   LLAMA_ARGS      extra flags for llama-server   ("")
set -euo pipefail

if [[ $# -lt 1 || -z "${LLAMA_SERVER:-}" ]]; then
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
  exit 2
fi
MODEL=$1; shift
WORKLOAD=S1
if [[ $# -gt 0 && "$1" != "--" ]]; then WORKLOAD=$1; shift; fi
if [[ $# -gt 0 && "$1" == "--" ]]; then shift; fi
EXTRA=("$@")

WEFT=${WEFT:-build/release/weft}
CONCURRENCY=${CONCURRENCY:-1,4,8,16}
CTX=${CTX:-2048}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-2}
PORT_A=${PORT_A:-18080}
PORT_B=${PORT_B:-18081}
OUT_DIR=${OUT_DIR:-bench/results/serve-$(date -u +%Y%m%dT%H%M%SZ)}

[[ -f "$MODEL" ]] || { echo "no such model: $MODEL" >&2; exit 2; }
[[ -x "$WEFT" ]] || { echo "no weft binary at $WEFT (set WEFT=)" >&2; exit 2; }
[[ -x "$LLAMA_SERVER" ]] || { echo "LLAMA_SERVER=$LLAMA_SERVER is not executable" >&2; exit 2; }
mkdir -p "$OUT_DIR"

# Slots = the largest concurrency of the ladder (S2 uses 8 streams + 1 long).
NP=1
IFS=, read -ra LADDER <<< "$CONCURRENCY"
for c in "${LADDER[@]}"; do (( c > NP )) && NP=$c; done
[[ "$WORKLOAD" == S2 ]] && NP=9

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

wait_ready() {  # URL NAME PID
  for _ in $(seq 1 600); do
    if curl -sf "$1/health" > /dev/null 2>&1; then return 0; fi
    kill -0 "$3" 2>/dev/null || { echo "$2 exited; see $OUT_DIR/$2.log" >&2; exit 1; }
    sleep 0.5
  done
  echo "$2 did not become ready" >&2
  exit 1
}

# shellcheck disable=SC2086
"$WEFT" serve -m "$MODEL" --host 127.0.0.1 --port "$PORT_A" ${WEFT_SERVE_ARGS:-} \
  > "$OUT_DIR/weft.log" 2>&1 &
PIDS+=($!)
wait_ready "http://127.0.0.1:$PORT_A" weft "${PIDS[-1]}"

# shellcheck disable=SC2086
"$LLAMA_SERVER" -m "$MODEL" --host 127.0.0.1 --port "$PORT_B" -t "$THREADS" \
  -np "$NP" -c $((CTX * NP)) ${LLAMA_ARGS:-} > "$OUT_DIR/llama-server.log" 2>&1 &
PIDS+=($!)
wait_ready "http://127.0.0.1:$PORT_B" llama-server "${PIDS[-1]}"

run_one() {  # NAME PORT ROUND
  local out="$OUT_DIR/$1-r$3.json"
  local ladder=(--concurrency "$CONCURRENCY")
  [[ "$WORKLOAD" == S2 || "$WORKLOAD" == S3 ]] && ladder=()
  echo "== round $3: $1 ==" >&2
  # Each round draws new prompts (--seed ROUND; both servers get the same
  # ones): a round that repeated the last one's prompts would measure the
  # servers' prompt caches, not their compute (llama-server keeps finished
  # prompts in host RAM, Weft in its KV pool until evicted).
  "$WEFT" bench serve --url "http://127.0.0.1:$2" --workload "$WORKLOAD" \
    "${ladder[@]}" --seed "$3" --label "$1" --out "$out" "${EXTRA[@]}" > "$OUT_DIR/$1-r$3.md"
}

{
  echo "# weft serve vs llama-server"
  echo
  echo "- model: $MODEL (sha256 $(sha256sum "$MODEL" | cut -d' ' -f1))"
  echo "- weft: $("$WEFT" --version)"
  echo "- llama-server: $("$LLAMA_SERVER" --version 2>&1 | head -n 2 | tr '\n' ' ')"
  echo "- workload: $WORKLOAD, concurrency $CONCURRENCY, ctx/slot $CTX, slots $NP, threads $THREADS, rounds $ROUNDS"
  echo "- extra bench flags: ${EXTRA[*]:-none}"
  echo
} > "$OUT_DIR/summary.md"

for r in $(seq 1 "$ROUNDS"); do
  run_one weft "$PORT_A" "$r"
  run_one llama-server "$PORT_B" "$r"
  {
    echo "## round $r (A = weft, B = llama-server)"
    echo
    "$WEFT" bench compare "$OUT_DIR/weft-r$r.json" "$OUT_DIR/llama-server-r$r.json"
    echo
  } >> "$OUT_DIR/summary.md"
done

"$WEFT" bench plot "$OUT_DIR"/weft-r*.json "$OUT_DIR"/llama-server-r*.json \
  -o "$OUT_DIR/plot.svg" || true
cat "$OUT_DIR/summary.md"
echo "results in $OUT_DIR" >&2
