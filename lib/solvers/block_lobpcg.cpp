// LOBPCG on a BlockSpace (block_lobpcg.hpp). One iteration: R = A X - X Theta and its norms (the status step turns
// them into the active columns and the preconditioner's scales, on the device), W = T R (converged columns get 0:
// soft locking), A W, the twelve k x k Gram matrices of [X W P] with and without A, one read of all of them, the
// Rayleigh-Ritz problem on the host, and X, A X, P, A P as block combinations of the old blocks. The generalized
// problem A x = lambda M x carries M X, M W, M P along (one more product per iteration, M W): X Theta becomes
// M X Theta and every Gram matrix without A is one with M.
#include "block_lobpcg.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <Eigen/Dense>

#include "bcsr24/error.hpp"
#include "sci_text.hpp"

namespace bcsr24::solver {

namespace {

/// The small buffer's k x k regions the eigensolver uses: from matrix[0] on, contiguous through the ring arrays.
struct Regions {
  std::int64_t first = 0, kk = 0;
  std::int64_t at(int i) const { return first + std::int64_t(i) * kk; }
  // Gram matrices: block b of [X W P] against A times block c (a_gram) and against block c (m_gram), b <= c.
  static int a_gram(int b, int c) { return pair(b, c); }
  static int m_gram(int b, int c) { return 6 + pair(b, c); }
  static constexpr int coef = 12;      // Cx, Cw, Cp: 12, 13, 14
  static constexpr int identity = 15;
  static constexpr int minus_theta = 16;
  static constexpr int count = 17;

