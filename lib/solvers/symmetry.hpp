// Symmetric to rounding: how far a square matrix is from its transpose, pair by pair, and its symmetric part. Finite
// element assembly sums element contributions in a different order on either side of the diagonal, so a_ij and a_ji
// of an SPD stiffness matrix can differ in their last bits; the solver accepts that and works with (A + A^T) / 2.
#pragma once

#include <cstdint>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24::solver {

/// The worst pair of A against A^T.
struct Asymmetry {
  /// max over pairs of |a_ij - a_ji| / max(|a_ij|, |a_ji|, sqrt(|a_ii a_jj|)); 0 for a symmetric matrix
  double ratio = 0.0;
  std::int32_t row = -1, col = -1;  ///< the worst pair (i, j), -1 when none differs
  double a_ij = 0.0, a_ji = 0.0;
};

/// Compares A with A^T entry by entry (an entry present on one side only pairs with 0).
/// Precondition: a is square and valid (validate_csr).
Asymmetry measure_asymmetry(const CsrMatrix& a);

/// (A + A^T) / 2 on the union of the two patterns, rows sorted.
CsrMatrix symmetric_part(const CsrMatrix& a);

}  // namespace bcsr24::solver
