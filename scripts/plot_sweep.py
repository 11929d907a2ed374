#!/usr/bin/env python3
"""Summarise a sweep CSV (scripts/sweep.py, bench_spmm --csv): writes summary.md (census, time per method,
speedup of split_pipelined over the best cuSPARSE variant) and PNG plots:
  throughput_<set>_n<N>.png  thesis-TFLOPS of every method per matrix at one width (thesis fig. 3.6 / 3.2)
  speedup_<set>_n<N>.png     each bcsr24 kernel over the best cuSPARSE variant, per matrix (log scale)
  synthetic_vs_n.png         thesis-TFLOPS against n for each synthetic XdYs matrix (thesis fig. 3.5)
  layout_speedup_n<N>.png    split_pipelined on the automatically chosen tile layout and split_aligned (same kernel,
                             thesis layout: aligned tiles, file order) over the best cuSPARSE variant, for n among
                             8, 32, 128 (all widths when the sweep has at most three); only for sweeps with layouts
<set> is 'suitesparse' (files) or 'synthetic' (XdYs matrices). The summary needs only the standard library;
the plots need matplotlib (python3-matplotlib) and are skipped with a message without it.
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
BCSR24_KERNELS = ["dense_bt", "dense_pipelined", "split_pipelined", "split_aligned"]
CUSPARSE_METHODS = ["cusparse_csr_f16", "cusparse_csr_f32", "cusparse_bsr16_f16", "cusparse_bsr16_f32"]
OTHER_METHODS = ["cublas_dense"]
METHOD_ORDER = BCSR24_KERNELS + CUSPARSE_METHODS + OTHER_METHODS
# Our kernels in blues/greens, cuSPARSE in warm colours, cuBLAS grey: families read at a glance.
METHOD_COLORS = {
    "dense_bt": "#9ecae1", "dense_pipelined": "#3182bd", "split_pipelined": "#08519c", "split_aligned": "#41b6c4",
    "cusparse_csr_f16": "#fdae6b", "cusparse_csr_f32": "#e6550d",
    "cusparse_bsr16_f16": "#fc9272", "cusparse_bsr16_f32": "#cb181d",
    "cublas_dense": "#969696",
}
# Legend labels for sweeps that carry layouts (a `layout` column or split_aligned rows); older sweeps keep method names.
LAYOUT_METHOD_LABELS = {"split_pipelined": "split_pipelined (auto layout)",
                        "split_aligned": "split_aligned (thesis layout)"}
THESIS_LAYOUT = "aligned/none"
LAYOUT_PLOT_WIDTHS = (8, 32, 128)
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


def speedup_over_cusparse(by_method, method):
    """Time of the fastest cuSPARSE variant divided by the method's (nan where either is missing)."""
    _, best_ms = best_cusparse(by_method)
    method_ms = by_method.get(method, {}).get("median_ms", math.nan)
    return best_ms / method_ms if usable(best_ms) and usable(method_ms) else math.nan


