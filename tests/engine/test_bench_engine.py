"""`weft bench engine --workload S1|S2 --trace` on the tiny stories260K
model: the side-by-side table (one column per scheduler configuration plus
the unchunked one), the JSON, and the engine trace, parsed with Python's
json module: one request record per request, per-pass decode +
prefill_tokens == tokens <= budget, one start record per measured run.

Run by ctest (label e2e) with the project venv; WEFT_BINARY and
WEFT_SHARED_MODELS_DIR come from the environment.
"""

import json
import os
import subprocess

import pytest

WEFT = os.environ.get("WEFT_BINARY", "build/release/weft")
MODELS = os.environ.get("WEFT_SHARED_MODELS_DIR", "/work/shared/models")
STORIES = os.path.join(MODELS, "stories260K.gguf")
needs_model = pytest.mark.skipif(not os.path.exists(STORIES),
                                 reason="no stories260K")


def bench(*args):
    return subprocess.run([WEFT, "bench", "engine", *args],
                          capture_output=True, text=True, timeout=600)


def read_trace(path):
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    assert recs and recs[0]["ev"] == "start"
    return recs


def check_trace(recs, runs, requests_per_run, budgets):
    starts = [r for r in recs if r["ev"] == "start"]
    assert len(starts) == runs
    assert [s["max_batched_tokens"] for s in starts] == budgets
    idle_budgets = [s["idle_prefill_tokens"] for s in starts]
    targets = [s["target_itl_ms"] for s in starts]
    ratios = [s["target_itl_ratio"] for s in starts]
    run = -1
    for r in recs:
        if r["ev"] == "start":
            run += 1
            ids = set()
            last_step = 0
            continue
        if r["ev"] == "pass":
            assert r["decode"] + r["prefill_tokens"] == r["tokens"]
            assert 0 < r["tokens"] <= r["budget"]
            # The configured budget while something decodes; a pass without
            # a decode may take the idle prefill budget.
            idle = max(budgets[run], idle_budgets[run])
            if r["target_ms"] is not None:
                assert r["budget"] <= idle
            elif r["decode"] > 0:
                assert r["budget"] == budgets[run]
            else:
                assert r["budget"] in (budgets[run], idle)
            assert r["seqs"] == r["decode"] + r["prefill_seqs"]
            assert r["step"] > last_step
            last_step = r["step"]
            assert r["ok"] is True
            for k in ("schedule_ms", "execute_ms", "update_ms", "emit_ms",
                      "pass_ms"):
                assert r[k] >= 0
            if r["target_ms"] is not None:  # sized by time: any budget
                assert r["decode"] > 0
                if targets[run] is not None:
                    assert r["target_ms"] == targets[run]
                else:
                    assert ratios[run] is not None
                assert r["predicted_ms"] >= 0
        elif r["ev"] == "cost_model":
            assert r["samples"] >= 1 and r["step"] <= last_step
            for k in ("fixed_ms", "per_token_ms", "per_logit_row_ms",
                      "per_1k_context_ms", "rms_ms"):
                assert r[k] >= 0
        else:
            assert r["ev"] == "request"
            assert r["id"] not in ids
            ids.add(r["id"])
            assert r["finish"] == "length"
            assert len(r["token_ms"]) == r["generated_tokens"]
            assert (r["queued_ms"] <= r["scheduled_ms"] <= r["first_token_ms"]
                    == r["token_ms"][0] <= r["token_ms"][-1]
                    <= r["finished_ms"])
            assert r["token_ms"] == sorted(r["token_ms"])
    counts = []
    cur = None
    for r in recs:
        if r["ev"] == "start":
            cur = 0
            counts.append(cur)
        elif r["ev"] == "request":
            counts[-1] += 1
    assert counts == [requests_per_run] * runs


