#!/usr/bin/env python3
"""Summarise a sweep CSV (scripts/sweep.py, bench_spmm --csv): writes summary.md (auto — the library's default, a
per-band hybrid of tensor-core tiles and a CUDA-core CSR path — against the best cuSPARSE variant, and the CUDA-core
path alone against cuSPARSE CSR; the matrices sweep.py skipped, from skipped.tsv next to the CSV; census, time per
method, speedup of auto and split_pipelined over the best cuSPARSE variant, layouts) and PNG plots:
  auto_vs_cusparse_n<N>.png  auto over the best cuSPARSE variant for every matrix, real and synthetic (log scale), for
                             each n among 8, 16, 32, 64, 128 (every width when the sweep has none of those); only for
                             sweeps with auto rows
  throughput_<set>_n<N>.png  thesis-TFLOPS of every method per matrix at one width (thesis fig. 3.6 / 3.2)
  speedup_<set>_n<N>.png     each bcsr24 kernel over the best cuSPARSE variant, per matrix (log scale)
  synthetic_vs_n.png         thesis-TFLOPS against n for each synthetic XdYs matrix (thesis fig. 3.5)
  layout_speedup_n<N>.png    split_pipelined on the automatically chosen tile layout and split_aligned (same kernel,
                             thesis layout: aligned tiles, file order) over the best cuSPARSE variant, for n among
                             8, 32, 128 (all widths when the sweep has at most three); only for sweeps with layouts
<set> is 'suitesparse' (files and meshes: everything but the XdYs set) or 'synthetic' (XdYs matrices). Older CSVs
without auto rows get the other sections only. The summary needs only the standard library; the plots need matplotlib
(python3-matplotlib) and are skipped with a message without it.
"""

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_data import (HEADLINE_KERNELS, LARGE_NNZ, SKIPPED_FILE, Sweep, auto_comparison,  # noqa: E402
                        best_cusparse, format_factor, format_mean, format_ms, format_ms_digits, format_ratio,
                        format_share, format_speedup_cell, geometric_mean, large_real, layout_comparison,
                        markdown_cell, read_skipped, read_sweep, speedup_over_cusparse, usable, worst)
from sweep_plots import make_plots, pick_width  # noqa: E402


def per_width_header(first, widths, cell="n = {n}"):
    """The header and alignment rows of a table with the columns `first` (the first left-aligned) and one
    right-aligned column per width of B."""
    return ["| " + " | ".join(first + [cell.format(n=n) for n in widths]) + " |",
            "|---|" + "---:|" * (len(first) - 1 + len(widths))]


def auto_section(sweep):
    """The headline: auto against the best cuSPARSE variant, per matrix and n and summarised per n; then
    csr_cuda_cores against cuSPARSE CSR where the sweep timed it."""
    records = auto_comparison(sweep)
    widths = sorted({r["n"] for r in records})
    by_key = {(r["matrix"], r["n"]): r for r in records}
    matrices = list(dict.fromkeys(r["matrix"] for r in records))
    lines = ["## auto against the best cuSPARSE variant", "",
             "*auto* is the library's default: per row band, tensor-core tiles or the CUDA-core CSR path, as its cost "
             "model chooses. Each cell is the time of the fastest cuSPARSE variant for that matrix and n divided by "
             "auto's (above 1 = bcsr24 faster; below 1 in bold).", ""]
    lines += per_width_header(["matrix", "nnz"], widths)
    for matrix in matrices:
        cells = [format_speedup_cell(by_key[(matrix, n)]["ratio"]) if (matrix, n) in by_key else "–" for n in widths]
        lines.append(f"| {matrix} | {sweep.nnz(matrix):.0f} | " + " | ".join(cells) + " |")
    lines += ["", f"Per n: the worst ratio and its matrix, on how many matrices auto is faster, and the geometric "
              f"mean of the ratio over the real matrices (not XdYs synthetic) with nnz ≥ {LARGE_NNZ:,} and over all "
              f"matrices (in brackets: how many).", "",
              f"| n | matrices | auto faster on | worst | on matrix | geo. mean, real with nnz ≥ {LARGE_NNZ:,} | "
              "geo. mean, all |",
              "|---:|---:|---:|---:|---|---:|---:|"]
    for n in widths:
        at_n = [r for r in records if r["n"] == n and usable(r["ratio"])]
        worst_text, worst_matrix = worst(at_n, "ratio")
        lines.append(f"| {n} | {len(at_n)} | {sum(r['ratio'] >= 1 for r in at_n)} | {worst_text} | {worst_matrix} | "
                     f"{format_mean([r for r in at_n if large_real(r)], 'ratio')} | {format_mean(at_n, 'ratio')} |")
    lines.append("")
    if "csr_cuda_cores" in sweep.methods:
        lines += csr_cuda_cores_lines(records, matrices, widths)
    return lines


