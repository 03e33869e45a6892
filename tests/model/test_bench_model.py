"""`weft bench model` on the tiny stories260K model: exit codes, the markdown
table, and that the JSON holds every figure (pp, tg, the decode curve with
GB/s and % of the bandwidth measured in the same run).

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
    return subprocess.run([WEFT, "bench", "model", *args], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.skipif(not os.path.exists(STORIES), reason="no stories260K")
def test_json_and_table(tmp_path):
    out = tmp_path / "r.json"
    r = bench("-m", STORIES, "--threads", "2", "--reps", "2", "--pp", "32",
              "--tg", "8", "--ctx", "16", "--batches", "1,2,4", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("## weft bench model -m ")
    assert "| pp32 |" in r.stdout and "| tg8 |" in r.stdout
    assert "| decode B=4 |" in r.stdout and "read bandwidth (same run)" in r.stdout
    j = json.loads(out.read_text())
    assert j["bandwidth_gbs"] > 0 and j["weight_bytes_per_step"] > 0
    assert j["pp"]["tokens"] == 32 and len(j["pp"]["samples_s"]) == 2
    assert j["tg"]["tokens"] == 8 and j["tg"]["roofline_pct"] > 0
    assert [d["batch"] for d in j["decode"]] == [1, 2, 4]
    for d in j["decode"]:
        assert d["min_s"] <= d["median_s"] <= d["max_s"]
        assert d["weights_gbs"] > 0 and d["roofline_pct"] > 0
    assert j["decode"][0]["step_ratio"] == 1.0
    assert j["weights_x8"] is True
    assert j["kv_type"] == "f16" and "kv: f16" in r.stdout  # as weft serve


@pytest.mark.skipif(not os.path.exists(STORIES), reason="no stories260K")
def test_row_major_flag(tmp_path):
    out = tmp_path / "r.json"
    r = bench("-m", STORIES, "--reps", "1", "--pp", "0", "--tg", "2", "--batches", "",
              "--row-major", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "weights: row-major" in r.stdout
    assert json.loads(out.read_text())["weights_x8"] is False


@pytest.mark.skipif(not os.path.exists(STORIES), reason="no stories260K")
@pytest.mark.parametrize("kv", ["f32", "q8_0"])
def test_kv_type_flag(tmp_path, kv):
    out = tmp_path / "r.json"
    r = bench("-m", STORIES, "--reps", "1", "--pp", "8", "--tg", "2", "--ctx", "8",
              "--batches", "2", "--kv-type", kv, "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert f"kv: {kv}" in r.stdout
    assert json.loads(out.read_text())["kv_type"] == kv


@pytest.mark.parametrize("args", [
    ["--threads", "0"],
    ["--batches", "1,x"],
    ["--reps", "0"],
    ["--kv-type", "f8"],
    ["-m", "/nonexistent.gguf"],
    ["extra-arg"],
])
def test_bad_usage_exits_2(args):
    r = bench(*args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("weft bench model: ") or "usage" in r.stderr.lower()
