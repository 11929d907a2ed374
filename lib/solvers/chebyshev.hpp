// The Chebyshev preconditioner's parameters, chosen by the solver itself: a few Lanczos steps on the inner matrix
// (the Jacobi-scaled A, with the inner operator's own products) bound its spectrum from above, and the degree
// fixes how far down the interval reaches; the rest of the spectrum is left to the outer block CG.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "block_space.hpp"

namespace bcsr24::solver {

/// What the Lanczos steps found, over all columns.
struct LanczosEstimate {
  int steps = 0;                 ///< steps asked for
  int columns = 0;               ///< columns with at least two steps (the others are ignored)
  int shortest = 0;              ///< fewest steps a column completed (an invariant subspace ends one early)
  double theta_min = 0.0;        ///< smallest Ritz value: an upper bound of lambda_min
  double theta_max = 0.0;        ///< largest Ritz value: a lower bound of lambda_max
  double residual_bound = 0.0;   ///< beta_L |y_L| of the largest Ritz pair: some eigenvalue lies that close
  double upper() const { return theta_max + residual_bound; }
};

/// Ritz values of each column's tridiagonal matrix (alpha, beta step-major, steps x k, as the small buffer holds
/// them; lengths: steps each column completed).
LanczosEstimate lanczos_estimate(const std::vector<double>& alpha, const std::vector<double>& beta,
                                 const std::vector<double>& lengths, int steps, int k);

/// Runs `steps` Lanczos steps on the space's inner operator and reads the result (two synchronisations).
LanczosEstimate run_lanczos(BlockSpace& space, int steps, std::uint64_t seed);

struct ChebyshevOptions {
  int degree = 15;              ///< residual polynomial degree (odd; even values are raised by one): degree-1 products
  /// b / a = ratio_factor * degree^2 unless `ratio` > 0 (the interval a polynomial of this degree covers well).
  double ratio_factor = 0.25;
  double ratio = 0.0;
  /// b = min(Gershgorin bound, (theta_max + residual bound) * (1 + upper_margin)): an underestimated b would let the
  /// polynomial grow without bound above it.
  double upper_margin = 0.05;
  int lanczos_steps = 16;
  std::uint64_t seed = 1;
};

/// The polynomial and how it was chosen.
struct ChebyshevChoice {
  ChebyshevPolynomial polynomial;
  LanczosEstimate estimate;
  double gershgorin = 0.0;  ///< max_i sum_j |a_ij| of the inner matrix (a rigorous upper bound of its spectrum)
  std::string reason;       ///< one line: where a and b came from
};

/// @throw InvalidArgument for a degree < 1 or a non-positive upper bound.
ChebyshevChoice choose_chebyshev(const LanczosEstimate& estimate, double gershgorin, const ChebyshevOptions& options);

/// The recurrence factors of the degree-m polynomial on [a, b] (0 < a < b).
/// @throw InvalidArgument for m < 1 or a bad interval.
ChebyshevPolynomial make_chebyshev(int degree, double a, double b);

/// 1 - t s(t) by running the preconditioner's recurrence on the scalar t (tests compare it with T_m).
double chebyshev_residual(const ChebyshevPolynomial& polynomial, double t);

/// max_i sum_j |s_i a_ij s_j| (s empty: ones), times (1 + relative_error) for the rounding of the stored values.
double gershgorin_bound(const CsrMatrix& a, const std::vector<double>& row_scale, double relative_error);

}  // namespace bcsr24::solver
