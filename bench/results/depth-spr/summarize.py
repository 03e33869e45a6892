#!/usr/bin/env python3
"""Medians of run.sh's rounds, per model: tg32 tokens/s at each depth for
HEAD (weft bench model --depth) and llama-bench, their ratio; the B=1 and
B=16 decode steps at each depth for BASE (--ctx D) and HEAD, with HEAD's
share of its read floor; one sequence's attention time (step at D minus
step at 0) against its KV-read floor (KV bytes / the run's bandwidth)."""
import glob
import json
import os
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
med = statistics.median


def names():
    return sorted({os.path.basename(f).split("-head-")[0]
                   for f in glob.glob(os.path.join(d, "*-head-*.json"))})


for name in names():
    heads = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(d, f"{name}-head-*.json")))]
    llama = {}
    for f in sorted(glob.glob(os.path.join(d, f"{name}-llama-*.json"))):
        try:
            for x in json.load(open(f)):
                llama.setdefault(x.get("n_depth", 0), []).append(x["avg_ts"])
        except json.JSONDecodeError:
            pass
    bw = med([h["bandwidth_gbs"] for h in heads])
    print(f"## {name}\n")
    print(f"{len(heads)} round(s); bandwidth (weft's probe, same runs) {bw:.1f} GB/s; "
          f"weights {heads[0]['weight_bytes_per_step'] / 1e6:.1f} MB/step\n")
    print("| depth | weft tg32 tok/s | llama-bench tg32 tok/s | ratio | weft % read floor |")
    print("|---|---|---|---|---|")
    depths = [t["depth"] for t in heads[0]["tg"]]
    for i, dep in enumerate(depths):
        w = med([h["tg"][i]["tokens_per_s"] for h in heads])
        rf = med([h["tg"][i]["read_floor_pct"] for h in heads])
        l = med(llama[dep]) if dep in llama else float("nan")
        print(f"| {dep} | {w:.1f} | {l:.1f} | {w / l:.2f} | {rf:.0f}% |")
    if not heads[0].get("decode"):
        print()
        continue
    print("\n| depth | B | base step ms | head step ms | head/base | head % read floor |")
    print("|---|---|---|---|---|---|")
    step0 = None
    attn = []
    for i, dep in enumerate(depths):
        for j, row in enumerate(heads[0]["decode"][i]):
            b = row["batch"]
            h = med([x["decode"][i][j]["median_s"] for x in heads]) * 1e3
            rf = med([x["decode"][i][j]["read_floor_pct"] for x in heads])
            bf = sorted(glob.glob(os.path.join(d, f"{name}-base-d{dep}-*.json")))
            base = float("nan")
            if bf:
                base = med([next(r["median_s"] for r in json.load(open(f))["decode"]
                                 if r["batch"] == b) for f in bf]) * 1e3
            print(f"| {dep} | {b} | {base:.2f} | {h:.2f} | {h / base:.2f} | {rf:.0f}% |")
            if b == 1:
                if dep == 0:
                    step0 = h
                elif step0 is not None:
                    kv = heads[0]["decode"][i][j]["kv_bytes_read"]
                    attn.append((dep, h - step0, kv / (bw * 1e9) * 1e3))
    if attn:
        print("\nOne sequence's attention (B=1 step at D minus at 0) vs its KV-read floor:\n")
        print("| depth | attention ms | KV floor ms | x floor |")
        print("|---|---|---|---|")
        for dep, a, f in attn:
            print(f"| {dep} | {a:.2f} | {f:.2f} | {a / f:.1f} |")
    print()
