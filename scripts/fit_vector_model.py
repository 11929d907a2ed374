#!/usr/bin/env python3
"""Fits the narrow-vector kernel's cost model (lib/src/device/cost_model.cpp, vector_part_ns) to timed plans.

Inputs:
  * bench_spmm CSVs holding rows of `auto_vectors` (every band as narrow vectors, automatic split) and
    `auto_vectors_piecesS` (the split bound forced to S K-steps, PlanKnobs::vector_piece_steps). A CSV named as
    PATH=old had its `auto_vectors` rows made with the split before session 58 (a fixed bound of max(32, steps per
    warp)); PATH=forced keeps only its forced rows (another automatic rule than today's);
  * for each matrix, the file `apps/research/model_predict --vector-bands FILE` writes (one line a band: its
    groups and its longer window's groups, in the layout the plan used), found as DIR/NAME.txt where NAME is the
    CSV's matrix name (':' kept; the part after the first ',' dropped).

It emulates the plan's schedule (device/vector_schedule.hpp) for each timed row, fits the model's constants by
relative least squares (log of predicted over measured; Nelder-Mead, no dependencies), and prints them with the
error distribution and the worst rows. The fit assumes the device the rows were timed on: --sms multiprocessors,
7 blocks of 4 warps each resident (kernels/vector_params.hpp).

Example:
  build/apps/research/model_predict --matrix G51.mtx --n 8 --vector-bands bands/G51.txt
  scripts/fit_vector_model.py --bands bands run38/shared38.csv=old run41/pieces41.csv=old run43/vec43.csv
"""

import argparse
import csv
import math
import sys
from pathlib import Path

NAMES = ["fixed", "chain16", "chain32", "chain64", "part16", "part32", "part64",
         "step16", "step32", "step64", "window", "narrow_b_row", "split"]
# The constants as cost_model.cpp has them (the starting point of the fit).
START = [7400, 620, 850, 1270, 95, 175, 225, 0.34, 0.52, 0.92, 0.35, 0.127, 1400]
PART_TO_STEP_COST = 0.18  # vector_schedule.hpp, kVectorPartToStepCost
MIN_PIECE_STEPS = 2       # vector_schedule.hpp, kVectorMinPieceSteps
SPLIT_MIN_SAVED_STEPS = 1  # vector_schedule.hpp, kVectorSplitMinSavedSteps


def read_windows(path):
    windows = []
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        groups, longest = (int(x) for x in line.split())
        windows += [longest, groups - longest]
    return windows


def window_bound(groups, base):
    """vector_window_piece_steps: the automatic split's bound for one window."""
    bound = max(base, math.ceil(math.sqrt(PART_TO_STEP_COST * groups)))
    return max(groups, bound) if groups <= bound + SPLIT_MIN_SAVED_STEPS else bound


