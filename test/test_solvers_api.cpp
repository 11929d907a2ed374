// bcsr24::solvers through its public header only, on the host path (SpdSolver::solve_host: the same algorithm as on
// the GPU, with bcsr24's products emulated from the stored operator). Every converged solve is checked by an
// independent fp64 residual against the matrix as the caller gave it; the refused inputs give their errors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include <Eigen/Dense>

#include "bcsr24/solvers.hpp"
#include "bcsr24_testkit/diffusion.hpp"

namespace {

using namespace bcsr24;
using solvers::Preconditioner;
using solvers::SolveOptions;
using solvers::SolveReport;
using solvers::SpdSolver;
using solvers::StopReason;

/// 7 x 6 x 5 cells (210 unknowns: no multiple of 16 or 32) of a log-normal diffusion problem (kappa ~ 1e3).
CsrMatrix small_problem() {
  DiffusionSpec spec;
  spec.nx = 7;
  spec.ny = 6;
  spec.nz = 5;
  spec.field = CoefficientField::lognormal;
  spec.correlation = 2;
  spec.seed = 3;
  return generate_diffusion_matrix(spec);
}

/// Uniform values in [-1, 1) in rows of stride ld (k used columns); the padding holds `pad`.
std::vector<double> random_block(std::int32_t n, int k, int ld, std::uint64_t seed, double pad) {
  std::vector<double> v(std::size_t(n) * std::size_t(ld), pad);
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::int32_t i = 0; i < n; ++i)
    for (int c = 0; c < k; ++c) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v[std::size_t(i) * ld + c] = double(state >> 11) / double(1ull << 53) * 2.0 - 1.0;
    }
  return v;
}

/// max_j |b_j - A x_j| / |b_j| in fp64, for blocks of row stride ld.
double worst_relative_residual(const CsrMatrix& a, const std::vector<double>& b, int ldb, const std::vector<double>& x,
                               int ldx, int k) {
  double worst = 0.0;
  for (int c = 0; c < k; ++c) {
    double rr = 0.0, bb = 0.0;
    for (std::int32_t i = 0; i < a.rows; ++i) {
      double ax = 0.0;
      for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        ax += a.values[std::size_t(p)] * x[std::size_t(a.col_idx[std::size_t(p)]) * ldx + c];
      const double bi = b[std::size_t(i) * ldb + c];
      rr += (bi - ax) * (bi - ax);
      bb += bi * bi;
    }
    worst = std::max(worst, std::sqrt(rr / bb));
  }
  return worst;
}

/// The n x n tridiagonal matrix with the entries value(i, j), |i - j| <= 1.
template <class Value>
CsrMatrix tridiagonal(std::int32_t n, const Value& value) {
  CsrMatrix a;
  a.rows = a.cols = n;
  for (std::int32_t i = 0; i < n; ++i) {
    for (std::int32_t j = std::max(0, i - 1); j <= std::min(n - 1, i + 1); ++j) {
      a.col_idx.push_back(j);
      a.values.push_back(value(i, j));
    }
    a.row_ptr.push_back(std::int32_t(a.col_idx.size()));
  }
  return a;
}

/// The 1-D stencil [-1, 1, -1] on n points: a positive diagonal, eigenvalues 1 - 2 cos(t) on both sides of zero.
CsrMatrix indefinite_stencil(std::int32_t n) {
  return tridiagonal(n, [](std::int32_t i, std::int32_t j) { return i == j ? 1.0 : -1.0; });
}

/// The solver's own residual and the independent one agree to rounding: allow the tolerance plus the rounding of
/// recomputing b - A x in another order (a few ulps of |A| |x| relative to |b|, far below 1e-6 of the tolerance
/// for these matrices).
constexpr double kRecomputeSlack = 1.0 + 1e-6;

}  // namespace

