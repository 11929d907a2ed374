#!/usr/bin/env python3
"""docs/PERFORMANCE.md from the committed benchmark data, so that the document and its figures cannot drift apart.

  scripts/perf_report.py render [--data docs/data] [--sweep docs/sweep] [--out docs/PERFORMANCE.md]
  scripts/perf_report.py collect OUTDIR [--data docs/data] [--sweep docs/sweep] [--commit SHA]

render reads the sweep (SWEEP/sweep.csv from scripts/sweep.py, with SWEEP/meta.json) and the CSVs of the
benchmark steps of scripts/gpu_check.sh in DATA (bench, groups, floor, csr, balance, layouts, precision, heldout,
model: bench_spmm --csv rows; floor_movement: bench_floor's table; distributed, solver, host, design_choices: tables
kept as written), each with NAME.meta.json beside it (scripts/bench_meta.py: device, date, commit, command), and writes
the document: every table names the command, device, date and commit of its data. A missing data file leaves its
table out; a data file without its meta stops the run. Standard library only.

collect copies what a `scripts/gpu_check.sh OUTDIR` run measured into DATA and SWEEP (replacing the files of the
same name: a step's new CSV replaces the older or transcribed one), converting bench_floor's output (floor.md) to
floor_movement.csv; --commit fills in metas whose commit is unknown (the device ran a copy without .git).
"""

import argparse
import csv
import json
import math
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plot_sweep import (LARGE_NNZ, SYNTHETIC_NAME, best_cusparse, geometric_mean, read_sweep,  # noqa: E402
                        synthetic_sort_key, to_number, usable)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT / "docs" / "data"
DEFAULT_SWEEP = REPO_ROOT / "docs" / "sweep"
DEFAULT_OUT = REPO_ROOT / "docs" / "PERFORMANCE.md"
# test/test_perf_doc.py fails above this size: the document is a reference, not a log.
SIZE_LIMIT_BYTES = 30 * 1024
# The CSVs of gpu_check.sh's steps (bench_spmm --csv rows) that render reads and collect copies.
STEP_FILES = ["bench", "groups", "floor", "csr", "balance", "layouts", "precision", "heldout", "model"]
SWEEP_FILES = ["sweep.csv", "meta.json", "summary.md", "skipped.tsv"]
# The document's own kernels, in the order the tables list them, with what each is.
KERNELS = {
    "auto": "the default plan: per 16-row band, tensor-core tiles or the CUDA-core CSR path, as the cost model chooses",
    "split_pipelined": "the tile kernel alone: 2:4 tiles on `mma.sp`, dense tiles on `mma.sync`",
    "dense_pipelined": "every stored tile as a dense tile, pipelined",
    "dense_bt": "every stored tile as a dense tile, one copy stage",
    "csr_cuda_cores": "the CUDA-core CSR path alone",
}
CUSPARSE_NAMES = {"cusparse_csr_f16": "CSR fp16", "cusparse_csr_f32": "CSR fp32", "cusparse_bsr16_f16": "BSR16 fp16",
                  "cusparse_bsr16_f32": "BSR16 fp32", "cusparse_best": "best of four", "cusparse_csr_best": "CSR, best"}
MESH_NAME = re.compile(r"^mesh\d+x\d+x\d+_d\d+_s\d+_(lex|random)")
GRAPH_NAME = re.compile(r"^graph\d+(x\d+)?_d\d+(_power)?$")
CLASSES = [
    ("synthetic", "Synthetic XdYs matrices",
     "The thesis's synthetic matrices: X% of the 16x32 tiles dense, Y% 2:4, the rest zero, placed at random."),
    ("real", "Real SuiteSparse matrices",
     "Every shared SuiteSparse matrix with at least 10,000 nonzeros (FEM, circuits, power networks, graphs)."),
    ("mesh", "3-D meshes",
     "FEM-like matrices of `bench_spmm --mesh`: a 3-D grid of nodes, DOFS unknowns per node, 7- or 27-point "
     "coupling, nodes numbered lexicographically or at random."),
    ("graph", "Random graphs",
     "`bench_spmm --graph`: random sparse matrices with uniform or power-law row lengths."),
]
FLOOR_VARIANTS = {"launch": "no tiles: launch, band descriptors, C", "sparse": "2:4 + dense tiles, fp16 B",
                  "dense": "all tiles dense, fp16 B", "f32b": "2:4 + dense tiles, fp32 B"}
PRECISION_MODES = [("auto_matrix_scale", "one scale for A"), ("auto_f32b", "fp32 B"), ("auto_bf16", "bf16"),
                   ("auto_bf16_f32b", "bf16 A, fp32 B"), ("auto_split", "split")]


