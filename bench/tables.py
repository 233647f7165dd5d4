#!/usr/bin/env python3
"""Markdown tables for docs/benchmarks.md from bench/run_all.sh's Google Benchmark JSON.

  python3 bench/tables.py bench/results > bench/results/tables.md

Reads scheduling.json, latency.json (and latency-rt.json if present) and json.json from the
directory. Grids of many cells show CPU time (the machine is shared: wall-clock means there
include time other processes held the core); latency tables show both.
"""

import json
import os
import re
import sys

UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
NODES = [1000, 5000, 10000]
ALLOCS = [0, 50, 90]


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return json.load(f).get("benchmarks", [])


def us(b, clock):
    return b[clock] * UNIT_TO_US[b.get("time_unit", "ns")]


def fmt_us(v):
    if v is None:
        return "-"
    if v >= 10000:
        return f"{v / 1000:.1f} ms"
    if v >= 1000:
        return f"{v / 1000:.2f} ms"
    if v >= 10:
        return f"{v:.0f} µs"
    if v < 1:
        return f"{v * 1000:.0f} ns"
    return f"{v:.2f} µs"


def args_of(name):
    return {k: int(v) for k, v in re.findall(r"(\w+%?):(\d+)", name)}


def find(benches, base, clock="cpu_time", aggregate=None, **want):
    for b in benches:
        name = b.get("run_name") or b["name"]
        if name.split("/")[0] != base:
            continue
        if aggregate is not None and b.get("aggregate_name") != aggregate:
            continue
        if aggregate is None and b.get("run_type") == "aggregate":
            continue
        got = args_of(name)
        if all(got.get(k) == v for k, v in want.items()):
            return us(b, clock)
    return None


