#!/usr/bin/env python3
"""The A/B table of scripts/ab_compare.sh: bench_spmm's CSV of an old build and of a new one, timed on the same GPU
in alternating passes, turned into new/old time ratios per matrix, method and n, each ratio above the threshold
flagged.

  scripts/ab_report.py OLD.csv NEW.csv --out ab.md [--threshold 1.03] [--pair auto_model=auto] \
      [--old-label d3ca7bc] [--new-label HEAD] [--date 2025-01-01] [--command "..."]

Both CSVs are bench_spmm's (--csv; the new one has more columns, read by name). An `ab_pass` column, which
ab_compare.sh appends, says which pass a row belongs to; without it the k-th row of a (matrix, n, method) is pass k.
A new method is compared with the old method of the same name, or with the one --pair names (the new `auto_model`,
the cost model's plan, with the old `auto`, which was the cost model's plan before plans were measured). Per pass
the ratio is new median / old median; the ratio reported is the geometric mean of the passes both sides ran (pass 1
ran the old binary first, pass 2 the new one first, so drift between runs cancels). Rows only one side has are
listed, not compared. Exit status 0 whatever the ratios (the table reports; it does not judge), 2 where an input
cannot be read.
"""

import argparse
import csv
import math
import sys
from collections import OrderedDict, defaultdict
from pathlib import Path


def read_runs(path):
    """{(matrix, method, n): {pass: median_ms}} in file order, and {matrix: (rows, cols, nnz)}, and the device."""
    runs = OrderedDict()
    shapes = {}
    devices = set()
    seen = defaultdict(int)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = {"matrix", "n", "method", "median_ms"} - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path}: not a bench_spmm CSV (no column {', '.join(sorted(missing))})")
        for row in reader:
            key = (row["matrix"], row["method"], int(row["n"]))
            seen[key] += 1
            run_pass = int(row["ab_pass"]) if row.get("ab_pass") else seen[key]
            runs.setdefault(key, {})[run_pass] = float(row["median_ms"])
            shape = tuple(row.get(c, "") for c in ("rows", "cols", "nnz"))
            shapes.setdefault(row["matrix"], shape)
            if row.get("device"):
                devices.add(row["device"])
    return runs, shapes, devices


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def compare(old_runs, new_runs, pairs):
    """One entry per new (matrix, method, n) whose old counterpart ran: the times, the per-pass ratios, the ratio."""
    rows = []
    unmatched = []
    for (matrix, method, n), new in new_runs.items():
        old_method = pairs.get(method, method)
        old = old_runs.get((matrix, old_method, n))
        common = sorted(set(new) & set(old or {}))
        if not common or any(old[p] <= 0 or new[p] <= 0 for p in common):
            unmatched.append(f"{matrix}, {method}, n = {n}: " + ("no run of the old binary" if not common
                                                                 else "a time of zero"))
            continue
        per_pass = {p: new[p] / old[p] for p in common}
        rows.append({
            "matrix": matrix, "method": method, "old_method": old_method, "n": n,
            "old_ms": sum(old[p] for p in common) / len(common),
            "new_ms": sum(new[p] for p in common) / len(common),
            "passes": per_pass, "ratio": geometric_mean(list(per_pass.values())),
        })
    compared_old = {(r["matrix"], r["old_method"], r["n"]) for r in rows}
    for (matrix, method, n) in old_runs:
        if (matrix, method, n) not in compared_old and (matrix, method, n) not in new_runs:
            unmatched.append(f"{matrix}, {method}, n = {n}: no run of the new binary")
    return rows, unmatched


