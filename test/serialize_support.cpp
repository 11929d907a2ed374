// The .b24 tests' shared helpers (serialize_support.hpp).
#include "serialize_support.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <utility>

#include "bcsr24/error.hpp"
#include "format/serialize.hpp"
#include "format/tile_layout.hpp"
#include "test_support.hpp"

namespace bcsr24::test {

void require_identical(const Bcsr24Matrix& a, const Bcsr24Matrix& b) {
  REQUIRE(a.rows == b.rows);
  REQUIRE(a.cols == b.cols);
  REQUIRE(a.tile_rows == b.tile_rows);
  REQUIRE(a.tile_cols == b.tile_cols);
  REQUIRE(a.nnz == b.nnz);
  REQUIRE(a.sparse24_nnz == b.sparse24_nnz);
  REQUIRE(a.dense_nnz == b.dense_nnz);
  for (const auto& [x, y] : {std::pair{&a.sparse24, &b.sparse24}, std::pair{&a.dense, &b.dense}}) {
    require_same_tiles(*x, *y);
    REQUIRE(x->values_lo == y->values_lo);
    REQUIRE(x->b_rows == y->b_rows);
  }
  REQUIRE(a.precision == b.precision);
  REQUIRE(a.row_exponent == b.row_exponent);
  REQUIRE(a.scaling.per_row == b.scaling.per_row);
  REQUIRE(a.scaling.min_row_exponent == b.scaling.min_row_exponent);
  REQUIRE(a.scaling.max_row_exponent == b.scaling.max_row_exponent);
  REQUIRE(std::memcmp(&a.scaling.max_flushed_relative, &b.scaling.max_flushed_relative, sizeof(double)) == 0);
  REQUIRE(std::memcmp(&a.scaling.max_relative_error, &b.scaling.max_relative_error, sizeof(double)) == 0);
  REQUIRE(std::memcmp(&a.scaling.frobenius_relative_error, &b.scaling.frobenius_relative_error, sizeof(double)) == 0);
  REQUIRE(a.layout == b.layout);
  REQUIRE(a.reordering == b.reordering);
  REQUIRE(a.row_order == b.row_order);
  REQUIRE(a.scaling.exponent == b.scaling.exponent);
  REQUIRE(std::memcmp(&a.scaling.max_abs, &b.scaling.max_abs, sizeof(double)) == 0);
  REQUIRE(std::memcmp(&a.scaling.min_abs_nonzero, &b.scaling.min_abs_nonzero, sizeof(double)) == 0);
  REQUIRE(a.scaling.overflow_count == b.scaling.overflow_count);
  REQUIRE(a.scaling.underflow_count == b.scaling.underflow_count);
  REQUIRE(a.scaling.subnormal_count == b.scaling.subnormal_count);
  REQUIRE(a.scaling.flushed_count == b.scaling.flushed_count);
}

Bcsr24Matrix sample_matrix(std::int32_t rows, std::int32_t cols, std::uint64_t seed, double scale,
                           const ConvertOptions& options) {
  CsrMatrix a = xdys_matrix(rows, cols, 20, 30, seed);
  for (double& v : a.values) v *= scale;
  return convert_to_bcsr24(a, options);
}

ConvertOptions aligned_options(ScalingPolicy scaling, Precision precision) {
  ConvertOptions options;
  options.layout = TileLayout::aligned;
  options.reorder = Reordering::none;
  options.scaling = scaling;
  options.precision = precision;
  return options;
}

Bcsr24Matrix aligned_sample(std::int32_t rows, std::int32_t cols, std::uint64_t seed,
                            ScalingPolicy scaling, Precision precision) {
  return convert_to_bcsr24(xdys_matrix(rows, cols, 30, 30, seed), aligned_options(scaling, precision));
}

std::vector<std::int32_t> implicit_b_rows(const TileList& list, std::int32_t cols) {
  std::vector<std::int32_t> b_rows;
  for (const std::int32_t c : list.col_idx)
    for (int j = 0; j < kTileCols; ++j) {
      const std::int64_t row = std::int64_t{c} * kTileCols + j;
      b_rows.push_back(row < cols ? std::int32_t(row) : -1);
    }
  return b_rows;
}

FileOffsets v3_offsets(const Bcsr24Matrix& a) {
  FileOffsets o{};
  const std::size_t S = std::size_t(a.sparse24.tiles()), D = std::size_t(a.dense.tiles());
  const std::size_t row_ptr = (std::size_t(a.tile_rows) + 1) * 4;
  const std::size_t lo = a.precision == Precision::split ? 1 : 0;
  o.row_order = 208;
  o.row_exponent = o.row_order + a.row_order.size() * 4;
  o.sparse_row_ptr = o.row_exponent + a.row_exponent.size() * 2;
  o.sparse_col = o.sparse_row_ptr + row_ptr;
  o.sparse_values = o.sparse_col + 4 * S;
  o.sparse_values_lo = o.sparse_values + 512 * S;
  o.sparse_meta = o.sparse_values_lo + 512 * S * lo;
  o.sparse_b_rows = o.sparse_meta + 64 * S;
  o.dense_row_ptr = o.sparse_b_rows + 4 * a.sparse24.b_rows.size();
  o.dense_col = o.dense_row_ptr + row_ptr;
  o.dense_values = o.dense_col + 4 * D;
  o.dense_values_lo = o.dense_values + 1024 * D;
  o.dense_b_rows = o.dense_values_lo + 1024 * D * lo;
  o.crc = o.dense_b_rows + 4 * a.dense.b_rows.size();
  return o;
}

void require_rejected(const std::string& path, const std::string& fragment) {
  try {
    load_bcsr24(path);
    FAIL("load_bcsr24 accepted a damaged file");
  } catch (const ParseError& e) {
    const std::string what = e.what();
    CAPTURE(what);
    REQUIRE(what.find(path) != std::string::npos);
    REQUIRE(e.line() == 0);
    if (!fragment.empty()) REQUIRE(what.find(fragment) != std::string::npos);
  }
}

}  // namespace bcsr24::test
