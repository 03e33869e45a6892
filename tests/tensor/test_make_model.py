"""`weft make-model` checked with an independent reader: gguf-py's GGUFReader
(tensor names, shapes, types and metadata as llama.cpp expects them) and
gguf.quants (the weights dequantize to the intended distribution).

Run by ctest (label tool) with the project venv; WEFT_BINARY and
WEFT_SHARED_MODELS_DIR come from the environment.
"""

import hashlib
import os
import subprocess

import numpy as np
import pytest
from gguf import GGUFReader, GGMLQuantizationType as T
from gguf import quants

WEFT = os.environ.get("WEFT_BINARY", "build/release/weft")
MODELS = os.environ.get("WEFT_SHARED_MODELS_DIR", "/work/shared/models")
SPM = os.path.join(MODELS, "ggml-vocab-llama-spm.gguf")
GPT2 = os.path.join(MODELS, "ggml-vocab-gpt-2.gguf")


def make(tmp_path, name, *args):
    out = str(tmp_path / name)
    r = subprocess.run([WEFT, "make-model", *args, "-o", out],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def field(reader, key):
    return reader.fields[key].contents()


def expected_tensors(arch, layers, tied):
    names = {"token_embd.weight", "output_norm.weight"}
    if not tied:
        names.add("output.weight")
    per_layer = ["attn_norm.weight", "attn_q.weight", "attn_k.weight",
                 "attn_v.weight", "attn_output.weight", "ffn_norm.weight",
                 "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"]
    if arch == "qwen2":
        per_layer += ["attn_q.bias", "attn_k.bias", "attn_v.bias"]
    if arch == "gemma3":
        per_layer += ["attn_q_norm.weight", "attn_k_norm.weight",
                      "post_attention_norm.weight", "post_ffw_norm.weight"]
    for i in range(layers):
        names |= {"blk.%d.%s" % (i, n) for n in per_layer}
    return names


CASES = [
    # arch, dim, layers, heads, kv, ffn, head_dim, vocab, type
    ("llama", 64, 2, 4, 2, 96, 16, SPM, "q8_0"),
    ("qwen2", 128, 2, 4, 1, 256, 32, GPT2, "q4_0"),
    ("gemma3", 256, 3, 4, 1, 512, 64, SPM, "q4_k"),
]


@pytest.mark.parametrize("arch,dim,layers,heads,kv,ffn,head_dim,vocab,qtype", CASES)
def test_layout_and_metadata(tmp_path, arch, dim, layers, heads, kv, ffn,
                             head_dim, vocab, qtype):
    args = ["--arch", arch, "--dim", str(dim), "--layers", str(layers),
            "--heads", str(heads), "--kv-heads", str(kv), "--ffn", str(ffn),
            "--vocab-from", vocab, "--type", qtype, "--ctx", "1024"]
    if arch == "gemma3":
        args += ["--head-dim", str(head_dim)]
    path = make(tmp_path, "m.gguf", *args)
    r = GGUFReader(path)
    v = GGUFReader(vocab)
    n_vocab = len(v.fields["tokenizer.ggml.tokens"].data)
    tied = arch == "gemma3"

    # Metadata.
    assert field(r, "general.architecture") == arch
    assert field(r, "general.quantization_version") == 2
    want_ftype = {"q8_0": 7, "q4_0": 2, "q4_k": 14}[qtype]
    assert field(r, "general.file_type") == want_ftype
    a = arch + "."
    assert field(r, a + "context_length") == 1024
    assert field(r, a + "embedding_length") == dim
    assert field(r, a + "block_count") == layers
    assert field(r, a + "feed_forward_length") == ffn
    assert field(r, a + "attention.head_count") == heads
    assert field(r, a + "attention.head_count_kv") == kv
    assert field(r, a + "attention.key_length") == head_dim
    assert field(r, a + "attention.value_length") == head_dim
    eps = field(r, a + "attention.layer_norm_rms_epsilon")
    assert eps == pytest.approx(1e-5 if arch == "llama" else 1e-6)
    base = field(r, a + "rope.freq_base")
    assert base == pytest.approx(1e4 if arch == "llama" else 1e6)
    if arch == "gemma3":
        assert field(r, "gemma3.attention.sliding_window") == 512
    # The whole vocabulary, key for key.
    vocab_keys = [k for k in v.fields if k.startswith("tokenizer.")]
    model_keys = [k for k in r.fields if k.startswith("tokenizer.")]
    assert model_keys == vocab_keys
    for k in vocab_keys:
        assert r.fields[k].types == v.fields[k].types, k
        assert r.fields[k].contents() == v.fields[k].contents(), k

    # Tensors.
    tensors = {t.name: t for t in r.tensors}
    assert set(tensors) == expected_tensors(arch, layers, tied)
    qt = {"q8_0": T.Q8_0, "q4_0": T.Q4_0, "q4_k": T.Q4_K}[qtype]
    q_dim, kv_dim = heads * head_dim, kv * head_dim
    shapes = {
        "token_embd.weight": [dim, n_vocab],
        "output.weight": [dim, n_vocab],
        "output_norm.weight": [dim],
        "blk.0.attn_q.weight": [dim, q_dim],
        "blk.0.attn_k.weight": [dim, kv_dim],
        "blk.0.attn_v.weight": [dim, kv_dim],
        "blk.0.attn_output.weight": [q_dim, dim],
        "blk.0.ffn_gate.weight": [dim, ffn],
        "blk.0.ffn_up.weight": [dim, ffn],
        "blk.0.ffn_down.weight": [ffn, dim],
        "blk.0.attn_q.bias": [q_dim],
        "blk.0.attn_k.bias": [kv_dim],
        "blk.0.attn_q_norm.weight": [head_dim],
        "blk.0.post_ffw_norm.weight": [dim],
    }
    for name, shape in shapes.items():
        if name in tensors:
            assert [int(x) for x in tensors[name].shape] == shape, name
    for t in r.tensors:
        if len(t.shape) == 1:
            assert t.tensor_type == T.F32, t.name
        else:
            assert t.tensor_type == qt, t.name

    # Values: weights ~ N(0, 0.02), norms ~ 1.
    w = quants.dequantize(tensors["blk.0.ffn_up.weight"].data, qt)
    assert abs(float(w.mean())) < 0.002
    assert 0.017 < float(w.std()) < 0.023
    n = tensors["blk.1.attn_norm.weight"].data
    assert abs(float(n.mean()) - 1.0) < 0.01 and float(n.std()) < 0.02
    assert np.all(np.isfinite(quants.dequantize(tensors["token_embd.weight"].data, qt)))


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_deterministic_and_thread_independent(tmp_path):
    base = ["--arch", "llama", "--dim", "256", "--layers", "1", "--heads", "4",
            "--ffn", "512", "--vocab-from", SPM, "--type", "q6_k"]
    a = make(tmp_path, "a.gguf", *base, "--threads", "1")
    b = make(tmp_path, "b.gguf", *base, "--threads", "3")
    c = make(tmp_path, "c.gguf", *base, "--seed", "2")
    assert sha(a) == sha(b)
    assert sha(a) != sha(c)


def test_fallback_for_rows_the_type_cannot_hold(tmp_path):
    path = make(tmp_path, "f.gguf", "--arch", "llama", "--dim", "64",
                "--layers", "1", "--heads", "2", "--ffn", "96",
                "--vocab-from", SPM, "--type", "q4_k")
    tensors = {t.name: t for t in GGUFReader(path).tensors}
    assert tensors["blk.0.ffn_up.weight"].tensor_type == T.Q8_0    # rows of 64
    assert tensors["blk.0.ffn_down.weight"].tensor_type == T.Q8_0  # rows of 96


def test_tie_embeddings_flag(tmp_path):
    common = ["--dim", "64", "--layers", "1", "--heads", "2", "--ffn", "64",
              "--vocab-from", SPM]
    p = make(tmp_path, "t.gguf", "--arch", "llama", "--tie-embeddings", *common)
    assert "output.weight" not in {t.name for t in GGUFReader(p).tensors}
    p = make(tmp_path, "u.gguf", "--arch", "gemma3", "--no-tie-embeddings", *common)
    assert "output.weight" in {t.name for t in GGUFReader(p).tensors}


@pytest.mark.parametrize("args", [
    ["--arch", "gpt2"],
    ["--type", "iq2_xxs"],
    ["--type", "q8_K"],
    ["--heads", "3", "--kv-heads", "2"],
    ["--dim", "0"],
    ["--dim", "-5"],
    ["--vocab-from", "/nonexistent.gguf"],
    ["--vocab-from", __file__],
    ["--layers", "99999999"],
    ["--std", "-1"],
])
def test_bad_usage_exits_2(tmp_path, args):
    base = {"--arch": "llama", "--dim": "64", "--layers": "1", "--heads": "2",
            "--ffn": "64", "--vocab-from": SPM, "--type": "q8_0"}
    for i in range(0, len(args), 2):
        base[args[i]] = args[i + 1]
    cmd = [WEFT, "make-model", "-o", str(tmp_path / "x.gguf")]
    for k, val in base.items():
        cmd += [k, val]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (args, r.stderr)
    assert r.stderr.strip() and len(r.stderr.strip().splitlines()) == 1
    assert not os.path.exists(tmp_path / "x.gguf")


def test_missing_output_exits_2():
    r = subprocess.run([WEFT, "make-model", "--arch", "llama", "--dim", "64",
                        "--layers", "1", "--heads", "2", "--ffn", "64",
                        "--vocab-from", SPM], capture_output=True, text=True)
    assert r.returncode == 2


def test_loads_in_llama_cpp_if_available(tmp_path):
    llama_cpp = pytest.importorskip("llama_cpp")
    path = make(tmp_path, "l.gguf", "--arch", "qwen2", "--dim", "128",
                "--layers", "2", "--heads", "4", "--kv-heads", "2",
                "--ffn", "256", "--vocab-from", GPT2, "--type", "q4_0")
    llm = llama_cpp.Llama(model_path=path, n_ctx=256, verbose=False)
    out = llm("Hello", max_tokens=4, temperature=0.0)
    assert out["usage"]["completion_tokens"] > 0


@pytest.mark.parametrize("arch", ["qwen3", "gemma2", "phi3"])
def test_newer_families_layout(tmp_path, arch):
    """The tensors and keys llama.cpp's qwen3 / gemma2 / phi3 loaders read
    (src/models/*.cpp): q/k norms, post norms and a tied output, fused
    attn_qkv and gate+up ffn_up with LongRoPE factors."""
    path = make(tmp_path, "n.gguf", "--arch", arch, "--dim", "64", "--layers", "2",
                "--heads", "4", "--kv-heads", "2", "--ffn", "96", "--vocab-from", SPM,
                "--type", "q8_0", "--sliding-window", "16")
    r = GGUFReader(path)
    t = {x.name: [int(d) for d in x.shape] for x in r.tensors}
    a = arch + "."
    if arch == "qwen3":
        assert t["blk.1.attn_q_norm.weight"] == [16]
        assert t["blk.1.attn_k_norm.weight"] == [16]
        assert "blk.0.attn_q.bias" not in t and "output.weight" in t
    if arch == "gemma2":
        assert "output.weight" not in t
        assert t["blk.1.post_attention_norm.weight"] == [64]
        assert t["blk.1.post_ffw_norm.weight"] == [64]
        assert field(r, a + "attention.sliding_window") == 16
        assert field(r, a + "attn_logit_softcapping") == pytest.approx(50.0)
        assert field(r, a + "final_logit_softcapping") == pytest.approx(30.0)
    if arch == "phi3":
        assert t["blk.1.attn_qkv.weight"] == [64, 64 + 2 * 32]
        assert t["blk.1.ffn_up.weight"] == [64, 2 * 96]
        assert "blk.1.ffn_gate.weight" not in t and "blk.1.attn_q.weight" not in t
        assert t["rope_factors_long.weight"] == [8]
        assert t["rope_factors_short.weight"] == [8]
        assert field(r, a + "rope.scaling.attn_factor") == pytest.approx(1.1902, abs=1e-4)
        assert field(r, a + "rope.scaling.original_context_length") == 4096
        assert "phi3" not in field(r, "general.name")


def test_expert_type_gives_gpt_oss_its_mxfp4_experts(tmp_path):
    """--expert-type: the *_exps tensors in their own type (gpt-oss files keep
    them in MXFP4, the rest in a float type or Q8_0), file type MXFP4_MOE; the
    MXFP4 experts dequantize (gguf-py) to the intended distribution."""
    path = make(tmp_path, "o.gguf", "--arch", "gpt-oss", "--dim", "64", "--layers", "1",
                "--heads", "4", "--kv-heads", "2", "--head-dim", "16", "--ffn", "32",
                "--experts", "4", "--experts-used", "2", "--vocab-from", SPM,
                "--type", "q8_0", "--expert-type", "mxfp4", "--std", "0.1")
    r = GGUFReader(path)
    types = {t.name: t.tensor_type for t in r.tensors}
    for n in ("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"):
        assert types[f"blk.0.{n}.weight"] == T.MXFP4, n
        assert types[f"blk.0.{n}.bias"] == T.F32, n
    assert types["blk.0.attn_q.weight"] == T.Q8_0
    assert types["blk.0.ffn_gate_inp.weight"] == T.F32
    assert types["output.weight"] == T.Q8_0
    assert field(r, "general.file_type") == 38  # LLAMA_FTYPE_MOSTLY_MXFP4_MOE
    up = next(t for t in r.tensors if t.name == "blk.0.ffn_up_exps.weight")
    w = quants.dequantize(up.data, up.tensor_type)
    assert w.size == 4 * 32 * 64
    assert 0.07 < float(np.std(w)) < 0.13
    r2 = subprocess.run([WEFT, "make-model", "--arch", "gpt-oss", "--dim", "64",
                         "--layers", "1", "--heads", "4", "--ffn", "32", "--experts", "4",
                         "--experts-used", "2", "--vocab-from", SPM, "--expert-type", "q9",
                         "-o", str(tmp_path / "bad.gguf")], capture_output=True, text=True)
    assert r2.returncode == 2 and "expert-type" in r2.stderr
