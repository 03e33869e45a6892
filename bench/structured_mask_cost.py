#!/usr/bin/env python3
"""Mask cost of structured outputs: decode time per token with a json_schema
constraint vs unconstrained, at B = 1 and B = 8 concurrent requests, against
a running `weft serve` (issue #33's target: <= 10% more per step).

  weft serve --model M --port 8080 &
  .venv/bin/python bench/structured_mask_cost.py --url http://127.0.0.1:8080

Each request streams `--tokens` tokens (unconstrained with ignore_eos; the
schema forces a long array so the constrained output does not end sooner);
time per token = (last chunk - first chunk) / (tokens - 1), the mean over
the batch's requests; the median over `--reps` alternating runs is shown.
The first constrained run of a new schema also builds its mask index (the
server keeps it): run twice, or compare with `weft bench grammar`, which
measures the same in one process and reports the cold run apart.
"""
import argparse
import concurrent.futures
import json
import pathlib
import statistics
import time
import urllib.request

# weft bench grammar's decode schema (200 items: the output does not end sooner).
SCHEMA = json.loads((pathlib.Path(__file__).parent / "grammar_schemas.json").read_text())[
    "schemas"]["mask_cost"]


def itl(url, constrained, tokens, temperature, seed):
    body = {"model": "weft", "max_tokens": tokens, "temperature": temperature, "seed": seed,
            "stream": True, "messages": [{"role": "user", "content": "List groceries as JSON."}]}
    if constrained:
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "g", "schema": SCHEMA}}
    else:
        body["ignore_eos"] = True
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    times, n = [], 0
    with urllib.request.urlopen(req, timeout=600) as r:
        for line in r:
            if line.startswith(b"data: {") and b'"content"' in line:
                times.append(time.perf_counter())
                n += 1
    return (times[-1] - times[0]) / max(1, len(times) - 1), len(times)


def run(url, batch, constrained, tokens, temperature):
    with concurrent.futures.ThreadPoolExecutor(batch) as pool:
        res = list(pool.map(lambda s: itl(url, constrained, tokens, temperature, s),
                            range(batch)))
    return statistics.mean(r[0] for r in res), min(r[1] for r in res)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--temperatures", default="0,0.8")
    a = ap.parse_args()
    print("B  temp  unconstrained_ms  json_schema_ms  overhead  chunks")
    for b in map(int, a.batches.split(",")):
        for t in map(float, a.temperatures.split(",")):
            plain, cons, chunks = [], [], 0
            for _ in range(a.reps):
                plain.append(run(a.url, b, False, a.tokens, t)[0])
                ms, chunks = run(a.url, b, True, a.tokens, t)
                cons.append(ms)
            p, c = statistics.median(plain) * 1e3, statistics.median(cons) * 1e3
            print(f"{b:<2} {t:<5} {p:16.2f} {c:15.2f} {100 * (c / p - 1):+7.1f}%  {chunks}")


if __name__ == "__main__":
    main()