class Meta:
    """A data file's provenance (NAME.meta.json, or meta.json for the sweep)."""

    def __init__(self, path):
        if not path.is_file():
            raise SystemExit(f"perf_report.py: error: {path} is missing: every data file needs its provenance "
                             "(scripts/bench_meta.py writes it)")
        try:
            self.fields = json.loads(path.read_text())
        except ValueError as error:
            raise SystemExit(f"perf_report.py: error: {path}: not JSON ({error})")
        self.path = path

    def get(self, key, default=""):
        value = self.fields.get(key, default)
        return value if value is not None else default

    def commit_text(self):
        """The commit, with the commits of earlier runs of a resumed sweep where they differ; 'per row' for a
        hand-kept table that names them per row."""
        if not self.get("commit"):
            return "per row"
        commits = [run.get("commit", "unknown") for run in self.get("earlier_runs", [])]
        commits.append(self.get("commit", "unknown"))
        return ", ".join(dict.fromkeys(commits))

    def caption(self):
        """The line under a table: command, device, date and commit of its data (the *Data* table maps it to its
        file); a hand-kept table that gives some of them per row says so."""
        fields = {"command": f"`{self.get('command')}`" if self.get("command") else "", "device": self.get("device"),
                  "date": str(self.get("date"))[:10], "commit": self.commit_text() if self.get("commit") else ""}
        parts = [value for value in fields.values() if value]
        per_row = [key for key, value in fields.items() if not value]
        if per_row:
            parts.append(", ".join(per_row) + " per row")
        if self.get("transcribed"):
            parts.append("transcribed")
        return "*" + " · ".join(parts) + "*"


class BenchData:
    """bench_spmm --csv rows indexed as matrix -> n -> method -> row, with the file's provenance."""

    def __init__(self, path, meta):
        self.path, self.meta = path, meta
        rows = read_sweep(path) if path.stat().st_size else []
        self.table = {}
        for row in rows:
            self.table.setdefault(row["matrix"], {}).setdefault(row["n"], {})[row["method"]] = row
        self.widths = sorted({row["n"] for row in rows})
        self.methods = list(dict.fromkeys(row["method"] for row in rows))
        # A meta written where nvidia-smi was missing: the device bench_spmm named in the rows.
        devices = sorted({row["device"].strip('"') for row in rows if row.get("device")})
        if meta.get("device", "unknown") == "unknown" and devices:
            meta.fields["device"] = ", ".join(devices)

    def matrices(self, cls=None):
        names = [m for m in self.table if cls is None or matrix_class(m) == cls]
        return sorted(names, key=synthetic_sort_key) if cls == "synthetic" else names

    def ms(self, matrix, n, method):
        return self.table.get(matrix, {}).get(n, {}).get(method, {}).get("median_ms", math.nan)

    def cell(self, matrix, n):
        return self.table.get(matrix, {}).get(n, {})

    def any_row(self, matrix):
        for by_method in self.table[matrix].values():
            for row in by_method.values():
                return row
        return {}

    def caption(self):
        return self.meta.caption()


def matrix_class(name):
    if SYNTHETIC_NAME.match(name):
        return "synthetic"
    if MESH_NAME.match(name):
        return "mesh"
    if GRAPH_NAME.match(name):
        return "graph"
    return "real"


def relative(path):
    """How the document names a data file: relative to docs/ as committed (sweep/NAME or data/NAME), whichever folder
    it was read from, so that a render of a staging copy (gpu_check's report step) reads the same."""
    path = Path(path)
    return f"sweep/{path.name}" if path.name in SWEEP_FILES else f"data/{path.name}"


def read_table(path, delimiter=","):
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle, delimiter=delimiter))
    return rows[0], rows[1:]


# --- number formats -------------------------------------------------------------------------------------------------

def us(ms):
    """Milliseconds as microseconds: one decimal below 1000 us."""
    if not usable(ms):
        return "–"
    value = ms * 1000.0
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def factor(value, bold_below_one=True):
    if not usable(value):
        return "–"
    text = f"{value:.2f}x"
    return f"**{text}**" if bold_below_one and value < 1 else text


def ratio(value):
    return f"{value:.2f}" if usable(value) else "–"


def divide(a, b):
    return a / b if usable(a) and usable(b) else math.nan


def md_row(cells):
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def md_table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    return [md_row(header), "|" + "|".join(align) + "|"] + [md_row(r) for r in rows] + [""]


def speedup_auto(data, matrix, n, method="auto"):
    """The fastest cuSPARSE variant's time / the method's, for one matrix and n."""
    _, best = best_cusparse(data.cell(matrix, n))
    return divide(best, data.ms(matrix, n, method))


# --- sections ---------------------------------------------------------------------------------------------------------

