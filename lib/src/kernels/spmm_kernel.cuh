// The BCSR-2:4 SpMM kernel template behind all three rungs of the ladder (docs/KERNELS.md).
//
// Work distribution: one thread block of kWarps warps per (work item, slice of output columns). A work item is
// a tile row, or a part of one that is far longer than the GPU's fair share (device/tile_schedule.hpp). The
// warps of a block share the item: warp w takes tiles w, w + kWarps, ... of each list, and the partial
// 16 x slice results are summed in shared memory in a fixed order. The parts of a split row publish their sums
// in a workspace and the part that finishes last adds them in part order and writes C, so the same input
// gives bit-identical output whichever part finishes first. Items are launched longest first (the order of the
// row_work descriptors) so the longest do not end up in the tail of the grid.
//
// Each warp runs a software pipeline per list: kStages shared-memory stages, each holding one A tile (as
// stored, in fragment order) and the 32 x slice block of B it multiplies, filled by cp.async kStages - 1
// tiles ahead of the tile being computed. The 2:4 list and the dense list are two separate loops with no
// branch on the tile kind inside either.
//
// Operand modes (OperandMode, docs/PRECISION.md): fp16 or bf16 B is staged as given and read with ldmatrix;
// fp32 B is staged as fp32 and converted while the B fragments are built, with a power-of-two scale per tile
// and column chosen from that 32-row block's largest magnitude (fp16 B never overflows or flushes, and no pass
// over B precedes the product). Split mode multiplies A_hi and A_lo with B_hi and B_lo (three products) into a
// per-tile sum that is scaled back and added to the accumulators.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "format/tile_layout.hpp"
#include "kernels/b_block_layout.hpp"
#include "kernels/epilogue.cuh"
#include "kernels/part_counter.cuh"
#include "kernels/ptx_sm80.cuh"
#include "kernels/reduction_layout.hpp"
#include "kernels/spmm_params.hpp"
#include "kernels/tile_geometry.hpp"

