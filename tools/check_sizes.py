#!/usr/bin/env python3
"""Fails when a C++ source file is over 500 lines or a function over 80.

    python3 tools/check_sizes.py [--root DIR] [--list] [FOLDER ...]

FOLDERs are relative to the root (the repository, by default) and default to
src and apps. Every .cc and .h below them is read; a function is found by a
simple brace-matching scan (comments, strings and preprocessor lines blanked
first): a '{' at namespace or class scope whose head has a parameter list
opens a function body, and the function's length runs from the first line of
its head (the signature) to its closing brace. Lambdas, local classes and
nested blocks count towards the function they sit in. --list prints every
function over 60 lines too, for planning.

The only exceptions are ALLOWED below: kernel inner loops and tables in
src/kernels and src/tensor, each named and explained. Exits 1 on any
offender, 0 otherwise.
"""
import argparse
import os
import re
import sys

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
EXCEPTION_FOLDERS = ("src/kernels/", "src/tensor/")

# "path:function" -> why it may be longer. Only src/kernels and src/tensor
# may have entries: a kernel's inner loop reads best whole (unrolled lanes,
# one register block), and a table is data. Everything else gets split.
ALLOWED = {
    # Register-blocked tile kernels: one RW x RC (or 8-row x RC) block of
    # accumulators, its decode, products and prefetch in one loop; split,
    # the accumulators would leave registers.
    "src/kernels/avx2_legacy_tiles.cc:LegacyTile": "AVX2 legacy-quant tile inner loop",
    "src/kernels/avx2_legacy_tiles.cc:PairTile": "AVX2 two-block-pair tile inner loop",
    "src/kernels/avx512_panels.cc:PanelTileH": "AVX-512 panel tile inner loop",
    "src/kernels/x8_vnni_impl.h:Tile": "VNNI x8 group tile inner loop",
}

QUALIFIERS = re.compile(r"^(\s|const\b|override\b|final\b|noexcept\b|mutable\b|volatile\b|&)*"
                        r"(->.*)?$", re.S)


def blank(text):
    """Returns text with comments, string/char literals and preprocessor
    lines replaced by spaces (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # A preprocessor line, with its backslash continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()
                                                        or text[i - 1] in "uL8"):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or (c == "'" and (i == 0 or not text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def match_close(text, i):
    """Index of the '}' closing the '{' at i."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def function_name(head):
    """The name before the head's parameter list: Foo::Bar, operator==."""
    depth = 0
    for k, ch in enumerate(head):
        if ch == "(":
            if depth == 0:
                m = re.search(r"([\w:~]+(?:operator\s*\S+?)?)\s*$", head[:k])
                if m is None:  # a lambda: the variable it initializes
                    m = re.search(r"(\w+)\s*=\s*\[", head)
                return re.sub(r"\s+", " ", m.group(1)) if m else "?"
            depth += 1
    return "?"


def functions(text):
    """Yields (name, first line, last line) of each function in text."""
    code = blank(text)

    def line_of(pos):
        return code.count("\n", 0, pos) + 1

    def scan(start, end):
        head_start = start
        i = start
        while i < end:
            ch = code[i]
            if ch in ";}":
                head_start = i + 1
            elif ch == "{":
                head = code[head_start:i]
                words = head.split()
                close = match_close(code, i)
                if "(" in head and not re.match(r"\s*(namespace|extern)\b", head):
                    tail = head[head.rfind(")") + 1:]
                    ctor_init = re.search(r"\)\s*(noexcept\s*)?:(?!:)", head)
                    if ctor_init and re.search(r"[\w>]\s*$", tail):
                        i = close  # a brace member initializer: still the head
                    elif ctor_init or QUALIFIERS.match(tail):
                        first = head_start + len(head) - len(head.lstrip())
                        yield function_name(head), line_of(first), line_of(close)
                        i = close
                        head_start = close + 1
                    else:
                        i = close
                        head_start = close + 1
                elif words and (words[0] in ("namespace", "extern") or
                                re.search(r"\b(class|struct|union|enum)\b", head)):
                    yield from scan(i + 1, close)
                    i = close
                    head_start = close + 1
                else:  # an initializer or a table: data, not code
                    i = close
                    head_start = close + 1
            i += 1

    yield from scan(0, len(code))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="*", default=["src", "apps"])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    problems, seen = [], set()
    for folder in args.folders:
        for dirpath, _, names in sorted(os.walk(os.path.join(root, folder))):
            for name in sorted(names):
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                lines = text.count("\n")
                if lines > MAX_FILE_LINES and rel not in ALLOWED:
                    problems.append(f"{rel}: {lines} lines (at most {MAX_FILE_LINES})")
                for fn, first, last in functions(text):
                    size = last - first + 1
                    key = f"{rel}:{fn}"
                    if size > MAX_FUNCTION_LINES and key in ALLOWED:
                        seen.add(key)
                    elif size > MAX_FUNCTION_LINES:
                        problems.append(f"{rel}:{first}: {fn} is {size} lines "
                                        f"(at most {MAX_FUNCTION_LINES})")
                    elif args.list and size > 60:
                        print(f"note: {rel}:{first}: {fn} is {size} lines")
    for key in sorted(set(ALLOWED) - seen):
        if not key.startswith(EXCEPTION_FOLDERS):
            problems.append(f"{key}: allowed, but only {EXCEPTION_FOLDERS} may be")
        elif args.list:
            print(f"note: {key} is allowed but no longer over the limit")
    for p in problems:
        print(p)
    print(f"check_sizes: {len(problems)} offender(s) in {', '.join(args.folders)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