TEST_CASE("SpdSolver::solve_host converges with every preconditioner and inner precision", "[solvers]") {
  const CsrMatrix a = small_problem();
  // The inner precision matters only to the polynomial.
  Preconditioner preconditioner;
  Precision precision;
  std::tie(preconditioner, precision) = GENERATE(table<Preconditioner, Precision>(
      {{Preconditioner::chebyshev, Precision::split}, {Preconditioner::chebyshev, Precision::fp16},
       {Preconditioner::chebyshev, Precision::bf16}, {Preconditioner::jacobi, Precision::split},
       {Preconditioner::none, Precision::split}}));
  const int k = GENERATE(1, 3, 13);
  CAPTURE(solvers::preconditioner_name(preconditioner), precision_name(precision), k);
  SpdSolver solver(a);
  SolveOptions options;
  options.preconditioner = preconditioner;
  options.inner_precision = precision;
  const int ld = k + 3;
  const std::vector<double> b = random_block(a.rows, k, ld, 7, std::numeric_limits<double>::quiet_NaN());
  std::vector<double> x(b.size(), -777.0);
  const SolveReport report = solver.solve_host(b.data(), ld, x.data(), ld, k, options);
  INFO(report.message);
  REQUIRE(report.stop == StopReason::converged);
  REQUIRE(report.iterations > 0);
  REQUIRE(report.history.size() == std::size_t(report.iterations) + 1);
  REQUIRE(report.relative_residual.size() == std::size_t(k));
  REQUIRE(report.residual_norm.size() == std::size_t(k));
  for (int c = 0; c < k; ++c) CHECK(report.relative_residual[std::size_t(c)] <= options.rtol);
  CHECK(report.history.back() <= options.rtol);
  CHECK(worst_relative_residual(a, b, ld, x, ld, k) <= options.rtol * kRecomputeSlack);
  for (std::int32_t i = 0; i < a.rows; ++i)  // the padding of x is never written
    for (int c = k; c < ld; ++c) REQUIRE(x[std::size_t(i) * ld + c] == -777.0);
  CHECK(report.products > 0);
  CHECK(report.preconditioner == preconditioner);
  CHECK(report.chebyshev.empty() == (preconditioner != Preconditioner::chebyshev));
}

TEST_CASE("SpdSolver reuses its spectrum estimate and honours the initial guess and atol", "[solvers]") {
  const CsrMatrix a = small_problem();
  SpdSolver solver(a);
  const int k = 5;
  const std::vector<double> b = random_block(a.rows, k, k, 11, 0.0);
  std::vector<double> x(b.size());
  const SolveReport first = solver.solve_host(b.data(), k, x.data(), k, k);
  REQUIRE(first.stop == StopReason::converged);
  CHECK(first.spectrum_seconds > 0.0);
  std::vector<double> again(b.size());
  const SolveReport second = solver.solve_host(b.data(), k, again.data(), k, k);
  REQUIRE(second.stop == StopReason::converged);
  CHECK(second.spectrum_seconds == 0.0);  // the Lanczos estimate of the first solve
  CHECK(second.iterations == first.iterations);
  CHECK(again == x);  // the same polynomial and the same arithmetic

  SECTION("the solution as initial guess converges at once") {
    SolveOptions options;
    options.initial_guess = true;
    const SolveReport report = solver.solve_host(b.data(), k, again.data(), k, k, options);
    CHECK(report.stop == StopReason::converged);
    CHECK(report.iterations == 0);
    CHECK(again == x);
  }
  SECTION("a rough initial guess converges, from where it starts") {
    SolveOptions options;
    options.initial_guess = true;
    std::vector<double> start = x;
    for (double& v : start) v *= 1.01;
    const SolveReport report = solver.solve_host(b.data(), k, start.data(), k, k, options);
    REQUIRE(report.stop == StopReason::converged);
    CHECK(report.history.front() < 0.1);  // it started near the solution, not from zero
    CHECK(worst_relative_residual(a, b, k, start, k, k) <= options.rtol * kRecomputeSlack);
  }
  SECTION("atol stops a column once |r_j| <= atol") {
    SolveOptions options;
    options.rtol = 1e-14;
    options.atol = 1e-3;
    const SolveReport report = solver.solve_host(b.data(), k, again.data(), k, k, options);
    REQUIRE(report.stop == StopReason::converged);
    CHECK(report.iterations < first.iterations);
    for (double r : report.residual_norm) CHECK(r <= options.atol * kRecomputeSlack);
  }
  SECTION("an iteration limit is reported, not thrown") {
    SolveOptions options;
    options.max_iterations = 2;
    const SolveReport report = solver.solve_host(b.data(), k, again.data(), k, k, options);
    CHECK(report.stop == StopReason::max_iterations);
    CHECK(report.iterations == 2);
    CHECK(report.relative_residual.size() == std::size_t(k));
  }
}

