// The CUDA-core CSR SpMM kernel template: fp16 A and B, fp32 accumulation, any n (docs/KERNELS.md, "CUDA-core
// path"). Its instantiations are listed in the kernel table (kernel_table.hpp); csr_spmm.cu launches them.
//
// Row-major B makes a row of B the natural unit: a thread owns one chunk of 8 output columns and reads the
// matching 16 bytes of each B row its entries name, so a B row is read by consecutive threads in full
// 16-byte pieces. A short row is handled by a group of chunks x nz_lanes threads inside one warp: the
// nz_lanes threads of a chunk split the row's entries and are summed by shuffles in a fixed order. A medium
// row gets a whole warp the same way; a long row gets a whole block (8 warps), summed across warps through
// shared memory in a fixed order. All three kinds run in one launch (the first blocks take the long rows, which
// are the tail otherwise); results are bit-identical run to run. Every slot writes its whole row of C, so an
// empty row still gets beta * C. A row that would take more than a few rounds of loads even on a block (thousands
// of entries at wide n) gets several blocks, each on a share of the pass's 8-column chunks with proportionally more
// lanes per chunk. A row still too long for those (a full row at n <= 8) is split by entries into parts of a block
// each; the part that finishes last, as a counter tells, adds the parts in a fixed order.
// With fewer than 8 columns B is read element by element, in whatever alignment and leading dimension it has;
// n = 1 (SpMV) has its own instantiation with one accumulator per thread, whose smaller register need lets
// twice as many threads keep loads in flight.
//
// Operand modes: A's values are fp16, bf16 or (split) fp16 hi + 2^-11 lo, widened to fp32 as they are read;
// fp32 B is read as it is (two 16-byte loads per chunk), so CUDA cores multiply it without any rounding of B.
#pragma once

#include <cstdint>

#include "kernels/csr_params.hpp"
#include "kernels/csr_thread_loads.cuh"
#include "kernels/epilogue.cuh"
#include "kernels/kernel_table.hpp"
#include "kernels/part_counter.cuh"

