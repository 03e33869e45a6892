#!/usr/bin/env python3
"""Medians of run.sh's rounds: tokens/s of pp and tg for base-run, head-run,
head (weft bench model) and llama (llama-bench), and head / llama."""
import glob
import json
import os
import re
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
RUN = re.compile(r"prompt: (\d+) tokens in [\d.]+ s \(([\d.]+) tokens/s\); "
                 r"generation: (\d+) tokens in [\d.]+ s \(([\d.]+) tokens/s\)")


def runs(who):
    pp, tg = [], []
    for f in sorted(glob.glob(os.path.join(d, f"{who}-run-*.txt"))):
        m = RUN.search(open(f).read())
        pp.append(float(m.group(2)))
        tg.append(float(m.group(4)))
    return pp, tg


def bench_model():
    pp, tg, paired, probe = [], [], [], []
    for f in sorted(glob.glob(os.path.join(d, "head-*.json"))):
        j = json.load(open(f))
        pp.append(j["pp"]["tokens_per_s"])
        tg.append(j["tg"]["tokens_per_s"])
        paired.append(j["tg"].get("paired_roofline_pct"))
        probe.append(j.get("bandwidth_gbs"))
    return pp, tg, paired, probe


def llama():
    pp, tg = [], []
    for f in sorted(glob.glob(os.path.join(d, "llama-*.json"))):
        for x in json.load(open(f)):
            (pp if x["n_prompt"] else tg).append(x["avg_ts"])
    return pp, tg


med = statistics.median
bpp, btg = runs("base")
hpp, htg = runs("head")
mpp, mtg, paired, probe = bench_model()
lpp, ltg = llama()
print(f"rounds: {len(btg)}")
print(f"weft run, ~511-token prompt + 128: base pp {med(bpp):.1f} tg {med(btg):.1f}; "
      f"head pp {med(hpp):.1f} tg {med(htg):.1f} tok/s "
      f"(head/base pp {med(hpp) / med(bpp):.2f}x, tg {med(htg) / med(btg):.2f}x)")
print(f"weft bench model: pp512 {med(mpp):.1f} tg128 {med(mtg):.1f} tok/s; "
      f"tg128 at {med([p for p in paired if p is not None]):.0f}% of the paired probe; "
      f"bandwidth {med([p for p in probe if p is not None]):.1f} GB/s")
print(f"llama-bench: pp512 {med(lpp):.1f} tg128 {med(ltg):.1f} tok/s")
print(f"head / llama.cpp: pp512 {med(mpp) / med(lpp):.2f}x, tg128 {med(mtg) / med(ltg):.2f}x; "
      f"base (weft run) / llama.cpp: pp {med(bpp) / med(lpp):.2f}x, tg {med(btg) / med(ltg):.2f}x")
