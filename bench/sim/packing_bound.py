#!/usr/bin/env python3
"""How well could any placement pack the GPU-sharing pods that have arrived by 100 %?

Reads the arrival sequences written by `gpushare-sim --dump-arrivals FILE` and, per seed, solves
the LP relaxation of bin packing (cutting stock, by column generation, in exact arithmetic) for
the sharing pods (one GPU, less than 1000 milli-GPU) arrived by 100 % of capacity, ignoring
CPU, memory and node boundaries. Placing all of them needs at least ceil(LP) GPUs, so at least
ceil(LP) * 1000 - (their demand) milli-GPU stays idle: a floor on the idle GPUs of any policy
that places every such pod. (A policy can only go lower by having sharing pods fail instead.)

    gpushare-sim ... --pods openb_pod_list_default.csv --seeds 10 --dump-arrivals a.csv
    bench/sim/packing_bound.py a.csv
"""
import csv
import sys
from collections import Counter, defaultdict
from fractions import Fraction


def simplex_max(c, rows, b):
    """max c.y subject to rows.y <= b, y >= 0 (b >= 0): dense tableau, Bland's rule."""
    m, n = len(rows), len(c)
    tableau = [[Fraction(x) for x in rows[i]] + [Fraction(int(i == j)) for j in range(m)]
               + [Fraction(b[i])] for i in range(m)]
    objective = [Fraction(-x) for x in c] + [Fraction(0)] * (m + 1)
    basis = [n + i for i in range(m)]
    while True:
        col = next((j for j in range(n + m) if objective[j] < 0), None)
        if col is None:
            break
        best = None
        for i in range(m):
            if tableau[i][col] > 0:
                ratio = tableau[i][-1] / tableau[i][col]
                if best is None or ratio < best[0] or (ratio == best[0] and basis[i] < basis[best[1]]):
                    best = (ratio, i)
        row = best[1]
        pivot = tableau[row][col]
        tableau[row] = [x / pivot for x in tableau[row]]
        for i in range(m):
            if i != row and tableau[i][col] != 0:
                f = tableau[i][col]
                tableau[i] = [a - f * p for a, p in zip(tableau[i], tableau[row])]
        f = objective[col]
        objective = [a - f * p for a, p in zip(objective, tableau[row])]
        basis[row] = col
    y = [Fraction(0)] * n
    for i, var in enumerate(basis):
        if var < n:
            y[var] = tableau[i][-1]
    return objective[-1], y


def best_pattern(sizes, values, capacity=1000, step=10):
    """Unbounded knapsack: the GPU filling with the highest total dual value."""
    slots = capacity // step
    best = [Fraction(0)] * (slots + 1)
    choice = [None] * (slots + 1)
    for w in range(1, slots + 1):
        best[w], choice[w] = best[w - 1], None
        for i, size in enumerate(sizes):
            k = size // step
            if k <= w and best[w - k] + values[i] > best[w]:
                best[w], choice[w] = best[w - k] + values[i], i
    pattern, w = [0] * len(sizes), slots
    while w > 0:
        if choice[w] is None:
            w -= 1
        else:
            pattern[choice[w]] += 1
            w -= sizes[choice[w]] // step
    return best[slots], pattern


def lp_bins(counts):
    sizes = sorted(counts)
    demand = [counts[s] for s in sizes]
    patterns = [[(1000 // s) * int(i == j) for j in range(len(sizes))] for i, s in enumerate(sizes)]
    while True:  # dual of the restricted master: max demand.y, pattern.y <= 1
        value, y = simplex_max(demand, patterns, [1] * len(patterns))
        reduced, pattern = best_pattern(sizes, y)
        if reduced <= 1:
            return value
        patterns.append(pattern)


def main(path):
    sharing = defaultdict(Counter)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if float(row["arrived_pct"]) > 100.0:
                continue
            milli = int(row["gpu_milli"])
            if int(row["num_gpu"]) == 1 and 0 < milli < 1000:
                sharing[int(row["seed"])][milli] += 1
    if any(size % 10 for counts in sharing.values() for size in counts):
        sys.exit("sizes must be multiples of 10 milli-GPU")
    total = 0.0
    for seed, counts in sorted(sharing.items()):
        value = lp_bins(counts)
        bins = -(-value.numerator // value.denominator)
        idle = bins * 1000 - sum(s * n for s, n in counts.items())
        total += idle / 1000
        print(f"seed {seed}: {sum(counts.values())} sharing pods need >= {bins} GPUs "
              f"(LP {float(value):.2f}); >= {idle / 1000:.1f} GPUs idle")
    print(f"mean: >= {total / len(sharing):.1f} idle GPUs if every sharing pod is placed")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin")
