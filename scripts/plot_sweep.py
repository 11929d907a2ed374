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
import csv
import math
import re
import sys
from collections import OrderedDict, defaultdict
from pathlib import Path

# split_aligned: split_pipelined's kernel on the thesis layout (aligned tiles, file order), timed in the same run as
# the automatically chosen layout; bench_spmm leaves it out when the chosen layout is the thesis layout anyway.
# auto: the library's default (tensor-core tiles or the CUDA-core CSR path per row band, by a cost model);
# csr_cuda_cores: that CSR path alone.
BCSR24_KERNELS = ["auto", "csr_cuda_cores", "dense_bt", "dense_pipelined", "split_pipelined", "split_aligned"]
CUSPARSE_METHODS = ["cusparse_csr_f16", "cusparse_csr_f32", "cusparse_bsr16_f16", "cusparse_bsr16_f32"]
OTHER_METHODS = ["cublas_dense"]
METHOD_ORDER = BCSR24_KERNELS + CUSPARSE_METHODS + OTHER_METHODS
# Our kernels in blues/greens, cuSPARSE in warm colours, cuBLAS grey: families read at a glance.
METHOD_COLORS = {
    "auto": "#006d2c", "csr_cuda_cores": "#74c476",
    "dense_bt": "#9ecae1", "dense_pipelined": "#3182bd", "split_pipelined": "#08519c", "split_aligned": "#41b6c4",
    "cusparse_csr_f16": "#fdae6b", "cusparse_csr_f32": "#e6550d",
    "cusparse_bsr16_f16": "#fc9272", "cusparse_bsr16_f32": "#cb181d",
    "cublas_dense": "#969696",
}
# Legend labels for sweeps that carry layouts (a `layout` column or split_aligned rows); older sweeps keep method names.
LAYOUT_METHOD_LABELS = {"split_pipelined": "split_pipelined (chosen layout)",
                        "split_aligned": "split_aligned (thesis layout)"}
THESIS_LAYOUT = "aligned/none"
LAYOUT_PLOT_WIDTHS = (8, 32, 128)
AUTO_PLOT_WIDTHS = (8, 16, 32, 64, 128)
# The kernels the time table compares with the best cuSPARSE variant, with their column labels.
HEADLINE_KERNELS = {"auto": "auto", "split_pipelined": "split"}
# The real-matrix geometric mean of auto's speedup counts matrices with at least this many nonzeros.
LARGE_NNZ = 50000
SYNTHETIC_COLOR = "#807dba"
SKIPPED_FILE = "skipped.tsv"
SYNTHETIC_NAME = re.compile(r"^(\d+)d(\d+)s(?:_(\d+))?$")
NUMERIC_FIELDS = ["rows", "cols", "nnz", "n", "median_ms", "min_ms", "max_ms", "tflops_thesis", "tflops_useful",
                  "bandwidth_gbs", "floor_fraction", "rel_error", "dense_tiles", "sparse24_tiles", "zero_tiles",
                  "sparse24_share"]
THESIS_TFLOPS_LABEL = "throughput, TFLOPS\n(2 · stored tiles · 16 · 32 · n / t)"


def to_number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return math.nan
    return value


def read_sweep(path):
    """Rows keyed by (matrix, n, method); a later row replaces an earlier one (a re-run wins)."""
    rows = OrderedDict()
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            for field in NUMERIC_FIELDS:
                row[field] = to_number(row.get(field))
            row["n"] = int(row["n"])
            # Older CSVs have no layout column: those sweeps ran the thesis layout.
            row["has_layout"] = bool(row.get("layout"))
            row["layout"] = (row.get("layout") or THESIS_LAYOUT).strip('"')
            rows[(row["matrix"], row["n"], row["method"])] = row
    return list(rows.values())


