// Tests of the legacy solver (apps/solver) that the distributed path runs: block CG on exact products, and flexible
// CG with block CG inside on meshes and SuiteSparse matrices (bcsr24 products emulated by reference_spmm).
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
#include "block_cg.hpp"
#include "cpu_system.hpp"
#include "flexible_cg.hpp"
#include "mesh_matrix.hpp"
#include "problem.hpp"
#include "solver_test_support.hpp"
#include "test_skip.hpp"
#include "test_support.hpp"

using namespace bcsr24::solver;
using namespace bcsr24::solver::test;
using bcsr24::CsrMatrix;

namespace {

struct SolveOutcome {
  OuterResult result;
  std::vector<double> x;
};

SolveOutcome solve_on_cpu(const Problem& problem, InnerBackend backend, bool jacobi_scaling, OuterOptions outer = {},
                          InnerOptions inner = {}) {
  const InnerMatrix matrix = prepare_inner_matrix(problem.a, backend, jacobi_scaling);
  CpuSystem space(problem.a, matrix, problem.k, outer_slot_count(outer.memory));
  space.set_slot(OuterSlots::b, problem.b);
  SolveOutcome out;
  out.result = flexible_cg(space, outer, inner);
  out.x = space.slot(OuterSlots::x);
  return out;
}

/// Inner space over an Eigen fp64 matrix with exact products, to test the block CG algebra alone.
class ExactInnerSpace final : public InnerBlockSpace {
 public:
  ExactInnerSpace(const Eigen::MatrixXd& a, const Eigen::MatrixXd& rhs) : a_(a), k_(int(rhs.cols())) {
    current_ = Eigen::MatrixXd::Zero(a.rows(), 4 * k_);
    current_.middleCols(2 * k_, k_) = rhs;
    next_ = current_;
  }
  int k() const override { return k_; }
  void gram(Eigen::MatrixXd& g) override {
    const Eigen::MatrixXd prq = current_.rightCols(3 * k_);
    g = prq.transpose() * prq;
  }
  void update(const Eigen::MatrixXd& m) override {
    next_.leftCols(3 * k_) = current_ * m;
    std::swap(current_, next_);
  }
  void product() override {
    // Record how far each search block is from orthonormal on its live (nonzero) columns.
    const Eigen::MatrixXd p = current_.middleCols(k_, k_);
    int live = 0;
    while (live < k_ && p.col(live).norm() > 0.0) ++live;
    const Eigen::MatrixXd ptp = p.leftCols(live).transpose() * p.leftCols(live);
    max_entry_ = std::max(max_entry_, p.cwiseAbs().maxCoeff());
    max_orthonormality_error_ =
        std::max(max_orthonormality_error_, (ptp - Eigen::MatrixXd::Identity(live, live)).cwiseAbs().maxCoeff());
    current_.middleCols(3 * k_, k_) = a_ * p;
  }
  Eigen::MatrixXd x() const { return current_.leftCols(k_); }
  double max_entry_ = 0.0, max_orthonormality_error_ = 0.0;

 private:
  Eigen::MatrixXd a_;
  int k_;
  Eigen::MatrixXd current_, next_;
};

}  // namespace

TEST_CASE("block CG solves several right-hand sides, also linearly dependent ones, without breaking down",
          "[solver][block_cg]") {
  MeshSpec spec;
  spec.nx = spec.ny = spec.nz = 5;
  spec.dofs_per_node = 2;
  spec.stencil = 7;
  const Eigen::MatrixXd a = dense(generate_mesh_matrix(spec));
  const std::uint64_t seed = bcsr24::test::test_seed(5);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Eigen::MatrixXd rhs(a.rows(), 6);
  for (Eigen::Index i = 0; i < rhs.size(); ++i) rhs.data()[i] = u(rng);
  rhs.col(3) = rhs.col(0);                   // duplicate
  rhs.col(4) = 2.0 * rhs.col(1) - rhs.col(2);  // combination
  rhs.col(5).setZero();                        // nothing to solve
  ExactInnerSpace space(a, rhs);
  InnerOptions options;
  options.tolerance = 1e-9;
  options.max_products = 200;
  options.noise_floor = 1e-14;  // exact products here, no fp32 noise floor
  const InnerStats stats = block_cg(space, options);
  CHECK_FALSE(stats.breakdown);
  CHECK(stats.relative_residual <= 1e-9);
  CHECK(stats.max_deflated >= 2);  // the two dependent columns were dropped from the search space
  const Eigen::MatrixXd x = space.x();
  for (int j = 0; j < 5; ++j) CHECK((a * x.col(j) - rhs.col(j)).norm() <= 1e-9 * rhs.col(j).norm());
  CHECK(x.col(5).norm() == 0.0);
  CHECK(space.max_orthonormality_error_ < 1e-8);
  // Fewer products than k separate CGs would need: the block Krylov space is shared.
  CHECK(stats.products < 150);
}

