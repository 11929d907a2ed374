// The stored matrix decoded back into values (internal): as a dense array, as CSR, or a few rows of it, each value
// in its precision (split: hi + 2^-11 lo) times its row's power-of-two scale, exactly, in the caller's row and
// column order. Declared in convert.hpp.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "format/convert.hpp"
#include "format/stored_value.hpp"
#include "format/tile_codec.hpp"

namespace bcsr24 {

namespace {

/// Calls fn(row, col, value) for every stored nonzero element of band `tr` whose row keep(row) accepts, in the
/// caller's row and column numbering, with value = the decoded element times 2^(its row's exponent) (exact).
/// Padding positions are skipped.
template <class Keep, class Fn>
void for_each_stored_value_of_band(const Bcsr24Matrix& a, std::int32_t tr, const Keep& keep, const Fn& fn) {
  detail::TileElements tile{}, tile_lo{};
  const auto visit = [&](const TileList& list, bool sparse24, std::int64_t t) {
    detail::unpack_list_tile(list, sparse24, t, tile, tile_lo);
    for (int r = 0; r < kTileRows; ++r) {
      const std::int32_t row = a.original_row(std::int64_t{tr} * kTileRows + r);
      if (row < 0 || !keep(row)) continue;
      const std::int32_t exponent = a.exponent_of_row(row);
      for (int c = 0; c < kTileCols; ++c) {
        const fp16_t hi = tile[static_cast<std::size_t>(r * kTileCols + c)];
        const fp16_t lo = tile_lo[static_cast<std::size_t>(r * kTileCols + c)];
        if (!detail::is_stored_nonzero(a.precision, hi, lo)) continue;
        const std::int64_t col = list.b_row(t, c, a.cols);
        if (col < 0) continue;
        fn(row, static_cast<std::int32_t>(col), std::ldexp(detail::decode_stored_value(a.precision, hi, lo), exponent));
      }
    }
  };
  for (std::int32_t t = a.sparse24.row_ptr[static_cast<std::size_t>(tr)]; t < a.sparse24.row_ptr[static_cast<std::size_t>(tr) + 1]; ++t)
    visit(a.sparse24, true, t);
  for (std::int32_t t = a.dense.row_ptr[static_cast<std::size_t>(tr)]; t < a.dense.row_ptr[static_cast<std::size_t>(tr) + 1]; ++t)
    visit(a.dense, false, t);
}

/// The same for every band and row.
template <class Fn>
void for_each_stored_value(const Bcsr24Matrix& a, const Fn& fn) {
  for (std::int32_t tr = 0; tr < a.tile_rows; ++tr)
    for_each_stored_value_of_band(a, tr, [](std::int32_t) { return true; }, fn);
}

}  // namespace

std::vector<double> decode_to_dense(const Bcsr24Matrix& a) {
  std::vector<double> out(static_cast<std::size_t>(a.rows) * static_cast<std::size_t>(a.cols), 0.0);
  for_each_stored_value(a, [&](std::int32_t row, std::int32_t col, double v) {
    out[static_cast<std::size_t>(std::int64_t{row} * a.cols + col)] = v;
  });
  return out;
}

CsrMatrix stored_matrix_csr(const Bcsr24Matrix& a) {
  std::vector<std::int32_t> rows, cols;
  std::vector<double> values;
  rows.reserve(static_cast<std::size_t>(a.nnz));
  cols.reserve(static_cast<std::size_t>(a.nnz));
  values.reserve(static_cast<std::size_t>(a.nnz));
  for_each_stored_value(a, [&](std::int32_t row, std::int32_t col, double v) {
    rows.push_back(row);
    cols.push_back(col);
    values.push_back(v);
  });
  return csr_from_triplets(a.rows, a.cols, rows, cols, values);
}

CsrMatrix stored_matrix_rows(const Bcsr24Matrix& a, const std::vector<std::int32_t>& rows) {
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i] < 0 || rows[i] >= a.rows || (i > 0 && rows[i] <= rows[i - 1]))
      throw InvalidArgument("stored rows: row " + std::to_string(rows[i]) + " at position " + std::to_string(i) +
                            " is out of [0, " + std::to_string(a.rows) + ") or not above the previous one");
  std::vector<bool> wanted(static_cast<std::size_t>(a.rows), false);
  for (const std::int32_t row : rows) wanted[static_cast<std::size_t>(row)] = true;
  // The bands holding the rows: one pass over the row order when the rows were reordered.
  std::vector<std::int32_t> bands;
  if (a.row_order.empty()) {
    for (const std::int32_t row : rows) bands.push_back(row / kTileRows);
  } else {
    for (std::size_t i = 0; i < a.row_order.size(); ++i)
      if (a.row_order[i] >= 0 && wanted[static_cast<std::size_t>(a.row_order[i])])
        bands.push_back(static_cast<std::int32_t>(i / kTileRows));
  }
  bands.erase(std::unique(bands.begin(), bands.end()), bands.end());  // ascending already
  std::vector<std::int32_t> local_rows, cols;
  std::vector<double> values;
  const auto keep = [&](std::int32_t row) { return bool(wanted[static_cast<std::size_t>(row)]); };
  for (const std::int32_t tr : bands)
    for_each_stored_value_of_band(a, tr, keep, [&](std::int32_t row, std::int32_t col, double v) {
      local_rows.push_back(static_cast<std::int32_t>(std::lower_bound(rows.begin(), rows.end(), row) - rows.begin()));
      cols.push_back(col);
      values.push_back(v);
    });
  return csr_from_triplets(static_cast<std::int32_t>(rows.size()), a.cols, local_rows, cols, values);
}

}  // namespace bcsr24
