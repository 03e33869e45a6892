"""`weft bench model` on the tiny stories260K model: exit codes, the markdown
table, and that the JSON holds every figure (pp, tg, the decode curve with
GB/s and % of the bandwidth measured in the same run, before the tests and
paired with each timed run).

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
    assert j["bandwidth_after_gbs"] > 0
    assert j["pp"]["tokens"] == 32 and len(j["pp"]["samples_s"]) == 2
    assert j["tg"]["tokens"] == 8 and j["tg"]["roofline_pct"] > 0
    assert [d["batch"] for d in j["decode"]] == [1, 2, 4]
    for d in j["decode"]:
        assert d["min_s"] <= d["median_s"] <= d["max_s"]
        assert d["weights_gbs"] > 0 and d["roofline_pct"] > 0
    # The paired probe: one reading per timed run, and the median of each
    # run's weights GB/s over its own reading.
    for t, steps in [(j["tg"], 8)] + [(d, 1) for d in j["decode"]]:
        assert len(t["probe_gbs"]) == len(t["samples_s"]) == 2
        assert all(g > 0 for g in t["probe_gbs"])
        pct = sorted(100 * j["weight_bytes_per_step"] * steps / s / 1e9 / g
                     for s, g in zip(t["samples_s"], t["probe_gbs"]))
        assert abs(t["paired_roofline_pct"] - (pct[0] + pct[1]) / 2) < 1e-6 * pct[1]
    assert "| % roofline | % paired |" in r.stdout
    assert j["decode"][0]["step_ratio"] == 1.0
    # Weight-product operations per second: 2 per multiply-add, layers per
    # token plus the output matrix per row of logits (pp: the last token).
    macs, out_macs = j["weight_macs_per_token"], j["output_macs_per_logit_row"]
    assert macs > 0 and out_macs > 0
    pp_ops = 2 * (macs * 32 + out_macs)
    assert abs(j["pp"]["gops"] - pp_ops / j["pp"]["median_s"] / 1e9) < 1e-9 * pp_ops
    for d in j["decode"]:
        ops = 2 * (macs + out_macs) * d["batch"]
        assert abs(d["gops"] - ops / d["median_s"] / 1e9) < 1e-9 * ops
    assert j["tg"]["gops"] > 0
    assert "| GOP/s |" in r.stdout and "| x step(B=1) |" in r.stdout
    # f16 KV rows (the default): stories260K has 5 layers and 4 kv heads of
    # 8, so 2 * (32 + 32) bytes per layer and position; a step at position 16
    # reads 17 positions.
    for d in j["decode"]:
        assert d["kv_bytes_read"] == d["batch"] * 17 * 5 * 2 * (32 + 32)
        floor = (j["weight_bytes_per_step"] + d["kv_bytes_read"]) / (j["bandwidth_gbs"] * 1e9)
        assert abs(d["read_floor_pct"] - 100 * floor / d["median_s"]) < 1e-6 * d["read_floor_pct"]
    assert j["weights_x8"] is True
    assert j["kv_type"] == "f16" and "kv: f16" in r.stdout  # as weft serve
    check_compute_floor(j, r.stdout)


def check_compute_floor(j, stdout):
    """The compute ceilings and floors: measured with the AVX2 table only;
    each floor is the multiply-adds of each kind over that kind's ceiling."""
    if j["isa"] != "avx2":
        assert "compute_peak_gops" not in j and "compute_floor_s" not in j["tg"]
        assert "compute ceilings: not measured" in stdout
        return
    peaks, kinds = j["compute_peak_gops"], j["macs_by_kind"]
    assert set(peaks) == set(kinds) == {"int8_signed", "int8_unsigned", "f32_fma"}
    assert all(v > 0 for v in peaks.values())
    assert sum(k["weight_macs_per_token"] for k in kinds.values()) == j["weight_macs_per_token"]
    assert (sum(k["output_macs_per_logit_row"] for k in kinds.values())
            == j["output_macs_per_logit_row"])

    def floor(tokens, logit_rows):
        return sum((k["weight_macs_per_token"] * tokens + k["output_macs_per_logit_row"]
                    * logit_rows) * 2 / (peaks[name] * 1e9) for name, k in kinds.items())

    tests = [(j["pp"], floor(j["pp"]["tokens"], 1)),
             (j["tg"], floor(1, 1) * j["tg"]["tokens"])]
    tests += [(d, floor(d["batch"], d["batch"])) for d in j["decode"]]
    for t, want in tests:
        assert abs(t["compute_floor_s"] - want) <= 1e-9 * want
        assert abs(t["compute_floor_pct"] - 100 * want / t["median_s"]) <= 1e-6
    assert "compute ceilings (same run" in stdout and "| floor ms/step | % floor |" in stdout


