#!/usr/bin/env python3
"""pp.sh's rounds: per format, weft (head, base) and llama-bench pp512
tokens/s per round, medians and head / llama."""
import glob, json, os, re, statistics, sys
d = sys.argv[1]  # pp.sh OUT_DIR
runs = {}
for f in glob.glob(os.path.join(d, "pp-*.json")):
    m = re.match(r"pp-(.+)-(head|base|llama)-(\d+)\.json", os.path.basename(f))
    j = json.load(open(f))
    v = ([x["avg_ts"] for x in j if x["n_prompt"]][0] if m.group(2) == "llama"
         else j["pp"]["tokens_per_s"])
    runs.setdefault(m.group(1), {}).setdefault(m.group(2), {})[int(m.group(3))] = v
print("| format | weft pp512 per round | llama pp512 per round | weft median | llama median | ratio |")
print("|---|---|---|---:|---:|---:|")
for t, s in runs.items():
    h, l = s["head"], s["llama"]
    fmt = lambda x: ", ".join(f"{x[k]:.0f}" for k in sorted(x))
    mh, ml = statistics.median(h.values()), statistics.median(l.values())
    print(f"| {t} | {fmt(h)} | {fmt(l)} | {mh:.1f} | {ml:.1f} | {mh / ml:.2f}x |")
