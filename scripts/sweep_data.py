"""A sweep CSV (scripts/sweep.py, bench_spmm --csv) read into a Sweep, and what the summary and the plots compute
from it: the best cuSPARSE variant, the comparisons of auto and of the layouts with it, and number formatting.
Standard library only (plot_sweep.py, sweep_plots.py and perf_report.py use it)."""

import csv
import math
import re
from collections import OrderedDict, defaultdict

# split_aligned: split_pipelined's kernel on the thesis layout (aligned tiles, file order), timed in the same run as
# the automatically chosen layout; bench_spmm leaves it out when the chosen layout is the thesis layout anyway.
# auto: the library's default (tensor-core tiles or the CUDA-core CSR path per row band, by a cost model);
# csr_cuda_cores: that CSR path alone.
BCSR24_KERNELS = ["auto", "csr_cuda_cores", "dense_bt", "dense_pipelined", "split_pipelined", "split_aligned"]
CUSPARSE_METHODS = ["cusparse_csr_f16", "cusparse_csr_f32", "cusparse_bsr16_f16", "cusparse_bsr16_f32"]
OTHER_METHODS = ["cublas_dense"]
METHOD_ORDER = BCSR24_KERNELS + CUSPARSE_METHODS + OTHER_METHODS
# Legend labels for sweeps that carry layouts (a `layout` column or split_aligned rows); older sweeps keep method names.
LAYOUT_METHOD_LABELS = {"split_pipelined": "split_pipelined (chosen layout)",
                        "split_aligned": "split_aligned (thesis layout)"}
THESIS_LAYOUT = "aligned/none"
# The kernels the time table compares with the best cuSPARSE variant, with their column labels.
HEADLINE_KERNELS = {"auto": "auto", "split_pipelined": "split"}
# The real-matrix geometric mean of auto's speedup counts matrices with at least this many nonzeros.
LARGE_NNZ = 50000
SKIPPED_FILE = "skipped.tsv"
SYNTHETIC_NAME = re.compile(r"^(\d+)d(\d+)s(?:_(\d+))?$")
# plan_bytes .. copy_gbs are absent from CSVs written before bench_spmm reported them, and empty for the baselines:
# both read as NaN.
NUMERIC_FIELDS = ["rows", "cols", "nnz", "n", "median_ms", "min_ms", "max_ms", "tflops_thesis", "tflops_useful",
                  "bandwidth_gbs", "floor_fraction", "rel_error", "dense_tiles", "sparse24_tiles", "zero_tiles",
                  "sparse24_share", "plan_bytes", "plan_gbs", "copy_fraction", "copy_gbs"]


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
