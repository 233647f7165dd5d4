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

Heterogeneous fleets (GPU pods pinned to GPU models), each drawn with its own seed:
  pin5scarce     5 % of GPU pods pinned to V100M16, the scarcest model with real capacity (3 %)
  pin20scarce    20 % pinned to V100M32 alone (3 % of the GPUs: far more demand than it holds)
  pin33family    33 % pinned: a third each to V100M16|V100M32, T4|P100 and G3
  pin45multi     45 % pinned, each to 1-3 models drawn in proportion to their GPUs
  pin30plenty    30 % pinned to G2, the most plentiful model (71 % of the GPUs)
  pin60plenty    60 % pinned to G2
  pin25multigpu  multigpu20 trace, 25 % of GPU pods (multi-GPU ones included) pinned to one
                 model each in proportion to the models' GPUs
CPU-heavy and sharing-heavy:
  cpuheavy       default trace, every GPU pod's CPU request x1.5 (capped at 96 cores)
  quartershare   default trace, every one-whole-GPU pod asks for 250, 500 or 750 thousandths
  multigpu60     multigpu20 trace with 40 % of its single-GPU pods made 2-, 4- or 8-GPU pods

Writes bench/data/openb/variants/openb_pod_list_<name>.csv (same columns as the source trace);
`--seed N --out DIR` writes fresh draws (every seed + N) elsewhere, for held-out checks.

`--combined --out DIR` writes instead the combined variants, which mix the axes above and are
generated on demand rather than committed (docs/placement.md, "Combined variants"):
  gs100pin30cap     gpushare100 trace, 30 % of GPU pods pinned in proportion to the models' GPUs
  gs100pin20scarce  gpushare100 trace, 20 % pinned to V100M32
  gs100pin5v16      gpushare100 trace, 5 % pinned to V100M16
  mg20pin40fam      multigpu20 trace, 40 % pinned to a family (as pin33family)
  mg20pin30several  multigpu20 trace, 30 % pinned to 2-3 models each
  mg20multipinned   multigpu20 trace, half of the multi-GPU pods pinned to V100M32, the V100
                    family or G3
  mg60pin20         multigpu60's shape (fresh draw) with 20 % pinned in proportion
  cpuheavypin20     20 % pinned in proportion, every GPU pod's CPU x1.5
  halfsharepinG2    25 % pinned to G2, half of the whole-GPU pods halved
  pin50scarceT4     50 % pinned to T4 (14 % of the GPUs)
  pin60cap          60 % pinned in proportion

`--multigpu-sweep --out DIR` writes the multi-GPU share sweep instead: from the default trace,
mgNN has NN % of its GPU pods multi-GPU (NN = 0, 10, ..., 60): single-GPU pods made 2-, 4- or
8-GPU pods in multigpu20's proportions (CPU and memory times the GPUs), or, for 0, the trace's
few multi-GPU pods made single-GPU pods (CPU and memory divided); and each share combined with
  mgNNpin5      5 % of the GPU pods pinned to one model each, in proportion to the models' GPUs
  mgNNcpu       every GPU pod's CPU request x1.5 (capped at 96 cores)
  mgNNshare     every remaining one-whole-GPU pod asks for 250, 500 or 750 thousandths
"""
import argparse
import collections
import csv
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "openb")
OUT = os.path.join(DATA, "variants")
SEED_OFFSET = 0  # --seed: added to every variant's seed (0 = the committed variants)


def rng_for(seed):
    return random.Random(seed + SEED_OFFSET)


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
    rng = rng_for(7)
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
    rng = rng_for(7)
    gpu = [r for r in rows if int(r["num_gpu"]) > 0 and not r["gpu_spec"]]
    for row in rng.sample(gpu, int(len(gpu) * share)):
        row["gpu_spec"] = rng.choices(models, weights=[gpus[m] for m in models])[0]
    return rows, fields


def gpus_per_model():
    with open(os.path.join(DATA, "openb_node_list_gpu_node.csv"), newline="") as f:
        gpus = collections.Counter()
        for node in csv.DictReader(f):
            gpus[node["model"]] += int(node["gpu"])
    return gpus


def pin_rows(rows, share, pick, rng):
    """`share` of the unpinned GPU pods in `rows` pinned to pick(rng) (a gpu_spec string)."""
    gpu = [r for r in rows if int(r["num_gpu"]) > 0 and not r.get("gpu_spec")]
    for row in rng.sample(gpu, int(len(gpu) * share)):
        row["gpu_spec"] = pick(rng)


def pinned(trace, share, pick, seed):
    """`share` of the trace's GPU pods pinned to pick(rng) (a gpu_spec string)."""
    rows, fields = read(trace)
    if "gpu_spec" not in rows[0]:
        for row in rows:
            row["gpu_spec"] = ""
    pin_rows(rows, share, pick, rng_for(seed))
    return rows, fields