namespace bcsr24::kernels::csr {

/// Part slot `slot`'s sums of 8-column chunk `chunk` in this pass (blockIdx.y of gridDim.y): kCsrPassColumns floats
/// per slot and pass, a chunk's 8 (or 1, one column) at 8 * chunk. 32-bit offsets: the plan refuses part slots
/// times passes times kCsrPassColumns past 2^32 (build_csr_part).
__device__ __forceinline__ float* csr_part_sums(const CsrSpmmParams& p, std::int32_t slot, int chunk) {
  return p.long_partials + ((unsigned(slot) * gridDim.y + blockIdx.y) * kCsrPassColumns + unsigned(chunk) * 8);
}

/// C[row, col0 .. col0 + kCols - 1] = alpha * acc (+ addends) + beta * C, columns >= n skipped. A full, 16-byte
/// aligned chunk of 8 is read and written with vector accesses (the common case: n % 8 == 0 and ldc % 4 == 0).
/// `exponent`: the slot's row exponent (per-row scaling), loaded by the caller together with the row.
///
/// The scale step is the CSR kernel's own: a branch on the plan's row scaling (uniform over the launch), then
/// 2^exponent, then alpha. With epilogue.cuh's per-row multiplier (alpha * 2^e formed and checked per row, a
/// data-dependent branch) the one-column kernel ran 6-8% slower at n = 1 on a 14.8M-entry mesh (34.4 against
/// 37.1 us, H200, 2026-11-28: same registers and loads, 26 more branches in its SASS; forming the multiplier
/// earlier or calling ldexpf out of line did not help). The rest of the epilogue is the shared one.
template <typename OutT, int kCols>
__device__ __forceinline__ void write_row_chunk(const CsrSpmmParams& p, std::int32_t row, int exponent, int col0,
                                                float (&acc)[kCols]) {
  OutT* c = static_cast<OutT*>(p.c) + std::size_t(row) * p.ldc + col0;
  if (p.slot_exponent) {
#pragma unroll
    for (int e = 0; e < kCols; ++e) acc[e] = scale_by_power_of_two(acc[e], exponent);
  }
#pragma unroll
  for (int e = 0; e < kCols; ++e) acc[e] *= p.alpha;
  const OutputRun run{row, col0, p.alpha, 0, kCols == 8 && reinterpret_cast<std::uintptr_t>(c) % 16 == 0};
  store_output_run<kCols>(c, run, p.n, p.beta, p.addends, acc);
}

/// The last step of a part of a row split by entries, run by warp 0 of the part's block after its lanes < chunks
/// stored the part's sums: the part counts itself on its split row's counter, and the part that counts last adds
/// all parts' sums in a fixed order (lane l the parts l, l + 32, ..., then a fixed shuffle tree) and writes C, so
/// every run gives the same bits whichever part finishes last. It resets the counter for the next run.
template <typename OutT, int kCols>
__device__ __forceinline__ void finish_split_row(const CsrSpmmParams& p, const CsrLongBlock& item, int pass_col0,
                                                 int lane) {
  const CsrSplitRow split = p.split_rows[item.split_row];
  if (!warp_part_is_last(p.split_counters + unsigned(item.split_row) * gridDim.y + blockIdx.y, split.parts, lane))
    return;
  const std::int32_t row = p.out_row[item.slot];
  const int exponent = p.slot_exponent ? p.slot_exponent[item.slot] : 0;
  for (int c = 0; c < item.chunks; ++c) {
    const int col0 = pass_col0 + (item.first_chunk + c) * 8;
    if (col0 >= p.n) break;
    // Lane l adds parts l, l + 32, ... in order, kInFlight of them loaded at once: a row of hundreds of parts
    // costs a few L2 latencies, not one per 32 parts.
    constexpr int kInFlight = kCols == 1 ? 8 : 2;
    float acc[kCols] = {};
    for (std::int32_t q0 = lane; q0 < split.parts; q0 += kWarp * kInFlight) {
      float v[kInFlight][kCols];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const std::int32_t q = q0 + u * kWarp;
        const float* sums = csr_part_sums(p, split.first_part_slot + (q < split.parts ? q : 0), item.first_chunk + c);
#pragma unroll
        for (int e = 0; e < kCols; ++e) v[u][e] = q < split.parts ? __ldcg(sums + e) : 0.0f;  // L2: other SMs' writes
      }
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
#pragma unroll
        for (int e = 0; e < kCols; ++e) acc[e] += v[u][e];
    }
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset >>= 1)
#pragma unroll
      for (int e = 0; e < kCols; ++e) acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], offset);
    if (lane == 0 && row >= 0) write_row_chunk<OutT, kCols>(p, row, exponent, col0, acc);
  }
}

/// One long row's block: `item.chunks` chunks of 8 columns (at most kMaxChunks) from chunk `item.first_chunk`
/// of the pass on, each split over the block's 256 / item.chunks lanes, summed across warps through shared
/// memory in a fixed order; entries item.entry_begin .. entry_end of the row. A part of a row split by entries
/// (item.part_slot >= 0) stores its sums in its part slot; the part that finishes last adds them and writes C
/// (finish_split_row).
template <OperandMode kMode, int kMaxChunks, BRead kRead, typename OutT>
__device__ __forceinline__ void long_row(const CsrSpmmParams& p, int pass_col0) {
  constexpr int kCols = kThreadCols<kRead>;
  __shared__ float partial[kBlockWarps][kMaxChunks][kCols];
  // The block's item (block x of the launch is long-row block x) in shared memory: its fields are read where they
  // are used, from a fixed address, instead of living in registers through the row's loop (the one-column kernels
  // have 32; holding the item's new fields there made them spill on sm_80).
  __shared__ CsrLongBlock item;
  if (threadIdx.x == 0) item = p.long_blocks[blockIdx.x];
  __syncthreads();
  const int chunks = item.chunks;  // a power of two
  const int warp_nz_lanes = kWarp / chunks;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int chunk = lane & (chunks - 1);
  const int nz_lane = warp * warp_nz_lanes + lane / chunks;
  const int col0 = pass_col0 + (item.first_chunk + chunk) * 8;
  float acc[kCols] = {};
  if (col0 < p.n) {
    const std::int32_t row_first = p.row_ptr[item.slot];
    accumulate_entries<kMode, kRead>(p, b_matrix<kMode>(p) + col0, p.n - col0, row_first + item.entry_begin + nz_lane,
                                     row_first + item.entry_end, kBlockWarps * warp_nz_lanes, acc);
  }
  for (int offset = chunks; offset < kWarp; offset <<= 1)
#pragma unroll
    for (int e = 0; e < kCols; ++e) acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], offset);
  if (lane < chunks)