TEST_CASE("SpdSolver accepts symmetry to rounding and refuses what is not symmetric", "[solvers]") {
  const CsrMatrix a = small_problem();
  SECTION("rounding-level asymmetry: solved with the symmetric part") {
    CsrMatrix perturbed = a;
    for (std::int32_t i = 0; i < a.rows; ++i)
      for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        if (a.col_idx[std::size_t(p)] > i) perturbed.values[std::size_t(p)] *= 1.0 + 4e-15;
    SpdSolver solver(perturbed);
    CHECK(solver.asymmetry() > 0.0);
    CHECK(solver.asymmetry() < 1e-13);
    const int k = 2;
    const std::vector<double> b = random_block(a.rows, k, k, 5, 0.0);
    std::vector<double> x(b.size());
    const SolveReport report = solver.solve_host(b.data(), k, x.data(), k, k);
    REQUIRE(report.stop == StopReason::converged);
    CHECK(worst_relative_residual(solver.matrix(), b, k, x, k, k) <= 1e-8 * kRecomputeSlack);
  }
  SECTION("an exactly symmetric matrix is kept as it is") {
    SpdSolver solver(a);
    CHECK(solver.asymmetry() == 0.0);
    CHECK(solver.matrix().values == a.values);
  }
  SECTION("a clearly unsymmetric matrix: NotSymmetricError naming the worst pair") {
    CsrMatrix skewed = a;
    // Entry (5, 6) doubled, so it differs from (6, 5) by half its size.
    for (std::int32_t p = a.row_ptr[5]; p < a.row_ptr[6]; ++p)
      if (a.col_idx[std::size_t(p)] == 6) skewed.values[std::size_t(p)] *= 2.0;
    REQUIRE_THROWS_AS(SpdSolver(skewed), solvers::NotSymmetricError);
    REQUIRE_THROWS_WITH(SpdSolver(skewed), Catch::Contains("a(5, 6)") &&
                                              Catch::Contains("not symmetric"));
  }
  SECTION("a tighter tolerance refuses what the default accepts") {
    CsrMatrix perturbed = a;
    perturbed.values[std::size_t(a.row_ptr[3])] *= 1.0 + 1e-10;  // entry (3, 2): off the diagonal
    solvers::SpdOptions strict;
    strict.symmetry_tolerance = 1e-12;
    CHECK_NOTHROW(SpdSolver(perturbed));
    CHECK_THROWS_AS(SpdSolver(perturbed, strict), solvers::NotSymmetricError);
  }
  SECTION("non-square and empty matrices") {
    CsrMatrix wide;
    wide.rows = 2;
    wide.cols = 3;
    wide.row_ptr = {0, 0, 0};
    CHECK_THROWS_AS(SpdSolver(wide), InvalidArgument);
    CHECK_THROWS_AS(SpdSolver(CsrMatrix{}), InvalidArgument);
  }
}

