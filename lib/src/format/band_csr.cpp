// Band statistics and CSR extraction from the stored tiles (see band_csr.hpp).
#include "format/band_csr.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <string>
#include <utility>

#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "format/stored_value.hpp"
#include "format/tile_codec.hpp"

namespace bcsr24::detail {

namespace {

/// Calls visit(tile list, tile index, decoded tile, decoded low parts) for every tile of band `band`, 2:4 list
/// first. The low parts stay 0 unless the matrix is split.
template <typename Visit>
void for_each_band_tile(const Bcsr24Matrix& a, std::int32_t band, TileElements& tile, TileElements& tile_lo,
                        Visit&& visit) {
  const auto b = static_cast<std::size_t>(band);
  for (std::int32_t t = a.sparse24.row_ptr[b]; t < a.sparse24.row_ptr[b + 1]; ++t) {
    unpack_list_tile(a.sparse24, true, t, tile, tile_lo);
    visit(a.sparse24, t, tile, tile_lo);
  }
  for (std::int32_t t = a.dense.row_ptr[b]; t < a.dense.row_ptr[b + 1]; ++t) {
    unpack_list_tile(a.dense, false, t, tile, tile_lo);
    visit(a.dense, t, tile, tile_lo);
  }
}

void check_product_arguments(std::int32_t n, std::int64_t ldb, std::int64_t ldc) {
  if (n < 1 || ldb < n || ldc < n)
    throw InvalidArgument("reference_spmm_band_csr: n = " + std::to_string(n) + ", ldb = " + std::to_string(ldb) +
                          ", ldc = " + std::to_string(ldc) + " (need n >= 1 and leading dimensions >= n)");
}

/// The product with B read through widen(b[k * ldb + j]) (exact).
template <class T, class Widen>
void multiply_band_csr(const BandCsr& csr, const Bcsr24Matrix& a, std::int32_t n, const T* b, std::int64_t ldb,
                       float* c, std::int64_t ldc, double alpha, double beta, Widen widen) {
  check_product_arguments(n, ldb, ldc);
  const bool split = csr.precision == Precision::split;
  std::vector<double> acc(static_cast<std::size_t>(n));
  for (std::int64_t slot = 0; slot < csr.slots(); ++slot) {
    const std::int32_t row = csr.out_row[std::size_t(slot)];
    if (row < 0) continue;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::int32_t e = csr.row_ptr[std::size_t(slot)]; e < csr.row_ptr[std::size_t(slot) + 1]; ++e) {
      const std::int32_t kb = csr.b_row[std::size_t(e)];
      if (kb < 0 || kb >= a.cols)
        throw InvalidArgument("reference_spmm_band_csr: B row " + std::to_string(kb) + " out of range");
      const double v = decode_stored_value(csr.precision, csr.values[std::size_t(e)],
                                           split ? csr.values_lo[std::size_t(e)] : fp16_t{0});
      for (std::int32_t j = 0; j < n; ++j) acc[std::size_t(j)] += v * widen(b[kb * ldb + j]);
    }
    const std::int32_t exponent = a.exponent_of_row(row);
    float* c_row = c + std::int64_t(row) * ldc;
    for (std::int32_t j = 0; j < n; ++j) {
      const double product = std::ldexp(alpha * acc[std::size_t(j)], exponent);
      c_row[j] = static_cast<float>(beta == 0.0 ? product : product + beta * double(c_row[j]));
    }
  }
}

}  // namespace

