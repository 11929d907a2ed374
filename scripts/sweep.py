#!/usr/bin/env python3
"""Benchmark sweep: run bench_spmm over the thesis's SuiteSparse set (or a directory, or the synthetic XdYs set and
3-D mesh matrices) and several widths n of B, collecting one CSV (resumable), then summarise and plot it with plot_sweep.py.

Examples:
  scripts/sweep.py --matrix-dir ~/suitesparse --out sweep-h100                 # the thesis's nine matrices
  scripts/sweep.py --synthetic --out sweep-h100                                # XdYs at 16384 x 16384 + 2 meshes
  scripts/sweep.py --mesh 30x30x30,dofs=3,order=random --out mesh              # one 3-D mesh matrix
  scripts/sweep.py --matrix-dir ~/ss --all-in-dir --min-nnz 200000 --out all   # every .mtx in a folder
Run it again with the same --out to finish an interrupted sweep: (matrix, n) pairs already in the CSV are skipped.

A matrix bench_spmm refuses (it exits with 'bench_spmm: error: ...', e.g. a complex-valued file) does not stop the
sweep: it is listed in skipped.tsv next to the CSV (matrix, the widths without rows, the first line of the error),
which plot_sweep.py copies into summary.md, and the sweep goes on. Timeouts and crashes are listed there too, but also
make the sweep exit with status 1. A later run retries what skipped.tsv lists and drops what then succeeds.

Each run that measures something writes meta.json next to the CSV (scripts/bench_meta.py: device, date, git commit,
the command to repeat it and this sweep.py command line; a resumed sweep keeps the earlier runs' date and commit under
earlier_runs), which scripts/perf_report.py prints under the tables it makes from the CSV.
"""

import argparse
import csv
import gzip
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_meta import write_meta

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LIST = REPO_ROOT / "data" / "suitesparse_thesis.tsv"
# The thesis's synthetic matrices (section 3.1.2): X% dense tiles, Y% 2:4 tiles, the rest zero.
DEFAULT_SYNTHETIC = ["10d0s", "20d0s", "0d10s", "0d20s", "5d5s", "1d9s", "9d1s", "10d10s"]
# Mesh matrices --synthetic adds (bench_spmm --mesh): the same FEM-like matrix in two node orders.
DEFAULT_MESHES = ["40x40x40,dofs=3,stencil=27,order=lex", "40x40x40,dofs=3,stencil=27,order=random"]
DEFAULT_WIDTHS = "8,16,32,64,128,256"
# plan_bytes .. copy_gbs: the DRAM bytes a bcsr24 plan moves per product, that rate at the median time, its share of
# the device's measured copy bandwidth, and that bandwidth (empty for the cuSPARSE/cuBLAS baselines). A sweep.csv
# begun before they existed keeps its own columns (merge_rows).
CSV_COLUMNS = ["matrix", "rows", "cols", "nnz", "n", "method", "median_ms", "min_ms", "max_ms", "tflops_thesis",
               "tflops_useful", "bandwidth_gbs", "floor_fraction", "rel_error", "dense_tiles", "sparse24_tiles",
               "zero_tiles", "sparse24_share", "device", "layout", "plan_bytes", "plan_gbs", "copy_fraction",
               "copy_gbs"]
MATRIX_SUFFIXES = (".mtx", ".mtx.gz")
SKIPPED_COLUMNS = ["matrix", "widths", "reason"]
# How bench_spmm reports an error (exit status 1). Only errors about the input count as a refusal (the matrix is
# skipped and listed); any other error (a CUDA failure, a wrong result) fails the sweep, as do crashes and timeouts.
BENCH_ERROR_PREFIX = "bench_spmm: error:"
REFUSAL_WORDS = ("not supported", "exceed", "does not fit")


class Job:
    """One bench_spmm invocation: a matrix (file or synthetic) and the widths still missing from the CSV."""

    def __init__(self, key, source_args, widths):
        self.key = key                  # name in the CSV's matrix column
        self.source_args = source_args  # ["--matrix", path], ["--xdys", name, "--size", size] or ["--mesh", spec]
        self.widths = widths


class JobResult:
    """How one bench_spmm run ended: status 'ok', 'refused' (bench_spmm reported an error about the input and exited
    with status 1) or 'failed' (timeout, crash, any other exit); the reason (for skipped.tsv) and the widths that
    have no rows after it."""

    def __init__(self, status, reason, rows, missing_widths):
        self.status = status
        self.reason = reason
        self.rows = rows
        self.missing_widths = missing_widths