TEST_CASE("SpdSolver on matrices that are not positive definite stops with breakdown", "[solvers]") {
  const int k = 2;
  SECTION("a non-positive diagonal: before the first iteration, x zeroed") {
    CsrMatrix a = small_problem();
    for (std::int32_t p = a.row_ptr[17]; p < a.row_ptr[18]; ++p)
      if (a.col_idx[std::size_t(p)] == 17) a.values[std::size_t(p)] = -1.0;
    SpdSolver solver(a);
    const std::vector<double> b = random_block(a.rows, k, k, 2, 0.0);
    std::vector<double> x(b.size(), 5.0);
    const SolveReport report = solver.solve_host(b.data(), k, x.data(), k, k);
    CHECK(report.stop == StopReason::breakdown);
    CHECK(report.iterations == 0);
    CHECK_THAT(report.message, Catch::Contains("row 17"));
    CHECK(std::all_of(x.begin(), x.end(), [](double v) { return v == 0.0; }));
  }
  SECTION("indefinite with a positive diagonal: breakdown, finite x, no hang") {
    const std::int32_t n = 50;
    const CsrMatrix a = indefinite_stencil(n);
    SpdSolver solver(a);
    for (Preconditioner p : {Preconditioner::chebyshev, Preconditioner::jacobi, Preconditioner::none}) {
      CAPTURE(solvers::preconditioner_name(p));
      SolveOptions options;
      options.preconditioner = p;
      const std::vector<double> b = random_block(n, k, k, 9, 0.0);
      std::vector<double> x(b.size());
      const SolveReport report = solver.solve_host(b.data(), k, x.data(), k, k, options);
      INFO(report.message);
      CHECK(report.stop == StopReason::breakdown);
      CHECK(std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); }));
    }
  }
}

TEST_CASE("SpdSolver refuses bad arguments before any work", "[solvers]") {
  const CsrMatrix a = small_problem();
  SpdSolver solver(a);
  const int k = 3;
  std::vector<double> b = random_block(a.rows, k, k, 4, 0.0);
  std::vector<double> x(b.size(), 1.0);
  SECTION("NaN or Inf in b") {
    b[std::size_t(40) * k + 2] = std::numeric_limits<double>::quiet_NaN();
    REQUIRE_THROWS_WITH(solver.solve_host(b.data(), k, x.data(), k, k),
                        Catch::Contains("b column 2") &&
                            Catch::Contains("NaN or Inf"));
    b[std::size_t(40) * k + 2] = std::numeric_limits<double>::infinity();
    REQUIRE_THROWS_AS(solver.solve_host(b.data(), k, x.data(), k, k), InvalidArgument);
  }
  SECTION("NaN in the initial guess") {
    SolveOptions options;
    options.initial_guess = true;
    x[7] = std::numeric_limits<double>::quiet_NaN();
    REQUIRE_THROWS_WITH(solver.solve_host(b.data(), k, x.data(), k, k, options),
                        Catch::Contains("initial guess"));
  }
  SECTION("sizes and options") {
    CHECK_THROWS_AS(solver.solve_host(b.data(), k, x.data(), k, 0), InvalidArgument);
    CHECK_THROWS_AS(solver.solve_host(b.data(), 65, x.data(), 65, 65), InvalidArgument);
    CHECK_THROWS_AS(solver.solve_host(b.data(), k - 1, x.data(), k, k), InvalidArgument);
    CHECK_THROWS_AS(solver.solve_host(nullptr, k, x.data(), k, k), InvalidArgument);
    SolveOptions options;
    options.rtol = -1.0;
    CHECK_THROWS_AS(solver.solve_host(b.data(), k, x.data(), k, k, options), InvalidArgument);
    options.rtol = 0.0;
    CHECK_THROWS_AS(solver.solve_host(b.data(), k, x.data(), k, k, options), InvalidArgument);
  }
  SECTION("names") {
    CHECK(solvers::preconditioner_from_name("jacobi") == Preconditioner::jacobi);
    CHECK_THROWS_AS(solvers::preconditioner_from_name("ilu"), InvalidArgument);
    CHECK(std::string(solvers::stop_reason_name(StopReason::time_limit)) == "time_limit");
  }
}

// ------------------------------------------------------------------------------------------------ eigenpairs
namespace {

/// Every eigenvalue of a small symmetric matrix, ascending (the oracle).
std::vector<double> dense_eigenvalues(const CsrMatrix& a) {
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(a.rows, a.cols);
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) d(i, a.col_idx[std::size_t(p)]) = a.values[std::size_t(p)];
  const Eigen::VectorXd e = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(d, Eigen::EigenvaluesOnly).eigenvalues();
  return std::vector<double>(e.data(), e.data() + e.size());
}