@needs_model
def test_s2_side_by_side_with_trace(tmp_path):
    out, trace = tmp_path / "r.json", tmp_path / "t.jsonl"
    r = bench("-m", STORIES, "-t", "1", "--workload", "S2", "--s2-streams", "3",
              "--prompt-len", "8", "--output-len", "60", "--s2-long-prompt",
              "100", "--s2-long-count", "2", "--s2-long-output", "4",
              "--s2-interval", "0.02", "--prefill-chunk", "16",
              "--max-batched-tokens", "32", "--max-seqs", "8",
              "--json", str(out), "--trace", str(trace))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("## weft bench engine ")
    header = [l for l in r.stdout.splitlines() if l.startswith("| metric |")]
    assert header == ["| metric | budget 32 chunk 16 | unchunked (budget 2048) |"]
    assert "| stream ITL during prefill: p50 / p99 / max ms |" in r.stdout
    assert "| long-prompt TTFT p50 / max ms |" in r.stdout
    j = json.loads(out.read_text())
    assert j["workload"] == "S2"
    assert [x["prefill_chunk"] for x in j["runs"]] == [16, 0]
    for x in j["runs"]:
        assert x["completed"] == 5 and x["failed"] == 0
        assert x["output_tokens"] == 3 * 60 + 2 * 4
        assert x["s2"]["prefill_gaps"] + x["s2"]["base_gaps"] == 3 * 59
        assert x["s2"]["long_ttft_ms"]["max"] > 0
        assert x["engine"]["passes"] > 0
    recs = read_trace(trace)
    check_trace(recs, 2, 5, [32, 2048])
    gen = sum(r["generated_tokens"] for r in recs if r["ev"] == "request")
    assert gen == sum(x["output_tokens"] for x in j["runs"])
    passes = sum(1 for r in recs if r["ev"] == "pass")
    assert passes == sum(x["engine"]["passes"] for x in j["runs"])


@needs_model
def test_s2_with_an_itl_target(tmp_path):
    out, trace = tmp_path / "r.json", tmp_path / "t.jsonl"
    r = bench("-m", STORIES, "-t", "1", "--workload", "S2", "--s2-streams", "3",
              "--prompt-len", "8", "--output-len", "80", "--s2-long-prompt",
              "300", "--s2-long-count", "1", "--s2-long-output", "4",
              "--s2-interval", "0.05", "--prefill-chunk", "16",
              "--max-batched-tokens", "32", "--max-seqs", "8", "--no-unchunked",
              "--target-itl-ms", "2", "--target-itl-ratio", "1.5",
              "--json", str(out), "--trace", str(trace))
    assert r.returncode == 0, r.stderr
    header = [l for l in r.stdout.splitlines() if l.startswith("| metric |")]
    assert header == [
        "| metric | budget 32 chunk 16 | target 2 ms | target 1.5x decode |"]
    j = json.loads(out.read_text())
    assert [x["target_itl_ms"] for x in j["runs"]] == [None, 2, None]
    assert [x["target_itl_ratio"] for x in j["runs"]] == [None, None, 1.5]
    for x in j["runs"]:
        assert x["completed"] == 4 and x["failed"] == 0
    recs = read_trace(trace)
    check_trace(recs, 3, 4, [32, 32, 32])
    starts = [i for i, r in enumerate(recs) if r["ev"] == "start"]
    timed = [r for r in recs[starts[1]:] if r["ev"] == "pass"
             and r["target_ms"] is not None]
    assert timed, "no pass was sized by the target"
    assert any(r["ev"] == "cost_model" for r in recs[starts[1]:])


@needs_model
def test_s1_ladder_table(tmp_path):
    out = tmp_path / "r.json"
    r = bench("-m", STORIES, "-t", "1", "--workload", "S1", "--concurrency",
              "1,2", "--prompt-len", "16", "--output-len", "6",
              "--prefill-chunk", "8", "--max-batched-tokens", "16",
              "--max-seqs", "4", "--no-unchunked", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "| metric | budget 16 chunk 8 |" in r.stdout
    assert "| c=1 TTFT p50 / p99 ms |" in r.stdout
    assert "| c=2 TPOT mean ms |" in r.stdout
    j = json.loads(out.read_text())
    assert [x["concurrency"] for x in j["runs"]] == [1, 2]
    assert [x["completed"] for x in j["runs"]] == [4, 8]  # 4 * c
    for x in j["runs"]:
        assert x["tpot_ms"]["mean"] >= 0


@pytest.mark.parametrize("args", [
    ["--workload", "S9"],
    ["--workload", "S2", "--s2-long-count", "0"],
    ["--workload", "S1", "--concurrency", "0"],
    ["--trace", "/nonexistent-dir/t.jsonl", "-m", STORIES, "-n", "1"],
])
def test_bad_usage(args):
    if "-m" in args and not os.path.exists(STORIES):
        pytest.skip("no stories260K")
    r = bench(*args)
    assert r.returncode in (1, 2), r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
