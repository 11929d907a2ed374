#!/usr/bin/env python3
"""auto against a peer's timings on the same matrices: bench_spmm / sweep.py CSVs (ours) beside the CSV of
FlashSparse's timing kit (bench_peer.py: matrix, rows, nnz, n, method, median_ms, rel_error).

The peer's figure per (matrix, n) is its fastest variant whose result was finite. Ours are `auto` (fp32 C, the
default) and, where timed, `auto_c16` (fp16 C): the kit's fs_8x1_map and fs_8x1 variants write fp16 C and
fs_8x1_balance fp32 C, so "like for like" sets auto_c16 against the fp16-C variants and auto against the fp32-C one.
A matrix of ours is matched to the peer's by its name: a file's stem on both sides; a generated matrix is timed by
bench_spmm under --name X and written with --write-matrix X.mtx, which the peer then reads.

Usage: peer_compare.py --ours A.csv [B.csv ...] --peer P.csv [...] [--summary-csv OUT.csv]
Prints a markdown table per cell and a summary per n; --summary-csv writes the summary (docs/data/peers.csv).
"""

import argparse
import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_data import geometric_mean  # noqa: E402

FP16_C_VARIANTS = {"fs_8x1_map", "fs_8x1", "fs_16x1"}  # the kit's variants that write fp16 C


def read_ours(paths):
    ours = defaultdict(dict)
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["method"] in ("auto", "auto_c16") and r["median_ms"]:
                    ours[(r["matrix"], int(r["n"]))][r["method"]] = float(r["median_ms"]) * 1e3
    return ours


def read_peer(paths):
    peer = defaultdict(dict)
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                try:
                    us, err = float(r["median_ms"]) * 1e3, float(r["rel_error"])
                except (TypeError, ValueError):
                    continue
                if math.isfinite(us) and math.isfinite(err):
                    peer[(r["matrix"], int(r["n"]))][r["method"]] = us
    return peer


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ours", nargs="+", required=True)
    parser.add_argument("--peer", nargs="+", required=True)
    parser.add_argument("--summary-csv")
    args = parser.parse_args()
    ours, peer = read_ours(args.ours), read_peer(args.peer)
    cells = sorted(key for key in peer if key in ours and "auto" in ours[key])
    if not cells:
        sys.exit("peer_compare.py: no matrix and width in both the peer's CSV and ours")
    print("| matrix | n | auto us | auto_c16 us | peer best | us | peer / auto | like for like |")
    print("|---|---:|---:|---:|---|---:|---:|---:|")
    by_n = defaultdict(lambda: {"plain": [], "like": []})
    for key in cells:
        o, p = ours[key], peer[key]
        best = min(p, key=p.get)
        plain = p[best] / o["auto"]
        # Each variant against ours with the same C type; without an auto_c16 time, against auto (fp32 C, more bytes).
        like = min(p[v] / o.get("auto_c16", o["auto"]) if v in FP16_C_VARIANTS else p[v] / o["auto"] for v in p)
        by_n[key[1]]["plain"].append((plain, key[0]))
        by_n[key[1]]["like"].append((like, key[0]))
        c16 = f"{o['auto_c16']:.2f}" if "auto_c16" in o else "–"
        print(f"| {key[0]} | {key[1]} | {o['auto']:.2f} | {c16} | {best} | {p[best]:.2f} | {plain:.2f}x | {like:.2f}x |")
    print()
    header = ["n", "matrices", "peer / auto", "below 1", "like for like", "below 1"]
    rows = []
    for n in sorted(by_n):
        row = [str(n), str(len(by_n[n]["plain"]))]
        for kind in ("plain", "like"):
            values = by_n[n][kind]
            low, where = min(values)
            below = [f"{m} {v:.2f}" for v, m in sorted(values) if v < 1.0]
            row += [f"{geometric_mean([v for v, _ in values]):.2f}x; {low:.2f}x ({where})", ", ".join(below) or "none"]
        rows.append(row)
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if args.summary_csv:
        with open(args.summary_csv, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(rows)


if __name__ == "__main__":
    main()
