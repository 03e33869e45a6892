#!/usr/bin/env python3
"""Soak test for `weft serve` (make soak SOAK_SECONDS=600).

Starts the server with a fixed KV memory, measures its capacity (completed
requests per second with `--capacity-concurrency` closed-loop clients), then
drives it with Poisson arrivals at `--load` x that capacity for `--seconds`,
mixing clients:

  normal     completions, JSON, n=1..2, logprobs: tokens counted per choice
  stream     completions, SSE with include_usage and logprobs
  chat       chat completions, SSE
  abort      streaming, hangs up after the first chunks
  malformed  bad JSON / bad fields (expects 400)
  oversized  Content-Length over the body limit (expects 413)
  slowsend   sends its request one byte per second (server must time it out)
  slowread   reads a streamed response one byte per second

Pass criteria (any violation -> exit 1):
  * the server is up and ready afterwards;
  * every KV block is free once idle (weft_kv_blocks_used == 0 and
    vllm:num_requests_running/waiting == 0);
  * RSS (VmRSS) after the run is < 5% above RSS after warm-up (the
    sample a third into the load phase);
  * peak RSS (VmHWM) < weights file + KV memory + --rss-allowance-mb;
  * every 200 response carried all its tokens (usage.completion_tokens ==
    tokens received, and == max_tokens x n when finish_reason is "length");
  * no status outside {200, 400, 413, 429, 431, 503}; no 5xx but 503.

Only the standard library: raw asyncio sockets speaking HTTP/1.1.
"""

import argparse
import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

ALLOWED = {200, 400, 413, 429, 431, 503}


# ---- a minimal HTTP/1.1 client ----

class Response:
    def __init__(self):
        self.status = 0
        self.headers = {}
        self.body = b""


async def read_response(reader, on_chunk=None, slow=False):
    """Reads one response; on_chunk(bytes) gets pieces of a chunked body."""
    r = Response()
    line = await reader.readline()
    if not line:
        raise ConnectionError("closed before status line")
    r.status = int(line.split()[1])
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.decode("latin-1").partition(":")
        r.headers[k.strip().lower()] = v.strip()
    if r.headers.get("transfer-encoding") == "chunked":
        body = bytearray()
        while True:
            size_line = await reader.readline()
            if not size_line:
                raise ConnectionError("closed inside chunked body")
            n = int(size_line.strip() or b"0", 16)
            if n == 0:
                await reader.readline()
                break
            if slow:
                data = bytearray()
                for _ in range(n):
                    data += await reader.readexactly(1)
                    await asyncio.sleep(1.0)
            else:
                data = await reader.readexactly(n)
            await reader.readexactly(2)
            body += data
            if on_chunk and on_chunk(bytes(data)) is False:
                r.body = bytes(body)
                return r
        r.body = bytes(body)
    else:
        n = int(r.headers.get("content-length", "0"))
        r.body = await reader.readexactly(n)
    return r


