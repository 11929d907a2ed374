#!/usr/bin/env python3
"""docs/PERFORMANCE.md from the committed benchmark data, so that the document and its figures cannot drift apart.

  scripts/perf_report.py render [--data docs/data] [--sweep docs/sweep] [--out docs/PERFORMANCE.md]
  scripts/perf_report.py collect OUTDIR [--data docs/data] [--sweep docs/sweep] [--commit SHA]

render reads the sweep (SWEEP/sweep.csv from scripts/sweep.py, with SWEEP/meta.json) and the CSVs of the
benchmark steps of scripts/gpu_check.sh in DATA (bench, groups, floor, csr, balance, layouts, precision, heldout,
model: bench_spmm --csv rows; floor_movement: bench_floor's table; spmv, distributed, solver, host, design_choices: tables
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
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_data import CLASSES, SWEEP_FILES, BenchData, Meta, read_table, relative  # noqa: E402
from perf_sections import (balance_section, class_section, cost_model_section, csr_section, floor_section,  # noqa: E402
                           generic_section, groups_section, intro, layout_section, measured_plans_section,
                           precision_section, summary_section)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT / "docs" / "data"
DEFAULT_SWEEP = REPO_ROOT / "docs" / "sweep"
DEFAULT_OUT = REPO_ROOT / "docs" / "PERFORMANCE.md"
# test/test_perf_doc.py fails above this size: the document is a reference, not a log.
SIZE_LIMIT_BYTES = 30 * 1024
# The CSVs of gpu_check.sh's steps (bench_spmm --csv rows) that render reads and collect copies.
STEP_FILES = ["bench", "groups", "floor", "csr", "balance", "layouts", "precision", "heldout", "model"]


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
    for name in ("spmv", "peers", "distributed", "solver", "host", "design_choices"):
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
    texts = {"spmv": ("SpMV (n = 1)", "Against the faster cuSPARSE SpMV (fp16, fp32 CSR), same run."),
             "peers": ("FlashSparse", "Fastest 8x1 variant / `auto` (geomean; lowest); like for like: `auto_c16` vs "
                                      "fp16-C ones."),
             "distributed": ("Distributed operator and solver",
                             "`DistributedOperator` over two GPUs of one host against one GPU, same process and "
                             "problem (docs/DISTRIBUTED.md)."),
             "solver": ("Solver", "bcsr24::solvers against the same solver with cuSPARSE fp32 products and 16 "
                                  "Jacobi-PCG fp64 solves; 16 right-hand sides to 1e-8 (Python: docs/SOLVERS.md)."),
             "host": ("Host pipeline", "Reading and conversion on the CPU."),
             "design_choices": ("Measured design choices",
                                "Each row: what the library does, what it was measured against, and the figure that "
                                "decided it; `git show COMMIT:docs/PERFORMANCE.md` has the run.")}
    for name, (title, text) in texts.items():
        if name in generic:
            lines += generic_section(title, text, *generic[name])
    return "\n".join(lines).rstrip("\n") + "\n"


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
