#!/usr/bin/env bash
# Speculation on vs off, side by side on one server (`weft serve --spec
# ngram`): the requests' "speculative" field switches it, alternating
# off, on, off, on ... per repetition, so both see the same process, cache
# and machine load. Usage: run.sh WORKLOAD CONCURRENCY REQUESTS REPS [ARGS]
# (ARGS go to weft bench serve, e.g. --chat). Writes OUT/WORKLOAD-cC-MODE-R.json.
# The server runs without prefix caching: off and on send the same prompts
# (same --seed), and the second would otherwise skip the first's prefill.
# SERVER_ARGS: more flags for weft serve (e.g. --spec-k-max 4).
# SPEC: the proposer (ngram, or draft with SERVER_ARGS="--draft-model F").
set -euo pipefail
w=$1 c=$2 n=$3 reps=$4
shift 4
weft=${WEFT:-build/release/weft}
out=${OUT:-/tmp/spec-ngram}
port=${PORT:-18433}
mkdir -p "$out"
"$weft" serve --spec "${SPEC:-ngram}" --port "$port" --max-queue 0 --no-prefix-caching \
  ${SERVER_ARGS:-} > "$out/server.log" 2>&1 &
server=$!
trap 'kill $server' EXIT
for _ in $(seq 60); do curl -sf "localhost:$port/health" > /dev/null && break; sleep 1; done
# The server's CPU seconds (user + system) so far.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$server/stat"; }
for r in $(seq "$reps"); do
  for mode in off on; do
    t0=$(cpu)
    "$weft" bench serve --url "http://127.0.0.1:$port" --workload "$w" \
      --concurrency "$c" --num-requests "$n" --speculative "$mode" --seed "$r" \
      --progress=false --out "$out/$w-c$c-$mode-$r.json" "$@" > /dev/null
    echo "$w c=$c $mode rep $r: server cpu $(echo "$(cpu) - $t0" | bc) s," \
      "load $(cut -d' ' -f1-3 /proc/loadavg)"
  done
done