def csr_cuda_cores_lines(records, matrices, widths):
    """csr_cuda_cores (the CUDA-core CSR path alone) against cusparse_csr_f16 and cusparse_csr_f32."""
    by_key = {(r["matrix"], r["n"]): r for r in records}
    lines = ["### csr_cuda_cores against cuSPARSE CSR", "",
             "The CUDA-core CSR path alone: each cell is cusparse_csr_f16's time / csr_cuda_cores's, then "
             "cusparse_csr_f32's time / csr_cuda_cores's (at least 1 = the CUDA-core path is at least as fast; "
             "below 1 in bold).", ""]
    lines += per_width_header(["matrix"], widths, "n = {n}: vs f16 / vs f32")
    for matrix in matrices:
        cells = []
        for n in widths:
            record = by_key.get((matrix, n))
            cells.append(f"{format_speedup_cell(record['csr_f16'])} / {format_speedup_cell(record['csr_f32'])}"
                         if record else "–")
        lines.append(f"| {matrix} | " + " | ".join(cells) + " |")
    lines += ["", "Per n: on how many matrices csr_cuda_cores is at least as fast as each cuSPARSE CSR variant, the "
              "worst ratio and its matrix, and the geometric mean over all matrices.", "",
              "| n | at least as fast as csr_f16 | worst vs csr_f16 | on matrix | geo. mean vs csr_f16 | "
              "at least as fast as csr_f32 | worst vs csr_f32 | on matrix | geo. mean vs csr_f32 |",
              "|---:|---:|---:|---|---:|---:|---:|---|---:|"]
    for n in widths:
        at_n = [r for r in records if r["n"] == n]
        cells = []
        for key in ("csr_f16", "csr_f32"):
            measured = [r for r in at_n if usable(r[key])]
            worst_text, worst_matrix = worst(measured, key)
            cells += [f"{sum(r[key] >= 1 for r in measured)} of {len(measured)}", worst_text, worst_matrix,
                      format_mean(measured, key)]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return lines + [""]


def skipped_section(skipped):
    """The matrices sweep.py listed in skipped.tsv, with the widths that have no rows and why."""
    lines = ["## Skipped matrices", "",
             "No rows for the widths listed: bench_spmm refused the matrix, crashed or timed out, or sweep.py could "
             "not read the file's header (sweep.py's skipped.tsv; the reason is the first line of the error).", "",
             "| matrix | widths without rows | reason |", "|---|---|---|"]
    for entry in skipped:
        lines.append(f"| {markdown_cell(entry['matrix'])} | {entry['widths'].replace(',', ', ')} | "
                     f"{markdown_cell(entry['reason'])} |")
    return lines + [""]


