#!/usr/bin/env python3
"""Plots gpushare-sim's time mode (--churn --out) as a plain SVG (standard library only).

Input: the time series CSV that `gpushare-sim --churn --out FILE` writes
(policy,seed,time_s,alloc_pct,unallocated_gpus,fragmented_gpus,idle_gpus,running,waiting; one
row per run, seed and sample). Each run (policy, load and consolidation budget, as the simulator
names it) is one line: the mean over its seeds at each sample time.

  bench/sim/run_churn.sh
  python3 bench/sim/plot_churn.py out/churn/default.csv -o docs/img/churn-default.svg \\
      --title "default trace, 100 % offered load" --warmup-hours 6
  python3 bench/sim/plot_churn.py out/churn/pai.csv -o docs/img/churn-pai.svg \\
      --title "PAI 2020 trace, 100 % offered load" --warmup-hours 6 --match "load 100 %"

Two panels over simulated time: GPU memory allocated (% of capacity) and fragmented GPUs (the
FGD measure). A grey band marks the warm-up, which the tables leave out.
"""

import argparse
import csv
import sys
from collections import defaultdict

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
PANELS = [("alloc_pct", "GPU memory allocated (%)"), ("fragmented_gpus", "fragmented GPUs")]


def load(paths, match=None):
    """run -> time_s -> column -> [values over seeds]; the runs in input order; the seeds.

    With `match` (a list of strings), only the runs whose name contains one of them."""
    series = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    order = []
    seeds = set()
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                run = row["policy"]
                if match and not any(m in run for m in match):
                    continue
                seeds.add(row["seed"])
                if run not in series:
                    order.append(run)
                point = series[run][float(row["time_s"])]
                for column, _ in PANELS:
                    point[column].append(float(row[column]))
    return series, order, seeds


def nice_range(lo, hi):
    span = max(hi - lo, 1e-9)
    for step in (0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000):
        if span <= step * 6:
            break
    start = step * int(lo / step) if lo >= 0 else -step * int(-lo / step + 1)
    return start, start + step * (int((hi - start) / step) + 1), step


def panel(out, series, order, column, label, x0, y0, w, h, t_max, warmup_s):
    means = {run: {t: sum(v[column]) / len(v[column]) for t, v in series[run].items()} for run in order}
    values = [v for m in means.values() for v in m.values()]
    lo, hi, step = nice_range(min(values), max(values))

    def px(t):
        return x0 + t / t_max * w

    def py(v):
        return y0 + h - (min(max(v, lo), hi) - lo) / (hi - lo) * h

    if warmup_s > 0:
        out.append(f'<rect x="{x0}" y="{y0}" width="{px(warmup_s) - x0:.1f}" height="{h}" fill="#f0f0f0"/>')
        out.append(f'<text x="{(x0 + px(warmup_s)) / 2:.1f}" y="{y0 + 14}" text-anchor="middle" '
                   f'fill="#888" font-size="11">warm-up</text>')
    tick = lo
    while tick <= hi + 1e-9:
        y = py(tick)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + w}" y2="{y:.1f}" stroke="#e8e8e8"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
        tick += step
    hours = 0
    while hours * 3600 <= t_max:
        out.append(f'<text x="{px(hours * 3600):.1f}" y="{y0 + h + 16}" text-anchor="middle">{hours}</text>')
        hours += 2 if t_max > 12 * 3600 else 1
    out.append(f'<line x1="{x0}" y1="{y0 + h}" x2="{x0 + w}" y2="{y0 + h}" stroke="black"/>')
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 + h}" stroke="black"/>')
    out.append(f'<text x="{x0 + w / 2}" y="{y0 - 8}" text-anchor="middle" font-weight="bold">{label}</text>')
    for i, run in enumerate(order):
        points = sorted(means[run].items())
        path = " ".join(f"{px(t):.1f},{py(v):.1f}" for t, v in points)
        dash = ' stroke-dasharray="6 3"' if "consolidate" in run else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{COLOURS[i % len(COLOURS)]}" '
                   f'stroke-width="1.6"{dash}/>')


def svg(series, order, title, warmup_s, seeds):
    width, top, left, gap, ph = 980, 70, 64, 80, 300
    legend_h = 20 * len(order) + 10
    pw = (width - left - gap - 30) / 2
    height = top + ph + 40 + legend_h
    t_max = max(t for run in order for t in series[run])
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="24" font-size="16" font-weight="bold">gpushare-sim --churn: {title}</text>',
           f'<text x="{left}" y="44" fill="#444">Mean over {seeds} seed(s) at each sample; simulated hours on '
           f'the x axis; dashed: with the consolidation planner.</text>']
    for i, (column, label) in enumerate(PANELS):
        panel(out, series, order, column, label, left + i * (pw + gap), top, pw, ph, t_max, warmup_s)
    out.append(f'<text x="{left + pw + gap / 2}" y="{top + ph + 32}" text-anchor="middle">hours</text>')
    y = top + ph + 50
    for i, run in enumerate(order):
        dash = ' stroke-dasharray="6 3"' if "consolidate" in run else ""
        out.append(f'<line x1="{left}" y1="{y}" x2="{left + 30}" y2="{y}" stroke="{COLOURS[i % len(COLOURS)]}" '
                   f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{left + 38}" y="{y + 4}">{run}</text>')
        y += 20
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", help="CSV files from gpushare-sim --churn --out")
    parser.add_argument("-o", "--output", required=True, help="SVG file to write")
    parser.add_argument("--title", default="allocation and fragmentation over time")
    parser.add_argument("--warmup-hours", type=float, default=0, help="shade the warm-up (--warmup)")
    parser.add_argument("--match", action="append",
                        help="draw only the runs whose name contains this (repeatable: any of them)")
    args = parser.parse_args()
    series, order, seeds = load(args.inputs, args.match)
    if not order:
        sys.exit("no rows in the input")
    with open(args.output, "w") as f:
        f.write(svg(series, order, args.title, args.warmup_hours * 3600, len(seeds)))


if __name__ == "__main__":
    main()