#pragma unroll
    for (int e = 0; e < kCols; ++e) partial[warp][chunk][e] = acc[e];
  __syncthreads();
  if (warp != 0) return;
  if (lane < chunks) {
#pragma unroll
    for (int e = 0; e < kCols; ++e) {
      float sum = 0.0f;
      for (int w = 0; w < kBlockWarps; ++w) sum += partial[w][chunk][e];
      acc[e] = sum;
    }
  }
  if (item.part_slot >= 0) {
    if (lane < chunks) {
      float* const sums = csr_part_sums(p, item.part_slot, item.first_chunk + chunk);
#pragma unroll
      for (int e = 0; e < kCols; ++e) sums[e] = acc[e];
    }
    finish_split_row<OutT, kCols>(p, item, pass_col0, lane);
    return;
  }
  if (lane < chunks) {
    // The row and its exponent: two independent loads (the exponent is stored per slot, not per row).
    const std::int32_t row = p.out_row[item.slot];
    const int exponent = p.slot_exponent ? p.slot_exponent[item.slot] : 0;
    if (row >= 0 && col0 < p.n) write_row_chunk<OutT, kCols>(p, row, exponent, col0, acc);
  }
}

/// A short-row group's thread: kChunks x kNzLanes threads of one warp, kCsrBlockThreads / that many groups a block.
template <int kChunks, int kNzLanes>
struct RowGroupThread {
  static constexpr int kSize = kChunks * kNzLanes;
  static_assert(kSize <= kWarp && kWarp % kSize == 0, "a row group lies inside one warp");
  int chunk, nz_lane;
  int in_group;         // chunk + nz_lane * kChunks
  unsigned mask;        // the group's lanes
  std::int64_t group;   // the group's place in the launch's short rows
  __device__ __forceinline__ explicit RowGroupThread(std::int32_t block) {
    const int lane = threadIdx.x % kWarp;
    in_group = threadIdx.x % kSize;
    chunk = in_group % kChunks;
    nz_lane = in_group / kChunks;
    mask = kSize == kWarp ? 0xffffffffu : ((1u << kSize) - 1u) << (lane / kSize * kSize);
    group = std::int64_t(block) * (kCsrBlockThreads / kSize) + threadIdx.x / kSize;
  }
  /// Sums a chunk's lanes (a fixed shuffle tree): nz_lane 0 holds the group's sums.
  template <int kCols>
  __device__ __forceinline__ void sum(float (&acc)[kCols]) const {
#pragma unroll
    for (int offset = kChunks; offset < kSize; offset <<= 1)
#pragma unroll
      for (int e = 0; e < kCols; ++e) acc[e] += __shfl_xor_sync(mask, acc[e], offset, kSize);
  }
};

/// Writes slot `slot`'s sums to its row of C (none for a padding slot): the row and its exponent are two
/// independent loads (the exponent is stored per slot, not per row).
template <typename OutT, int kCols>
__device__ __forceinline__ void write_slot_chunk(const CsrSpmmParams& p, std::int32_t slot, int col0,
                                                 float (&acc)[kCols]) {
  const std::int32_t row = p.out_row[slot];
  const int exponent = p.slot_exponent ? p.slot_exponent[slot] : 0;
  if (row >= 0) write_row_chunk<OutT, kCols>(p, row, exponent, col0, acc);
}

