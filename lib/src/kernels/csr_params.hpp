// Arguments of the CUDA-core CSR kernel (the part of a plan that tiles do not suit): plain pointers and sizes.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "device/plan_choices.hpp"
#include "kernels/output_addends.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels {

/// Output columns one pass of the CSR kernel covers: 32 chunks of 8 (one 16-byte B load per thread and chunk).
inline constexpr int kCsrPassColumns = 256;
/// Threads per block of the CSR kernel; a long row takes one or more whole blocks.
inline constexpr int kCsrBlockThreads = 256;

/// One block of a long row: the row's slot, the share of the pass's 8-column chunks it covers and the share of
/// the row's entries it sums. A row too long for the blocks its chunks allow (one block at n <= 8: a single chunk)
/// is split by entries as well: each part stores its sums in a part slot and counts itself on its split row's
/// counter; the part that counts last adds the parts in part order and writes C (the same bits every run, no float
/// atomics, no second launch).
struct CsrLongBlock {
  std::int32_t slot = 0;
  std::int16_t first_chunk = 0;
  std::int16_t chunks = 1;  // a power of two, at most the shape's chunks
  std::int32_t entry_begin = 0, entry_end = 0;  // the entries it sums, relative to the row's first
  std::int32_t part_slot = -1;  // split by entries: where its sums go (kCsrPassColumns floats per slot and pass)
  std::int32_t split_row = -1;  // split by entries: its share's CsrSplitRow, whose counter it counts on
};
static_assert(sizeof(CsrLongBlock) == 24, "CsrLongBlock: the layout the kernel reads");

/// n = 1: a run of consecutive short slots of the copy that one block sums together (csr_kernel.cuh,
/// short_row_tile). Its entries lie in one window of kCsrTileEntries entries that starts at a multiple of 4
/// (entry_begin rounded down), and it has at most kCsrBlockThreads slots. The window is loaded by the whole block in
/// quads, so the loads are coalesced whatever the rows' lengths, and no lane idles on a short row.
struct CsrShortTile {
  std::int32_t slot_begin = 0;   // slots [slot_begin, slot_begin + slots)
  std::int32_t entry_begin = 0;  // their entries: [entry_begin, entry_begin + entries) of the copy
  std::int32_t row_base = -1;    // >= 0: slot slot_begin + i writes C row row_base + i; -1: out_row says
  std::uint16_t slots = 0, entries = 0;
};
static_assert(sizeof(CsrShortTile) == 16, "CsrShortTile: the layout the kernel reads");
/// Entries of a short-row tile's window: a quad per thread. Against two entries per thread (loaded one by one),
/// four measured 139.7 against 140.6 us on power_law:1000000, 9.6 against 11.1 on Andrews (run 87); loading them as
/// quads took power_law from 138.0 to 133.5 us in a stand-alone probe (docs/KERNELS.md, "Short-row tiles at n = 1").
inline constexpr int kCsrTileEntries = 4 * kCsrBlockThreads;
/// Longest row a short-row tile takes: longer rows get a warp (medium) or blocks (long) as at other widths.
inline constexpr int kCsrTileRowMax = 128;
/// A tile slot's word (CsrSpmmParams::tile_slot_words): its first entry counted from the tile's window (11 bits,
/// 0 .. kCsrTileEntries), its length (8 bits, 0 .. kCsrTileRowMax) and its C row's exponent (the high 13 bits, signed;
/// row exponents lie within +-1,100). One 4-byte load per slot where the groups load 14 bytes in four loads.
constexpr std::uint32_t csr_tile_slot_word(std::int32_t first, std::int32_t length, std::int32_t exponent) {
  return std::uint32_t(first) | std::uint32_t(length) << 11 | std::uint32_t(exponent) << 19;
}
constexpr int csr_tile_slot_first(std::uint32_t word) { return int(word & 0x7ffu); }
constexpr int csr_tile_slot_length(std::uint32_t word) { return int(word >> 11 & 0xffu); }
constexpr int csr_tile_slot_exponent(std::uint32_t word) { return static_cast<std::int32_t>(word) >> 19; }
inline constexpr int kCsrTileMaxExponent = (1 << 12) - 1;
static_assert(kCsrTileEntries < (1 << 11) && kCsrTileRowMax < (1 << 8), "a tile slot's word fields");
static_assert(csr_tile_slot_exponent(csr_tile_slot_word(1024, 128, -kCsrTileMaxExponent)) == -kCsrTileMaxExponent &&
                  csr_tile_slot_first(csr_tile_slot_word(1024, 128, -1)) == 1024 &&
                  csr_tile_slot_length(csr_tile_slot_word(1024, 128, -1)) == 128,
              "a tile slot's word round trip");
