#!/usr/bin/env python3
"""Writes the quantization goldens under tests/data/quant/ (one file per type).

Independent references:
  * gguf-py (`gguf.quants`, the PyPI `gguf` package): quantizes F16, BF16,
    Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4 and dequantizes all of those plus
    Q2_K..Q6_K and IQ4_NL, IQ4_XS.
  * optionally ggml itself (--ggml-lib path/to/libggml-base.so, e.g. the one
    llama-cpp-python ships): its quantize_row_*_ref quantizers for the
    K-quants (and Q8_K), IQ4_NL and IQ4_XS, which gguf-py cannot quantize (the
    llama.cpp built by tools/build_llamacpp.sh has one in its bin folder). Without it, K-quant
    files hold only random-but-valid blocks (dequantization goldens).

Usage (from the repo root):
  .venv/bin/python tools/make_quant_goldens.py \
      [--ggml-lib /work/refvenv/lib/python3.11/site-packages/llama_cpp/lib/libggml-base.so]

File format (little-endian), read by tests/tensor/quant_golden_test.cc:
  "WQG1" u32 version=1 u32 num_cases, then per case:
    u32 ggml type id, u32 rows, u32 cols, u32 flags
        (bit 0: input floats present; bit 1: bytes are a reference
         quantization of the input), char source[16], char name[16],
    [f32 input[rows*cols]], u8 bytes[rows*row_bytes], f32 dequant[rows*cols]
  `dequant` is the reference dequantization of `bytes` (gguf-py; for Q8_K,
  which gguf-py lacks, numpy's float32 d*q, a single exact multiply).
"""

import argparse
import ctypes
import os
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

SEED = 20240601
QK_K = 256

# Types and who can quantize them.
GGUF_QUANTIZES = {T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.MXFP4}
GGML_REF = {  # ggml quantize_row_*_ref names for ctypes
    T.Q4_0: "q4_0", T.Q4_1: "q4_1", T.Q5_0: "q5_0", T.Q5_1: "q5_1",
    T.Q8_0: "q8_0", T.Q2_K: "q2_K", T.Q3_K: "q3_K", T.Q4_K: "q4_K",
    T.Q5_K: "q5_K", T.Q6_K: "q6_K", T.Q8_K: "q8_K", T.IQ4_NL: "iq4_nl",
    T.IQ4_XS: "iq4_xs", T.MXFP4: "mxfp4",
}
ALL_TYPES = [T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0,
             T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K, T.IQ4_NL, T.IQ4_XS,
             T.MXFP4]


