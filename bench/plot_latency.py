#!/usr/bin/env python3
"""Plots in-process request latency against cluster size as a plain SVG (standard library only).

Input: Google Benchmark JSON from scheduling_bench's *Latency benchmarks, which repeat single
requests and report p50/p90/p99/max aggregates:

  build-bench/bench/scheduling_bench --benchmark_filter='Latency' \\
      --benchmark_out=latency.json --benchmark_out_format=json
  python3 bench/plot_latency.py latency.json -o docs/img/latency-vs-nodes.svg [--alloc 50]

Two panels: every node offered (the worst case), and as many as kube-scheduler offers by
default (BM_*DefaultOfferLatency). Lines: filter and prioritize, p50 (dashed) and p99 (solid).
"""

import argparse
import json
import re
import sys

UNIT_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
NAME = re.compile(r"^(BM_\w+?)/nodes:(\d+)/alloc%:(\d+)")

PANELS = [
    ("every node offered (worst case)", "BM_FilterRequestLatency", "BM_PrioritizeRequestLatency"),
    ("kube-scheduler's default offer (420 / 500 / 500 nodes)",
     "BM_FilterRequestDefaultOfferLatency", "BM_PrioritizeRequestDefaultOfferLatency"),
]
COLOURS = {"filter": "#d62728", "prioritize": "#1f77b4"}


def load(paths, alloc, clock):
    points = {}  # (benchmark, statistic) -> {nodes: ms}
    context = {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        context = data.get("context", context)
        for b in data.get("benchmarks", []):
            m = NAME.match(b.get("run_name") or b.get("name", ""))
            if not m or int(m.group(3)) != alloc:
                continue
            stat = b.get("aggregate_name") or "mean"
            if stat not in ("p50", "p99"):
                continue  # only these are drawn; max (one preempted request) would set the scale
            value = b[clock] * UNIT_TO_MS[b.get("time_unit", "ns")]
            points.setdefault((m.group(1), stat), {})[int(m.group(2))] = value
    return points, context


def nice_max(value):
    for step in (0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100):
        if value <= step * 6:
            return step * 6, step
    return value, value / 6


def panel(out, points, x0, y0, w, h, title, filter_bench, prioritize_bench, y_max, y_step, target_ms):
    xs = sorted({n for key, s in points.items() if key[0] in (filter_bench, prioritize_bench) for n in s})
    if not xs:
        return
    x_max = max(xs) * 1.08

    def px(n):
        return x0 + n / x_max * w

    def py(ms):
        return y0 + h - min(ms, y_max) / y_max * h

    out.append(f'<text x="{x0 + w / 2}" y="{y0 - 10}" text-anchor="middle" font-weight="bold">{title}</text>')
    tick = 0.0
    while tick <= y_max + 1e-9:
        y = py(tick)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + w}" y2="{y:.1f}" stroke="#e8e8e8"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
        tick += y_step
    for n in xs:
        out.append(f'<text x="{px(n):.1f}" y="{y0 + h + 16}" text-anchor="middle">{n:,}</text>')
    out.append(f'<line x1="{x0}" y1="{y0 + h}" x2="{x0 + w}" y2="{y0 + h}" stroke="black"/>')
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 + h}" stroke="black"/>')
    if target_ms > 0 and 5000 in xs:
        # The latency target: p99 <= 1 ms at 5 000 nodes.
        x, y = px(5000), py(target_ms)
        out.append(f'<line x1="{x - 30:.1f}" y1="{y:.1f}" x2="{x + 30:.1f}" y2="{y:.1f}" stroke="#2ca02c" '
                   f'stroke-width="2"/>')
        out.append(f'<text x="{x + 34:.1f}" y="{y + 4:.1f}" fill="#2ca02c" font-size="11">target {target_ms:g} ms</text>')
    for verb, bench in (("filter", filter_bench), ("prioritize", prioritize_bench)):
        for stat, dash in (("p99", ""), ("p50", ' stroke-dasharray="6 4"')):
            series = points.get((bench, stat))
            if not series:
                continue
            coords = [(px(n), py(series[n])) for n in sorted(series)]
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
            out.append(f'<polyline points="{path}" fill="none" stroke="{COLOURS[verb]}" stroke-width="2"{dash}/>')
            for (x, y), n in zip(coords, sorted(series)):
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLOURS[verb]}"/>')
                if stat == "p99":
                    dy = -7 if verb == "prioritize" else 14
                    out.append(f'<text x="{x + 5:.1f}" y="{y + dy:.1f}" fill="{COLOURS[verb]}" '
                               f'font-size="10">{series[n]:.2f}</text>')


