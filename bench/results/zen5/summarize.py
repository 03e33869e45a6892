#!/usr/bin/env python3
# Summarizes the JSON files next to it (written by run.sh): per run, the
# probe's bandwidth, pp512, tg128 and each decode step with its ratio to
# B = 1; llama-bench's tokens/s. Run from this folder: python3 summarize.py
import json, statistics as st
def load(p): return json.load(open(p))
for model in ["gemma","1b"]:
    print("##", model)
    for v in ["base","head"]:
        for r in (1,2,3):
            d=load(f"{model}-{v}-{r}.json")
            dec={x["batch"]:x for x in d["decode"]}
            b1=dec[1]["median_s"]
            s=f"{v} r{r}: bw {d['bandwidth_gbs']:.1f} pp{d['pp']['tokens']} {d['pp']['tokens_per_s']:.0f} tok/s | tg{d['tg']['tokens']} {d['tg']['median_s']/d['tg']['tokens']*1e3:.2f} ms {d['tg']['roofline_pct']:.0f}% ({d['tg']['weights_gbs']:.1f} GB/s) |"
            s+=" ".join(f"B{b}:{dec[b]['median_s']*1e3:.2f}({dec[b]['median_s']/b1:.2f}x)" for b in sorted(dec))
            print(s)
    for r in (1,2,3):
        d=load(f"{model}-llama-{r}.json")
        print(f"llama r{r}: "+" ".join(f"{'pp' if x['n_prompt'] else 'tg'}{x['n_prompt'] or x['n_gen']} {x['avg_ts']:.1f}" for x in d))
