// The CUDA-core layout: CSR rows of chosen 16-row bands, taken from a converted matrix's stored tiles, and the
// per-band counts the cost model uses to decide which bands go there.
//
// The rows are extracted from the tiles (not from the source CSR), so they hold exactly the fp16 values the
// tile kernels multiply, in the same stored row order and with the same B rows: a band gives the same product
// on either path, up to the order of fp32 additions.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/bcsr24_matrix.hpp"

namespace bcsr24::detail {

/// What one band (tile row) holds, as the cost model sees it.
struct BandStats {
  std::int32_t sparse24_tiles = 0;
  std::int32_t dense_tiles = 0;
  std::int64_t sparse24_nnz = 0;  ///< stored nonzero fp16 values in its 2:4 tiles
  std::int64_t dense_nnz = 0;     ///< stored nonzero fp16 values in its dense tiles
  std::int32_t rows = 0;          ///< rows of C it writes (16, fewer in a last band or with padding rows)
  std::int32_t max_row_nnz = 0;   ///< longest of its rows

  std::int64_t nnz() const noexcept { return sparse24_nnz + dense_nnz; }
  std::int32_t tiles() const noexcept { return sparse24_tiles + dense_tiles; }
};

/// One entry per band. Counts stored values (a value flushed to fp16 zero is not multiplied by either path).
std::vector<BandStats> band_stats(const Bcsr24Matrix& a);

/// CSR of some bands: 16 row slots per band, in the band's stored row order.
struct BandCsr {
  std::vector<std::int32_t> bands;    ///< tile row of each group of 16 slots, increasing
  std::vector<std::int32_t> row_ptr;  ///< 16 * bands.size() + 1 offsets into b_row / values
  std::vector<std::int32_t> b_row;    ///< row of B (original column of A) of each entry, increasing within a row
  std::vector<fp16_t> values;         ///< stored fp16 value (A * 2^-scale exponent) of each entry
  std::vector<std::int32_t> out_row;  ///< row of C each slot writes, -1 for a padding row

  std::int64_t nnz() const noexcept { return static_cast<std::int64_t>(values.size()); }
  std::int64_t slots() const noexcept { return static_cast<std::int64_t>(out_row.size()); }
  /// Bytes the CUDA-core kernel reads of A: row pointers, output rows, B rows and values.
  std::int64_t bytes() const noexcept {
    return static_cast<std::int64_t>(row_ptr.size() * 4 + out_row.size() * 4 + b_row.size() * 4 + values.size() * 2);
  }
};

/// Builds the CSR rows of `bands` (increasing tile rows of `a`).
/// @throw InvalidArgument for a band out of range or out of order; SizeLimitError beyond 2^31 - 1 entries.
BandCsr extract_band_csr(const Bcsr24Matrix& a, const std::vector<std::int32_t>& bands);

/// CPU product of a BandCsr in double (the oracle for this layout): for every non-padding slot, row out_row of
/// C becomes alpha * 2^scale_exponent * (row . B) + beta * C. Rows of C outside the bands are not touched.
void reference_spmm_band_csr(const BandCsr& csr, std::int32_t scale_exponent, std::int32_t k, std::int32_t n,
                             const fp16_t* b, std::int64_t ldb, float* c, std::int64_t ldc, double alpha, double beta);

}  // namespace bcsr24::detail
