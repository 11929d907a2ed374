#!/usr/bin/env python3
"""ctest ab_report: scripts/ab_report.py (the table of scripts/ab_compare.sh) on CSVs in the formats the two
bench_spmm binaries write: d3ca7bc's 20 columns, the current 23 (a quoted plan with commas in it), ab_compare.sh's
ab_pass column. Checks the ratios (geometric mean of the passes), the 3% flag, the auto_model = auto pairing, the
rows only one side has, the pass taken from the order of rows where there is no ab_pass column, the warning when a
matrix differs between the binaries, and the exit status. Then scripts/ab_compare.sh itself with two stand-in
bench_spmm programs (no GPU, no build: AB_OLD): the default matrix list from a MANIFEST.tsv, the order of the runs
(old, new, new, old), the same options for both, the CSVs with ab_pass, a failed run left out, and its table.

Usage: test_ab_report.py REPO_ROOT
"""

import csv
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from script_checks import check, exit_status

OLD_COLUMNS = ["matrix", "rows", "cols", "nnz", "n", "method", "median_ms", "min_ms", "max_ms", "tflops_thesis",
               "tflops_useful", "bandwidth_gbs", "floor_fraction", "rel_error", "dense_tiles", "sparse24_tiles",
               "zero_tiles", "sparse24_share", "device", "layout"]
NEW_COLUMNS = OLD_COLUMNS + ["predicted_us", "tuning_ms", "plan"]
DEVICE = "NVIDIA H100 80GB HBM3"
SHAPES = {"10d0s_16384": (16384, 16384, 26843545), "memplus": (17758, 17758, 126150)}


def write_csv(path, columns, rows, with_pass):
    """rows: (matrix, method, n, median_ms, pass); the other columns filled as bench_spmm would."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns + (["ab_pass"] if with_pass else []))
        for matrix, method, n, ms, run_pass in rows:
            r, c, nnz = SHAPES[matrix]
            values = {"matrix": matrix, "rows": r, "cols": c, "nnz": nnz, "n": n, "method": method, "median_ms": ms,
                      "min_ms": ms * 0.98, "max_ms": ms * 1.1, "tflops_thesis": 1.5, "tflops_useful": 0.7,
                      "bandwidth_gbs": 2000, "floor_fraction": 0.6, "rel_error": 3e-4, "dense_tiles": 100,
                      "sparse24_tiles": 0, "zero_tiles": 0, "sparse24_share": 0, "device": DEVICE,
                      "layout": "aligned/none", "predicted_us": 12.5, "tuning_ms": 3.25,
                      "plan": "12 tile bands, 3 CSR bands, 2 split; measure"}
            w.writerow([values[col] for col in columns] + ([run_pass] if with_pass else []))


def run(script, *args):
    return subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True)


# A stand-in for bench_spmm: writes one CSV row per (n, method) of its command line with the columns of its version,
# each time `factor` x a base time; fails where --name is FAIL_NAME on the FAIL_CALL-th call of this stand-in.
FAKE_BENCH = """#!{python}
import csv, os, sys
args = sys.argv[1:]
opt = lambda name: args[args.index(name) + 1]
calls = os.path.join(os.path.dirname(os.path.abspath(__file__)), "{side}.calls")
with open(calls, "a") as f:
    f.write(opt("--name") + "\\n")
call = sum(1 for line in open(calls) if line.strip() == opt("--name"))
if opt("--name") == "{fail_name}" and call == {fail_call}:
    sys.exit(1)
columns = {columns!r}
new = not os.path.exists(opt("--csv"))
with open(opt("--csv"), "a", newline="") as f:
    w = csv.writer(f)
    if new:
        w.writerow(columns)
    for n in opt("--n").split(","):
        for method in opt("--methods").split(","):
            row = dict.fromkeys(columns, "1")
            row.update(matrix=opt("--name"), n=n, method=method, median_ms={factor} * 0.01 * int(n),
                       device="Fake GPU", plan="3 tile bands, 1 CSR band; measure")
            w.writerow([row[c] for c in columns])