CsrMatrix from_diagonal_blocks(const std::vector<double>& diagonal) {
  CsrMatrix a;
  a.rows = a.cols = std::int32_t(diagonal.size());
  for (std::int32_t i = 0; i < a.rows; ++i) {
    a.col_idx.push_back(i);
    a.values.push_back(diagonal[std::size_t(i)]);
    a.row_ptr.push_back(std::int32_t(a.col_idx.size()));
  }
  return a;
}

/// Each computed eigenvalue lies within its residual norm of the reference one of the same rank (a symmetric matrix
/// has an eigenvalue within |A x - theta x| of every Ritz value theta of a unit x), and the vectors are orthonormal.
void check_pairs(const CsrMatrix& a, const solvers::EigenReport& r, const std::vector<double>& x, int k,
                 bool largest) {
  const std::vector<double> reference = dense_eigenvalues(a);
  REQUIRE(r.eigenvalues.size() == std::size_t(k));
  for (int j = 0; j < k; ++j) {
    const double want = largest ? reference[reference.size() - 1 - std::size_t(j)] : reference[std::size_t(j)];
    CAPTURE(j, r.eigenvalues[std::size_t(j)], want, r.residual_norm[std::size_t(j)]);
    CHECK(std::abs(r.eigenvalues[std::size_t(j)] - want) <= r.residual_norm[std::size_t(j)] * (1.0 + 1e-6) + 1e-12);
    CHECK(r.residual_norm[std::size_t(j)] <= 1e-5 * r.norm_estimate * (1.0 + 1e-6));
  }
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j) {
      double dot = 0.0;
      for (std::int32_t row = 0; row < a.rows; ++row)
        dot += x[std::size_t(row) * k + i] * x[std::size_t(row) * k + j];
      CHECK(std::abs(dot - (i == j ? 1.0 : 0.0)) <= 1e-8);
    }
}

}  // namespace

TEST_CASE("SpdSolver::eigenpairs_host against a dense eigensolver", "[solvers][eigen]") {
  const CsrMatrix a = small_problem();
  SpdSolver solver(a);
  const bool largest = GENERATE(false, true);
  const auto preconditioner = GENERATE(Preconditioner::chebyshev, Preconditioner::jacobi, Preconditioner::none);
  const int k = GENERATE(1, 6);
  CAPTURE(largest, solvers::preconditioner_name(preconditioner), k);
  solvers::EigenOptions options;
  options.largest = largest;
  options.preconditioner = preconditioner;
  // Without a preconditioner the smallest pairs of this matrix (||A|| / lambda_min ~ 1e3) converge slowly (~900
  // iterations); the preconditioned runs need tens.
  options.max_iterations = 5000;
  std::vector<double> x = random_block(a.rows, k, k, 21, 0.0);
  const solvers::EigenReport r = solver.eigenpairs_host(x.data(), k, k, options);
  INFO(r.message);
  REQUIRE(r.stop == StopReason::converged);
  CHECK(r.converged == k);
  CHECK(r.preconditioner == (largest ? Preconditioner::none : preconditioner));
  check_pairs(a, r, x, k, largest);
}

