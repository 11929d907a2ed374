#!/usr/bin/env python3
"""Summarise a sweep CSV (scripts/sweep.py, bench_spmm --csv): writes summary.md (census, time per method,
speedup of split_pipelined over the best cuSPARSE variant) and PNG plots:
  throughput_<set>_n<N>.png  thesis-TFLOPS of every method per matrix at one width (thesis fig. 3.6 / 3.2)
  speedup_<set>_n<N>.png     each bcsr24 kernel over the best cuSPARSE variant, per matrix (log scale)
  synthetic_vs_n.png         thesis-TFLOPS against n for each synthetic XdYs matrix (thesis fig. 3.5)
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

BCSR24_KERNELS = ["dense_bt", "dense_pipelined", "split_pipelined"]
CUSPARSE_METHODS = ["cusparse_csr_f16", "cusparse_csr_f32", "cusparse_bsr16_f16", "cusparse_bsr16_f32"]
OTHER_METHODS = ["cublas_dense"]
METHOD_ORDER = BCSR24_KERNELS + CUSPARSE_METHODS + OTHER_METHODS
# Our kernels in blues/greens, cuSPARSE in warm colours, cuBLAS grey: families read at a glance.
METHOD_COLORS = {
    "dense_bt": "#9ecae1", "dense_pipelined": "#3182bd", "split_pipelined": "#08519c",
    "cusparse_csr_f16": "#fdae6b", "cusparse_csr_f32": "#e6550d",
    "cusparse_bsr16_f16": "#fc9272", "cusparse_bsr16_f32": "#cb181d",
    "cublas_dense": "#969696",
}
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

    def any_row(self, matrix):
        return next(iter(next(iter(self.table[matrix].values())).values()))


def format_ms(value):
    if not usable(value):
        return "–"
    return f"{value:.3f}" if value < 100 else f"{value:.1f}"


def write_summary(sweep, path, plot_files):
    lines = ["# bcsr24 SpMM sweep", ""]
    if sweep.devices:
        lines += [f"Device: {', '.join(sweep.devices)}.", ""]
    lines += [f"{len(sweep.table)} matrices, widths n = {', '.join(map(str, sweep.widths))}, "
              f"methods: {', '.join(sweep.methods)}.", "",
              "Times are medians in ms. *best cuSPARSE* is the fastest cuSPARSE variant for that matrix and n; "
              "*split vs cuSPARSE* is its time divided by split_pipelined's (above 1 = bcsr24 faster). "
              "Thesis TFLOPS count 2 · stored tiles · 16 · 32 · n flops, useful TFLOPS 2 · nnz · n.", ""]

    lines += ["## Tile census", "",
              "| matrix | rows | cols | nnz | dense tiles | 2:4 tiles | zero tiles | 2:4 share | nnz / stored tile |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for matrix in sweep.real + sweep.synthetic:
        row = sweep.any_row(matrix)
        stored = row["dense_tiles"] + row["sparse24_tiles"]
        per_tile = row["nnz"] / stored if stored else math.nan
        lines.append(f"| {matrix} | {row['rows']:.0f} | {row['cols']:.0f} | {row['nnz']:.0f} | "
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

    if plot_files:
        lines += ["## Plots", ""] + [f"![{name}]({name})" for name in plot_files] + [""]
    path.write_text("\n".join(lines))


def pick_width(sweep, wanted):
    if wanted in sweep.widths:
        return wanted
    fallback = max(sweep.widths)
    print(f"plot_sweep.py: n = {wanted} is not in the CSV; plotting n = {fallback}")
    return fallback


def grouped_bars(axis, matrices, series, colors, baseline=0.0):
    """series: {method: [value per matrix or nan]}; one group of bars per matrix. Bars start at `baseline`
    (1 for speedups, so that slower-than-reference bars point down)."""
    count = max(1, len(series))
    width = 0.8 / count
    for index, (method, values) in enumerate(series.items()):
        positions = [i - 0.4 + width * (index + 0.5) for i in range(len(matrices))]
        heights = [v - baseline if usable(v) else 0.0 for v in values]
        axis.bar(positions, heights, width=width, bottom=baseline, color=colors.get(method), label=method,
                 edgecolor="white", linewidth=0.4)
    for i in range(len(matrices)):
        if not any(usable(values[i]) for values in series.values()):
            axis.text(i, baseline, "no data", ha="center", va="bottom", fontsize=8, color="dimgray")
    axis.set_xticks(range(len(matrices)))
    axis.set_xticklabels([short_label(m) for m in matrices], rotation=30, ha="right")
    axis.set_xlim(-0.6, len(matrices) - 0.4)
    axis.grid(axis="y", alpha=0.3)
    axis.set_axisbelow(True)


def speedup_ticks(low, high):
    """Readable tick values between low and high on a log axis (1-2-5 steps, with 1 always shown)."""
    ticks = []
    for exponent in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 1.5, 2, 3, 5) if high / low < 30 else (1, 2, 5):
            value = mantissa * 10.0 ** exponent
            if low <= value <= high:
                ticks.append(value)
    return sorted(set(ticks + [1.0]))


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
    grouped_bars(axis, matrices, series, METHOD_COLORS)
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
    grouped_bars(axis, matrices, series, METHOD_COLORS, baseline=1.0)
    axis.set_yscale("log")
    values = [v for vs in series.values() for v in vs if usable(v)]
    low, high = min(values + [1.0]) / 1.25, max(values + [1.0]) * 1.25
    axis.set_ylim(low, high)
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    axis.yaxis.set_major_locator(FixedLocator(speedup_ticks(low, high)))
    axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
    axis.yaxis.set_minor_formatter(NullFormatter())
    axis.axhline(1.0, color="black", linewidth=1.0, linestyle="--", label="best cuSPARSE (1x)")
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
                                color=METHOD_COLORS.get(method), label=method)
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
    figure.legend([handles[m] for m in ordered], ordered, loc="lower center", ncol=min(4, len(ordered)),
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
