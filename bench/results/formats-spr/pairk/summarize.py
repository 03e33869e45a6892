#!/usr/bin/env python3
"""pp.sh's files: per format, each round's pp512 tok/s of base Weft, head
Weft and llama-bench, then the medians and ratios."""
import glob
import json
import os
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
print("| format | round | base pp512 | head pp512 | llama pp512 | head / base | head / llama |")
print("|---|---|---:|---:|---:|---:|---:|")
for t in ["Q3_K_M", "Q5_K_M", "IQ4_XS"]:
    cols = {"base": [], "head": [], "llama": []}
    rounds = sorted({f.rsplit("-", 1)[1][:-5] for f in glob.glob(os.path.join(d, f"{t}-*.json"))})
    for r in rounds:
        row = {}
        for side in ("base", "head"):
            f = os.path.join(d, f"{t}-{side}-{r}.json")
            if os.path.exists(f):
                row[side] = json.load(open(f))["pp"]["tokens_per_s"]
        f = os.path.join(d, f"{t}-llama-{r}.json")
        if os.path.exists(f) and os.path.getsize(f) > 0:
            row["llama"] = [x["avg_ts"] for x in json.load(open(f)) if x["n_prompt"]][0]
        if len(row) < 3:
            continue
        for k, v in row.items():
            cols[k].append(v)
        print(f"| {t} | {r} | {row['base']:.1f} | {row['head']:.1f} | {row['llama']:.1f} | "
              f"{row['head'] / row['base']:.2f}x | {row['head'] / row['llama']:.2f}x |")
    if cols["head"]:
        m = {k: statistics.median(v) for k, v in cols.items()}
        print(f"| **{t}** | median | {m['base']:.1f} | {m['head']:.1f} | {m['llama']:.1f} | "
              f"**{m['head'] / m['base']:.2f}x** | **{m['head'] / m['llama']:.2f}x** |")