def request_bytes(host, port, method, path, body=b"", extra=""):
    head = (f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n{extra}\r\n")
    return head.encode() + body


async def fetch(host, port, method, path, body=b"", timeout=600):
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(request_bytes(host, port, method, path, body))
        await writer.drain()
        return await asyncio.wait_for(read_response(reader), timeout)
    finally:
        writer.close()


def sse_events(body):
    out = []
    for block in body.decode("utf-8", "replace").split("\n\n"):
        if block.startswith("data: "):
            out.append(block[6:])
    return out


# ---- the clients ----

class Stats:
    def __init__(self):
        self.counts = {}        # kind -> {status -> n}
        self.violations = []
        self.tokens = 0
        self.errors = {}        # kind -> connection errors (client side)

    def record(self, kind, status):
        self.counts.setdefault(kind, {}).setdefault(status, 0)
        self.counts[kind][status] += 1
        if status not in ALLOWED and status not in ("closed", "gave up"):
            self.violations.append(f"{kind}: status {status}")

    def violation(self, msg):
        if len(self.violations) < 200:
            self.violations.append(msg)


PROMPTS = ["Once upon a time", "The little dog", "In a small town there was",
           "She looked at the sky and", "Tom and Lily went to the park"]


def completion_body(stream, max_tokens, n=1):
    return json.dumps({
        "prompt": random.choice(PROMPTS) + " " + str(random.randint(0, 10**6)),
        "max_tokens": max_tokens, "n": n, "temperature": 0.8,
        "seed": random.randint(0, 2**31), "logprobs": 0, "ignore_eos": True,
        "stream": stream,
        **({"stream_options": {"include_usage": True}} if stream else {}),
    }).encode()


def check_choices(stats, kind, choices, usage, max_tokens, n):
    got = 0
    for c in choices:
        toks = len((c.get("logprobs") or {}).get("tokens") or [])
        got += toks
        reason = c.get("finish_reason")
        if reason == "length" and toks != max_tokens:
            stats.violation(f"{kind}: 'length' after {toks} tokens, max_tokens {max_tokens}")
        elif reason == "stop" and toks > max_tokens:
            stats.violation(f"{kind}: {toks} tokens > max_tokens {max_tokens}")
        elif reason not in ("length", "stop"):
            stats.violation(f"{kind}: finish_reason {reason}")
    if usage is None:
        stats.violation(f"{kind}: no usage")
    elif usage["completion_tokens"] != got or len(choices) != n:
        stats.violation(f"{kind}: usage.completion_tokens {usage['completion_tokens']}, "
                        f"received {got} in {len(choices)} choices (n={n})")
    stats.tokens += got


async def c_normal(cfg, stats):
    n = random.choice([1, 1, 2])
    mt = random.randint(4, cfg.max_tokens)
    r = await fetch(cfg.host, cfg.port, "POST", "/v1/completions", completion_body(False, mt, n))
    stats.record("normal", r.status)
    if r.status == 200:
        j = json.loads(r.body)
        check_choices(stats, "normal", j["choices"], j.get("usage"), mt, n)


def streamed_events(stats, kind, r):
    """Records the status of a streamed response; its SSE events (ending in
    [DONE]) when it is a 200 that ends properly, else None (a 200 without
    [DONE] is recorded as a violation)."""
    stats.record(kind, r.status)
    if r.status != 200:
        return None
    events = sse_events(r.body)
    if not events or events[-1] != "[DONE]":
        stats.violation(f"{kind}: no [DONE]")
        return None
    return events


async def c_stream(cfg, stats):
    mt = random.randint(4, cfg.max_tokens)
    r = await fetch(cfg.host, cfg.port, "POST", "/v1/completions", completion_body(True, mt))
    events = streamed_events(stats, "stream", r)
    if events is None:
        return
    choices = {}
    usage = None
    for e in events[:-1]:
        j = json.loads(e)
        if "error" in j:
            return stats.violation(f"stream: error event {e[:200]}")
        if j.get("usage"):
            usage = j["usage"]
        for c in j.get("choices", []):
            acc = choices.setdefault(c["index"], {"logprobs": {"tokens": []},
                                                  "finish_reason": None})
            acc["logprobs"]["tokens"] += (c.get("logprobs") or {}).get("tokens") or []
            if c.get("finish_reason"):
                acc["finish_reason"] = c["finish_reason"]
    check_choices(stats, "stream", list(choices.values()), usage, mt, 1)


async def c_chat(cfg, stats):
    mt = random.randint(4, cfg.max_tokens)
    body = json.dumps({"messages": [{"role": "user", "content": random.choice(PROMPTS)}],
                       "max_tokens": mt, "stream": True, "ignore_eos": True,
                       "stream_options": {"include_usage": True}}).encode()
    r = await fetch(cfg.host, cfg.port, "POST", "/v1/chat/completions", body)
    events = streamed_events(stats, "chat", r)
    if events is None:
        return
    usage = json.loads(events[-2]).get("usage") if len(events) >= 2 else None
    reasons = [c.get("finish_reason") for e in events[:-1]
               for c in json.loads(e).get("choices", []) if c.get("finish_reason")]
    if not usage or reasons not in (["length"], ["stop"]):
        return stats.violation(f"chat: usage {usage}, finish {reasons}")
    n = usage["completion_tokens"]
    if (reasons == ["length"] and n != mt) or n > mt:
        stats.violation(f"chat: {n} tokens, finish {reasons[0]}, max_tokens {mt}")
    stats.tokens += n


async def c_abort(cfg, stats):
    reader, writer = await asyncio.open_connection(cfg.host, cfg.port)
    try:
        writer.write(request_bytes(cfg.host, cfg.port, "POST", "/v1/completions",
                                   completion_body(True, cfg.max_tokens)))
        await writer.drain()
        seen = [0]

        def on_chunk(_):
            seen[0] += 1
            return seen[0] < random.randint(2, 4)  # False: stop reading
        r = await asyncio.wait_for(read_response(reader, on_chunk), 600)
        stats.record("abort", r.status)
    finally:
        writer.transport.abort()  # RST: the client is gone mid-stream


MALFORMED = [
    b"{not json", b"[]", b'{"prompt": 5}', b'{"prompt": "x", "n": 0}',
    b'{"prompt": "x", "temperature": 9}', b'{"messages": []}',
    b'{"prompt": "x", "logit_bias": {"-1": 1}}',
    b'{"prompt": "x", "stop": ["' + b"s" * 1100 + b'"]}',
    b'{"prompt": "x", "max_tokens": 100000000}',
    b"[" * 100 + b"]" * 100,
]


async def c_malformed(cfg, stats):
    body = random.choice(MALFORMED)
    path = "/v1/chat/completions" if body.startswith(b'{"messages"') else "/v1/completions"
    r = await fetch(cfg.host, cfg.port, "POST", path, body)
    stats.record("malformed", r.status)
    if r.status != 400:
        stats.violation(f"malformed: {body[:40]!r} -> {r.status}")
    else:
        err = json.loads(r.body).get("error", {})
        if not isinstance(err.get("message"), str):
            stats.violation(f"malformed: bad error body {r.body[:200]!r}")


async def c_oversized(cfg, stats):
    reader, writer = await asyncio.open_connection(cfg.host, cfg.port)
    try:
        size = 5 << 20
        head = (f"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n")
        writer.write(head.encode() + b'{"prompt": "' + b"a" * 4096)
        await writer.drain()
        r = await asyncio.wait_for(read_response(reader), 60)
        stats.record("oversized", r.status)
        if r.status != 413:
            stats.violation(f"oversized: {r.status}")
    except (ConnectionError, asyncio.IncompleteReadError):
        stats.record("oversized", "closed")
    finally:
        writer.transport.abort()


async def c_slowsend(cfg, stats):
    reader, writer = await asyncio.open_connection(cfg.host, cfg.port)
    data = request_bytes(cfg.host, cfg.port, "POST", "/v1/completions",
                         completion_body(False, 4))
    try:
        for i in range(len(data)):
            writer.write(data[i:i + 1])
            await writer.drain()
            await asyncio.sleep(1.0)
            if reader.at_eof():
                break
        r = await asyncio.wait_for(read_response(reader), 60)
        stats.record("slowsend", r.status)
    except (ConnectionError, asyncio.IncompleteReadError, OSError):
        stats.record("slowsend", "closed")  # the header timeout: expected
    finally:
        writer.transport.abort()


async def c_slowread(cfg, stats):
    reader, writer = await asyncio.open_connection(cfg.host, cfg.port)
    try:
        writer.write(request_bytes(cfg.host, cfg.port, "POST", "/v1/completions",
                                   completion_body(True, 8)))
        await writer.drain()
        # One byte a second for up to a minute, then hang up.
        r = await asyncio.wait_for(read_response(reader, slow=True), 60)
        stats.record("slowread", r.status)
    except asyncio.TimeoutError:
        stats.record("slowread", "gave up")
    except (ConnectionError, asyncio.IncompleteReadError, OSError):
        stats.record("slowread", "closed")
    finally:
        writer.transport.abort()


MIX = [(c_normal, 30), (c_stream, 25), (c_chat, 10), (c_abort, 12),
       (c_malformed, 10), (c_oversized, 5), (c_slowsend, 4), (c_slowread, 4)]
SLOW_MAX = 6  # very slow clients alive at once


async def guarded(fn, cfg, stats):
    try:
        await fn(cfg, stats)
    except (ConnectionError, asyncio.IncompleteReadError, OSError,
            asyncio.TimeoutError) as e:
        name = fn.__name__[2:]
        stats.errors[name] = stats.errors.get(name, 0) + 1
        if name in ("normal", "stream", "chat", "malformed"):
            stats.violation(f"{name}: connection error {type(e).__name__}: {e}")


# ---- the server process ----

def rss_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def metrics(text):
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        out[re.sub(r"\{.*\}", "", name)] = float(value)
    return out


async def get_metrics(cfg):
    r = await fetch(cfg.host, cfg.port, "GET", "/metrics")
    return metrics(r.body.decode())


async def capacity(cfg, stats, seconds):
    done = 0
    stop = time.monotonic() + seconds

    async def worker():
        nonlocal done
        while time.monotonic() < stop:
            await c_normal(cfg, stats)
            done += 1
    t0 = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(cfg.capacity_concurrency)))
    return done / (time.monotonic() - t0)