def read_skipped(path):
    """Rows (matrix, widths, reason) of sweep.py's skipped.tsv; none when the file is absent."""
    if not path.is_file():
        return []
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def is_synthetic(matrix):
    return SYNTHETIC_NAME.match(matrix) is not None


def synthetic_sort_key(matrix):
    dense, sparse, _ = SYNTHETIC_NAME.match(matrix).groups()
    # Thesis grouping: only dense, only 2:4, then mixed.
    group = 0 if int(sparse) == 0 else (1 if int(dense) == 0 else 2)
    return (group, int(dense) + int(sparse), int(dense), matrix)


def short_label(matrix):
    """Synthetic names without the common size suffix, to keep tick labels short."""
    match = SYNTHETIC_NAME.match(matrix)
    return f"{match.group(1)}d{match.group(2)}s" if match else matrix


def ordered_methods(rows):
    present = {row["method"] for row in rows}
    return [m for m in METHOD_ORDER if m in present] + sorted(present - set(METHOD_ORDER))


def usable(value):
    return value is not None and not math.isnan(value) and value > 0


def best_cusparse(by_method):
    """(method, median_ms) of the fastest cuSPARSE variant present, or (None, nan)."""
    candidates = [(by_method[m]["median_ms"], m) for m in by_method
                  if m.startswith("cusparse") and usable(by_method[m]["median_ms"])]
    if not candidates:
        return None, math.nan
    time_ms, method = min(candidates)
    return method, time_ms


class Sweep:
    """The CSV indexed as matrix -> n -> method -> row."""

    def __init__(self, rows):
        self.rows = rows
        self.table = defaultdict(lambda: defaultdict(dict))
        for row in rows:
            self.table[row["matrix"]][row["n"]][row["method"]] = row
        self.methods = ordered_methods(rows)
        self.widths = sorted({row["n"] for row in rows})
        matrices = list(self.table)
        self.real = [m for m in matrices if not is_synthetic(m)]
        self.synthetic = sorted((m for m in matrices if is_synthetic(m)), key=synthetic_sort_key)
        self.devices = sorted({row.get("device", "").strip('"') for row in rows if row.get("device")})
        # Layout-aware sweep: bench_spmm wrote a layout column or timed split_aligned.
        self.has_layouts = any(row["has_layout"] or row["method"] == "split_aligned" for row in rows)
        self.has_auto = "auto" in self.methods

    def any_row(self, matrix):
        """A row for the matrix's census: split_pipelined's (the chosen layout) where there is one, since
        split_aligned's row counts the tiles of the thesis layout instead."""
        for by_method in self.table[matrix].values():
            if "split_pipelined" in by_method:
                return by_method["split_pipelined"]
        for by_method in self.table[matrix].values():
            for method, row in by_method.items():
                if method != "split_aligned":
                    return row
        return next(iter(next(iter(self.table[matrix].values())).values()))

    def label(self, method):
        return LAYOUT_METHOD_LABELS.get(method, method) if self.has_layouts else method

    def nnz(self, matrix):
        """Nonzeros of the matrix (from its census row)."""
        return self.any_row(matrix)["nnz"]


def speedup_over_cusparse(by_method, method):
    """Time of the fastest cuSPARSE variant divided by the method's (nan where either is missing)."""
    _, best_ms = best_cusparse(by_method)
    method_ms = by_method.get(method, {}).get("median_ms", math.nan)
    return best_ms / method_ms if usable(best_ms) and usable(method_ms) else math.nan


def speedup_over(by_method, reference, method):
    """Time of `reference` divided by the method's (nan where either is missing)."""
    reference_ms = by_method.get(reference, {}).get("median_ms", math.nan)
    method_ms = by_method.get(method, {}).get("median_ms", math.nan)
    return reference_ms / method_ms if usable(reference_ms) and usable(method_ms) else math.nan