class SkipList:
    """skipped.tsv: matrix -> (widths without rows, reason) from the latest run that tried them. Widths a later run
    measures leave the list; a matrix leaves it when none are left. The file is absent when nothing is skipped."""

    def __init__(self, path):
        self.path = path
        self.entries = {}
        if path.exists():
            with open(path, newline="") as handle:
                for row in csv.DictReader(handle, delimiter="\t"):
                    self.entries[row["matrix"]] = (set(parse_widths(row["widths"])), row["reason"])

    def record(self, key, widths, reason):
        """The matrix has no rows for `widths` because of `reason` (widths listed earlier stay listed)."""
        old_widths, _ = self.entries.get(key, (set(), ""))
        self.entries[key] = (old_widths | set(widths), reason)

    def clear(self, key, widths):
        """The matrix now has rows for `widths`."""
        if key not in self.entries:
            return
        old_widths, reason = self.entries[key]
        left = old_widths - set(widths)
        if left:
            self.entries[key] = (left, reason)
        else:
            del self.entries[key]

    def save(self):
        """Writes the list (after every job, so that an interrupted sweep keeps it); removes the file when empty."""
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        with open(self.path, "w", newline="") as handle:
            writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
            writer.writerow(SKIPPED_COLUMNS)
            for key, (widths, reason) in self.entries.items():
                writer.writerow([key, ",".join(map(str, sorted(widths))), reason])


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
    """Nonzeros from the Matrix Market size line without reading the body. Symmetric, skew-symmetric and hermitian
    files store one triangle, so their entries count twice: an upper estimate, since the diagonal is not mirrored
    (the expanded count is 2 · stored - diagonal). Array files count every entry."""
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
    """[(key, source_args)] in the order they will run, the names that were asked for but not found, and
    [(key, reason)] for files under --all-in-dir whose header cannot be read."""
    selected, missing, unreadable = [], [], []
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
                    unreadable.append((matrix_key(path), f"sweep.py: cannot read the Matrix Market header: {error}"))
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
    return selected, missing, unreadable


def default_bench_path():
    for build_dir in sorted(REPO_ROOT.glob("build*")):
        candidate = build_dir / "apps" / "bench_spmm"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("bench_spmm") or "bench_spmm"