TEST_CASE("whitened directions have entries within [-1, 1], so the fixed fp16 scale cannot overflow",
          "[solver][block_cg]") {
  MeshSpec spec;
  spec.nx = spec.ny = spec.nz = 4;
  spec.stencil = 27;
  const Eigen::MatrixXd a = dense(generate_mesh_matrix(spec)) * 1e6;  // scale of A does not matter
  Eigen::MatrixXd rhs = Eigen::MatrixXd::Random(a.rows(), 4) * 1e-3;
  ExactInnerSpace space(a, rhs);
  InnerOptions options;
  options.max_products = 10;
  options.tolerance = 1e-12;
  block_cg(space, options);
  CHECK(space.max_entry_ <= 1.0 + 1e-12);
  CHECK(space.max_entry_ > 0.01);
  CHECK(space.max_orthonormality_error_ < 1e-8);
}

TEST_CASE("mixed-precision solve on a mesh: fp16 bcsr24 products (emulated) reach 1e-10", "[solver][fcg]") {
  MeshSpec spec;
  spec.nx = spec.ny = spec.nz = 7;
  spec.dofs_per_node = 3;
  const std::uint64_t seed = bcsr24::test::test_seed(3);
  INFO("seed " << seed);
  const Problem problem = make_problem("mesh", generate_mesh_matrix(spec), 4, RhsKind::a_times_random, seed);
  for (InnerBackend backend : {InnerBackend::bcsr24, InnerBackend::cusparse_csr_f32}) {
    INFO("inner backend " << inner_backend_name(backend));
    const SolveOutcome out = solve_on_cpu(problem, backend, false);
    INFO(out.result.message);
    CHECK(out.result.stop == StopReason::converged);
    CHECK(out.result.fallback_iteration == -1);
    CHECK(out.result.max_final_relative_residual <= 1e-10);
    CHECK(max_relative_residual_host(problem.a, out.x, problem.b, problem.k) <= 1e-10);
    CHECK(max_relative_error(out.x, problem.x_true, problem.k) <= 1e-7);
    // The fp16 inner solve does the work: few outer iterations.
    CHECK(out.result.outer_iterations <= 15);
    CHECK(out.result.inner_products > 0);
  }
}

TEST_CASE("values beyond fp16 range are left to the library's scaling", "[solver][fcg][scaling]") {
  MeshSpec spec;
  spec.nx = spec.ny = spec.nz = 5;
  spec.dofs_per_node = 2;
  CsrMatrix a = generate_mesh_matrix(spec);
  for (double& v : a.values) v *= 1e9;  // far beyond fp16's 65504
  const Problem problem = make_problem("scaled mesh", std::move(a), 3, RhsKind::a_times_random, 9);
  const InnerMatrix inner = prepare_inner_matrix(problem.a, InnerBackend::bcsr24, false);
  // Per-row scaling (the default): every row's exponent brings its 1e9-sized values under fp16's 65504.
  CHECK(inner.op->scaling().per_row);
  CHECK(inner.op->scaling().min_row_exponent > 0);
  CHECK(inner.op->scaling().flushed_count == 0);
  const SolveOutcome out = solve_on_cpu(problem, InnerBackend::bcsr24, false);
  INFO(out.result.message);
  CHECK(out.result.stop == StopReason::converged);
  CHECK(max_relative_residual_host(problem.a, out.x, problem.b, problem.k) <= 1e-10);
}

TEST_CASE("ill-conditioned SuiteSparse matrices: converge or say why", "[solver][fcg][suitesparse][.needs_data]") {
  const auto dir = bcsr24::test::shared_data_dir();
  if (!dir) BCSR24_SKIP("shared data not found (../shared/data or $BCSR24_SHARED_DATA): no bcsstk cases");
  int ran = 0;  // a data folder without either matrix fails below instead of passing on nothing
  for (const std::string name : {"bcsstk03", "bcsstk05"}) {
    const std::string path = *dir + "/suitesparse/" + name + ".mtx";
    if (!std::filesystem::exists(path)) {
      WARN(path << " not found");
      continue;
    }
    ++ran;
    const Problem problem = make_problem(name, bcsr24::read_matrix_market(path), 2, RhsKind::a_times_random, 1);
    for (bool jacobi_scaling : {false, true}) {
      OuterOptions outer;
      outer.max_outer = 3000;
      const SolveOutcome out = solve_on_cpu(problem, InnerBackend::bcsr24, jacobi_scaling, outer);
      INFO(name << (jacobi_scaling ? " with" : " without") << " inner Jacobi scaling: " << out.result.message
                << "; fallback: " << out.result.fallback_reason);
      CHECK_FALSE(out.result.message.empty());
      const double residual = max_relative_residual_host(problem.a, out.x, problem.b, problem.k);
      CHECK(residual == Approx(out.result.max_final_relative_residual).epsilon(1e-3).margin(1e-14));
      if (out.result.stop == StopReason::converged) CHECK(residual <= 1e-10);
      if (out.result.fallback_iteration >= 0) CHECK_FALSE(out.result.fallback_reason.empty());
      WARN(name << (jacobi_scaling ? " (inner Jacobi scaling)" : "") << ": " << out.result.message << " ["
                << out.result.outer_iterations << " outer, " << out.result.inner_products << " inner products"
                << (out.result.fallback_iteration >= 0 ? ", fell back to Jacobi" : "") << "]");
    }
  }
  REQUIRE(ran > 0);
}