@pytest.mark.skipif(not os.path.exists(STORIES), reason="no stories260K")
@pytest.mark.skipif(not os.path.exists(STORIES), reason="no stories260K")
def test_depths(tmp_path):
    """--depth: pp and tg after D tokens of context and the curve at D, for each D
    (context past the attention's 256-position slices)."""
    out = tmp_path / "r.json"
    r = bench("-m", STORIES, "--threads", "2", "--reps", "1", "--pp", "8", "--tg", "4",
              "--depth", "0,300", "--batches", "1,2", "--json", str(out))
    assert r.returncode == 0, r.stderr
    for row in ("| pp8 @ d0 |", "| pp8 @ d300 |", "| tg4 @ d0 |", "| tg4 @ d300 |",
                "| decode B=2 @ d0 |", "| decode B=2 @ d300 |"):
        assert row in r.stdout, row
    assert "| KV MB/step | % read floor |" in r.stdout
    j = json.loads(out.read_text())
    assert [t["depth"] for t in j["tg"]] == [0, 300]
    assert [(p["depth"], p["tokens"]) for p in j["pp"]] == [(0, 8), (300, 8)]
    per_pos = 5 * 2 * (32 + 32)  # KV bytes per position, all layers
    for t in j["tg"]:
        # Steps at depth .. depth + 3 read depth + 1 .. depth + 4 positions.
        assert t["kv_bytes_per_step"] == (t["depth"] + 2.5) * per_pos
        assert t["read_floor_pct"] > 0
    assert [[d["ctx"] for d in c] for c in j["decode"]] == [[0, 0], [300, 300]]
    assert j["decode"][1][1]["kv_bytes_read"] == 2 * 301 * per_pos
    r = bench("-m", STORIES, "--depth", "0,x")
    assert r.returncode == 2 and "bad depth 'x'" in r.stderr


def test_scalar_has_no_compute_floor(tmp_path):
    out = tmp_path / "r.json"
    r = bench("-m", STORIES, "--isa", "scalar", "--reps", "1", "--pp", "4", "--tg", "2",
              "--ctx", "4", "--batches", "1", "--json", str(out))
    assert r.returncode == 0, r.stderr
    j = json.loads(out.read_text())
    assert j["isa"] == "scalar"
    check_compute_floor(j, r.stdout)


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


# Files of the newest formats (each was once a CHECK failure here) are
# benchmarked.
@pytest.mark.parametrize("qtype", ["q2_k", "q3_k", "q4_1", "iq4_xs"])
def test_every_loadable_type_benchmarks(tmp_path, qtype):
    path = str(tmp_path / f"{qtype}.gguf")
    r = subprocess.run([WEFT, "make-model", "--arch", "llama", "--dim", "256",
                        "--layers", "1", "--heads", "4", "--kv-heads", "2",
                        "--ffn", "512", "--vocab-from",
                        os.path.join(MODELS, "ggml-vocab-llama-spm.gguf"),
                        "--type", qtype, "-o", path],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "r.json"
    r = bench("-m", path, "--threads", "2", "--reps", "1", "--pp", "16",
              "--tg", "4", "--batches", "", "--json", str(out))
    assert r.returncode == 0, r.stderr
    j = json.loads(out.read_text())
    assert j["pp"]["tokens"] == 16 and j["tg"]["tokens"] == 4
