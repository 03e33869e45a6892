#!/usr/bin/env bash
# Property-based API fuzzing: schemathesis generates requests from
# docs/openapi.yaml (valid and invalid ones) against a live `weft serve` and
# checks every response against the document (status codes, content types,
# schemas, headers) and that no request gets a 5xx. Responses may take up to
# 600 s (a chat request without max_tokens generates to the end of the
# context, tens of seconds on a loaded 2-core machine: slowness, not a
# contract violation). Excluded check: positive_data_acceptance (schema-valid bodies
# can still be refused for model-dependent reasons the document cannot
# state: token ids >= the vocabulary, prompts over the context, chat
# templates raising, `content` required except for assistant messages).
#
# usage: scripts/api-fuzz.sh WEFT MODEL [extra schemathesis args]
# env:   STVENV (default build/stvenv), API_FUZZ_EXAMPLES (default 100 per
#        operation), API_FUZZ_SEED (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
weft=${1:?usage: api-fuzz.sh WEFT MODEL [args]}
model=${2:?usage: api-fuzz.sh WEFT MODEL [args]}
shift 2
venv=${STVENV:-build/stvenv}
if [[ ! -x "$venv/bin/schemathesis" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r requirements-dev.txt
fi

log=$(mktemp)
# With an API key, so that the documented bearer security is what runs.
key=api-fuzz-key
"$weft" serve -m "$model" --port 0 --max-seqs 8 --max-queue 64 --api-key "$key" 2>"$log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
port=""
for _ in $(seq 600); do
  port=$(sed -n 's/.*listening on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$log" | head -1)
  [[ -n "$port" ]] && break
  kill -0 $pid 2>/dev/null || { cat "$log"; echo "api-fuzz: server died" >&2; exit 1; }
  sleep 0.1
done
[[ -n "$port" ]] || { echo "api-fuzz: server did not start" >&2; exit 1; }

rc=0
"$venv/bin/schemathesis" run docs/openapi.yaml --url "http://127.0.0.1:$port" \
  -H "Authorization: Bearer $key" \
  --checks all --exclude-checks positive_data_acceptance --max-response-time 600 \
  --max-examples "${API_FUZZ_EXAMPLES:-100}" \
  --seed "${API_FUZZ_SEED:-1}" --request-timeout 300 --workers 2 \
  --generation-database build/api-fuzz-db --continue-on-failure "$@" || rc=$?

# The server must still be alive and must stop cleanly.
if ! kill -0 $pid 2>/dev/null; then
  echo "api-fuzz: the server crashed" >&2; tail -20 "$log" >&2; exit 1
fi
kill -TERM $pid
trap - EXIT
if ! wait $pid; then
  echo "api-fuzz: server exit status $? after SIGTERM" >&2; tail -20 "$log" >&2; exit 1
fi
rm -f "$log"
exit $rc