/// Rows slots[...] of one block: kCsrBlockThreads / (kChunks * kNzLanes) of them, a group of threads each.
template <OperandMode kMode, int kChunks, int kNzLanes, BRead kRead, typename OutT>
__device__ __forceinline__ void short_rows(const CsrSpmmParams& p, const std::int32_t* slots, std::int32_t count,
                                           std::int32_t block, int pass_col0) {
  constexpr int kCols = kThreadCols<kRead>;
  const RowGroupThread<kChunks, kNzLanes> g(block);
  const std::int64_t item = g.group;
  if (item >= count) return;  // whole groups leave together; their partners never wait on them
  // Without a list the group's slot is its item, skipped unless it is short (CsrSpmmParams::short_max_entries).
  const std::int32_t slot = slots ? slots[item] : static_cast<std::int32_t>(item);
  const std::int32_t first = p.row_ptr[slot], end = p.row_ptr[slot + 1];
  if (!slots && (end - first < p.short_min_entries || end - first > p.short_max_entries)) return;  // the whole group
  const int col0 = pass_col0 + g.chunk * 8;
  float acc[kCols] = {};
  if constexpr (kRead == BRead::one_column)
    accumulate_quads<kMode>(p, first, end, g.nz_lane, kNzLanes, acc[0]);
  else if (col0 < p.n)
    accumulate_entries<kMode, kRead>(p, b_matrix<kMode>(p) + col0, p.n - col0, first + g.nz_lane, end, kNzLanes, acc);
  g.sum(acc);
  if (g.nz_lane == 0 && col0 < p.n) write_slot_chunk<OutT, kCols>(p, slot, col0, acc);
}

/// Short rows two to a group (CsrSpmmParams::short_pairs): group g of the launch takes items 2g and 2g + 1 as one
/// stream of entries (accumulate_pair_entries), then sums and writes each row as short_rows does. The blocks take
/// twice the rows; a row's sum order is fixed (bit-identical run to run), though not the unpaired one's.
template <OperandMode kMode, int kChunks, int kNzLanes, typename OutT>
__device__ __forceinline__ void short_row_pair(const CsrSpmmParams& p, const std::int32_t* slots, std::int32_t count,
                                               std::int32_t block, int pass_col0) {
  constexpr int kCols = 8;
  const RowGroupThread<kChunks, kNzLanes> g(block);
  const std::int64_t item_a = 2 * g.group;
  if (item_a >= count) return;  // whole groups leave together
  const bool has_b = item_a + 1 < count;
  const std::int32_t slot_a = slots ? slots[item_a] : static_cast<std::int32_t>(item_a);
  const std::int32_t slot_b = !has_b ? slot_a : slots ? slots[item_a + 1] : slot_a + 1;
  const std::int32_t first_a = p.row_ptr[slot_a], end_a = p.row_ptr[slot_a + 1];
  const std::int32_t first_b = p.row_ptr[slot_b], end_b = p.row_ptr[slot_b + 1];
  // Without a list a row that is not short (or, with short_min_entries 1, empty) is another unit's: it counts as
  // empty here and is not written.
  auto is_mine = [&](std::int32_t len) {
    return slots != nullptr || (len >= p.short_min_entries && len <= p.short_max_entries);
  };
  const bool write_a = is_mine(end_a - first_a), write_b = has_b && is_mine(end_b - first_b);
  if (!write_a && !write_b) return;  // the whole group
  const std::int32_t len_a = write_a ? end_a - first_a : 0;
  const std::int32_t total = len_a + (write_b ? end_b - first_b : 0);
  const int col0 = pass_col0 + g.chunk * 8;
  float acc_a[kCols] = {}, acc_b[kCols] = {};
  if (col0 < p.n)
    accumulate_pair_entries<kMode>(p, b_matrix<kMode>(p) + col0, first_a, len_a, first_b, total, g.nz_lane, kNzLanes,
                                   p.n - col0, acc_a, acc_b);
  g.sum(acc_a);
  g.sum(acc_b);
  if (g.nz_lane != 0 || col0 >= p.n) return;
  if (write_a) write_slot_chunk<OutT, kCols>(p, slot_a, col0, acc_a);
  if (write_b) write_slot_chunk<OutT, kCols>(p, slot_b, col0, acc_b);
}

