#!/usr/bin/env python3
"""ctest perf_doc: docs/PERFORMANCE.md is exactly what scripts/perf_report.py renders from the committed data and
stays within its size bound; and a whole scripts/gpu_check.sh run (every step's files, in the formats bench_spmm,
bench_floor, sweep.py and bench_meta.py write them) goes through `collect` and `render` into a document that has
every section, a caption under every table and still fits the bound.

Usage: test_perf_doc.py REPO_ROOT
"""

import csv
import difflib
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH_COLUMNS = ["matrix", "rows", "cols", "nnz", "n", "method", "median_ms", "min_ms", "max_ms", "tflops_thesis",
                 "tflops_useful", "bandwidth_gbs", "floor_fraction", "rel_error", "dense_tiles", "sparse24_tiles",
                 "zero_tiles", "sparse24_share", "device", "layout", "predicted_us", "tuning_ms", "plan"]
CUSPARSE = ["cusparse_csr_f16", "cusparse_csr_f32", "cusparse_bsr16_f16", "cusparse_bsr16_f32"]
# The default sources, widths and methods of gpu_check.sh's steps (their CSV names), so that the document made from
# a full run is as large as the lead's will be.
XDYS = ["10d0s_16384", "0d10s_16384", "5d5s_16384"]
SS = ["Andrews", "memplus", "delaunay_n14", "ca-GrQc", "rajat01", "bcsstk16", "bcsstk13", "bayer10"]
STEPS = {
    "bench": (XDYS, [8, 32, 128], ["auto", "split_pipelined", "csr_cuda_cores"] + CUSPARSE + ["cublas_dense"]),
    "groups": (XDYS + ["10d0s_8192", "3d3s_24576", "1d1s_32768"], [64, 128, 256],
               ["auto", "auto_grouped", "auto_ungrouped"]),
    "floor": (XDYS, [8, 16, 32], ["split_pipelined", "auto", "auto_f32b"]),
    "csr": (["graph1000000_d8", "graph1000000_d16_power", "graph200000_d4", "mesh40x40x40_d3_s27_random",
             "Andrews", "memplus", "delaunay_n14", "ca-GrQc", "rajat01"], [1, 8, 16, 32, 64, 128, 256],
            ["auto", "split_pipelined", "csr_cuda_cores", "cusparse_csr_f16", "cusparse_csr_f32"]),
    "balance": (["graph1000000_d16_power", "graph100000_d8_power", "rajat01", "memplus", "ca-GrQc",
                 "0d10s_16384", "10d0s_16384"], [8, 32, 128],
                ["auto", "auto_whole", "split_pipelined", "split_pipelined_whole", "cusparse_csr_f16",
                 "cusparse_csr_f32"]),
    "layouts": (["mesh27x27x27_d3_s27_lex", "mesh27x27x27_d3_s27_random", "bcsstk16", "Andrews", "memplus",
                 "delaunay_n14", "bcsstk13", "bayer10"], [8, 32, 128], ["split_pipelined", "split_aligned"] + CUSPARSE),
    "precision": (["mesh40x40x40_d3_s27_lex", "mesh40x40x40_d3_s27_random", "bcsstk16", "bcsstk13", "memplus",
                   "Andrews", "10d0s_16384", "0d10s_16384"], [8, 16, 32, 128],
                  ["auto", "auto_matrix_scale", "auto_f32b", "auto_bf16", "auto_bf16_f32b", "auto_split",
                   "cusparse_csr_f16", "cusparse_csr_f32"]),
    "heldout": (["graph200000_d4", "graph200000_d32", "graph500000_d8_power", "graph100000x10000_d16",
                 "graph20000x400000_d32", "mesh60x60x60_d1_s7_lex", "mesh60x60x60_d1_s7_random",
                 "mesh30x30x30_d2_s27_random", "mesh200x200x4_d3_s27_lex", "mesh16x16x16_d4_s27_random",
                 "1d1s_32768", "20d20s_8192", "2d0s_65536"], [8, 16, 32, 64, 128], ["auto"] + CUSPARSE),
    "model": (["arrowhead46500", "dense_rows200000", "dense_cols200000", "block_diagonal262144",
               "power_law1000000_d16", "short_rows2000000", "long_rows20000x200000", "least_squares72000x2700",
               "circuit1600000"], [1, 8, 32, 128, 256],
              ["auto", "auto_model", "auto_tiles", "auto_hybrid", "auto_csr", "split_pipelined", "csr_cuda_cores"]
              + CUSPARSE + ["cusparse_spmv_f16", "cusparse_spmv_f32"]),
}
SECTIONS = ["## How the figures are taken", "## Reproduce", "## Kernels against cuSPARSE, by matrix class",
            "## Synthetic XdYs matrices", "## Real SuiteSparse matrices", "## 3-D meshes", "## Random graphs",
            "## CSR path", "## Tile layouts", "## Band groups", "## Data-movement floors", "## Precision modes",
            "## Load balance", "## Cost model", "## Measured plans", "## Distributed operator and solver", "## Solver",
            "## Host pipeline", "## Measured design choices"]
