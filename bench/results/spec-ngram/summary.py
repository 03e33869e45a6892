#!/usr/bin/env python3
"""Ratios on/off of run.sh's results: per repetition and the median.

Usage: summary.py DIR [WORKLOAD-cC ...]; prints a markdown table per group.
"""
import glob
import json
import os
import re
import statistics
import sys


def main():
    d = sys.argv[1]
    groups = sys.argv[2:] or sorted({re.sub(r"-(on|off)-\d+\.json$", "", os.path.basename(f))
                                     for f in glob.glob(os.path.join(d, "*-o*-*.json"))})
    for g in groups:
        rows = []
        for f in sorted(glob.glob(os.path.join(d, f"{g}-off-*.json"))):
            rep = f.rsplit("-", 1)[1].split(".")[0]
            on = os.path.join(d, f"{g}-on-{rep}.json")
            if not os.path.exists(on):
                continue
            s = [json.load(open(x))["levels"][0]["summary"] for x in (f, on)]
            rows.append((rep, s[0]["output_throughput"], s[1]["output_throughput"],
                         s[0]["output_tokens"], s[1]["output_tokens"]))
        print(f"\n{g}\n\n| rep | off tok/s | on tok/s | on/off | output tokens off/on |")
        print("|---|---|---|---|---|")
        for rep, a, b, ta, tb in rows:
            print(f"| {rep} | {a:.1f} | {b:.1f} | {b / a:.2f}x | {ta}/{tb} |")
        if rows:
            med = statistics.median(b / a for _, a, b, _, _ in rows)
            print(f"| median | | | **{med:.2f}x** | |")


if __name__ == "__main__":
    main()