/// Short rows in runs (CsrSpmmParams::short_run_rows = R): group g takes items g * R .. g * R + R - 1 of the short
/// rows (slots from the list, or the slots themselves without one), one after the other, each summed and written
/// as short_rows does it (the same rounds in the same order: the same bits). A row alone pays a chain of three
/// dependent loads (its start, its entries, their B rows; four behind a list) before its stores. In a run, lane j of
/// the group loads item j's slot and entry range, all R at once, and the next row's first round of B-row indices is
/// loaded while the current row's B rows are, so a row after the first costs about one memory latency instead of
/// three. Without a list, rows that are not this unit's (medium, long, or empty ones that keep their C) are skipped,
/// not written.
template <OperandMode kMode, int kChunks, int kNzLanes, typename OutT>
__device__ __forceinline__ void short_row_run(const CsrSpmmParams& p, std::int32_t block, int pass_col0) {
  constexpr int kCols = 8;
  using Group = RowGroupThread<kChunks, kNzLanes>;
  const Group g(block);
  const std::int64_t item0 = g.group * p.short_run_rows;
  if (item0 >= p.short_count) return;  // whole groups leave together
  const int rows = static_cast<int>(std::min<std::int64_t>(p.short_run_rows, p.short_count - item0));
  const bool listed = p.short_slots != nullptr;
  std::int32_t lane_slot = 0, lane_first = 0, lane_end = 0;  // item in_group's (R <= the group's lanes)
  if (g.in_group < rows) {
    lane_slot = listed ? p.short_slots[item0 + g.in_group] : static_cast<std::int32_t>(item0 + g.in_group);
    lane_first = p.row_ptr[lane_slot];
    lane_end = p.row_ptr[lane_slot + 1];
  }
  const int col0 = pass_col0 + g.chunk * 8;
  const bool has_cols = col0 < p.n;  // lanes past n load nothing, but shuffle with their group
  const BElement<kMode>* const b_cols = b_matrix<kMode>(p) + col0;
  // Row r's entries; `end` is moved to `first` (nothing to load) where the row is another unit's or a lane has no
  // columns, and the result says whether the row is written (a listed row always is).
  auto span = [&](int r, std::int32_t& first, std::int32_t& end) {
    first = __shfl_sync(g.mask, lane_first, r, Group::kSize);
    end = __shfl_sync(g.mask, lane_end, r, Group::kSize);
    const bool mine = listed || (end - first >= p.short_min_entries && end - first <= p.short_max_entries);
    if (!mine || !has_cols) end = first;
    return mine;
  };
  std::int32_t first, end;
  bool mine = span(0, first, end);
  std::int32_t b_rows[kUnroll];
  load_round_rows<true>(p, first + g.nz_lane, end, kNzLanes, b_rows);
  for (int r = 0; r < rows; ++r) {
    std::int32_t next_first = 0, next_end = 0, next_b_rows[kUnroll] = {};
    bool next_mine = false;
    if (r + 1 < rows) {  // the whole group takes this branch
      next_mine = span(r + 1, next_first, next_end);
      load_round_rows<true>(p, next_first + g.nz_lane, next_end, kNzLanes, next_b_rows);
    }
    float acc[kCols] = {};
    const std::int32_t i = first + g.nz_lane;
    float vals[kUnroll];
    load_round_values<kMode, true>(p, i, end, kNzLanes, vals);
    fma_round<kMode, BRead::chunk, true>(p, b_cols, 8, b_rows, vals, i, end, kNzLanes, acc);
    if (i + kUnroll * kNzLanes < end)
      accumulate_entries<kMode, BRead::chunk>(p, b_cols, 8, i + kUnroll * kNzLanes, end, kNzLanes, acc);
    g.sum(acc);
    const std::int32_t slot = __shfl_sync(g.mask, lane_slot, r, Group::kSize);
    if (mine && has_cols && g.nz_lane == 0) write_slot_chunk<OutT, kCols>(p, slot, col0, acc);
    first = next_first;
    end = next_end;
    mine = next_mine;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) b_rows[u] = next_b_rows[u];
  }
}