std::vector<BandStats> band_stats(const Bcsr24Matrix& a) {
  std::vector<BandStats> stats(static_cast<std::size_t>(a.tile_rows));
  TileElements tile{}, tile_lo{};
  for (std::int32_t band = 0; band < a.tile_rows; ++band) {
    BandStats& s = stats[static_cast<std::size_t>(band)];
    s.sparse24_tiles = a.sparse24.row_ptr[std::size_t(band) + 1] - a.sparse24.row_ptr[std::size_t(band)];
    s.dense_tiles = a.dense.row_ptr[std::size_t(band) + 1] - a.dense.row_ptr[std::size_t(band)];
    std::array<std::int32_t, kTileRows> row_nnz{};
    for_each_band_tile(a, band, tile, tile_lo,
                       [&](const TileList& list, std::int32_t, const TileElements& hi, const TileElements& lo) {
      std::int64_t count = 0;
      for (int r = 0; r < kTileRows; ++r)
        for (int c = 0; c < kTileCols; ++c) {
          const auto at = std::size_t(r * kTileCols + c);
          if (is_stored_nonzero(a.precision, hi[at], lo[at])) {
            ++row_nnz[std::size_t(r)];
            ++count;
          }
        }
      (&list == &a.sparse24 ? s.sparse24_nnz : s.dense_nnz) += count;
    });
    for (int r = 0; r < kTileRows; ++r) {
      if (a.original_row(std::int64_t(band) * kTileRows + r) >= 0) ++s.rows;
      s.max_row_nnz = std::max(s.max_row_nnz, row_nnz[std::size_t(r)]);
    }
  }
  return stats;
}

BandCsr extract_band_csr(const Bcsr24Matrix& a, const std::vector<std::int32_t>& bands) {
  BandCsr csr;
  csr.bands = bands;
  csr.precision = a.precision;
  const bool split = a.precision == Precision::split;
  csr.row_ptr.reserve(bands.size() * kTileRows + 1);
  csr.out_row.reserve(bands.size() * kTileRows);
  csr.row_ptr.push_back(0);
  TileElements tile{}, tile_lo{};
  struct Entry {
    std::int32_t b_row;
    StoredValue value;
  };
  std::array<std::vector<Entry>, kTileRows> rows;
  std::int32_t previous = -1;
  for (const std::int32_t band : bands) {
    if (band < 0 || band >= a.tile_rows || band <= previous)
      throw InvalidArgument("extract_band_csr: band " + std::to_string(band) + " is out of range [0, " +
                            std::to_string(a.tile_rows) + ") or not increasing");
    previous = band;
    for (auto& row : rows) row.clear();
    for_each_band_tile(a, band, tile, tile_lo,
                       [&](const TileList& list, std::int32_t t, const TileElements& hi, const TileElements& lo) {
      for (int r = 0; r < kTileRows; ++r)
        for (int c = 0; c < kTileCols; ++c) {
          const auto at = std::size_t(r * kTileCols + c);
          if (!is_stored_nonzero(a.precision, hi[at], lo[at])) continue;
          const std::int64_t k = list.b_row(t, c, a.cols);
          if (k >= 0) rows[std::size_t(r)].push_back({static_cast<std::int32_t>(k), {hi[at], lo[at]}});
        }
    });
    for (int r = 0; r < kTileRows; ++r) {
      auto& row = rows[std::size_t(r)];
      // Increasing B rows: neighbouring entries of a row then touch nearby rows of B. Stable, so the order
      // is deterministic even if a B row were named twice.
      std::stable_sort(row.begin(), row.end(), [](const Entry& x, const Entry& y) { return x.b_row < y.b_row; });
      for (const Entry& e : row) {
        csr.b_row.push_back(e.b_row);
        csr.values.push_back(e.value.hi);
        if (split) csr.values_lo.push_back(e.value.lo);
      }
      if (csr.values.size() > static_cast<std::size_t>(INT32_MAX))
        throw SizeLimitError("extract_band_csr: more than 2^31 - 1 entries in the CUDA-core rows");
      csr.row_ptr.push_back(static_cast<std::int32_t>(csr.values.size()));
      csr.out_row.push_back(a.original_row(std::int64_t(band) * kTileRows + r));
    }
  }
  return csr;
}

void reference_spmm_band_csr(const BandCsr& csr, const Bcsr24Matrix& a, std::int32_t n, const fp16_t* b,
                             std::int64_t ldb, float* c, std::int64_t ldc, double alpha, double beta) {
  multiply_band_csr(csr, a, n, b, ldb, c, ldc, alpha, beta, [](fp16_t h) { return fp16_bits_to_double(h); });
}

void reference_spmm_band_csr(const BandCsr& csr, const Bcsr24Matrix& a, std::int32_t n, const float* b,
                             std::int64_t ldb, float* c, std::int64_t ldc, double alpha, double beta) {
  multiply_band_csr(csr, a, n, b, ldb, c, ldc, alpha, beta, [](float x) { return static_cast<double>(x); });
}

}  // namespace bcsr24::detail