def svg(points, context, alloc, clock, target_ms, load_note):
    width, height = 960, 470
    top, bottom, left, gap, legend_w = 92, 58, 60, 70, 150
    pw = (width - left - gap - legend_w - 20) / 2
    ph = height - top - bottom
    values = [v for s in points.values() for v in s.values()]
    if not values:
        sys.exit("no matching benchmarks in the input")
    # Keep the scale readable: outliers beyond 4x the largest p50 are clipped at the top.
    p50s = [v for (b, stat), s in points.items() if stat == "p50" for v in s.values()]
    cap = max(max(p50s) * 4 if p50s else 0, target_ms * 2)
    y_max, y_step = nice_max(min(max(values), cap) * 1.05)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="24" font-size="16" font-weight="bold">gpushare-extender: in-process request '
           f'latency vs cluster size</text>',
           f'<text x="{left}" y="43" fill="#444">One request = JSON decode + filter or prioritize + JSON encode, '
           f'nodeCacheCapable (NodeNames), 8 GPUs per node, {alloc}% of GPU memory allocated.</text>',
           f'<text x="{left}" y="60" fill="#444">{"Wall-clock" if clock == "real_time" else "CPU"} time of '
           f'2 000 single requests per point; {context.get("num_cpus", "?")} CPUs shared with other work'
           f'{load_note}.</text>']
    for i, (title, fb, pb) in enumerate(PANELS):
        x0 = left + i * (pw + gap)
        panel(out, points, x0, top, pw, ph, title, fb, pb, y_max, y_step, target_ms)
    out.append(f'<text transform="translate(18 {top + ph / 2}) rotate(-90)" text-anchor="middle">latency (ms)</text>')
    out.append(f'<text x="{left + pw + gap / 2}" y="{height - 14}" text-anchor="middle">nodes in the cluster</text>')
    ly = top + 10
    lx = width - legend_w
    for verb in ("filter", "prioritize"):
        for stat, dash in (("p99", ""), ("p50", ' stroke-dasharray="6 4"')):
            out.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 28}" y2="{ly}" stroke="{COLOURS[verb]}" '
                       f'stroke-width="2"{dash}/>')
            out.append(f'<text x="{lx + 34}" y="{ly + 4}">{verb} {stat}</text>')
            ly += 20
    if any(v > y_max for v in values):
        out.append(f'<text x="{lx}" y="{ly + 10}" font-size="10" fill="#666">values above the</text>')
        out.append(f'<text x="{lx}" y="{ly + 23}" font-size="10" fill="#666">axis are clipped</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", help="Google Benchmark JSON files")
    parser.add_argument("-o", "--output", required=True, help="SVG file to write")
    parser.add_argument("--alloc", type=int, default=50, help="allocated %% to plot (0, 50 or 90)")
    parser.add_argument("--clock", choices=["real_time", "cpu_time"], default="real_time")
    parser.add_argument("--target-ms", type=float, default=1.0)
    parser.add_argument("--load", default="", help="load average (and how it was run) to note under the title")
    args = parser.parse_args()
    points, context = load(args.inputs, args.alloc, args.clock)
    note = f" (load average {args.load})" if args.load else ""
    with open(args.output, "w") as f:
        f.write(svg(points, context, args.alloc, args.clock, args.target_ms, note))


if __name__ == "__main__":
    main()
