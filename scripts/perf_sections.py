"""The sections of docs/PERFORMANCE.md (perf_report.py renders them in order): each takes its data file (None when
it is missing, which leaves the section out) and returns the section's Markdown lines."""

import csv
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_data import CLASSES, divide, factor, md_table, ratio, read_table, speedup_auto, us  # noqa: E402
from sweep_data import (LARGE_NNZ, SYNTHETIC_NAME, best_cusparse, geometric_mean, synthetic_sort_key,  # noqa: E402
                        to_number, usable)

# The document's own kernels, in the order the tables list them, with what each is.
KERNELS = {
    "auto": "the default plan: per 16-row band, tensor-core tiles or the CUDA-core CSR path, as the cost model chooses",
    "split_pipelined": "the tile kernel alone: 2:4 tiles on `mma.sp`, dense tiles on `mma.sync`",
    "dense_pipelined": "every stored tile as a dense tile, pipelined",
    "dense_bt": "every stored tile as a dense tile, one copy stage",
    "csr_cuda_cores": "the CUDA-core CSR path alone",
}
CUSPARSE_NAMES = {"cusparse_csr_f16": "CSR fp16", "cusparse_csr_f32": "CSR fp32", "cusparse_bsr16_f16": "BSR16 fp16",
                  "cusparse_bsr16_f32": "BSR16 fp32", "cusparse_best": "best of four", "cusparse_csr_best": "CSR, best"}
FLOOR_VARIANTS = {"launch": "no tiles: launch, band descriptors, C", "sparse": "2:4 + dense tiles, fp16 B",
                  "dense": "all tiles dense, fp16 B", "f32b": "2:4 + dense tiles, fp32 B"}
PRECISION_MODES = [("auto_matrix_scale", "one scale for A"), ("auto_f32b", "fp32 B"), ("auto_bf16", "bf16"),
                   ("auto_bf16_f32b", "bf16 A, fp32 B"), ("auto_split", "split")]


def section_head(title, text):
    """A section's heading and its opening paragraph."""
    return [f"## {title}", "", text, ""]


def intro(sources, sweep):
    lines = ["# Performance", "",
             "Current figures of bcsr24 per matrix class and kernel, against cuSPARSE in the same process. "
             "**Generated** by `scripts/perf_report.py` from `docs/sweep/` and `docs/data/` (*Reproduce*): do not "
             "edit by hand. Under each table: the command, device, date and commit of its data. Earlier figures and "
             "the experiments behind the design are in git history (`git log -p -- docs/PERFORMANCE.md`; d3ca7bc is "
             "the last hand-written version); *Measured design choices* sums them up.", "",
             "## How the figures are taken", ""]
    reps = sweep.meta.get("reps", 20) if sweep else 20
    warmup = sweep.meta.get("warmup", 5) if sweep else 5
    lines += [
        f"- `bench_spmm`: CUDA events around the multiply only; {warmup} warm-up runs, then {reps} timed runs, each "
        "after an L2 eviction (a read of twice the L2 size), half in --methods order, half in reverse; the median is "
        "shown (min, max and the error against a "
        "float64 product, computed first with C poisoned by NaN, are in the CSVs).",
        "- B random in [-1, 1) (fp16; fp32 in the fp32-B modes), C fp32, alpha = 1, beta = 0. Times in us.",
        "- cuSPARSE `cusparseSpMM`, same process, matrix and B: CSR fp16 -> fp32, CSR fp32, BSR 16x16 fp16 -> fp32 "
        "and fp32, preprocessed. *Best cuSPARSE*: the fastest variant timed for that matrix and n; a *speedup* is "
        "its time / bcsr24's (below 1 in bold).",
        "- *floor / t*: (both tile lists + B + C bytes) / 3.0e12 B/s (the H100's measured device-to-device copy "
        "rate) / time; 1.0 is the memory-bound floor.",
        "- Kernels: " + "; ".join(f"`{k}`, {v}" for k, v in KERNELS.items()) + ".", ""]
    devices = [meta.get("device") for _, meta in sources if meta.get("device")]
    if devices:
        common = max(dict.fromkeys(devices), key=devices.count)
        lines.insert(-1, f"- Device: {common} for {devices.count(common)} of the {len(sources)} data files; the "
                         "others name theirs under each table.")
    lines += ["## Reproduce", "",
              "`scripts/gpu_check.sh OUT` runs the steps (`STEPS=\"sweep report\"` a few) and renders "
              "`OUT/PERFORMANCE.md` from its data and the committed data. To update this file, on a checkout of the "
              "measured commit:", "",
              "```",
              "python3 scripts/perf_report.py collect OUT [--commit SHA]   # OUT's data into docs/data, docs/sweep",
              "python3 scripts/perf_report.py render                       # docs/PERFORMANCE.md",
              "```", "",
              "ctest's `perf_doc` checks that this file is what `render` makes of the data.", "",
              "### Data", ""]
    rows = []
    for relpath, meta in sources:
        source = f"transcribed from {meta.get('transcribed').replace('docs/', '')}" if meta.get("transcribed") \
            else "measured"
        if meta.get("note"):
            source += f"; {meta.get('note')}"
        rows.append([f"`{relpath}`", meta.commit_text(), source])
    lines += md_table(["file", "commit", "source"], rows, ["---", "---", "---"])
    return lines