def intro(sources, sweep):
    lines = ["# Performance", "",
             "Current figures of bcsr24 per matrix class and kernel, against cuSPARSE in the same process. "
             "**Generated** by `scripts/perf_report.py` from `docs/sweep/` and `docs/data/` (*Reproduce*): do not "
             "edit by hand. Under each table: the command, device, date and commit of its data. Earlier figures and "
             "the experiments behind the design are in git history (`git log -p -- docs/PERFORMANCE.md`; d3ca7bc is "
             "the last hand-written version); *Measured design choices* sums them up.", "",
             "## How the figures are taken", ""]
    reps = sweep.meta.get("reps", 20) if sweep else 20
    warmup = sweep.meta.get("warmup", 5) if sweep else 5
    lines += [
        f"- `bench_spmm`: CUDA events around the multiply only; {warmup} warm-up runs, then {reps} timed runs, each "
        "after an L2 eviction (a read of twice the L2 size); the median is shown (min, max and the error against a "
        "float64 product, computed first with C poisoned by NaN, are in the CSVs).",
        "- B random in [-1, 1) (fp16; fp32 in the fp32-B modes), C fp32, alpha = 1, beta = 0. Times in us.",
        "- cuSPARSE `cusparseSpMM`, same process, matrix and B: CSR fp16 -> fp32, CSR fp32, BSR 16x16 fp16 -> fp32 "
        "and fp32, preprocessed. *Best cuSPARSE*: the fastest variant timed for that matrix and n; a *speedup* is "
        "its time / bcsr24's (below 1 in bold).",
        "- *floor / t*: (both tile lists + B + C bytes) / 3.0e12 B/s (the H100's measured device-to-device copy "
        "rate) / time; 1.0 is the memory-bound floor.",
        "- Kernels: " + "; ".join(f"`{k}`, {v}" for k, v in KERNELS.items()) + ".", ""]
    devices = [meta.get("device") for _, meta in sources if meta.get("device")]
    if devices:
        common = max(dict.fromkeys(devices), key=devices.count)
        lines.insert(-1, f"- Device: {common} for {devices.count(common)} of the {len(sources)} data files; the "
                         "others name theirs under each table.")
    lines += ["## Reproduce", "",
              "`scripts/gpu_check.sh OUT` on a GPU machine runs the steps (`STEPS=\"sweep report\"` a few); its "
              "`report` step renders `OUT/PERFORMANCE.md` from the new data and the committed data of the other "
              "steps. To update this file from such a run, on a checkout of the measured commit:", "",
              "```",
              "python3 scripts/perf_report.py collect OUT [--commit SHA]   # OUT's data into docs/data, docs/sweep",
              "python3 scripts/perf_report.py render                       # docs/PERFORMANCE.md",
              "```", "",
              "ctest's `perf_doc` fails when this file differs from what `render` makes of the committed data.", "",
              "### Data", "", "Command, device and date are under each table.", ""]
    rows = []
    for relpath, meta in sources:
        source = f"transcribed from {meta.get('transcribed').replace('docs/', '')}" if meta.get("transcribed") \
            else "measured"
        if meta.get("note"):
            source += f"; {meta.get('note')}"
        rows.append([f"`{relpath}`", meta.commit_text(), source])
    lines += md_table(["file", "commit", "source"], rows, ["---", "---", "---"])
    return lines


def summary_section(sweep):
    """Each kernel against the best cuSPARSE variant, geometric means per matrix class and n; auto's worst case."""
    lines = ["## Kernels against cuSPARSE, by matrix class", "",
             "Geometric mean over the class of the best cuSPARSE variant's time / the kernel's, per width n of B:", ""]
    header = ["class", "kernel"] + [f"n = {n}" for n in sweep.widths]
    rows, worst_texts = [], []
    for cls, title, _ in CLASSES:
        matrices = sweep.matrices(cls)
        if not matrices:
            continue
        name = title.replace(" matrices", "")
        groups = [(f"`{k}`", k, matrices) for k in KERNELS if k in sweep.methods and k != "dense_bt"]
        if cls == "real":
            large = [m for m in matrices if sweep.any_row(m).get("nnz", 0) >= LARGE_NNZ]
            groups.insert(1, (f"`auto`, the {len(large)} with nnz >= {LARGE_NNZ:,}", "auto", large))
        for index, (text, kernel, subset) in enumerate(groups):
            rows.append([f"{name} ({len(matrices)})" if index == 0 else "", text] +
                        [factor(geometric_mean(speedup_auto(sweep, m, n, kernel) for m in subset))
                         for n in sweep.widths])
        measured = [(speedup_auto(sweep, m, n), m, n) for m in matrices for n in sweep.widths]
        measured = [x for x in measured if usable(x[0])]
        if measured:
            worst = min(measured)
            faster = sum(all(speedup_auto(sweep, m, n) > 1 for n in sweep.widths) for m in matrices)
            worst_texts.append(f"{name} {faster} of {len(matrices)}, worst {factor(worst[0])} "
                               f"({worst[1]}, n = {worst[2]})")
    lines += md_table(header, rows, ["---", "---"] + ["---:"] * len(sweep.widths))
    lines += [sweep.caption(), "", "`auto` faster than the best cuSPARSE variant at every n: " +
              "; ".join(worst_texts) + ".", ""]
    return lines


def per_matrix_table(data, matrices):
    """Per matrix: auto's speedup over the best cuSPARSE variant (auto's time, us) at every n."""
    header = ["matrix", "nnz"] + [f"n = {n}" for n in data.widths]
    rows = []
    for m in matrices:
        row = data.any_row(m)
        nnz = f"{row['nnz']:,.0f}" if usable(row.get("nnz", math.nan)) else "–"
        cells = [f"{factor(speedup_auto(data, m, n))} ({us(data.ms(m, n, 'auto'))})"
                 if usable(data.ms(m, n, "auto")) else "–" for n in data.widths]
        rows.append([m, nnz] + cells)
    return md_table(header, rows, ["---"] + ["---:"] * (len(header) - 1))


