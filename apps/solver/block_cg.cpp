// BF-BCG: the small dense algebra (Gram blocks, Cholesky, whitening) on the host in double; the tall
// operations are the space's gram / update / product.
#include "block_cg.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

namespace bcsr24::solver {

namespace {

/// T (k x s) with (W T)^T (W T) = I for the columns `included`, from WW = W^T W. Columns are normalised
/// first so that a column with a small residual is not mistaken for a dependent one; then eigen-directions
/// of the normalised Gram with eigenvalue below drop_tolerance * largest are dropped.
Eigen::MatrixXd whitening(const Eigen::MatrixXd& ww, const std::vector<int>& included, double drop_tolerance) {
  const int k = static_cast<int>(ww.rows());
  const int m = static_cast<int>(included.size());
  if (m == 0) return Eigen::MatrixXd::Zero(k, 0);
  Eigen::VectorXd inv_norm(m);
  Eigen::MatrixXd c(m, m);
  for (int a = 0; a < m; ++a) inv_norm(a) = 1.0 / std::sqrt(ww(included[a], included[a]));
  for (int a = 0; a < m; ++a)
    for (int b = 0; b < m; ++b) c(a, b) = ww(included[a], included[b]) * inv_norm(a) * inv_norm(b);
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(c);
  if (eig.info() != Eigen::Success) return Eigen::MatrixXd::Zero(k, 0);
  const Eigen::VectorXd& lambda = eig.eigenvalues();  // ascending
  const double largest = lambda(m - 1);
  std::vector<int> kept;
  for (int i = m - 1; i >= 0; --i)
    if (lambda(i) > drop_tolerance * largest && lambda(i) > 0.0) kept.push_back(i);
  Eigen::MatrixXd t = Eigen::MatrixXd::Zero(k, static_cast<int>(kept.size()));
  for (int col = 0; col < static_cast<int>(kept.size()); ++col) {
    const double inv_sqrt = 1.0 / std::sqrt(lambda(kept[col]));
    for (int a = 0; a < m; ++a) t(included[a], col) = inv_norm(a) * eig.eigenvectors()(a, kept[col]) * inv_sqrt;
  }
  return t;
}

}  // namespace

InnerStats block_cg(InnerBlockSpace& space, const InnerOptions& options) {
  const int k = space.k();
  InnerStats stats;
  Eigen::MatrixXd g;
  Eigen::VectorXd initial_norm = Eigen::VectorXd::Zero(k);
  std::vector<bool> alive(static_cast<std::size_t>(k), false);
  int s = 0;  // live search directions: the first s columns of P (the others are zero)
  // Block offsets of P, R and Q inside the 3k x 3k Gram matrix, and of X, P, R, Q in the 4k rows of m.
  const int gp = 0, gr = k, gq = 2 * k;
  const int mx = 0, mp = k, mr = 2 * k, mq = 3 * k;

  for (int pass = 0;; ++pass) {
    space.gram(g);
    if (!g.allFinite()) {
      stats.breakdown = true;
      stats.breakdown_reason = "non-finite values in the inner block";
      return stats;  // X of the current block is from the last finite update
    }
    if (pass == 0) {
      for (int j = 0; j < k; ++j) {
        initial_norm(j) = std::sqrt(std::max(g(gr + j, gr + j), 0.0));
        alive[static_cast<std::size_t>(j)] = initial_norm(j) > 0.0;
      }
    }
    // alpha = (P^T Q)^{-1} P^T R minimises the A-norm error over the new directions.
    Eigen::MatrixXd alpha = Eigen::MatrixXd::Zero(s, k);
    Eigen::LLT<Eigen::MatrixXd> ptq;
    if (s > 0) {
      ptq.compute(g.block(gp, gq, s, s));
      if (ptq.info() != Eigen::Success) {
        // fp16 A (or fp32 rounding) made P^T A P indefinite: the operator is not SPD on these directions.
        stats.breakdown = true;
        stats.breakdown_reason = "P^T A P not positive definite (A in reduced precision is not SPD here)";
        return stats;
      }
      alpha = ptq.solve(g.block(gp, gr, s, k));
    }
    // New residual R' = R - Q alpha, as a combination of [P R Q]: its Gram needs no extra pass over memory.
    Eigen::MatrixXd c_r = Eigen::MatrixXd::Zero(3 * k, k);
    c_r.block(gr, 0, k, k).setIdentity();
    c_r.block(gq, 0, s, k) = -alpha;
    const Eigen::MatrixXd rr = c_r.transpose() * g * c_r;
    double worst = 0.0;
    std::vector<double> relative(static_cast<std::size_t>(k), 0.0);
    for (int j = 0; j < k; ++j) {
      if (!alive[static_cast<std::size_t>(j)]) continue;
      relative[static_cast<std::size_t>(j)] = std::sqrt(std::max(rr(j, j), 0.0)) / initial_norm(j);
      worst = std::max(worst, relative[static_cast<std::size_t>(j)]);
    }
    stats.relative_residual = worst;
    bool last = worst <= options.tolerance || stats.products >= options.max_products;

    Eigen::MatrixXd m = Eigen::MatrixXd::Zero(4 * k, 3 * k);  // rows [X P R Q] -> columns [X P R]
    m.block(mx, 0, k, k).setIdentity();                        // X' = X + P alpha
    m.block(mp, 0, s, k) = alpha;
    m.block(mr, 2 * k, k, k).setIdentity();                    // R' = R - Q alpha
    m.block(mq, 2 * k, s, k) = -alpha;
    int s_next = 0;
    if (!last) {
      // beta = -(P^T Q)^{-1} Q^T R' makes W = R' + P beta A-orthogonal to P.
      Eigen::MatrixXd beta = Eigen::MatrixXd::Zero(s, k);
      if (s > 0) beta = -ptq.solve(g.block(gq, gr, s, k) - g.block(gq, gq, s, s) * alpha);
      Eigen::MatrixXd c_w = c_r;
      c_w.block(gp, 0, s, k) = beta;
      const Eigen::MatrixXd ww = c_w.transpose() * g * c_w;
      std::vector<int> included;
      for (int j = 0; j < k; ++j)
        if (alive[static_cast<std::size_t>(j)] && relative[static_cast<std::size_t>(j)] > options.noise_floor &&
            ww(j, j) > 0.0)
          included.push_back(j);
      const Eigen::MatrixXd t = whitening(ww, included, options.drop_tolerance);
      s_next = static_cast<int>(t.cols());
      stats.max_deflated = std::max(stats.max_deflated, static_cast<int>(included.size()) - s_next);
      if (s_next == 0) {
        last = true;  // nothing independent left to search
      } else {
        // P' = (R' + P beta) T = P (beta T) + R T - Q (alpha T).
        m.block(mp, k, s, s_next) = beta * t;
        m.block(mr, k, k, s_next) = t;
        m.block(mq, k, s, s_next) = -alpha * t;
      }
    }
    space.update(m);
    if (last) return stats;
    space.product();
    ++stats.products;
    s = s_next;
  }
}

}  // namespace bcsr24::solver