def merge_rows(job, job_csv, sweep_csv, succeeded):
    """Appends bench_spmm's rows to the sweep CSV under the job's key and returns them. After a failure the last
    width written may be incomplete (and a crash may cut its last line short), so its rows are dropped and that
    width is redone by the next run."""
    if not job_csv.exists():
        return []
    with open(job_csv, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not succeeded:
        rows = [row for row in rows if None not in row.values()]  # a line cut short lacks its last fields
        if rows:
            last_width = rows[-1]["n"]
            rows = [row for row in rows if row["n"] != last_width]
    new_file = not sweep_csv.exists() or sweep_csv.stat().st_size == 0
    columns = CSV_COLUMNS
    if not new_file:  # a sweep resumed: its rows keep the columns it began with
        with open(sweep_csv, newline="") as handle:
            columns = next(csv.reader(handle), None) or CSV_COLUMNS
    with open(sweep_csv, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        if new_file:
            writer.writeheader()
        for row in rows:
            row["matrix"] = job.key
            writer.writerow(row)
    return rows


def exit_description(returncode):
    """'exit code 2', or 'killed by SIGSEGV' for a negative return code."""
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


def classify_run(returncode, stderr_text, timeout):
    """(status, reason) of a bench_spmm run from its exit (None: timed out) and standard error: the reason is
    the first line of bench_spmm's error message where it wrote one."""
    lines = [line.strip() for line in stderr_text.splitlines() if line.strip()]
    error_line = next((line for line in lines if line.startswith(BENCH_ERROR_PREFIX)), None)
    if returncode == 0:
        return "ok", ""
    if returncode == 1 and error_line and any(word in error_line for word in REFUSAL_WORDS):
        return "refused", error_line
    how = f"timed out after {timeout:g} s" if returncode is None else exit_description(returncode)
    first_line = error_line or (lines[0] if lines else None)
    return "failed", f"{how}: {first_line}" if first_line else how


def run_job(job, args, sweep_csv, log_handle):
    """Runs bench_spmm for the job, appends its rows to the sweep CSV and its output to the log."""
    with tempfile.TemporaryDirectory(prefix="bcsr24_sweep_") as scratch:
        job_csv = Path(scratch) / "rows.csv"
        stderr_path = Path(scratch) / "stderr.txt"
        command = [args.bench, *job.source_args, "--name", job.key, "--n", ",".join(map(str, job.widths)),
                   "--methods", args.methods, "--reps", str(args.reps), "--warmup", str(args.warmup),
                   "--csv", str(job_csv), *args.bench_arg]
        log_handle.write("$ " + " ".join(command) + "\n")
        log_handle.flush()
        # Standard error goes to its own file (then to the log, after standard output) to find the error message.
        with open(stderr_path, "w+", errors="replace") as stderr_handle:
            try:
                returncode = subprocess.run(command, stdout=log_handle, stderr=stderr_handle,
                                            timeout=args.timeout, check=False).returncode
            except subprocess.TimeoutExpired:
                returncode = None
            except OSError as error:
                raise SystemExit(f"sweep.py: error: cannot run {args.bench}: {error} (give --bench PATH)")
            stderr_handle.seek(0)
            stderr_text = stderr_handle.read()
        log_handle.write(stderr_text)
        log_handle.flush()
        status, reason = classify_run(returncode, stderr_text, args.timeout)
        rows = merge_rows(job, job_csv, sweep_csv, status == "ok")
        written = {int(row["n"]) for row in rows}
        return JobResult(status, reason, len(rows), [n for n in job.widths if n not in written])


def save_meta(out_dir, args, resumed):
    """meta.json for the sweep's CSV: this run's provenance, with the runs before it listed under earlier_runs when
    this run resumed a sweep (the CSV had rows already)."""
    path = out_dir / "meta.json"
    earlier = []
    if resumed and path.is_file():
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError):
            old = {}
        earlier = old.get("earlier_runs", []) + [{key: old.get(key, "unknown") for key in ("date", "commit")}]
    this_command = shlex.join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    fields = {"reps": args.reps, "warmup": args.warmup}
    if earlier:
        fields["earlier_runs"] = earlier
    write_meta(path, args.meta_command or this_command, [this_command], **fields)


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
    source.add_argument("--min-nnz", type=int, default=10000,
                        help="with --all-in-dir: skip matrices with fewer nonzeros (estimated from the header, "
                             "symmetric files counted twice; default 10000)")
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
    output.add_argument("--out", default="sweep-out",
                        help="folder for sweep.csv, skipped.tsv, bench.log, summary.md, plots")
    output.add_argument("--plot-n", type=int, default=128, help="width shown in the per-matrix plots (default 128)")
    output.add_argument("--no-plot", action="store_true", help="do not call plot_sweep.py at the end")
    output.add_argument("--dry-run", action="store_true", help="print what would run, run nothing")
    output.add_argument("--meta-command", default=None,
                        help="how to repeat this sweep, recorded in meta.json (default: this command line; "
                             "scripts/gpu_check.sh gives its own step)")
    args = parser.parse_args()

    if not args.matrix_dir and not args.synthetic and not args.mesh:
        parser.error("give --matrix-dir DIR, --synthetic and/or --mesh SPEC")
    widths = parse_widths(args.n)
    args.bench = args.bench or default_bench_path()
    out_dir = Path(args.out)
    sweep_csv = out_dir / "sweep.csv"

    matrices, missing, unreadable = collect_matrices(args)
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
    skipped = SkipList(out_dir / "skipped.tsv")
    for key, reason in unreadable:
        skipped.record(key, widths, reason)
    skipped.save()
    refusals, failures = [], []
    with open(out_dir / "bench.log", "a") as log_handle:
        for index, job in enumerate(jobs, 1):
            label = f"[{index}/{len(jobs)}] {job.key} n={','.join(map(str, job.widths))}"
            print(label + " ...", end="", flush=True)
            start = time.monotonic()
            result = run_job(job, args, sweep_csv, log_handle)
            elapsed = time.monotonic() - start
            skipped.clear(job.key, [n for n in job.widths if n not in result.missing_widths])
            if result.status == "ok":
                print(f" {result.rows} rows, {elapsed:.1f} s")
            else:
                skipped.record(job.key, result.missing_widths, result.reason)
                word = "SKIPPED" if result.status == "refused" else "FAILED"
                print(f" {word} ({result.reason}; {result.rows} rows kept; see {out_dir / 'bench.log'})")
                (refusals if result.status == "refused" else failures).append((job.key, result.reason))
            skipped.save()

    if jobs:
        save_meta(out_dir, args, resumed=bool(already))
    if refusals:
        print(f"{len(refusals)} matrices refused by bench_spmm (listed in {skipped.path}): "
              + ", ".join(key for key, _ in refusals))
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
