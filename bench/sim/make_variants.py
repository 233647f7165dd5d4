#!/usr/bin/env python3
"""Workload shapes the placement policies were not tuned on, generated from the openb traces
(Weng et al., USENIX ATC'23), deterministically (seed 7):

  constrained10  default trace; 10 % of the GPU pods are pinned to one GPU model each, drawn in
                 proportion to the models' GPUs (the pinned demand fits its models)
  constrained30  default trace; 30 % of the GPU pods are pinned to GPU models through gpu_spec:
                 half to the scarce V100 family (V100M16|V100M32, 85 of 1213 nodes), half to T4
  constrained60  the same with 60 % pinned, a third each to V100M16|V100M32, T4 and P100
  halfshare      default trace with every one-whole-GPU pod halved (500 thousandths): heavier
                 sharing, twice as many pods per GPU
  multigpu40     multigpu20 trace with another 20 % of its single-GPU pods turned into 2-, 4- or
                 8-GPU pods in the trace's own proportions

Writes bench/data/openb/variants/openb_pod_list_<name>.csv (same columns as the source trace).
"""
import collections
import csv
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "openb")
OUT = os.path.join(DATA, "variants")


def read(name):
    with open(os.path.join(DATA, name), newline="") as f:
        rows = list(csv.DictReader(f))
    return rows, list(rows[0].keys())


def write(name, rows, fields):
    if "gpu_spec" not in fields:
        fields = fields + ["gpu_spec"]
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, f"openb_pod_list_{name}.csv")
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in fields})
    print(path, len(rows), "pods")


def constrained(share, groups):
    rows, fields = read("openb_pod_list_default.csv")
    rng = random.Random(7)
    gpu = [r for r in rows if int(r["num_gpu"]) > 0 and not r["gpu_spec"]]
    pinned = rng.sample(gpu, int(len(gpu) * share))
    for i, row in enumerate(pinned):
        row["gpu_spec"] = groups[i % len(groups)]
    return rows, fields


def constrained_by_capacity(share):
    rows, fields = read("openb_pod_list_default.csv")
    with open(os.path.join(DATA, "openb_node_list_gpu_node.csv"), newline="") as f:
        gpus = collections.Counter()
        for node in csv.DictReader(f):
            gpus[node["model"]] += int(node["gpu"])
    models = sorted(gpus)
    rng = random.Random(7)
    gpu = [r for r in rows if int(r["num_gpu"]) > 0 and not r["gpu_spec"]]
    for row in rng.sample(gpu, int(len(gpu) * share)):
        row["gpu_spec"] = rng.choices(models, weights=[gpus[m] for m in models])[0]
    return rows, fields


def main():
    rows, fields = constrained_by_capacity(0.10)
    write("constrained10", rows, fields)
    rows, fields = constrained(0.30, ["V100M16|V100M32", "T4"])
    write("constrained30", rows, fields)
    rows, fields = constrained(0.60, ["V100M16|V100M32", "T4", "P100"])
    write("constrained60", rows, fields)

    rows, fields = read("openb_pod_list_default.csv")
    for row in rows:
        if row["num_gpu"] == "1" and row["gpu_milli"] == "1000":
            row["gpu_milli"] = "500"
    write("halfshare", rows, fields)

    rows, fields = read("openb_pod_list_multigpu20.csv")
    rng = random.Random(7)
    multi = [int(r["num_gpu"]) for r in rows if int(r["num_gpu"]) > 1]
    singles = [r for r in rows if r["num_gpu"] == "1"]
    for row in rng.sample(singles, int(len(singles) * 0.2)):
        count = rng.choice(multi)
        row["num_gpu"] = str(count)
        row["gpu_milli"] = "1000"
        row["cpu_milli"] = str(int(row["cpu_milli"]) * count)
        row["memory_mib"] = str(int(row["memory_mib"]) * count)
    write("multigpu40", rows, fields)


if __name__ == "__main__":
    main()
