// The symmetry / diagonal-dominance checks of the mesh matrices (the generator is bcsr24_testkit/mesh.hpp).
#include "mesh_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "bcsr24/error.hpp"

namespace bcsr24::solver {

std::string SpdEvidence::summary() const {
  std::ostringstream out;
  out << (square ? "" : "not square, ") << (symmetric ? "symmetric" : "NOT symmetric")
      << " (max asymmetry " << max_asymmetry << "), " << (positive_diagonal ? "positive diagonal" : "diagonal NOT positive")
      << ", " << (diagonally_dominant ? "strictly diagonally dominant" : "not diagonally dominant")
      << " (min a_ii / sum|a_ij| = " << min_dominance_ratio << ")";
  return out.str();
}

SpdEvidence check_spd_evidence(const CsrMatrix& a) {
  SpdEvidence ev;
  ev.square = a.rows == a.cols;
  if (!ev.square) return ev;
  double max_abs = 0.0;
  for (double v : a.values) max_abs = std::max(max_abs, std::fabs(v));
  // Symmetry: every (i, j, v) must find (j, i, v); columns are sorted, so a binary search per entry.
  ev.symmetric = true;
  double asym = 0.0;
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const std::int32_t j = a.col_idx[p];
      const auto begin = a.col_idx.begin() + a.row_ptr[j], end = a.col_idx.begin() + a.row_ptr[j + 1];
      const auto it = std::lower_bound(begin, end, i);
      const double mirror = (it != end && *it == i) ? a.values[static_cast<std::size_t>(it - a.col_idx.begin())] : 0.0;
      if (it == end || *it != i || mirror != a.values[p]) ev.symmetric = false;
      asym = std::max(asym, std::fabs(mirror - a.values[p]));
    }
  ev.max_asymmetry = max_abs > 0.0 ? asym / max_abs : 0.0;
  ev.positive_diagonal = true;
  ev.diagonally_dominant = true;
  ev.min_dominance_ratio = std::numeric_limits<double>::infinity();
  for (std::int32_t i = 0; i < a.rows; ++i) {
    double diagonal = 0.0, off = 0.0;
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      if (a.col_idx[p] == i)
        diagonal = a.values[p];
      else
        off += std::fabs(a.values[p]);
    }
    if (!(diagonal > 0.0)) ev.positive_diagonal = false;
    if (!(diagonal > off)) ev.diagonally_dominant = false;
    if (off > 0.0) ev.min_dominance_ratio = std::min(ev.min_dominance_ratio, diagonal / off);
  }
  return ev;
}

}  // namespace bcsr24::solver