namespace bcsr24::kernels {

/// Copies tile `tile` of `list` (and, in split mode, its low parts) into `stage` (asynchronously; the caller
/// commits).
template <int kSliceWidth, OperandMode kMode, bool kSparse>
__device__ __forceinline__ void load_a_async(const TileListView& list, std::int32_t tile, unsigned char* stage,
                                             int lane) {
  using S = typename SliceGeometry<kSliceWidth, kMode>::template Stage<kSparse>;
  constexpr int kValueChunks = S::kValueBytes / 16;  // 32 (2:4) or 64 (dense): one or two per lane
  const std::uint32_t stage_addr = ptx::smem_addr(stage);
  const uint4* values = reinterpret_cast<const uint4*>(list.values) + std::size_t(tile) * kValueChunks;
#pragma unroll
  for (int c = lane; c < kValueChunks; c += kWarpSize) ptx::cp_async_16(stage_addr + c * 16, values + c, 16);
  if constexpr (Operands<kMode>::kSplit) {
    const uint4* lo = reinterpret_cast<const uint4*>(list.values_lo) + std::size_t(tile) * kValueChunks;
#pragma unroll
    for (int c = lane; c < kValueChunks; c += kWarpSize) ptx::cp_async_16(stage_addr + S::kLoOffset + c * 16, lo + c, 16);
  }
  if constexpr (kSparse) {
    if (lane < kSparseTileMetaWords / 4) {
      const uint4* meta = reinterpret_cast<const uint4*>(list.metadata) + std::size_t(tile) * (kSparseTileMetaWords / 4);
      ptx::cp_async_16(stage_addr + S::kMetaOffset + lane * 16, meta + lane, 16);
    }
  }
}

/// One lane's share of every B-block copy, worked out once per block (b_copy_lane): the copy of a tile's block
/// then costs, per 16-byte piece, the row's shuffle, its bounds test, one wide multiply-add for the address and
/// the cp.async. (Computing the column bounds, the 64-bit row offset and the swizzled destination per piece had
/// made the copy the largest part of the main loop: the 2:4 loop at 16 fp32 columns took 307 SASS instructions
/// per tile before, 231 after; measured 3-15% faster on meshes, docs/PERFORMANCE.md.)
struct BCopyLane {
  const unsigned char* src = nullptr;  ///< B's row 0 at the lane's chunk; B itself when the chunk lies past n
  std::uint32_t bytes = 0;             ///< bytes of the chunk inside n: 16, fewer at the last columns, 0 past n
  std::uint32_t dst = 0;               ///< offset in the B block of the lane's chunk at copy step 0
  int row = 0;                         ///< B-block row of the lane's chunk at copy step 0
};

template <int kSliceWidth, OperandMode kMode>
__device__ __forceinline__ BCopyLane b_copy_lane(const SpmmParams& p, int n0, int lane) {
  using L = typename SliceGeometry<kSliceWidth, kMode>::BLayout;
  constexpr int kElementBytes = Operands<kMode>::kF32B ? 4 : 2;
  constexpr int kPerChunk = 16 / kElementBytes;
  const unsigned char* b = Operands<kMode>::kF32B ? reinterpret_cast<const unsigned char*>(p.b_f32)
                                                  : reinterpret_cast<const unsigned char*>(p.b);
  BCopyLane c;
  const int chunk = L::lane_chunk(lane);
  c.row = L::lane_row(lane);
  const int col = n0 + chunk * kPerChunk;
  int valid = p.n - col;
  valid = valid < 0 ? 0 : (valid > kPerChunk ? kPerChunk : valid);
  // Columns past n are zero-filled, never read (padded A columns are zero, but 0 * NaN is NaN); the address
  // then stays inside B.
  c.src = valid > 0 ? b + std::size_t(col) * kElementBytes : b;
  c.bytes = std::uint32_t(valid * kElementBytes);
  c.dst = std::uint32_t(L::chunk_offset(c.row, chunk));
  return c;
}

/// Copies the B block that a tile multiplies to `b_block` in shared memory (asynchronously). Aligned tiles (kRows
/// == kImplicitRows): `b_source` is the tile column, and tile column j multiplies B row 32 * tile_col + j.
/// Gathered tiles: `b_source` is, in lane j, the B row of tile column j (-1 for a padding column), and lanes
/// trade rows by shuffle. Rows past K (and padding columns) are zero-filled, never read.
template <int kSliceWidth, OperandMode kMode, int kRows>
__device__ __forceinline__ void load_b_async(std::int32_t b_source, unsigned char* b_block, const SpmmParams& p,
                                             const BCopyLane& lane_copy) {
  using L = typename SliceGeometry<kSliceWidth, kMode>::BLayout;
  const std::uint32_t b_addr = ptx::smem_addr(b_block);
#pragma unroll
  for (int step = 0; step < L::kChunksPerRow; ++step) {
    const int r = lane_copy.row + step * L::kRowStep;
    std::int32_t row;
    if constexpr (kRows != kImplicitRows)
      row = __shfl_sync(0xffffffffu, b_source, r);
    else
      row = b_source * kTileCols + r;
    const bool inside = std::uint32_t(row) < std::uint32_t(p.k);  // also false for -1 (padding)
    // 32 x 32 -> 64-bit multiply-add: the plan guarantees that the pitch fits 32 bits.
    const unsigned char* src = lane_copy.src + std::uint64_t(std::uint32_t(inside ? row : 0)) * p.b_pitch;
    ptx::cp_async_16(b_addr + std::uint32_t(L::step_offset(int(lane_copy.dst), step)), src,
                     inside ? int(lane_copy.bytes) : 0);
  }
}

template <int kSliceWidth, OperandMode kMode, bool kSparse, int kRows>
__device__ __forceinline__ void load_tile_async(const TileListView& list, std::int32_t tile, std::int32_t b_source,
                                                unsigned char* stage, const SpmmParams& p, const BCopyLane& lane_copy,
                                                int lane) {
  using S = typename SliceGeometry<kSliceWidth, kMode>::template Stage<kSparse>;
  load_a_async<kSliceWidth, kMode, kSparse>(list, tile, stage, lane);
  load_b_async<kSliceWidth, kMode, kRows>(b_source, stage + S::kABytes, p, lane_copy);
}

/// Two fp32 values as the packed 16-bit pair an mma B register holds (the first in the low half).
template <bool kBf16>
__device__ __forceinline__ std::uint32_t pack_pair(float lo_k, float hi_k) {
  if constexpr (kBf16) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo_k, hi_k);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo_k, hi_k);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  }
}

