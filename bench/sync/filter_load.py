#!/usr/bin/env python3
"""Filter requests against a live-mode extender while bench/sync/run.sh --relist makes it relist,
as kube-scheduler sends them: one pod after another on one keep-alive connection, at a steady
rate. Two modes:

  filter_load.py load PORT SAMPLES [--nodes 5000] [--offered 500] [--rate 200]
      until SIGTERM, POSTs /gpushare-scheduler/filter for a 4 GiB GPU pod offering --offered of
      the fake's gpu-node-NNNNN names, and writes one line per request to SAMPLES:
      "<unix start> <latency ms> <HTTP status or -1> <nodes passed or -1> <error>"
  filter_load.py summary SAMPLES FROM TO
      one line about the requests started in [FROM, TO] (unix seconds): count, errors, passed
      nodes (min..max), p50 / p99 / max latency.
"""
import argparse
import http.client
import json
import signal
import sys
import time


def filter_body(nodes, offered):
    count = min(offered, nodes) if offered > 0 else nodes
    names = [f"gpu-node-{i * nodes // count:05d}" for i in range(count)]
    resources = {"cpu": "4", "memory": "32Gi", "aliyun.com/gpu-mem": "4"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "relist-probe", "namespace": "default",
                     "uid": "5b6f1f0e-8d1c-4a53-9f2e-0c6d7e8f9a10"},
        "spec": {"schedulerName": "default-scheduler",
                 "containers": [{"name": "main", "image": "registry.example.com/ml/trainer:2.14.1",
                                 "resources": {"limits": resources, "requests": resources}}]},
        "status": {"phase": "Pending"},
    }
    return json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode()


def load(args):
    body = filter_body(args.nodes, args.offered)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    interval = 1.0 / args.rate
    connection = None
    next_start = time.time()
    with open(args.samples, "w", buffering=1) as out:
        while not stopping:
            now = time.time()
            if now < next_start:
                time.sleep(next_start - now)
            next_start += interval
            start = time.time()
            t0 = time.perf_counter()
            status, passed, error = -1, -1, ""
            try:
                if connection is None:
                    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
                connection.request("POST", "/gpushare-scheduler/filter", body,
                                   {"Content-Type": "application/json"})
                response = connection.getresponse()
                reply = response.read()
                status = response.status
                result = json.loads(reply)
                passed = len(result.get("NodeNames") or [])
                error = (result.get("Error") or "").replace("\n", " ")
            except Exception as e:  # counted as a failed request; a new connection next time
                error = f"{type(e).__name__}: {e}".replace("\n", " ")
                connection = None
            latency = (time.perf_counter() - t0) * 1000
            out.write(f"{start:.6f} {latency:.3f} {status} {passed} {error}\n")
            # Behind schedule (a slow answer): carry on from now rather than bursting.
            next_start = max(next_start, time.time())


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def summary(args):
    rows = []
    with open(args.samples) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 4)
            if len(parts) < 4:
                continue  # the line being written when the load stopped
            start = float(parts[0])
            if args.start <= start <= args.end:
                rows.append((float(parts[1]), int(parts[2]), int(parts[3]), parts[4] if len(parts) > 4 else ""))
    latencies = sorted(r[0] for r in rows)
    failed = [r for r in rows if r[1] != 200 or r[3]]
    passed = [r[2] for r in rows if r[1] == 200]
    print(f"{len(rows)} filter requests, {len(failed)} failed"
          + (f" (first: {failed[0][1]} {failed[0][3]})" if failed else "")
          + (f", nodes passed {min(passed)}..{max(passed)}" if passed else "")
          + f", latency p50 {percentile(latencies, 0.5):.1f} ms, p99 {percentile(latencies, 0.99):.1f} ms,"
          + f" max {latencies[-1] if latencies else float('nan'):.1f} ms")


def main():
    parser = argparse.ArgumentParser()
    modes = parser.add_subparsers(dest="mode", required=True)
    run = modes.add_parser("load")
    run.add_argument("port", type=int)
    run.add_argument("samples")
    run.add_argument("--nodes", type=int, default=5000)
    run.add_argument("--offered", type=int, default=500)
    run.add_argument("--rate", type=float, default=200)
    report = modes.add_parser("summary")
    report.add_argument("samples")
    report.add_argument("start", type=float)
    report.add_argument("end", type=float)
    args = parser.parse_args()
    load(args) if args.mode == "load" else summary(args)


if __name__ == "__main__":
    sys.exit(main())