TEST_CASE("SpdSolver::eigenpairs_host: repeated, clustered and negative eigenvalues; limits and errors",
          "[solvers][eigen]") {
  SECTION("k above the number of distinct eigenvalues: 1, 2, 3, each 40 times") {
    std::vector<double> diagonal;
    for (double v : {3.0, 1.0, 2.0})
      for (int i = 0; i < 40; ++i) diagonal.push_back(v);
    const CsrMatrix a = from_diagonal_blocks(diagonal);
    SpdSolver solver(a);
    const int k = 5;
    std::vector<double> x = random_block(a.rows, k, k, 3, 0.0);
    const solvers::EigenReport r = solver.eigenpairs_host(x.data(), k, k);
    INFO(r.message);
    REQUIRE(r.stop == StopReason::converged);
    check_pairs(a, r, x, k, false);
  }
  SECTION("an indefinite matrix (the stencil [-1, 1, -1]): the most negative eigenvalues") {
    const std::int32_t n = 90;
    const CsrMatrix a = indefinite_stencil(n);
    SpdSolver solver(a);
    solvers::EigenOptions options;
    options.preconditioner = Preconditioner::none;
    options.max_iterations = 2000;
    const int k = 3;
    std::vector<double> x = random_block(n, k, k, 4, 0.0);
    const solvers::EigenReport r = solver.eigenpairs_host(x.data(), k, k, options);
    INFO(r.message);
    REQUIRE(r.stop == StopReason::converged);
    CHECK(r.eigenvalues[0] < 0.0);
    check_pairs(a, r, x, k, false);
  }
  SECTION("an iteration limit is reported, not thrown") {
    const CsrMatrix a = small_problem();
    SpdSolver solver(a);
    solvers::EigenOptions options;
    options.max_iterations = 1;
    options.preconditioner = Preconditioner::none;
    const int k = 4;
    std::vector<double> x = random_block(a.rows, k, k, 5, 0.0);
    const solvers::EigenReport r = solver.eigenpairs_host(x.data(), k, k, options);
    CHECK(r.stop == StopReason::max_iterations);
    CHECK(r.iterations == 1);
    CHECK(r.eigenvalues.size() == std::size_t(k));
  }
  SECTION("bad starts and sizes") {
    const CsrMatrix a = small_problem();
    SpdSolver solver(a);
    const int k = 3;
    std::vector<double> x = random_block(a.rows, k, k, 6, 0.0);
    for (std::int32_t i = 0; i < a.rows; ++i) x[std::size_t(i) * k + 2] = x[std::size_t(i) * k];  // dependent
    CHECK_THROWS_WITH(solver.eigenpairs_host(x.data(), k, k), Catch::Contains("rank deficient"));
    x[5] = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH(solver.eigenpairs_host(x.data(), k, k), Catch::Contains("NaN or Inf"));
    std::vector<double> wide(std::size_t(a.rows) * 71);
    CHECK_THROWS_AS(solver.eigenpairs_host(wide.data(), 71, 71), InvalidArgument);
    CHECK_THROWS_AS(solver.eigenpairs_host(x.data(), k - 1, k), InvalidArgument);
  }
}

// ------------------------------------------------------------------------------------- generalized eigenpairs
namespace {

/// A consistent P1 mass matrix on n points of a line with a varying element length: tridiagonal, symmetric positive
/// definite, a positive diagonal and condition ~ 10 (every row h (2, 1) / 6 per element).
CsrMatrix line_mass_matrix(std::int32_t n) {
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(n, n);
  for (std::int32_t e = 0; e + 1 < n; ++e) {
    const double h = 1.0 + 0.5 * std::sin(0.37 * e);
    m(e, e) += h / 3.0;
    m(e + 1, e + 1) += h / 3.0;
    m(e, e + 1) += h / 6.0;
    m(e + 1, e) += h / 6.0;
  }
  m(0, 0) += 0.5;  // the end points carry half an element more
  m(n - 1, n - 1) += 0.5;
  return tridiagonal(n, [&m](std::int32_t i, std::int32_t j) { return m(i, j); });
}

Eigen::MatrixXd dense(const CsrMatrix& a) {
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(a.rows, a.cols);
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) d(i, a.col_idx[std::size_t(p)]) = a.values[std::size_t(p)];
  return d;
}

}  // namespace