def auto_comparison(sweep):
    """One record per (matrix, n) with an auto row: auto against the best cuSPARSE variant (ratio = cuSPARSE's time
    / auto's) and csr_cuda_cores against cusparse_csr_f16 / _f32 (their time / csr_cuda_cores's)."""
    records = []
    for matrix in sweep.real + sweep.synthetic:
        for n in sorted(sweep.table[matrix]):
            by_method = sweep.table[matrix][n]
            if "auto" not in by_method:
                continue
            records.append({
                "matrix": matrix, "n": n, "nnz": sweep.nnz(matrix), "synthetic": is_synthetic(matrix),
                "ratio": speedup_over_cusparse(by_method, "auto"),
                "csr_f16": speedup_over(by_method, "cusparse_csr_f16", "csr_cuda_cores"),
                "csr_f32": speedup_over(by_method, "cusparse_csr_f32", "csr_cuda_cores"),
            })
    return records


def large_real(record):
    """Whether the record counts in the real-matrix geometric mean: not synthetic, at least LARGE_NNZ nonzeros."""
    return not record["synthetic"] and record["nnz"] >= LARGE_NNZ


def layout_comparison(sweep):
    """One record per (matrix, n) with a split_pipelined row: the chosen layout against the thesis layout. Where
    bench_spmm left split_aligned out (the chosen layout is the thesis layout) the thesis values repeat the chosen
    layout's."""
    records = []
    for matrix in sweep.real + sweep.synthetic:
        for n in sorted(sweep.table[matrix]):
            by_method = sweep.table[matrix][n]
            chosen = by_method.get("split_pipelined")
            if chosen is None:
                continue
            thesis = by_method.get("split_aligned")
            chosen_ms = chosen["median_ms"]
            thesis_ms = thesis["median_ms"] if thesis else chosen_ms
            records.append({
                "matrix": matrix, "n": n, "layout": chosen["layout"], "thesis_timed": thesis is not None,
                "chosen_share": chosen["sparse24_share"],
                "thesis_share": thesis["sparse24_share"] if thesis else chosen["sparse24_share"],
                "chosen_ms": chosen_ms, "thesis_ms": thesis_ms,
                "ratio": chosen_ms / thesis_ms if usable(chosen_ms) and usable(thesis_ms) else math.nan,
                "best_cusparse": best_cusparse(by_method)[0],
                "chosen_speedup": speedup_over_cusparse(by_method, "split_pipelined"),
                "thesis_speedup": speedup_over_cusparse(by_method, "split_aligned" if thesis else "split_pipelined"),
            })
    return records


def geometric_mean(values):
    values = [v for v in values if usable(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def format_ms(value):
    if not usable(value):
        return "–"
    return f"{value:.3f}" if value < 100 else f"{value:.1f}"


def format_ms_digits(value):
    """Four significant digits: the layout table compares times of a few microseconds."""
    return f"{value:.4g}" if usable(value) else "–"


def format_share(value):
    return "–" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def format_ratio(value):
    return f"{value:.2f}" if usable(value) else "–"


def format_factor(value):
    return f"{value:.2f}x" if usable(value) else "–"


def format_speedup_cell(value):
    """A speedup for the auto tables: bold below 1 (bcsr24 slower), so that losses stand out."""
    return f"**{value:.2f}x**" if usable(value) and value < 1 else format_factor(value)


def format_mean(records, key):
    """Geometric mean of the records' `key` and how many matrices it covers, e.g. '2.10x (12)'."""
    values = [r[key] for r in records if usable(r[key])]
    return f"{format_factor(geometric_mean(values))} ({len(values)})" if values else "–"


def worst(records, key):
    """(value, matrix) of the smallest usable `key` among the records, or ('–', '–')."""
    candidates = [r for r in records if usable(r[key])]
    if not candidates:
        return "–", "–"
    record = min(candidates, key=lambda r: r[key])
    return format_speedup_cell(record[key]), record["matrix"]


def markdown_cell(text):
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|")


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
             "auto's (above 1 = bcsr24 faster; below 1 in bold).", "",
             "| matrix | nnz | " + " | ".join(f"n = {n}" for n in widths) + " |",
             "|---|---:|" + "---:|" * len(widths)]
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
             "below 1 in bold).", "",
             "| matrix | " + " | ".join(f"n = {n}: vs f16 / vs f32" for n in widths) + " |",
             "|---|" + "---:|" * len(widths)]
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


