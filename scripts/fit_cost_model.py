#!/usr/bin/env python3
"""The cost model's error per structure class, and a first-order refit of its throughput constants.

Reads benchmark CSVs written by bench_spmm (gpu_check's `model` step, the sweep, the other steps) and prints, as
Markdown:
  1. the model's error per class and method: measured / predicted time (the plan's predicted_us, written by
     bench_spmm since the `model` step; for older CSVs from --predictions files that apps/research/model_predict
     writes on the CPU, built with -DBCSR24_BUILD_RESEARCH=ON);
  2. the measured plans: `auto` (Tuning::measure) against `auto_model` and the fastest of the candidates timed
     beside it (auto_tiles, auto_hybrid, auto_csr, split_pipelined, csr_cuda_cores), with the tuning time;
  3. `auto` against the best cuSPARSE variant (SpMM on CSR and BSR, SpMV at n = 1) per class, and every cell below
     1.0x;
  4. the tile and CSR throughput constants of lib/src/device/cost_model.cpp refitted (relative least squares) to
     the split_pipelined and csr_cuda_cores times, beside the current values. The fit leaves out the latency
     terms (a band's or row's critical path): classes whose residuals stay large after it are latency-bound.

Examples:
  scripts/fit_cost_model.py OUT/model.csv OUT/model_shared/sweep.csv
  build/apps/research/model_predict --matrix A.mtx --csv pred.csv; scripts/fit_cost_model.py docs/sweep/sweep.csv --predictions pred.csv
"""

import argparse
import csv
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
STRUCTURE_CLASSES = ["arrowhead", "dense_rows", "dense_cols", "block_diagonal", "power_law", "short_rows",
                     "long_rows", "least_squares", "circuit"]
MODEL_METHODS = ["auto_model", "auto", "split_pipelined", "csr_cuda_cores", "auto_tiles", "auto_hybrid", "auto_csr"]
CANDIDATE_METHODS = ["auto_model", "auto_tiles", "auto_hybrid", "auto_csr", "split_pipelined", "csr_cuda_cores"]
CUSPARSE_PREFIX = "cusparse_"
# The model's constants (ns) as the fit names them, and where they are in cost_model.cpp.
SLICE_WIDTHS = [8, 16, 32, 64]
TILE_LAUNCH_NS = "kTileLaunchNs"
CSR_LAUNCH_NS = "kCsrLaunchNs"


def matrix_class(name):
    for kind in STRUCTURE_CLASSES:
        if name.startswith(kind):
            return kind
    if name.startswith("graph"):
        return "power_law" if "_power" in name else "random_graph"
    if name.startswith("mesh"):
        return "mesh_random" if name.endswith("random") else "mesh_lex"
    if re.match(r"^\d+d\d+s", name):
        return "xdys"
    return "real"


