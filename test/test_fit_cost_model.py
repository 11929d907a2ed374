#!/usr/bin/env python3
"""ctest fit_cost_model: how scripts/fit_cost_model.py reads `auto` from the three kinds of CSV it is given.

- bench_spmm's CSV from before measured plans (no tuning_ms column, no auto_model rows): `auto` was the cost model's
  plan, read as `auto_model`;
- scripts/sweep.py's CSV (no tuning_ms column, `auto_model` beside `auto`): `auto` is the measured plan and is
  compared with cuSPARSE as it is (in the model step of 2026-11-26 at f04b190, G51 at n = 1 was reported at its
  auto_model time, 0.98x, where auto ran 1.24x);
- bench_spmm's current CSV (tuning_ms): `auto` as it is.

Usage: test_fit_cost_model.py REPO_ROOT
"""

import csv
import sys
import tempfile
from pathlib import Path

from script_checks import check, exit_status


def write(path, columns, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for matrix, method, ms in rows:
            row = {c: "" for c in columns}
            row.update(matrix=matrix, rows=1000, cols=1000, nnz=11818, n=1, method=method, median_ms=ms)
            w.writerow(row)


def main():
    sys.path.insert(0, str(Path(sys.argv[1]) / "scripts"))
    import fit_cost_model as fit

    base = ["matrix", "rows", "cols", "nnz", "n", "method", "median_ms", "device", "layout"]
    with tempfile.TemporaryDirectory() as tmp:
        old, sweep, current = Path(tmp, "old.csv"), Path(tmp, "sweep.csv"), Path(tmp, "current.csv")
        write(old, base, [("A", "auto", 0.008), ("A", "cusparse_csr_f16", 0.0079)])
        write(sweep, base, [("B", "auto", 0.0064), ("B", "auto_model", 0.0081), ("B", "cusparse_csr_f16", 0.0079)])
        write(current, base + ["predicted_us", "tuning_ms", "plan"], [("C", "auto", 0.0064), ("C", "cusparse_csr_f16", 0.0079)])
        cells = fit.read_cells([old, sweep, current])
        check(("A", 1, "auto") not in cells and abs(cells[("A", 1, "auto_model")].ms - 0.008) < 1e-12,
              "a CSV before measured plans: auto read as auto_model")
        check(abs(cells[("B", 1, "auto")].ms - 0.0064) < 1e-12 and abs(cells[("B", 1, "auto_model")].ms - 0.0081) < 1e-12,
              "sweep.py's CSV: auto and auto_model each as they are")
        check(abs(cells[("C", 1, "auto")].ms - 0.0064) < 1e-12, "a CSV with tuning_ms: auto as it is")
        text = "\n".join(fit.cusparse_section(cells))
        check("Cells below 1.0x" in text and "| A | 1 |" in text and "| B | 1 |" not in text,
              "below 1.0x: the cell whose only time is the model's plan, not the sweep's measured auto")
        only_fast = {k: v for k, v in cells.items() if k[0] != "A"}
        check("No cell below 1.0x." in "\n".join(fit.cusparse_section(only_fast)), "no cell below 1.0x is said")
    return exit_status("test_fit_cost_model.py")


if __name__ == "__main__":
    sys.exit(main())
