"""The plots of a sweep (plot_sweep.py): throughput and speedups per matrix, synthetic matrices against n, the two
tile layouts, auto against the best cuSPARSE variant. matplotlib is imported by the caller and passed in as `plt`."""

import math
from collections import OrderedDict

from sweep_data import (BCSR24_KERNELS, LARGE_NNZ, SYNTHETIC_NAME, auto_comparison, best_cusparse, format_mean,
                        large_real, layout_comparison, short_label, usable)

# Our kernels in blues/greens, cuSPARSE in warm colours, cuBLAS grey: families read at a glance.
METHOD_COLORS = {
    "auto": "#006d2c", "csr_cuda_cores": "#74c476",
    "dense_bt": "#9ecae1", "dense_pipelined": "#3182bd", "split_pipelined": "#08519c", "split_aligned": "#41b6c4",
    "cusparse_csr_f16": "#fdae6b", "cusparse_csr_f32": "#e6550d",
    "cusparse_bsr16_f16": "#fc9272", "cusparse_bsr16_f32": "#cb181d",
    "cublas_dense": "#969696",
}
LAYOUT_PLOT_WIDTHS = (8, 32, 128)
AUTO_PLOT_WIDTHS = (8, 16, 32, 64, 128)
SYNTHETIC_COLOR = "#807dba"
THESIS_TFLOPS_LABEL = "throughput, TFLOPS\n(2 · stored tiles · 16 · 32 · n / t)"


def save_figure(plt, figure, out_dir, name):
    """Writes the figure to out_dir/name at 130 dpi, closes it and returns the name."""
    figure.savefig(out_dir / name, dpi=130)
    plt.close(figure)
    return name


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
    return save_figure(plt, figure, out_dir, f"throughput_{set_name}_n{n}.png")


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
    return save_figure(plt, figure, out_dir, f"speedup_{set_name}_n{n}.png")


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
    return save_figure(plt, figure, out_dir, "synthetic_vs_n.png")


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
    return save_figure(plt, figure, out_dir, f"layout_speedup_n{n}.png")


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
    return save_figure(plt, figure, out_dir, f"auto_vs_cusparse_n{n}.png")


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
