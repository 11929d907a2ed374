// Tests of the GPU-resident block solver's CPU parts (apps/solver): the block solver and the Jacobi-PCG baseline
// on hard generated problems (bcsr24 products emulated by reference_spmm), and the stop reasons. Its building
// blocks (Chebyshev, Lanczos, the small algebra): test_solver_parts.cpp.
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

struct BlockSetup {
  InnerMatrix inner;
  ChebyshevChoice chebyshev;
};

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

}  // namespace

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

TEST_CASE("block solver on the shared SPD matrices", "[solver][block][suitesparse][.needs_data]") {
  const auto dir = bcsr24::test::shared_data_dir();
  if (!dir) BCSR24_SKIP("shared data not found (../shared/data or $BCSR24_SHARED_DATA): no SPD matrices");
  int ran = 0;  // a data folder without any of these matrices fails below instead of passing on nothing
  for (const std::string name : {"bcsstk03", "bcsstk05", "bcsstk04", "nos4", "494_bus", "bcsstk20"}) {
    const std::string path = *dir + "/suitesparse/" + name + ".mtx";
    if (!std::filesystem::exists(path)) {
      WARN(path << " not found");
      continue;
    }
    ++ran;
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
  REQUIRE(ran > 0);
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
    const BlockFcgOptions options;
    CpuBlockSpace space(problem.a, inner, problem.k, options.memory, 2, BRounding::exact);
    space.set_slot(BlockSlots::b, problem.b);
    const BlockFcgResult result = block_fcg(space, nullptr, options);
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