def schedule(windows, n, split, sms):
    """What the model needs of the plan's schedule: steps, windows, each warp's share of the steps, and each
    window's (piece length, parts) once."""
    slices = (n + 63) // 64
    warps = max(1, (7 * 4 * sms + slices - 1) // slices)
    groups = sum(windows)
    per_warp = (groups + warps - 1) // warps
    base = {"old": max(32, per_warp), "auto": max(MIN_PIECE_STEPS, per_warp)}.get(split)
    if base is None:
        base = int(split)
    pieces = steps = 0
    shapes = set()
    for g in windows:
        if g <= 0:
            pieces += 1
            steps += 1
            continue
        bound = window_bound(g, base) if split == "auto" else base
        parts = (g + bound - 1) // bound
        pieces += parts
        steps += g
        shapes.add(((g + parts - 1) // parts, parts))
    dealt = min(warps, pieces)
    return {"groups": groups, "windows": len(windows), "share": (steps + dealt - 1) // dealt, "shapes": shapes,
            "slices": slices}


def predict_us(c, f, n, b_rows):
    s = 0 if n <= 16 else 1 if n <= 32 else 2
    chain = f["share"] * c[1 + s]
    for length, parts in f["shapes"]:
        chain = max(chain, length * c[1 + s] + (c[12] + parts * c[4 + s] if parts > 1 else 0.0))
    throughput = f["slices"] * (f["groups"] * c[7 + s] + f["windows"] * c[10])
    # B narrower than 8 columns: staging (the library's term, shared with the tiles) and the vectors' own rows.
    narrow = (4000.0 + 0.016 * b_rows + c[11] * b_rows) if n < 8 else 0.0
    return (c[0] + max(chain, throughput) + narrow) / 1e3


def nelder_mead(f, x0, iterations=4000, step=0.2):
    dim = len(x0)
    simplex = [list(x0)] + [[x0[j] * (1 + step) if j == i else x0[j] for j in range(dim)] for i in range(dim)]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = sorted(range(dim + 1), key=lambda i: values[i])
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        centre = [sum(simplex[i][j] for i in range(dim)) / dim for j in range(dim)]
        worst = simplex[-1]
        reflected = [centre[j] + (centre[j] - worst[j]) for j in range(dim)]
        fr = f(reflected)
        if fr < values[0]:
            expanded = [centre[j] + 2 * (centre[j] - worst[j]) for j in range(dim)]
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = [centre[j] + 0.5 * (worst[j] - centre[j]) for j in range(dim)]
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                for i in range(1, dim + 1):
                    simplex[i] = [simplex[0][j] + 0.5 * (simplex[i][j] - simplex[0][j]) for j in range(dim)]
                    values[i] = f(simplex[i])
    best = min(range(dim + 1), key=lambda i: values[i])
    return simplex[best], values[best]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", help="bench_spmm CSVs, each PATH, PATH=old or PATH=forced")
    parser.add_argument("--bands", type=Path, required=True, help="folder of model_predict --vector-bands files")
    parser.add_argument("--sms", type=int, default=132, help="multiprocessors of the device timed")
    parser.add_argument("--no-fit", action="store_true", help="only the current constants' errors")
    args = parser.parse_args()

    rows, missing = [], set()
    for spec in args.csv:
        path, _, kind = spec.partition("=")
        if kind not in ("", "old", "forced"):
            sys.exit(f"{spec}: the kind after '=' is old or forced")
        for r in csv.DictReader(open(path)):
            method = r["method"]
            if method == "auto_vectors":
                if kind == "forced":
                    continue
                split = "old" if kind == "old" else "auto"
            elif method.startswith("auto_vectors_pieces") and method[19:].isdigit():
                split = method[19:]
            else:
                continue
            try:
                measured = float(r["median_ms"]) * 1e3
            except ValueError:
                continue
            if not math.isfinite(measured):
                continue
            name = r["matrix"].split(",")[0]
            bands = args.bands / f"{name}.txt"
            if not bands.exists():
                missing.add(name)
                continue
            n = int(r["n"])
            rows.append((name, n, split, measured, int(r["cols"]), schedule(read_windows(bands), n, split, args.sms)))
    if missing:
        print("no --vector-bands file for: " + ", ".join(sorted(missing)), file=sys.stderr)
    if not rows:
        sys.exit("no timed vector plans found")

    def loss(c):
        if min(c) < 0:
            return 1e9
        return sum(math.log(predict_us(c, f, n, b) / t) ** 2 for _, n, _, t, b, f in rows) / len(rows)

    constants, value = START, loss(START)
    if not args.no_fit:
        for step in (0.2, 0.05):
            fitted, fitted_value = nelder_mead(loss, constants, step=step)
            if fitted_value < value:
                constants, value = fitted, fitted_value
    print(f"{len(rows)} timed plans; rms log(predicted / measured) = {math.sqrt(value):.3f}")
    for name, now, start in zip(NAMES, constants, START):
        print(f"  {name:13s} {now:10.4g}   (cost_model.cpp: {start:g})")
    ratios = sorted((predict_us(constants, f, n, b) / t, name, n, split, t) for name, n, split, t, b, f in rows)
    share = lambda lo, hi: sum(lo <= r[0] <= hi for r in ratios) / len(ratios)
    outside = sum(not 0.67 <= r[0] <= 1.5 for r in ratios)
    print(f"within 0.8-1.25x: {share(0.8, 1.25):.0%}; within 0.67-1.5x: {share(0.67, 1.5):.0%} ({outside} outside)")
    for label, part in (("most under", ratios[:5]), ("most over", ratios[-5:])):
        print(label + ": " + "; ".join(f"{nm} n={n} split {sp}: {t:.1f} us, x{r:.2f}" for r, nm, n, sp, t in part))


if __name__ == "__main__":
    main()
