#!/usr/bin/env python3
"""Writes a draft model made of a GGUF model's first N blocks (its
embeddings, first N layers, output norm and head; the same vocabulary):
an early-exit "self draft" for `weft serve --spec draft` when no smaller
model of the same family exists.

Usage: truncate.py IN.gguf N OUT.gguf
"""
import sys

import gguf


def main():
    src, n, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    r = gguf.GGUFReader(src)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    w = gguf.GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        t = f.types[0]
        if name == f"{arch}.block_count":
            w.add_uint32(name, n)
        elif t == gguf.GGUFValueType.ARRAY:
            sub = f.types[-1]
            if sub == gguf.GGUFValueType.STRING:
                vals = [bytes(f.parts[i]).decode("utf-8", "surrogateescape")
                        for i in f.data]
            else:
                vals = [f.parts[i].tolist()[0] for i in f.data]
            w.add_key_value(name, vals, t, sub_type=sub)
        elif t == gguf.GGUFValueType.STRING:
            w.add_key_value(name, bytes(f.parts[-1]).decode("utf-8"), t)
        else:
            w.add_key_value(name, f.parts[-1].tolist()[0], t)
    for t in r.tensors:
        if t.name.startswith("blk.") and int(t.name.split(".")[1]) >= n:
            continue
        # t.data is the row-major array (bytes per row for quantized
        # types), which add_tensor turns back into the GGUF shape.
        w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
