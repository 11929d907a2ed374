// Lanczos bounds, interval and recurrence factors of the Chebyshev preconditioner.
#include "chebyshev.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <Eigen/Eigenvalues>

#include "bcsr24/error.hpp"

namespace bcsr24::solver {

LanczosEstimate lanczos_estimate(const std::vector<double>& alpha, const std::vector<double>& beta,
                                 const std::vector<double>& lengths, int steps, int k) {
  LanczosEstimate e;
  e.steps = steps;
  e.shortest = steps;
  e.theta_min = HUGE_VAL;
  for (int j = 0; j < k; ++j) {
    const int length = std::min(steps, static_cast<int>(lengths[std::size_t(j)]));
    if (length < 2) continue;
    ++e.columns;
    e.shortest = std::min(e.shortest, length);
    Eigen::VectorXd diagonal(length), off(length - 1);
    for (int i = 0; i < length; ++i) diagonal(i) = alpha[std::size_t(i) * k + j];
    for (int i = 0; i + 1 < length; ++i) off(i) = beta[std::size_t(i) * k + j];
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig;
    eig.computeFromTridiagonal(diagonal, off, Eigen::ComputeEigenvectors);
    if (eig.info() != Eigen::Success) continue;
    const double top = eig.eigenvalues()(length - 1);
    // The residual of the top Ritz pair is beta_length times the last entry of its eigenvector (0 when the
    // recurrence ended: the Ritz values are then exact eigenvalues).
    const double last_beta = beta[std::size_t(length - 1) * k + j];
    const double bound = std::fabs(last_beta * eig.eigenvectors()(length - 1, length - 1));
    e.theta_min = std::min(e.theta_min, eig.eigenvalues()(0));
    if (top + bound > e.theta_max + e.residual_bound) {
      e.theta_max = top;
      e.residual_bound = bound;
    }
  }
  if (e.columns == 0) e.theta_min = 0.0;
  return e;
}

LanczosEstimate run_lanczos(BlockSpace& space, int steps, std::uint64_t seed) {
  const small::SmallLayout& l = space.layout();
  if (steps < 2 || steps > l.lanczos_steps)
    throw InvalidArgument("Lanczos: " + std::to_string(steps) + " steps, the space holds 2 .. " +
                          std::to_string(l.lanczos_steps));
  space.lanczos(steps, seed);
  const int k = l.k;
  std::vector<double> both(std::size_t(2) * l.lanczos_steps * k);
  std::vector<double> lengths(static_cast<std::size_t>(k));
  // alpha and beta are adjacent in the small buffer (make_layout): one read for both.
  space.read_small(l.lanczos_alpha, std::int64_t(both.size()), both.data());
  space.read_small(l.column[small::lanczos_length], k, lengths.data());
  const std::vector<double> alpha(both.begin(), both.begin() + std::ptrdiff_t(steps) * k);
  const std::vector<double> beta(both.begin() + std::ptrdiff_t(l.lanczos_steps) * k,
                                 both.begin() + std::ptrdiff_t(l.lanczos_steps + steps) * k);
  return lanczos_estimate(alpha, beta, lengths, steps, k);
}

ChebyshevPolynomial make_chebyshev(int degree, double a, double b) {
  if (degree < 1) throw InvalidArgument("Chebyshev degree must be >= 1, got " + std::to_string(degree));
  if (!(a > 0.0) || !(b > a) || !std::isfinite(b))
    throw InvalidArgument("Chebyshev interval must satisfy 0 < a < b, got [" + std::to_string(a) + ", " +
                          std::to_string(b) + "]");
  ChebyshevPolynomial p;
  p.degree = degree;
  p.a = a;
  p.b = b;
  p.theta = 0.5 * (b + a);
  const double delta = 0.5 * (b - a);
  const double sigma = p.theta / delta;
  // q_j = T_j(sigma) / T_{j+1}(sigma) by q_0 = 1 / sigma, q_j = 1 / (2 sigma - q_{j-1}); the factor of the product
  // that makes z_{j+1} is omega = 2 sigma q_j (never forming T_j(sigma), which grows like e^{j acosh sigma}).
  double q = 1.0 / sigma;
  for (int j = 1; j < degree; ++j) {
    q = 1.0 / (2.0 * sigma - q);
    p.omega.push_back(2.0 * sigma * q);
  }
  return p;
}

double chebyshev_residual(const ChebyshevPolynomial& p, double t) {
  // z = s(t) * 1 by the same recurrence as precondition_chebyshev, with r = 1.
  double previous = 0.0, z = 1.0 / p.theta;
  for (double omega : p.omega) {
    const double next = omega * (z + (1.0 - t * z) / p.theta) + (1.0 - omega) * previous;
    previous = z;
    z = next;
  }
  return 1.0 - t * z;
}

ChebyshevChoice choose_chebyshev(const LanczosEstimate& estimate, double gershgorin, const ChebyshevOptions& options) {
  ChebyshevChoice choice;
  choice.estimate = estimate;
  choice.gershgorin = gershgorin;
  const int degree = options.degree % 2 == 0 ? options.degree + 1 : options.degree;
  if (degree < 1) throw InvalidArgument("Chebyshev degree must be >= 1");
  char text[512];
  double b = gershgorin;
  const char* b_from = "the Gershgorin bound";
  if (estimate.columns > 0 && estimate.upper() > 0.0) {
    const double lanczos = estimate.upper() * (1.0 + options.upper_margin);
    if (lanczos < b) {
      b = lanczos;
      b_from = "Lanczos (largest Ritz value + residual bound) with the safety margin";
    }
  }
  if (!(b > 0.0) || !std::isfinite(b)) throw InvalidArgument("Chebyshev: no positive upper bound of the spectrum");
  const double ratio = options.ratio > 0.0 ? options.ratio : options.ratio_factor * double(degree) * degree;
  double a = b / std::max(ratio, 1.0 + 1e-9);
  const char* a_from = options.ratio > 0.0 ? "b / the given ratio" : "b / (ratio factor * degree^2)";
  // A well-conditioned matrix needs no interval reaching below its smallest Ritz value (an upper bound of its
  // smallest eigenvalue, so the polynomial stays positive below a: the degree is odd).
  if (estimate.columns > 0 && estimate.theta_min > a && estimate.theta_min < b) {
    a = estimate.theta_min;
    a_from = "the smallest Ritz value (the matrix is better conditioned than the degree could handle)";
  }
  choice.polynomial = make_chebyshev(degree, a, b);
  std::snprintf(text, sizeof text,
                "degree %d (%d products) on [%.3e, %.4f] (b / a = %.1f): b from %s, a from %s; Lanczos %d steps on %d "
                "columns: Ritz values [%.3e, %.4f], residual bound %.2e; Gershgorin %.4f",
                degree, degree - 1, a, b, b / a, b_from, a_from, estimate.steps, estimate.columns, estimate.theta_min,
                estimate.theta_max, estimate.residual_bound, gershgorin);
  choice.reason = text;
  return choice;
}

double gershgorin_bound(const CsrMatrix& a, const std::vector<double>& row_scale, double relative_error) {
  double bound = 0.0;
  for (std::int32_t i = 0; i < a.rows; ++i) {
    const double si = row_scale.empty() ? 1.0 : row_scale[std::size_t(i)];
    double sum = 0.0;
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      sum += std::fabs(si * a.values[std::size_t(p)] * (row_scale.empty() ? 1.0 : row_scale[std::size_t(a.col_idx[p])]));
    bound = std::max(bound, sum);
  }
  return bound * (1.0 + relative_error);
}

}  // namespace bcsr24::solver
