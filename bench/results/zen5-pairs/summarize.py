#!/usr/bin/env python3
# Summarizes the JSON files next to it (written by run.sh): per run, the
# probe's bandwidth, pp512, tg128 (ms/token, % of the first probe and, for
# head, of the paired probe) and each decode step with its ratio to B = 1;
# llama-bench's tokens/s. Run from this folder: python3 summarize.py
import json
def load(p): return json.load(open(p))
for model in ["gemma", "1b"]:
    print("##", model)
    for v in ["base", "head"]:
        for r in (1, 2, 3):
            d = load(f"{model}-{v}-{r}.json")
            dec = {x["batch"]: x for x in d["decode"]}
            b1 = dec[1]["median_s"]
            tg = d["tg"]
            s = (f"{v} r{r}: bw {d['bandwidth_gbs']:.1f}/{d['bandwidth_after_gbs']:.1f} "
                 f"pp{d['pp']['tokens']} {d['pp']['tokens_per_s']:.0f} tok/s | "
                 f"tg{tg['tokens']} {tg['median_s'] / tg['tokens'] * 1e3:.2f} ms "
                 f"{tg['weights_gbs']:.1f} GB/s {tg['roofline_pct']:.0f}%")
            if "paired_roofline_pct" in tg:
                s += f" paired {tg['paired_roofline_pct']:.0f}%"
            s += " | " + " ".join(f"B{b}:{dec[b]['median_s'] * 1e3:.2f}({dec[b]['median_s'] / b1:.2f}x)"
                                  for b in sorted(dec))
            print(s)
    for r in (1, 2, 3):
        d = load(f"{model}-llama-{r}.json")
        print(f"llama r{r}: " + " ".join(
            f"{'pp' if x['n_prompt'] else 'tg'}{x['n_prompt'] or x['n_gen']} {x['avg_ts']:.1f}" for x in d))
