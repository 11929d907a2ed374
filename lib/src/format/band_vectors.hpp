// The narrow-vector layout: the nonzeros of chosen 16-row bands grouped as 8x1 column vectors per 8-row window,
// for the narrow-vector tensor-core kernel (docs/KERNELS.md, "The narrow-vector path").
//
// The kernel swaps the operands of mma.m16n8k16: C^T(window) = B^T(gathered rows) x A^T(vectors), with M = 16
// columns of B, N = 8 rows of the window and K = 16 vectors. So a window's vectors are stored in groups of
// kVectorGroup, each group one K-step: 16 column indices (the B rows the step gathers) and 16 x 8 values in the
// order the mma's B fragment wants them (vector_value_offset), one coalesced 256-byte load per warp and step.
// Only columns that hold a nonzero in the window are stored; the last group of a window is padded with zero
// vectors whose column index is a real column of the window, so the loop needs no bounds test and never reads a
// B row that does not exist.
//
// Like the CSR rows (band_csr.hpp), the vectors are taken from the stored tiles: the same 16-bit values (fp16 or
// bf16 bits, scaled by the row exponents), the same stored row order and B rows, so a band gives the same product
// on every path up to the order of fp32 additions. Precision::split has no vector form (its low parts would need a
// second product): extract_band_vectors refuses it.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/precision.hpp"
#include "format/band_csr.hpp"
#include "format/bcsr24_matrix.hpp"

namespace bcsr24::detail {

/// Rows of a window: mma.m16n8k16's N, the sparse operand's width once the operands are swapped.
inline constexpr int kWindowRows = 8;
/// Windows per 16-row band.
inline constexpr int kWindowsPerBand = kTileRows / kWindowRows;
/// Vectors per group (one K-step of m16n8k16).
inline constexpr int kVectorGroup = 16;
/// Values per group: 16 vectors of 8 rows.
inline constexpr int kVectorGroupValues = kVectorGroup * kWindowRows;
static_assert(kTileRows % kWindowRows == 0, "a band is a whole number of windows");

/// Index within its group's kVectorGroupValues of row r (0..7) of vector k (0..15) of the group: lane 4r + t of
/// the warp reads the 4 values at 4 * lane, which are rows r of vectors 2t, 2t + 1, 2t + 8, 2t + 9, exactly its
/// two B-fragment registers of mma.m16n8k16 (.col: b0 = k 2t, 2t+1 of column r; b1 = k 2t+8, 2t+9).
constexpr int vector_value_offset(int k, int r) { return 4 * (4 * r + (k % 8) / 2) + (k % 2) + 2 * (k / 8); }

/// The vectors of some bands: two windows per band, in band order.
struct BandVectors {
  std::vector<std::int32_t> bands;      ///< tile rows, increasing
  /// Per window: its index among all windows of the matrix (2 band + half): it holds stored rows 8w .. 8w + 7.
  std::vector<std::int32_t> window;
  std::vector<std::int32_t> group_ptr;  ///< windows + 1 offsets, in groups of kVectorGroup vectors
  /// Per vector: the B row (original column of A) it multiplies, increasing within a window over its real vectors;
  /// a padding vector repeats the window's last real column.
  std::vector<std::int32_t> col;
  /// kVectorGroupValues per group in fragment order (vector_value_offset): fp16 or bf16 bits, 0 where the row
  /// has no entry in that column.
  std::vector<fp16_t> values;
  std::vector<std::int32_t> real_vectors;  ///< per window: vectors that hold a nonzero (the rest are padding)
  Precision precision = Precision::fp16;
  std::int64_t nnz = 0;  ///< stored nonzero values

  std::int64_t windows() const noexcept { return static_cast<std::int64_t>(window.size()); }
  std::int64_t vectors() const noexcept { return static_cast<std::int64_t>(col.size()); }
  std::int64_t groups() const noexcept { return vectors() / kVectorGroup; }
  /// Bytes the kernel reads of A: per vector its column index and 8 values, per window its index and pointer.
  std::int64_t bytes() const noexcept {
    return static_cast<std::int64_t>(col.size() * 4 + values.size() * 2 + window.size() * 4 + group_ptr.size() * 4);
  }
};

/// Vectors of one band as the cost model sees them: per window, the distinct columns holding a nonzero (real
/// vectors) and the groups of kVectorGroup they take once padded.
struct BandVectorCounts {
  std::int32_t vectors = 0;
  std::int32_t groups = 0;
  std::int32_t longest_window_groups = 0;  ///< the groups of the band's longer window (the other has the rest)
};
/// One entry per band of `a` (any precision: the counts do not depend on the values' encoding).
std::vector<BandVectorCounts> band_vector_counts(const Bcsr24Matrix& a);

/// Builds the vectors of `bands` (increasing tile rows of `a`).
/// @throw InvalidArgument for a split matrix (no vector form), a band out of range or out of order, or a row that
///        names one B row twice; SizeLimitError beyond 2^31 - 1 vectors.
BandVectors extract_band_vectors(const Bcsr24Matrix& a, const std::vector<std::int32_t>& bands);

/// The same from CSR rows already extracted from `a` (format/band_csr.hpp) whose bands include `bands`: the upload
/// makes its vectors from its CSR copy where that holds every vector band, instead of decoding the tiles again.
/// @throw InvalidArgument for split precision, or a band not in csr.bands or out of order.
BandVectors band_vectors_from_csr(const BandCsr& csr, const std::vector<std::int32_t>& bands);

/// One stored entry of a BandVectors, decoded: its stored row (16 band + r), B row and value bits.
struct VectorEntry {
  std::int64_t stored_row = 0;
  std::int32_t b_row = 0;
  fp16_t value = 0;
};
/// Every nonzero value the vectors hold, window by window, vector by vector, row by row (padding and zero slots
/// skipped). @throw InvalidArgument where the layout is inconsistent (sizes, pointers, a padding vector that holds
/// a value, columns not increasing).
std::vector<VectorEntry> decode_band_vectors(const BandVectors& v);

/// CPU product of a BandVectors in double (the oracle for this layout): every non-padding row of its windows, C
/// row original_row, becomes alpha * 2^a.exponent_of_row(row) * (row . B) + beta * C; B is a.cols x n (fp16 or
/// bf16 bits as v.precision says). Rows of C outside the bands are not touched.
/// @throw InvalidArgument for n < 1, leading dimensions below n, or a column outside [0, a.cols).
void reference_spmm_band_vectors(const BandVectors& v, const Bcsr24Matrix& a, std::int32_t n, const fp16_t* b,
                                 std::int64_t ldb, float* c, std::int64_t ldc, double alpha, double beta);

}  // namespace bcsr24::detail