class Ggml:
    """ggml's reference quantizers through ctypes."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)

    def quantize(self, qtype, x):
        name = "quantize_row_%s_ref" % GGML_REF[qtype]
        fn = getattr(self.lib, name)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        fn.restype = None
        block, size = GGML_QUANT_SIZES[qtype]
        rows, cols = x.shape
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = np.zeros((rows, cols // block * size), dtype=np.uint8)
        for r in range(rows):  # row by row, as weft's QuantizeRow
            fn(x[r].ctypes.data, out[r].ctypes.data, cols)
        return out


def block_size(qtype):
    return GGML_QUANT_SIZES[qtype][0]


def special_blocks(qtype, rng):
    """Blocks of awkward values, one block (or 32 floats) each."""
    n = max(block_size(qtype), 32)
    out = [
        np.zeros(n),                                  # all zero
        np.full(n, 0.75),                             # constant
        -np.abs(rng.standard_normal(n)),              # all negative
        rng.standard_normal(n) * 1e-30,               # tiny (d underflows)
        rng.integers(-8, 8, n) * 0.5,                 # exact ties
        np.concatenate([[300.0], rng.standard_normal(n - 1) * 0.01]),  # outlier
        rng.standard_normal(n) * 1e-5,                # small
    ]
    if block_size(qtype) == 1:  # F16 / BF16: rounding edge cases
        edge = np.array([65504, 65519.99, 65520, -65536, 1e5, 6.1e-5,
                         5.96e-8, 2.98e-8, 2.99e-8, 1e-8, -0.0, 1 + 2**-11,
                         1 + 3 * 2**-11, 1 + 2**-8, 1 + 3 * 2**-8, 3.0e38,
                         np.inf, -np.inf, 1e-40, -1e-45, 0.1, -0.1, 1 / 3,
                         2049, 4097, 65535, 2**-24, 2**-25, 3 * 2**-26, 1.0,
                         -2.5, 7.0])
        out.append(edge)
        if qtype == T.BF16:
            out.append(np.array([np.nan] * 2 + [1.0] * 30))
    return np.concatenate(out).astype(np.float32)


def input_cases(qtype, rng):
    bs = block_size(qtype)
    k = bs == QK_K
    unit = max(bs, 32)
    cases = []
    rows, nblk = (3, 2) if k else (4, 5)
    cases.append(("normal", (rng.standard_normal((rows, nblk * unit)) * 0.02)))
    rows, nblk = (2, 2) if k else (2, 6)
    mag = 10.0 ** rng.uniform(-6, 4, (rows, nblk * unit))
    cases.append(("wide", mag * rng.choice([-1.0, 1.0], mag.shape)))
    cases.append(("special", special_blocks(qtype, rng).reshape(1, -1)))
    cases.append(("odd_rows", rng.standard_normal((5, unit)) * 0.5 + 0.1))
    return [(name, x.astype(np.float32)) for name, x in cases]


def random_blocks(qtype, rng, nblocks):
    """Random quant bits with finite, moderate fp16 scales."""
    block, size = GGML_QUANT_SIZES[qtype]
    b = rng.integers(0, 256, (nblocks, size), dtype=np.uint8)

    def put_f16(col, positive):
        v = rng.standard_normal(nblocks) * 0.05
        if positive:
            v = np.abs(v)
        b[:, col:col + 2] = v.astype(np.float16).view(np.uint8).reshape(-1, 2)

    if qtype in (T.Q4_0, T.Q5_0, T.Q8_0, T.IQ4_NL):
        put_f16(0, False)
    elif qtype in (T.Q4_1, T.Q5_1):
        put_f16(0, True)
        put_f16(2, False)
    elif qtype in (T.Q4_K, T.Q5_K):
        put_f16(0, True)
        put_f16(2, True)
    elif qtype == T.Q2_K:
        put_f16(size - 4, True)
        put_f16(size - 2, True)
    elif qtype == T.IQ4_XS:
        put_f16(0, False)
    elif qtype in (T.Q3_K, T.Q6_K):
        put_f16(size - 2, False)
    elif qtype == T.MXFP4:  # E8M0 exponents of moderate scales (2^-18 .. 2^11)
        b[:, 0] = rng.integers(110, 140, nblocks, dtype=np.uint8)
    elif qtype == T.Q8_K:
        d = (rng.standard_normal(nblocks) * 0.01).astype(np.float32)
        b[:, 0:4] = d.view(np.uint8).reshape(-1, 4)
    elif qtype in (T.F16,):
        v = (rng.standard_normal(nblocks * 32) * 10).astype(np.float16)
        return v.view(np.uint8).reshape(1, -1), 1, nblocks * 32
    elif qtype in (T.BF16,):
        v = rng.integers(0, 1 << 16, nblocks * 32, dtype=np.uint16)
        v[(v & 0x7f80) == 0x7f80] &= 0xbfff  # no inf/NaN
        return v.view(np.uint8).reshape(1, -1), 1, nblocks * 32
    return b.reshape(1, -1), 1, nblocks * block


def dequantize(qtype, data, rows, cols):
    data = data.reshape(rows, -1)
    if qtype == T.Q8_K:
        blocks = data.reshape(-1, GGML_QUANT_SIZES[qtype][1])
        d = blocks[:, 0:4].copy().view(np.float32)
        q = blocks[:, 4:4 + QK_K].copy().view(np.int8).astype(np.float32)
        return (d * q).reshape(rows, cols)
    return quants.dequantize(data, qtype).reshape(rows, cols).astype(np.float32)


def write_file(path, cases):
    with open(path, "wb") as f:
        f.write(b"WQG1" + struct.pack("<II", 1, len(cases)))
        for c in cases:
            flags = (1 if c["input"] is not None else 0) | (2 if c["ref_quant"] else 0)
            f.write(struct.pack("<IIII", int(c["type"]), c["rows"], c["cols"], flags))
            f.write(c["source"].encode().ljust(16, b"\0")[:16])
            f.write(c["name"].encode().ljust(16, b"\0")[:16])
            if c["input"] is not None:
                f.write(np.ascontiguousarray(c["input"], dtype="<f4").tobytes())
            f.write(np.ascontiguousarray(c["bytes"], dtype=np.uint8).tobytes())
            f.write(np.ascontiguousarray(c["dequant"], dtype="<f4").tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "quant"))
    ap.add_argument("--ggml-lib", default=None,
                    help="libggml-base.so exporting quantize_row_*_ref")
    ap.add_argument("--only", default=None,
                    help="write only these types' files (comma-separated, e.g. iq4_nl)")
    args = ap.parse_args()
    only = None if args.only is None else set(args.only.lower().split(","))
    ggml = Ggml(args.ggml_lib) if args.ggml_lib else None
    os.makedirs(args.out, exist_ok=True)
    total = 0
    for qtype in ALL_TYPES:
        if only is not None and qtype.name.lower() not in only:
            continue
        rng = np.random.default_rng([SEED, int(qtype)])
        cases = []
        for name, x in input_cases(qtype, rng):
            rows, cols = x.shape
            if qtype in GGUF_QUANTIZES:
                with np.errstate(over="ignore"):  # F16 overflow -> inf is wanted
                    q = quants.quantize(x, qtype).view(np.uint8).reshape(rows, -1)
                source = "gguf-py"
                if ggml is not None and qtype in GGML_REF:
                    agree = np.array_equal(ggml.quantize(qtype, x), q)
                    print("  %s/%s: gguf-py %s ggml" %
                          (qtype.name, name, "==" if agree else "!="))
            elif ggml is not None and qtype in GGML_REF:
                q = ggml.quantize(qtype, x)
                source = "ggml-ref"
            else:
                continue
            # ggml's IQ4_NL reference leaves a block too small to scale
            # (the all-zero and 1e-30 blocks of "special") with whatever
            # codes its stack buffer held: those bytes are not a reference.
            ref = not (qtype == T.IQ4_NL and name == "special")
            cases.append(dict(type=qtype, rows=rows, cols=cols, source=source,
                              name=name, input=x, ref_quant=ref, bytes=q,
                              dequant=dequantize(qtype, q, rows, cols)))
        data, rows, cols = random_blocks(qtype, rng, 4)
        cases.append(dict(type=qtype, rows=rows, cols=cols, source="random",
                          name="random_blocks", input=None, ref_quant=False,
                          bytes=data, dequant=dequantize(qtype, data, rows, cols)))
        path = os.path.join(args.out, "%s.bin" % qtype.name.lower())
        write_file(path, cases)
        size = os.path.getsize(path)
        total += size
        print("%-6s %2d cases %7d bytes  (%s)" % (
            qtype.name, len(cases), size, ", ".join(sorted({c["source"] for c in cases}))))
    print("total %d bytes" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
