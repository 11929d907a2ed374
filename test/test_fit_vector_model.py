#!/usr/bin/env python3
"""ctest fit_vector_model: scripts/fit_vector_model.py splits windows as the library does and reads its CSVs.

- the automatic bound per window (vector_schedule.hpp, vector_window_piece_steps), on the cases
  test/test_vector_schedule.cpp checks against the C++ function;
- a prediction worked out by hand from the constants (cost_model.cpp, vector_part_ns);
- which rows of a CSV it takes: auto_vectors (as the automatic split, or with PATH=old the split before session 58,
  or with PATH=forced not at all) and auto_vectors_piecesS (the bound S), nothing else.

Usage: test_fit_vector_model.py REPO_ROOT
"""

import csv
import sys
import tempfile
from pathlib import Path

from script_checks import check, exit_status


def main():
    sys.path.insert(0, str(Path(sys.argv[1]) / "scripts"))
    import fit_vector_model as fit

    cases = {(0, 2): 2, (36, 2): 3, (2900, 2): 23, (2900, 40): 40, (12500, 1): 48, (3, 2): 3, (4, 2): 2,
             (41, 40): 41, (42, 40): 40}
    for (groups, base), bound in cases.items():
        check(fit.window_bound(groups, base) == bound, f"window of {groups} steps, base {base}: bound {bound}")

    # One window of 400 steps among 2,000 of 2 at n = 8 on 132 SMs (3,696 warps): base 2, the long window in 45 parts
    # of at most 9 steps (sqrt(72) = 8.5), the short ones whole. Chain: 9 steps, the split and 45 part reads.
    windows = [2] * 2000 + [400]
    f = fit.schedule(windows, 8, "auto", 132)
    check(f["groups"] == 4400 and f["windows"] == 2001 and (9, 45) in f["shapes"] and (2, 1) in f["shapes"],
          "the schedule's windows, steps and shapes")
    c = fit.START
    expected_ns = c[0] + max(9 * c[1] + c[12] + 45 * c[4], 4400 * c[7] + 2001 * c[10])
    check(abs(fit.predict_us(c, f, 8, 1000) - expected_ns / 1e3) < 1e-9, "the prediction from the constants")
    fixed = fit.schedule(windows, 8, "400", 132)
    check(fit.predict_us(c, fixed, 8, 1000) > fit.predict_us(c, f, 8, 1000), "one piece of 400 steps takes longer")

    with tempfile.TemporaryDirectory() as tmp:
        bands = Path(tmp, "bands")
        bands.mkdir()
        (bands / "M.txt").write_text("# M condensed/none 2 bands: groups, longest window's groups\n6 4\n1 1\n")
        columns = ["matrix", "rows", "cols", "n", "method", "median_ms"]
        table = Path(tmp, "t.csv")
        with open(table, "w", newline="") as out:
            w = csv.DictWriter(out, fieldnames=columns)
            w.writeheader()
            for method, ms in (("auto_vectors", 0.010), ("auto_vectors_pieces4", 0.011), ("auto_csr", 0.005),
                               ("auto_vectors_pieces", 0.012)):
                w.writerow(dict(matrix="M", rows=32, cols=32, n=8, method=method, median_ms=ms))
        for kind, rows in (("", 2), ("=old", 2), ("=forced", 1)):
            sys.argv = ["fit_vector_model.py", "--no-fit", "--bands", str(bands), f"{table}{kind}"]
            from io import StringIO
            from contextlib import redirect_stdout
            text = StringIO()
            with redirect_stdout(text):
                fit.main()
            check(text.getvalue().startswith(f"{rows} timed plans"), f"CSV{kind or ' as given'}: {rows} timed plans")
    return exit_status("test_fit_vector_model.py")


if __name__ == "__main__":
    sys.exit(main())
