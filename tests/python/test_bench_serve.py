"""End to end: `weft bench serve` against a real `weft serve` on stories260K.

Skipped while the `weft serve` subcommand does not exist yet.
"""
import hashlib
import json
import os
import re
import socket
import subprocess
import time

import pytest

WEFT = os.environ.get("WEFT_BINARY", "build/release/weft")
MODELS = os.environ.get("WEFT_SHARED_MODELS_DIR", "/work/shared/models")


def _has_serve():
    try:
        out = subprocess.run([WEFT, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return re.search(r"^\s+serve\s", out, re.M) is not None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


pytestmark = pytest.mark.skipif(not _has_serve(), reason="`weft serve` does not exist yet")


@pytest.fixture
def server():
    model = os.path.join(MODELS, "stories260K.gguf")
    port = _free_port()
    proc = subprocess.Popen([WEFT, "serve", "-m", model, "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    import urllib.request
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail("weft serve exited: " + proc.stderr.read().decode(errors="replace")[-2000:])
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("weft serve did not become ready")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_s1_against_weft_serve(server, tmp_path):
    out = tmp_path / "s1.json"
    r = subprocess.run([WEFT, "bench", "serve", "--url", server, "--workload", "S1",
                        "--prompt-tokens", "32", "--output-tokens", "16", "--concurrency", "1,2",
                        "--num-requests", "4", "--warmup", "1", "--no-progress", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# weft bench serve")
    doc = json.loads(out.read_text())
    assert doc["valid"], "completion_tokens != max_tokens with ignore_eos"
    assert [l["concurrency"] for l in doc["levels"]] == [1, 2]
    for level in doc["levels"]:
        s = level["summary"]
        assert s["completed"] == 4 and s["failed"] == 0, s["failures"]
        assert s["output_tokens"] == 4 * 16
        assert s["prompt_mismatches"] == 0
        assert s["itl_ms"]["count"] > 0
        for sample in level["samples"]:
            assert sample["prompt_tokens"] == 32
    # The report names the served file by its hash (the server computes it
    # in the background; the run outlasts that on this tiny model).
    with open(os.path.join(MODELS, "stories260K.gguf"), "rb") as f:
        want = hashlib.file_digest(f, "sha256").hexdigest()
    assert doc["metadata"]["server"]["model"]["sha256"] == want
    assert f"sha256 {want}" in r.stdout
