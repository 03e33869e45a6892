#!/usr/bin/env python3
"""Per format, medians over run.sh's rounds: pp512 and tg128 tokens/s of
`weft bench model` (head) and llama-bench (llama), head / llama, tg128's
share of the paired bandwidth probe, and the file's weight types."""
import glob
import json
import os
import re
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
med = statistics.median
formats = sorted({os.path.basename(f).split("-head-")[0]
                  for f in glob.glob(os.path.join(d, "*-head-*.json"))},
                 key=lambda t: ["Q4_1", "Q5_1", "Q2_K", "Q3_K_M", "Q5_K_M", "IQ4_NL",
                                "IQ4_XS"].index(t) if t in ["Q4_1", "Q5_1", "Q2_K", "Q3_K_M",
                                                            "Q5_K_M", "IQ4_NL", "IQ4_XS"] else 99)
TYPES = re.compile(r"^\s+(\S+)\s+(\d+) tensors\s+([\d.]+ \S+)\s+matmul: (\S+)", re.M)
print("| format | weight types (tensors, matmul path) | weft pp512 | llama pp512 | pp ratio "
      "| weft tg128 | llama tg128 | tg ratio | tg % paired probe | rounds |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for t in formats:
    hpp, htg, paired = [], [], []
    for f in sorted(glob.glob(os.path.join(d, f"{t}-head-*.json"))):
        j = json.load(open(f))
        hpp.append(j["pp"]["tokens_per_s"])
        htg.append(j["tg"]["tokens_per_s"])
        if j["tg"].get("paired_roofline_pct") is not None:
            paired.append(j["tg"]["paired_roofline_pct"])
    lpp, ltg = [], []
    for f in sorted(glob.glob(os.path.join(d, f"{t}-llama-*.json"))):
        for x in json.load(open(f)):
            (lpp if x["n_prompt"] else ltg).append(x["avg_ts"])
    types = ""
    ins = os.path.join(d, f"inspect-{t}.txt")
    if os.path.exists(ins):
        types = ", ".join(f"{m[0]} ({m[1]}, {m[3]})" for m in TYPES.findall(open(ins).read())
                          if m[0] != "f32")
    pr = f"{med(paired):.0f}%" if paired else "-"
    print(f"| {t} | {types} | {med(hpp):.1f} | {med(lpp):.1f} | {med(hpp) / med(lpp):.2f}x "
          f"| {med(htg):.1f} | {med(ltg):.1f} | {med(htg) / med(ltg):.2f}x | {pr} | {len(htg)} |")
