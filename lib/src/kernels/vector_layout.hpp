// Where one K-step of the narrow-vector kernel sits in a warp's shared-memory stage, which piece each lane copies
// and reads, and which output each accumulator holds; shared by the kernel (vector_spmm.cu) and its CPU test
// (test/test_vector_layout.cpp), which emulates a K-step of ldmatrix.x4.trans and mma.m16n8k16 through these maps
// and checks the result and the absence of bank conflicts for every slice width.
//
// A stage: the step's 16 gathered B rows of kVectorSliceColumns 16-bit values (kStageChunks 16-byte pieces each,
// piece c of row r stored at c ^ (r % 8): the 8 rows one ldmatrix phase reads lie in the 8 distinct 16-byte bank
// groups), then the step's 128 values, 8 bytes per lane in the mma's B-fragment order.
#pragma once

#include "kernels/host_device.hpp"
#include "kernels/vector_params.hpp"

namespace bcsr24::kernels::vector_layout {

constexpr int kStageChunks = kVectorSliceColumns / 8;
constexpr int kStageRowBytes = kStageChunks * 16;
/// Floats per row of the epilogue's staging of the 8 x 64 result: the padding of 4 puts the 32 lanes of one
/// accumulator store (window row 2t, column g of an m16 tile) in 32 distinct banks (68 * 2t + g = 8t + g mod 32).
constexpr int kResultStride = kVectorSliceColumns + 4;
static_assert(kStageChunks == 8, "the swizzle (piece ^ row % 8) stays inside a row of 8 pieces");
static_assert(8 * kResultStride * 4 <= kVectorStageBytes, "the result fits in the warp's first stage");

/// The copy: a slice of m16 tiles copies 2 * m_tiles pieces per gathered row; piece index i (lane + 32 s at copy
/// step s) is piece copy_chunk of row copy_row.
BCSR24_HOST_DEVICE constexpr int copy_row(int i, int chunks) { return i / chunks; }
BCSR24_HOST_DEVICE constexpr int copy_chunk(int i, int chunks) { return i - (i / chunks) * chunks; }
/// Byte offset in a stage of piece `chunk` of gathered row `row`.
BCSR24_HOST_DEVICE constexpr int piece_offset(int row, int chunk) {
  return row * kStageRowBytes + ((chunk ^ (row & 7)) * 16);
}
/// Byte offset in a stage of lane's 8 bytes of values (its two B-fragment registers).
BCSR24_HOST_DEVICE constexpr int values_offset(int lane) { return kVectorStageBBytes + lane * 8; }

/// ldmatrix.x4.trans for m16 tile mt: lane 8q + r points at row r of matrix q, which is gathered row
/// r + 8 (q / 2) (K 0-7 or 8-15), piece 2 mt + q % 2 (columns 0-7 or 8-15 of the tile): matrices q = 0..3 are the
/// A fragment's a0..a3 of B^T (rows m 0-7 / 8-15, columns k 0-7 / 8-15).
BCSR24_HOST_DEVICE constexpr int fragment_row(int lane) { return (lane & 7) + 8 * (lane >> 4); }
BCSR24_HOST_DEVICE constexpr int fragment_chunk(int lane, int mt) { return 2 * mt + ((lane >> 3) & 1); }

/// Accumulator e (0..3) of `lane` in m16 tile mt: column of the slice and row of the window (C^T's m and n).
BCSR24_HOST_DEVICE constexpr int acc_column(int lane, int mt, int e) { return 16 * mt + (lane >> 2) + 8 * (e / 2); }
BCSR24_HOST_DEVICE constexpr int acc_row(int lane, int e) { return 2 * (lane & 3) + (e % 2); }

}  // namespace bcsr24::kernels::vector_layout
