#!/usr/bin/env python3
"""The proxy's added latency per request: TTFT through nginx minus TTFT
straight to the same replica, measured in interleaved pairs so that load
from elsewhere on the machine hits both sides alike.

  url=$(scripts/replicas.sh start 1 /tmp/r1)   # one replica behind nginx
  .venv/bin/python bench/proxy_overhead.py --proxy "$url" \
      --direct "http://127.0.0.1:$(head -1 /tmp/r1/ports)" --pairs 300
  scripts/replicas.sh stop /tmp/r1

Each pair sends the same streamed completion (greedy, --max-tokens tokens)
once directly and once through the proxy, in alternating order, each on a
new connection (as `weft bench serve` does); TTFT = request sent to the
first content chunk. Prints the p50 of each side and the median of the
per-pair differences (proxy - direct), in ms.
"""
import argparse
import http.client
import json
import statistics
import time
import urllib.parse


def ttft(url, body):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", body,
              {"Content-Type": "application/json"})
    r = c.getresponse()
    first = None
    for line in r:
        if first is None and line.startswith(b"data: {"):
            if json.loads(line[6:])["choices"][0]["text"]:
                first = time.perf_counter() - t0
    c.close()
    assert r.status == 200 and first is not None, (url, r.status)
    return first * 1000


def measure(direct_url, proxy_url, pairs, max_tokens=2,
            prompt="The capital of France is"):
    """Interleaved TTFT pairs; returns the summary as a dict (ms)."""
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens,
                       "temperature": 0, "stream": True, "ignore_eos": True})
    for _ in range(5):  # warm-up: prefix cache, connections, page cache
        ttft(direct_url, body)
        ttft(proxy_url, body)
    direct, proxy = [], []
    for i in range(pairs):
        order = [(direct_url, direct), (proxy_url, proxy)]
        for url, out in (order if i % 2 == 0 else order[::-1]):
            out.append(ttft(url, body))
    diff = [p - d for p, d in zip(proxy, direct)]
    return {
        "pairs": pairs,
        "direct_ttft_p50_ms": round(statistics.median(direct), 3),
        "proxy_ttft_p50_ms": round(statistics.median(proxy), 3),
        "p50_difference_ms": round(statistics.median(proxy) -
                                   statistics.median(direct), 3),
        "median_pair_difference_ms": round(statistics.median(diff), 3),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--direct", required=True, help="a replica's base URL")
    p.add_argument("--proxy", required=True, help="the proxy's base URL")
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--max-tokens", type=int, default=2)
    p.add_argument("--prompt", default="The capital of France is")
    a = p.parse_args()
    print(json.dumps(measure(a.direct, a.proxy, a.pairs, a.max_tokens,
                             a.prompt)))


if __name__ == "__main__":
    main()
