// CPU reference SpMM on the host format: decodes each stored tile through tile_layout.hpp and multiplies in double.
#include "format/reference.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "format/stored_value.hpp"
#include "format/tile_codec.hpp"

namespace bcsr24 {

namespace {

/// One nonzero of a decoded tile: position inside the tile and value (the stored value decoded exactly, before
/// its row's scale).
struct TileEntry {
  int row, col;
  double value;
};

/// Nonzero elements of a decoded tile. Zeros are skipped: they add nothing, and skipping them keeps a tile
/// of a few nonzeros cheap.
void collect_entries(Precision precision, const detail::TileElements& tile, const detail::TileElements& tile_lo,
                     std::vector<TileEntry>& entries) {
  entries.clear();
  for (int r = 0; r < kTileRows; ++r)
    for (int c = 0; c < kTileCols; ++c) {
      const auto at = static_cast<std::size_t>(r * kTileCols + c);
      if (detail::is_stored_nonzero(precision, tile[at], tile_lo[at]))
        entries.push_back({r, c, detail::decode_stored_value(precision, tile[at], tile_lo[at])});
    }
}

void check_arguments(const Bcsr24Matrix& a, std::int32_t n, const void* b, std::int64_t ldb, const float* c,
                     std::int64_t ldc) {
  if (n < 1) throw InvalidArgument("reference_spmm: n must be at least 1, got " + std::to_string(n));
  if (ldb < n || ldc < n)
    throw InvalidArgument("reference_spmm: leading dimensions ldb = " + std::to_string(ldb) + ", ldc = " +
                          std::to_string(ldc) + " must be at least n = " + std::to_string(n));
  if ((a.cols > 0 && b == nullptr) || (a.rows > 0 && c == nullptr))
    throw InvalidArgument("reference_spmm: null B or C");
}

/// The product for B already widened to double (cols x n, leading dimension n).
void multiply(const Bcsr24Matrix& a, std::int32_t n, const std::vector<double>& bd, float* c, std::int64_t ldc,
              double alpha, double beta) {
  std::vector<double> acc(static_cast<std::size_t>(kTileRows) * static_cast<std::size_t>(n));
  detail::TileElements tile{}, tile_lo{};
  std::vector<TileEntry> entries;
  entries.reserve(kDenseTileValues);

  // Tile column e.col multiplies the B row the list names for it (aligned: its column; gathered: b_rows).
  const auto accumulate = [&](const TileList& list, bool sparse24, std::int64_t t) {
    detail::unpack_list_tile(list, sparse24, t, tile, tile_lo);
    collect_entries(a.precision, tile, tile_lo, entries);
    for (const TileEntry& e : entries) {
      const std::int64_t k = list.b_row(t, e.col, a.cols);
      // A nonzero in the padding would be a broken matrix; it cannot meet a row of B, so it is ignored here
      // (load_bcsr24 rejects such files).
      if (k < 0) continue;
      const double* b_row = &bd[static_cast<std::size_t>(k * n)];
      double* acc_row = &acc[static_cast<std::size_t>(e.row) * static_cast<std::size_t>(n)];
      for (std::int32_t j = 0; j < n; ++j) acc_row[j] += e.value * b_row[j];
    }
  };

  for (std::int32_t tr = 0; tr < a.tile_rows; ++tr) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::int32_t t = a.sparse24.row_ptr[static_cast<std::size_t>(tr)]; t < a.sparse24.row_ptr[static_cast<std::size_t>(tr) + 1]; ++t)
      accumulate(a.sparse24, true, t);
    for (std::int32_t t = a.dense.row_ptr[static_cast<std::size_t>(tr)]; t < a.dense.row_ptr[static_cast<std::size_t>(tr) + 1]; ++t)
      accumulate(a.dense, false, t);
    for (std::int32_t r = 0; r < kTileRows; ++r) {
      // Stored row r of the band is row original_row(...) of C (reordered layouts); padding rows have none.
      const std::int32_t row = a.original_row(std::int64_t{tr} * kTileRows + r);
      if (row < 0) continue;
      const std::int32_t exponent = a.exponent_of_row(row);
      float* c_row = c + std::int64_t{row} * ldc;
      const double* acc_row = &acc[static_cast<std::size_t>(r) * static_cast<std::size_t>(n)];
      for (std::int32_t j = 0; j < n; ++j) {
        // Stored values of the row are A * 2^-exponent: scale the product back exactly (ldexp, not a rounded
        // factor).
        const double product = std::ldexp(alpha * acc_row[j], exponent);
        // beta == 0 must not read C: 0 * NaN would keep a NaN the caller meant to overwrite.
        c_row[j] = static_cast<float>(beta == 0.0 ? product : product + beta * static_cast<double>(c_row[j]));
      }
    }
  }
}

/// B (cols x n, leading dimension ldb) in double, packed with leading dimension n; widen(x) is exact.
template <class T, class Widen>
std::vector<double> widen_b(const Bcsr24Matrix& a, std::int32_t n, const T* b, std::int64_t ldb, Widen widen) {
  std::vector<double> bd(static_cast<std::size_t>(a.cols) * static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < a.cols; ++k)
    for (std::int32_t j = 0; j < n; ++j) bd[static_cast<std::size_t>(k * n + j)] = widen(b[k * ldb + j]);
  return bd;
}

}  // namespace

template <typename BElement>
void reference_spmm(const Bcsr24Matrix& a, std::int32_t n, const BElement* b, std::int64_t ldb, float* c,
                    std::int64_t ldc, double alpha, double beta) {
  static_assert(std::is_same_v<BElement, fp16_t> || std::is_same_v<BElement, float>, "B is 16-bit or fp32");
  check_arguments(a, n, b, ldb, c, ldc);
  // Widen B once; row k of B is used by every tile that names it. 16-bit B is in the matrix's own 16-bit type, as
  // SpmmPlan::run takes it: bf16 for a bf16 matrix, else fp16.
  if constexpr (std::is_same_v<BElement, float>)
    multiply(a, n, widen_b(a, n, b, ldb, [](float x) { return static_cast<double>(x); }), c, ldc, alpha, beta);
  else if (a.precision == Precision::bf16)
    multiply(a, n, widen_b(a, n, b, ldb, [](fp16_t h) { return double(bf16_to_float(h)); }), c, ldc, alpha, beta);
  else
    multiply(a, n, widen_b(a, n, b, ldb, [](fp16_t h) { return detail::fp16_bits_to_double(h); }), c, ldc, alpha,
             beta);
}

template void reference_spmm<fp16_t>(const Bcsr24Matrix&, std::int32_t, const fp16_t*, std::int64_t, float*,
                                     std::int64_t, double, double);
template void reference_spmm<float>(const Bcsr24Matrix&, std::int32_t, const float*, std::int64_t, float*,
                                    std::int64_t, double, double);

}  // namespace bcsr24
