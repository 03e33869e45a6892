"""Shared pytest fixtures: start `weft serve` on a free loopback port.

`weft_serve_factory(model, *extra_args)` starts a server (port 0: the kernel
picks a free port; the server prints "listening on http://127.0.0.1:PORT"
on stderr), waits until /health/ready answers 200 and returns a WeftServer.
Servers still running at the end of the test session are stopped (SIGTERM,
then SIGKILL).

Env: WEFT_BINARY, WEFT_DEFAULT_MODEL, WEFT_GEMMA_MODEL, WEFT_SHARED_MODELS_DIR (set by ctest).
"""
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

WEFT = os.environ.get("WEFT_BINARY", "build/release/weft")
# Gemma 3 270M (a base model): what the older tests serve; the default
# (chat) model is SmolLM2-135M-Instruct.
GEMMA_MODEL = os.environ.get("WEFT_GEMMA_MODEL",
                             "models/gemma-3-270m-q4_k_m.gguf")
CHAT_MODEL = os.environ.get("WEFT_DEFAULT_MODEL",
                            "models/smollm2-135m-instruct-q4_1.gguf")
SHARED = os.environ.get("WEFT_SHARED_MODELS_DIR", "../shared/models")

def post_json(server, path, body):
    """POSTs `body` as JSON to a WeftServer; returns (status, parsed JSON)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
    conn.request("POST", path, body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    out = (r.status, json.loads(r.read()))
    conn.close()
    return out


def get_json(server, path):
    """GETs `path` from a WeftServer; returns the parsed JSON body."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("GET", path)
    out = json.loads(conn.getresponse().read())
    conn.close()
    return out


def openai_client(server):
    """The official `openai` SDK's client for a WeftServer (imported here
    only when used, so tests that do not need it do not need the SDK)."""
    import openai
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused",
                         max_retries=0, timeout=300)


def alone_and_batched(request, other, others=5):
    """Runs request() alone, then again while `others` calls other(i) run
    beside it; returns both results (for batch-invariance checks)."""
    import concurrent.futures
    alone = request()
    with concurrent.futures.ThreadPoolExecutor(others + 1) as pool:
        side = [pool.submit(other, i) for i in range(others)]
        batched = pool.submit(request).result()
        for f in side:
            f.result()
    return alone, batched


_LISTENING = re.compile(r"listening on (http://[0-9.]+:(\d+))")


class WeftServer:
    """A running `weft serve` process and its captured stderr."""

    def __init__(self, args, env=None, start_timeout=120.0):
        self.args = args
        self.proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, errors="replace",
            env=env)
        self.lines = []
        self._lock = threading.Lock()
        self._found = threading.Event()
        self.url = None
        self.port = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._found.wait(start_timeout):
            self.stop()
            raise RuntimeError("weft serve did not start:\n" + self.log())
        if self.url is None:
            self.stop()
            raise RuntimeError("weft serve exited early:\n" + self.log())
        self.wait_ready(start_timeout)

    def _read(self):
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(line)
            m = _LISTENING.search(line)
            if m and self.url is None:
                self.url = m.group(1)
                self.port = int(m.group(2))
                self._found.set()
        self._found.set()  # EOF: the process ended

    def log(self):
        with self._lock:
            return "".join(self.lines)

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("weft serve exited:\n" + self.log())
            try:
                with urllib.request.urlopen(self.url + "/health/ready",
                                            timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise RuntimeError("weft serve never became ready:\n" + self.log())

    def terminate(self, timeout=60.0):
        """SIGTERM; returns the exit code (None if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def stop(self):
        if self.proc.poll() is None:
            self.terminate(30.0)
        self._reader.join(5)


@pytest.fixture(scope="session")
def weft_serve_factory():
    servers = []

    def start(model, *extra, env=None):
        args = [WEFT, "serve", "-m", model, "--host", "127.0.0.1",
                "--port", "0", *extra]
        s = WeftServer(args, env=env)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


# The default (chat) model with a small KV cache on 2 threads, one server per
# test module; a module defines its own `smol` for other settings.
@pytest.fixture(scope="module")
def smol(weft_serve_factory):
    return weft_serve_factory(CHAT_MODEL, "--kv-memory", "256M", "--ctx",
                              "1024", "--max-seqs", "16", "--threads", "2")


@pytest.fixture(scope="module")
def client(smol):
    return openai_client(smol)