def ladder(data, matrices, widths):
    """The kernel ladder: every kernel's time beside the best cuSPARSE variant and cuBLAS."""
    kernels = [k for k in KERNELS if k in data.methods and k != "csr_cuda_cores"]
    header = ["matrix", "n"] + [f"`{k}`" for k in kernels] + ["best cuSPARSE", "cuBLAS dense", "`auto` floor / t"]
    rows = []
    for m in matrices:
        for n in widths:
            by_method = data.cell(m, n)
            if not by_method:
                continue
            method, best = best_cusparse(by_method)
            floor = by_method.get("auto", {}).get("floor_fraction", math.nan)
            rows.append([m, n] + [us(data.ms(m, n, k)) for k in kernels]
                        + [f"{us(best)} ({CUSPARSE_NAMES.get(method, method)})" if method else "–",
                           us(data.ms(m, n, "cublas_dense")), ratio(floor)])
    return md_table(header, rows)


def class_section(cls, title, blurb, sweep, heldout, bench):
    lines = [f"## {title}", "", blurb, ""]
    matrices = sweep.matrices(cls) if sweep else []
    if sweep and matrices:
        if cls == "real":
            matrices = sorted(matrices, key=lambda m: -sweep.any_row(m).get("nnz", 0))
        lines += ["Per matrix, `auto`'s speedup over the best cuSPARSE variant (`auto`'s time, us):", ""]
        lines += per_matrix_table(sweep, matrices) + [sweep.caption(), ""]
    if cls == "synthetic":
        source = bench if bench and bench.matrices("synthetic") else sweep
        if source:
            grids = [m for m in source.matrices("synthetic") if m.split("_")[0] in ("10d0s", "0d10s", "5d5s")]
            widths = [n for n in (8, 128) if n in source.widths] or source.widths
            lines += ["The kernel ladder on the three grids of the thesis's targets, us:", ""]
            lines += ladder(source, grids, widths) + [source.caption(), ""]
    held = heldout.matrices(cls) if heldout else []
    if held:
        lines += ["Held out (outside the sweep; none tuned the kernels or the cost model), the same cells:", ""]
        lines += per_matrix_table(heldout, held) + [heldout.caption(), ""]
    if len(lines) == 4:
        return []
    return lines


def csr_section(sweep, csr):
    lines = ["## CSR path", "",
             "`csr_cuda_cores` (the CUDA-core path `auto` gives bands whose tiles would be nearly empty) against "
             "cuSPARSE CSR.", ""]
    if sweep and "csr_cuda_cores" in sweep.methods:
        header = ["n", "geo. mean vs CSR fp16", "vs CSR fp32", "at least as fast as both on", "worst", "on"]
        rows = []
        for n in sweep.widths:
            pairs = []
            for m in sweep.matrices():
                own = sweep.ms(m, n, "csr_cuda_cores")
                f16 = divide(sweep.ms(m, n, "cusparse_csr_f16"), own)
                f32 = divide(sweep.ms(m, n, "cusparse_csr_f32"), own)
                if usable(f16) and usable(f32):
                    pairs.append((f16, f32, m))
            if not pairs:
                continue
            worst = min(pairs, key=lambda p: min(p[0], p[1]))
            rows.append([n, factor(geometric_mean(p[0] for p in pairs)), factor(geometric_mean(p[1] for p in pairs)),
                         f"{sum(min(p[0], p[1]) >= 1 for p in pairs)} of {len(pairs)}",
                         factor(min(worst[0], worst[1])), worst[2]])
        lines += [f"On the {len(sweep.matrices())} matrices of the sweep:", ""]
        lines += md_table(header, rows, ["---:", "---:", "---:", "---:", "---:", "---"]) + [sweep.caption(), ""]
    if csr:
        outside = [n for n in csr.widths if not sweep or n not in sweep.widths] or csr.widths
        header = ["matrix"] + [f"n = {n}" for n in outside]
        rows = []
        for m in csr.matrices():
            cells = []
            for n in outside:
                by_method = csr.cell(m, n)
                _, best = best_cusparse({k: v for k, v in by_method.items() if k.startswith("cusparse_csr")})
                own, auto = csr.ms(m, n, "csr_cuda_cores"), csr.ms(m, n, "auto")
                cells.append(f"{us(own)} / {us(best)} ({factor(divide(best, own))}); {us(auto)}"
                             if usable(own) else "–")
            if any(cell != "–" for cell in cells):
                rows.append([m] + cells)
        lines += ["At the widths the sweep does not run, us: `csr_cuda_cores` / the faster cuSPARSE CSR variant "
                  "(speedup); `auto`:", ""]
        lines += md_table(header, rows) + [csr.caption(), ""]
    return lines


