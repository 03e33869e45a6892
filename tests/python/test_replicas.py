"""Replicas behind a real proxy (scripts/replicas.sh: nginx, least_conn,
retries on connection errors only, unbuffered streaming).

- Rolling restart: `weft bench serve --workload S1` through the proxy while
  every replica in turn is taken out of the proxy, sent SIGTERM, waited
  for, started again and put back: every request completes with its token
  count (0 failed, 0 truncated), and every replica's KV blocks are free
  again at the end.
- SIGKILL under load: exactly the requests the killed replica was running
  fail; the proxy retries refused connects elsewhere and sends nothing to
  the dead replica until it is back.
- The proxy adds little to TTFT (bench/proxy_overhead.py, interleaved
  pairs), and a kept-alive connection (the proxy's) streams as fast as a
  new one.

The ctest run (replicas_py, label e2e) is short; `make replicas-test` runs
the same checks longer (REPLICAS_* below).
"""
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid

import pytest

from conftest import CHAT_MODEL, WEFT
from replicas import SOURCE, Replicas, scrape, value

sys.path.insert(0, os.path.join(SOURCE, "bench"))
import proxy_overhead  # noqa: E402

N = int(os.environ.get("REPLICAS_N", "2"))
SECONDS = float(os.environ.get("REPLICAS_SECONDS", "40"))
CONCURRENCY = int(os.environ.get("REPLICAS_CONCURRENCY", "4"))
PROMPT_TOKENS = int(os.environ.get("REPLICAS_PROMPT_TOKENS", "64"))
OUTPUT_TOKENS = int(os.environ.get("REPLICAS_OUTPUT_TOKENS", "64"))
SERVE_ARGS = os.environ.get("REPLICAS_SERVE_ARGS", "--kv-memory 64M")
OUT_DIR = os.environ.get("REPLICAS_OUT")  # keep the bench JSON here
MAX_PROXY_MS = float(os.environ.get("REPLICAS_MAX_PROXY_MS", "25"))


