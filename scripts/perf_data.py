"""The benchmark data docs/PERFORMANCE.md is rendered from (perf_report.py): a data file with its provenance (Meta),
a bench_spmm CSV by matrix, n and method (BenchData), the matrix classes, and the number and table formats of the
document. Standard library only."""

import csv
import json
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_data import SYNTHETIC_NAME, best_cusparse, read_sweep, synthetic_sort_key, usable  # noqa: E402

SWEEP_FILES = ["sweep.csv", "meta.json", "summary.md", "skipped.tsv"]
MESH_NAME = re.compile(r"^mesh\d+x\d+x\d+_d\d+_s\d+_(lex|random)")
GRAPH_NAME = re.compile(r"^graph\d+(x\d+)?_d\d+(_power)?$")
CLASSES = [
    ("synthetic", "Synthetic XdYs matrices",
     "The thesis's synthetic matrices: X% of the 16x32 tiles dense, Y% 2:4, the rest zero, placed at random."),
    ("real", "Real SuiteSparse matrices",
     "Every shared SuiteSparse matrix with at least 10,000 nonzeros (FEM, circuits, power networks, graphs)."),
    ("mesh", "3-D meshes",
     "FEM-like matrices of `bench_spmm --mesh`: a 3-D grid of nodes, DOFS unknowns per node, 7- or 27-point "
     "coupling, nodes numbered lexicographically or at random."),
    ("graph", "Random graphs",
     "`bench_spmm --graph`: random sparse matrices with uniform or power-law row lengths."),
]


class Meta:
    """A data file's provenance (NAME.meta.json, or meta.json for the sweep)."""

    def __init__(self, path):
        if not path.is_file():
            raise SystemExit(f"perf_report.py: error: {path} is missing: every data file needs its provenance "
                             "(scripts/bench_meta.py writes it)")
        try:
            self.fields = json.loads(path.read_text())
        except ValueError as error:
            raise SystemExit(f"perf_report.py: error: {path}: not JSON ({error})")
        self.path = path

    def get(self, key, default=""):
        value = self.fields.get(key, default)
        return value if value is not None else default

    def commit_text(self):
        """The commit, with the commits of earlier runs of a resumed sweep where they differ; 'per row' for a
        hand-kept table that names them per row."""
        if not self.get("commit"):
            return "per row"
        commits = [run.get("commit", "unknown") for run in self.get("earlier_runs", [])]
        commits.append(self.get("commit", "unknown"))
        return ", ".join(dict.fromkeys(commits))

    def caption(self):
        """The line under a table: command, device, date and commit of its data (the *Data* table maps it to its
        file); a hand-kept table that gives some of them per row says so."""
        fields = {"command": f"`{self.get('command')}`" if self.get("command") else "", "device": self.get("device"),
                  "date": str(self.get("date"))[:10], "commit": self.commit_text() if self.get("commit") else ""}
        parts = [value for value in fields.values() if value]
        per_row = [key for key, value in fields.items() if not value]
        if per_row:
            parts.append(", ".join(per_row) + " per row")
        if self.get("transcribed"):
            parts.append("transcribed")
        return "*" + " · ".join(parts) + "*"


class BenchData:
    """bench_spmm --csv rows indexed as matrix -> n -> method -> row, with the file's provenance."""

    def __init__(self, path, meta):
        self.path, self.meta = path, meta
        rows = read_sweep(path) if path.stat().st_size else []
        self.table = {}
        for row in rows:
            self.table.setdefault(row["matrix"], {}).setdefault(row["n"], {})[row["method"]] = row
        self.widths = sorted({row["n"] for row in rows})
        self.methods = list(dict.fromkeys(row["method"] for row in rows))
        # A meta written where nvidia-smi was missing: the device bench_spmm named in the rows.
        devices = sorted({row["device"].strip('"') for row in rows if row.get("device")})
        if meta.get("device", "unknown") == "unknown" and devices:
            meta.fields["device"] = ", ".join(devices)

    def matrices(self, cls=None):
        names = [m for m in self.table if cls is None or matrix_class(m) == cls]
        return sorted(names, key=synthetic_sort_key) if cls == "synthetic" else names

    def ms(self, matrix, n, method):
        return self.table.get(matrix, {}).get(n, {}).get(method, {}).get("median_ms", math.nan)

    def cell(self, matrix, n):
        return self.table.get(matrix, {}).get(n, {})

    def any_row(self, matrix):
        for by_method in self.table[matrix].values():
            for row in by_method.values():
                return row
        return {}

    def caption(self):
        return self.meta.caption()


def matrix_class(name):
    if SYNTHETIC_NAME.match(name):
        return "synthetic"
    if MESH_NAME.match(name):
        return "mesh"
    if GRAPH_NAME.match(name):
        return "graph"
    return "real"


def relative(path):
    """How the document names a data file: relative to docs/ as committed (sweep/NAME or data/NAME), whichever folder
    it was read from, so that a render of a staging copy (gpu_check's report step) reads the same."""
    path = Path(path)
    return f"sweep/{path.name}" if path.name in SWEEP_FILES else f"data/{path.name}"


def read_table(path, delimiter=","):
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle, delimiter=delimiter))
    return rows[0], rows[1:]


# --- number formats -------------------------------------------------------------------------------------------------

def us(ms):
    """Milliseconds as microseconds: one decimal below 1000 us."""
    if not usable(ms):
        return "–"
    value = ms * 1000.0
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def factor(value, bold_below_one=True):
    if not usable(value):
        return "–"
    text = f"{value:.2f}x"
    return f"**{text}**" if bold_below_one and value < 1 else text


def ratio(value):
    return f"{value:.2f}" if usable(value) else "–"


def divide(a, b):
    return a / b if usable(a) and usable(b) else math.nan


def md_row(cells):
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def md_table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    return [md_row(header), "|" + "|".join(align) + "|"] + [md_row(r) for r in rows] + [""]


def speedup_auto(data, matrix, n, method="auto"):
    """The fastest cuSPARSE variant's time / the method's, for one matrix and n."""
    _, best = best_cusparse(data.cell(matrix, n))
    return divide(best, data.ms(matrix, n, method))
