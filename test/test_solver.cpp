// Tests of the GPU-resident block solver's CPU parts (apps/solver): the Chebyshev polynomial and its Lanczos bounds,
// the small algebra shared with the GPU, the block solver and the Jacobi-PCG baseline on hard generated problems
// (bcsr24 products emulated by reference_spmm), and the stop reasons.
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
#include "diffusion_matrix.hpp"
#include "jacobi_pcg.hpp"
#include "problem.hpp"
#include "solver_test_support.hpp"
#include "test_skip.hpp"
#include "test_support.hpp"

using namespace bcsr24::solver;
using namespace bcsr24::solver::test;
using bcsr24::CsrMatrix;

namespace {

struct BlockSetup {
  InnerMatrix inner;
  ChebyshevChoice chebyshev;
};

/// The inner matrix (Jacobi-scaled A) for a backend and precision, and the Chebyshev choice from Lanczos on `space`.
InnerMatrix make_inner(const CsrMatrix& a, InnerBackend backend, bcsr24::Precision precision) {
  bcsr24::OperatorOptions options;
  options.precision = precision;
  return prepare_inner_matrix(a, backend, true, options);
}

struct BlockOutcome {
  BlockFcgResult result;
  ChebyshevChoice chebyshev;
  std::vector<double> x;
};

BlockOutcome solve_block(const Problem& problem, InnerBackend backend, bcsr24::Precision precision,
                         BRounding rounding, BlockFcgOptions options = {}, ChebyshevOptions cheb = {}) {
  const InnerMatrix inner = make_inner(problem.a, backend, precision);
  CpuBlockSpace space(problem.a, inner, problem.k, options.memory, cheb.lanczos_steps, rounding);
  space.set_slot(BlockSlots::b, problem.b);
  BlockOutcome out;
  const LanczosEstimate estimate = run_lanczos(space, cheb.lanczos_steps, cheb.seed);
  const double relative = backend == InnerBackend::bcsr24 && precision != bcsr24::Precision::split ? 1e-3 : 1e-6;
  out.chebyshev = choose_chebyshev(estimate, gershgorin_bound(problem.a, inner.row_scale, relative), cheb);
  out.result = block_fcg(space, &out.chebyshev.polynomial, options);
  out.x = space.slot(BlockSlots::x);
  return out;
}

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

TEST_CASE("block solver: Chebyshev-preconditioned flexible block CG reaches 1e-8 on hard generated problems",
          "[solver][block]") {
  for (CoefficientField field : {CoefficientField::inclusions, CoefficientField::layers, CoefficientField::lognormal}) {
    const DiffusionSpec spec = small_diffusion(field, 14);
    const std::uint64_t seed = bcsr24::test::test_seed(5);
    const Problem problem =
        make_problem(diffusion_name(spec), generate_diffusion_matrix(spec), 8, RhsKind::a_times_random, seed);
    struct Variant {
      InnerBackend backend;
      bcsr24::Precision precision;
      BRounding rounding;
    };
    for (const Variant v : {Variant{InnerBackend::bcsr24, bcsr24::Precision::split, BRounding::exact},
                            Variant{InnerBackend::bcsr24, bcsr24::Precision::fp16, BRounding::exact},
                            Variant{InnerBackend::cusparse_csr_f32, bcsr24::Precision::fp16, BRounding::exact}}) {
      INFO(problem.name << " (seed " << seed << "), " << inner_backend_name(v.backend) << " "
                        << bcsr24::precision_name(v.precision));
      const BlockOutcome out = solve_block(problem, v.backend, v.precision, v.rounding);
      INFO(out.result.message << "; " << out.chebyshev.reason);
      CHECK(out.result.stop == BlockStop::converged);
      CHECK(out.result.fallback_iteration == -1);
      CHECK(out.result.max_final_relative <= 1e-8);
      CHECK(max_relative_residual_host(problem.a, out.x, problem.b, problem.k) <= 1e-8);
      // One synchronisation per iteration: the status read.
      CHECK(out.result.synchronizations == out.result.iterations);
      CHECK(out.result.inner_products ==
            std::int64_t(out.result.iterations) * (out.chebyshev.polynomial.degree - 1));
      CHECK(out.result.history.size() == std::size_t(out.result.iterations));
      WARN(problem.name << " " << inner_backend_name(v.backend) << " " << bcsr24::precision_name(v.precision) << ": "
                        << out.result.message << " [" << out.result.inner_products << " inner products, "
                        << out.result.outer_products << " fp64]; " << out.chebyshev.reason);
    }
  }
}

TEST_CASE("block solver with fp16 products whose B is rounded as on the tile path: converges or falls back",
          "[solver][block][rounding]") {
  for (CoefficientField field : {CoefficientField::inclusions, CoefficientField::lognormal}) {
    const DiffusionSpec spec = small_diffusion(field, 14);
    const Problem problem =
        make_problem(diffusion_name(spec), generate_diffusion_matrix(spec), 8, RhsKind::a_times_random, 3);
    for (int memory : {1, 4}) {
      BlockFcgOptions options;
      options.memory = memory;
      const BlockOutcome out =
          solve_block(problem, InnerBackend::bcsr24, bcsr24::Precision::fp16, BRounding::tiles, options);
      INFO(problem.name << ", memory " << memory << ": " << out.result.message << "; " << out.result.fallback_reason);
      CHECK(out.result.stop == BlockStop::converged);
      CHECK(max_relative_residual_host(problem.a, out.x, problem.b, problem.k) <= 1e-8);
      WARN(problem.name << " fp16 with tile-rounded B, memory " << memory << ": " << out.result.message
                        << (out.result.fallback_iteration >= 0 ? " (fell back to Jacobi)" : ""));
    }
  }
}

TEST_CASE("Jacobi-PCG baseline: k independent fp64 CG solves to the true residual", "[solver][pcg]") {
  const DiffusionSpec spec = small_diffusion(CoefficientField::inclusions, 12);
  const Problem problem =
      make_problem(diffusion_name(spec), generate_diffusion_matrix(spec), 5, RhsKind::a_times_random, 4);
  const InnerMatrix inner = make_inner(problem.a, InnerBackend::cusparse_csr_f32, bcsr24::Precision::fp16);
  // The same iteration, one column at a time, in plain Eigen: the count the baseline must match.
  const auto a = bcsr24::test::to_eigen(problem.a);
  const std::vector<double> inverse = inverse_diagonal(problem.a);
  const Eigen::Map<const Eigen::VectorXd> dinv(inverse.data(), problem.a.rows);
  int reference_iterations = 0;
  for (int j = 0; j < problem.k; ++j) {
    Eigen::VectorXd b(problem.a.rows);
    for (std::int32_t i = 0; i < problem.a.rows; ++i) b(i) = problem.b[std::size_t(i) * problem.k + j];
    Eigen::VectorXd x = Eigen::VectorXd::Zero(b.size()), r = b, z = dinv.cwiseProduct(r), p = z;
    double rho = r.dot(z);
    int it = 0;
    while (r.norm() > 1e-8 * b.norm()) {
      const Eigen::VectorXd q = a * p;
      const double alpha = rho / p.dot(q);
      x += alpha * p;
      r -= alpha * q;
      z = dinv.cwiseProduct(r);
      const double next = r.dot(z);
      p = z + next / rho * p;
      rho = next;
      ++it;
    }
    reference_iterations = std::max(reference_iterations, it);
  }
  for (int check_every : {1, 8}) {
    CpuBlockSpace space(problem.a, inner, problem.k, 1, 2, BRounding::exact);
    space.set_slot(BlockSlots::b, problem.b);
    PcgOptions options;
    options.check_every = check_every;
    const PcgResult result = jacobi_pcg(space, options);
    INFO(result.message << " (check every " << check_every << ", reference " << reference_iterations << ")");
    CHECK(result.stop == BlockStop::converged);
    CHECK(result.max_final_relative <= 1e-8);
    CHECK(max_relative_residual_host(problem.a, space.slot(BlockSlots::x), problem.b, problem.k) <= 1e-8);
    CHECK(result.converged_iteration >= reference_iterations - 1);
    CHECK(result.converged_iteration <= reference_iterations + check_every);
    CHECK(result.iterations == result.converged_iteration);
    CHECK(result.products == result.iterations + 2);  // plus the initial and the confirming residual
    // One status read per check_every iterations, plus the confirmation.
    CHECK(result.synchronizations <= (result.iterations + check_every - 1) / check_every + 1 + result.restarts);
  }
}

TEST_CASE("block solver and baseline stop with a stated reason", "[solver][block][stop]") {
  const DiffusionSpec spec = small_diffusion(CoefficientField::lognormal, 10);
  const Problem problem =
      make_problem(diffusion_name(spec), generate_diffusion_matrix(spec), 4, RhsKind::a_times_random, 2);
  SECTION("iteration limit") {
    BlockFcgOptions options;
    options.max_iterations = 2;
    const BlockOutcome out = solve_block(problem, InnerBackend::bcsr24, bcsr24::Precision::split, BRounding::exact,
                                         options);
    CHECK(out.result.stop == BlockStop::max_iterations);
    CHECK(out.result.iterations == 2);
    CHECK(out.result.message.find("limit of 2 iterations") != std::string::npos);
  }
  SECTION("wall-clock limit") {
    BlockFcgOptions options;
    options.time_limit_seconds = 1e-9;
    const BlockOutcome out = solve_block(problem, InnerBackend::bcsr24, bcsr24::Precision::split, BRounding::exact,
                                         options);
    CHECK(out.result.stop == BlockStop::time_limit);
    CHECK(out.result.iterations <= 1);
  }
  SECTION("stagnation below the attainable accuracy") {
    BlockFcgOptions options;
    options.tolerance = 1e-30;
    options.stall_window = 6;
    options.fallback_jacobi = false;
    const BlockOutcome out = solve_block(problem, InnerBackend::bcsr24, bcsr24::Precision::split, BRounding::exact,
                                         options);
    INFO(out.result.message);
    CHECK(out.result.stop == BlockStop::stagnation);
    CHECK(out.result.max_final_relative < 1e-12);  // it got as far as fp64 allows
  }
  SECTION("stagnation with the fallback: Jacobi first, then stop") {
    BlockFcgOptions options;
    options.tolerance = 1e-30;
    options.stall_window = 6;
    options.jacobi_stall_window = 6;
    const BlockOutcome out = solve_block(problem, InnerBackend::bcsr24, bcsr24::Precision::split, BRounding::exact,
                                         options);
    CHECK(out.result.stop == BlockStop::stagnation);
    CHECK(out.result.fallback_iteration > 0);
    CHECK(out.result.jacobi_iterations > 0);
    CHECK_FALSE(out.result.fallback_reason.empty());
  }
  SECTION("breakdown on an indefinite matrix") {
    // A - c D with c between the second and third eigenvalue of D^-1/2 A D^-1/2: two negative eigenvalues, and the
    // diagonal (1 - c) D stays positive, as Jacobi scaling needs.
    CsrMatrix a = problem.a;
    const Eigen::VectorXd e = scaled_spectrum(a);
    const double c = 0.5 * (e(1) + e(2));
    REQUIRE(c < 1.0);
    for (std::int32_t i = 0; i < a.rows; ++i)
      for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        if (a.col_idx[p] == i) a.values[p] *= 1.0 - c;
    const Problem indefinite = make_problem("indefinite", std::move(a), 4, RhsKind::random, 5);
    BlockFcgOptions options;
    options.max_iterations = 200;
    const BlockOutcome out = solve_block(indefinite, InnerBackend::bcsr24, bcsr24::Precision::split,
                                         BRounding::exact, options);
    INFO(out.result.message);
    CHECK(out.result.stop == BlockStop::breakdown);
    CHECK(out.result.message.find("not SPD") != std::string::npos);
    const InnerMatrix inner = make_inner(indefinite.a, InnerBackend::cusparse_csr_f32, bcsr24::Precision::fp16);
    CpuBlockSpace space(indefinite.a, inner, indefinite.k, 1, 2, BRounding::exact);
    space.set_slot(BlockSlots::b, indefinite.b);
    PcgOptions pcg;
    pcg.max_iterations = 500;
    const PcgResult baseline = jacobi_pcg(space, pcg);
    INFO(baseline.message);
    CHECK(baseline.stop == BlockStop::breakdown);
  }
  SECTION("baseline iteration and time limits") {
    const InnerMatrix inner = make_inner(problem.a, InnerBackend::cusparse_csr_f32, bcsr24::Precision::fp16);
    CpuBlockSpace space(problem.a, inner, problem.k, 1, 2, BRounding::exact);
    space.set_slot(BlockSlots::b, problem.b);
    PcgOptions pcg;
    pcg.max_iterations = 5;
    CHECK(jacobi_pcg(space, pcg).stop == BlockStop::max_iterations);
    pcg.max_iterations = 100000;
    pcg.time_limit_seconds = 1e-9;
    CHECK(jacobi_pcg(space, pcg).stop == BlockStop::time_limit);
  }
}

TEST_CASE("block solver on the shared SPD matrices", "[solver][block][suitesparse]") {
  const auto dir = bcsr24::test::shared_data_dir();
  if (!dir) {
    WARN("shared data not found: skipping");
    return;
  }
  for (const std::string name : {"bcsstk03", "bcsstk05", "bcsstk04", "nos4", "494_bus", "bcsstk20"}) {
    const std::string path = *dir + "/suitesparse/" + name + ".mtx";
    if (!std::filesystem::exists(path)) {
      WARN(path << " not found");
      continue;
    }
    const Problem problem = make_problem(name, bcsr24::read_matrix_market(path), 4, RhsKind::a_times_random, 1);
    for (bcsr24::Precision precision : {bcsr24::Precision::split, bcsr24::Precision::fp16}) {
      BlockFcgOptions options;
      options.max_iterations = 3000;
      options.memory = 2;
      const BlockOutcome out = solve_block(problem, InnerBackend::bcsr24, precision, BRounding::tiles, options);
      INFO(name << " " << bcsr24::precision_name(precision) << ": " << out.result.message << "; "
                << out.chebyshev.reason << "; " << out.result.fallback_reason);
      const double host = max_relative_residual_host(problem.a, out.x, problem.b, problem.k);
      CHECK(host == Approx(out.result.max_final_relative).epsilon(1e-3).margin(1e-14));
      // bcsstk20 (condition number ~4e12) with fp16 products whose B is rounded per tile: the preconditioner's noise
      // may stop it short of 1e-8; it must then say so. Split products converge everywhere.
      if (precision == bcsr24::Precision::split || name != "bcsstk20") {
        CHECK(out.result.stop == BlockStop::converged);
        CHECK(host <= 1e-8);
      }
      WARN(name << " " << bcsr24::precision_name(precision) << ": " << out.result.message << " ["
                << out.result.inner_products << " inner products]"
                << (out.result.fallback_iteration >= 0 ? "; fell back to Jacobi" : ""));
    }
  }
}

TEST_CASE("block solver edge cases: dependent and zero right-hand sides, one column, memory, recursive residual",
          "[solver][block][edge]") {
  const DiffusionSpec spec = small_diffusion(CoefficientField::lognormal, 11);
  Problem problem = make_problem(diffusion_name(spec), generate_diffusion_matrix(spec), 6, RhsKind::random, 8);
  // Column 3 duplicates column 0, column 4 is 2 x column 1 - column 2, column 5 is zero.
  for (std::int32_t i = 0; i < problem.a.rows; ++i) {
    double* row = &problem.b[std::size_t(i) * 6];
    row[3] = row[0];
    row[4] = 2.0 * row[1] - row[2];
    row[5] = 0.0;
  }
  problem.x_true.clear();
  SECTION("dependent columns are deflated, the zero column stays zero") {
    const BlockOutcome out = solve_block(problem, InnerBackend::bcsr24, bcsr24::Precision::split, BRounding::exact);
    INFO(out.result.message);
    CHECK(out.result.stop == BlockStop::converged);
    CHECK(out.result.history.front().deflated >= 2);
    CHECK(out.result.history.front().directions <= 3);
    CHECK(max_relative_residual_host(problem.a, out.x, problem.b, problem.k) <= 1e-8);
    for (std::int32_t i = 0; i < problem.a.rows; ++i) CHECK(out.x[std::size_t(i) * 6 + 5] == 0.0);
    CHECK(out.result.final_relative[5] == 0.0);
  }
  SECTION("memory 3 and a recursive residual replaced every 4 iterations reach the same accuracy") {
    BlockFcgOptions options;
    options.memory = 3;
    options.replace_every = 4;
    const BlockOutcome out =
        solve_block(problem, InnerBackend::bcsr24, bcsr24::Precision::split, BRounding::exact, options);
    INFO(out.result.message);
    CHECK(out.result.stop == BlockStop::converged);
    CHECK(max_relative_residual_host(problem.a, out.x, problem.b, problem.k) <= 1e-8);
    // A convergence claimed by the recursion is confirmed with one extra read.
    CHECK(out.result.synchronizations <= out.result.iterations + 1);
    bool recursive_seen = false;
    for (const BlockIterationRecord& r : out.result.history) recursive_seen = recursive_seen || !r.true_residual;
    CHECK(recursive_seen);
  }
  SECTION("one right-hand side") {
    Problem one = make_problem("one", problem.a, 1, RhsKind::a_times_random, 3);
    const BlockOutcome out = solve_block(one, InnerBackend::bcsr24, bcsr24::Precision::split, BRounding::exact);
    CHECK(out.result.stop == BlockStop::converged);
    CHECK(max_relative_residual_host(one.a, out.x, one.b, one.k) <= 1e-8);
  }
  SECTION("Jacobi preconditioner instead of the polynomial") {
    const InnerMatrix inner = make_inner(problem.a, InnerBackend::cusparse_csr_f32, bcsr24::Precision::fp16);
    CpuBlockSpace space(problem.a, inner, problem.k, 1, 2, BRounding::exact);
    space.set_slot(BlockSlots::b, problem.b);
    const BlockFcgResult result = block_fcg(space, nullptr, BlockFcgOptions{});
    INFO(result.message);
    CHECK(result.stop == BlockStop::converged);
    CHECK(result.inner_products == 0);
    CHECK(result.jacobi_iterations == result.iterations);
    CHECK(max_relative_residual_host(problem.a, space.slot(BlockSlots::x), problem.b, problem.k) <= 1e-8);
  }
  SECTION("options the space cannot hold are refused") {
    const InnerMatrix inner = make_inner(problem.a, InnerBackend::cusparse_csr_f32, bcsr24::Precision::fp16);
    CpuBlockSpace space(problem.a, inner, problem.k, 1, 2, BRounding::exact);
    BlockFcgOptions options;
    options.memory = 2;
    CHECK_THROWS_AS(block_fcg(space, nullptr, options), bcsr24::InvalidArgument);
    CHECK_THROWS_AS(run_lanczos(space, 3, 1), bcsr24::InvalidArgument);
    CHECK_THROWS_AS(CpuBlockSpace(problem.a, inner, 65, 1, 2), bcsr24::InvalidArgument);
  }
}
