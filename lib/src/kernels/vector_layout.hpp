// Where one K-step of the narrow-vector kernel sits in a warp's shared-memory stage, which piece each lane copies and
// reads, and which output each accumulator holds; shared by the kernel (vector_spmm.cu), the launch's shared memory
// size and its CPU test (test/test_vector_layout.cpp), which emulates a K-step of ldmatrix.x4.trans and mma.m16n8k16
// through these maps and checks the result and the absence of bank conflicts for every slice width.
//
// A stage: the step's 16 gathered B rows of stage_chunks 16-byte pieces each (2, 4 or 8: the slice's m16 tiles' pieces
// rounded up to a power of two, so that a 16-column slice's rows are a quarter of a 64-column one's), then the step's
// 128 values, 8 bytes per lane in the mma's B-fragment order, then the 64-byte record of the piece the step ends (if it
// ends one). Piece p = row * stage_chunks + chunk is stored at p ^ ((p / 8) % 8): the XOR stays inside p's 128-byte
// line, and the 8 rows one ldmatrix phase reads (same chunk, rows r .. r + 7) land in the 8 distinct 16-byte bank
// groups for 2, 4 and 8 pieces a row (not for 6, hence the rounding).
#pragma once

#include "kernels/host_device.hpp"
#include "kernels/vector_params.hpp"

namespace bcsr24::kernels::vector_layout {

/// Pieces of a stage row for a launch whose widest slice is `width` columns (min(n, kVectorSliceColumns)).
BCSR24_HOST_DEVICE constexpr int stage_chunks(int width) { return width <= 16 ? 2 : width <= 32 ? 4 : 8; }
BCSR24_HOST_DEVICE constexpr int stage_b_bytes(int chunks) { return 16 * chunks * 16; }
BCSR24_HOST_DEVICE constexpr int stage_bytes(int chunks) {
  return stage_b_bytes(chunks) + kVectorStageValueBytes + kVectorStagePieceBytes;
}
/// Dynamic shared memory of a block: kVectorWarps warps of kVectorStages stages.
BCSR24_HOST_DEVICE constexpr int shared_bytes(int width) {
  return kVectorWarps * kVectorStages * stage_bytes(stage_chunks(width));
}
// 228 KiB a Hopper SM, 1 KiB of it reserved per block.
static_assert((shared_bytes(kVectorSliceColumns) + 1024) * kVectorMinBlocksPerSm <= 228 * 1024,
              "the widest slice's blocks fit an SM's shared memory at the blocks per SM the registers allow");
static_assert(shared_bytes(kVectorSliceColumns) <= 48 * 1024, "default dynamic shared memory: no attribute to set");

/// The copy: a slice of m16 tiles copies 2 * m_tiles pieces per gathered row; piece index i (lane + 32 s at copy
/// step s) is piece copy_chunk of row copy_row.
BCSR24_HOST_DEVICE constexpr int copy_row(int i, int chunks) { return i / chunks; }
BCSR24_HOST_DEVICE constexpr int copy_chunk(int i, int chunks) { return i - (i / chunks) * chunks; }
/// Byte offset in a stage of piece `chunk` of gathered row `row`, in a stage of `stage_chunks` pieces a row.
BCSR24_HOST_DEVICE constexpr int piece_offset(int row, int chunk, int stage_chunks) {
  return ((row * stage_chunks + chunk) ^ (((row * stage_chunks + chunk) >> 3) & 7)) * 16;
}
/// Byte offset in a stage of lane's 8 bytes of values (its two B-fragment registers).
BCSR24_HOST_DEVICE constexpr int values_offset(int lane, int stage_chunks) {
  return stage_b_bytes(stage_chunks) + lane * 8;
}
/// Byte offset in a stage of the piece record (VectorPiece) copied with a piece's last step: 16-byte aligned.
BCSR24_HOST_DEVICE constexpr int piece_record_offset(int stage_chunks) {
  return stage_b_bytes(stage_chunks) + kVectorStageValueBytes;
}

/// ldmatrix.x4.trans for m16 tile mt: lane 8q + r points at row r of matrix q, which is gathered row
/// r + 8 (q / 2) (K 0-7 or 8-15), piece 2 mt + q % 2 (columns 0-7 or 8-15 of the tile): matrices q = 0..3 are the
/// A fragment's a0..a3 of B^T (rows m 0-7 / 8-15, columns k 0-7 / 8-15).
BCSR24_HOST_DEVICE constexpr int fragment_row(int lane) { return (lane & 7) + 8 * (lane >> 4); }
BCSR24_HOST_DEVICE constexpr int fragment_chunk(int lane, int mt) { return 2 * mt + ((lane >> 3) & 1); }

/// Accumulator e (0..3) of `lane` in m16 tile mt: column of the slice and row of the window (C^T's m and n). The
/// epilogue writes C from the accumulators: for one (mt, e) the warp writes 4 rows x 8 consecutive columns.
BCSR24_HOST_DEVICE constexpr int acc_column(int lane, int mt, int e) { return 16 * mt + (lane >> 2) + 8 * (e / 2); }
BCSR24_HOST_DEVICE constexpr int acc_row(int lane, int e) { return 2 * (lane & 3) + (e % 2); }

}  // namespace bcsr24::kernels::vector_layout
