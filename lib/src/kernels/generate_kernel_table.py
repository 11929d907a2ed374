#!/usr/bin/env python3
"""The kernel table: every tile-kernel and CSR-kernel instantiation that a plan (lib/src/device/spmm_plan*.cpp) may
choose, and the generator of the translation units that compile it.

The table is declared here once, as the axes a plan chooses along and the rules that say which combinations it can
reach; each rule names the code that makes it so. CMake runs this script when it configures a build (lib/CMakeLists.txt,
again whenever the script changes) and compiles the units it writes into the build tree; nothing generated is
committed. test/test_kernel_table.cpp checks that the compiled table holds every key a plan can form exactly once,
and the CTest `kernel_table_generated` that a build's units are what the table declares now. By hand:

    python3 lib/src/kernels/generate_kernel_table.py --out DIR          # write the units into DIR
    python3 lib/src/kernels/generate_kernel_table.py --out DIR --check  # exit 1 if DIR's units differ
    python3 lib/src/kernels/generate_kernel_table.py --list             # the table, one entry per line
"""

import argparse
import itertools
import pathlib
import sys
from typing import Dict, List, NamedTuple

# --- the axes ------------------------------------------------------------------------------------------------------

# OperandMode (spmm_params.hpp): what A and B hold. SpmmPlan's operand_mode() maps precision x B type to these.
MODES = ["f16", "bf16", "f16_f32b", "bf16_f32b", "split_f32b"]
# C's element type. fp16 C only exists for fp16 A with fp16 B (operand_mode() refuses the others).
OUTPUTS = {"f32": "float", "f16": "__half"}
# Tile kernel (KernelKind): split_pipelined, the one tile kernel. csr_cuda_cores runs no tile kernel; automatic runs
# split_pipelined for its tile bands. (The thesis's all-dense baselines, dense_bt and dense_pipelined, were 64 of
# the table's 172 tile instantiations; they left the library with issue 55: docs/history/KERNELS_LOG.md.)
TILE_KINDS = ["split_pipelined"]
# Output columns per block (slice_width_for).
SLICE_WIDTHS = [8, 16, 32, 64]
# How tiles name their B rows (BRowIndex): by tile column (aligned layouts) or 32 rows each (gathered layouts).
B_ROWS = ["implicit", "full"]
# Whether the schedule splits long bands over blocks (PlanOptions::split_long_bands and the tile schedule).
SPLIT_BANDS = [False, True]
# TilePipeline, as the plan resolves it (tile_pipeline_for): standard, or deep where deep is a kernel of its own.
PIPELINES = ["standard", "deep"]


def tile_kernel_reachable(kind: str, mode: str, width: int, pipeline: str, output: str) -> bool:
    """Whether a plan can ask for this tile kernel (every B-row index and split-band variant is reachable)."""
    if kind != "split_pipelined":
        return False
    # slice_width_for: split mode runs slices of at most 32 columns (its three products need ~200 registers at 64).
    if mode == "split_f32b" and width > 32:
        return False
    # operand_mode(): fp16 C only with fp16 A and fp16 B.
    if output == "f16" and mode != "f16":
        return False
    # tile_pipeline_for returns standard unless deep has more stages (deep_pipelined_stages): fp16 or bf16 A with
    # fp32 B at 32 and 64 columns, on split_pipelined. tile_kernel_entry static_asserts that each deep entry is a
    # kernel of its own, and the generated kernel_table_parts.cpp that no other (mode, width) has one.
    if pipeline == "deep":
        return kind == "split_pipelined" and mode in ("f16_f32b", "bf16_f32b") and width in (32, 64)
    return True


# CSR kernel (csr_params.hpp, csr_shape_for): 8-column chunks per row and pass 1..32 (n up to 8 x chunks per pass),
# nz_lanes threads per chunk sharing a short row's entries (chunks x nz_lanes <= 32, from the rows, their mean length
# and the SMs), and how B is read: 16-byte chunks (n >= 8), element by element (n < 8: one chunk), or the one column
# of n = 1. Every operand mode and output type that the tiles have.
CSR_READS = ["chunk", "scalar", "one_column"]
CSR_CHUNKS = [1, 2, 4, 8, 16, 32]
CSR_LANES = [1, 2, 4, 8, 16, 32]


def csr_kernel_reachable(mode: str, output: str, read: str, chunks: int, nz_lanes: int) -> bool:
    if output == "f16" and mode != "f16":
        return False  # operand_mode(), as for the tiles
    if read != "chunk" and chunks != 1:
        return False  # csr_shape_for: n < 8 needs one chunk
    return chunks * nz_lanes <= 32  # csr_shape_for caps nz_lanes at 32 / chunks: a row group lies in one warp


# --- how the table is compiled -------------------------------------------------------------------------------------

# Translation units per kernel; entries are spread over them by estimated compile time (longest first, each to
# the unit with the least so far), so that a parallel build does not wait on one large unit (the CSR kernel's 198
# instantiations in one unit took ~55 s of a 16-core build). Each unit also costs ~1.5 s of headers and host
# compilation, which a 2-core build pays in full: units of ~8 s each (nvcc 13, sm_90) balance the two. The 108 tile
# entries take six units of about the cost the 172 of the thesis's ladder took in eight.
TILE_UNITS = 6
CSR_UNITS = 6