def layout_section(sweep, layouts):
    lines = ["## Tile layouts", "",
             "The layout with fewer bytes is chosen (docs/FORMAT.md): the thesis's aligned tiles in file order, or "
             "condensed bands, optionally RCM-reordered. `split_pipelined` on the chosen layout / `split_aligned` "
             f"(the thesis layout, same run), time ratio, where the layouts differ (rows: nnz >= {LARGE_NNZ:,}):", ""]
    in_sweep = set(sweep.table) if sweep else set()
    for data in (sweep, layouts):
        if not data or "split_aligned" not in data.methods:
            continue
        # The layout step's own table lists only what the sweep does not have.
        matrices = data.matrices() if data is sweep else [m for m in data.matrices() if m not in in_sweep]
        ratios = {(m, n): divide(data.ms(m, n, "split_pipelined"), data.ms(m, n, "split_aligned"))
                  for m in matrices for n in data.widths}
        compared = [m for m in matrices if any(usable(ratios[(m, n)]) for n in data.widths)]
        if not compared:
            continue
        widths = [n for n in (8, 128) if n in data.widths] or data.widths
        header = ["matrix", "layout", "stored tiles: thesis -> chosen", "2:4 share: thesis -> chosen"] + \
                 [f"chosen / thesis, n = {n}" for n in widths]
        rows = []
        for m in compared:
            if data.any_row(m).get("nnz", 0) < LARGE_NNZ:
                continue
            n = next(n for n in data.widths if usable(ratios[(m, n)]))
            chosen, thesis = data.cell(m, n)["split_pipelined"], data.cell(m, n)["split_aligned"]
            tiles = f"{thesis['dense_tiles'] + thesis['sparse24_tiles']:,.0f} -> " \
                    f"{chosen['dense_tiles'] + chosen['sparse24_tiles']:,.0f}"
            share = f"{100 * thesis['sparse24_share']:.0f}% -> {100 * chosen['sparse24_share']:.0f}%"
            rows.append([m, chosen["layout"], tiles, share] + [ratio(ratios[(m, n)]) for n in widths])
        measured = [(value, key) for key, value in ratios.items() if usable(value)]
        largest = max(measured)
        means = ", ".join(f"{ratio(geometric_mean(ratios[(m, n)] for m in compared))} (n = {n})" for n in data.widths)
        lines += md_table(header, rows, ["---", "---"] + ["---:"] * (len(header) - 2))
        lines += [data.caption(), "", f"Over all {len(compared)} matrices of this run where the layouts differ, "
                  f"chosen / thesis: geometric mean {means}; largest {ratio(largest[0])} ({largest[1][0]}, "
                  f"n = {largest[1][1]}).", ""]
    return lines if len(lines) > 3 else []


def groups_section(groups):
    if not groups:
        return []
    lines = ["## Band groups", "",
             "At n >= 128 the tile kernel reads each tile's B block from L2; a band group lets 16 consecutive bands "
             "share each B block (one TMA copy per group and tile column; sm_90, aligned layouts, docs/KERNELS.md). "
             "Cells: `auto` / grouped (`auto_grouped`) / one band per block (`auto_ungrouped`), us, and one band "
             "per block / grouped:", ""]
    header = ["matrix"] + [f"n = {n}" for n in groups.widths]
    rows = []
    for m in groups.matrices():
        cells = []
        for n in groups.widths:
            a, g, u = (groups.ms(m, n, k) for k in ("auto", "auto_grouped", "auto_ungrouped"))
            cells.append(f"{us(a)} / {us(g)} / {us(u)} ({factor(divide(u, g), False)})" if usable(g) else "–")
        rows.append([m] + cells)
    return lines + md_table(header, rows) + [groups.caption(), ""]


def read_floor_movement(path):
    """(matrix, n) -> variant -> median us, from floor_movement.csv; the bare reads of A under n = 0."""
    table = {}
    if not path.is_file():
        return table
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            n = int(row["n"]) if row["n"].strip() else 0
            table.setdefault((row["matrix"], n), {})[row["variant"]] = float(row["median_us"])
    return table