/// Tiles are chosen where at least this share of a row's consecutive entries read B rows in different 32-row
/// blocks (DeviceBandCsr::scattered_pairs): there each B read is a sector of its own and the tile's coalesced
/// entry loads pay for its extra step; where B reads cluster (a band, a stencil after RCM) they hit the L1 cache and
/// the groups' shorter chain is faster (run 87: block_diagonal 28.7 us with groups, 33.2 with tiles; circuit 25.5
/// and 27.0; a 27-point mesh 45.5 and 54.9; power_law 144.5 and 139.7, Andrews 10.2 and 9.6).
inline constexpr double kCsrTileMinScattered = 0.5;

/// Short rows go two to a group (CsrSpmmParams::short_pairs) where the groups have at least kCsrPairMinChunks
/// chunks (n > 16), the short rows have at most kCsrPairMaxLaneEntries entries per lane on average (a pair fills
/// one or two rounds of 4 loads), and their groups fill the device at least once (kCsrChunkBlocksPerSm blocks per
/// SM): pairs halve the groups, which pays only where they queue. Measured with pairs forced on and off (run 22,
/// H200, auto_csr, 2026-11-29): n = 128, short_rows:46500 with 1-3 entries a row 0.87-0.89x the time, circuit:1600000
/// 0.83x, short_rows:2000000 0.79x, arrowhead:46500 0.93x; n = 32 0.85-0.96x (arrowhead 1.03x). Slower where
/// excluded: every matrix at n = 8 (1.0-1.27x: fewer threads than the device holds, or bandwidth-bound already),
/// rows of 8 entries and more (Andrews 1.34-1.42x, power_law 1.12-1.19x).
inline constexpr int kCsrPairMinChunks = 4;
inline constexpr double kCsrPairMaxLaneEntries = 3.0;
/// Short rows without a list go in runs of consecutive rows per group (CsrSpmmParams::short_run_rows) where the
/// launch would otherwise hold kCsrRunMinWaves times the groups the device keeps resident: a run of R rows saves
/// the groups R - 1 chains of dependent loads but makes R times fewer of them, so it pays only where they queue.
/// R is what keeps that many waves, at most kCsrRunMaxRows and the group's lanes (a run's slots and entry ranges
/// come in one load each, a lane per row). Only at kCsrRunMinChunks chunks or more and where the
/// short rows average at most kCsrRunMaxLaneEntries entries a lane (what the run saves is a row's first round).
/// Run 26-27 (H200, auto_csr, runs against none, 2026-11-29): n = 128 least_squares:72000 0.78x, circuit:1600000
/// 0.83x, short_rows:2000000 0.97x (against pairs); n = 256 0.69x, 0.75x, 0.89x. At n = 32 pairs won on
/// short_rows:2000000 (runs 1.09x) and power_law (1.07x), and Andrews (rows of 12.7, one lane) lost 4-7% at n =
/// 128 and 256.
inline constexpr double kCsrRunMinWaves = 2.0;
inline constexpr int kCsrRunMaxRows = 8;
inline constexpr int kCsrRunMinChunks = 8;
inline constexpr double kCsrRunMaxLaneEntries = 8.0;
/// Blocks per SM the 16-byte-chunk CSR kernels' registers allow (csr_kernel.cuh, kMinBlocksPerSm).
inline constexpr int kCsrChunkBlocksPerSm = 4;

/// A long row's share of chunks split by entries: its parts' slots are first_part_slot .. + parts - 1.
struct CsrSplitRow {
  std::int32_t first_part_slot = 0;
  std::int32_t parts = 0;
};