class TileEntry(NamedTuple):
    kind: str
    mode: str
    width: int
    pipeline: str
    output: str
    b_rows: str
    split_bands: bool

    def cost(self) -> float:
        # Relative compile time, from ptxas -v times and per-unit build times of nvcc 13 for sm_90: the split-band
        # epilogue about doubles a kernel, fp32 B adds its conversion, 64 columns unroll twice as far.
        c = 1.0 + (1.0 if self.split_bands else 0.0)
        c += 0.5 if self.mode != "f16" else 0.0
        c += 1.0 if self.mode in ("f16_f32b", "bf16_f32b") else 0.0
        c += 0.5 if self.width == 64 else 0.0
        return c

    def cxx(self) -> str:
        return (f"tile_kernel_entry<KernelKind::{self.kind}, OperandMode::{self.mode}, {self.width}, "
                f"TilePipeline::{self.pipeline}, {OUTPUTS[self.output]}, BRowIndex::{self.b_rows}, "
                f"{'true' if self.split_bands else 'false'}>()")

    def name(self) -> str:
        return (f"{self.kind} {self.mode} w{self.width} {self.pipeline} C={self.output} B-rows={self.b_rows}"
                f"{' split-bands' if self.split_bands else ''}")


class CsrEntry(NamedTuple):
    mode: str
    output: str
    read: str
    chunks: int
    nz_lanes: int

    def cost(self) -> float:
        return 0.5 if self.read == "one_column" else 1.0

    def cxx(self) -> str:
        return (f"csr::csr_kernel_entry<OperandMode::{self.mode}, {OUTPUTS[self.output]}, {self.chunks}, "
                f"{self.nz_lanes}, csr::BRead::{self.read}>()")

    def name(self) -> str:
        return f"csr {self.mode} C={self.output} {self.read} chunks={self.chunks} nz_lanes={self.nz_lanes}"


def tile_entries() -> List[TileEntry]:
    out = []
    for kind, mode, width, pipeline, output in itertools.product(TILE_KINDS, MODES, SLICE_WIDTHS, PIPELINES, OUTPUTS):
        if not tile_kernel_reachable(kind, mode, width, pipeline, output):
            continue
        for b_rows, split in itertools.product(B_ROWS, SPLIT_BANDS):
            out.append(TileEntry(kind, mode, width, pipeline, output, b_rows, split))
    return out


def csr_entries() -> List[CsrEntry]:
    out = []
    for mode, output, read, chunks, lanes in itertools.product(MODES, OUTPUTS, CSR_READS, CSR_CHUNKS, CSR_LANES):
        if csr_kernel_reachable(mode, output, read, chunks, lanes):
            out.append(CsrEntry(mode, output, read, chunks, lanes))
    return out


def balance(entries, units: int):
    """Entries spread over `units` lists of about equal cost (longest first to the least loaded), each list then
    in table order so that a unit reads like a slice of the table."""
    order = {e: i for i, e in enumerate(entries)}
    bins = [[] for _ in range(units)]
    load = [0.0] * units
    for e in sorted(entries, key=lambda e: (-e.cost(), order[e])):
        u = min(range(units), key=lambda i: (load[i], i))
        bins[u].append(e)
        load[u] += e.cost()
    return [sorted(b, key=lambda e: order[e]) for b in bins if b]


BANNER = ("// Generated by lib/src/kernels/generate_kernel_table.py from its table when CMake configures the build;\n"
          "// do not edit. Change the table there: the next build writes this file again.\n")


def unit_source(what: str, header: str, entry_type: str, array: str, part: int, parts: int, entries) -> str:
    lines = [BANNER, f"// {what}, part {part + 1} of {parts}: {len(entries)} instantiations.\n",
             f'#include "{header}"\n', "\nnamespace bcsr24::kernels::generated {\n\n",
             f"extern const {entry_type} {array}[{len(entries)}] = {{\n"]
    for e in entries:
        lines.append(f"    // {e.name()}\n    {e.cxx()},\n")
    lines.append("};\n\n}  // namespace bcsr24::kernels::generated\n")
    return "".join(lines)


def check_units(entries, units) -> None:
    """Every entry of the table is compiled in exactly one unit, and no two entries instantiate the same kernel."""
    compiled = [e.cxx() for unit in units for e in unit]
    if len(set(e.cxx() for e in entries)) != len(entries):
        raise SystemExit("kernel table: two entries instantiate the same kernel")
    if sorted(compiled) != sorted(e.cxx() for e in entries):
        raise SystemExit("kernel table: the units do not compile each entry exactly once")


