// Tests of the block solver's building blocks (apps/solver): the Chebyshev polynomial and its Lanczos bounds,
// and the small algebra shared with the GPU. The solver itself: test_solver.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"
#include "bcsr24/precision.hpp"
#include "block_fcg.hpp"
#include "chebyshev.hpp"
#include "cpu_block_space.hpp"
#include "bcsr24_testkit/diffusion.hpp"
#include "jacobi_pcg.hpp"
#include "problem.hpp"
#include "solver_test_support.hpp"
#include "test_skip.hpp"
#include "test_support.hpp"

using namespace bcsr24::solver;
using namespace bcsr24::solver::test;
using bcsr24::CsrMatrix;

namespace {

double chebyshev_t(int m, double x) {
  if (std::fabs(x) <= 1.0) return std::cos(m * std::acos(x));
  const double v = std::cosh(m * std::acosh(std::fabs(x)));
  return x < 0 && m % 2 == 1 ? -v : v;
}

}  // namespace

TEST_CASE("the Chebyshev recurrence is the Chebyshev residual polynomial and stays positive above b", "[solver][chebyshev]") {
  for (int m : {1, 3, 7, 15, 31, 61}) {
    const double a = 0.01, b = 2.0;
    const ChebyshevPolynomial p = make_chebyshev(m, a, b);
    CHECK(int(p.omega.size()) == m - 1);
    const double theta = 0.5 * (a + b), delta = 0.5 * (b - a);
    const double bound = 1.0 / chebyshev_t(m, theta / delta);
    for (int i = 0; i <= 400; ++i) {
      const double t = 3.0 * b * i / 400.0;
      const double expected = chebyshev_t(m, (theta - t) / delta) / chebyshev_t(m, theta / delta);
      const double got = chebyshev_residual(p, t);
      INFO("m " << m << ", t " << t);
      CHECK(got == Approx(expected).margin(1e-12).epsilon(1e-9));
      if (t >= a && t <= b) CHECK(std::fabs(got) <= bound * (1.0 + 1e-9));
      // s(t) = (1 - residual) / t > 0 everywhere for odd degrees: the preconditioner is SPD even if b is too small.
      if (t > 0.0 && m % 2 == 1) CHECK((1.0 - got) / t > 0.0);
    }
  }
  CHECK_THROWS_AS(make_chebyshev(0, 0.1, 1.0), bcsr24::InvalidArgument);
  CHECK_THROWS_AS(make_chebyshev(3, 1.0, 0.5), bcsr24::InvalidArgument);
}

TEST_CASE("Lanczos bounds contain the spectrum of the inner matrix", "[solver][chebyshev][lanczos]") {
  for (CoefficientField field : {CoefficientField::inclusions, CoefficientField::lognormal, CoefficientField::layers}) {
    const DiffusionSpec spec = small_diffusion(field, 9);
    const Problem problem = make_problem(diffusion_name(spec), generate_diffusion_matrix(spec), 4,
                                         RhsKind::a_times_random, 1);
    const Eigen::VectorXd exact = scaled_spectrum(problem.a);
    const double lambda_min = exact(0), lambda_max = exact(exact.size() - 1);
    for (bcsr24::Precision precision : {bcsr24::Precision::fp16, bcsr24::Precision::split}) {
      INFO(diffusion_name(spec) << ", " << bcsr24::precision_name(precision));
      const InnerMatrix inner = make_inner(problem.a, InnerBackend::bcsr24, precision);
      CpuBlockSpace space(problem.a, inner, problem.k, 1, 40, BRounding::exact);
      const LanczosEstimate e = run_lanczos(space, 40, 7);
      CHECK(e.columns == problem.k);
      // Ritz values lie inside the spectrum (up to the rounding of the stored matrix).
      const double slack = precision == bcsr24::Precision::split ? 1e-6 : 2e-3;
      CHECK(e.theta_max <= lambda_max * (1.0 + slack));
      CHECK(e.theta_min >= lambda_min * (1.0 - slack) - slack);
      CHECK(e.theta_max >= 0.98 * lambda_max);  // 40 steps find the top well
      ChebyshevOptions options;
      const ChebyshevChoice choice = choose_chebyshev(e, gershgorin_bound(problem.a, inner.row_scale, 1e-3), options);
      INFO(choice.reason);
      // The interval's top contains the whole spectrum; the bottom is inside it (the rest is the outer CG's).
      CHECK(choice.polynomial.b >= lambda_max);
      CHECK(choice.polynomial.b <= 1.2 * lambda_max);
      CHECK(choice.polynomial.a >= lambda_min * (1.0 - slack));
      CHECK(choice.polynomial.degree % 2 == 1);
    }
  }
}

