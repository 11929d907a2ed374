#!/usr/bin/env python3
"""Benchmark sweep: run bench_spmm over the thesis's SuiteSparse set (or a directory, or the synthetic XdYs set and
3-D mesh matrices) and several widths n of B, collecting one CSV (resumable), then summarise and plot it with plot_sweep.py.

Examples:
  scripts/sweep.py --matrix-dir ~/suitesparse --out sweep-h100                 # the thesis's nine matrices
  scripts/sweep.py --synthetic --out sweep-h100                                # XdYs at 16384 x 16384 + 2 meshes
  scripts/sweep.py --mesh 30x30x30,dofs=3,order=random --out mesh              # one 3-D mesh matrix
  scripts/sweep.py --matrix-dir ~/ss --all-in-dir --min-nnz 200000 --out all   # every .mtx in a folder
Run it again with the same --out to finish an interrupted sweep: (matrix, n) pairs already in the CSV are skipped.
"""

import argparse
import csv
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LIST = REPO_ROOT / "data" / "suitesparse_thesis.tsv"
# The thesis's synthetic matrices (section 3.1.2): X% dense tiles, Y% 2:4 tiles, the rest zero.
DEFAULT_SYNTHETIC = ["10d0s", "20d0s", "0d10s", "0d20s", "5d5s", "1d9s", "9d1s", "10d10s"]
# Mesh matrices --synthetic adds (bench_spmm --mesh): the same FEM-like matrix in two node orders.
DEFAULT_MESHES = ["40x40x40,dofs=3,stencil=27,order=lex", "40x40x40,dofs=3,stencil=27,order=random"]
DEFAULT_WIDTHS = "8,16,32,64,128,256"
CSV_COLUMNS = ["matrix", "rows", "cols", "nnz", "n", "method", "median_ms", "min_ms", "max_ms", "tflops_thesis",
               "tflops_useful", "bandwidth_gbs", "floor_fraction", "rel_error", "dense_tiles", "sparse24_tiles",
               "zero_tiles", "sparse24_share", "device", "layout"]
MATRIX_SUFFIXES = (".mtx", ".mtx.gz")


class Job:
    """One bench_spmm invocation: a matrix (file or synthetic) and the widths still missing from the CSV."""

    def __init__(self, key, source_args, widths):
        self.key = key                  # name in the CSV's matrix column
        self.source_args = source_args  # ["--matrix", path], ["--xdys", name, "--size", size] or ["--mesh", spec]
        self.widths = widths


def parse_widths(text):
    try:
        widths = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SystemExit(f"sweep.py: error: --n wants comma-separated integers, got {text!r}")
    if not widths or min(widths) < 1:
        raise SystemExit(f"sweep.py: error: --n wants widths >= 1, got {text!r}")
    return widths


def mesh_name(spec):
    """The CSV name bench_spmm gives a --mesh SPEC (bcsr24::mesh_name), e.g. mesh40x40x40_d3_s27_lex; a spec
    that bcsr24::parse_mesh_spec would reject stops the sweep before anything runs."""
    def fail(why):
        raise SystemExit(f"sweep.py: error: --mesh {spec!r}: {why} "
                         "(expected NXxNYxNZ[,dofs=D][,stencil=7|27][,order=lex|random][,seed=S])")
    parts = spec.split(",")
    sizes = re.fullmatch(r"(\d+)[xX](\d+)[xX](\d+)", parts[0])
    if not sizes or min(int(v) for v in sizes.groups()) < 1:
        fail(f"sizes {parts[0]!r} must be three positive integers NXxNYxNZ")
    fields = {"dofs": "3", "stencil": "27", "order": "lex", "seed": "1", "margin": None}
    seen = set()
    for part in parts[1:]:
        key, eq, value = part.partition("=")
        if not eq:
            fail(f"{part!r} is not KEY=VALUE")
        if key not in fields:
            fail(f"unknown key {key!r}")
        if key in seen:
            fail(f"key {key!r} given twice")
        seen.add(key)
        fields[key] = value
    if not re.fullmatch(r"\d+", fields["dofs"]) or int(fields["dofs"]) < 1:
        fail(f"dofs {fields['dofs']!r} must be a positive integer")
    if fields["stencil"] not in ("7", "27"):
        fail(f"stencil {fields['stencil']!r} must be 7 or 27")
    order = {"lex": "lex", "lexicographic": "lex", "random": "random"}.get(fields["order"])
    if order is None:
        fail(f"order {fields['order']!r} must be lex or random")
    if not re.fullmatch(r"\d+", fields["seed"]):
        fail(f"seed {fields['seed']!r} must be a non-negative integer")
    nx, ny, nz = (int(v) for v in sizes.groups())
    name = f"mesh{nx}x{ny}x{nz}_d{int(fields['dofs'])}_s{fields['stencil']}_{order}"
    if int(fields["seed"]) != 1:
        name += f"_seed{int(fields['seed'])}"
    if fields["margin"] is not None:
        try:
            margin = float(fields["margin"])
        except ValueError:
            fail(f"margin {fields['margin']!r} must be a number > 0")
        if not margin > 0:
            fail(f"margin {fields['margin']!r} must be a number > 0")
        if margin != 0.01:
            name += f"_m{margin:g}"
    return name


