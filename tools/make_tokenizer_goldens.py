#!/usr/bin/env python3
"""Makes the tokenizer goldens under tests/data/tokenizer/.

Two independent references:
  * sentencepiece (PyPI) with shared/models/llama2-tokenizer.model ->
    llama2_sentencepiece.json, compared against Weft's llama tokenizer on
    ggml-vocab-llama-spm.gguf (the same Llama 2 vocabulary).
  * llama-cpp-python (Llama(vocab_only=True).tokenize / llama_detokenize)
    with the default Gemma 3 model and stories260K.gguf ->
    gemma3_llamacpp.json, stories260k_llamacpp.json.

Run each part with a Python that has the package:
  .venv/bin/python tools/make_tokenizer_goldens.py --sentencepiece
  /work/refvenv/bin/python tools/make_tokenizer_goldens.py --llamacpp
Inputs are stored hex-encoded so that invalid UTF-8 survives JSON.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "tests", "data", "tokenizer")
SHARED = os.environ.get("WEFT_SHARED_MODELS_DIR",
                        os.path.join(ROOT, "..", "shared", "models"))
DEFAULT_MODEL = os.environ.get(
    "WEFT_GEMMA_MODEL", os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf"))


def corpus():
    """Tricky strings (str) for every reference."""
    texts = [
        "", " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\t\n", " \n ",
        "Hello world", " Hello world", "  Hello  world  ", "Hello\tworld\n",
        "hello", "HELLO", "Hello, World! How are you?",
        "The quick brown fox jumps over the lazy dog.",
        "      leading spaces", "trailing spaces      ", "a  b   c    d     e",
        "1", "12", "123", "1234", "12345", "3.14159", "1,000,000", "2024-01-15",
        "0xDEADBEEF", "1e-10", "42 apples and 7 oranges",
        "def foo(x):\n    return x * 2\n",
        "int main() {\n\tprintf(\"hi\\n\");\n\treturn 0;\n}\n",
        "if (a && b || !c) { x += 1; } // comment",
        "<html><body><p>Hi</p></body></html>",
        "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
        "emoji: 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇺🇸",
        "🦙🦙🦙", "❤️", "✨ sparkle ✨",
        "中文测试：你好，世界！", "日本語のテキストです。", "한국어 텍스트",
        "Ελληνικά κείμενα", "Русский текст, с пунктуацией.",
        "العربية نص", "עברית", "हिन्दी पाठ", "ไทย",
        "e\u0301 vs \u00e9", "a\u0308o\u0308u\u0308", "Z\u0335\u0321a\u0336l\u0337g\u0338o",
        "café naïve résumé façade", "Straße", "İstanbul",
        "\u00a0non-breaking\u00a0space", "zero\u200bwidth", "\u3000ideographic space",
        "tab\tseparated\tvalues", "mixed \t \n whitespace \r\n windows",
        "I've been 'told he's there, 'RE you sure? We'Ve a'lL",
        "don't won't can't shouldn't", "!!!???...,,,;;;", "-----=====+++++",
        "____init____", "a" * 50, "ab" * 30, " " * 40, "\n" * 33,
        "<s>", "</s>", "<unk>", "<bos>", "<eos>", "<pad>",
        "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
        "<table><tr><td>x</td></tr></table>", "[multimodal]", "<mask>",
        "<|endoftext|>", "<0x41>", "▁already▁escaped", "▁▁",
        "Ünïcödé ÀÉÎÕÜ", "\u2581", "\ufffd", "NUL\x00byte", "\x01\x02\x03\x7f",
        "https://example.com/path?q=1&r=2#frag", "user@example.com",
        "$100.00 €50 £20 ¥1000", "∑∫∂√∞≠≤≥", "→←↑↓", "©®™",
        "Once upon a time, there was a little girl named Lily.",
        "She loved to play outside in the park. One day, she saw a big, red ball.",
    ]
    mixed = ("Tokenizers are tricky: 数字 123, émoji 🎉, tabs\t, "
             "code `x = [i**2 for i in range(10)]`, and     spaces. ")
    texts.append(mixed * 20)
    return texts


def raw_inputs():
    """Byte strings that are not valid UTF-8 (llama.cpp references only)."""
    return [b"\xff", b"abc\xffdef", b"\xe2\x82", b"\xe2\x82 x", b"\xc3\x28",
            b"\xed\xa0\x80", b"\xf0\x9f\x98", b"\x80\x80\x80", b"ok\xc0\xafok"]


def write(name, doc):
    path = os.path.join(OUT_DIR, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path} ({len(doc['cases'])} cases)")


def make_sentencepiece():
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(
        model_file=os.path.join(SHARED, "llama2-tokenizer.model"))
    cases = []
    for text in corpus():
        ids = sp.encode(text)
        decoded = sp.decode(ids)
        cases.append({"input_hex": text.encode("utf-8").hex(), "ids": ids,
                      "decoded_hex": decoded.encode("utf-8").hex(),
                      "roundtrip": decoded == text})
    write("llama2_sentencepiece.json", {
        "reference": f"sentencepiece {spm.__version__}",
        "tokenizer": "llama2-tokenizer.model",
        "compare_with": "ggml-vocab-llama-spm.gguf",
        "options": "encode(text): no BOS; decode(ids)",
        "cases": cases})


def make_llamacpp():
    import ctypes
    import llama_cpp
    from llama_cpp import Llama

    def detok(vocab, ids, remove_special, unparse_special):
        arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
        size = 64 + 64 * len(ids)
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, size,
                                       remove_special, unparse_special)
        assert n >= 0, n
        return buf.raw[:n]

    for name, path in [("gemma3_llamacpp.json", DEFAULT_MODEL),
                       ("stories260k_llamacpp.json",
                        os.path.join(SHARED, "stories260K.gguf"))]:
        llm = Llama(model_path=path, vocab_only=True, verbose=False)
        vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
        inputs = [t.encode("utf-8") for t in corpus()] + raw_inputs()
        cases = []
        for data in inputs:
            for add_bos in (False, True):
                for special in (False, True):
                    ids = llm.tokenize(data, add_bos=add_bos, special=special)
                    decoded = detok(vocab, ids, True, special)
                    cases.append({"input_hex": data.hex(), "add_bos": add_bos,
                                  "special": special, "ids": ids,
                                  "decoded_hex": decoded.hex(),
                                  "roundtrip": decoded == data})
        write(name, {
            "reference": f"llama-cpp-python {llama_cpp.__version__}",
            "model": os.path.basename(path),
            "options": "tokenize(bytes, add_bos, special); decoded = "
                       "llama_detokenize(ids, remove_special=True, "
                       "unparse_special=special)",
            "cases": cases})


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentencepiece", action="store_true")
    ap.add_argument("--llamacpp", action="store_true")
    args = ap.parse_args()
    if not (args.sentencepiece or args.llamacpp):
        ap.error("pick --sentencepiece and/or --llamacpp")
    os.makedirs(OUT_DIR, exist_ok=True)
    if args.sentencepiece:
        make_sentencepiece()
    if args.llamacpp:
        make_llamacpp()
    return 0


if __name__ == "__main__":
    sys.exit(main())
