#!/usr/bin/env python3
"""Each policy against FGD at every arrival level, from gpushare-sim --out CSVs.

  bench/sim/compare_fgd.py [--against fgd] [--md] out/hetero/*.csv

Per workload (one CSV each, mean over the seeds in it): unallocated GPUs at 100 % arrival per
policy, and for every other policy its worst shortfall against FGD's allocation (points) and
the arrival level where it happens. Unallocated GPUs = GPUs x (100 - allocation %) / 100.
"""
import argparse
import collections
import csv
import os

GPUS = 6212


def curves(path):
    points = collections.defaultdict(lambda: collections.defaultdict(list))
    for row in csv.DictReader(open(path)):
        points[row["policy"]][int(row["arrived_pct"])].append(float(row["alloc_pct"]))
    return {p: {a: sum(v) / len(v) for a, v in c.items()} for p, c in points.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--against", default="fgd")
    parser.add_argument("--levels", help="also print these arrival levels, comma-separated")
    parser.add_argument("csv", nargs="+")
    args = parser.parse_args()
    policies = []
    for path in args.csv:
        for p in curves(path):
            if p not in policies:
                policies.append(p)
    others = [p for p in policies if p != args.against]
    head = ["workload", f"{args.against} @100"] + [f"{p} @100" for p in others]
    head += [f"{p} worst gap (pts @ arrival %)" for p in others]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for path in args.csv:
        c = curves(path)
        base = c[args.against]
        name = os.path.basename(path).removesuffix(".csv")
        cells = [name, f"{GPUS * (100 - base[100]) / 100:.0f}"]
        for p in others:
            cells.append(f"{GPUS * (100 - c[p][100]) / 100:.0f}" if p in c else "-")
        for p in others:
            if p not in c:
                cells.append("-")
                continue
            common = sorted(set(c[p]) & set(base))
            worst = min(common, key=lambda a: c[p][a] - base[a])
            gap = c[p][worst] - base[worst]
            mark = "**" if gap < -0.5 else ""
            cells.append(f"{mark}{gap:+.2f} @ {worst}{mark}")
        print("| " + " | ".join(cells) + " |")
        if args.levels:
            for p in [args.against] + others:
                if p in c:
                    print("   ", p, " ".join(f"{a}:{c[p].get(a, float('nan')):.2f}" for a in map(int, args.levels.split(","))))


if __name__ == "__main__":
    main()
