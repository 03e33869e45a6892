"""Writes the seed corpus of gguf_fuzz to tests/fuzz/corpus/gguf/.

Small valid GGUF files made with gguf-py (an independent writer): every
metadata type, nested arrays, several tensor types, version 2, a custom
alignment, plus the header region of stories260K.gguf (its metadata and
tensor infos, with the tensor data cut off).

usage: .venv/bin/python tests/fuzz/make_gguf_corpus.py [SHARED_MODELS_DIR]
"""
import os
import struct
import sys
import tempfile

import numpy as np
import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "gguf")


def write(name, build, alignment=None):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, name)
        w = gguf.GGUFWriter(path, "llama")
        if alignment is not None:
            w.add_custom_alignment(alignment)
        build(w)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        data = open(path, "rb").read()
    open(os.path.join(OUT, name), "wb").write(data)
    return data


def all_types(w):
    w.add_uint8("u8", 200)
    w.add_int8("i8", -3)
    w.add_uint16("u16", 60000)
    w.add_int16("i16", -300)
    w.add_uint32("llama.block_count", 2)
    w.add_int32("i32", -7)
    w.add_float32("f32", 0.5)
    w.add_bool("b", True)
    w.add_string("s", "h\u00e9llo")
    w.add_uint64("u64", 1 << 40)
    w.add_int64("i64", -(1 << 40))
    w.add_float64("f64", 0.25)
    w.add_array("tokenizer.ggml.tokens", ["a", "bb", "ccc"])
    w.add_array("tokenizer.ggml.scores", [0.5, -1.0, 2.0])
    w.add_array("tokenizer.ggml.token_type", [1, 2, 3])
    w.add_array("nested", [[1, 2], [3]])


def tensors(w):
    w.add_string("general.name", "tiny")
    w.add_tensor("a.weight", np.arange(8, dtype=np.float32).reshape(2, 4))
    w.add_tensor("b.weight", np.ones(16, dtype=np.float16))
    w.add_tensor("c.weight", np.zeros((2, 34), dtype=np.uint8),
                 raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("d.weight", np.zeros((1, 144), dtype=np.uint8),
                 raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    w.add_tensor("e.bias", np.arange(3, dtype=np.int32))


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        HERE, "..", "..", "..", "shared", "models")
    os.makedirs(OUT, exist_ok=True)
    write("all_types.gguf", all_types)
    write("tensors.gguf", tensors)
    write("tensors_align64.gguf", tensors, alignment=64)
    write("empty.gguf", lambda w: None)
    v3 = write("one_tensor.gguf", lambda w: w.add_tensor(
        "t", np.ones(4, dtype=np.float32)))
    # The same file as version 2 (identical layout for little-endian).
    v2 = bytearray(v3)
    struct.pack_into("<I", v2, 4, 2)
    open(os.path.join(OUT, "one_tensor_v2.gguf"), "wb").write(bytes(v2))
    stories = open(os.path.join(shared, "stories260K.gguf"), "rb").read()
    reader = gguf.GGUFReader(os.path.join(shared, "stories260K.gguf"))
    open(os.path.join(OUT, "stories260K_header.gguf"), "wb").write(
        stories[:reader.data_offset])
    for f in sorted(os.listdir(OUT)):
        print(f, os.path.getsize(os.path.join(OUT, f)))


if __name__ == "__main__":
    main()