FAMILIES = ["V100M16|V100M32", "P100|T4", "G3"]


def by_capacity_picker():
    """A pick of one GPU model in proportion to its GPUs (models with 100 GPUs or more)."""
    gpus = gpus_per_model()
    models = sorted(m for m in gpus if gpus[m] >= 100)  # A10's two GPUs are no real pool
    return lambda rng: rng.choices(models, weights=[gpus[m] for m in models])[0]


def several_picker(by_capacity, counts):
    """A pick of rng.choice(counts) distinct models, each drawn by `by_capacity`."""
    def several(rng):
        count = rng.choice(counts)
        chosen = set()
        while len(chosen) < count:
            chosen.add(by_capacity(rng))
        return "|".join(sorted(chosen))
    return several


def cpu_heavy(rows):
    """Every GPU pod's CPU request x1.5, capped at 96 cores."""
    for row in rows:
        if int(row["num_gpu"]) > 0:
            row["cpu_milli"] = str(min(96000, int(int(row["cpu_milli"]) * 1.5)))


def multi_gpu(share, seed):
    rows, fields = read("openb_pod_list_multigpu20.csv")
    rng = rng_for(seed)
    multi = [int(r["num_gpu"]) for r in rows if int(r["num_gpu"]) > 1]
    singles = [r for r in rows if r["num_gpu"] == "1"]
    for row in rng.sample(singles, int(len(singles) * share)):
        count = rng.choice(multi)
        row["num_gpu"] = str(count)
        row["gpu_milli"] = "1000"
        row["cpu_milli"] = str(int(row["cpu_milli"]) * count)
        row["memory_mib"] = str(int(row["memory_mib"]) * count)
    return rows, fields