def latency_table(benches, title):
    rows = [f"#### {title}", "",
            "| request | nodes offered | alloc % | p50 | p90 | p99 | max | p99 CPU |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]
    for base, label in (("BM_FilterRequestLatency", "filter"), ("BM_PrioritizeRequestLatency", "prioritize"),
                        ("BM_FilterRequestDefaultOfferLatency", "filter"),
                        ("BM_PrioritizeRequestDefaultOfferLatency", "prioritize")):
        for n in NODES:
            for a in ALLOCS:
                cells = [find(benches, base, "real_time", s, **{"nodes": n, "alloc%": a})
                         for s in ("p50", "p90", "p99", "max")]
                if all(c is None for c in cells):
                    continue
                cpu = find(benches, base, "cpu_time", "p99", **{"nodes": n, "alloc%": a})
                offered = f"all {n:,}" if "DefaultOffer" not in base else f"{default_offered(n):,} of {n:,}"
                rows.append(f"| {label} | {offered} | {a} | " + " | ".join(fmt_us(c) for c in cells) +
                            f" | {fmt_us(cpu)} |")
    return rows + [""]


def policy_latency_table(benches, title):
    """BM_PrioritizeLatency: SchedulingService::prioritize alone on a live-mode cluster."""
    names = {0: "binpack", 1: "fgd", 2: "fgd-plus"}
    rows = [f"#### {title}", "",
            "| policy | pod | workload (shapes) | alloc % | p50 | p90 | p99 | max | p50 CPU | p99 CPU |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for learned in (1, 0):
        for p in sorted(names):
            for cpu_only in (0, 1):
                for a in ALLOCS:
                    want = {"policy": p, "nodes": 5000, "alloc%": a, "cpuonly": cpu_only, "learned": learned}
                    cells = [find(benches, "BM_PrioritizeLatency", "real_time", s, **want)
                             for s in ("p50", "p90", "p99", "max")]
                    if all(c is None for c in cells):
                        continue
                    cpu = [find(benches, "BM_PrioritizeLatency", "cpu_time", s, **want) for s in ("p50", "p99")]
                    shapes = ""
                    for b in benches:
                        name = b.get("run_name") or b["name"]
                        got = args_of(name)
                        if name.startswith("BM_PrioritizeLatency/") and "shapes" in b and \
                                all(got.get(k) == v for k, v in want.items()):
                            shapes = f" ({int(b['shapes'])})" if b["shapes"] > 0 else ""
                            break
                    rows.append(f"| {names[p]} | {'CPU-only' if cpu_only else 'GPU 4 GiB'} | "
                                f"{'learned' if learned else 'prior'}{shapes} | {a} | " +
                                " | ".join(fmt_us(c) for c in cells + cpu) + " |")
    return rows + [""]


def default_offered(n):
    percent = max(5, 50 - n // 125)
    return min(n, max(100, n * percent // 100))


def grid_table(benches, base, title, **extra):
    rows = [f"#### {title}", "", "| alloc % | " + " | ".join(f"{n:,} nodes" for n in NODES) + " |",
            "|---:|" + "---:|" * len(NODES)]
    for a in ALLOCS:
        rows.append(f"| {a} | " + " | ".join(fmt_us(find(benches, base, **{"nodes": n, "alloc%": a}, **extra))
                                               for n in NODES) + " |")
    return rows + [""]


def policy_table(benches, base, title, policies):
    cols = [(n, a) for n in NODES for a in ALLOCS]
    rows = [f"#### {title}", "",
            "| policy | " + " | ".join(f"{n // 1000}k / {a}%" for n, a in cols) + " |",
            "|---|" + "---:|" * len(cols)]
    for p, name in enumerate(policies):
        rows.append(f"| {name} | " + " | ".join(fmt_us(find(benches, base, policy=p, nodes=n, **{"alloc%": a}))
                                                  for n, a in cols) + " |")
    return rows + [""]


def policy_names(benches, base):
    names = {}
    for b in benches:
        name = b.get("run_name") or b["name"]
        if name.startswith(base + "/") and b.get("label"):
            names[args_of(name)["policy"]] = b["label"]
    return [names[i] for i in sorted(names)]


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
    sched = load(os.path.join(d, "scheduling.json"))
    lat = load(os.path.join(d, "latency.json"))
    lat_rt = load(os.path.join(d, "latency-rt.json"))
    js = load(os.path.join(d, "json.json"))
    out = []
    if lat:
        out += latency_table(lat, "Request latency, in-process (decode + call + encode), normal priority; wall-clock")
        out += policy_latency_table(lat, "SchedulingService::prioritize alone, 5 000 nodes tracking CPU and memory, "
                                         "per policy (BM_PrioritizeLatency); wall-clock and CPU")
    if lat_rt:
        out += latency_table(lat_rt, "Request latency, in-process, under SCHED_FIFO (chrt -f 1); wall-clock")
    if sched:
        out += grid_table(sched, "BM_FilterRequest", "Filter request (decode + filter + encode), every node offered: mean CPU time")
        out += grid_table(sched, "BM_PrioritizeRequest", "Prioritize request (decode + prioritize + encode, binpack), every node offered: mean CPU time")
        out += grid_table(sched, "BM_Filter", "SchedulingService::filter alone (decoded args): mean CPU time")
        policies = policy_names(sched, "BM_Prioritize")
        out += policy_table(sched, "BM_Prioritize", "SchedulingService::prioritize alone, per policy: mean CPU time", policies)
        out += policy_table(sched, "BM_Bind", "SchedulingService::bind (GPU choice + assume) per policy: mean CPU time", policies)
        rows = ["#### The bind's GPU choice on one node (policy.place()), per policy: mean CPU time", "",
                "| policy | " + " | ".join(f"{a}% allocated" for a in ALLOCS) + " |", "|---|---:|---:|---:|"]
        for p, name in enumerate(policies):
            rows.append(f"| {name} | " + " | ".join(fmt_us(find(sched, "BM_PlaceOneNode", policy=p, **{"alloc%": a}))
                                                      for a in ALLOCS) + " |")
        out += rows + [""]
    if js:
        rows = ["#### JSON decode and encode: mean CPU time", "",
                "| benchmark | " + " | ".join(f"{n:,} nodes" for n in NODES) + " | body at 5 000 |",
                "|---|" + "---:|" * (len(NODES) + 1)]
        for base, label in (("BM_DecodeNodeNames", "decode ExtenderArgs with NodeNames (server path)"),
                            ("BM_DecodeNodeNamesDom", "the same through an nlohmann DOM"),
                            ("BM_DecodeNodes", "decode ExtenderArgs with full Nodes (server path)"),
                            ("BM_DecodeNodesDom", "the same through an nlohmann DOM"),
                            ("BM_EncodeFilterResult", "encode a filter reply (half the nodes fail)"),
                            ("BM_EncodePriorities", "encode a prioritize reply")):
            size = ""
            for b in js:
                if (b.get("run_name") or b["name"]) == f"{base}/nodes:5000" and "body_MB" in b:
                    size = f"{b['body_MB']:.1f} MB"
                elif (b.get("run_name") or b["name"]) == f"{base}/nodes:5000" and "bytes_per_second" in b \
                        and base.startswith("BM_DecodeNodeNames"):
                    size = "~200 KB"
            rows.append(f"| {label} | " + " | ".join(fmt_us(find(js, base, nodes=n)) for n in NODES) + f" | {size} |")
        out += rows + [""]
        rows = ["#### Filter request with full Node objects (nodeCacheCapable: false)", "",
                "| nodes | alloc % | mean wall | mean CPU |", "|---:|---:|---:|---:|"]
        for n, a in ((1000, 50), (5000, 0), (5000, 50), (5000, 90), (10000, 50)):
            rows.append(f"| {n:,} | {a} | {fmt_us(find(js, 'BM_FilterNodesRequest', 'real_time', nodes=n, **{'alloc%': a}))}"
                        f" | {fmt_us(find(js, 'BM_FilterNodesRequest', nodes=n, **{'alloc%': a}))} |")
        stats = [find(js, "BM_FilterNodesRequestLatency", "real_time", s, nodes=5000, **{"alloc%": 50})
                 for s in ("p50", "p90", "p99", "max")]
        rows += ["", "5 000 nodes, 50 %, 100 single requests: p50 / p90 / p99 / max = " +
                 " / ".join(fmt_us(s) for s in stats) + " (wall-clock)"]
        out += rows + [""]
    print("\n".join(out))


if __name__ == "__main__":
    main()