def floor_section(floor, movement_path):
    movement = read_floor_movement(movement_path)
    reads = {m: v for (m, n), v in movement.items() if n == 0}
    movement = {key: v for key, v in movement.items() if key[1] != 0}
    if not floor or not movement:
        return []
    lines = ["## Data-movement floors", "",
             "`bench_floor` runs kernels that only move the tile kernel's bytes (A tiles and B blocks through the same "
             "`cp.async` ring, C at the end; no arithmetic) over a matrix's own tile grid, one band per block: the "
             "floor of any kernel of this design, and so of the ratios between the library's kernels (2:4 against "
             "dense tiles; fp32 B against fp16 B). Floors and library kernels in us, then the two ratios:", ""]
    header = ["matrix", "n", "launch only", "floor 2:4", "floor dense", "floor fp32 B", "`split_pipelined`",
              "`dense_pipelined`", "`auto`", "`auto_f32b`", "dense / 2:4: floor, library",
              "fp32 B / fp16 B: floor, library"]
    rows = []
    for (m, n), variants in sorted(movement.items(), key=lambda kv: (synthetic_sort_key(kv[0][0])
                                                                      if SYNTHETIC_NAME.match(kv[0][0]) else (9,),
                                                                      kv[0][1])):
        v = {key: variants.get(name, math.nan) / 1000.0 for key, name in FLOOR_VARIANTS.items()}
        lib = {k: floor.ms(m, n, k) for k in ("split_pipelined", "dense_pipelined", "auto", "auto_f32b")}
        rows.append([m, n, us(v["launch"]), us(v["sparse"]), us(v["dense"]), us(v["f32b"])] +
                    [us(lib[k]) for k in lib] +
                    [f"{ratio(divide(v['dense'], v['sparse']))}, "
                     f"{ratio(divide(lib['dense_pipelined'], lib['split_pipelined']))}",
                     f"{ratio(divide(v['f32b'], v['sparse']))}, {ratio(divide(lib['auto_f32b'], lib['auto']))}"])
    lines += md_table(header, rows) + [floor.caption(), ""]
    if reads:
        lines += ["Reading A alone (no tile grid, B or C; a bound for matrices with one tile list), us, 2:4 + dense "
                  "tiles / all tiles dense: " + "; ".join(
                      f"{m} {v.get('A read alone: 2:4 + dense', math.nan):.1f} / "
                      f"{v.get('A read alone: all dense', math.nan):.1f}" for m, v in sorted(reads.items())) + ".", ""]
    return lines


def precision_section(precision):
    if not precision or "auto" not in precision.methods:
        return []
    lines = ["## Precision modes", "",
             "Each mode against the default (fp16 A scaled per row, fp16 B) in the same run (docs/PRECISION.md): "
             "time / the default's, geometric mean over the matrices measured at that n (range in brackets); the "
             "last row is cuSPARSE CSR fp32's time / split's.", ""]
    header = ["mode"] + [f"n = {n}" for n in precision.widths]
    rows = []

    def spread(values):
        values = [x for x in values if usable(x)]
        return f"{ratio(geometric_mean(values))} ({min(values):.2f}-{max(values):.2f})" if values else "–"

    for method, label in PRECISION_MODES:
        if method in precision.methods:
            rows.append([label] + [spread(divide(precision.ms(m, n, method), precision.ms(m, n, "auto"))
                                          for m in precision.matrices()) for n in precision.widths])
    if "auto_split" in precision.methods and "cusparse_csr_f32" in precision.methods:
        rows.append(["split vs cuSPARSE CSR fp32"] +
                    [spread(divide(precision.ms(m, n, "cusparse_csr_f32"), precision.ms(m, n, "auto_split"))
                            for m in precision.matrices()) for n in precision.widths])
    lines += md_table(header, rows) + [precision.caption(), ""]
    width = 32 if 32 in precision.widths else precision.widths[0]
    methods = ["auto"] + [m for m, _ in PRECISION_MODES] + ["cusparse_csr_f16", "cusparse_csr_f32"]
    methods = [m for m in methods if m in precision.methods]
    matrices = [m for m in precision.matrices() if precision.cell(m, width)]
    lines += [f"Times at n = {width}, us:", ""]
    rows = [[m] + [us(precision.ms(m, width, k)) for k in methods] for m in matrices]
    lines += md_table(["matrix"] + [f"`{k}`" for k in methods], rows) + [precision.caption(), ""]
    errors = []
    for k in methods:
        values = [by_method[k]["rel_error"] for by_n in precision.table.values() for by_method in by_n.values()
                  if k in by_method and usable(by_method[k]["rel_error"])]
        if values:
            errors.append(f"`{k}` {max(values):.1e}")
    if errors:
        lines += ["Largest relative error against float64: " + ", ".join(errors) + ".", ""]
    return lines


def balance_section(balance):
    if not balance or "split_pipelined_whole" not in balance.methods:
        return []
    lines = ["## Load balance", "",
             "A band much longer than the rest is split over several blocks whose partial sums are added in a fixed "
             "order (`split_long_bands`); `_whole` runs every band on one block. us, where the two differ by more "
             "than 2%:", ""]
    rows = []
    for m in balance.matrices():
        for n in balance.widths:
            split, whole = balance.ms(m, n, "split_pipelined"), balance.ms(m, n, "split_pipelined_whole")
            if usable(split) and usable(whole) and abs(whole / split - 1) > 0.02:
                rows.append([m, n, us(split), us(whole), factor(divide(whole, split)), us(balance.ms(m, n, "auto")),
                             us(balance.ms(m, n, "auto_whole"))])
    header = ["matrix", "n", "`split_pipelined`", "`_whole`", "whole / split", "`auto`", "`auto_whole`"]
    return lines + md_table(header, rows) + [balance.caption(), ""]


def generic_section(title, text, path, meta):
    if not path.is_file():
        return []
    header, rows = read_table(path)
    lines = [f"## {title}", "", text, ""] if title else []
    return lines + md_table(header, rows, ["---"] * len(header)) + [meta.caption(), ""]


