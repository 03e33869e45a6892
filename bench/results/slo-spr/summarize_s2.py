#!/usr/bin/env python3
"""Summarizes run-s2-one.sh's rounds: summarize_s2.py TARGET_MS ROUND.json..."""
import json
import statistics
import sys


def main():
    target = float(sys.argv[1])
    rows = {}
    for path in sys.argv[2:]:
        for run in json.load(open(path))["runs"]:
            s2 = run["s2"]
            rows.setdefault(run["label"], []).append(
                (s2["itl_prefill_ms"]["p50"], s2["itl_prefill_ms"]["p99"],
                 s2["itl_prefill_ms"]["max"], s2["itl_base_ms"]["p50"],
                 s2["long_ttft_ms"]["p50"]))
    med = {k: [statistics.median(c) for c in zip(*v)] for k, v in rows.items()}
    print(f"target {target} ms; medians over {len(sys.argv) - 2} round(s)\n")
    print("| config | ITL during prefill p50 / p99 / max ms | undisturbed p50 ms | long TTFT ms |")
    print("|---|---|---|---|")
    for k, (p50, p99, mx, base, ttft) in med.items():
        print(f"| {k} | {p50:.1f} / {p99:.1f} / {mx:.1f} | {base:.1f} | {ttft:.0f} |")
    timed = [k for k in med if k.startswith("target")]
    for k in timed:
        p99, ttft = med[k][1], med[k][4]
        ok = [(v[4], f) for f, v in med.items() if not f.startswith("target") and v[1] <= p99]
        print(f"\n{k}: p99 {p99:.1f} ms = {p99 / target:.2f}x the target "
              f"({'meets' if p99 <= 1.1 * target else 'misses'} <= 1.1x)")
        if ok:
            best_ttft, best = min(ok)
            print(f"best fixed budget with p99 <= {p99:.1f}: {best}, TTFT {best_ttft:.0f} ms; "
                  f"target's TTFT {ttft:.0f} ms = {ttft / best_ttft:.2f}x "
                  f"({'within' if ttft <= 1.2 * best_ttft else 'over'} 1.2x)")
        else:
            print(f"no fixed budget holds p99 <= {p99:.1f} ms")


if __name__ == "__main__":
    main()