def multi_gpu_share(share, seed):
    """The default trace with `share` of its GPU pods multi-GPU (see the module's docstring)."""
    rows, fields = read("openb_pod_list_default.csv")
    rng = rng_for(seed)
    mg20, _ = read("openb_pod_list_multigpu20.csv")
    counts = [int(r["num_gpu"]) for r in mg20 if int(r["num_gpu"]) > 1]
    gpu = [r for r in rows if int(r["num_gpu"]) > 0]
    multi = [r for r in gpu if int(r["num_gpu"]) > 1]
    if share == 0:
        for row in multi:
            count = int(row["num_gpu"])
            row["num_gpu"] = "1"
            row["cpu_milli"] = str(int(row["cpu_milli"]) // count)
            row["memory_mib"] = str(int(row["memory_mib"]) // count)
        return rows, fields
    singles = [r for r in gpu if r["num_gpu"] == "1"]
    for row in rng.sample(singles, max(0, int(len(gpu) * share) - len(multi))):
        count = rng.choice(counts)
        row["num_gpu"] = str(count)
        row["gpu_milli"] = "1000"
        row["cpu_milli"] = str(int(row["cpu_milli"]) * count)
        row["memory_mib"] = str(int(row["memory_mib"]) * count)
    return rows, fields


def multi_gpu_sweep():
    by_capacity = by_capacity_picker()
    for percent in range(0, 70, 10):
        seed = 2000 + percent
        yield f"mg{percent:02d}", multi_gpu_share(percent / 100, seed)
        rows, fields = multi_gpu_share(percent / 100, seed)
        for row in rows:
            row.setdefault("gpu_spec", "")
        pin_rows(rows, 0.05, by_capacity, rng_for(seed + 1))
        yield f"mg{percent:02d}pin5", (rows, fields)
        rows, fields = multi_gpu_share(percent / 100, seed)
        cpu_heavy(rows)
        yield f"mg{percent:02d}cpu", (rows, fields)
        rows, fields = multi_gpu_share(percent / 100, seed)
        rng = rng_for(seed + 2)
        for row in rows:
            if row["num_gpu"] == "1" and row["gpu_milli"] == "1000":
                row["gpu_milli"] = str(rng.choice([250, 500, 750]))
        yield f"mg{percent:02d}share", (rows, fields)


def heterogeneous():
    by_capacity = by_capacity_picker()
    several = several_picker(by_capacity, [1, 2, 3])
    yield "pin5scarce", pinned("openb_pod_list_default.csv", 0.05, lambda rng: "V100M16", 11)
    yield "pin20scarce", pinned("openb_pod_list_default.csv", 0.20, lambda rng: "V100M32", 12)
    yield "pin33family", pinned("openb_pod_list_default.csv", 0.33, lambda rng: rng.choice(FAMILIES), 13)
    yield "pin45multi", pinned("openb_pod_list_default.csv", 0.45, several, 14)
    yield "pin30plenty", pinned("openb_pod_list_default.csv", 0.30, lambda rng: "G2", 15)
    yield "pin60plenty", pinned("openb_pod_list_default.csv", 0.60, lambda rng: "G2", 16)
    yield "pin25multigpu", pinned("openb_pod_list_multigpu20.csv", 0.25, by_capacity, 17)

    rows, fields = read("openb_pod_list_default.csv")
    cpu_heavy(rows)
    yield "cpuheavy", (rows, fields)
    rows, fields = read("openb_pod_list_default.csv")
    rng = rng_for(18)
    for row in rows:
        if row["num_gpu"] == "1" and row["gpu_milli"] == "1000":
            row["gpu_milli"] = str(rng.choice([250, 500, 750]))
    yield "quartershare", (rows, fields)
    yield "multigpu60", multi_gpu(0.4, 19)


def combined():
    by_capacity = by_capacity_picker()
    several = several_picker(by_capacity, [2, 3])

    gs100, mg20, default = ("openb_pod_list_gpushare100.csv", "openb_pod_list_multigpu20.csv",
                            "openb_pod_list_default.csv")
    yield "gs100pin30cap", pinned(gs100, 0.30, by_capacity, 531)
    yield "gs100pin20scarce", pinned(gs100, 0.20, lambda rng: "V100M32", 532)
    yield "gs100pin5v16", pinned(gs100, 0.05, lambda rng: "V100M16", 942)
    yield "mg20pin40fam", pinned(mg20, 0.40, lambda rng: rng.choice(FAMILIES), 533)
    yield "mg20pin30several", pinned(mg20, 0.30, several, 943)
    rows, fields = read(mg20)
    rng = rng_for(944)
    for row in rows:
        if int(row["num_gpu"]) > 1 and rng.random() < 0.5:
            row["gpu_spec"] = rng.choice(["V100M32", "V100M16|V100M32", "G3"])
    yield "mg20multipinned", (rows, fields)
    rows, fields = multi_gpu(0.4, 947)
    pin_rows(rows, 0.2, by_capacity, rng_for(948))
    yield "mg60pin20", (rows, fields)
    rows, fields = pinned(default, 0.20, by_capacity, 534)
    cpu_heavy(rows)
    yield "cpuheavypin20", (rows, fields)
    rows, fields = pinned(default, 0.25, lambda rng: "G2", 945)
    rng = rng_for(946)
    for row in rows:
        if row["num_gpu"] == "1" and row["gpu_milli"] == "1000" and rng.random() < 0.5:
            row["gpu_milli"] = "500"
    yield "halfsharepinG2", (rows, fields)
    yield "pin50scarceT4", pinned(default, 0.50, lambda rng: "T4", 535)
    yield "pin60cap", pinned(default, 0.60, by_capacity, 941)


def main():
    global OUT, SEED_OFFSET
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0,
                        help="added to every variant's seed: fresh draws of the same variants "
                             "(held-out checks); 0 = the committed ones")
    parser.add_argument("--out", default=OUT, help="output folder (default: %(default)s)")
    parser.add_argument("--combined", action="store_true",
                        help="write the combined variants (to --out) instead")
    parser.add_argument("--multigpu-sweep", action="store_true",
                        help="write the multi-GPU share sweep (to --out) instead")
    args = parser.parse_args()
    OUT, SEED_OFFSET = args.out, args.seed
    if args.multigpu_sweep:
        for name, (rows, fields) in multi_gpu_sweep():
            write(name, rows, fields)
        return
    if args.combined:
        for name, (rows, fields) in combined():
            write(name, rows, fields)
        return
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
    rng = rng_for(7)
    multi = [int(r["num_gpu"]) for r in rows if int(r["num_gpu"]) > 1]
    singles = [r for r in rows if r["num_gpu"] == "1"]
    for row in rng.sample(singles, int(len(singles) * 0.2)):
        count = rng.choice(multi)
        row["num_gpu"] = str(count)
        row["gpu_milli"] = "1000"
        row["cpu_milli"] = str(int(row["cpu_milli"]) * count)
        row["memory_mib"] = str(int(row["memory_mib"]) * count)
    write("multigpu40", rows, fields)

    for name, (rows, fields) in heterogeneous():
        write(name, rows, fields)


if __name__ == "__main__":
    main()
