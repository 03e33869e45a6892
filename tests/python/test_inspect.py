"""Cross-checks `weft inspect --json --tensors` against gguf-py's GGUFReader.

Env: WEFT_BINARY, WEFT_SHARED_MODELS_DIR, WEFT_DEFAULT_MODEL, WEFT_GEMMA_MODEL (set by ctest).
"""
import json
import math
import os
import subprocess

import gguf
import pytest

WEFT = os.environ.get("WEFT_BINARY", "build/release/weft")
SHARED = os.environ.get("WEFT_SHARED_MODELS_DIR", "../shared/models")
# Gemma 3 270M (a base model): what the older tests serve; the default
# (chat) model is SmolLM2-135M-Instruct.
GEMMA_MODEL = os.environ.get("WEFT_GEMMA_MODEL",
                             "models/gemma-3-270m-q4_k_m.gguf")
CHAT_MODEL = os.environ.get("WEFT_DEFAULT_MODEL",
                            "models/smollm2-135m-instruct-q4_1.gguf")

MODELS = [
    os.path.join(SHARED, "stories260K.gguf"),
    GEMMA_MODEL,
    os.path.join(SHARED, "ggml-vocab-gpt-2.gguf"),
]


def run(*args):
    return subprocess.run([WEFT, "inspect", *args], capture_output=True,
                          text=True, timeout=600)


def inspect_json(path):
    p = run("--json", "--tensors", path)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def field(reader, key):
    f = reader.fields.get(key)
    return None if f is None else f.contents()


@pytest.fixture(scope="module", params=MODELS, ids=os.path.basename)
def pair(request):
    path = request.param
    return gguf.GGUFReader(path), inspect_json(path), path


def test_header(pair):
    reader, j, path = pair
    assert j["file_size"] == os.path.getsize(path)
    assert j["gguf_version"] == field(reader, "GGUF.version")
    assert j["alignment"] == reader.alignment
    assert j["tensor_count"] == len(reader.tensors)
    # gguf-py counts its three header pseudo-fields too.
    assert j["metadata_count"] == len(reader.fields) - 3
    if reader.tensors:
        assert j["data_offset"] == reader.data_offset


def test_tensors(pair):
    reader, j, _ = pair
    ours = j["tensors"]
    assert [t["name"] for t in ours] == [t.name for t in reader.tensors]
    for mine, ref in zip(ours, reader.tensors):
        assert mine["type"].lower() == ref.tensor_type.name.lower(), ref.name
        assert mine["shape"] == [int(d) for d in ref.shape], ref.name
        assert mine["offset"] == ref.data_offset, ref.name
        assert mine["bytes"] == ref.n_bytes, ref.name
    assert j["parameters"] == sum(int(t.n_elements) for t in reader.tensors)
    mix = {}
    for t in reader.tensors:
        c = mix.setdefault(t.tensor_type.name.lower(), [0, 0])
        c[0] += 1
        c[1] += int(t.n_bytes)
    assert {q["type"].lower(): [q["tensors"], q["bytes"]]
            for q in j["quantization"]} == mix


def test_summary_metadata(pair):
    reader, j, _ = pair
    arch = field(reader, "general.architecture")
    assert j["architecture"] == arch
    assert j["name"] == field(reader, "general.name")
    if arch is not None:
        for ours, key in [("context_length", "context_length"),
                          ("block_count", "block_count"),
                          ("head_count", "attention.head_count"),
                          ("head_count_kv", "attention.head_count_kv"),
                          ("embedding_length", "embedding_length"),
                          ("feed_forward_length", "feed_forward_length")]:
            assert j[ours] == field(reader, f"{arch}.{key}"), key
    tokens = field(reader, "tokenizer.ggml.tokens")
    assert j["vocab_size"] == (None if tokens is None else len(tokens))
    assert j["tokenizer_model"] == field(reader, "tokenizer.ggml.model")
    assert j["has_chat_template"] == ("tokenizer.chat_template"
                                      in reader.fields)