TEST_CASE("SpdSolver::eigenpairs_host(M, ...): the generalized problem A x = lambda M x", "[solvers][eigen]") {
  const CsrMatrix a = small_problem();
  const CsrMatrix m = line_mass_matrix(a.rows);
  SpdSolver solver(a);
  const Eigen::MatrixXd ad = dense(a), md = dense(m);
  const Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> reference(ad, md, Eigen::EigenvaluesOnly);
  const double m_smallest = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(md).eigenvalues()(0);
  REQUIRE(m_smallest > 0.0);

  SECTION("smallest and largest pairs against a dense generalized eigensolver") {
    const bool largest = GENERATE(false, true);
    const int k = GENERATE(1, 5);
    CAPTURE(largest, k);
    solvers::EigenOptions options;
    options.largest = largest;
    options.max_iterations = 5000;
    std::vector<double> x = random_block(a.rows, k, k, 31, 0.0);
    const solvers::EigenReport r = solver.eigenpairs_host(m, x.data(), k, k, options);
    INFO(r.message);
    REQUIRE(r.stop == StopReason::converged);
    REQUIRE(r.eigenvalues.size() == std::size_t(k));
    const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> xm(x.data(), a.rows,
                                                                                                      k);
    for (int j = 0; j < k; ++j) {
      const Eigen::Index rank = largest ? a.rows - 1 - j : j;
      const double want = reference.eigenvalues()(rank), got = r.eigenvalues[std::size_t(j)];
      // The residual r = A x - theta M x of an M-unit x bounds the distance to an eigenvalue by |r|_{M^-1}, which
      // is at most |r| / sqrt(lambda_min(M)).
      const double bound = r.residual_norm[std::size_t(j)] / std::sqrt(m_smallest);
      CAPTURE(j, got, want, bound);
      CHECK(std::abs(got - want) <= bound * (1.0 + 1e-6) + 1e-12 * std::abs(want));
      // The reported residual is the true one of the returned vector.
      const Eigen::VectorXd res = ad * xm.col(j) - got * (md * xm.col(j));
      CHECK(std::abs(res.norm() - r.residual_norm[std::size_t(j)]) <= 1e-6 * r.norm_estimate * 1e-5 + 1e-9 * res.norm());
      CHECK(res.norm() <= 1e-5 * r.norm_estimate * (1.0 + 1e-6));
    }
    const Eigen::MatrixXd gram = xm.transpose() * md * xm;  // M-orthonormal
    CHECK((gram - Eigen::MatrixXd::Identity(k, k)).cwiseAbs().maxCoeff() <= 1e-8);
  }
  SECTION("M = I gives the standard problem's pairs") {
    const int k = 4;
    std::vector<double> x1 = random_block(a.rows, k, k, 7, 0.0), x2 = x1;
    const solvers::EigenReport standard = solver.eigenpairs_host(x1.data(), k, k);
    const solvers::EigenReport generalized =
        solver.eigenpairs_host(from_diagonal_blocks(std::vector<double>(std::size_t(a.rows), 1.0)), x2.data(), k, k);
    REQUIRE(standard.stop == StopReason::converged);
    REQUIRE(generalized.stop == StopReason::converged);
    CHECK(generalized.iterations == standard.iterations);
    for (int j = 0; j < k; ++j)
      CHECK(std::abs(generalized.eigenvalues[std::size_t(j)] - standard.eigenvalues[std::size_t(j)]) <=
            1e-9 * std::abs(standard.eigenvalues[std::size_t(j)]));
  }
  SECTION("an M that is not SPD, not symmetric or of the wrong size is refused with a clear error") {
    const int k = 3;
    std::vector<double> x = random_block(a.rows, k, k, 8, 0.0);
    CsrMatrix negative = m;
    for (std::int32_t p = negative.row_ptr[10]; p < negative.row_ptr[11]; ++p)
      if (negative.col_idx[std::size_t(p)] == 10) negative.values[std::size_t(p)] = -1.0;
    CHECK_THROWS_WITH(solver.eigenpairs_host(negative, x.data(), k, k),
                      Catch::Contains("M is not positive definite") && Catch::Contains("row 10"));
    // A positive diagonal and still indefinite: found in the iteration (X^T M X or the search space's Gram matrix).
    solvers::EigenOptions options;
    options.max_iterations = 200;
    CHECK_THROWS_WITH(solver.eigenpairs_host(indefinite_stencil(a.rows), x.data(), k, k, options),
                      Catch::Contains("M is not positive definite"));
    CsrMatrix skew = m;
    skew.values[1] *= 1.5;  // m(0, 1) against m(1, 0)
    CHECK_THROWS_AS(solver.eigenpairs_host(skew, x.data(), k, k), solvers::NotSymmetricError);
    CHECK_THROWS_WITH(solver.eigenpairs_host(line_mass_matrix(a.rows - 1), x.data(), k, k),
                      Catch::Contains("M is 209 x 209"));
  }
}