 private:
  static int pair(int b, int c) {  // (0,0) (0,1) (0,2) (1,1) (1,2) (2,2)
    static const int index[3][3] = {{0, 1, 2}, {1, 3, 4}, {2, 4, 5}};
    return index[b][c];
  }
};

std::vector<double> column_major(const Eigen::MatrixXd& m) { return std::vector<double>(m.data(), m.data() + m.size()); }

/// The Rayleigh-Ritz step on the basis [X W P] (m blocks of k): the k wanted Ritz values and the coefficients of
/// their vectors (m k x k). Columns of zero norm (W of converged columns) and directions the basis holds twice are
/// dropped: the Gram matrix is scaled to a unit diagonal and only its eigenvectors above a relative threshold span the
/// basis. A Gram matrix of M (generalized) with a clearly negative eigenvalue proves M indefinite: an error.
void rayleigh_ritz(const Eigen::MatrixXd& h, const Eigen::MatrixXd& g, int k, bool largest, bool of_mass,
                   Eigen::VectorXd& theta, Eigen::MatrixXd& coefficients) {
  const Eigen::Index dim = g.rows();
  Eigen::VectorXd s(dim);
  for (Eigen::Index i = 0; i < dim; ++i) s(i) = g(i, i) > 0.0 ? 1.0 / std::sqrt(g(i, i)) : 0.0;
  const Eigen::MatrixXd gs = s.asDiagonal() * g * s.asDiagonal();
  const Eigen::MatrixXd hs = s.asDiagonal() * h * s.asDiagonal();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> basis_eig(gs);
  const Eigen::VectorXd& d = basis_eig.eigenvalues();
  const double top = d.maxCoeff();
  // Rounding leaves eigenvalues of a positive semidefinite Gram matrix (unit diagonal) above -1e-12 or so.
  if (of_mass && d.minCoeff() < -1e-8 * top)
    throw InvalidArgument("LOBPCG: M is not positive definite: its Gram matrix on the search space has the "
                          "eigenvalue " + sci(d.minCoeff() / top) + " relative to the largest");
  std::vector<Eigen::Index> kept;
  for (Eigen::Index i = 0; i < dim; ++i)
    if (d(i) > 1e-10 * top) kept.push_back(i);
  Eigen::MatrixXd basis(dim, Eigen::Index(kept.size()));
  for (std::size_t j = 0; j < kept.size(); ++j)
    basis.col(Eigen::Index(j)) = basis_eig.eigenvectors().col(kept[j]) / std::sqrt(d(kept[j]));
  const Eigen::MatrixXd reduced = basis.transpose() * hs * basis;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ritz(0.5 * (reduced + reduced.transpose()));
  const Eigen::Index r = reduced.rows();
  theta.resize(k);
  Eigen::MatrixXd y(r, k);
  for (int j = 0; j < k; ++j) {
    const Eigen::Index pick = largest ? r - 1 - j : j;
    theta(j) = ritz.eigenvalues()(pick);
    y.col(j) = ritz.eigenvectors().col(pick);
  }
  coefficients = s.asDiagonal() * (basis * y);
}

}  // namespace

LobpcgResult block_lobpcg(BlockSpace& space, int start, int& result_slot, const LobpcgOptions& options) {
  const small::SmallLayout& l = space.layout();
  const int k = space.k();
  const bool mass = options.generalized;
  if (l.memory < kLobpcgMemory)
    throw InvalidArgument("LOBPCG: the space has memory " + std::to_string(l.memory) + ", it needs " +
                          std::to_string(kLobpcgMemory));
  if (!(options.tolerance > 0.0) || !(options.norm_estimate > 0.0))
    throw InvalidArgument("LOBPCG: the tolerance and the norm estimate must be positive");
  const auto clock_start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - clock_start).count();
  };
  const SpaceCounters before = space.counters();
  const Regions reg{l.matrix[0], l.kk()};
  const std::int64_t kk = l.kk();
  LobpcgResult result;

  // Slot bookkeeping: the blocks move between slots by relabelling, never by copies.
  std::vector<int> free_slots;
  for (int s = 0; s < BlockSlots::count(l.memory); ++s)
    if (s != start) free_slots.push_back(s);
  const auto take = [&] {
    const int s = free_slots.back();
    free_slots.pop_back();
    return s;
  };
  const auto give = [&](int s) { free_slots.push_back(s); };
  const auto read_matrix = [&](int region, int count) {
    std::vector<double> v(std::size_t(count) * std::size_t(kk));
    space.read_small(reg.at(region), count * kk, v.data());
    return v;
  };
  const auto write_matrix = [&](int region, const Eigen::MatrixXd& m) { space.write_small(reg.at(region), column_major(m)); };

  // M X (generalized), else X itself: the blocks M acts on are carried along as their own slots.
  const auto replace = [&](int& slot, int region) {  // slot <- slot * (the k x k matrix at region)
    const int t = take();
    space.combine(t, false, {{slot, reg.at(region), 1.0}});
    give(slot);
    slot = t;
  };
  // The Cholesky factor L of a k x k Gram matrix X^T (M) X = L L^T, or an error naming why there is none.
  const auto cholesky = [&](int left, int other, const char* what_fails) {
    space.gram(left, {{other, reg.at(Regions::m_gram(0, 0))}});
    const std::vector<double> g0 = read_matrix(Regions::m_gram(0, 0), 1);
    const Eigen::Map<const Eigen::MatrixXd> gram0(g0.data(), k, k);
    Eigen::LLT<Eigen::MatrixXd> llt(gram0);
    if (llt.info() != Eigen::Success || !(gram0.diagonal().minCoeff() > 0.0)) throw InvalidArgument(what_fails);
    const Eigen::MatrixXd l_factor = llt.matrixL();
    if (!(l_factor.diagonal().cwiseAbs().minCoeff() > 1e-7 * l_factor.diagonal().cwiseAbs().maxCoeff()))
      throw InvalidArgument(what_fails);
    return l_factor;
  };
  int x = start;
  Eigen::MatrixXd l_factor = cholesky(x, x, "LOBPCG: the starting block is rank deficient (a zero or dependent column)");
  int mx = -1;
  if (mass) {
    // Full rank in the plain inner product, so a failing M-Gram matrix can only be M's fault.
    mx = take();
    space.multiply_mass(mx, x);
    l_factor = cholesky(x, mx, "LOBPCG: M is not positive definite: X^T M X of the (full-rank) starting block has no "
                            "Cholesky factor");
  }
  // X (M-)orthonormal: X L^-T.
  write_matrix(Regions::coef, l_factor.transpose().triangularView<Eigen::Upper>().solve(
                                  Eigen::MatrixXd::Identity(k, k)));
  replace(x, Regions::coef);
  if (mass) replace(mx, Regions::coef);
  int ax = take();
  space.multiply(ax, x);
  // The Ritz pairs of the start: X Q, (A X) Q.
  space.gram(x, {{ax, reg.at(Regions::a_gram(0, 0))}});
  const std::vector<double> h0 = read_matrix(Regions::a_gram(0, 0), 1);
  Eigen::VectorXd theta;
  Eigen::MatrixXd q;
  rayleigh_ritz(Eigen::Map<const Eigen::MatrixXd>(h0.data(), k, k), Eigen::MatrixXd::Identity(k, k), k,
                options.largest, false, theta, q);
  write_matrix(Regions::coef, q);
  replace(x, Regions::coef);
  replace(ax, Regions::coef);
  if (mass) replace(mx, Regions::coef);

  // The status step measures |r_j| against b_norm2 = ||A||^2: relative = |r_j| / ||A||, active, scale = 1 / |r_j|.
  space.write_small(l.column[small::b_norm2], std::vector<double>(std::size_t(k), options.norm_estimate *
                                                                                  options.norm_estimate));
  write_matrix(Regions::identity, Eigen::MatrixXd::Identity(k, k));
  small::SmallStep status;
  status.kind = small::StepKind::status;
  status.tolerance = options.tolerance;
  const int w = take(), aw = take(), mw = mass ? take() : w;
  int p = -1, ap = -1, mp = -1;
  const auto m_of = [&](int block, int m_block) { return mass ? m_block : block; };
  // One read per iteration: the per-column vectors and the twelve Gram matrices, which lie in one range.
  const std::int64_t read_first = l.column[0];
  const std::int64_t read_count = reg.at(Regions::m_gram(2, 2)) + kk - read_first;
  std::vector<double> buffer(static_cast<std::size_t>(read_count));
  const auto column = [&](int c, int j) { return buffer[std::size_t(l.column[c] - read_first + j)]; };
  const auto block = [&](int region) {
    return Eigen::Map<const Eigen::MatrixXd>(buffer.data() + (reg.at(region) - read_first), k, k);
  };

  int it = 0;
  for (;;) {
    // R = A X - X Theta, its norms and the columns still active.
    write_matrix(Regions::minus_theta, Eigen::MatrixXd((-theta).asDiagonal()));
    const int r = take();
    space.combine(r, false,
                  {{ax, reg.at(Regions::identity), 1.0}, {m_of(x, mx), reg.at(Regions::minus_theta), 1.0}});
    space.column_norms(r, l.column[small::r_norm2]);
    status.iteration = it;
    space.small_step(status);
    if (options.chebyshev)
      space.precondition_chebyshev(w, r, *options.chebyshev);
    else if (options.jacobi)
      space.precondition_jacobi(w, r);
    else
      space.precondition_identity(w, r);
    give(r);
    space.multiply(aw, w);
    if (mass) space.multiply_mass(mw, w);
    const bool have_p = p >= 0;
    space.gram(x, {{ax, reg.at(Regions::a_gram(0, 0))}, {aw, reg.at(Regions::a_gram(0, 1))}});
    space.gram(x, {{m_of(x, mx), reg.at(Regions::m_gram(0, 0))}, {m_of(w, mw), reg.at(Regions::m_gram(0, 1))}});
    space.gram(w, {{aw, reg.at(Regions::a_gram(1, 1))}, {m_of(w, mw), reg.at(Regions::m_gram(1, 1))}});
    if (have_p) {
      space.gram(x, {{ap, reg.at(Regions::a_gram(0, 2))}, {m_of(p, mp), reg.at(Regions::m_gram(0, 2))}});
      space.gram(w, {{ap, reg.at(Regions::a_gram(1, 2))}, {m_of(p, mp), reg.at(Regions::m_gram(1, 2))}});
      space.gram(p, {{ap, reg.at(Regions::a_gram(2, 2))}, {m_of(p, mp), reg.at(Regions::m_gram(2, 2))}});
    }
    space.read_small(read_first, read_count, buffer.data());

    // The residuals of the current pairs decide.
    double worst = 0.0;
    int converged = 0;
    result.residual_norm.assign(std::size_t(k), 0.0);
    for (int j = 0; j < k; ++j) {
      const double rel = column(small::relative, j);
      result.residual_norm[std::size_t(j)] = rel * options.norm_estimate;
      worst = std::max(worst, std::isfinite(rel) ? rel : HUGE_VAL);
      converged += rel <= options.tolerance ? 1 : 0;
    }
    result.history.push_back(worst);
    result.converged = converged;
    result.iterations = it;
    if (!std::isfinite(worst)) {
      result.stop = BlockStop::breakdown;
      result.message = "stopped: breakdown: non-finite residual (overflow or NaN in the iteration)";
      break;
    }
    if (converged == k) {
      result.stop = BlockStop::converged;
      result.message = "converged: all " + std::to_string(k) + " pairs have |A x - lambda x| <= " +
                       sci(options.tolerance) + " ||A|| after " + std::to_string(it) + " iterations";
      break;
    }
    if (it >= options.max_iterations) {
      result.stop = BlockStop::max_iterations;
      result.message = "stopped: reached the limit of " + std::to_string(options.max_iterations) + " iterations with " +
                       std::to_string(converged) + " of " + std::to_string(k) + " pairs converged (largest |r| / ||A|| " +
                       sci(worst) + ")";
      break;
    }
    if (options.time_limit_seconds > 0.0 && elapsed() > options.time_limit_seconds) {
      result.stop = BlockStop::time_limit;
      result.message = "stopped: wall-clock limit reached after " + std::to_string(it) + " iterations with " +
                       std::to_string(converged) + " of " + std::to_string(k) + " pairs converged";
      break;
    }

    // Rayleigh-Ritz on [X W P].
    const int m = have_p ? 3 : 2;
    Eigen::MatrixXd h(m * k, m * k), g(m * k, m * k);
    for (int b = 0; b < m; ++b)
      for (int c = b; c < m; ++c) {
        h.block(b * k, c * k, k, k) = block(Regions::a_gram(b, c));
        g.block(b * k, c * k, k, k) = block(Regions::m_gram(b, c));
        if (c != b) {
          h.block(c * k, b * k, k, k) = h.block(b * k, c * k, k, k).transpose();
          g.block(c * k, b * k, k, k) = g.block(b * k, c * k, k, k).transpose();
        }
      }
    h = 0.5 * (h + h.transpose()).eval();
    Eigen::MatrixXd coefficients;
    rayleigh_ritz(h, g, k, options.largest, mass, theta, coefficients);
    for (int b = 0; b < m; ++b) write_matrix(Regions::coef + b, coefficients.block(b * k, 0, k, k));
    const std::int64_t cx = reg.at(Regions::coef), cw = reg.at(Regions::coef + 1), cp = reg.at(Regions::coef + 2);
    std::vector<CombineTerm> x_terms{{x, cx, 1.0}, {w, cw, 1.0}}, ax_terms{{ax, cx, 1.0}, {aw, cw, 1.0}};
    std::vector<CombineTerm> p_terms{{w, cw, 1.0}}, ap_terms{{aw, cw, 1.0}};
    if (have_p) {
      x_terms.push_back({p, cp, 1.0});
      ax_terms.push_back({ap, cp, 1.0});
      p_terms.push_back({p, cp, 1.0});
      ap_terms.push_back({ap, cp, 1.0});
    }
    // New blocks from the old ones: [X W P] C for X and its (old) W and P part for P.
    const auto update = [&](int& slot, const std::vector<CombineTerm>& terms, int& p_slot,
                            const std::vector<CombineTerm>& p_terms_of) {
      const int fresh = take(), fresh_p = take();
      space.combine(fresh, false, terms);
      space.combine(fresh_p, false, p_terms_of);
      give(slot);
      if (p_slot >= 0) give(p_slot);
      slot = fresh;
      p_slot = fresh_p;
    };
    update(x, x_terms, p, p_terms);
    if (!mass) {
      // A X and A P by the same combinations: no product. Their drift from A times the combined blocks only touches
      // the A-Gram matrices, and the iteration converges to 1e-12 ||A|| with it.
      update(ax, ax_terms, ap, ap_terms);
    } else {
      // The generalized problem multiplies afresh instead: with carried M X and M P the M-Gram matrix is no longer
      // the Gram matrix of the blocks (the combinations cancel, the carried blocks keep the rounding), loses
      // definiteness and stalls the iteration (the largest pairs of a P1 Laplacian with its mass matrix stopped at
      // |r| = 3e-6 ||A||; with these products they reach 1e-12 ||A||). Four fp64 products more per iteration.
      if (ap < 0) ap = take(), mp = take();
      space.multiply(ax, x);
      space.multiply(ap, p);
      space.multiply_mass(mx, x);
      space.multiply_mass(mp, p);
    }
    ++it;
  }
  result.eigenvalues.assign(theta.data(), theta.data() + theta.size());
  result_slot = x;
  const SpaceCounters after = space.counters();
  result.synchronizations = after.synchronizations - before.synchronizations;
  result.inner_products = after.inner_products - before.inner_products;
  result.outer_products = after.outer_products - before.outer_products;
  return result;
}

}  // namespace bcsr24::solver
