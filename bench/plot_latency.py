#!/usr/bin/env python3
"""Plots request latency against cluster size as a plain SVG (no third-party packages).

Input: Google Benchmark JSON from scheduling_bench (the *RequestLatency benchmarks, which
report p50/p90/p99/max aggregates) and optionally json_bench (BM_FilterNodesRequest).

  build-bench/bench/scheduling_bench --benchmark_filter='RequestLatency' \
      --benchmark_out=latency.json --benchmark_out_format=json
  python3 bench/plot_latency.py latency.json -o docs/img/latency-vs-nodes.svg [--alloc 50]
"""

import argparse
import json
import re
import sys

UNIT_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
NAME = re.compile(r"^(BM_\w+?)/nodes:(\d+)/alloc%:(\d+)(?:_(\w+))?$")

SERIES = [
    # (benchmark, statistic, label, colour, dashed)
    ("BM_FilterRequestLatency", "p99", "filter p99", "#d62728", False),
    ("BM_FilterRequestLatency", "p50", "filter p50", "#d62728", True),
    ("BM_PrioritizeRequestLatency", "p99", "prioritize p99", "#1f77b4", False),
    ("BM_PrioritizeRequestLatency", "p50", "prioritize p50", "#1f77b4", True),
]


def load(paths, alloc, clock):
    points = {}  # (benchmark, statistic) -> {nodes: ms}
    context = {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        context = data.get("context", context)
        for b in data.get("benchmarks", []):
            m = NAME.match(b.get("name", ""))
            if not m or int(m.group(3)) != alloc:
                continue
            stat = b.get("aggregate_name") or "mean"
            value = b[clock] * UNIT_TO_MS[b.get("time_unit", "ns")]
            points.setdefault((m.group(1), stat), {})[int(m.group(2))] = value
    return points, context


def nice_max(value):
    for step in (0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100, 200, 500, 1000):
        if value <= step * 5:
            return step * 5, step
    return value, value / 5


def svg(points, context, alloc, clock, target_ms):
    width, height = 720, 440
    left, right, top, bottom = 70, 190, 50, 60
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = sorted({n for series in points.values() for n in series})
    if not xs:
        sys.exit("no matching benchmarks in the input")
    ys = [v for series in points.values() for v in series.values()] + [target_ms]
    y_max, y_step = nice_max(max(ys) * 1.05)
    x_max = max(xs) * 1.05

    def px(n):
        return left + n / x_max * plot_w

    def py(ms):
        return top + plot_h - ms / y_max * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="15" font-weight="bold">gpushare-extender: in-process request '
           f'latency vs cluster size</text>',
           f'<text x="{left}" y="40" fill="#555">nodeCacheCapable (NodeNames), 8 GPUs/node, {alloc}% allocated, '
           f'JSON decode + filter/prioritize + encode; {"wall" if clock == "real_time" else "CPU"} time, '
           f'{context.get("num_cpus", "?")} CPUs</text>']
    # Grid and axes.
    tick = 0.0
    while tick <= y_max + 1e-9:
        y = py(tick)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
        tick += y_step
    for n in xs:
        x = px(n)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" stroke="#f0f0f0"/>')
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 18}" text-anchor="middle">{n:,}</text>')
    out.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>')
    out.append(f'<text x="{left + plot_w / 2}" y="{height - 18}" text-anchor="middle">nodes offered per request</text>')
    out.append(f'<text transform="translate(20 {top + plot_h / 2}) rotate(-90)" text-anchor="middle">latency (ms)</text>')
    # Target line.
    if target_ms > 0:
        y = py(target_ms)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#2ca02c" '
                   f'stroke-dasharray="2 4" stroke-width="1.5"/>')
        out.append(f'<text x="{left + plot_w - 4}" y="{y - 5:.1f}" text-anchor="end" fill="#2ca02c">'
                   f'target p99 at 5 000 nodes: {target_ms:g} ms</text>')
    # Series.
    legend_y = top + 10
    for bench, stat, label, colour, dashed in SERIES:
        series = points.get((bench, stat))
        if not series:
            continue
        coords = [(px(n), py(series[n])) for n in sorted(series)]
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for (x, y), n in zip(coords, sorted(series)):
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>')
            out.append(f'<text x="{x + 6:.1f}" y="{y - 6:.1f}" fill="{colour}" font-size="11">{series[n]:.2f}</text>')
        lx = left + plot_w + 20
        out.append(f'<line x1="{lx}" y1="{legend_y}" x2="{lx + 28}" y2="{legend_y}" stroke="{colour}" '
                   f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{lx + 34}" y="{legend_y + 4}">{label}</text>')
        legend_y += 20
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", help="Google Benchmark JSON files")
    parser.add_argument("-o", "--output", required=True, help="SVG file to write")
    parser.add_argument("--alloc", type=int, default=50, help="allocated %% to plot (0, 50 or 90)")
    parser.add_argument("--clock", choices=["real_time", "cpu_time"], default="real_time")
    parser.add_argument("--target-ms", type=float, default=1.0)
    args = parser.parse_args()
    points, context = load(args.inputs, args.alloc, args.clock)
    with open(args.output, "w") as f:
        f.write(svg(points, context, args.alloc, args.clock, args.target_ms))


if __name__ == "__main__":
    main()