def read_matrix_list(path):
    """Rows of the TSV list (header line first; '#' lines are comments)."""
    with open(path, newline="") as handle:
        lines = [line for line in handle if line.strip() and not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def find_matrix_file(directory, name, group=None):
    """The file for `name` in the layouts people keep SuiteSparse in: flat, one folder per matrix (as the
    tar.gz unpacks), or group/name/."""
    candidates = []
    for suffix in MATRIX_SUFFIXES:
        candidates += [directory / f"{name}{suffix}", directory / name / f"{name}{suffix}"]
        if group:
            candidates += [directory / group / f"{name}{suffix}", directory / group / name / f"{name}{suffix}"]
    return next((path for path in candidates if path.is_file()), None)


def header_nnz_estimate(path):
    """Nonzeros from the Matrix Market size line without reading the body; symmetric files count twice
    (an upper estimate: the diagonal is not doubled)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", errors="replace") as handle:
        banner = handle.readline().lower()
        for line in handle:
            if line.startswith("%") or not line.strip():
                continue
            fields = line.split()
            if "array" in banner:
                return int(fields[0]) * int(fields[1])
            entries = int(fields[2])
            symmetric = any(word in banner for word in ("symmetric", "hermitian", "skew-symmetric"))
            return 2 * entries if symmetric and "general" not in banner else entries
    return 0


def matrix_key(path):
    name = path.name
    for suffix in (".gz", ".mtx"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def done_pairs(csv_path):
    """(matrix, n) pairs already measured."""
    if not csv_path.exists():
        return set()
    with open(csv_path, newline="") as handle:
        return {(row["matrix"], int(row["n"])) for row in csv.DictReader(handle) if row.get("n")}


def collect_matrices(args):
    """[(key, source_args)] in the order they will run, and the names that were asked for but not found."""
    selected, missing = [], []
    if args.matrix_dir:
        directory = Path(args.matrix_dir).expanduser()
        if not directory.is_dir():
            raise SystemExit(f"sweep.py: error: --matrix-dir {directory}: not a directory")
        if args.all_in_dir:
            files = sorted(p for p in directory.rglob("*") if p.is_file() and p.name.endswith(MATRIX_SUFFIXES))
            for path in files:
                try:
                    nnz = header_nnz_estimate(path)
                except (OSError, ValueError, IndexError) as error:
                    print(f"  skipping {path}: cannot read its header ({error})")
                    continue
                if nnz >= args.min_nnz:
                    selected.append((matrix_key(path), ["--matrix", str(path)]))
                else:
                    print(f"  skipping {path.name}: about {nnz} nonzeros < --min-nnz {args.min_nnz}")
        else:
            for entry in read_matrix_list(args.list):
                path = find_matrix_file(directory, entry["name"], entry.get("group"))
                if path is None:
                    missing.append(entry)
                else:
                    selected.append((entry["name"], ["--matrix", str(path)]))
    if args.synthetic:
        for spec in args.synthetic_set.split(","):
            spec = spec.strip()
            if not re.fullmatch(r"\d+d\d+s", spec):
                raise SystemExit(f"sweep.py: error: synthetic name {spec!r} is not of the form XdYs (e.g. 10d5s)")
            key = f"{spec}_{args.synthetic_size}"
            selected.append((key, ["--xdys", spec, "--size", str(args.synthetic_size)]))
    meshes = list(args.mesh) + (DEFAULT_MESHES if args.synthetic else [])
    for spec in dict.fromkeys(meshes):  # in order, each once
        key = mesh_name(spec)
        if key not in (k for k, _ in selected):
            selected.append((key, ["--mesh", spec]))
    return selected, missing


def default_bench_path():
    for build_dir in sorted(REPO_ROOT.glob("build*")):
        candidate = build_dir / "apps" / "bench_spmm"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("bench_spmm") or "bench_spmm"


def merge_rows(job, job_csv, sweep_csv, succeeded):
    """Appends bench_spmm's rows to the sweep CSV under the job's key. After a failure the last width written
    may be incomplete, so its rows are dropped and that width is redone by the next run."""
    if not job_csv.exists():
        return 0
    with open(job_csv, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not succeeded and rows:
        last_width = rows[-1]["n"]
        rows = [row for row in rows if row["n"] != last_width]
    new_file = not sweep_csv.exists()
    with open(sweep_csv, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        if new_file:
            writer.writeheader()
        for row in rows:
            row["matrix"] = job.key
            writer.writerow(row)
    return len(rows)


def run_job(job, args, sweep_csv, log_handle):
    with tempfile.TemporaryDirectory(prefix="bcsr24_sweep_") as scratch:
        job_csv = Path(scratch) / "rows.csv"
        command = [args.bench, *job.source_args, "--name", job.key, "--n", ",".join(map(str, job.widths)),
                   "--methods", args.methods, "--reps", str(args.reps), "--warmup", str(args.warmup),
                   "--csv", str(job_csv), *args.bench_arg]
        log_handle.write("$ " + " ".join(command) + "\n")
        log_handle.flush()
        try:
            completed = subprocess.run(command, stdout=log_handle, stderr=subprocess.STDOUT,
                                       timeout=args.timeout, check=False)
            succeeded, reason = completed.returncode == 0, f"exit code {completed.returncode}"
        except subprocess.TimeoutExpired:
            succeeded, reason = False, f"timed out after {args.timeout} s"
        except OSError as error:
            raise SystemExit(f"sweep.py: error: cannot run {args.bench}: {error} (give --bench PATH)")
        rows = merge_rows(job, job_csv, sweep_csv, succeeded)
        return succeeded, reason, rows


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_argument_group("matrices")
    source.add_argument("--matrix-dir", help="folder holding the .mtx (or .mtx.gz, or name/name.mtx) files")
    source.add_argument("--list", default=str(DEFAULT_LIST),
                        help="TSV with a 'name' (and 'group') column: the matrices to take from --matrix-dir "
                             "(default: the thesis's nine, data/suitesparse_thesis.tsv)")
    source.add_argument("--all-in-dir", action="store_true",
                        help="take every .mtx/.mtx.gz under --matrix-dir instead of --list")
    source.add_argument("--min-nnz", type=int, default=50000,
                        help="with --all-in-dir: skip matrices with fewer nonzeros (from the header; default 50000)")
    source.add_argument("--synthetic", action="store_true",
                        help="also run the synthetic XdYs matrices and two 3-D meshes (" + " and ".join(DEFAULT_MESHES)
                        + ")")
    source.add_argument("--synthetic-set", default=",".join(DEFAULT_SYNTHETIC),
                        help="comma-separated XdYs names (default: %(default)s)")
    source.add_argument("--synthetic-size", type=int, default=16384, help="rows = cols of synthetic matrices")
    source.add_argument("--mesh", action="append", default=[], metavar="SPEC",
                        help="also run this 3-D mesh matrix (bench_spmm --mesh SPEC, e.g. 40x40x40,dofs=3,order=random; "
                             "repeatable); its CSV name is e.g. mesh40x40x40_d3_s27_random")
    bench = parser.add_argument_group("benchmark")
    bench.add_argument("--n", default=DEFAULT_WIDTHS, help="comma-separated widths of B (default: %(default)s)")
    bench.add_argument("--bench", default=None, help="bench_spmm program (default: build*/apps/bench_spmm, PATH)")
    bench.add_argument("--methods", default="all", help="passed to bench_spmm --methods (default: all)")
    bench.add_argument("--reps", type=int, default=20, help="timed runs per method (default 20)")
    bench.add_argument("--warmup", type=int, default=5, help="untimed runs per method (default 5)")
    bench.add_argument("--timeout", type=float, default=3600, help="seconds allowed per matrix (default 3600)")
    bench.add_argument("--bench-arg", action="append", default=[],
                       help="extra argument for bench_spmm, repeatable (e.g. --bench-arg=--no-flush)")
    output = parser.add_argument_group("output")
    output.add_argument("--out", default="sweep-out", help="folder for sweep.csv, bench.log, summary.md, plots")
    output.add_argument("--plot-n", type=int, default=128, help="width shown in the per-matrix plots (default 128)")
    output.add_argument("--no-plot", action="store_true", help="do not call plot_sweep.py at the end")
    output.add_argument("--dry-run", action="store_true", help="print what would run, run nothing")
    args = parser.parse_args()

    if not args.matrix_dir and not args.synthetic and not args.mesh:
        parser.error("give --matrix-dir DIR, --synthetic and/or --mesh SPEC")
    widths = parse_widths(args.n)
    args.bench = args.bench or default_bench_path()
    out_dir = Path(args.out)
    sweep_csv = out_dir / "sweep.csv"

    matrices, missing = collect_matrices(args)
    if missing:
        print(f"{len(missing)} matrices of {args.list} are not in {args.matrix_dir}; skipped:")
        for entry in missing:
            url = entry.get("url", "")
            print(f"  {entry['name']:<18} {url}")
    already = done_pairs(sweep_csv)
    jobs = []
    for key, source_args in matrices:
        todo = [n for n in widths if (key, n) not in already]
        if todo:
            jobs.append(Job(key, source_args, todo))
        else:
            print(f"  {key}: all widths already in {sweep_csv}")
    print(f"{len(jobs)} bench_spmm runs to do ({len(matrices) - len(jobs)} matrices already complete)")

    if args.dry_run:
        for job in jobs:
            print(" ".join([args.bench, *job.source_args, "--name", job.key, "--n",
                            ",".join(map(str, job.widths)), "--methods", args.methods]))
        return 0

    out_dir.mkdir(parents=True, exist_ok=True)
    failures = []
    with open(out_dir / "bench.log", "a") as log_handle:
        for index, job in enumerate(jobs, 1):
            label = f"[{index}/{len(jobs)}] {job.key} n={','.join(map(str, job.widths))}"
            print(label + " ...", end="", flush=True)
            start = time.monotonic()
            succeeded, reason, rows = run_job(job, args, sweep_csv, log_handle)
            elapsed = time.monotonic() - start
            if succeeded:
                print(f" {rows} rows, {elapsed:.1f} s")
            else:
                print(f" FAILED ({reason}; {rows} rows kept; see {out_dir / 'bench.log'})")
                failures.append((job.key, reason))

    if failures:
        print(f"{len(failures)} matrices failed: " + ", ".join(f"{key} ({reason})" for key, reason in failures))
    if not args.no_plot and sweep_csv.exists():
        plot_script = Path(__file__).resolve().parent / "plot_sweep.py"
        command = [sys.executable, str(plot_script), str(sweep_csv), "--out", str(out_dir), "--n", str(args.plot_n)]
        print("$ " + " ".join(command))
        plot_status = subprocess.run(command, check=False).returncode
        if plot_status != 0:
            print(f"plot_sweep.py failed with exit code {plot_status}")
            return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