def summary_section(sweep):
    """Each kernel against the best cuSPARSE variant, geometric means per matrix class and n; auto's worst case."""
    lines = section_head("Kernels against cuSPARSE, by matrix class",
                         "Geometric mean over the class of the best cuSPARSE variant's time / the kernel's, per width "
                         "n of B:")
    header = ["class", "kernel"] + [f"n = {n}" for n in sweep.widths]
    rows, worst_texts = [], []
    for cls, title, _ in CLASSES:
        matrices = sweep.matrices(cls)
        if not matrices:
            continue
        name = title.replace(" matrices", "")
        groups = [(f"`{k}`", k, matrices) for k in KERNELS if k in sweep.methods and k != "dense_bt"]
        if cls == "real":
            large = [m for m in matrices if sweep.any_row(m).get("nnz", 0) >= LARGE_NNZ]
            groups.insert(1, (f"`auto`, the {len(large)} with nnz >= {LARGE_NNZ:,}", "auto", large))
        for index, (text, kernel, subset) in enumerate(groups):
            rows.append([f"{name} ({len(matrices)})" if index == 0 else "", text] +
                        [factor(geometric_mean(speedup_auto(sweep, m, n, kernel) for m in subset))
                         for n in sweep.widths])
        measured = [(speedup_auto(sweep, m, n), m, n) for m in matrices for n in sweep.widths]
        measured = [x for x in measured if usable(x[0])]
        if measured:
            worst = min(measured)
            faster = sum(all(speedup_auto(sweep, m, n) > 1 for n in sweep.widths) for m in matrices)
            worst_texts.append(f"{name} {faster} of {len(matrices)}, worst {factor(worst[0])} "
                               f"({worst[1]}, n = {worst[2]})")
    lines += md_table(header, rows, ["---", "---"] + ["---:"] * len(sweep.widths))
    lines += [sweep.caption(), "", "`auto` faster than the best cuSPARSE variant at every n: " +
              "; ".join(worst_texts) + ".", ""]
    return lines


def per_matrix_table(data, matrices):
    """Per matrix: auto's speedup over the best cuSPARSE variant (auto's time, us) at every n."""
    header = ["matrix", "nnz"] + [f"n = {n}" for n in data.widths]
    rows = []
    for m in matrices:
        row = data.any_row(m)
        nnz = f"{row['nnz']:,.0f}" if usable(row.get("nnz", math.nan)) else "–"
        cells = [f"{factor(speedup_auto(data, m, n))} ({us(data.ms(m, n, 'auto'))})"
                 if usable(data.ms(m, n, "auto")) else "–" for n in data.widths]
        rows.append([m, nnz] + cells)
    return md_table(header, rows, ["---"] + ["---:"] * (len(header) - 1))