/// The power-of-two scale that maps a B column block with largest magnitude `max_abs` into [2^14, 2^15): its
/// fp16 values can neither overflow nor (short of 2^-38 below the largest) flush. Clamped so that both 2^e and
/// 2^-e are normal floats; an all-zero block gets the clamp's value, which changes nothing.
__device__ __forceinline__ int b_block_exponent(float max_abs) {
  const int e = (__float_as_int(max_abs) >> 23) - 127 - 14;
  return e < -126 ? -126 : (e > 126 ? 126 : e);
}

/// acc += (tile in `stage`) x (its B block), for all n8 steps of the slice.
template <int kSliceWidth, OperandMode kMode, bool kSparse>
__device__ __forceinline__ void compute_tile(const unsigned char* stage, float (&acc)[kSliceWidth / 8][4], int lane) {
  using G = SliceGeometry<kSliceWidth, kMode>;
  using S = typename G::template Stage<kSparse>;
  using Ops = Operands<kMode>;
  // A fragments: a 2:4 tile is one compressed 16x16 fragment per lane; a dense tile two 16x16 halves (tile
  // columns 0-15 and 16-31). Split mode has the same again for the low parts.
  uint4 a[kSparse ? 1 : 2], a_low[Ops::kSplit ? (kSparse ? 1 : 2) : 1];
  a[0] = *reinterpret_cast<const uint4*>(stage + lane * 16);
  if constexpr (!kSparse) a[1] = *reinterpret_cast<const uint4*>(stage + 512 + lane * 16);
  if constexpr (Ops::kSplit) {
    a_low[0] = *reinterpret_cast<const uint4*>(stage + S::kLoOffset + lane * 16);
    if constexpr (!kSparse) a_low[1] = *reinterpret_cast<const uint4*>(stage + S::kLoOffset + 512 + lane * 16);
  }
  std::uint32_t meta = 0;
  if constexpr (kSparse)
    meta = *reinterpret_cast<const std::uint32_t*>(stage + S::kMetaOffset + metadata_word_of_lane(lane) * 4);
  // d += A (one tile: both halves of a dense one) x the 32 x 8 B fragment b (rows 8m + 2t, 8m + 2t + 1 in b[m]).
  auto multiply = [&](float (&d)[4], const uint4 (&frag)[kSparse ? 1 : 2], const std::uint32_t (&b)[4]) {
    if constexpr (kSparse) {
      ptx::mma_sp_m16n8k32_f32<Ops::kBf16>(d, frag[0], b, meta);
    } else {
      ptx::mma_m16n8k16_f32<Ops::kBf16>(d, frag[0], b[0], b[1]);
      ptx::mma_m16n8k16_f32<Ops::kBf16>(d, frag[1], b[2], b[3]);
    }
  };

  if constexpr (!Ops::kF32B) {
    // Lane l addresses row l of the 32-row B block: rows 0-7, 8-15, 16-23, 24-31 are ldmatrix's four matrices.
    const std::uint32_t b_row = ptx::smem_addr(stage + S::kABytes) + lane * G::kRowBytes;
    const int b_swizzle = G::BLayout::swizzle(lane);
#pragma unroll
    for (int j = 0; j < G::kNSteps; ++j) {
      std::uint32_t b[4];
      ptx::ldmatrix_x4_trans(b, b_row + ((j ^ b_swizzle) * 16));
      multiply(acc[j], a, b);
    }
  } else {
    // Lane 4g + t builds the fragment of column 8j + g: rows 8m + 2t and 8m + 2t + 1, m = 0..3, of the fp32 block.
    // Column 8j + g is float g % 4 of chunk 2j + g / 4, which sits at position (2j ^ swizzle) + g / 4 (the
    // swizzles are even).
    const float* block = reinterpret_cast<const float*>(stage + S::kABytes);
    const int g = lane >> 2, t = lane & 3;
    int row_base[2], row_swizzle[2];
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      row_base[c] = G::BLayout::f32_row_slot(2 * t + c) * kSliceWidth + (g >> 2) * 4 + (g & 3);
      row_swizzle[c] = G::BLayout::f32_swizzle(2 * t + c);
    }
#pragma unroll
    for (int j = 0; j < G::kNSteps; ++j) {
      float x[8];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const float* column = block + row_base[c] + (((2 * j) ^ row_swizzle[c]) << 2);
#pragma unroll
        for (int m = 0; m < 4; ++m) x[2 * m + c] = column[8 * m * kSliceWidth];
      }
      if constexpr (!Ops::kScaledB) {
        std::uint32_t b[4];
#pragma unroll
        for (int m = 0; m < 4; ++m) b[m] = pack_pair<Ops::kBf16>(x[2 * m], x[2 * m + 1]);
        multiply(acc[j], a, b);
      } else {
        // The column's largest magnitude in this block: the 4 lanes 4g .. 4g + 3 hold its 32 rows.
        float max_abs = 0.0f;
#pragma unroll
        for (int q = 0; q < 8; ++q) max_abs = fmaxf(max_abs, fabsf(x[q]));
        max_abs = fmaxf(max_abs, __shfl_xor_sync(0xffffffffu, max_abs, 1));
        max_abs = fmaxf(max_abs, __shfl_xor_sync(0xffffffffu, max_abs, 2));
        const int e = b_block_exponent(max_abs);
        const float down = exp2_int(-e);
        std::uint32_t b[4];
        float tile_sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if constexpr (!Ops::kSplit) {
#pragma unroll
          for (int m = 0; m < 4; ++m) b[m] = pack_pair<false>(x[2 * m] * down, x[2 * m + 1] * down);
          multiply(tile_sum, a, b);
        } else {
          // B = b_hi + 2^-11 b_lo: b_lo is the rounding residual (exact in fp32), scaled up to keep its bits.
          std::uint32_t b_low[4];
#pragma unroll
          for (int m = 0; m < 4; ++m) {
            const float x0 = x[2 * m] * down, x1 = x[2 * m + 1] * down;
            const __half2 hi = __floats2half2_rn(x0, x1);
            b[m] = *reinterpret_cast<const std::uint32_t*>(&hi);
            const float2 back = __half22float2(hi);
            b_low[m] = pack_pair<false>((x0 - back.x) * float(1 << kSplitLoShift),
                                        (x1 - back.y) * float(1 << kSplitLoShift));
          }
          // A_hi B_hi + 2^-11 (A_lo B_hi + A_hi B_lo); A_lo B_lo (2^-22) is below fp32's rounding of the sum.
          float low_terms[4] = {0.0f, 0.0f, 0.0f, 0.0f};
          multiply(tile_sum, a, b);
          multiply(low_terms, a_low, b);
          multiply(low_terms, a, b_low);
#pragma unroll
          for (int q = 0; q < 4; ++q) tile_sum[q] = fmaf(low_terms[q], 1.0f / float(1 << kSplitLoShift), tile_sum[q]);
        }
        // Undo the scale: accumulator columns 2t and 2t + 1 of this step belong to lanes 8t and 8t + 4.
        const float up = exp2_int(e);
        const float up0 = __shfl_sync(0xffffffffu, up, 8 * t), up1 = __shfl_sync(0xffffffffu, up, 8 * t + 4);
        acc[j][0] = fmaf(tile_sum[0], up0, acc[j][0]);
        acc[j][1] = fmaf(tile_sum[1], up1, acc[j][1]);
        acc[j][2] = fmaf(tile_sum[2], up0, acc[j][2]);
        acc[j][3] = fmaf(tile_sum[3], up1, acc[j][3]);
      }
    }
  }
}