def generate() -> Dict[str, str]:
    files: Dict[str, str] = {}
    tiles, csrs = tile_entries(), csr_entries()
    tile_units, csr_units = balance(tiles, TILE_UNITS), balance(csrs, CSR_UNITS)
    check_units(tiles, tile_units)
    check_units(csrs, csr_units)
    tile_arrays, csr_arrays = [], []
    for i, unit in enumerate(tile_units):
        array = f"kTileKernels{i:02d}"
        files[f"tile_kernels_{i:02d}.cu"] = unit_source("Tile-kernel instantiations", "kernels/tile_kernel_entry.cuh",
                                                        "TileKernel", array, i, len(tile_units), unit)
        tile_arrays.append((array, len(unit)))
    for i, unit in enumerate(csr_units):
        array = f"kCsrKernels{i:02d}"
        files[f"csr_kernels_{i:02d}.cu"] = unit_source("CSR-kernel instantiations", "kernels/csr_kernel.cuh",
                                                       "CsrKernel", array, i, len(csr_units), unit)
        csr_arrays.append((array, len(unit)))

    parts = [BANNER, f"// The parts of the kernel table: {len(tiles)} tile-kernel and {len(csrs)} CSR-kernel "
             "instantiations.\n",
             '#include "kernels/kernel_table.hpp"\n#include "kernels/tile_geometry.hpp"\n',
             "\nnamespace bcsr24::kernels {\n\nnamespace generated {\n"]
    for array, n in tile_arrays:
        parts.append(f"extern const TileKernel {array}[{n}];\n")
    for array, n in csr_arrays:
        parts.append(f"extern const CsrKernel {array}[{n}];\n")
    parts.append("}  // namespace generated\n\n")
    parts.append("// The table declares a deep pipeline exactly where it has more stages than the standard one.\n")
    for mode, width in itertools.product(MODES, SLICE_WIDTHS):
        if not tile_kernel_reachable("split_pipelined", mode, width, "standard", "f32"):
            continue
        deep = tile_kernel_reachable("split_pipelined", mode, width, "deep", "f32")
        op = "!=" if deep else "=="
        parts.append(f"static_assert(tile_stages<{width}, OperandMode::{mode}, true>() {op} "
                     f"tile_stages<{width}, OperandMode::{mode}, false>(),\n"
                     f"              \"{mode} at {width} columns: deep pipeline "
                     f"{'declared but not deeper' if deep else 'deeper but not declared'}\");\n")
    parts.append("\nnamespace {\n\nconstexpr KernelTablePart<TileKernel> kTileParts[] = {\n")
    for array, n in tile_arrays:
        parts.append(f"    {{generated::{array}, {n}}},\n")
    parts.append("};\nconstexpr KernelTablePart<CsrKernel> kCsrParts[] = {\n")
    for array, n in csr_arrays:
        parts.append(f"    {{generated::{array}, {n}}},\n")
    parts.append("};\n\n}  // namespace\n\n")
    parts.append("const KernelTable& kernel_table() noexcept {\n"
                 "  static constexpr KernelTable kTable{kTileParts, std::size(kTileParts), kCsrParts, "
                 "std::size(kCsrParts)};\n  return kTable;\n}\n\n}  // namespace bcsr24::kernels\n")
    files["kernel_table_parts.cpp"] = "".join(parts).replace(
        '#include "kernels/kernel_table.hpp"\n', '#include <iterator>\n\n#include "kernels/kernel_table.hpp"\n', 1)

    cmake = ["# Generated by lib/src/kernels/generate_kernel_table.py: the translation units of the kernel table.\n",
             "set(BCSR24_KERNEL_TABLE_SOURCES\n"]
    for name in sorted(files):
        cmake.append(f"  ${{CMAKE_CURRENT_LIST_DIR}}/{name}\n")
    cmake.append(")\n")
    files["sources.cmake"] = "".join(cmake)
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path,
                        help="folder of the generated files (a build's BUILD/lib/kernels_generated)")
    parser.add_argument("--check", action="store_true", help="compare with the files in --out; change nothing")
    parser.add_argument("--list", action="store_true", help="print the table, one entry per line")
    args = parser.parse_args()
    if args.list:
        for e in tile_entries() + csr_entries():
            print(e.name())
        print(f"{len(tile_entries())} tile-kernel and {len(csr_entries())} CSR-kernel instantiations",
              file=sys.stderr)
        return 0
    if args.out is None:
        parser.error("--out DIR is needed to write or check the generated files")
    files = generate()
    if args.check:
        stale = [n for n, text in files.items()
                 if not (args.out / n).is_file() or (args.out / n).read_text() != text]
        extra = sorted(p.name for p in args.out.glob("*") if p.name not in files) if args.out.is_dir() else []
        for n in stale:
            print(f"kernel table: {args.out / n} differs from what the generator writes", file=sys.stderr)
        for n in extra:
            print(f"kernel table: {args.out / n} is not a generated file", file=sys.stderr)
        if stale or extra:
            print("kernel table: configure the build again (cmake BUILD_DIR) to write them", file=sys.stderr)
            return 1
        print(f"kernel table: {len(files)} generated files up to date")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for n, text in files.items():
        path = args.out / n
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
    for p in args.out.glob("*"):
        if p.name not in files:
            p.unlink()
    print(f"kernel table: {len(tile_entries())} tile-kernel and {len(csr_entries())} CSR-kernel instantiations "
          f"in {len(files)} files under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