def ladder(data, matrices, widths):
    """The kernel ladder: every kernel's time beside the best cuSPARSE variant and cuBLAS."""
    kernels = [k for k in KERNELS if k in data.methods and k != "csr_cuda_cores"]
    header = ["matrix", "n"] + [f"`{k}`" for k in kernels] + ["best cuSPARSE", "cuBLAS dense", "`auto` floor / t"]
    rows = []
    for m in matrices:
        for n in widths:
            by_method = data.cell(m, n)
            if not by_method:
                continue
            method, best = best_cusparse(by_method)
            floor = by_method.get("auto", {}).get("floor_fraction", math.nan)
            rows.append([m, n] + [us(data.ms(m, n, k)) for k in kernels]
                        + [f"{us(best)} ({CUSPARSE_NAMES.get(method, method)})" if method else "–",
                           us(data.ms(m, n, "cublas_dense")), ratio(floor)])
    return md_table(header, rows)


def class_section(cls, title, blurb, sweep, heldout, bench):
    lines = [f"## {title}", "", blurb, ""]
    matrices = sweep.matrices(cls) if sweep else []
    if sweep and matrices:
        if cls == "real":
            matrices = sorted(matrices, key=lambda m: -sweep.any_row(m).get("nnz", 0))
        lines += ["Per matrix, `auto`'s speedup over the best cuSPARSE variant (`auto`'s time, us):", ""]
        lines += per_matrix_table(sweep, matrices) + [sweep.caption(), ""]
    if cls == "synthetic":
        source = bench if bench and bench.matrices("synthetic") else sweep
        if source:
            grids = [m for m in source.matrices("synthetic") if m.split("_")[0] in ("10d0s", "0d10s", "5d5s")]
            widths = [n for n in (8, 128) if n in source.widths] or source.widths
            lines += ["The kernel ladder on the three grids of the thesis's targets, us:", ""]
            lines += ladder(source, grids, widths) + [source.caption(), ""]
    held = heldout.matrices(cls) if heldout else []
    if held:
        lines += ["Held out (outside the sweep; none tuned the kernels or the cost model), the same cells:", ""]
        lines += per_matrix_table(heldout, held) + [heldout.caption(), ""]
    if len(lines) == 4:
        return []
    return lines


def csr_section(sweep, csr):
    lines = section_head("CSR path",
                         "`csr_cuda_cores` (the CUDA-core path `auto` gives bands whose tiles would be nearly empty) "
                         "against cuSPARSE CSR.")
    if sweep and "csr_cuda_cores" in sweep.methods:
        header = ["n", "geo. mean vs CSR fp16", "vs CSR fp32", "at least as fast as both on", "worst", "on"]
        rows = []
        for n in sweep.widths:
            pairs = []
            for m in sweep.matrices():
                own = sweep.ms(m, n, "csr_cuda_cores")
                f16 = divide(sweep.ms(m, n, "cusparse_csr_f16"), own)
                f32 = divide(sweep.ms(m, n, "cusparse_csr_f32"), own)
                if usable(f16) and usable(f32):
                    pairs.append((f16, f32, m))
            if not pairs:
                continue
            worst = min(pairs, key=lambda p: min(p[0], p[1]))
            rows.append([n, factor(geometric_mean(p[0] for p in pairs)), factor(geometric_mean(p[1] for p in pairs)),
                         f"{sum(min(p[0], p[1]) >= 1 for p in pairs)} of {len(pairs)}",
                         factor(min(worst[0], worst[1])), worst[2]])
        lines += [f"On the {len(sweep.matrices())} matrices of the sweep:", ""]
        lines += md_table(header, rows, ["---:", "---:", "---:", "---:", "---:", "---"]) + [sweep.caption(), ""]
    if csr:
        outside = [n for n in csr.widths if not sweep or n not in sweep.widths] or csr.widths
        header = ["matrix"] + [f"n = {n}" for n in outside]
        rows = []
        for m in csr.matrices():
            cells = []
            for n in outside:
                by_method = csr.cell(m, n)
                _, best = best_cusparse({k: v for k, v in by_method.items() if k.startswith("cusparse_csr")})
                own, auto = csr.ms(m, n, "csr_cuda_cores"), csr.ms(m, n, "auto")
                cells.append(f"{us(own)} / {us(best)} ({factor(divide(best, own))}); {us(auto)}"
                             if usable(own) else "–")
            if any(cell != "–" for cell in cells):
                rows.append([m] + cells)
        lines += ["At the widths the sweep does not run, us: `csr_cuda_cores` / the faster cuSPARSE CSR variant "
                  "(speedup); `auto`:", ""]
        lines += md_table(header, rows) + [csr.caption(), ""]
    return lines