/// One warp's pass over its share of one tile list of one tile row: tiles first, first + stride, ...
/// kStages stages of this list's kind (1 = no pipelining).
template <int kSliceWidth, OperandMode kMode, int kStages, bool kSparse, int kRows>
__device__ __forceinline__ void run_tile_list(const TileListView& list, std::int32_t first, std::int32_t count,
                                              std::int32_t stride, unsigned char* warp_smem, const SpmmParams& p,
                                              const BCopyLane& lane_copy, float (&acc)[kSliceWidth / 8][4], int lane) {
  using G = SliceGeometry<kSliceWidth, kMode>;
  using S = typename G::template Stage<kSparse>;
  // The B addresses of a tile depend on its column index (aligned) or its 32 B rows (gathered). Reading them
  // right before each copy would put a dependent global load (hundreds of cycles) in front of every cp.async.
  // Aligned: each lane holds the column of one of the next 32 tiles and the issuing code takes it with a
  // shuffle. Gathered: lane j holds B row j of the next tiles in a two-deep register ring, loaded two tiles
  // before its copies are issued.
  std::int32_t chunk_base = 0;
  std::int32_t chunk_col = 0;
  constexpr bool kGathered = kRows != kImplicitRows;
  if constexpr (!kGathered) chunk_col = lane < count ? list.col_idx[first + lane * stride] : 0;
  auto tile_col = [&](std::int32_t i) {  // i increases by one per call
    if (i - chunk_base == kWarpSize) {
      chunk_base = i;
      chunk_col = i + lane < count ? list.col_idx[first + (i + lane) * stride] : 0;
    }
    return __shfl_sync(0xffffffffu, chunk_col, i - chunk_base);
  };
  auto slot_row = [&](std::int32_t i) -> std::int32_t {  // B row of tile column `lane` of the warp's tile i
    return i < count ? list.b_rows[std::size_t(first + i * stride) * kTileCols + lane] : -1;
  };
  if constexpr (kStages == 1) {
    // Baseline: load, wait, compute, one tile at a time.
    // Not unrolled: unrolled, ptxas spilled registers (8-44 bytes) at 16 and 32 columns under the 9-block budget.
#pragma unroll 1
    for (std::int32_t i = 0; i < count; ++i) {
      std::int32_t source;
      if constexpr (kGathered) source = slot_row(i); else source = tile_col(i);
      load_tile_async<kSliceWidth, kMode, kSparse, kRows>(list, first + i * stride, source, warp_smem, p, lane_copy, lane);
      ptx::cp_async_commit();
      ptx::cp_async_wait<0>();
      __syncwarp();
      compute_tile<kSliceWidth, kMode, kSparse>(warp_smem, acc, lane);
      __syncwarp();
    }
  } else {
    // Prologue: kStages - 1 tiles in flight. The A tiles go first: their addresses need no column index, so
    // they are on their way while the column indices (and then the B blocks) are still being fetched. Group s
    // then holds B block s (group 0 all the prologue's A tiles too). Every iteration commits exactly one group
    // (possibly empty) before it waits, so "wait until kStages - 1 groups are pending" always means "the tile
    // about to be computed has landed".
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s)
      if (s < count) load_a_async<kSliceWidth, kMode, kSparse>(list, first + s * stride, warp_smem + s * S::kBytes, lane);
    std::int32_t ring0 = 0, ring1 = 0;  // gathered: B rows of tiles next and next + 1
    if constexpr (kGathered) {
      std::int32_t prologue_rows[kStages - 1];
#pragma unroll
      for (int s = 0; s < kStages - 1; ++s) prologue_rows[s] = slot_row(s);
      ring0 = slot_row(kStages - 1);
      ring1 = slot_row(kStages);
#pragma unroll
      for (int s = 0; s < kStages - 1; ++s) {
        if (s < count)
          load_b_async<kSliceWidth, kMode, kRows>(prologue_rows[s], warp_smem + s * S::kBytes + S::kABytes, p, lane_copy);
        ptx::cp_async_commit();
      }
    } else {
#pragma unroll
      for (int s = 0; s < kStages - 1; ++s) {
        if (s < count)
          load_b_async<kSliceWidth, kMode, kRows>(tile_col(s), warp_smem + s * S::kBytes + S::kABytes, p, lane_copy);
        ptx::cp_async_commit();
      }
    }
    // Each iteration first refills the stage that the previous iteration computed (every lane passed the
    // __syncwarp after that computation), then waits for its own tile: while tile i is computed, tiles i + 1 ..
    // i + kStages - 1 are in flight, so all kStages stages are in use and two stages already overlap a copy
    // with the math.
    int read_stage = 0;
    int write_stage = kStages - 1;
    for (std::int32_t i = 0; i < count; ++i) {
      const std::int32_t next = i + kStages - 1;
      if (next < count) {
        std::int32_t source;
        if constexpr (kGathered) source = ring0; else source = tile_col(next);
        load_tile_async<kSliceWidth, kMode, kSparse, kRows>(list, first + next * stride, source,
                                                     warp_smem + write_stage * S::kBytes, p, lane_copy, lane);
      }
      ptx::cp_async_commit();
      if constexpr (kGathered) {
        ring0 = ring1;
        ring1 = slot_row(next + 2);
      }
      // Groups committed so far: kStages - 1 in the prologue and i + 1 here; tile i is in group i.
      ptx::cp_async_wait<kStages - 1>();
      __syncwarp();
      compute_tile<kSliceWidth, kMode, kSparse>(warp_smem + read_stage * S::kBytes, acc, lane);
      __syncwarp();  // every lane is done reading this stage before the next iteration's copy overwrites it
      read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
      write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
    }
    ptx::cp_async_wait<0>();
    __syncwarp();
  }
}