def layout_comparison(sweep):
    """One record per (matrix, n) with a split_pipelined row: the chosen layout against the thesis layout. Where
    bench_spmm left split_aligned out (the chosen layout is the thesis layout) the thesis values are the auto ones."""
    records = []
    for matrix in sweep.real + sweep.synthetic:
        for n in sorted(sweep.table[matrix]):
            by_method = sweep.table[matrix][n]
            auto = by_method.get("split_pipelined")
            if auto is None:
                continue
            thesis = by_method.get("split_aligned")
            auto_ms = auto["median_ms"]
            thesis_ms = thesis["median_ms"] if thesis else auto_ms
            records.append({
                "matrix": matrix, "n": n, "layout": auto["layout"], "thesis_timed": thesis is not None,
                "auto_share": auto["sparse24_share"],
                "thesis_share": thesis["sparse24_share"] if thesis else auto["sparse24_share"],
                "auto_ms": auto_ms, "thesis_ms": thesis_ms,
                "ratio": auto_ms / thesis_ms if usable(auto_ms) and usable(thesis_ms) else math.nan,
                "best_cusparse": best_cusparse(by_method)[0],
                "auto_speedup": speedup_over_cusparse(by_method, "split_pipelined"),
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


def layout_section(sweep):
    lines = ["## Layout: automatic vs thesis layout", ""]
    if not sweep.has_layouts:
        return lines + ["The sweep has no thesis-layout rows (no split_aligned method and no layout column: an older "
                        "bench_spmm, which always ran the thesis layout — aligned tiles, file order).", ""]
    records = layout_comparison(sweep)
    if not records:
        return lines + ["The sweep has no split_pipelined rows to compare layouts with.", ""]
    lines += ["*auto* is split_pipelined on the layout bench_spmm chose for the matrix (tile alignment / row "
              "reordering); *thesis* is split_aligned, the same kernel on the thesis layout (aligned tiles, file "
              "order), timed in the same run. Where the chosen layout is the thesis layout split_aligned is not run "
              "and the thesis columns repeat the auto ones ('= auto'). 2:4 share: share of 2:4 tiles among stored "
              "tiles in each layout. *auto / thesis* is the time ratio (below 1 = the chosen layout is faster); the "
              "speedups are the best cuSPARSE variant's time divided by the kernel's (above 1 = bcsr24 faster).", "",
              "| matrix | n | chosen layout | 2:4 share auto | 2:4 share thesis | auto (ms) | thesis (ms) | "
              "auto / thesis | best cuSPARSE | auto vs cuSPARSE | thesis vs cuSPARSE |",
              "|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in records:
        thesis_ms = format_ms_digits(r["thesis_ms"]) if r["thesis_timed"] else "= auto"
        lines.append(f"| {r['matrix']} | {r['n']} | {r['layout']} | {format_share(r['auto_share'])} | "
                     f"{format_share(r['thesis_share'])} | {format_ms_digits(r['auto_ms'])} | {thesis_ms} | "
                     f"{format_ratio(r['ratio'])} | {r['best_cusparse'] or '–'} | "
                     f"{format_factor(r['auto_speedup'])} | {format_factor(r['thesis_speedup'])} |")
    lines += ["", "Per n: the worst (largest) auto / thesis time ratio among the matrices where split_aligned ran "
              "('–' where none did), and split_pipelined (auto layout) against the "
              "best cuSPARSE variant — worst and geometric mean over the matrices.", "",
              "| n | matrices | worst auto / thesis | on matrix | worst auto vs cuSPARSE | on matrix | "
              "geo. mean auto vs cuSPARSE | geo. mean thesis vs cuSPARSE |",
              "|---:|---:|---:|---|---:|---|---:|---:|"]
    for n in sweep.widths:
        at_n = [r for r in records if r["n"] == n]
        if not at_n:
            continue
        # Only matrices where split_aligned ran: elsewhere the ratio is 1 by construction, not a measurement.
        ratios = [r for r in at_n if r["thesis_timed"] and usable(r["ratio"])]
        speedups = [r for r in at_n if usable(r["auto_speedup"])]
        worst_ratio = max(ratios, key=lambda r: r["ratio"]) if ratios else None
        worst_speedup = min(speedups, key=lambda r: r["auto_speedup"]) if speedups else None
        lines.append(f"| {n} | {len(at_n)} | "
                     f"{format_ratio(worst_ratio['ratio']) if worst_ratio else '–'} | "
                     f"{worst_ratio['matrix'] if worst_ratio else '–'} | "
                     f"{format_factor(worst_speedup['auto_speedup']) if worst_speedup else '–'} | "
                     f"{worst_speedup['matrix'] if worst_speedup else '–'} | "
                     f"{format_factor(geometric_mean(r['auto_speedup'] for r in at_n))} | "
                     f"{format_factor(geometric_mean(r['thesis_speedup'] for r in at_n))} |")
    return lines + [""]


def write_summary(sweep, path, plot_files):
    lines = ["# bcsr24 SpMM sweep", ""]
    if sweep.devices:
        lines += [f"Device: {', '.join(sweep.devices)}.", ""]
    lines += [f"{len(sweep.table)} matrices, widths n = {', '.join(map(str, sweep.widths))}, "
              f"methods: {', '.join(sweep.methods)}.", "",
              "Times are medians in ms. *best cuSPARSE* is the fastest cuSPARSE variant for that matrix and n; "
              "*split vs cuSPARSE* is its time divided by split_pipelined's (above 1 = bcsr24 faster). "
              "Thesis TFLOPS count 2 · stored tiles · 16 · 32 · n flops, useful TFLOPS 2 · nnz · n.", ""]

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
              "| matrix | n | " + " | ".join(sweep.methods) +
              " | best cuSPARSE | split vs cuSPARSE | split TFLOPS (thesis) | max rel. error |",
              "|---|---:|" + "---:|" * len(sweep.methods) + "---|---:|---:|---:|"]
    for matrix in sweep.real + sweep.synthetic:
        for n in sorted(sweep.table[matrix]):
            by_method = sweep.table[matrix][n]
            cells = [format_ms(by_method[m]["median_ms"]) if m in by_method else "–" for m in sweep.methods]
            best_method, best_ms = best_cusparse(by_method)
            split = by_method.get("split_pipelined")
            speedup = best_ms / split["median_ms"] if split and usable(split["median_ms"]) and usable(best_ms) \
                else math.nan
            errors = [r["rel_error"] for r in by_method.values() if not math.isnan(r["rel_error"])]
            speedup_text = f"{speedup:.2f}x" if usable(speedup) else "–"
            split_tflops = f"{split['tflops_thesis']:.2f}" if split and usable(split["tflops_thesis"]) else "–"
            error_text = f"{max(errors):.1e}" if errors else "–"
            lines.append(f"| {matrix} | {n} | " + " | ".join(cells) +
                         f" | {best_method or '–'} | {speedup_text} | {split_tflops} | {error_text} |")
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
    """split_pipelined (auto layout) and split_aligned (thesis layout) over the best cuSPARSE variant, per matrix.
    Where split_aligned was not run (the chosen layout is the thesis layout) its bar repeats the auto value, hatched."""
    records = [r for r in layout_comparison(sweep)
               if r["n"] == n and (usable(r["auto_speedup"]) or usable(r["thesis_speedup"]))]
    if not records:
        return None
    from matplotlib.patches import Patch
    matrices = [r["matrix"] for r in records]
    series = OrderedDict([("split_pipelined", [r["auto_speedup"] for r in records]),
                          ("split_aligned", [r["thesis_speedup"] for r in records])])
    labels = {"split_pipelined": "split_pipelined, auto layout", "split_aligned": "split_aligned, thesis layout"}
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
        legend_labels.append("thesis layout chosen:\nsame as auto (not re-run)")
    axis.legend(handles, legend_labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    name = f"layout_speedup_n{n}.png"
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
    parser.add_argument("csv", help="sweep CSV (columns as written by bench_spmm --csv)")
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
    write_summary(sweep, out_dir / "summary.md", plot_files)
    print(f"wrote {out_dir / 'summary.md'}" + "".join(f", {out_dir / f}" for f in plot_files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
