// Where the 32 x slice block of B that one tile multiplies sits in a warp's shared-memory stage, and how the 32
// lanes copy it there; shared by the tile kernel and its CPU test (test/test_b_block_layout.cpp).
//
// The block is 32 rows of kChunksPerRow 16-byte chunks (8 fp16/bf16 or 4 fp32 values each), unpadded. Chunks
// are permuted within their row (and fp32 rows among their group of 8) so that the fragment loads are free of
// bank conflicts:
// - 16-bit B is read with ldmatrix: one phase reads the same logical chunk of 8 consecutive rows; swizzle(r)
//   spreads those 8 chunks over the 8 distinct 16-byte bank groups of a 128-byte line.
// - fp32 B is read as single floats: one load reads 8 consecutive columns, i.e. two chunks, of the four rows
//   8m + 2t + c, t = 0..3, and those 8 chunks must lie in the 8 bank groups. Row r goes to row slot
//   f32_row_slot(r), its chunk q to position q ^ f32_swizzle(r): at 8 columns (four rows per 128-byte line) the
//   slot permutation alone spreads the four rows over the four quarters of a line; at 16 (two rows per line) it
//   puts two of them in each half and the swizzle separates those two; from 32 on (a row fills a line) the
//   swizzle alone does it.
//
// The copy: lane l takes chunk l % kChunksPerRow of row l / kChunksPerRow, then the same chunk kRowStep rows
// further at each of the kChunksPerRow copy steps (consecutive lanes read consecutive 16 bytes of a row:
// coalesced). A lane's destination at step s is its step-0 destination with a compile-time XOR in the chunk
// bits and a compile-time row offset (step_offset), so the kernel computes the lane's part once per block.
#pragma once

#include "kernels/host_device.hpp"

namespace bcsr24::kernels {

template <int kSliceWidth, bool kF32B>
struct BBlockLayout {
  static_assert(kSliceWidth % 8 == 0 && kSliceWidth >= 8 && kSliceWidth <= 64, "slice is 8..64 columns");
  static constexpr int kRows = 32;
  static constexpr int kChunksPerRow = kF32B ? kSliceWidth / 4 : kSliceWidth / 8;
  static constexpr int kRowBytes = kChunksPerRow * 16;
  static constexpr int kBytes = kRows * kRowBytes;
  /// Rows between the chunks one lane copies at consecutive steps (32 lanes cover 32 / kChunksPerRow rows).
  static constexpr int kRowStep = 32 / kChunksPerRow;

  /// 16-bit B: rows r and r + 8 / C start in the same bank group (C chunks per row); flip the chunk index every
  /// 8 / C rows.
  BCSR24_HOST_DEVICE static constexpr int swizzle(int row) {
    return kChunksPerRow >= 8 ? (row & 7) : (row / (8 / kChunksPerRow)) % kChunksPerRow;
  }
  /// fp32 B: both depend on the low three bits of the row only, so rows 8m + q sit at 8m + f32_row_slot(q).
  BCSR24_HOST_DEVICE static constexpr int f32_row_slot(int row) {
    if constexpr (kSliceWidth == 8) return row ^ ((row >> 1) & 3);
    else if constexpr (kSliceWidth == 16) return row ^ ((row >> 1) & 1);
    else return row;
  }
  BCSR24_HOST_DEVICE static constexpr int f32_swizzle(int row) {
    if constexpr (kSliceWidth == 8) return 0;
    else if constexpr (kSliceWidth == 16) return ((row >> 2) & 1) << 1;
    else return ((row >> 1) & 3) << 1;
  }

  /// Byte offset in the block of chunk `chunk` (logical) of row `row`.
  BCSR24_HOST_DEVICE static constexpr int chunk_offset(int row, int chunk) {
    if constexpr (kF32B) return f32_row_slot(row) * kRowBytes + ((chunk ^ f32_swizzle(row)) * 16);
    else return row * kRowBytes + ((chunk ^ swizzle(row)) * 16);
  }

  /// The copy's lane l: its chunk and its row at step 0.
  BCSR24_HOST_DEVICE static constexpr int lane_chunk(int lane) { return lane % kChunksPerRow; }
  BCSR24_HOST_DEVICE static constexpr int lane_row(int lane) { return lane / kChunksPerRow; }

  /// XOR applied to the chunk bits of a lane's step-0 destination at step `step`: the swizzle of row
  /// r0 + step * kRowStep differs from that of r0 by a value that does not depend on r0 < kRowStep (the CPU
  /// test checks it for every lane).
  BCSR24_HOST_DEVICE static constexpr int step_xor(int step) {
    if constexpr (kF32B) {
      if constexpr (kSliceWidth == 32) return (step & 1) << 2 << 4;   // ((r >> 1) & 3) gains 2 per odd step
      else if constexpr (kSliceWidth == 64) return (step & 3) << 1 << 4;
      else return 0;  // 8 and 16 columns: the swizzle and the slot's permutation see only bits below kRowStep
    } else {
      if constexpr (kSliceWidth == 64) return (step & 1) << 2 << 4;   // (r & 7) gains 4 per odd step
      else return 0;  // fewer than 8 chunks: the swizzle repeats every kRowStep rows
    }
  }
  /// Destination of a lane at step `step`, from its step-0 destination.
  BCSR24_HOST_DEVICE static constexpr int step_offset(int step0_offset, int step) {
    return (step0_offset ^ step_xor(step)) + step * kRowStep * kRowBytes;
  }
};

}  // namespace bcsr24::kernels