/// sum += v, component by component (the epilogues add partial sums four columns at a time).
__device__ __forceinline__ void add_to(float4& sum, const float4& v) {
  sum.x += v.x;
  sum.y += v.y;
  sum.z += v.z;
  sum.w += v.w;
}

/// The end of a block that computed one part of a split band (device/tile_schedule.hpp): publish the part's
/// sum; the part that arrives last adds all of them in part order (the same order every run, whichever part
/// that is) and writes C. `warp_sum(q)` is the block's sum of the 4 elements 4q .. 4q + 3 of the 16 x slice
/// result (row-major), `write(q, sum)` applies alpha/beta and stores them. `is_last` is a block-shared int.
template <int kSliceWidth, typename WarpSum, typename Write>
__device__ __forceinline__ void split_band_epilogue(const SpmmParams& p, const TileRowWork& work, WarpSum warp_sum,
                                                    Write write, int& is_last) {
  constexpr int kSliceQuads = kTileRows * kSliceWidth / 4;
  constexpr int kThreads = kTileKernelWarps * kWarpSize;
  const int slice = blockIdx.x % p.n_slices;
  const SplitGroup group = p.split_groups[work.split >> kSplitPartBits];
  const int part = work.split & ((1 << kSplitPartBits) - 1);
  auto slot = [&](int q) {
    return reinterpret_cast<float4*>(p.split_partials) +
           (std::size_t(group.first_partial + q) * p.n_slices + slice) * kSliceQuads;
  };
  float4* own = slot(part);
  for (int q = threadIdx.x; q < kSliceQuads; q += kThreads) own[q] = warp_sum(q);
  if (!block_part_is_last(p.split_counters + std::size_t(work.split >> kSplitPartBits) * p.n_slices + slice, group.parts,
                          is_last))
    return;
  for (int q = threadIdx.x; q < kSliceQuads; q += kThreads) {
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int part_q = 0; part_q < group.parts; ++part_q)
      add_to(sum, __ldcg(slot(part_q) + q));  // from L2: other SMs wrote them
    write(q, sum);
  }
}