def number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def usable(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def geomean(values):
    values = [v for v in values if usable(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


class Cell:
    """One (matrix, n, method) measurement."""

    def __init__(self, row):
        self.matrix = row["matrix"]
        self.n = int(row["n"])
        self.method = row["method"]
        self.ms = number(row.get("median_ms"))
        self.predicted_us = number(row.get("predicted_us"))
        self.tuning_ms = number(row.get("tuning_ms"))
        self.plan = row.get("plan") or ""
        self.rows = int(number(row.get("rows")) or 0) if usable(number(row.get("rows"))) else 0
        self.cols = int(number(row.get("cols"))) if usable(number(row.get("cols"))) else 0
        self.nnz = number(row.get("nnz"))
        self.dense_tiles = number(row.get("dense_tiles"))
        self.sparse24_tiles = number(row.get("sparse24_tiles"))
        self.layout = row.get("layout") or ""
        self.device = row.get("device") or ""

    @property
    def us(self):
        return self.ms * 1e3


def read_cells(paths):
    """Cells by (matrix, n, method). In a CSV from before measured plans (no tuning_ms column and no `auto_model`
    rows) `auto` was the cost model's plan: it is read as `auto_model`. scripts/sweep.py's CSV has no tuning_ms
    column, but where it lists `auto_model` beside `auto`, `auto` is the measured plan."""
    cells = {}
    for path in paths:
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            before_tuning = ("tuning_ms" not in (reader.fieldnames or []) and
                             not any(row.get("method") == "auto_model" for row in rows))
            for row in rows:
                if not row.get("matrix") or not row.get("n") or not row.get("method"):
                    continue
                if before_tuning and row["method"] == "auto":
                    row = dict(row, method="auto_model")
                cell = Cell(row)
                if usable(cell.ms):
                    cells[(cell.matrix, cell.n, cell.method)] = cell  # a later file replaces an earlier cell
    return cells


def read_predictions(paths, cells):
    added = 0
    for path in paths:
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle):
                key = (row["matrix"], int(row["n"]), row["method"])
                cell = cells.get(key)
                if cell is not None and not usable(cell.predicted_us):
                    cell.predicted_us = number(row["predicted_us"])
                    added += 1
    return added


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out + [""]


def fmt(x, digits=2, suffix=""):
    return f"{x:.{digits}f}{suffix}" if isinstance(x, (int, float)) and math.isfinite(x) else "–"


# --- 1. error per class -----------------------------------------------------------------------------------------

def error_section(cells, detail):
    groups = defaultdict(list)
    for c in cells.values():
        if c.method in MODEL_METHODS and usable(c.predicted_us):
            groups[(matrix_class(c.matrix), c.method)].append(c)
    lines = ["## The model's error per class", "",
             "measured / predicted time of each method's plan (> 1: slower than predicted), over the cells (matrix, "
             "n) of the class; *within 1.25x*: the share of cells where the prediction is within 25% either way.", ""]
    if not groups:
        return lines + ["No cell has a prediction (run gpu_check's `model` step, or give --predictions).", ""]
    rows = []
    for (kind, method), group in sorted(groups.items()):
        ratios = [c.us / c.predicted_us for c in group]
        within = sum(1 for r in ratios if 0.8 <= r <= 1.25) / len(ratios)
        rows.append([kind, f"`{method}`", len(group), fmt(geomean(ratios)), fmt(min(ratios)), fmt(max(ratios)),
                     f"{100 * within:.0f}%"])
    lines += md_table(["class", "method", "cells", "geo-mean", "min", "max", "within 1.25x"], rows)
    if detail:
        rows = []
        for (kind, method), group in sorted(groups.items()):
            for c in sorted(group, key=lambda c: (c.matrix, c.n)):
                rows.append([kind, c.matrix, c.n, f"`{method}`", fmt(c.predicted_us, 1), fmt(c.us, 1),
                             fmt(c.us / c.predicted_us)])
        lines += ["### Every cell", ""] + md_table(["class", "matrix", "n", "method", "predicted us", "measured us",
                                                   "ratio"], rows)
    return lines


# --- 2. measured plans ------------------------------------------------------------------------------------------

def tuner_section(cells):
    rows, within, total, tuning = [], 0, 0, []
    for (matrix, n, method), tuned in sorted(cells.items()):
        if method != "auto" or not usable(tuned.tuning_ms):
            continue
        candidates = [cells[(matrix, n, m)] for m in CANDIDATE_METHODS if (matrix, n, m) in cells]
        if not candidates:
            continue
        fastest = min(candidates, key=lambda c: c.us)
        model = cells.get((matrix, n, "auto_model"))
        ratio = tuned.us / fastest.us
        total += 1
        within += ratio <= 1.1
        tuning.append(tuned.tuning_ms)
        rows.append([matrix, n, fmt(model.us if model else math.nan, 1), fmt(tuned.us, 1),
                     f"`{fastest.method}` {fmt(fastest.us, 1)}", fmt(ratio), fmt(tuned.tuning_ms, 1),
                     tuned.plan.replace("|", "/")])
    lines = ["## Measured plans", "",
             "`auto` (Tuning::measure) against the cost model's plan (`auto_model`) and the fastest candidate timed "
             "beside it (L2 flushed, as every bench_spmm time; the tuner evicts L2 before each timed run where the "
             "problem is under 4 times L2).", ""]
    if not rows:
        return lines + ["No `auto` cell with a tuning time (bench_spmm before measured plans, or no candidates).", ""]
    lines += md_table(["matrix", "n", "auto_model us", "auto us", "fastest candidate us", "auto / fastest",
                       "tuning ms", "plan"], rows)
    lines += [f"`auto` within 10% of the fastest candidate in {within} of {total} cells; tuning time median "
              f"{sorted(tuning)[len(tuning) // 2]:.1f} ms, largest {max(tuning):.1f} ms.", ""]
    return lines


# --- 3. auto against cuSPARSE -----------------------------------------------------------------------------------

def cusparse_section(cells):
    by_cell = defaultdict(dict)
    for c in cells.values():
        by_cell[(c.matrix, c.n)][c.method] = c
    per_class = defaultdict(list)
    below = []
    for (matrix, n), methods in sorted(by_cell.items()):
        auto = methods.get("auto") or methods.get("auto_model")
        baselines = [c for m, c in methods.items() if m.startswith(CUSPARSE_PREFIX)]
        if auto is None or not baselines:
            continue
        best = min(baselines, key=lambda c: c.us)
        speedup = best.us / auto.us
        per_class[(matrix_class(matrix), n)].append(speedup)
        if speedup < 1.0:
            below.append([matrix, n, fmt(auto.us, 1), f"`{best.method}` {fmt(best.us, 1)}", fmt(speedup)])
    lines = ["## `auto` against the best cuSPARSE variant", "",
             "best cuSPARSE time / `auto` time (> 1: `auto` faster; `auto_model` where the CSV predates measured "
             "plans); SpMV counts at n = 1.", ""]
    if not per_class:
        return lines + ["No cell has both `auto` and a cuSPARSE time.", ""]
    rows = [[kind, n, len(v), fmt(geomean(v)), fmt(min(v))] for (kind, n), v in sorted(per_class.items())]
    lines += md_table(["class", "n", "cells", "geo-mean", "min"], rows)
    if below:
        lines += ["Cells below 1.0x:", ""] + md_table(["matrix", "n", "auto us", "best cuSPARSE us", "speedup"], below)
    else:
        lines += ["No cell below 1.0x.", ""]
    return lines


# --- 4. refit ----------------------------------------------------------------------------------------------------

def read_constants(path):
    """name -> float or list of floats, for the `constexpr double NAME[...] = {...};` lines of cost_model.cpp."""
    constants = {}
    text = Path(path).read_text()
    for name, body in re.findall(r"constexpr double (k\w+)(?:\[\d+\])?\s*=\s*([^;]+);", text):
        values = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", body)]
        constants[name] = values if body.strip().startswith("{") else values[0]
    return constants


def solve(rows, targets, count):
    """Least squares of rows x = targets (relative: each row scaled by its target), coefficients kept >= 0 by dropping
    a negative one and solving again. Returns the coefficients or None."""
    active = list(range(count))
    while active:
        ata = [[0.0] * len(active) for _ in active]
        atb = [0.0] * len(active)
        for row, y in zip(rows, targets):
            w = 1.0 / y
            for i, a in enumerate(active):
                atb[i] += row[a] * w * y * w
                for j, b in enumerate(active):
                    ata[i][j] += row[a] * w * row[b] * w
        size = len(active)
        for i in range(size):
            ata[i][i] += 1e-12 * (ata[i][i] or 1.0)
        # Gaussian elimination with partial pivoting.
        m = [ata[i] + [atb[i]] for i in range(size)]
        for col in range(size):
            pivot = max(range(col, size), key=lambda r: abs(m[r][col]))
            if abs(m[pivot][col]) < 1e-300:
                return None
            m[col], m[pivot] = m[pivot], m[col]
            for r in range(size):
                if r != col:
                    f = m[r][col] / m[col][col]
                    m[r] = [a - f * b for a, b in zip(m[r], m[col])]
        x = [m[i][size] / m[i][i] for i in range(size)]
        if min(x) >= 0:
            out = [0.0] * count
            for a, v in zip(active, x):
                out[a] = v
            return out
        active.pop(x.index(min(x)))
    return None


def constant(x):
    """A constant of the model for the refit tables: whole ns from 100 on, else 3 or 5 significant decimals."""
    if not (isinstance(x, (int, float)) and math.isfinite(x)):
        return "–"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3f}" if abs(x) >= 0.01 else f"{x:.5f}"


def slice_width(n):
    return 8 if n <= 8 else 16 if n <= 16 else 32 if n <= 32 else 64


def refit_section(cells, constants, l2_bytes):
    lines = ["## Refit of the throughput constants", "",
             "Relative least squares over the cells of each method (at n < 8 the staging of B taken out first), with "
             "the launch as a fitted constant; the latency terms (a band's or a row's critical path) are not fitted, "
             "so cells they dominate pull the fit. Current values from lib/src/device/cost_model.cpp; nothing is "
             "applied to it.", ""]
    # Tiles, per slice class: time = launch + slices * (a * 2:4 tiles + b * dense tiles + c * bands + g * gathered).
    rows_out = []
    for index, width in enumerate(SLICE_WIDTHS):
        rows, targets = [], []
        for c in cells.values():
            if c.method != "split_pipelined" or slice_width(c.n) != width or not c.rows:
                continue
            s24, dense = c.sparse24_tiles, c.dense_tiles
            if not (math.isfinite(s24) and math.isfinite(dense)):
                continue
            ns = c.us * 1e3
            if c.n < 8:
                ns -= constants.get("kStageBLaunchNs", 4000.0) + c.cols * 32.0 / constants.get("kStageBBytesPerNs", 2000.0)
            if ns <= 0:
                continue
            slices = (c.n + width - 1) // width
            gathered = 0.0 if c.layout in ("", "aligned/none") else 1.0
            bands = (c.rows + 15) // 16
            rows.append([1.0, slices * s24, slices * dense, slices * bands, slices * gathered * (s24 + dense)])
            targets.append(ns)
        names = [TILE_LAUNCH_NS, "kSparse24TileNs", "kDenseTileNs", "kBandNs", "kGatherTileNs"]
        if len(rows) < 10:
            rows_out.append([width, len(rows)] + ["–"] * 5)
            continue
        fit = solve(rows, targets, 5)
        current = [constants.get(TILE_LAUNCH_NS, math.nan)] + [constants.get(name, [math.nan] * 4)[index]
                                                               for name in names[1:]]
        rows_out.append([width, len(rows)] + [f"{constant(cur)} → {constant(new)}"
                                             for cur, new in zip(current, fit or [math.nan] * 5)])
    lines += ["Tile kernel (ns: the launch, then per tile or band and column slice; `split_pipelined` cells):", ""]
    lines += md_table(["slice", "cells", "launch", "2:4 tile", "dense tile", "band", "gathered tile"], rows_out)
    # CSR: time = nnz * (base + w * per-column [L2 or DRAM]) + rows * (row base + w * row per-column).
    samples = []  # (cell, features, target ns)
    for c in cells.values():
        if c.method != "csr_cuda_cores" or not c.rows or not usable(c.nnz):
            continue
        ns = c.us * 1e3
        feature = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        for col0 in range(0, c.n, 256):
            w = c.n if c.n < 8 else (min(c.n - col0, 256) + 7) // 8 * 8
            in_l2 = c.cols * w * 2.0 <= constants.get("kL2UsableShare", 0.75) * l2_bytes
            feature[1] += c.nnz
            feature[2 if in_l2 else 3] += c.nnz * w
            feature[4] += c.rows
            feature[5] += c.rows * w
        samples.append((c, feature, ns))
    names = [CSR_LAUNCH_NS, "kCsrNnzBaseNs", "kCsrNnzPerColumnL2Ns", "kCsrNnzPerColumnDramNs", "kCsrRowBaseNs",
             "kCsrRowPerColumnNs"]
    lines += ["CSR kernel (ns per nonzero or row and column; `csr_cuda_cores` cells):", ""]
    if len(samples) < 10:
        return lines + [f"Too few cells ({len(samples)}) to fit.", ""]
    fit = solve([f for _, f, _ in samples], [y for _, _, y in samples], 6)
    lines += md_table(["constant", "current", "fitted"],
                      [[f"`{name}`", constant(constants.get(name, math.nan)), constant(new) if fit else "–"]
                       for name, new in zip(names, fit or [math.nan] * 6)])
    if fit:
        residual = defaultdict(list)
        for c, feature, y in samples:
            fitted = sum(a * b for a, b in zip(feature, fit))
            if fitted > 0:
                residual[matrix_class(c.matrix)].append(y / fitted)
        lines += ["Refitted CSR throughput, measured / fitted per class (above 1: a latency the fit leaves out):", ""]
        lines += md_table(["class", "cells", "geo-mean", "worst"],
                          [[k, len(v), fmt(geomean(v)), fmt(max(v, key=lambda r: abs(math.log(r))))]
                           for k, v in sorted(residual.items())])
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", help="bench_spmm CSVs (a sweep.csv too)")
    parser.add_argument("--predictions", action="append", default=[],
                        help="model_predict CSVs (matrix,n,method,predicted_us) for cells without a prediction")
    parser.add_argument("--cost-model", default=str(REPO_ROOT / "lib" / "src" / "device" / "cost_model.cpp"),
                        help="the constants' source (default: %(default)s)")
    parser.add_argument("--l2-mib", type=float, default=50.0, help="L2 of the device measured (default 50, H100)")
    parser.add_argument("--detail", action="store_true", help="list every cell of the error table")
    parser.add_argument("--no-refit", action="store_true", help="skip the refit")
    args = parser.parse_args()

    cells = read_cells(args.csv)
    if not cells:
        sys.exit("fit_cost_model: no cells in " + ", ".join(args.csv))
    added = read_predictions(args.predictions, cells)
    devices = sorted({c.device for c in cells.values() if c.device})
    lines = ["# Cost model against measurement", "",
             f"{len(cells)} cells from {', '.join(args.csv)}" + (f"; {added} predictions from model_predict" if added
                                                                 else "") + f"; device: {', '.join(devices) or '?'}.",
             ""]
    lines += error_section(cells, args.detail)
    lines += tuner_section(cells)
    lines += cusparse_section(cells)
    if not args.no_refit:
        lines += refit_section(cells, read_constants(args.cost_model), args.l2_mib * (1 << 20))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