async def soak(cfg, pid):
    stats = Stats()
    print(f"soak: measuring capacity for {cfg.capacity_seconds:.0f} s "
          f"(c={cfg.capacity_concurrency}, max_tokens<= {cfg.max_tokens})", flush=True)
    cap = await capacity(cfg, stats, cfg.capacity_seconds)
    rate = cfg.load * cap
    rss_warm = rss_kib(pid, "VmRSS")
    print(f"soak: capacity {cap:.2f} req/s; driving {rate:.2f} req/s for "
          f"{cfg.seconds:.0f} s; RSS after warm-up {rss_warm / 1024:.1f} MiB", flush=True)
    tasks = set()
    slow = set()
    kinds, weights = zip(*MIX)
    t_end = time.monotonic() + cfg.seconds
    rss_samples = []
    next_sample = time.monotonic()
    while time.monotonic() < t_end:
        await asyncio.sleep(random.expovariate(rate))
        fn = random.choices(kinds, weights)[0]
        if fn in (c_slowsend, c_slowread):
            slow = {t for t in slow if not t.done()}
            if len(slow) >= SLOW_MAX:
                fn = c_normal
        t = asyncio.ensure_future(guarded(fn, cfg, stats))
        tasks.add(t)
        if fn in (c_slowsend, c_slowread):
            slow.add(t)
        tasks = {x for x in tasks if not x.done()}
        if time.monotonic() >= next_sample:
            rss_samples.append(rss_kib(pid, "VmRSS"))
            next_sample += 10
    print(f"soak: load done; waiting for {len(tasks)} open client(s)", flush=True)
    # Slow clients give up after a minute; the rest finish sooner.
    await asyncio.wait(tasks, timeout=300)
    await asyncio.sleep(2)
    return stats, cap, rate, rss_warm, rss_samples


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weft", default="build/release/weft")
    ap.add_argument("--model", default="models/gemma-3-270m-q4_k_m.gguf")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--capacity-seconds", type=float, default=30)
    ap.add_argument("--capacity-concurrency", type=int, default=8)
    ap.add_argument("--load", type=float, default=2.0, help="x capacity")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--kv-memory", default="64M")
    ap.add_argument("--max-seqs", type=int, default=8)
    ap.add_argument("--max-queue", type=int, default=32)
    ap.add_argument("--rss-allowance-mb", type=float, default=384,
                    help="peak RSS bound = weights + KV memory + this")
    ap.add_argument("--rss-growth", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--serve-args", default="")
    cfg = ap.parse_args()
    random.seed(cfg.seed)
    cfg.host = "127.0.0.1"

    cmd = [cfg.weft, "serve", "-m", cfg.model, "--port", "0", "--kv-memory",
           cfg.kv_memory, "--max-seqs", str(cfg.max_seqs), "--max-queue",
           str(cfg.max_queue), "--max-batched-tokens", "512"] + cfg.serve_args.split()
    log = open("soak-server.log", "w")
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=log, text=True)
    port = None
    t0 = time.monotonic()
    while port is None and time.monotonic() - t0 < 120:
        line = proc.stderr.readline()
        if not line:
            break
        log.write(line)
        m = re.search(r"listening on http://[\d.]+:(\d+)", line)
        if m:
            port = int(m.group(1))
    if port is None:
        print("soak: FAIL: server did not start (see soak-server.log)")
        proc.kill()
        return 1
    cfg.port = port

    # Keep draining stderr into the log (a full pipe would block the server).
    import threading
    threading.Thread(target=lambda: [log.write(l) for l in proc.stderr],
                     daemon=True).start()
    print(f"soak: {' '.join(cmd)} -> pid {proc.pid}, port {port}", flush=True)

    violations = []
    try:
        stats, cap, rate, rss_warm, rss_samples = asyncio.run(soak(cfg, proc.pid))
        violations += stats.violations
        if proc.poll() is not None:
            violations.append(f"server exited with {proc.returncode}")
        else:
            async def after():
                ready = await fetch(cfg.host, cfg.port, "GET", "/health/ready")
                m = await get_metrics(cfg)
                return ready.status, m
            ready, m = asyncio.run(after())
            if ready != 200:
                violations.append(f"/health/ready is {ready} after the run")
            for key in ("weft_kv_blocks_used", "vllm:num_requests_running",
                        "vllm:num_requests_waiting"):
                if m.get(key, -1) != 0:
                    violations.append(f"{key} = {m.get(key)} when idle")
            rss_end = rss_kib(proc.pid, "VmRSS")
            hwm = rss_kib(proc.pid, "VmHWM")
            # Warm-up ends a third into the load phase: by then the KV pool
            # (touched lazily) and the allocator arenas have reached their
            # working size; growth after that is what a leak looks like.
            if rss_samples:
                rss_warm = rss_samples[len(rss_samples) // 3]
            growth = (rss_end - rss_warm) / rss_warm
            if growth >= cfg.rss_growth:
                violations.append(f"RSS grew {growth * 100:.1f}% after warm-up "
                                  f"({rss_warm} -> {rss_end} KiB)")
            kv = parse_bytes(cfg.kv_memory)
            bound = os.path.getsize(cfg.model) + kv + cfg.rss_allowance_mb * 2**20
            if hwm * 1024 >= bound:
                violations.append(f"peak RSS {hwm / 1024:.1f} MiB >= bound {bound / 2**20:.1f} MiB")
            print("\n== soak summary ==")
            print(f"duration {cfg.seconds:.0f} s, capacity {cap:.2f} req/s, offered {rate:.2f} req/s")
            for kind, c in sorted(stats.counts.items()):
                print(f"  {kind:10s} " + ", ".join(f"{s}: {n}" for s, n in sorted(c.items(), key=str)))
            if stats.errors:
                print(f"  client-side connection ends: {stats.errors}")
            print(f"  tokens received and checked: {stats.tokens}")
            print(f"  KV blocks used/cached/total when idle: {m.get('weft_kv_blocks_used')}/"
                  f"{m.get('weft_kv_blocks_cached')}/{m.get('weft_kv_blocks_total')}")
            print(f"  aborts {m.get('weft_aborts_total')}, preemptions {m.get('weft_preemptions_total')}, "
                  f"queue-full 429s {m.get('weft_http_queue_full_total')}")
            print("  RSS samples (MiB, every 10 s): " +
                  " ".join(f"{s / 1024:.0f}" for s in rss_samples))
            print(f"  RSS after warm-up {rss_warm / 1024:.1f} MiB, end {rss_end / 1024:.1f} MiB "
                  f"({growth * 100:+.2f}%), samples min/max "
                  f"{min(rss_samples or [0]) / 1024:.1f}/{max(rss_samples or [0]) / 1024:.1f} MiB")
            print(f"  peak RSS (VmHWM) {hwm / 1024:.1f} MiB, bound {bound / 2**20:.1f} MiB "
                  f"(weights {os.path.getsize(cfg.model) / 2**20:.1f} + KV {kv / 2**20:.1f} "
                  f"+ allowance {cfg.rss_allowance_mb:.0f})")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                violations.append("server did not stop within 60 s of SIGTERM")
            if proc.returncode not in (0, None):
                violations.append(f"server exit code {proc.returncode} after SIGTERM")
    for v in violations:
        print("VIOLATION:", v)
    print("soak: " + ("FAIL" if violations else "PASS"))
    return 1 if violations else 0


def parse_bytes(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)", s.strip().upper())
    if not m:
        raise SystemExit(f"--kv-memory: give bytes like 64M, got {s}")
    return int(float(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[m.group(2)])


if __name__ == "__main__":
    sys.exit(main())