@pytest.fixture
def replicas(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    reps = Replicas(N, state, WEFT, CHAT_MODEL, SERVE_ARGS)
    yield reps
    reps.stop()


def check_idle(reps):
    """Every replica: nothing running or waiting, every KV block free."""
    for i in range(reps.n):
        m = scrape(reps.replica_url(i))
        assert value(m, "vllm:num_requests_running") == 0, i
        assert value(m, "vllm:num_requests_waiting") == 0, i
        assert value(m, "weft_kv_blocks_used") == 0, i
        assert value(m, "vllm:kv_cache_usage_perc") == 0, i
        assert value(m, "weft_kv_blocks_total") > 0, i


def test_rolling_restart_loses_nothing(replicas, tmp_path):
    out = os.path.join(OUT_DIR or str(tmp_path), "rolling-restart.json")
    bench = subprocess.Popen(
        [WEFT, "bench", "serve", "--url", replicas.url, "--workload", "S1",
         "--concurrency", str(CONCURRENCY), "--num-requests", "1000000",
         "--duration", str(SECONDS), "--warmup", "0",
         "--prompt-tokens", str(PROMPT_TOKENS),
         "--output-tokens", str(OUTPUT_TOKENS), "--timeout", "60",
         "--no-progress", "--label", "rolling-restart", "--out", out],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(2)
    restarts = []
    for i in range(replicas.n):
        t0 = time.time()
        replicas.restart(i)
        restarts.append(time.time() - t0)
        assert bench.poll() is None, (
            f"the load ended before replica {i} was restarted; raise "
            f"REPLICAS_SECONDS:\n{bench.stdout.read()}")
    report = bench.communicate(timeout=SECONDS + 120)[0]
    assert bench.returncode == 0, report
    with open(out) as f:
        s = json.load(f)["levels"][0]["summary"]
    print(f"restarts (s): {[round(t, 1) for t in restarts]}; "
          f"summary: {json.dumps(s)}")
    assert s["failed"] == 0, (s["failures"], replicas.logs())
    assert s["completed"] == s["requests"] > 0
    assert s["token_mismatches"] == 0
    # The replicas had requests in flight when SIGTERM came and drained them.
    drained = [int(n) for i in range(replicas.n)
               for n in re.findall(r"draining (\d+) in-flight", replicas.log(i))]
    print(f"in-flight requests drained at each SIGTERM: {drained}")
    assert sum(drained) > 0, replicas.logs()
    # Every replica served requests after its restart, and the proxy
    # re-sent no request a replica had answered.
    rows = replicas.access_log()
    for row in rows:
        assert all(u == "502" for u in row["upstream_status"][:-1]), row
    served = {u for row in rows for u in row["upstreams"]}
    assert served == {f"127.0.0.1:{p}" for p in replicas.ports}
    check_idle(replicas)


class Client(threading.Thread):
    """Closed-loop streaming completions through the proxy, each with an
    X-Request-Id that nginx logs."""

    def __init__(self, port, stop):
        super().__init__(daemon=True)
        self.port, self.stop, self.results = port, stop, []

    def one(self):
        rid = uuid.uuid4().hex
        body = {"prompt": "The quick brown fox", "max_tokens": OUTPUT_TOKENS,
                "stream": True, "ignore_eos": True, "temperature": 0,
                "stream_options": {"include_usage": True}}
        r = {"id": rid, "start": time.time(), "ok": False, "error": ""}
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            c.request("POST", "/v1/completions", json.dumps(body),
                      {"Content-Type": "application/json",
                       "X-Request-Id": rid})
            resp = c.getresponse()
            tokens, done = None, False
            for line in resp:
                if line.startswith(b"data: [DONE]"):
                    done = True
                elif line.startswith(b"data: "):
                    usage = json.loads(line[6:]).get("usage")
                    if usage:
                        tokens = usage["completion_tokens"]
            r["ok"] = resp.status == 200 and done and tokens == OUTPUT_TOKENS
            if not r["ok"]:
                r["error"] = f"status {resp.status} done={done} tokens={tokens}"
            c.close()
        except (OSError, http.client.HTTPException) as e:
            r["error"] = repr(e)
        r["end"] = time.time()
        self.results.append(r)

    def run(self):
        while not self.stop.is_set():
            self.one()


def test_sigkill_fails_only_the_running_requests(replicas):
    port = int(replicas.url.rsplit(":", 1)[1])
    victim = f"127.0.0.1:{replicas.ports[0]}"
    stop = threading.Event()
    clients = [Client(port, stop) for _ in range(CONCURRENCY)]
    for c in clients:
        c.start()
    time.sleep(3)
    t_kill = replicas.kill(0)
    time.sleep(3)
    t_revive = time.time()
    replicas.revive(0)
    t_back = time.time()
    time.sleep(4)
    stop.set()
    for c in clients:
        c.join(timeout=120)
    time.sleep(0.5)  # nginx logs a request as it closes it
    results = {r["id"]: r for c in clients for r in c.results}
    log = {row["id"]: row for row in replicas.access_log() if row["id"] != "-"}
    assert set(results) <= set(log), set(results) - set(log)
    failed = {i for i, r in results.items() if not r["ok"]}
    # Running on the victim at the kill: its last upstream, started before
    # the kill, not finished before it.
    running = {i for i, r in results.items()
               if log[i]["upstreams"][-1] == victim
               and r["start"] < t_kill < r["end"]}
    retried = [row for row in log.values() if len(row["upstreams"]) > 1]
    print(f"requests {len(results)}, failed {len(failed)} (running on the "
          f"killed replica: {len(running)}), connect errors retried "
          f"elsewhere: {len(retried)}")
    # Every failure was running on the killed replica; of what it was
    # running, only a request whose last bytes were already on their way
    # (it completed within 0.1 s of the signal) may have succeeded.
    assert failed <= running, (
        {i: (results[i], log.get(i)) for i in failed - running})
    for i in running - failed:
        assert results[i]["end"] < t_kill + 0.1, (results[i], log[i])
    assert 0 < len(failed) <= CONCURRENCY
    # Between the kill and the replica's restart nothing was answered by
    # it: each refused connect went on to another replica.
    for row in log.values():
        if t_kill + 0.5 < row["end"] - row["time"] < t_revive:
            assert row["upstreams"][-1] != victim, row
    # Retried only before any response header: nothing a replica accepted.
    for row in retried:
        assert row["upstreams"][0] == victim and row["status"] == 200, row
        assert all(u == "502" for u in row["upstream_status"][:-1]), row
    # Back in rotation once ready (fail_timeout 1 s).
    assert any(row["upstreams"][-1] == victim and row["status"] == 200
               for row in log.values() if row["end"] - row["time"] > t_back + 1.5)
    check_idle(replicas)


def test_proxy_adds_little_latency(replicas):
    """Interleaved pairs, proxy vs straight to a replica. The target is
    2 ms at p50: 0.3 to 1.4 ms measured with bench/proxy_overhead.py on a
    quiet machine, but each proxied request waits for nginx to be scheduled
    twice, and at a load average of 15 on 2 cores that alone added 10 ms.
    So the bound (REPLICAS_MAX_PROXY_MS) only catches gross faults; the
    delayed-ACK stall is caught by the kept-alive test below."""
    r = proxy_overhead.measure(replicas.replica_url(0), replicas.url, 60)
    print(r)
    assert r["median_pair_difference_ms"] < MAX_PROXY_MS, r


def test_kept_alive_connections_stream_without_delay(replicas):
    """TTFT on one kept-alive connection vs a new connection per request,
    interleaved: without TCP_NODELAY the first chunk after the headers
    waits for the peer's delayed ACK (+28 ms at p50 here)."""
    body = json.dumps({"prompt": "The capital of France is", "max_tokens": 2,
                       "temperature": 0, "stream": True, "ignore_eos": True})
    kept = http.client.HTTPConnection("127.0.0.1", replicas.ports[0], timeout=60)

    def first_chunk_ms(conn):
        t0 = time.perf_counter()
        conn.request("POST", "/v1/completions", body,
                     {"Content-Type": "application/json"})
        first = None
        for line in conn.getresponse():
            if first is None and line.startswith(b"data: {"):
                first = (time.perf_counter() - t0) * 1000
        return first

    diffs = []
    for i in range(45):
        new = http.client.HTTPConnection("127.0.0.1", replicas.ports[0],
                                         timeout=60)
        k = first_chunk_ms(kept)
        diffs.append(k - first_chunk_ms(new))
        new.close()
    kept.close()
    diffs = sorted(diffs[5:])
    median = diffs[len(diffs) // 2]
    print(f"kept-alive minus new connection, median: {median:.2f} ms")
    assert median < 5, diffs