def render(rows, unmatched, old_shapes, new_shapes, devices, args):
    threshold = args.threshold
    slower = [r for r in rows if r["ratio"] > threshold]
    out = [f"# A/B: {args.new_label} against {args.old_label}", ""]
    facts = []
    if devices:
        facts.append("device " + " / ".join(sorted(devices)))
    if args.date:
        facts.append(args.date)
    if facts:
        out += ["; ".join(facts) + ".", ""]
    if args.command:
        out += ["```sh", args.command, "```", ""]
    out.append("Ratio: new / old bench_spmm median time (`--reps` runs each), the geometric mean of the passes "
               "(pass 1: old binary first, pass 2: new binary first). Flagged: slower by more than "
               f"{100 * (threshold - 1):.0f}% (ratio > {threshold:g}).")
    pair_text = ", ".join(f"new `{new}` against old `{old}`" for new, old in args.pairs.items())
    if pair_text:
        out.append(f"Paired methods: {pair_text}.")
    out.append("")
    if rows:
        worst = max(rows, key=lambda r: r["ratio"])
        out.append(f"**{len(slower)} of {len(rows)} comparisons slower by more than "
                   f"{100 * (threshold - 1):.0f}%**; worst {worst['ratio']:.3f} ({worst['matrix']}, "
                   f"{worst['method']}, n = {worst['n']}); geometric mean of all ratios "
                   f"{geometric_mean([r['ratio'] for r in rows]):.3f}.")
    else:
        out.append("**Nothing to compare**: no (matrix, method, n) ran in both binaries.")
    out.append("")
    for matrix in sorted(set(old_shapes) & set(new_shapes)):
        if old_shapes[matrix] != new_shapes[matrix]:
            out.append(f"Warning: {matrix} differs between the binaries (rows, cols, nnz old {old_shapes[matrix]}, "
                       f"new {new_shapes[matrix]}): its times compare different matrices.")
            out.append("")

    if rows:
        out += ["## Per method", "",
                "| method | against old | comparisons | geometric mean | best | worst | flagged |",
                "|---|---|---|---|---|---|---|"]
        by_method = OrderedDict()
        for r in rows:
            by_method.setdefault((r["method"], r["old_method"]), []).append(r)
        for (method, old_method), group in by_method.items():
            ratios = [r["ratio"] for r in group]
            flagged = sum(1 for x in ratios if x > threshold)
            out.append(f"| {method} | {old_method} | {len(group)} | {geometric_mean(ratios):.3f} | "
                       f"{min(ratios):.3f} | {max(ratios):.3f} | {flagged} |")
        out.append("")

        passes = sorted({p for r in rows for p in r["passes"]})
        out += ["## Every comparison", "",
                "| matrix | method | n | old ms | new ms | new/old | "
                + " | ".join(f"pass {p}" for p in passes) + " | |",
                "|---|---|---|---|---|---|" + "---|" * len(passes) + "---|"]
        for r in rows:
            cells = " | ".join(f"{r['passes'][p]:.3f}" if p in r["passes"] else "" for p in passes)
            flag = "**slower**" if r["ratio"] > threshold else ""
            out.append(f"| {r['matrix']} | {r['method']} | {r['n']} | {r['old_ms']:.4f} | {r['new_ms']:.4f} | "
                       f"{r['ratio']:.3f} | {cells} | {flag} |")
        out.append("")
    if unmatched:
        out += ["## Not compared", ""] + [f"- {line}" for line in unmatched] + [""]
    return "\n".join(out), len(slower), len(rows)


def parse_pairs(items):
    pairs = OrderedDict()
    for item in items:
        new, sep, old = item.partition("=")
        if not sep or not new or not old:
            raise argparse.ArgumentTypeError(f"--pair wants NEW=OLD, got {item!r}")
        pairs[new] = old
    return pairs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old_csv", type=Path)
    parser.add_argument("new_csv", type=Path)
    parser.add_argument("--out", type=Path, help="write the Markdown here (default: standard output)")
    parser.add_argument("--threshold", type=float, default=1.03, help="flag ratios above this (default 1.03)")
    parser.add_argument("--pair", action="append", default=None, metavar="NEW=OLD",
                        help="compare new method NEW with old method OLD (default: auto_model=auto)")
    parser.add_argument("--old-label", default="old")
    parser.add_argument("--new-label", default="new")
    parser.add_argument("--date", default="")
    parser.add_argument("--command", default="")
    args = parser.parse_args(argv)
    try:
        args.pairs = parse_pairs(args.pair if args.pair is not None else ["auto_model=auto"])
    except argparse.ArgumentTypeError as e:
        parser.error(str(e))
    try:
        old_runs, old_shapes, old_devices = read_runs(args.old_csv)
        new_runs, new_shapes, new_devices = read_runs(args.new_csv)
    except (OSError, ValueError, KeyError) as e:
        print(f"ab_report.py: {e}", file=sys.stderr)
        return 2
    rows, unmatched = compare(old_runs, new_runs, args.pairs)
    text, slower, total = render(rows, unmatched, old_shapes, new_shapes, old_devices | new_devices, args)
    if args.out:
        args.out.write_text(text)
        print(f"ab_report.py: {slower} of {total} comparisons slower than {args.threshold:g}x; "
              f"{len(unmatched)} not compared; table in {args.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
