"""`weft bench kv` on the tiny stories260K model, quickly: exit codes, the
markdown tables and that the JSON holds the decode curve (paged vs
contiguous per KV type) and the TTFT with and without a prefix-cache hit.

Run by ctest (label tool) with the project venv; WEFT_BINARY and
WEFT_SHARED_MODELS_DIR come from the environment.
"""

import json
import os
import subprocess

import pytest

WEFT = os.environ.get("WEFT_BINARY", "build/release/weft")
MODELS = os.environ.get("WEFT_SHARED_MODELS_DIR", "/work/shared/models")
STORIES = os.path.join(MODELS, "stories260K.gguf")


def bench(*args):
    return subprocess.run([WEFT, "bench", "kv", *args], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.skipif(not os.path.exists(STORIES), reason="no stories260K")
def test_json_and_tables(tmp_path):
    out = tmp_path / "kv.json"
    r = bench("-m", STORIES, "--threads", "2", "--reps", "2", "--ctx", "40",
              "--batches", "1,2,4", "--types", "f32,f16,q8_0",
              "--block-size", "8", "--prompt", "100", "--cached", "90",
              "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("## weft bench kv -m ")
    assert "| f16 | paged | 4 |" in r.stdout
    assert "| f32 | contiguous | 1 |" in r.stdout
    assert "| cached | 100 | 88 |" in r.stdout
    j = json.loads(out.read_text())
    assert [d["type"] for d in j["decode"]] == ["f32", "f16", "q8_0"]
    for d in j["decode"]:
        assert d["contiguous_b1"]["median_s"] > 0
        assert [p["batch"] for p in d["paged"]] == [1, 2, 4]
        for p in d["paged"]:
            assert p["min_s"] <= p["median_s"] <= p["max_s"]
            assert p["ratio_to_contiguous_b1"] > 0
        assert "paging_overhead_b1" in d
    t = j["ttft"]
    assert t["prompt_tokens"] == 100 and t["shared_tokens"] == 90
    assert t["hit_tokens"] == 88  # whole blocks of 8
    assert t["cached"]["median_s"] > 0 and t["uncached"]["median_s"] > 0


@pytest.mark.parametrize("args", [
    ["--threads", "0"],
    ["--batches", "1,x"],
    ["--types", "f32,q4_0"],
    ["--cached", "200", "--prompt", "100"],
    ["-m", "/nonexistent.gguf"],
    ["extra-arg"],
])
def test_bad_usage_exits_2(args):
    if "-m" not in args:
        args = ["-m", STORIES] + args
    r = bench(*args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.strip().count("\n") == 0, r.stderr