/// Blocks per SM an instantiation's registers are allocated for on the architecture being compiled.
template <int kSliceWidth, OperandMode kMode, int kStages, bool kHasSparseList, int kRows>
constexpr int compiled_blocks_per_sm() {
  return blocks_per_sm(register_blocks_per_sm<kSliceWidth, kMode, kStages, kHasSparseList, kRows>(
                           kCompiledSmLimits.compute_capability),
                       spmm_shared_bytes<kSliceWidth, kStages, kHasSparseList, kMode>(), kCompiledSmLimits);
}

/// A warp's accumulators into its partial-sum buffer of the cross-warp reduction: element (j, e) of lane 4g+t is row
/// g + 8*(e/2), column 8j + 2t + e%2 of the slice. Swizzled (kernels/reduction_layout.hpp): these float2 stores are
/// free of bank conflicts.
template <int kSliceWidth>
__device__ __forceinline__ void store_warp_partials(float* partial, const float (&acc)[kSliceWidth / 8][4], int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < kSliceWidth / 8; ++j) {
    const int col = 8 * j + 2 * t;
    *reinterpret_cast<float2*>(partial + reduction_offset<kSliceWidth>(g, col)) = make_float2(acc[j][0], acc[j][1]);
    *reinterpret_cast<float2*>(partial + reduction_offset<kSliceWidth>(g + 8, col)) =
        make_float2(acc[j][2], acc[j][3]);
  }
}