def test_all_metadata_values(pair):
    reader, j, _ = pair
    meta = j["metadata"]
    for key, f in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        assert key in meta, key
        ref = f.contents()
        mine = meta[key]
        if isinstance(ref, list):
            if isinstance(mine, dict):  # long arrays are summarized
                assert mine["count"] == len(ref), key
                mine, ref = mine["head"], ref[:len(mine["head"])]
            assert len(mine) == len(ref), key
            for a, b in zip(mine, ref):
                if isinstance(b, float):
                    assert math.isclose(a, b, rel_tol=1e-6), key
                else:
                    assert a == b, key
        elif isinstance(ref, float):
            assert math.isclose(mine, ref, rel_tol=1e-6), key
        else:
            assert mine == ref, key


def test_known_values():
    j = inspect_json(os.path.join(SHARED, "stories260K.gguf"))
    assert j["architecture"] == "llama"
    assert j["block_count"] == 5
    assert j["head_count"] == 8
    assert j["head_count_kv"] == 4
    assert j["head_dim"] == 8  # 64 / 8, no key_length key
    assert j["vocab_size"] == 512
    assert j["tokenizer_model"] == "llama"
    assert j["has_chat_template"] is False
    # No template in the file: the built-in one its vocabulary supports.
    assert j["chat_template"] == "builtin:plain"
    g = inspect_json(GEMMA_MODEL)
    assert g["chat_template"] == "builtin:gemma"
    assert inspect_json(CHAT_MODEL)["chat_template"] == "gguf"
    assert g["architecture"] == "gemma3"
    assert g["head_dim"] == 256  # gemma3.attention.key_length
    assert g["vocab_size"] == 262144
    assert {q["type"] for q in g["quantization"]} == {
        "f32", "q5_0", "q4_K", "q8_0", "q6_K"}
    # Which kernels multiply by each type: every quantized format Weft serves
    # is repacked for the x8 tiles, the default model's Q4_1 too.
    assert {q["type"]: q["matmul"] for q in g["quantization"]} == {
        "f32": "simd", "q5_0": "x8", "q4_K": "x8", "q8_0": "x8", "q6_K": "x8"}
    smol = {q["type"]: q["matmul"]
            for q in inspect_json(CHAT_MODEL)["quantization"]}
    assert smol == {"q4_1": "x8", "q8_0": "x8", "f32": "simd"}


def test_text_output_and_system():
    p = run(os.path.join(SHARED, "stories260K.gguf"))
    assert p.returncode == 0, p.stderr
    assert "architecture:" in p.stdout and "llama" in p.stdout
    p = run("--system", "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)["system"]
    assert s["logical_cores"] >= 1
    assert set(s["features"]) >= {"sse4.2", "avx", "avx2", "fma", "f16c",
                                  "avx512f", "avx512bw", "avx512vl",
                                  "avx512dq", "avx512_vnni", "avx512_bf16",
                                  "avx_vnni"}
    p = run("--system")
    assert p.returncode == 0 and "cpu features:" in p.stdout


def test_bad_input_exit_code_2(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + (1).to_bytes(4, "little") + bytes(16))
    for args in [[str(bad)], [str(tmp_path / "missing.gguf")], [],
                 ["a.gguf", "b.gguf"]]:
        p = run(*args)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr
    p = run(str(bad))
    assert p.stderr.count("\n") == 1, p.stderr
    assert "offset 4: unsupported GGUF version 1" in p.stderr
    # A truncated real file: one line naming file and offset, exit 2.
    data = open(os.path.join(SHARED, "stories260K.gguf"), "rb").read()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[:5000])
    p = run(str(cut))
    assert p.returncode == 2
    assert str(cut) in p.stderr and "offset" in p.stderr
    assert p.stderr.count("\n") == 1, p.stderr