TEST_CASE("whitening orthonormalises and drops dependent directions; Cholesky steps match Eigen", "[solver][small]") {
  const int k = 7;
  const small::SmallLayout l = small::make_layout(k, 2, 4);
  std::vector<double> buffer(std::size_t(l.total), 0.0);
  std::mt19937_64 rng(bcsr24::test::test_seed(11));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Eigen::MatrixXd w(50, k);
  for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = u(rng);
  w.col(3) = 2.0 * w.col(1);                 // dependent
  w.col(5) = w.col(0) + 1e-3 * Eigen::VectorXd::Random(50);  // independent, but not by much
  w.col(6) *= 1e-9;                          // tiny but independent: normalisation keeps it
  Eigen::Map<Eigen::MatrixXd>(buffer.data() + l.matrix[small::gram], k, k) = w.transpose() * w;
  for (int j = 0; j < k; ++j) buffer[std::size_t(l.column[small::active] + j)] = j == 4 ? 0.0 : 1.0;  // 4 converged
  small::SmallStep whiten;
  whiten.kind = small::StepKind::bfcg_whiten;
  whiten.slot = 1;
  whiten.drop_tolerance = 1e-10;
  small::run_step(small::SerialTeam{}, buffer.data(), l, whiten);
  const int s = static_cast<int>(buffer[std::size_t(l.ring_live + 1)]);
  CHECK(s == 5);  // 7 columns, one converged, one dependent
  CHECK(buffer[std::size_t(l.status + small::status_deflated)] == 1.0);
  const Eigen::MatrixXd t = Eigen::Map<Eigen::MatrixXd>(buffer.data() + l.matrix[small::coef_t], k, k);
  const Eigen::MatrixXd p = w * t;
  CHECK((p.leftCols(s).transpose() * p.leftCols(s) - Eigen::MatrixXd::Identity(s, s)).cwiseAbs().maxCoeff() < 1e-9);
  CHECK(p.rightCols(k - s).cwiseAbs().maxCoeff() == 0.0);
  CHECK(t.row(4).cwiseAbs().maxCoeff() == 0.0);  // the converged column contributes nothing

  // The step: Cholesky of P^T A P and alpha = (P^T A P)^-1 P^T R against Eigen.
  Eigen::MatrixXd spd = Eigen::MatrixXd::Random(k, k);
  spd = spd * spd.transpose() + Eigen::MatrixXd::Identity(k, k);
  const Eigen::MatrixXd rhs = Eigen::MatrixXd::Random(k, k);
  Eigen::Map<Eigen::MatrixXd>(buffer.data() + l.matrix[small::gram], k, k) = spd;
  Eigen::Map<Eigen::MatrixXd>(buffer.data() + l.matrix[small::gram2], k, k) = rhs;
  small::SmallStep step;
  step.kind = small::StepKind::bfcg_step;
  step.slot = 1;  // live = s = 5: the leading 5 x 5 block
  small::run_step(small::SerialTeam{}, buffer.data(), l, step);
  const Eigen::MatrixXd alpha = Eigen::Map<Eigen::MatrixXd>(buffer.data() + l.matrix[small::coef_alpha], k, k);
  const Eigen::MatrixXd expected = spd.topLeftCorner(s, s).llt().solve(rhs.topRows(s));
  CHECK((alpha.topRows(s) - expected).cwiseAbs().maxCoeff() < 1e-12 * expected.cwiseAbs().maxCoeff());
  CHECK(alpha.bottomRows(k - s).cwiseAbs().maxCoeff() == 0.0);
  CHECK(buffer[std::size_t(l.status + small::status_breakdown)] == 0.0);
  // An indefinite P^T A P is a breakdown, and the step moves nothing.
  Eigen::Map<Eigen::MatrixXd>(buffer.data() + l.matrix[small::gram], k, k) = -spd;
  small::run_step(small::SerialTeam{}, buffer.data(), l, step);
  CHECK(buffer[std::size_t(l.status + small::status_breakdown)] == 1.0);
  CHECK(Eigen::Map<Eigen::MatrixXd>(buffer.data() + l.matrix[small::coef_alpha], k, k).cwiseAbs().maxCoeff() == 0.0);
}