def layout_section(sweep):
    lines = ["## Layout: automatic vs thesis layout", ""]
    if not sweep.has_layouts:
        return lines + ["The sweep has no thesis-layout rows (no split_aligned method and no layout column: an older "
                        "bench_spmm, which always ran the thesis layout — aligned tiles, file order).", ""]
    records = layout_comparison(sweep)
    if not records:
        return lines + ["The sweep has no split_pipelined rows to compare layouts with.", ""]
    lines += ["*chosen* is split_pipelined on the layout bench_spmm chose for the matrix (tile alignment / row "
              "reordering); *thesis* is split_aligned, the same kernel on the thesis layout (aligned tiles, file "
              "order), timed in the same run. Where the chosen layout is the thesis layout split_aligned is not run "
              "and the thesis columns repeat the chosen ones ('= chosen'). 2:4 share: share of 2:4 tiles among stored "
              "tiles in each layout. *chosen / thesis* is the time ratio (below 1 = the chosen layout is faster); the "
              "speedups are the best cuSPARSE variant's time divided by the kernel's (above 1 = bcsr24 faster).", "",
              "| matrix | n | chosen layout | 2:4 share chosen | 2:4 share thesis | chosen (ms) | thesis (ms) | "
              "chosen / thesis | best cuSPARSE | chosen vs cuSPARSE | thesis vs cuSPARSE |",
              "|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in records:
        thesis_ms = format_ms_digits(r["thesis_ms"]) if r["thesis_timed"] else "= chosen"
        lines.append(f"| {r['matrix']} | {r['n']} | {r['layout']} | {format_share(r['chosen_share'])} | "
                     f"{format_share(r['thesis_share'])} | {format_ms_digits(r['chosen_ms'])} | {thesis_ms} | "
                     f"{format_ratio(r['ratio'])} | {r['best_cusparse'] or '–'} | "
                     f"{format_factor(r['chosen_speedup'])} | {format_factor(r['thesis_speedup'])} |")
    lines += ["", "Per n: the worst (largest) chosen / thesis time ratio among the matrices where split_aligned ran "
              "('–' where none did), and split_pipelined (chosen layout) against the "
              "best cuSPARSE variant — worst and geometric mean over the matrices.", "",
              "| n | matrices | worst chosen / thesis | on matrix | worst chosen vs cuSPARSE | on matrix | "
              "geo. mean chosen vs cuSPARSE | geo. mean thesis vs cuSPARSE |",
              "|---:|---:|---:|---|---:|---|---:|---:|"]
    for n in sweep.widths:
        at_n = [r for r in records if r["n"] == n]
        if not at_n:
            continue
        # Only matrices where split_aligned ran: elsewhere the ratio is 1 by construction, not a measurement.
        ratios = [r for r in at_n if r["thesis_timed"] and usable(r["ratio"])]
        speedups = [r for r in at_n if usable(r["chosen_speedup"])]
        worst_ratio = max(ratios, key=lambda r: r["ratio"]) if ratios else None
        worst_speedup = min(speedups, key=lambda r: r["chosen_speedup"]) if speedups else None
        lines.append(f"| {n} | {len(at_n)} | "
                     f"{format_ratio(worst_ratio['ratio']) if worst_ratio else '–'} | "
                     f"{worst_ratio['matrix'] if worst_ratio else '–'} | "
                     f"{format_factor(worst_speedup['chosen_speedup']) if worst_speedup else '–'} | "
                     f"{worst_speedup['matrix'] if worst_speedup else '–'} | "
                     f"{format_factor(geometric_mean(r['chosen_speedup'] for r in at_n))} | "
                     f"{format_factor(geometric_mean(r['thesis_speedup'] for r in at_n))} |")
    return lines + [""]


def write_summary(sweep, path, plot_files, skipped):
    lines = ["# bcsr24 SpMM sweep", ""]
    if sweep.devices:
        lines += [f"Device: {', '.join(sweep.devices)}.", ""]
    headline = [kernel for kernel in HEADLINE_KERNELS if kernel in sweep.methods]
    speedup_text = "; ".join(f"*{HEADLINE_KERNELS[k]} vs cuSPARSE* is its time divided by {k}'s" for k in headline)
    skipped_text = f" {len(skipped)} listed under *Skipped matrices* lack some or all widths." if skipped else ""
    lines += [f"{len(sweep.table)} matrices, widths n = {', '.join(map(str, sweep.widths))}, "
              f"methods: {', '.join(sweep.methods)}.{skipped_text}", "",
              "Times are medians in ms. *best cuSPARSE* is the fastest cuSPARSE variant for that matrix and n"
              + (f"; {speedup_text} (above 1 = bcsr24 faster)" if headline else "") + ". "
              "Thesis TFLOPS count 2 · stored tiles · 16 · 32 · n flops, useful TFLOPS 2 · nnz · n.", ""]
    if sweep.has_auto:
        lines += auto_section(sweep)
    if skipped:
        lines += skipped_section(skipped)

    layout_header, layout_rule = (" layout |", "---|") if sweep.has_layouts else ("", "")
    lines += ["## Tile census", ""]
    if sweep.has_layouts:
        lines += ["Tiles of the layout bench_spmm chose (split_pipelined's row); the thesis layout's census is in "
                  "the layout section below.", ""]
    lines += ["| matrix | rows | cols | nnz |" + layout_header +
              " dense tiles | 2:4 tiles | zero tiles | 2:4 share | nnz / stored tile |",
              "|---|---:|---:|---:|" + layout_rule + "---:|---:|---:|---:|---:|"]
    for matrix in sweep.real + sweep.synthetic:
        row = sweep.any_row(matrix)
        stored = row["dense_tiles"] + row["sparse24_tiles"]
        per_tile = row["nnz"] / stored if stored else math.nan
        layout_cell = f" {row['layout']} |" if sweep.has_layouts else ""
        lines.append(f"| {matrix} | {row['rows']:.0f} | {row['cols']:.0f} | {row['nnz']:.0f} |{layout_cell} "
                     f"{row['dense_tiles']:.0f} | {row['sparse24_tiles']:.0f} | {row['zero_tiles']:.0f} | "
                     f"{100 * row['sparse24_share']:.1f}% | {per_tile:.1f} |")
    lines.append("")

    lines += ["## Time per method", "",
              "| matrix | n | " + " | ".join(sweep.methods) + " | best cuSPARSE | " +
              "".join(f"{HEADLINE_KERNELS[k]} vs cuSPARSE | " for k in headline) +
              "split TFLOPS (thesis) | max rel. error |",
              "|---|---:|" + "---:|" * len(sweep.methods) + "---|" + "---:|" * len(headline) + "---:|---:|"]
    for matrix in sweep.real + sweep.synthetic:
        for n in sorted(sweep.table[matrix]):
            by_method = sweep.table[matrix][n]
            cells = [format_ms(by_method[m]["median_ms"]) if m in by_method else "–" for m in sweep.methods]
            best_method, _ = best_cusparse(by_method)
            speedups = "".join(f"{format_factor(speedup_over_cusparse(by_method, k))} | " for k in headline)
            split = by_method.get("split_pipelined")
            errors = [r["rel_error"] for r in by_method.values() if not math.isnan(r["rel_error"])]
            split_tflops = f"{split['tflops_thesis']:.2f}" if split and usable(split["tflops_thesis"]) else "–"
            error_text = f"{max(errors):.1e}" if errors else "–"
            lines.append(f"| {matrix} | {n} | " + " | ".join(cells) +
                         f" | {best_method or '–'} | {speedups}{split_tflops} | {error_text} |")
    lines.append("")

    lines += layout_section(sweep)

    if plot_files:
        lines += ["## Plots", ""] + [f"![{name}]({name})" for name in plot_files] + [""]
    path.write_text("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", help="sweep CSV (columns as written by bench_spmm --csv); a skipped.tsv beside it "
                                    "(written by sweep.py) is listed in the summary")
    parser.add_argument("--out", default=None, help="output folder (default: the CSV's folder)")
    parser.add_argument("--n", type=int, default=128, help="width of B for the per-matrix plots (default 128)")
    args = parser.parse_args()

    csv_path = Path(args.csv)
    if not csv_path.is_file():
        print(f"plot_sweep.py: error: {csv_path}: no such file", file=sys.stderr)
        return 1
    rows = read_sweep(csv_path)
    if not rows:
        print(f"plot_sweep.py: error: {csv_path} has no data rows", file=sys.stderr)
        return 1
    out_dir = Path(args.out) if args.out else csv_path.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    sweep = Sweep(rows)
    plot_files = make_plots(sweep, pick_width(sweep, args.n), out_dir)
    write_summary(sweep, out_dir / "summary.md", plot_files, read_skipped(csv_path.parent / SKIPPED_FILE))
    print(f"wrote {out_dir / 'summary.md'}" + "".join(f", {out_dir / f}" for f in plot_files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