def layout_section(sweep, layouts):
    lines = ["## Tile layouts", "",
             "The layout with fewer bytes is chosen (docs/FORMAT.md): the thesis's aligned tiles in file order, or "
             "condensed bands, optionally RCM-reordered. `split_pipelined` on the chosen layout / `split_aligned` "
             f"(the thesis layout, same run), time ratio, where the layouts differ (rows: nnz >= {LARGE_NNZ:,}):", ""]
    in_sweep = set(sweep.table) if sweep else set()
    for data in (sweep, layouts):
        if not data or "split_aligned" not in data.methods:
            continue
        # The layout step's own table lists only what the sweep does not have.
        matrices = data.matrices() if data is sweep else [m for m in data.matrices() if m not in in_sweep]
        ratios = {(m, n): divide(data.ms(m, n, "split_pipelined"), data.ms(m, n, "split_aligned"))
                  for m in matrices for n in data.widths}
        compared = [m for m in matrices if any(usable(ratios[(m, n)]) for n in data.widths)]
        if not compared:
            continue
        widths = [n for n in (8, 128) if n in data.widths] or data.widths
        header = ["matrix", "layout", "stored tiles: thesis -> chosen", "2:4 share: thesis -> chosen"] + \
                 [f"chosen / thesis, n = {n}" for n in widths]
        rows = []
        for m in compared:
            if data.any_row(m).get("nnz", 0) < LARGE_NNZ:
                continue
            n = next(n for n in data.widths if usable(ratios[(m, n)]))
            chosen, thesis = data.cell(m, n)["split_pipelined"], data.cell(m, n)["split_aligned"]
            tiles = f"{thesis['dense_tiles'] + thesis['sparse24_tiles']:,.0f} -> " \
                    f"{chosen['dense_tiles'] + chosen['sparse24_tiles']:,.0f}"
            share = f"{100 * thesis['sparse24_share']:.0f}% -> {100 * chosen['sparse24_share']:.0f}%"
            rows.append([m, chosen["layout"], tiles, share] + [ratio(ratios[(m, n)]) for n in widths])
        measured = [(value, key) for key, value in ratios.items() if usable(value)]
        largest = max(measured)
        means = ", ".join(f"{ratio(geometric_mean(ratios[(m, n)] for m in compared))} (n = {n})" for n in data.widths)
        lines += md_table(header, rows, ["---", "---"] + ["---:"] * (len(header) - 2))
        lines += [data.caption(), "", f"Over all {len(compared)} matrices of this run where the layouts differ, "
                  f"chosen / thesis: geometric mean {means}; largest {ratio(largest[0])} ({largest[1][0]}, "
                  f"n = {largest[1][1]}).", ""]
    return lines if len(lines) > 3 else []


def groups_section(groups):
    if not groups:
        return []
    lines = section_head("Band groups",
                         "At n >= 128 the tile kernel reads each tile's B block from L2; a band group lets 16 "
                         "consecutive bands share each B block (one TMA copy per group and tile column; sm_90, "
                         "aligned layouts, docs/KERNELS.md). Cells: `auto` / grouped (`auto_grouped`) / one band per "
                         "block (`auto_ungrouped`), us, and one band per block / grouped:")
    header = ["matrix"] + [f"n = {n}" for n in groups.widths]
    rows = []
    for m in groups.matrices():
        cells = []
        for n in groups.widths:
            a, g, u = (groups.ms(m, n, k) for k in ("auto", "auto_grouped", "auto_ungrouped"))
            cells.append(f"{us(a)} / {us(g)} / {us(u)} ({factor(divide(u, g), False)})" if usable(g) else "–")
        rows.append([m] + cells)
    return lines + md_table(header, rows) + [groups.caption(), ""]


def read_floor_movement(path):
    """(matrix, n) -> variant -> median us, from floor_movement.csv; the bare reads of A under n = 0."""
    table = {}
    if not path.is_file():
        return table
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            n = int(row["n"]) if row["n"].strip() else 0
            table.setdefault((row["matrix"], n), {})[row["variant"]] = float(row["median_us"])
    return table