/// C[tile row, slice] = alpha * A[tile row, :] * B[:, slice] + beta * C[tile row, slice].
/// kHasSparseList: run the 2:4 loop (split kernel) before the dense loop.
/// kSplitBands: some work items are parts of split bands (the plan's schedule has groups). Plans without split
/// bands launch the instantiation without that epilogue: no atomics, fences or static shared memory in it.
template <int kSliceWidth, OperandMode kMode, int kStages, bool kHasSparseList, int kRows, typename OutT,
          bool kSplitBands>
__global__ void __launch_bounds__(kTileKernelWarps * kWarpSize,
                                  compiled_blocks_per_sm<kSliceWidth, kMode, kStages, kHasSparseList, kRows>())
    bcsr24_spmm_kernel(const SpmmParams p) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  // One 32-byte descriptor (tile row and the tile ranges of its lists) instead of a row_order -> row_ptr
  // chain of dependent loads before the first copy can be issued.
  const TileRowWork work = p.row_work[blockIdx.x / p.n_slices];
  const std::int32_t tile_row = work.tile_row;
  const int n0 = (blockIdx.x % p.n_slices) * kSliceWidth;
  unsigned char* warp_smem = smem + warp * warp_pipeline_bytes<kSliceWidth, kStages, kHasSparseList, kMode>();

  // The epilogue's row map and row exponents, loaded now by the band's first 16 threads so that their latency
  // passes behind the main loops (read at the end they were a serial global-load step per block).
  std::int32_t band_out_row = 0, band_exponent = 0;
  if (threadIdx.x < kTileRows) {
    const std::int32_t stored_row = tile_row * kTileRows + threadIdx.x;
    band_out_row = p.row_map ? p.row_map[stored_row] : stored_row;
    band_exponent = p.stored_row_exponent ? p.stored_row_exponent[stored_row] : 0;
  }

  const BCopyLane lane_copy = b_copy_lane<kSliceWidth, kMode>(p, n0, lane);
  float acc[kSliceWidth / 8][4];
