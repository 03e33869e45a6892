"""A forward pass per weight format against the numpy reference: a small
synthetic llama (`weft make-model --type T`, random weights) run by
`weft run` at temperature 0 with logprobs, and by tools/reference_forward.py (float64 activations,
weights decoded by gguf-py's dequantizers). The formats are the ones whose
MatMul kernels are newest (Q4_1, Q5_1, IQ4_NL, IQ4_XS, Q2_K, Q3_K, Q5_K and
MXFP4 in the x8 layout); every matrix of the model has the type, so a wrong block
formula moves every logit.

Env: WEFT_BINARY, WEFT_SHARED_MODELS_DIR, WEFT_SOURCE_DIR (set by ctest).
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

WEFT = os.environ.get("WEFT_BINARY", "build/release/weft")
SHARED = os.environ.get("WEFT_SHARED_MODELS_DIR", "../shared/models")
ROOT = os.environ.get("WEFT_SOURCE_DIR", os.getcwd())
sys.path.insert(0, os.path.join(ROOT, "tools"))
from reference_forward import RefModel  # noqa: E402

PROMPT = "The quick brown fox jumps over the"
STEPS = 8
# "[1] 504 'The' logprob -0.9657 rank 1 | ..." (weft run --logprobs, stderr)
LOGPROB = re.compile(r"^\[(\d+)\] (\d+) .* logprob (-?[\d.]+) rank", re.M)


def run(*args):
    r = subprocess.run([WEFT, *args], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    return r


@pytest.mark.parametrize("qtype", ["q4_1", "q5_1", "iq4_nl", "iq4_xs", "q2_k", "q3_k", "q5_k",
                                   "mxfp4"])
def test_greedy_tokens_and_logprobs_match_reference(tmp_path, qtype):
    path = str(tmp_path / f"{qtype}.gguf")
    # dim and ffn multiples of 256, so IQ4_XS holds every matrix too.
    run("make-model", "--arch", "llama", "--dim", "256", "--layers", "2",
        "--heads", "4", "--kv-heads", "2", "--ffn", "512", "--vocab-from",
        os.path.join(SHARED, "ggml-vocab-gpt-2.gguf"), "--type", qtype,
        "--seed", "3", "--std", "0.2", "-o", path)
    ids = [int(t) for t in
           run("tokenize", path, PROMPT, "--ids-only").stdout.split()]
    info = run("inspect", path, "--json").stdout
    assert f'"type":"{qtype}"' in info.replace(" ", "").lower(), info[:2000]
    r = run("run", "-m", path, "-p", PROMPT, "-n", str(STEPS), "--temp", "0",
            "--logprobs", "1", "--threads", "2", "--no-echo")
    got = [(int(m.group(2)), float(m.group(3)))
           for m in LOGPROB.finditer(r.stderr)]
    assert len(got) == STEPS, r.stderr

    ref = RefModel(path)
    toks, margins, _ = ref.greedy(ids, STEPS)
    # Teacher-forced on the reference's tokens: each step's logprob of its
    # token and the step's logit tolerance of the int8-activation path
    # (tests/model/golden_test.cc's Int8Tolerance: 0.008 relative error per
    # quantized matmul input, sqrt(4 * layers + 1) inputs, times the largest
    # logit; a logprob moves by at most twice a logit's error).
    eps = 3.5 / (127 * np.sqrt(12)) * np.sqrt(4 * 2 + 1)
    cache = ref.new_cache()
    logits = ref.forward(ids, 0, cache, all_logits=False)[-1]
    ref_lp, tol = [], []
    for i, t in enumerate(toks):
        ls = logits - logits.max()
        ref_lp.append(float(ls[t] - np.log(np.exp(ls).sum())))
        tol.append(2 * eps * float(np.abs(logits).max()))
        logits = ref.forward([t], len(ids) + i, cache, all_logits=False)[-1]
    print(f"{qtype}: weft {got}\nreference {list(zip(toks, ref_lp))}\n"
          f"margins {np.round(margins, 3).tolist()}\ntolerances "
          f"{np.round(tol, 3).tolist()}")
    agreed = 0
    for i in range(STEPS):
        if got[i][0] != toks[i]:
            # Only a near-tie may flip on the int8 path; past it the two
            # continue different texts.
            assert margins[i] <= 2 * tol[i], (i, got[i], toks[i])
            break
        assert abs(got[i][1] - ref_lp[i]) <= tol[i], (i, got[i], ref_lp[i])
        agreed += 1
    assert agreed >= 1
