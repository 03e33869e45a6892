#!/usr/bin/env python3
"""Decode at depth: two weft builds and llama-bench, side by side, in turn.

    ab.py BASE_WEFT HEAD_WEFT MODEL OUT_DIR [--rounds N] [--depths 0,1000,...]

Each round runs `weft bench model --pp 0 --tg 32 --depth DEPTHS --batches
1,16` for BASE and HEAD and `llama-bench -t 2 -p 0 -n 32 -d DEPTHS -r 3`
(tools/build_llamacpp.sh), then prints, medians over rounds:
  - tg32 at each depth, weft HEAD / BASE / llama.cpp;
  - the B=1 step and its attention (step at D minus step at 0) against
    the KV-read floor (KV bytes / the run's measured bandwidth);
  - the B=16 step against (16 x KV bytes + weight bytes) / bandwidth.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run(cmd, out):
    with open(out, "w") as f:
        subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("head")
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--depths", default="0,1000,2000,4000")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    root = os.path.dirname(os.path.abspath(__file__)) + "/../../.."
    lb = subprocess.run(["bash", root + "/tools/build_llamacpp.sh"], capture_output=True,
                        text=True, check=True).stdout.strip()
    res = {"base": [], "head": [], "llama": []}
    for r in range(a.rounds):
        for name, weft in (("base", a.base), ("head", a.head)):
            js = f"{a.out}/{name}-{r}.json"
            run([weft, "bench", "model", "-m", a.model, "--threads", "2", "--reps", "3",
                 "--pp", "0", "--tg", "32", "--depth", a.depths, "--batches", "1,16",
                 "--json", js], f"{a.out}/{name}-{r}.txt")
            res[name].append(json.load(open(js)))
        js = f"{a.out}/llama-{r}.json"
        run([lb + "/llama-bench", "-m", a.model, "-t", "2", "-p", "0", "-n", "32",
             "-d", a.depths, "-r", "3", "-o", "json"], js)
        res["llama"].append(json.load(open(js)))
    depths = [int(d) for d in a.depths.split(",")]
    med = statistics.median

    def tg(name, d):
        if name == "llama":
            return med([x["avg_ts"] for run in res["llama"] for x in run
                        if x.get("n_depth", 0) == d and x["n_gen"] > 0])
        return med([t["tokens_per_s"] for run in res[name] for t in run["tg"]
                    if t.get("depth", 0) == d])

    def step(name, d, b):
        return med([row["median_s"] * 1e3 for run in res[name] for rows in run["decode"]
                    for row in rows if row["ctx"] == d and row["batch"] == b])

    def kv(d, b):
        return med([row["kv_bytes_read"] for run in res["head"] for rows in run["decode"]
                    for row in rows if row["ctx"] == d and row["batch"] == b])

    bw = med([run["bandwidth_gbs"] for run in res["head"]])
    wb = res["head"][0]["weight_bytes_per_step"]
    print(f"model {a.model}; {a.rounds} round(s); bandwidth {bw:.1f} GB/s; "
          f"weights {wb / 1e6:.1f} MB/step\n")
    print("| depth | tg32 head | tg32 base | llama.cpp | head / llama |")
    print("|---|---|---|---|---|")
    for d in depths:
        h, b, l = tg("head", d), tg("base", d), tg("llama", d)
        print(f"| {d} | {h:.1f} | {b:.1f} | {l:.1f} | {h / l:.2f} |")
    print("\n| depth | B=1 step head / base ms | attention head / base ms | KV floor ms | "
          "head x floor | B=16 step head / base ms | B=16 floor ms | head x floor |")
    print("|---|---|---|---|---|---|---|---|")
    for d in depths:
        if d == 0:
            continue
        s1h, s1b = step("head", d, 1), step("base", d, 1)
        ah, ab = s1h - step("head", 0, 1), s1b - step("base", 0, 1)
        floor1 = kv(d, 1) / bw / 1e6
        s16h, s16b = step("head", d, 16), step("base", d, 16)
        floor16 = (kv(d, 16) + wb) / bw / 1e6
        print(f"| {d} | {s1h:.2f} / {s1b:.2f} | {ah:.2f} / {ab:.2f} | {floor1:.2f} | "
              f"{ah / floor1:.2f} | {s16h:.1f} / {s16b:.1f} | {floor16:.1f} | "
              f"{s16h / floor16:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