def cost_model_section():
    return ["## Cost model", "",
            "`auto`'s choice between tiles and the CSR path per band, and the band-group model, are constants fitted "
            "to the runs of the `csr` and `groups` steps (`lib/src/device/cost_model.cpp`); their figures are the "
            "*CSR path* and *Band groups* tables above, and the fits' errors are in *Measured design choices*.", ""]


def measured_plans_section(model):
    """The model step: auto (measured plans) on the structure classes against the best cuSPARSE variant and against
    auto_model (the cost model's plan), per n over the classes, with the time tuning took."""
    matrices = model.matrices() if model else []
    if not matrices:
        return []
    lines = ["## Measured plans", "",
             "`auto` times the cost model's best candidates (`Tuning::measure`). On the `model` step's structure "
             "classes (`--synth`): best cuSPARSE / `auto` (SpMV at n = 1) and `auto_model` / `auto`, geometric mean "
             "and lowest; per class: `scripts/fit_cost_model.py`.", ""]

    def summary(values, form):
        values = [(v, m) for v, m in values if usable(v)]
        if not values:
            return ["–", "–"]
        low, where = min(values)
        return [form(geometric_mean(v for v, _ in values)), f"{form(low)} ({where})"]

    rows = []
    for n in model.widths:
        rows.append([n] + summary(((speedup_auto(model, m, n), m) for m in matrices), factor)
                    + summary(((divide(model.ms(m, n, "auto_model"), model.ms(m, n, "auto")), m) for m in matrices),
                              ratio))
    lines += md_table(["n", "cuSPARSE / auto", "lowest", "auto_model / auto", "lowest"], rows,
                      ["---:", "---:", "---", "---:", "---"]) + [model.caption(), ""]
    tuning = sorted(value for m in matrices for n in model.widths
                    for value in [to_number(model.cell(m, n).get("auto", {}).get("tuning_ms"))] if usable(value))
    if tuning:
        lines += [f"Measuring took a median {tuning[len(tuning) // 2]:.1f} ms per plan, at most {tuning[-1]:.1f} ms "
                  f"({len(tuning)} plans).", ""]
    return lines


def render(data_dir, sweep_dir):
    sources = []

    def bench_data(path, meta_path):
        if not path.is_file():
            return None
        meta = Meta(meta_path)
        sources.append((relative(path), meta))
        if path.name == "floor.csv" and (data_dir / "floor_movement.csv").is_file():
            sources.append((relative(data_dir / "floor_movement.csv"), meta))
        return BenchData(path, meta)

    sweep = bench_data(sweep_dir / "sweep.csv", sweep_dir / "meta.json")
    step = {name: bench_data(data_dir / f"{name}.csv", data_dir / f"{name}.meta.json") for name in STEP_FILES}
    generic = {}
    for name in ("distributed", "solver", "host", "design_choices"):
        path = data_dir / f"{name}.csv"
        if path.is_file():
            generic[name] = (path, Meta(data_dir / f"{name}.meta.json"))
            sources.append((relative(path), generic[name][1]))

    lines = intro(sources, sweep)
    if sweep:
        lines += summary_section(sweep)
        skipped = sweep_dir / "skipped.tsv"
        if skipped.is_file():
            _, skipped_rows = read_table(skipped, "\t")
            if skipped_rows:
                lines += ["Not in the sweep (`sweep/skipped.tsv`): " +
                          "; ".join(f"{r[0]} ({r[2].rsplit(': ', 1)[-1]})" for r in skipped_rows) + ".", ""]
        lines += ["Every matrix and method of the sweep, with the tile census and the layouts: "
                  "[sweep/summary.md](sweep/summary.md); plots: `sweep/*.png`.", ""]
    for cls, title, blurb in CLASSES:
        lines += class_section(cls, title, blurb, sweep, step["heldout"], step["bench"])
    lines += csr_section(sweep, step["csr"])
    lines += layout_section(sweep, step["layouts"])
    lines += groups_section(step["groups"])
    lines += floor_section(step["floor"], data_dir / "floor_movement.csv")
    lines += precision_section(step["precision"])
    lines += balance_section(step["balance"])
    lines += cost_model_section()
    lines += measured_plans_section(step["model"])
    texts = {"distributed": ("Distributed operator and solver",
                             "`DistributedOperator` over two GPUs of one host against one GPU, same process and "
                             "problem (docs/DISTRIBUTED.md)."),
             "solver": ("Solver", "`bcsr24_solve --compare`: the mixed-precision solver with bcsr24's inner products, "
                                  "then with cuSPARSE CSR fp32's, same process, 8 right-hand sides, tolerance 1e-10."),
             "host": ("Host pipeline", "Reading and conversion on the CPU."),
             "design_choices": ("Measured design choices",
                                "Each row: what the library does, what it was measured against, and the figure that "
                                "decided it; `git show COMMIT:docs/PERFORMANCE.md` has the run.")}
    for name, (title, text) in texts.items():
        if name in generic:
            lines += generic_section(title, text, *generic[name])
    return "\n".join(lines).rstrip("\n") + "\n"


# --- collect ----------------------------------------------------------------------------------------------------------