struct CsrSpmmParams {
  const std::int32_t* row_ptr = nullptr;    // per slot, + 1
  const std::int32_t* b_row = nullptr;      // per entry: row of B
  const std::uint16_t* values = nullptr;    // per entry: fp16 or bf16 bits
  const std::uint16_t* values_lo = nullptr; // split precision: per entry, the low part (x 2^kSplitLoShift)
  const std::int32_t* out_row = nullptr;    // per slot: row of C, -1 = padding
  const CsrLongBlock* long_blocks = nullptr; // long rows: one or more blocks each
  const std::int32_t* medium_slots = nullptr;// slots that get a warp each
  const std::int32_t* short_slots = nullptr;// slots that share a warp; null: slots 0 .. short_count - 1 (below)
  std::int32_t long_count = 0;              // entries of long_blocks
  std::int32_t medium_count = 0;
  std::int32_t short_count = 0;
  // Short rows without a list (short_slots null, every slot of the CSR copy in the plan): a group takes slot
  // `item` itself and skips it unless it has short_min_entries .. short_max entries (longer ones are a medium
  // warp's or a long block's; 1 skips empty rows where the run leaves them as they are). Saves the list's 4 bytes
  // per row and one dependent load before a row's entries.
  std::int32_t short_min_entries = 0, short_max_entries = 0;
  // n >= 8 (16-byte chunks): 1 = a group takes two short rows, items 2g and 2g + 1, as one stream of entries
  // (csr_kernel.cuh, short_row_pair); the launch has half the groups.
  std::int32_t short_pairs = 0;
  // n >= 8 (16-byte chunks): > 1 = a group takes this many short rows, items g * short_run_rows on, one after the
  // other (csr_kernel.cuh, short_row_run); at most the group's lanes.
  std::int32_t short_run_rows = 0;
  // n = 1: the short rows in tiles of consecutive slots (short_slots and the group fields unused; short_count
  // tiles). With short_min_entries 1 a tile leaves its empty rows' C as it is.
  const CsrShortTile* short_tiles = nullptr;
  const std::uint32_t* tile_slot_words = nullptr;  // tiles: per slot of the copy, csr_tile_slot_word (0 elsewhere)
  std::int32_t k = 0;                       // rows of B
  std::int32_t n = 0;
  const std::uint16_t* b = nullptr;         // 16-byte aligned, ldb % 8 == 0 (any, when the shape's scalar_b)
  const float* b_f32 = nullptr;             // fp32-B modes: 16-byte aligned, ldb % 4 == 0 (any, when scalar_b)
  std::int64_t ldb = 0;
  void* c = nullptr;                        // float or fp16 bits
  std::int64_t ldc = 0;
  float alpha = 1.0f;                       // already multiplied by 2^scale_exponent
  float beta = 0.0f;
  OutputAddends addends;                    // added to every C element written
  const std::int16_t* slot_exponent = nullptr;  // per slot: the sum is multiplied by 2^e (its C row's); null = none
  // Long rows split by entries (CsrLongBlock::part_slot >= 0): the part slots' sums (per slot and pass
  // kCsrPassColumns floats), the split rows' parts, and their counters (per split row and pass, zero between runs:
  // the part that counts last resets its counter).
  float* long_partials = nullptr;
  const CsrSplitRow* split_rows = nullptr;
  unsigned* split_counters = nullptr;
};

/// Launch shape of the CSR kernel, fixed by the plan.
struct CsrShape {
  int chunks = 1;    // 8-column chunks per row and pass: 1, 2, 4, 8, 16 or 32 (covers n up to 8 * chunks)
  int nz_lanes = 1;  // threads that split a short row's entries (chunks * nz_lanes <= 32)
  bool scalar_b = false;  // n < 8: B read element by element (any alignment and ldb), no 16-byte loads
  bool one_column = false;  // n == 1: one accumulator per thread (with scalar_b)
};

/// The chunks per pass and how B is read for n columns, one lane per row (what the cost model needs of a shape).
CsrShape csr_column_shape(std::int32_t n);
/// The shape for n columns and `rows` rows of `mean_row_nnz` entries on average, on a device of `multiprocessors`
/// SMs.
CsrShape csr_shape_for(std::int32_t n, double mean_row_nnz, std::int64_t rows, int multiprocessors);
/// Which rows are short (a group of chunks x nz_lanes threads), medium (a warp each) or long (one or more blocks
/// each, csr_long_row_blocks):
/// a row goes to the smallest unit that finishes it in a few rounds of loads, so no row is the launch's tail.
struct CsrRowClasses {
  std::int32_t short_max = 0;   // rows of up to this many entries are short
  std::int32_t medium_max = 0;  // up to this, medium; longer rows are long
};
CsrRowClasses csr_row_classes(const CsrShape& shape, double mean_row_nnz);
/// Blocks a long row of `entries` gets at `chunks` chunks per pass (a power of two dividing chunks): each block
/// covers chunks / blocks of the chunks, so that no thread needs more than a few rounds of loads where the
/// chunks allow it.
int csr_long_row_blocks(int chunks, std::int64_t entries);
/// Parts a long row of `entries` is split into by entries, where each of its blocks covers `block_chunks` chunks
/// (1: not split; a row is split past 4 times what a block sums in a few rounds of loads): parts of one round each,
/// up to kCsrSplitParts of them, longer parts beyond, at most kCsrMaxRowParts parts.
int csr_long_row_parts(int block_chunks, std::int64_t entries);
inline constexpr int kCsrMaxRowParts = 1024;
/// A row split by entries at kCsrSplitRowCapChunks chunks or more keeps at least kCsrSplitRowMinChunks chunks per
/// block (csr_long_row_blocks).
inline constexpr int kCsrSplitRowCapChunks = 16;
inline constexpr int kCsrSplitRowMinChunks = 4;
/// Parts of one round each a split row gets at most; longer rows get longer parts (csr_long_row_parts).
inline constexpr int kCsrSplitParts = 64;

/// The kernel of a shape, operand mode and output type is an entry of the kernel table (kernel_table.hpp, which
/// also launches it).

}  // namespace bcsr24::kernels