"""


def fake_bench(path, side, columns, factor, fail_name="", fail_call=0):
    path.write_text(FAKE_BENCH.format(python=sys.executable, side=side, columns=columns, factor=factor,
                                      fail_name=fail_name, fail_call=fail_call))
    path.chmod(0o755)


def table_rows(markdown):
    """The rows of the 'Every comparison' table as lists of cells."""
    section = markdown.split("## Every comparison", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| matrix")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def check_report(script, tmp):
    """ab_report.py on two passes: the ratios, the flags, the auto_model pairing, rows one side has."""
    old_rows, new_rows = [], []
    # 10d0s: split_pipelined 2% slower in pass 1, 6% in pass 2 (geometric mean ~4%: flagged); dense_bt faster.
    for run_pass, (slow, fast) in ((1, (1.02, 0.9)), (2, (1.06, 0.9))):
        for n, base in ((8, 0.100), (128, 0.400)):
            old_rows += [("10d0s_16384", "split_pipelined", n, base, run_pass),
                         ("10d0s_16384", "dense_bt", n, base * 2, run_pass),
                         ("10d0s_16384", "auto", n, base, run_pass)]
            new_rows += [("10d0s_16384", "split_pipelined", n, base * slow, run_pass),
                         ("10d0s_16384", "dense_bt", n, base * 2 * fast, run_pass),
                         ("10d0s_16384", "auto", n, base * 1.01, run_pass),
                         ("10d0s_16384", "auto_model", n, base * 1.10, run_pass)]
    # memplus: one pass only; csr_cuda_cores only in the old CSV (the new run of it failed).
    old_rows += [("memplus", "split_pipelined", 32, 0.020, 1), ("memplus", "csr_cuda_cores", 32, 0.015, 1)]
    new_rows += [("memplus", "split_pipelined", 32, 0.0205, 1)]
    old_csv, new_csv, out = tmp / "old.csv", tmp / "new.csv", tmp / "ab.md"
    write_csv(old_csv, OLD_COLUMNS, old_rows, with_pass=True)
    write_csv(new_csv, NEW_COLUMNS, new_rows, with_pass=True)

    done = run(script, old_csv, new_csv, "--out", out, "--old-label", "d3ca7bc", "--new-label", "kernels",
               "--date", "2025-06-01", "--command", "scripts/ab_compare.sh OUT d3ca7bc")
    check(done.returncode == 0, f"exit status 0 (got {done.returncode}: {done.stderr})")
    md = out.read_text()
    print(md)
    rows = {(r[0], r[1], int(r[2])): r for r in table_rows(md)}
    check(len(rows) == 9, f"9 comparisons (got {len(rows)})")
    sp = rows[("10d0s_16384", "split_pipelined", 128)]
    check(abs(float(sp[5]) - math.sqrt(1.02 * 1.06)) < 1e-3, f"ratio = geometric mean of the passes ({sp[5]})")
    check(sp[6] == "1.020" and sp[7] == "1.060", f"per-pass ratios ({sp[6]}, {sp[7]})")
    check(sp[8] == "**slower**", "a 4% slower ratio is flagged")
    check(abs(float(sp[3]) - 0.4) < 1e-6, f"old ms = mean of the passes ({sp[3]})")
    dbt = rows[("10d0s_16384", "dense_bt", 8)]
    check(dbt[8] == "" and abs(float(dbt[5]) - 0.9) < 1e-3, "a faster ratio is not flagged")
    auto = rows[("10d0s_16384", "auto", 8)]
    check(auto[8] == "", "1% slower is within the threshold")
    model = rows[("10d0s_16384", "auto_model", 8)]
    check(abs(float(model[5]) - 1.10) < 1e-3 and model[8] == "**slower**",
          "auto_model is compared with the old auto and flagged at 10%")
    check("| auto_model | auto |" in md, "the per-method table names the pairing")
    mp = rows[("memplus", "split_pipelined", 32)]
    check(abs(float(mp[5]) - 1.025) < 1e-3 and mp[8] == "", "2.5% slower is within the threshold")
    check(mp[7] == "", "a pass one side lacks is blank")
    check("memplus, csr_cuda_cores, n = 32: no run of the new binary" in md, "rows only the old side has listed")
    check("**4 of 9 comparisons slower by more than 3%**" in md, "the summary counts the flagged rows")
    check(DEVICE in md and "2025-06-01" in md and "scripts/ab_compare.sh OUT d3ca7bc" in md,
          "device, date and command in the header")
    check("Warning" not in md, "no shape warning where the matrices agree")


def check_report_without_passes(script, tmp):
    """Without ab_pass: the k-th row of a key is pass k; a matrix whose nnz differs is warned about. Returns
    the two CSVs it wrote."""
    old_csv, new_csv = tmp / "old.csv", tmp / "new.csv"
    write_csv(old_csv, OLD_COLUMNS, [("memplus", "auto", 8, 0.010, 0), ("memplus", "auto", 8, 0.012, 0)], False)
    SHAPES["memplus"] = (17758, 17758, 126151)
    write_csv(new_csv, NEW_COLUMNS, [("memplus", "auto", 8, 0.011, 0), ("memplus", "auto", 8, 0.012, 0)], False)
    done = run(script, old_csv, new_csv)
    check(done.returncode == 0, "exit status 0 on standard output")
    rows = table_rows(done.stdout)
    check(len(rows) == 1 and rows[0][6] == "1.100" and rows[0][7] == "1.000",
          f"passes from the order of rows ({rows})")
    check("Warning: memplus differs between the binaries" in done.stdout, "different matrices are warned about")
    return old_csv, new_csv


def check_unreadable_inputs(script, tmp, old_csv, new_csv):
    """Unreadable inputs: exit status 2 with a message."""
    (tmp / "bad.csv").write_text("a,b\n1,2\n")
    done = run(script, tmp / "bad.csv", new_csv)
    check(done.returncode == 2 and "not a bench_spmm CSV" in done.stderr, "a CSV without bench_spmm's columns")
    done = run(script, tmp / "missing.csv", new_csv)
    check(done.returncode == 2, "a missing file")
    done = run(script, old_csv, new_csv, "--pair", "auto_model")
    check(done.returncode != 0 and "NEW=OLD" in done.stderr, "a malformed --pair")


def check_ab_compare(root, tmp):
    """ab_compare.sh with stand-ins: the new one 2% slower everywhere; bigreal's second new run fails."""
    shared = tmp / "shared"
    (shared / "suitesparse").mkdir(parents=True)
    manifest = ["name\tdir\trows\tfield\tnnz_full", "memplus\tsuitesparse\t17758\treal\t126150",
                "bigreal\tsuitesparse\t6000\treal\t60000", "smallreal\tsuitesparse\t100\treal\t1000",
                "bigpattern\tsuitesparse\t9000\tpattern\t90000"]
    (shared / "suitesparse" / "MANIFEST.tsv").write_text("\n".join(manifest) + "\n")
    for name in ("memplus", "bigreal", "smallreal", "bigpattern"):
        (shared / "suitesparse" / f"{name}.mtx").write_text("%%MatrixMarket matrix coordinate real general\n")
    fake_bench(tmp / "old_bench", "old", OLD_COLUMNS, 1.0)
    fake_bench(tmp / "new_bench", "new", NEW_COLUMNS, 1.02, fail_name="bigreal", fail_call=2)
    ab_out = tmp / "ab"
    env = dict(os.environ, AB_OLD=str(tmp / "old_bench"), AB_NEW=str(tmp / "new_bench"),
               BCSR24_SHARED_DATA=str(shared), AB_N="8,32", BENCH_REPS="3")
    done = subprocess.run(["bash", str(root / "scripts" / "ab_compare.sh"), str(ab_out), "d3ca7bc"],
                          capture_output=True, text=True, env=env)
    print(done.stdout, done.stderr)
    check(done.returncode == 0, f"ab_compare.sh exits 0 (got {done.returncode})")
    commands = (ab_out / "commands").read_text().splitlines()
    labels = ["10d0s_16384", "0d10s_16384", "5d5s_16384", "mesh_40x40x40_dofs_3",
              "mesh_40x40x40_dofs_3_order_random", "memplus", "bigreal"]
    check(len(commands) == 4 * len(labels), f"4 runs per found matrix ({len(commands)} runs)")
    for i, label in enumerate(labels):
        group = commands[4 * i:4 * i + 4]
        sides = ["old_bench" if "old_bench" in c.split()[0] else "new_bench" for c in group]
        check(sides == ["old_bench", "new_bench", "new_bench", "old_bench"], f"{label}: old, new, new, old")
        check(all(f"--name {label} " in c for c in group), f"{label}: the same label in every run")
        options = [c.split(" ", 1)[1].split(" --methods ")[0] for c in group]
        check(len(set(options)) == 1, f"{label}: the same source, widths and reps in every run")
        check("--reps 3" in group[0] and "--n 8,32" in group[0], f"{label}: AB_N and BENCH_REPS passed")
    check("--xdys 10d0s --size 16384" in commands[0], "the XdYs source options as given")
    check(any("suitesparse/memplus.mtx" in c for c in commands), "a shared matrix by its path")
    check(not any("smallreal" in c or "bigpattern" in c for c in commands),
          "MANIFEST rows that are not real with >= 50,000 nonzeros are left out")
    check("rajat01: not found, skipped" in done.stdout, "a missing shared matrix is skipped")
    check("--methods auto,split_pipelined,csr_cuda_cores --" in commands[0],
          "the old binary's default methods")
    check("csr_cuda_cores,auto_model --" in commands[1], "the new binary also runs auto_model")
    with open(ab_out / "new.csv", newline="") as f:
        new_rows = list(csv.DictReader(f))
    check(set(new_rows[0]) == set(NEW_COLUMNS + ["ab_pass"]), "new.csv: bench_spmm's columns and ab_pass")
    check(sum(1 for r in new_rows if r["matrix"] == "bigreal" and r["ab_pass"] == "2") == 0,
          "a failed run leaves no rows")
    check(sum(1 for r in new_rows if r["matrix"] == "memplus" and r["ab_pass"] == "2") == 8,
          "pass 2 of memplus: 2 widths x 4 methods")
    md = (ab_out / "ab.md").read_text()
    rows = {(r[0], r[1], int(r[2])): r for r in table_rows(md)}
    check(len(rows) == 7 * 2 * 4, f"every matrix, width and new method compared ({len(rows)})")
    check(rows[("memplus", "auto", 32)][5] == "1.020" and rows[("memplus", "auto", 32)][8] == "",
          "2% slower, not flagged")
    check(rows[("bigreal", "split_pipelined", 8)][7] == "", "the failed pass is blank")
    check("new (pass 2): FAILED" in done.stdout, "the failed run is reported where it happens")
    check("failed runs: new bigreal pass 2" in done.stdout, "the failed run is listed at the end")


def main():
    root = Path(sys.argv[1]).resolve()
    script = root / "scripts" / "ab_report.py"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        check_report(script, tmp)
        old_csv, new_csv = check_report_without_passes(script, tmp)
        check_unreadable_inputs(script, tmp, old_csv, new_csv)
        check_ab_compare(root, tmp)

    return exit_status("ab_report")


if __name__ == "__main__":
    sys.exit(main())