#pragma unroll
  for (int j = 0; j < kSliceWidth / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;

  // Tiles of this warp in a list with tiles [begin, end): begin + warp, begin + warp + kWarps, ...
  auto share = [&](std::int32_t begin, std::int32_t end, std::int32_t& first, std::int32_t& count) {
    first = begin + warp;
    count = end > first ? (end - first + kTileKernelWarps - 1) / kTileKernelWarps : 0;
  };
  std::int32_t first = 0, count = 0;
  if constexpr (kHasSparseList) {
    share(work.sparse24_begin, work.sparse24_end, first, count);
    run_tile_list<kSliceWidth, kMode, sparse24_stages<kSliceWidth, kStages, kMode>(), true, kRows>(
        p.sparse24, first, count, kTileKernelWarps, warp_smem, p, lane_copy, acc, lane);
    share(work.dense_begin, work.dense_end, first, count);
  } else {
    share(work.merged_begin, work.merged_end, first, count);
  }
  run_tile_list<kSliceWidth, kMode, kStages, false, kRows>(p.dense, first, count, kTileKernelWarps, warp_smem, p,
                                                           lane_copy, acc, lane);

  // Cross-warp reduction in a fixed order (store_warp_partials, then warp_sum below).
  __syncthreads();  // every warp is done with its pipeline stages, which the reduction buffer reuses
  constexpr int kSliceElems = kTileRows * kSliceWidth;
  std::int32_t* band_rows = reinterpret_cast<std::int32_t*>(smem + kTileKernelWarps * kSliceElems * 4);
  // Per row: C row, multiplier (alpha, times 2^e with per-row scaling: the same instructions either way), exponent.
  float* band_multiplier = reinterpret_cast<float*>(band_rows + kTileRows);
  std::int32_t* band_exponents = band_rows + 2 * kTileRows;
  if (threadIdx.x < kTileRows) {
    band_rows[threadIdx.x] = band_out_row;
    band_multiplier[threadIdx.x] = row_multiplier(p.alpha, band_exponent);
    band_exponents[threadIdx.x] = band_exponent;
  }
  store_warp_partials<kSliceWidth>(reinterpret_cast<float*>(smem) + warp * kSliceElems, acc, lane);
  __syncthreads();
  // The result in quads: quad q is row 4q / kSliceWidth, columns 4q % kSliceWidth .. + 3 (slice-relative).
  constexpr int kSliceQuads = kSliceElems / 4;
  constexpr int kThreads = kTileKernelWarps * kWarpSize;
  const float4* partials = reinterpret_cast<const float4*>(smem);
  auto warp_sum = [&](int q) {
    const int at = reduction_offset<kSliceWidth>(4 * q / kSliceWidth, 4 * q % kSliceWidth) / 4;
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int w = 0; w < kTileKernelWarps; ++w) add_to(sum, partials[w * kSliceQuads + at]);
    return sum;
  };
  OutT* c = static_cast<OutT*>(p.c);
  // Four columns in one access where C's rows allow it (the slice and the quad start at multiples of 4 columns).
  const bool c_quad_aligned =
      reinterpret_cast<std::uintptr_t>(c) % (4 * sizeof(OutT)) == 0 && p.ldc % 4 == 0;
  auto write = [&](int q, float4 sum) {
    const int r = 4 * q / kSliceWidth;
    const int out_col = n0 + 4 * q % kSliceWidth;
    // Reordered layouts write stored row r of the band to the C row it came from: C stays in the caller's order.
    const std::int32_t out_row = band_rows[r];
    if (out_row < 0 || out_row >= p.rows || out_col >= p.n) return;
    float v[4] = {sum.x, sum.y, sum.z, sum.w};
    const OutputRun run{out_row, out_col, band_multiplier[r], band_exponents[r], c_quad_aligned};
    write_output_run<4>(c + std::size_t(out_row) * p.ldc + out_col, run, p.n, p.alpha, p.beta, p.addends, v);
  };
  if constexpr (kSplitBands) {
    if (work.split != kUnsplit) {
      split_band_epilogue<kSliceWidth>(p, work, warp_sum, write, *reinterpret_cast<int*>(band_rows + 3 * kTileRows));
      return;
    }
  }
  for (int q = threadIdx.x; q < kSliceQuads; q += kThreads) write(q, warp_sum(q));
}

}  // namespace bcsr24::kernels