def pick_width(sweep, wanted):
    if wanted in sweep.widths:
        return wanted
    fallback = max(sweep.widths)
    print(f"plot_sweep.py: n = {wanted} is not in the CSV; plotting n = {fallback}")
    return fallback


def grouped_bars(axis, matrices, series, colors, baseline=0.0, labels=None):
    """series: {method: [value per matrix or nan]}; one group of bars per matrix. Bars start at `baseline`
    (1 for speedups, so that slower-than-reference bars point down). labels: legend text per method (default: the
    method). Returns {method: bar container}."""
    count = max(1, len(series))
    width = 0.8 / count
    containers = {}
    for index, (method, values) in enumerate(series.items()):
        positions = [i - 0.4 + width * (index + 0.5) for i in range(len(matrices))]
        heights = [v - baseline if usable(v) else 0.0 for v in values]
        containers[method] = axis.bar(positions, heights, width=width, bottom=baseline, color=colors.get(method),
                                      label=(labels or {}).get(method, method), edgecolor="white", linewidth=0.4)
    for i in range(len(matrices)):
        if not any(usable(values[i]) for values in series.values()):
            axis.text(i, baseline, "no data", ha="center", va="bottom", fontsize=8, color="dimgray")
    axis.set_xticks(range(len(matrices)))
    axis.set_xticklabels([short_label(m) for m in matrices], rotation=30, ha="right")
    axis.set_xlim(-0.6, len(matrices) - 0.4)
    axis.grid(axis="y", alpha=0.3)
    axis.set_axisbelow(True)
    return containers


def speedup_ticks(low, high):
    """Readable tick values between low and high on a log axis (1-2-5 steps, with 1 always shown)."""
    ticks = []
    for exponent in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 1.5, 2, 3, 5) if high / low < 30 else (1, 2, 5):
            value = mantissa * 10.0 ** exponent
            if low <= value <= high:
                ticks.append(value)
    return sorted(set(ticks + [1.0]))