def floor_section(floor, movement_path):
    movement = read_floor_movement(movement_path)
    reads = {m: v for (m, n), v in movement.items() if n == 0}
    movement = {key: v for key, v in movement.items() if key[1] != 0}
    if not floor or not movement:
        return []
    lines = section_head("Data-movement floors",
                         "`bench_floor` runs kernels that only move the tile kernel's bytes (A tiles and B blocks "
                         "through the same `cp.async` ring, C at the end; no arithmetic) over a matrix's own tile "
                         "grid, one band per block: the floor of any kernel of this design, and so of the ratios "
                         "between the library's kernels (2:4 against dense tiles; fp32 B against fp16 B). Floors and "
                         "library kernels in us, then the two ratios:")
    header = ["matrix", "n", "launch only", "floor 2:4", "floor dense", "floor fp32 B", "`split_pipelined`",
              "`dense_pipelined`", "`auto`", "`auto_f32b`", "dense / 2:4: floor, library",
              "fp32 B / fp16 B: floor, library"]
    rows = []
    for (m, n), variants in sorted(movement.items(), key=lambda kv: (synthetic_sort_key(kv[0][0])
                                                                      if SYNTHETIC_NAME.match(kv[0][0]) else (9,),
                                                                      kv[0][1])):
        v = {key: variants.get(name, math.nan) / 1000.0 for key, name in FLOOR_VARIANTS.items()}
        lib = {k: floor.ms(m, n, k) for k in ("split_pipelined", "dense_pipelined", "auto", "auto_f32b")}
        rows.append([m, n, us(v["launch"]), us(v["sparse"]), us(v["dense"]), us(v["f32b"])] +
                    [us(lib[k]) for k in lib] +
                    [f"{ratio(divide(v['dense'], v['sparse']))}, "
                     f"{ratio(divide(lib['dense_pipelined'], lib['split_pipelined']))}",
                     f"{ratio(divide(v['f32b'], v['sparse']))}, {ratio(divide(lib['auto_f32b'], lib['auto']))}"])
    lines += md_table(header, rows) + [floor.caption(), ""]
    if reads:
        lines += ["Reading A alone (no tile grid, B or C; a bound for matrices with one tile list), us, 2:4 + dense "
                  "tiles / all tiles dense: " + "; ".join(
                      f"{m} {v.get('A read alone: 2:4 + dense', math.nan):.1f} / "
                      f"{v.get('A read alone: all dense', math.nan):.1f}" for m, v in sorted(reads.items())) + ".", ""]
    return lines


def precision_section(precision):
    if not precision or "auto" not in precision.methods:
        return []
    lines = section_head("Precision modes",
                         "Each mode against the default (fp16 A scaled per row, fp16 B) in the same run "
                         "(docs/PRECISION.md): time / the default's, geometric mean over the matrices measured at "
                         "that n (range in brackets); the last row is cuSPARSE CSR fp32's time / split's.")
    header = ["mode"] + [f"n = {n}" for n in precision.widths]
    rows = []

    def spread(values):
        values = [x for x in values if usable(x)]
        return f"{ratio(geometric_mean(values))} ({min(values):.2f}-{max(values):.2f})" if values else "–"

    for method, label in PRECISION_MODES:
        if method in precision.methods:
            rows.append([label] + [spread(divide(precision.ms(m, n, method), precision.ms(m, n, "auto"))
                                          for m in precision.matrices()) for n in precision.widths])
    if "auto_split" in precision.methods and "cusparse_csr_f32" in precision.methods:
        rows.append(["split vs cuSPARSE CSR fp32"] +
                    [spread(divide(precision.ms(m, n, "cusparse_csr_f32"), precision.ms(m, n, "auto_split"))
                            for m in precision.matrices()) for n in precision.widths])
    lines += md_table(header, rows) + [precision.caption(), ""]
    width = 32 if 32 in precision.widths else precision.widths[0]
    methods = ["auto"] + [m for m, _ in PRECISION_MODES] + ["cusparse_csr_f16", "cusparse_csr_f32"]
    methods = [m for m in methods if m in precision.methods]
    matrices = [m for m in precision.matrices() if precision.cell(m, width)]
    lines += [f"Times at n = {width}, us:", ""]
    rows = [[m] + [us(precision.ms(m, width, k)) for k in methods] for m in matrices]
    lines += md_table(["matrix"] + [f"`{k}`" for k in methods], rows) + [precision.caption(), ""]
    errors = []
    for k in methods:
        values = [by_method[k]["rel_error"] for by_n in precision.table.values() for by_method in by_n.values()
                  if k in by_method and usable(by_method[k]["rel_error"])]
        if values:
            errors.append(f"`{k}` {max(values):.1e}")
    if errors:
        lines += ["Largest relative error against float64: " + ", ".join(errors) + ".", ""]
    return lines