# Matrices whose long bands the balance step splits (elsewhere its _whole methods time the same plan).
LONG_BANDS = {"graph1000000_d16_power", "graph100000_d8_power", "rajat01"}
META = {"device": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "gpus": 1, "date": "2026-12-01 10:00 UTC",
        "commit": "unknown"}


def fail(message):
    print(f"test_perf_doc.py: FAILED: {message}")
    sys.exit(1)


def render(repo, data, sweep, out):
    command = [sys.executable, str(repo / "scripts" / "perf_report.py"), "render", "--data", str(data), "--sweep",
               str(sweep), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        fail(f"{' '.join(command)} exited with {done.returncode}:\n{done.stdout}{done.stderr}")
    return out.read_text()


def check_committed(repo, scratch, limit):
    """The committed document equals a fresh render of the committed data and fits the bound."""
    fresh = render(repo, repo / "docs" / "data", repo / "docs" / "sweep", scratch / "PERFORMANCE.md")
    committed = (repo / "docs" / "PERFORMANCE.md").read_text()
    if fresh != committed:
        diff = list(difflib.unified_diff(committed.splitlines(), fresh.splitlines(), "docs/PERFORMANCE.md",
                                         "rendered from docs/data and docs/sweep", lineterm="", n=1))
        fail("docs/PERFORMANCE.md differs from its data; run `python3 scripts/perf_report.py render` and commit "
             "the result (or the data). First differences:\n" + "\n".join(diff[:40]))
    size = len(committed.encode())
    if size > limit:
        fail(f"docs/PERFORMANCE.md is {size} bytes, over the {limit} bytes of a reference document")
    print(f"committed document: identical to a fresh render, {size} bytes (limit {limit})")


def write_bench_csv(path, step, rng):
    """Rows as bench_spmm --csv writes them (device quoted), times with a plausible order of kernels."""
    matrices, widths, methods = STEPS[step]
    with open(path, "w", newline="") as handle:
        handle.write(",".join(BENCH_COLUMNS) + "\n")
        for matrix in matrices:
            base = rng.uniform(5e-3, 0.2)
            dense, sparse, zero = rng.randrange(0, 9000), rng.randrange(1, 9000), rng.randrange(10 ** 5, 10 ** 7)
            for n in widths:
                times = {}
                for method in methods:
                    median = base * (1 + n / 64) * (rng.uniform(4, 12) if method.startswith("cusparse") else
                                                    rng.uniform(0.8, 1.6))
                    if method.endswith("_whole"):  # one block per band: slower only where a band is much longer
                        median = times[method[:-len("_whole")]] * (1.4 if matrix in LONG_BANDS else 1.005)
                    times[method] = median
                    layout = "aligned/none" if method == "split_aligned" else "condensed/rcm"
                    tiles = (dense * 3, sparse * 2) if method == "split_aligned" else (dense, sparse)
                    share = tiles[1] / (tiles[0] + tiles[1])
                    cells = [matrix, 1000, 1000, 50000, n, method, f"{median:.6g}", f"{0.97 * median:.6g}",
                             f"{1.1 * median:.6g}", 1.0, 0.5, 900, rng.uniform(0.1, 0.9),
                             f"{rng.uniform(1e-4, 3e-4):.3g}",
                             tiles[0], tiles[1], zero, f"{share:.6g}", '"NVIDIA H100 80GB HBM3"', layout]
                    # The plan columns (bench_spmm since the model step): empty for the cuSPARSE rows, a tuning time
                    # for auto's measured plans, a summary with commas inside its quotes.
                    own = not method.startswith("cu")
                    cells += [f"{median * 1000 * rng.uniform(0.5, 2):.3f}" if own else "",
                              f"{rng.uniform(0.5, 40):.3f}" if method == "auto" else "",
                              '"3 tile bands, 1 CSR bands; measure: tiles only"' if own else '""']
                    handle.write(",".join(map(str, cells)) + "\n")


def write_floor_md(path, rng):
    """bench_floor's output for the floor step's three matrices, printed as apps/bench_floor.cu prints it."""
    variants = ["2:4 + dense tiles, fp16 B", "all tiles dense, fp16 B", "2:4 + dense tiles, fp32 B",
                "2:4 + dense tiles, no B", "all tiles dense, no B", "no tiles: launch, band descriptors, C"]
    lines = []
    for matrix in STEPS["floor"][0]:
        lines += [f"bench_floor: {matrix}, 16384 x 16384, 1024 tile rows; 52429 2:4 tiles, 0 dense tiles; device "
                  "NVIDIA H100 80GB HBM3",
                  "| n | variant | stages 2:4 / dense | median us | min us | A MB (DRAM) | B MB (through L2) |",
                  "|---:|---|---|---:|---:|---:|---:|",
                  "A bytes read alone (no tile grid, no B, no C): 2:4 + dense 13.41 us (30.2 MB), all dense 20.88 us "
                  "(53.7 MB); ratio 1.56", ""]
        for n in STEPS["floor"][1]:
            for variant in variants:
                median = rng.uniform(4, 40)
                lines.append(f"| {n} | {variant} | 5 / 3 | {median:.2f} | {0.98 * median:.2f} | 30.2 | 26.8 |")
            lines.append(f"| {n} | ratios | all dense / 2:4 + dense, fp16 B: 1.45; no B: 1.47; fp32 B / fp16 B: 1.11 "
                         "| | | | |")
            for variant in variants[:3]:
                lines.append(f"| {n} | persistent stream: {variant} | 2 blocks/SM, 8 tiles x 4 stages | "
                             f"{rng.uniform(4, 40):.2f} | | | |")
            lines.append(f"| {n} | ratios, persistent stream | all dense / 2:4 + dense, fp16 B: 1.41; fp32 B / fp16 B: "
                         "1.07 | | | | |")
    path.write_text("\n".join(lines) + "\n")


def check_full_run(repo, scratch, limit):
    """A gpu_check.sh OUTDIR with every step's files, collected into copies of the data folders and rendered."""
    rng = random.Random(2026)
    out = scratch / "gpu_check_out"
    (out / "sweep").mkdir(parents=True)
    for step in STEPS:
        write_bench_csv(out / f"{step}.csv", step, rng)
        meta = dict(META, command=f"STEPS={step} scripts/gpu_check.sh OUT",
                    runs=[f"build-gpu/apps/bench_spmm --xdys 10d0s --n 8 --csv OUT/{step}.csv"])
        (out / f"{step}.meta.json").write_text(json.dumps(meta))
    write_floor_md(out / "floor.md", rng)
    # The sweep: the committed CSV as a new run wrote it.
    shutil.copyfile(repo / "docs" / "sweep" / "sweep.csv", out / "sweep" / "sweep.csv")
    (out / "sweep" / "meta.json").write_text(json.dumps(dict(META, command="STEPS=sweep scripts/gpu_check.sh OUT")))
    # The committed data as the report step stages it, then the run's files over it.
    data, sweep = scratch / "stage" / "data", scratch / "stage" / "sweep"
    shutil.copytree(repo / "docs" / "data", data)
    sweep.mkdir(parents=True)
    for name in ("sweep.csv", "meta.json", "skipped.tsv"):
        if (repo / "docs" / "sweep" / name).is_file():
            shutil.copyfile(repo / "docs" / "sweep" / name, sweep / name)
    command = [sys.executable, str(repo / "scripts" / "perf_report.py"), "collect", str(out), "--data", str(data),
               "--sweep", str(sweep), "--commit", "0123456789ab"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        fail(f"collect exited with {done.returncode}:\n{done.stdout}{done.stderr}")
    if (sweep / "skipped.tsv").exists():
        fail("collect kept the committed skipped.tsv although the new sweep skipped nothing")
    for step in STEPS:
        meta = json.loads((data / f"{step}.meta.json").read_text())
        if meta.get("commit") != "0123456789ab" or meta.get("transcribed"):
            fail(f"collect did not replace {step}.meta.json with the run's (commit filled in): {meta}")
    with open(data / "floor_movement.csv", newline="") as handle:
        floor_rows = list(csv.DictReader(handle))
    expected = len(STEPS["floor"][0]) * (len(STEPS["floor"][1]) * 9 + 2)
    if len(floor_rows) != expected:
        fail(f"floor.md gave {len(floor_rows)} rows of floor_movement.csv, expected {expected}")
    text = render(repo, data, sweep, scratch / "full.md")
    missing = [section for section in SECTIONS if section + "\n" not in text]
    if missing:
        fail(f"the document of a full run lacks {missing}")
    check_captions(text)
    for step in STEPS:
        if f"`STEPS={step} scripts/gpu_check.sh OUT` · NVIDIA H100 80GB HBM3 · 2026-12-01 · 0123456789ab*" \
                not in text:
            fail(f"no table of the document of a full run names the {step} step's run")
    size = len(text.encode())
    if size > limit:
        fail(f"the document of a full gpu_check.sh run would be {size} bytes, over the {limit}-byte bound")
    print(f"full gpu_check.sh run: collected and rendered, every section present, {size} bytes (limit {limit})")


def check_captions(text):
    """Every table is followed by its caption: command, device, date and commit in one italic line."""
    lines = text.splitlines()
    header = None
    for index, line in enumerate(lines):
        if not line.startswith("|"):
            header = None
            continue
        header = header or line
        if index + 1 < len(lines) and lines[index + 1].startswith("|"):
            continue
        if header.startswith("| file | commit | source |"):
            continue  # the *Data* table: the provenance itself
        caption = lines[index + 2] if index + 2 < len(lines) else ""
        if not (caption.startswith("*") and caption.endswith("*") and " · " in caption):
            fail(f"the table ending at line {index + 1} has no caption with its data's provenance: {caption!r}")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    repo = Path(sys.argv[1]).resolve()
    sys.path.insert(0, str(repo / "scripts"))
    from perf_report import SIZE_LIMIT_BYTES  # noqa: E402
    with tempfile.TemporaryDirectory(prefix="bcsr24_perf_doc_") as scratch:
        check_committed(repo, Path(scratch), SIZE_LIMIT_BYTES)
        check_full_run(repo, Path(scratch), SIZE_LIMIT_BYTES)
    print("test_perf_doc.py: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