/// n = 1: short-row tile `index` (CsrShortTile), a run of consecutive slots whose entries lie in one window of
/// kCsrTileEntries entries starting at a multiple of 4. Thread t loads quad t of the window (the indices as one
/// 16-byte load, the values as one 8-byte load: the loads of a warp are 512 and 256 consecutive bytes, whatever the
/// rows' lengths), reads the B elements of its entries that are the tile's, and puts the products in shared memory;
/// then each slot's sum is taken by `lanes` threads (the most, up to 32, that the tile's slot count leaves room for),
/// in a fixed order. A slot's first entry, length and exponent come in one word (csr_tile_slot_word), and its C row
/// is the tile's row_base + its place where the tile's rows are consecutive: one 4-byte load per slot where the
/// groups load two row offsets, the row and the exponent (docs/KERNELS.md, "Short-row tiles at n = 1").
template <OperandMode kMode, typename OutT>
__device__ __forceinline__ void short_row_tile(const CsrSpmmParams& p, std::int32_t index) {
  static_assert(kCsrTileEntries == 4 * kCsrBlockThreads, "a quad of the window per thread");
  __shared__ __align__(16) float products[kCsrTileEntries];
  const CsrShortTile tile = p.short_tiles[index];
  const int t = threadIdx.x;
  const std::int32_t window = tile.entry_begin & ~3;  // the entry arrays are padded to whole quads (upload_csr)
  const unsigned first_entry = unsigned(tile.entry_begin - window), end_entry = first_entry + tile.entries;
  int lanes = 1;
  while (lanes < kWarp && 2 * lanes * int(tile.slots) <= kCsrBlockThreads) lanes *= 2;
  const int local_slot = t / lanes, sub = t % lanes;
  // The slot's entries (from the window's start), row and exponent: loaded beside the entries, before the block
  // waits for the products.
  int first = 0, end = 0, exponent = 0;
  std::int32_t row = -1;
  if (local_slot < int(tile.slots)) {
    const std::int32_t slot = tile.slot_begin + local_slot;
    const std::uint32_t word = p.tile_slot_words[slot];
    first = csr_tile_slot_first(word);
    end = first + csr_tile_slot_length(word);
    exponent = csr_tile_slot_exponent(word);
    if (sub == 0) row = tile.row_base >= 0 ? tile.row_base + local_slot : p.out_row[slot];
  }
  const std::int32_t quad = window / 4 + t;
  const unsigned in_tile = quad_mask(4u * unsigned(t), first_entry, end_entry);
  const int4 rows = in_tile ? __ldg(reinterpret_cast<const int4*>(p.b_row) + quad) : make_int4(0, 0, 0, 0);
  const uint2 bits = in_tile ? __ldg(reinterpret_cast<const uint2*>(p.values) + quad) : make_uint2(0, 0);
  uint2 lo_bits = make_uint2(0, 0);
  if constexpr (kMode == OperandMode::split_f32b)
    lo_bits = in_tile ? __ldg(reinterpret_cast<const uint2*>(p.values_lo) + quad) : make_uint2(0, 0);
  // Entries of the quad outside the tile: their B element is not read and their product is never summed.
  const BElement<kMode>* const b = b_matrix<kMode>(p);
  const int r[4] = {rows.x, rows.y, rows.z, rows.w};
  BElement<kMode> bv[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) bv[e] = (in_tile >> e) & 1u ? __ldg(b + std::size_t(r[e]) * p.ldb) : BElement<kMode>(0);
  float product[4];
#pragma unroll
  for (int e = 0; e < 4; ++e)
    product[e] = decode_value<kMode>(quad_bits(bits, e), quad_bits(lo_bits, e)) * b_value_f32<kMode>(bv[e]);
  if (in_tile) reinterpret_cast<float4*>(products)[t] = make_float4(product[0], product[1], product[2], product[3]);
  __syncthreads();
  float acc[1] = {0.0f};
  for (int e = first + sub; e < end; e += lanes) acc[0] += products[e];
  for (int offset = lanes / 2; offset > 0; offset >>= 1) acc[0] += __shfl_xor_sync(0xffffffffu, acc[0], offset);
  // short_min_entries 1 (beta = 1, no addends): an empty row keeps its C.
  if (sub == 0 && row >= 0 && end - first >= p.short_min_entries) write_row_chunk<OutT, 1>(p, row, exponent, 0, acc);
}

