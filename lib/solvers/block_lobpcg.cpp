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

/// One LOBPCG run on a space: the blocks' slots, the small buffer's regions and the Ritz values, and one member per
/// step of an iteration. The blocks move between slots by relabelling, never by copies.
class Lobpcg {
 public:
  Lobpcg(BlockSpace& space, int start, const LobpcgOptions& options)
      : space_(space), options_(options), l_(space.layout()), reg_{l_.matrix[0], l_.kk()}, k_(space.k()),
        mass_(options.generalized), x_(start), before_(space.counters()) {
    if (l_.memory < kLobpcgMemory)
      throw InvalidArgument("LOBPCG: the space has memory " + std::to_string(l_.memory) + ", it needs " +
                            std::to_string(kLobpcgMemory));
    if (!(options.tolerance > 0.0) || !(options.norm_estimate > 0.0))
      throw InvalidArgument("LOBPCG: the tolerance and the norm estimate must be positive");
    for (int s = 0; s < BlockSlots::count(l_.memory); ++s)
      if (s != start) free_slots_.push_back(s);
  }

  LobpcgResult run(int& result_slot) {
    start_ritz_pairs();
    prepare_iterations();
    for (int it = 0;; ++it) {
      expand_basis(it);
      if (decide(it)) break;
      rayleigh_ritz_update();
    }
    result_.eigenvalues.assign(theta_.data(), theta_.data() + theta_.size());
    result_slot = x_;
    const SpaceCounters after = space_.counters();
    result_.synchronizations = after.synchronizations - before_.synchronizations;
    result_.inner_products = after.inner_products - before_.inner_products;
    result_.outer_products = after.outer_products - before_.outer_products;
    return result_;
  }