def log_speedup_axis(axis, series):
    """Log y axis for speedup bars (baseline 1) with readable 1-2-5 ticks and a dashed line at 1x."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    axis.set_yscale("log")
    values = [v for vs in series.values() for v in vs if usable(v)]
    low, high = min(values + [1.0]) / 1.25, max(values + [1.0]) * 1.25
    axis.set_ylim(low, high)
    axis.yaxis.set_major_locator(FixedLocator(speedup_ticks(low, high)))
    axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
    axis.yaxis.set_minor_formatter(NullFormatter())
    axis.axhline(1.0, color="black", linewidth=1.0, linestyle="--", label="best cuSPARSE (1x)")


def method_labels(sweep):
    return {method: sweep.label(method) for method in sweep.methods}


def title_suffix(sweep):
    return f" — {sweep.devices[0]}" if len(sweep.devices) == 1 else ""


def plot_throughput(plt, sweep, matrices, set_name, n, out_dir):
    # Synthetic matrices: the thesis's figure (stored tiles count as work). Real matrices: useful work only, since
    # tiles with one or two nonzeros would credit the CSR baselines with more "TFLOPS" than the GPU has.
    field, label = (("tflops_thesis", THESIS_TFLOPS_LABEL) if set_name == "synthetic"
                    else ("tflops_useful", "useful throughput, TFLOPS\n(2 · nnz · n / t)"))
    series = OrderedDict()
    for method in sweep.methods:
        values = [sweep.table[m].get(n, {}).get(method, {}).get(field, math.nan) for m in matrices]
        if any(usable(v) for v in values):
            series[method] = values
    figure, axis = plt.subplots(figsize=(max(7.0, 1.1 * len(matrices) + 3.0), 4.8))
    grouped_bars(axis, matrices, series, METHOD_COLORS, labels=method_labels(sweep))
    axis.set_ylabel(label)
    axis.set_xlabel("matrix")
    axis.set_title(f"SpMM throughput per method\n{set_name} matrices, n = {n}{title_suffix(sweep)}")
    axis.legend(title="method", fontsize=8, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    name = f"throughput_{set_name}_n{n}.png"
    figure.savefig(out_dir / name, dpi=130)
    plt.close(figure)
    return name


def plot_speedup(plt, sweep, matrices, set_name, n, out_dir):
    kernels = [k for k in BCSR24_KERNELS if k in sweep.methods]
    series = OrderedDict()
    for kernel in kernels:
        values = []
        for matrix in matrices:
            by_method = sweep.table[matrix].get(n, {})
            _, best_ms = best_cusparse(by_method)
            kernel_ms = by_method.get(kernel, {}).get("median_ms", math.nan)
            values.append(best_ms / kernel_ms if usable(best_ms) and usable(kernel_ms) else math.nan)
        if any(usable(v) for v in values):
            series[kernel] = values
    if not series:
        return None
    figure, axis = plt.subplots(figsize=(max(7.0, 0.9 * len(matrices) + 3.0), 4.8))
    grouped_bars(axis, matrices, series, METHOD_COLORS, baseline=1.0, labels=method_labels(sweep))
    log_speedup_axis(axis, series)
    axis.set_ylabel("speedup over the fastest cuSPARSE variant\n(time cuSPARSE / time kernel, log scale)")
    axis.set_xlabel("matrix")
    axis.set_title(f"bcsr24 kernels against the fastest cuSPARSE variant\n{set_name} matrices, n = {n}"
                   f"{title_suffix(sweep)}")
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    name = f"speedup_{set_name}_n{n}.png"
    figure.savefig(out_dir / name, dpi=130)
    plt.close(figure)
    return name


def plot_synthetic_against_n(plt, sweep, out_dir):
    matrices = [m for m in sweep.synthetic if len(sweep.table[m]) > 1]
    if not matrices:
        return None
    columns = min(4, len(matrices))
    grid_rows = math.ceil(len(matrices) / columns)
    figure, axes = plt.subplots(grid_rows, columns, figsize=(3.6 * columns, 3.0 * grid_rows + 0.9),
                                squeeze=False, sharex=True)
    handles = {}
    for index, matrix in enumerate(matrices):
        axis = axes[index // columns][index % columns]
        widths = sorted(sweep.table[matrix])
        for method in sweep.methods:
            points = [(n, sweep.table[matrix][n][method]["tflops_thesis"]) for n in widths
                      if method in sweep.table[matrix][n] and usable(sweep.table[matrix][n][method]["tflops_thesis"])]
            if not points:
                continue
            style = "-" if method in BCSR24_KERNELS else "--"
            (line,) = axis.plot([p[0] for p in points], [p[1] for p in points], style, marker="o", markersize=3,
                                color=METHOD_COLORS.get(method), label=sweep.label(method))
            handles[method] = line
        axis.set_xscale("log", base=2)
        axis.set_xticks(widths)
        axis.set_xticklabels([str(n) for n in widths], fontsize=7)
        axis.set_title(short_label(matrix), fontsize=10)
        axis.grid(alpha=0.3)
        if index % columns == 0:
            axis.set_ylabel("TFLOPS (thesis)")
        if index // columns == grid_rows - 1:
            axis.set_xlabel("n (columns of B)")
    for index in range(len(matrices), grid_rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    ordered = [m for m in sweep.methods if m in handles]
    figure.legend([handles[m] for m in ordered], [sweep.label(m) for m in ordered], loc="lower center", ncol=min(4, len(ordered)),
                  fontsize=8, frameon=False)
    size = SYNTHETIC_NAME.match(matrices[0]).group(3)
    figure.suptitle(f"Throughput against the width of B, synthetic XdYs matrices"
                    f"{f' ({size} x {size})' if size else ''}{title_suffix(sweep)}", fontsize=11)
    legend_rows = math.ceil(len(ordered) / 4)
    figure.tight_layout(rect=(0, 0.04 + 0.035 * legend_rows, 1, 0.97))
    name = "synthetic_vs_n.png"
    figure.savefig(out_dir / name, dpi=130)
    plt.close(figure)
    return name


def layout_plot_widths(sweep):
    """n = 8, 32, 128 where present; every width when the sweep has at most three (or none of those)."""
    chosen = [n for n in LAYOUT_PLOT_WIDTHS if n in sweep.widths]
    return sweep.widths if len(sweep.widths) <= len(LAYOUT_PLOT_WIDTHS) or not chosen else chosen


def plot_layout_speedup(plt, sweep, n, out_dir):
    """split_pipelined (chosen layout) and split_aligned (thesis layout) over the best cuSPARSE variant, per matrix.
    Where split_aligned was not run (the chosen layout is the thesis layout) its bar repeats split_pipelined's value,
    hatched."""
    records = [r for r in layout_comparison(sweep)
               if r["n"] == n and (usable(r["chosen_speedup"]) or usable(r["thesis_speedup"]))]
    if not records:
        return None
    from matplotlib.patches import Patch
    matrices = [r["matrix"] for r in records]
    series = OrderedDict([("split_pipelined", [r["chosen_speedup"] for r in records]),
                          ("split_aligned", [r["thesis_speedup"] for r in records])])
    labels = {"split_pipelined": "split_pipelined, chosen layout", "split_aligned": "split_aligned, thesis layout"}
    figure, axis = plt.subplots(figsize=(max(7.0, 0.75 * len(matrices) + 3.5), 5.0))
    containers = grouped_bars(axis, matrices, series, METHOD_COLORS, baseline=1.0, labels=labels)
    untimed = [i for i, r in enumerate(records) if not r["thesis_timed"]]
    for i in untimed:
        containers["split_aligned"].patches[i].set_hatch("//")
    log_speedup_axis(axis, series)
    axis.set_ylabel("speedup over the fastest cuSPARSE variant\n(time cuSPARSE / time kernel, log scale)")
    axis.set_xlabel("matrix")
    axis.set_title(f"split kernel on the automatically chosen vs the thesis tile layout, against cuSPARSE\n"
                   f"n = {n}{title_suffix(sweep)}")
    handles, legend_labels = axis.get_legend_handles_labels()
    if untimed:
        handles.append(Patch(facecolor=METHOD_COLORS["split_aligned"], hatch="//", edgecolor="white"))
        legend_labels.append("thesis layout chosen:\nsplit_pipelined repeated (not re-run)")
    axis.legend(handles, legend_labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    name = f"layout_speedup_n{n}.png"
    figure.savefig(out_dir / name, dpi=130)
    plt.close(figure)
    return name


def auto_plot_widths(sweep):
    """The widths among 8, 16, 32, 64, 128 with auto rows; every width with auto rows when none of those has any."""
    widths = sorted({r["n"] for r in sweep.rows if r["method"] == "auto"})
    chosen = [n for n in AUTO_PLOT_WIDTHS if n in widths]
    return chosen or widths


def plot_auto_speedup(plt, sweep, n, out_dir):
    """auto over the best cuSPARSE variant at width n: one bar per matrix, the real matrices (by nnz, hatched below
    LARGE_NNZ) then the synthetic ones, with each bar's value and the geometric means in the title."""
    from matplotlib.patches import Patch
    records = [r for r in auto_comparison(sweep) if r["n"] == n and usable(r["ratio"])]
    if not records:
        return None
    real = sorted((r for r in records if not r["synthetic"]), key=lambda r: (r["nnz"], r["matrix"]))
    synthetic = [r for r in records if r["synthetic"]]  # already in the thesis order
    ordered = real + synthetic
    values = [r["ratio"] for r in ordered]
    figure, axis = plt.subplots(figsize=(max(7.0, 0.42 * len(ordered) + 3.5), 5.2))
    bars = axis.bar(range(len(ordered)), [v - 1.0 for v in values], bottom=1.0, width=0.75,
                    color=[SYNTHETIC_COLOR if r["synthetic"] else METHOD_COLORS["auto"] for r in ordered],
                    edgecolor="white", linewidth=0.4)
    for bar, record in zip(bars, ordered):
        if not large_real(record) and not record["synthetic"]:
            bar.set_hatch("///")
    log_speedup_axis(axis, {"auto": values})
    for index, value in enumerate(values):
        axis.text(index, value * (1.03 if value >= 1 else 0.97), f"{value:.2f}", ha="center",
                  va="bottom" if value >= 1 else "top", fontsize=6.5)
    if real and synthetic:
        axis.axvline(len(real) - 0.5, color="dimgray", linewidth=0.8)
    axis.set_xticks(range(len(ordered)))
    axis.set_xticklabels([short_label(r["matrix"]) for r in ordered], rotation=45, ha="right", fontsize=8)
    axis.set_xlim(-0.6, len(ordered) - 0.4)
    axis.grid(axis="y", alpha=0.3)
    axis.set_axisbelow(True)
    axis.set_ylabel("speedup of auto over the fastest cuSPARSE variant\n(time cuSPARSE / time auto, log scale)")
    axis.set_xlabel("real matrices by nnz" + (", then synthetic XdYs matrices" if synthetic else ""))
    means = f"geo. mean {format_mean([r for r in records if large_real(r)], 'ratio')} over real matrices with " \
            f"nnz ≥ {LARGE_NNZ:,}, {format_mean(records, 'ratio')} over all"
    axis.set_title(f"auto against the fastest cuSPARSE variant, n = {n}{title_suffix(sweep)}\n{means}", fontsize=10)
    handles, labels = axis.get_legend_handles_labels()
    handles += [Patch(facecolor=METHOD_COLORS["auto"]),
                Patch(facecolor=METHOD_COLORS["auto"], hatch="///", edgecolor="white"),
                Patch(facecolor=SYNTHETIC_COLOR)]
    labels += [f"real, nnz ≥ {LARGE_NNZ:,}", f"real, nnz < {LARGE_NNZ:,}", "synthetic XdYs"]
    axis.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    name = f"auto_vs_cusparse_n{n}.png"
    figure.savefig(out_dir / name, dpi=130)
    plt.close(figure)
    return name


def make_plots(sweep, n, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_sweep.py: matplotlib is not installed (apt install python3-matplotlib); plots skipped")
        return []
    files = []
    if sweep.has_auto:
        for width in auto_plot_widths(sweep):
            files.append(plot_auto_speedup(plt, sweep, width, out_dir))
    for set_name, matrices in (("suitesparse", sweep.real), ("synthetic", sweep.synthetic)):
        if not matrices:
            continue
        files.append(plot_throughput(plt, sweep, matrices, set_name, n, out_dir))
        files.append(plot_speedup(plt, sweep, matrices, set_name, n, out_dir))
    files.append(plot_synthetic_against_n(plt, sweep, out_dir))
    if sweep.has_layouts:
        for width in layout_plot_widths(sweep):
            files.append(plot_layout_speedup(plt, sweep, width, out_dir))
    else:
        print("plot_sweep.py: the sweep has no thesis-layout rows (split_aligned) or layout column; "
              "layout_speedup plots skipped")
    return [f for f in files if f]


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
