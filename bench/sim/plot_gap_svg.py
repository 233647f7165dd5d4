#!/usr/bin/env python3
"""Each policy's allocation minus FGD's at every arrival level, one small panel per workload,
as a dependency-free SVG (gpushare-sim --out CSVs, mean over the seeds in each).

  bench/sim/plot_gap_svg.py [--against fgd] [--policy P ...] --out gap.svg out/hetero/*.csv

The dashed line is the -0.5 point bar; panels share the y range (clipped to +-3 points).
"""
import argparse
import os

from compare_fgd import curves

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
W, H, COLS, PAD = 260, 150, 3, 28
LOW, HIGH = -3.0, 3.0


def panel(x0, y0, name, series, max_arrival):
    def px(a):
        return x0 + PAD + (W - PAD - 8) * a / max_arrival

    def py(g):
        g = max(LOW, min(HIGH, g))
        return y0 + 18 + (H - 36) * (HIGH - g) / (HIGH - LOW)

    out = [f'<rect x="{x0 + PAD}" y="{y0 + 18}" width="{W - PAD - 8}" height="{H - 36}" '
           'fill="none" stroke="#999"/>',
           f'<text x="{x0 + PAD}" y="{y0 + 13}" font-size="11">{name}</text>']
    for g, dash in ((0, ""), (-0.5, ' stroke-dasharray="4 3"')):
        out.append(f'<line x1="{px(0):.1f}" x2="{px(max_arrival):.1f}" y1="{py(g):.1f}" '
                   f'y2="{py(g):.1f}" stroke="#666"{dash}/>')
    for g in (HIGH, 0, LOW):
        out.append(f'<text x="{x0 + PAD - 3}" y="{py(g) + 3:.1f}" font-size="8" '
                   f'text-anchor="end">{g:+g}</text>')
    for a in (0, 50, 100):
        out.append(f'<text x="{px(a):.1f}" y="{y0 + H - 8}" font-size="8" '
                   f'text-anchor="middle">{a} %</text>')
    for colour, points in series:
        path = " ".join(f"{px(a):.1f},{py(g):.1f}" for a, g in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.2"/>')
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--against", default="fgd")
    parser.add_argument("--policy", action="append", help="policies to draw (default: all)")
    parser.add_argument("--out", required=True)
    parser.add_argument("csv", nargs="+")
    args = parser.parse_args()
    data = [(os.path.basename(p).removesuffix(".csv"), curves(p)) for p in args.csv]
    policies = args.policy or sorted({p for _, c in data for p in c if p != args.against})
    colour = dict(zip(policies, COLOURS))
    max_arrival = max(a for _, c in data for a in c[args.against])
    rows = (len(data) + COLS - 1) // COLS
    body = []
    for i, (name, c) in enumerate(data):
        base = c[args.against]
        series = [(colour[p], [(a, c[p][a] - base[a]) for a in sorted(set(c[p]) & set(base))])
                  for p in policies if p in c]
        body += panel((i % COLS) * W, 20 + (i // COLS) * H, name, series, max_arrival)
    legend = " ".join(
        f'<tspan fill="{colour[p]}">{p}</tspan>' for p in policies)
    width, height = COLS * W, 20 + rows * H
    with open(args.out, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n'
                f'<text x="4" y="14" font-size="11">allocation minus {args.against} (points) vs '
                f'arrived GPU demand: {legend}</text>\n' + "\n".join(body) + "\n</svg>\n")


if __name__ == "__main__":
    main()