 private:
  int take() {
    const int s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  void give(int s) { free_slots_.push_back(s); }
  std::vector<double> read_matrix(int region, int count) {
    std::vector<double> v(std::size_t(count) * std::size_t(l_.kk()));
    space_.read_small(reg_.at(region), count * l_.kk(), v.data());
    return v;
  }
  void write_matrix(int region, const Eigen::MatrixXd& m) { space_.write_small(reg_.at(region), column_major(m)); }
  /// slot <- slot * (the k x k matrix at region).
  void replace(int& slot, int region) {
    const int t = take();
    space_.combine(t, false, {{slot, reg_.at(region), 1.0}});
    give(slot);
    slot = t;
  }
  /// M's block of `block` (generalized), else the block itself: the blocks M acts on are their own slots.
  int m_of(int block, int m_block) const { return mass_ ? m_block : block; }
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - clock_start_).count();
  }

  /// The Cholesky factor L of a k x k Gram matrix left^T other = L L^T, or an error naming why there is none.
  Eigen::MatrixXd cholesky(int left, int other, const char* what_fails) {
    space_.gram(left, {{other, reg_.at(Regions::m_gram(0, 0))}});
    const std::vector<double> g0 = read_matrix(Regions::m_gram(0, 0), 1);
    const Eigen::Map<const Eigen::MatrixXd> gram0(g0.data(), k_, k_);
    Eigen::LLT<Eigen::MatrixXd> llt(gram0);
    if (llt.info() != Eigen::Success || !(gram0.diagonal().minCoeff() > 0.0)) throw InvalidArgument(what_fails);
    const Eigen::MatrixXd l_factor = llt.matrixL();
    if (!(l_factor.diagonal().cwiseAbs().minCoeff() > 1e-7 * l_factor.diagonal().cwiseAbs().maxCoeff()))
      throw InvalidArgument(what_fails);
    return l_factor;
  }

  /// X (M-)orthonormal (X L^-T), A X, and the Ritz pairs of the start: X Q, (A X) Q, (M X) Q.
  void start_ritz_pairs() {
    Eigen::MatrixXd l_factor =
        cholesky(x_, x_, "LOBPCG: the starting block is rank deficient (a zero or dependent column)");
    if (mass_) {
      // Full rank in the plain inner product, so a failing M-Gram matrix can only be M's fault.
      mx_ = take();
      space_.multiply_mass(mx_, x_);
      l_factor = cholesky(x_, mx_, "LOBPCG: M is not positive definite: X^T M X of the (full-rank) starting block "
                                   "has no Cholesky factor");
    }
    write_matrix(Regions::coef, l_factor.transpose().triangularView<Eigen::Upper>().solve(
                                    Eigen::MatrixXd::Identity(k_, k_)));
    replace(x_, Regions::coef);
    if (mass_) replace(mx_, Regions::coef);
    ax_ = take();
    space_.multiply(ax_, x_);
    space_.gram(x_, {{ax_, reg_.at(Regions::a_gram(0, 0))}});
    const std::vector<double> h0 = read_matrix(Regions::a_gram(0, 0), 1);
    Eigen::MatrixXd q;
    rayleigh_ritz(Eigen::Map<const Eigen::MatrixXd>(h0.data(), k_, k_), Eigen::MatrixXd::Identity(k_, k_), k_,
                  options_.largest, false, theta_, q);
    write_matrix(Regions::coef, q);
    replace(x_, Regions::coef);
    replace(ax_, Regions::coef);
    if (mass_) replace(mx_, Regions::coef);
  }

  /// The status step's scale (it measures |r_j| against b_norm2 = ||A||^2: relative = |r_j| / ||A||, active,
  /// scale = 1 / |r_j|), the identity, W's slots and the one read's range: the per-column vectors and the twelve
  /// Gram matrices, which lie in one range.
  void prepare_iterations() {
    space_.write_small(l_.column[small::b_norm2],
                       std::vector<double>(std::size_t(k_), options_.norm_estimate * options_.norm_estimate));
    write_matrix(Regions::identity, Eigen::MatrixXd::Identity(k_, k_));
    status_.kind = small::StepKind::status;
    status_.tolerance = options_.tolerance;
    w_ = take();
    aw_ = take();
    mw_ = mass_ ? take() : w_;
    read_first_ = l_.column[0];
    buffer_.resize(static_cast<std::size_t>(reg_.at(Regions::m_gram(2, 2)) + l_.kk() - read_first_));
  }
  double column(int c, int j) const { return buffer_[std::size_t(l_.column[c] - read_first_ + j)]; }
  Eigen::Map<const Eigen::MatrixXd> block(int region) const {
    return Eigen::Map<const Eigen::MatrixXd>(buffer_.data() + (reg_.at(region) - read_first_), k_, k_);
  }

  /// R = A X - (M) X Theta, its norms and the still-active columns, W = T R (converged columns get 0: soft locking),
  /// A W (and M W), the Gram matrices of [X W P] with A and with M (or without), and the one read of them all.
  void expand_basis(int it) {
    write_matrix(Regions::minus_theta, Eigen::MatrixXd((-theta_).asDiagonal()));
    const int r = take();
    space_.combine(r, false,
                   {{ax_, reg_.at(Regions::identity), 1.0}, {m_of(x_, mx_), reg_.at(Regions::minus_theta), 1.0}});
    space_.column_norms(r, l_.column[small::r_norm2]);
    status_.iteration = it;
    space_.small_step(status_);
    if (options_.chebyshev)
      space_.precondition_chebyshev(w_, r, *options_.chebyshev);
    else if (options_.jacobi)
      space_.precondition_jacobi(w_, r);
    else
      space_.precondition_identity(w_, r);
    give(r);
    space_.multiply(aw_, w_);
    if (mass_) space_.multiply_mass(mw_, w_);
    const auto at = [&](int region) { return reg_.at(region); };
    space_.gram(x_, {{ax_, at(Regions::a_gram(0, 0))}, {aw_, at(Regions::a_gram(0, 1))}});
    space_.gram(x_, {{m_of(x_, mx_), at(Regions::m_gram(0, 0))}, {m_of(w_, mw_), at(Regions::m_gram(0, 1))}});
    space_.gram(w_, {{aw_, at(Regions::a_gram(1, 1))}, {m_of(w_, mw_), at(Regions::m_gram(1, 1))}});
    if (p_ >= 0) {
      space_.gram(x_, {{ap_, at(Regions::a_gram(0, 2))}, {m_of(p_, mp_), at(Regions::m_gram(0, 2))}});
      space_.gram(w_, {{ap_, at(Regions::a_gram(1, 2))}, {m_of(p_, mp_), at(Regions::m_gram(1, 2))}});
      space_.gram(p_, {{ap_, at(Regions::a_gram(2, 2))}, {m_of(p_, mp_), at(Regions::m_gram(2, 2))}});
    }
    space_.read_small(read_first_, std::int64_t(buffer_.size()), buffer_.data());
  }

  /// The residuals of the current pairs decide: true to stop (converged, breakdown, a limit), with the message.
  bool decide(int it) {
    double worst = 0.0;
    int converged = 0;
    result_.residual_norm.assign(std::size_t(k_), 0.0);
    for (int j = 0; j < k_; ++j) {
      const double rel = column(small::relative, j);
      result_.residual_norm[std::size_t(j)] = rel * options_.norm_estimate;
      worst = std::max(worst, std::isfinite(rel) ? rel : HUGE_VAL);
      converged += rel <= options_.tolerance ? 1 : 0;
    }
    result_.history.push_back(worst);
    result_.converged = converged;
    result_.iterations = it;
    const std::string pairs = std::to_string(converged) + " of " + std::to_string(k_) + " pairs converged";
    if (!std::isfinite(worst)) {
      result_.stop = BlockStop::breakdown;
      result_.message = "stopped: breakdown: non-finite residual (overflow or NaN in the iteration)";
    } else if (converged == k_) {
      result_.stop = BlockStop::converged;
      result_.message = "converged: all " + std::to_string(k_) + " pairs have |A x - lambda x| <= " +
                        sci(options_.tolerance) + " ||A|| after " + std::to_string(it) + " iterations";
    } else if (it >= options_.max_iterations) {
      result_.stop = BlockStop::max_iterations;
      result_.message = "stopped: reached the limit of " + std::to_string(options_.max_iterations) +
                        " iterations with " + pairs + " (largest |r| / ||A|| " + sci(worst) + ")";
    } else if (options_.time_limit_seconds > 0.0 && elapsed() > options_.time_limit_seconds) {
      result_.stop = BlockStop::time_limit;
      result_.message = "stopped: wall-clock limit reached after " + std::to_string(it) + " iterations with " + pairs;
    } else {
      return false;
    }
    return true;
  }

  /// Rayleigh-Ritz on [X W P] and the new blocks from the old ones: [X W P] C for X and its W and P part for P.
  void rayleigh_ritz_update() {
    const bool have_p = p_ >= 0;
    const int m = have_p ? 3 : 2;
    Eigen::MatrixXd h(m * k_, m * k_), g(m * k_, m * k_);
    for (int b = 0; b < m; ++b)
      for (int c = b; c < m; ++c) {
        h.block(b * k_, c * k_, k_, k_) = block(Regions::a_gram(b, c));
        g.block(b * k_, c * k_, k_, k_) = block(Regions::m_gram(b, c));
        if (c != b) {
          h.block(c * k_, b * k_, k_, k_) = h.block(b * k_, c * k_, k_, k_).transpose();
          g.block(c * k_, b * k_, k_, k_) = g.block(b * k_, c * k_, k_, k_).transpose();
        }
      }
    h = 0.5 * (h + h.transpose()).eval();
    Eigen::MatrixXd coefficients;
    rayleigh_ritz(h, g, k_, options_.largest, mass_, theta_, coefficients);
    for (int b = 0; b < m; ++b) write_matrix(Regions::coef + b, coefficients.block(b * k_, 0, k_, k_));
    const std::int64_t cx = reg_.at(Regions::coef), cw = reg_.at(Regions::coef + 1), cp = reg_.at(Regions::coef + 2);
    std::vector<CombineTerm> x_terms{{x_, cx, 1.0}, {w_, cw, 1.0}}, ax_terms{{ax_, cx, 1.0}, {aw_, cw, 1.0}};
    std::vector<CombineTerm> p_terms{{w_, cw, 1.0}}, ap_terms{{aw_, cw, 1.0}};
    if (have_p) {
      x_terms.push_back({p_, cp, 1.0});
      ax_terms.push_back({ap_, cp, 1.0});
      p_terms.push_back({p_, cp, 1.0});
      ap_terms.push_back({ap_, cp, 1.0});
    }
    update(x_, x_terms, p_, p_terms);
    if (!mass_) {
      // A X and A P by the same combinations: no product. Their drift from A times the combined blocks only touches
      // the A-Gram matrices, and the iteration converges to 1e-12 ||A|| with it.
      update(ax_, ax_terms, ap_, ap_terms);
    } else {
      // The generalized problem multiplies afresh instead: with carried M X and M P the M-Gram matrix is no longer
      // the Gram matrix of the blocks (the combinations cancel, the carried blocks keep the rounding), loses
      // definiteness and stalls the iteration (the largest pairs of a P1 Laplacian with its mass matrix stopped at
      // |r| = 3e-6 ||A||; with these products they reach 1e-12 ||A||). Four fp64 products more per iteration.
      if (ap_ < 0) ap_ = take(), mp_ = take();
      space_.multiply(ax_, x_);
      space_.multiply(ap_, p_);
      space_.multiply_mass(mx_, x_);
      space_.multiply_mass(mp_, p_);
    }
  }
  /// slot <- terms and p_slot <- p_terms_of, into fresh slots; the old ones are given back.
  void update(int& slot, const std::vector<CombineTerm>& terms, int& p_slot,
              const std::vector<CombineTerm>& p_terms_of) {
    const int fresh = take(), fresh_p = take();
    space_.combine(fresh, false, terms);
    space_.combine(fresh_p, false, p_terms_of);
    give(slot);
    if (p_slot >= 0) give(p_slot);
    slot = fresh;
    p_slot = fresh_p;
  }

  BlockSpace& space_;
  const LobpcgOptions& options_;
  const small::SmallLayout& l_;
  const Regions reg_;
  const int k_;
  const bool mass_;
  std::vector<int> free_slots_;
  int x_ = -1, ax_ = -1, mx_ = -1, w_ = -1, aw_ = -1, mw_ = -1, p_ = -1, ap_ = -1, mp_ = -1;
  Eigen::VectorXd theta_;
  small::SmallStep status_;
  std::int64_t read_first_ = 0;
  std::vector<double> buffer_;
  const SpaceCounters before_;
  const std::chrono::steady_clock::time_point clock_start_ = std::chrono::steady_clock::now();
  LobpcgResult result_;
};

}  // namespace

LobpcgResult block_lobpcg(BlockSpace& space, int start, int& result_slot, const LobpcgOptions& options) {
  return Lobpcg(space, start, options).run(result_slot);
}

}  // namespace bcsr24::solver
