#!/usr/bin/env python3
"""A latency distribution with the machine's noise taken out: each request's least CPU time over
several rounds.

The *Latency benchmarks run one request per repetition, and a process replays the same requests
in the same order (the same cluster, the same pods), so request k of one round is request k of
every round. On a shared or virtualised machine a round's p99 is set by whatever else ran (other
tenants, interrupts, steal time), not by the request. This runs the benchmark `--rounds` times,
each reporting every request (GPUSHARE_BENCH_EACH_REQUEST=1), takes each request's least CPU time
over the rounds, and prints the percentiles of those least times next to each round's own p99.

  bench/least_of_rounds.py --rounds 5 --cpu 1 -- build/bench/scheduling_bench \\
    --benchmark_filter='BM_PrioritizeLatency/policy:2/nodes:5000/alloc%:(50|90)/cpuonly:0/learned:1/newpod:[0123]'

The least of a few rounds is what the request costs on a quiet core; it is not what a user of a
busy machine sees. Quote it as such, with the per-round figures beside it.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile


def percentile(values, p):
    ordered = sorted(values)
    rank = p / 100 * (len(ordered) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


def one_round(command, cpu):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        argv = list(command) + [f"--benchmark_out={out.name}", "--benchmark_out_format=json"]
        if cpu is not None:
            argv = ["taskset", "-c", str(cpu)] + argv
        env = dict(os.environ, GPUSHARE_BENCH_EACH_REQUEST="1")
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        report = json.load(open(out.name))
    times = collections.defaultdict(list)
    unit = {}
    for bench in report["benchmarks"]:
        if bench.get("run_type") != "iteration":
            continue
        times[bench["run_name"]].append(bench["cpu_time"])
        unit[bench["run_name"]] = bench.get("time_unit", "ns")
    return times, unit


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=None, help="pin every round to this CPU")
    parser.add_argument("command", nargs="+", help="the benchmark binary and its flags")
    args = parser.parse_args()
    rounds = [one_round(args.command, args.cpu) for _ in range(args.rounds)]
    names = list(rounds[0][0])
    for name in names:
        series = [times[name] for times, _ in rounds]
        count = min(len(s) for s in series)
        if any(len(s) != count for s in series):
            print(f"{name}: rounds differ in requests", file=sys.stderr)
            return 1
        least = [min(s[k] for s in series) for k in range(count)]
        unit = rounds[0][1][name]
        print(f"{name}  requests={count} rounds={len(series)}  least of rounds ({unit}): "
              f"p50 {percentile(least, 50):.0f}  p90 {percentile(least, 90):.0f}  "
              f"p99 {percentile(least, 99):.0f}  max {max(least):.0f}  |  each round's p99: "
              + " ".join(f"{percentile(s, 99):.0f}" for s in series))
    return 0


if __name__ == "__main__":
    sys.exit(main())