FLOOR_HEADER = re.compile(r"^bench_floor: (\S+), ")
FLOOR_READ = re.compile(r"^A bytes read alone .*: 2:4 \+ dense ([0-9.]+) us .*, all dense ([0-9.]+) us")


def floor_md_to_csv(md_path, csv_path):
    """bench_floor's markdown output (gpu_check's floor.md, several matrices) as floor_movement.csv; the bare reads
    of A get rows without n."""
    rows, matrix = [], None
    for line in md_path.read_text(errors="replace").splitlines():
        header = FLOOR_HEADER.match(line)
        if header:
            matrix = header.group(1)
            continue
        read = FLOOR_READ.match(line)
        if read and matrix:
            rows += [[matrix, "", "A read alone: 2:4 + dense", read.group(1), "", "", "", ""],
                     [matrix, "", "A read alone: all dense", read.group(2), "", "", "", ""]]
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("| ") else []
        if matrix and len(cells) == 7 and cells[0].isdigit() and not cells[1].startswith("ratios"):
            n, variant, stages, median, minimum, a_mb, b_mb = cells
            try:
                float(median)
            except ValueError:
                continue
            rows.append([matrix, n, variant, median, minimum, stages, a_mb, b_mb])
    if not rows:
        raise SystemExit(f"perf_report.py: error: {md_path}: no bench_floor table found")
    with open(csv_path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["matrix", "n", "variant", "median_us", "min_us", "stages", "a_mb", "b_mb"])
        writer.writerows(rows)


def copy_meta(source, target, commit):
    meta = json.loads(source.read_text())
    if commit and meta.get("commit", "unknown") == "unknown":
        meta["commit"] = commit
    target.write_text(json.dumps(meta, indent=2) + "\n")


def collect(out_dir, data_dir, sweep_dir, commit, plots=True):
    copied = []
    data_dir.mkdir(parents=True, exist_ok=True)
    for name in STEP_FILES:
        csv_path = out_dir / f"{name}.csv"
        if not csv_path.is_file():
            continue
        meta_path = out_dir / f"{name}.meta.json"
        if not meta_path.is_file():
            raise SystemExit(f"perf_report.py: error: {csv_path} has no {meta_path.name} (run the step with "
                             "scripts/gpu_check.sh, which writes it)")
        if name == "floor":
            if not (out_dir / "floor.md").is_file():
                raise SystemExit(f"perf_report.py: error: {csv_path} has no floor.md (bench_floor's output) beside it")
            floor_md_to_csv(out_dir / "floor.md", data_dir / "floor_movement.csv")
        shutil.copyfile(csv_path, data_dir / f"{name}.csv")
        copy_meta(meta_path, data_dir / f"{name}.meta.json", commit)
        copied.append(name)
    sweep_out = out_dir / "sweep"
    if (sweep_out / "sweep.csv").is_file():
        if not (sweep_out / "meta.json").is_file():
            raise SystemExit(f"perf_report.py: error: {sweep_out / 'sweep.csv'} has no meta.json (sweep.py writes it)")
        sweep_dir.mkdir(parents=True, exist_ok=True)
        for name in SWEEP_FILES:
            if name == "meta.json":
                copy_meta(sweep_out / name, sweep_dir / name, commit)
            elif (sweep_out / name).is_file():
                shutil.copyfile(sweep_out / name, sweep_dir / name)
            elif name == "skipped.tsv":
                (sweep_dir / name).unlink(missing_ok=True)  # nothing skipped this time
        for plot in sorted(sweep_out.glob("*.png")) if plots else []:
            shutil.copyfile(plot, sweep_dir / plot.name)
        copied.append("sweep")
    print(f"perf_report.py: collected {', '.join(copied) if copied else 'nothing'} from {out_dir}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    render_parser = commands.add_parser("render", help="write the document from the data")
    collect_parser = commands.add_parser("collect", help="copy a gpu_check.sh run's data into the data folders")
    collect_parser.add_argument("outdir", help="the OUTDIR of scripts/gpu_check.sh")
    collect_parser.add_argument("--commit", default=None, help="commit for metas that could not read it")
    collect_parser.add_argument("--no-plots", action="store_true", help="leave the sweep's plots where they are")
    for sub in (render_parser, collect_parser):
        sub.add_argument("--data", default=str(DEFAULT_DATA), help="step CSVs and metas (default docs/data)")
        sub.add_argument("--sweep", default=str(DEFAULT_SWEEP), help="the sweep's folder (default docs/sweep)")
    render_parser.add_argument("--out", default=str(DEFAULT_OUT), help="output (default docs/PERFORMANCE.md)")
    args = parser.parse_args()
    if args.command == "collect":
        return collect(Path(args.outdir), Path(args.data), Path(args.sweep), args.commit, plots=not args.no_plots)
    text = render(Path(args.data), Path(args.sweep))
    Path(args.out).write_text(text)
    size = len(text.encode())
    note = f" (over the {SIZE_LIMIT_BYTES} bytes the doc test allows)" if size > SIZE_LIMIT_BYTES else ""
    print(f"perf_report.py: wrote {args.out}, {size} bytes{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
