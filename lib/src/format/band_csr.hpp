// The CUDA-core layout: CSR rows of chosen 16-row bands, taken from a converted matrix's stored tiles, and the
// per-band counts the cost model uses to decide which bands go there.
//
// The rows are extracted from the tiles (not from the source CSR), so they hold exactly the stored values the
// tile kernels multiply (both parts of a split value), in the same stored row order and with the same B rows:
// a band gives the same product on either path, up to the order of fp32 additions.
#pragma once

#include <cstdint>
#include <vector>

#include "format/bcsr24_matrix.hpp"
#include "bcsr24/precision.hpp"

namespace bcsr24::detail {

/// What one band (tile row) holds, as the cost model sees it.
struct BandStats {
  std::int32_t sparse24_tiles = 0;
  std::int32_t dense_tiles = 0;
  std::int64_t sparse24_nnz = 0;  ///< stored nonzero values in its 2:4 tiles (split: hi or lo nonzero)
  std::int64_t dense_nnz = 0;     ///< stored nonzero values in its dense tiles
  std::int32_t rows = 0;          ///< rows of C it writes (16, fewer in a last band or with padding rows)
  std::int32_t max_row_nnz = 0;   ///< longest of its rows

  std::int64_t nnz() const noexcept { return sparse24_nnz + dense_nnz; }
  std::int32_t tiles() const noexcept { return sparse24_tiles + dense_tiles; }
};

/// One entry per band. Counts stored values (a value flushed to zero is not multiplied by either path).
std::vector<BandStats> band_stats(const Bcsr24Matrix& a);

/// CSR of some bands: 16 row slots per band, in the band's stored row order.
struct BandCsr {
  std::vector<std::int32_t> bands;    ///< tile row of each group of 16 slots, increasing
  std::vector<std::int32_t> row_ptr;  ///< 16 * bands.size() + 1 offsets into b_row / values
  std::vector<std::int32_t> b_row;    ///< row of B (original column of A) of each entry, increasing within a row
  /// Stored value of each entry (A * 2^-(its row's exponent), in `precision`; split: the high part).
  std::vector<fp16_t> values;
  std::vector<fp16_t> values_lo;      ///< Precision::split only (else empty): the low part of each entry
  std::vector<std::int32_t> out_row;  ///< row of C each slot writes, -1 for a padding row
  Precision precision = Precision::fp16;  ///< the matrix's: how to read values (and values_lo)

  std::int64_t nnz() const noexcept { return static_cast<std::int64_t>(values.size()); }
  std::int64_t slots() const noexcept { return static_cast<std::int64_t>(out_row.size()); }
  /// Bytes the CUDA-core kernel reads of A: row pointers, output rows, B rows and values (both parts).
  std::int64_t bytes() const noexcept {
    return static_cast<std::int64_t>(row_ptr.size() * 4 + out_row.size() * 4 + b_row.size() * 4 + values.size() * 2 +
                                     values_lo.size() * 2);
  }
};

/// Builds the CSR rows of `bands` (increasing tile rows of `a`).
/// @throw InvalidArgument for a band out of range or out of order; SizeLimitError beyond 2^31 - 1 entries.
BandCsr extract_band_csr(const Bcsr24Matrix& a, const std::vector<std::int32_t>& bands);

/// CPU product of a BandCsr in double (the oracle for this layout): for every non-padding slot, row out_row of
/// C becomes alpha * 2^a.exponent_of_row(out_row) * (row . B) + beta * C, B being a.cols x n. `a` is the
/// matrix the rows were extracted from. Rows of C outside the bands are not touched.
/// @throw InvalidArgument for n < 1, leading dimensions below n, or a B row outside [0, a.cols).
void reference_spmm_band_csr(const BandCsr& csr, const Bcsr24Matrix& a, std::int32_t n, const fp16_t* b,
                             std::int64_t ldb, float* c, std::int64_t ldc, double alpha, double beta);
/// The same with an fp32 B (used exactly, in double).
void reference_spmm_band_csr(const BandCsr& csr, const Bcsr24Matrix& a, std::int32_t n, const float* b,
                             std::int64_t ldb, float* c, std::int64_t ldc, double alpha, double beta);

}  // namespace bcsr24::detail