/// Blocks [0, long_count) take one long-row block each (csr_long_row_blocks), the next ones one medium row per
/// warp, the rest kCsrBlockThreads / group short rows each, or at n = 1 with tiles one short-row tile each
/// (longest rows first: they are the tail otherwise).
/// blockIdx.y is the pass over columns (256 per pass).
template <OperandMode kMode, int kChunks, int kNzLanes, BRead kRead, typename OutT>
__global__ void __launch_bounds__(kCsrBlockThreads, kMinBlocksPerSm<kRead>) csr_spmm_kernel(const CsrSpmmParams p) {
  static_assert(kRead == BRead::chunk || kChunks == 1, "a narrow B has one chunk");
  const int pass_col0 = blockIdx.y * kCsrPassColumns;
  const std::int32_t medium_blocks = (p.medium_count + kBlockWarps - 1) / kBlockWarps;
  const std::int32_t block = static_cast<std::int32_t>(blockIdx.x);
  if (block < p.long_count)
    long_row<kMode, kChunks, kRead, OutT>(p, pass_col0);
  else if (block < p.long_count + medium_blocks)
    short_rows<kMode, kChunks, kWarp / kChunks, kRead, OutT>(p, p.medium_slots, p.medium_count, block - p.long_count,
                                                            pass_col0);
  else {
    const std::int32_t short_block = block - p.long_count - medium_blocks;
    // Only the one-column kernels hold the tile code (and its shared memory).
    if constexpr (kRead == BRead::one_column) {
      if (p.short_tiles) {
        short_row_tile<kMode, OutT>(p, short_block);
        return;
      }
    }
    // 16-bit B only: with fp32 B (8 registers a chunk) the pair's second sums spilled at 64 registers.
    if constexpr (kRead == BRead::chunk && !reads_f32_b(kMode)) {
      if (p.short_run_rows > 1) {
        short_row_run<kMode, kChunks, kNzLanes, OutT>(p, short_block, pass_col0);
        return;
      }
      if (p.short_pairs) {
        short_row_pair<kMode, kChunks, kNzLanes, OutT>(p, p.short_slots, p.short_count, short_block, pass_col0);
        return;
      }
    }
    short_rows<kMode, kChunks, kNzLanes, kRead, OutT>(p, p.short_slots, p.short_count, short_block, pass_col0);
  }
}

/// The table entry of one instantiation (kernel_table.hpp).
template <OperandMode kMode, typename OutT, int kChunks, int kNzLanes, BRead kRead>
constexpr CsrKernel csr_kernel_entry() {
  constexpr CsrShape kShape{kChunks, kNzLanes, kRead != BRead::chunk, kRead == BRead::one_column};
  return {CsrKernelKey{kMode, output_type_of<OutT>(), kShape}, csr_spmm_kernel<kMode, kChunks, kNzLanes, kRead, OutT>};
}

}  // namespace bcsr24::kernels::csr