def balance_section(balance):
    if not balance or "split_pipelined_whole" not in balance.methods:
        return []
    lines = section_head("Load balance",
                         "A band much longer than the rest is split over several blocks whose partial sums are added "
                         "in a fixed order (`split_long_bands`); `_whole` runs every band on one block. us, where the "
                         "two differ by more than 2%:")
    rows = []
    for m in balance.matrices():
        for n in balance.widths:
            split, whole = balance.ms(m, n, "split_pipelined"), balance.ms(m, n, "split_pipelined_whole")
            if usable(split) and usable(whole) and abs(whole / split - 1) > 0.02:
                rows.append([m, n, us(split), us(whole), factor(divide(whole, split)), us(balance.ms(m, n, "auto")),
                             us(balance.ms(m, n, "auto_whole"))])
    header = ["matrix", "n", "`split_pipelined`", "`_whole`", "whole / split", "`auto`", "`auto_whole`"]
    return lines + md_table(header, rows) + [balance.caption(), ""]


def generic_section(title, text, path, meta):
    if not path.is_file():
        return []
    header, rows = read_table(path)
    lines = [f"## {title}", "", text, ""] if title else []
    return lines + md_table(header, rows, ["---"] * len(header)) + [meta.caption(), ""]


def cost_model_section():
    return ["## Cost model", "",
            "`auto`'s choice between tiles and the CSR path per band, and the band-group model, are constants fitted "
            "to the runs of the `csr` and `groups` steps (`lib/src/device/cost_model.cpp`); their figures are the "
            "*CSR path* and *Band groups* tables above, and the fits' errors are in *Measured design choices*.", ""]


def measured_plans_section(model):
    """The model step: auto (measured plans) on the structure classes against the best cuSPARSE variant and against
    auto_model (the cost model's plan), per n over the classes, with the time tuning took."""
    matrices = model.matrices() if model else []
    if not matrices:
        return []
    lines = section_head("Measured plans",
                         "`auto` times the cost model's best candidates (`Tuning::measure`). On the `model` step's "
                         "structure classes (`--synth`): best cuSPARSE / `auto` (SpMV at n = 1) and `auto_model` / "
                         "`auto`, geometric mean and lowest; per class: `scripts/fit_cost_model.py`.")

    def summary(values, form):
        values = [(v, m) for v, m in values if usable(v)]
        if not values:
            return ["–", "–"]
        low, where = min(values)
        return [form(geometric_mean(v for v, _ in values)), f"{form(low)} ({where})"]

    rows = []
    for n in model.widths:
        rows.append([n] + summary(((speedup_auto(model, m, n), m) for m in matrices), factor)
                    + summary(((divide(model.ms(m, n, "auto_model"), model.ms(m, n, "auto")), m) for m in matrices),
                              ratio))
    lines += md_table(["n", "cuSPARSE / auto", "lowest", "auto_model / auto", "lowest"], rows,
                      ["---:", "---:", "---", "---:", "---"]) + [model.caption(), ""]
    tuning = sorted(value for m in matrices for n in model.widths
                    for value in [to_number(model.cell(m, n).get("auto", {}).get("tuning_ms"))] if usable(value))
    if tuning:
        lines += [f"Measuring took a median {tuning[len(tuning) // 2]:.1f} ms per plan, at most {tuning[-1]:.1f} ms "
                  f"({len(tuning)} plans).", ""]
    return lines
