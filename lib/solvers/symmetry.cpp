// A against its transpose (symmetry.hpp).
#include "symmetry.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "bcsr24/error.hpp"

namespace bcsr24::solver {

namespace {

/// A^T in CSR with sorted rows (a counting pass, then a scatter in row order).
CsrMatrix transpose(const CsrMatrix& a) {
  CsrMatrix t;
  t.rows = a.cols;
  t.cols = a.rows;
  t.row_ptr.assign(std::size_t(a.cols) + 1, 0);
  for (std::int32_t c : a.col_idx) ++t.row_ptr[std::size_t(c) + 1];
  for (std::int32_t i = 0; i < a.cols; ++i) t.row_ptr[std::size_t(i) + 1] += t.row_ptr[std::size_t(i)];
  t.col_idx.resize(a.col_idx.size());
  t.values.resize(a.values.size());
  std::vector<std::int32_t> next(t.row_ptr.begin(), t.row_ptr.end() - 1);
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[std::size_t(i)]; p < a.row_ptr[std::size_t(i) + 1]; ++p) {
      const std::int32_t at = next[std::size_t(a.col_idx[std::size_t(p)])]++;
      t.col_idx[std::size_t(at)] = i;
      t.values[std::size_t(at)] = a.values[std::size_t(p)];
    }
  return t;
}

std::vector<double> diagonal_of(const CsrMatrix& a) {
  std::vector<double> d(std::size_t(a.rows), 0.0);
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[std::size_t(i)]; p < a.row_ptr[std::size_t(i) + 1]; ++p)
      if (a.col_idx[std::size_t(p)] == i) d[std::size_t(i)] = a.values[std::size_t(p)];
  return d;
}

/// Calls visit(i, j, a_ij, a_ji) for every (i, j) in the union of the patterns of A and A^T, row by row, columns
/// ascending.
template <class Visit>
void for_each_pair(const CsrMatrix& a, const CsrMatrix& t, Visit&& visit) {
  for (std::int32_t i = 0; i < a.rows; ++i) {
    std::int32_t p = a.row_ptr[std::size_t(i)], q = t.row_ptr[std::size_t(i)];
    const std::int32_t p_end = a.row_ptr[std::size_t(i) + 1], q_end = t.row_ptr[std::size_t(i) + 1];
    while (p < p_end || q < q_end) {
      const std::int32_t cp = p < p_end ? a.col_idx[std::size_t(p)] : a.cols;
      const std::int32_t cq = q < q_end ? t.col_idx[std::size_t(q)] : a.cols;
      const std::int32_t j = std::min(cp, cq);
      const double aij = cp == j ? a.values[std::size_t(p++)] : 0.0;
      const double aji = cq == j ? t.values[std::size_t(q++)] : 0.0;
      visit(i, j, aij, aji);
    }
  }
}

}  // namespace

Asymmetry measure_asymmetry(const CsrMatrix& a) {
  const CsrMatrix t = transpose(a);
  const std::vector<double> d = diagonal_of(a);
  Asymmetry worst;
  for_each_pair(a, t, [&](std::int32_t i, std::int32_t j, double aij, double aji) {
    if (aij == aji) return;
    const double scale = std::max({std::abs(aij), std::abs(aji), std::sqrt(std::abs(d[std::size_t(i)] * d[std::size_t(j)]))});
    const double ratio = std::abs(aij - aji) / scale;
    if (ratio > worst.ratio) worst = {ratio, i, j, aij, aji};
  });
  return worst;
}

CsrMatrix symmetric_part(const CsrMatrix& a) {
  const CsrMatrix t = transpose(a);
  CsrMatrix s;
  s.rows = a.rows;
  s.cols = a.cols;
  s.row_ptr.assign(std::size_t(a.rows) + 1, 0);
  s.col_idx.reserve(a.col_idx.size());
  s.values.reserve(a.values.size());
  for_each_pair(a, t, [&](std::int32_t i, std::int32_t j, double aij, double aji) {
    if (s.col_idx.size() >= std::size_t(std::numeric_limits<std::int32_t>::max()))
      throw SizeLimitError("the symmetric part of the matrix has more than 2^31 - 1 entries (32-bit indices)");
    s.col_idx.push_back(j);
    s.values.push_back(0.5 * aij + 0.5 * aji);
    s.row_ptr[std::size_t(i) + 1] = static_cast<std::int32_t>(s.col_idx.size());
  });
  for (std::int32_t i = 0; i < a.rows; ++i)  // rows without entries
    s.row_ptr[std::size_t(i) + 1] = std::max(s.row_ptr[std::size_t(i) + 1], s.row_ptr[std::size_t(i)]);
  return s;
}

}  // namespace bcsr24::solver
