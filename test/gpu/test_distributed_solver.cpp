// bcsr24_solve's distributed space (apps/solver: GpuSystem over NCCL, solve_distributed) on the GPUs of this
// machine: for P = 1 .. #GPUs the distributed solve must converge in the true fp64 residual, with every rank making
// the same decisions, within one outer iteration of the single-GPU solve, and to a solution the host's fp64 check
// confirms. Both inner backends; the Jacobi-scaled inner matrix; a randomly numbered mesh (large halos).
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bcsr24_testkit/mesh.hpp"
#include "distributed_solve.hpp"
#include "flexible_cg.hpp"
#include "gpu_system.hpp"
#include "problem.hpp"

using namespace bcsr24;
using namespace bcsr24::solver;

namespace {

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

Problem mesh_problem(NodeOrder order) {
  MeshSpec spec;
  spec.nx = 10;
  spec.ny = 9;
  spec.nz = 7;  // 630 nodes x 3 dofs = 1890 unknowns: not a multiple of 16
  spec.dofs_per_node = 3;
  spec.order = order;
  spec.seed = 5;
  return make_problem("mesh", generate_mesh_matrix(spec), 5, RhsKind::a_times_random, 3);
}

OuterResult solve_single(const Problem& p, InnerBackend backend, bool scaled, const OuterOptions& outer,
                         const InnerOptions& inner) {
  const InnerMatrix matrix = prepare_inner_matrix(p.a, backend, scaled);
  GpuSystem space(p.a, matrix, p.k, outer_slot_count(outer.memory));
  space.set_slot(OuterSlots::b, p.b);
  return flexible_cg(space, outer, inner);
}

}  // namespace

TEST_CASE("distributed solver converges like the single-GPU one", "[distributed][solver]") {
  OuterOptions outer;  // tolerance 1e-10 on the true fp64 residual
  InnerOptions inner;
  struct Variant {
    NodeOrder order;
    InnerBackend backend;
    bool scaled;
  };
  const std::vector<Variant> variants = {{NodeOrder::lexicographic, InnerBackend::bcsr24, false},
                                         {NodeOrder::random, InnerBackend::bcsr24, false},
                                         {NodeOrder::random, InnerBackend::bcsr24, true},
                                         {NodeOrder::random, InnerBackend::cusparse_csr_f32, false}};
  for (const Variant& v : variants) {
    const Problem problem = mesh_problem(v.order);
    const OuterResult single = solve_single(problem, v.backend, v.scaled, outer, inner);
    REQUIRE(single.stop == StopReason::converged);
    for (int gpus = 1; gpus <= device_count(); ++gpus) {
      INFO("GPUs " << gpus << ", backend " << inner_backend_name(v.backend) << ", order "
                   << (v.order == NodeOrder::random ? "random" : "lexicographic") << ", jacobi " << v.scaled);
      DistributedSolveSettings settings;
      settings.gpus = gpus;
      settings.backend = v.backend;
      settings.jacobi_scaling = v.scaled;
      settings.outer = outer;
      settings.inner = inner;
      const DistributedSolveResult d = solve_distributed(problem, settings);
      CHECK(d.result.stop == StopReason::converged);
      CHECK(d.ranks_agree);
      CHECK(std::abs(d.result.outer_iterations - single.outer_iterations) <= 1);
      CHECK(d.result.max_final_relative_residual <= outer.tolerance);
      // The host's own fp64 residual of the gathered solution: the same 1e-10 up to the rounding of b - A x.
      CHECK(max_relative_residual_host(problem.a, d.x, problem.b, problem.k) <= outer.tolerance * 1.01);
      REQUIRE(d.ranks.size() == std::size_t(gpus));
      std::int32_t rows = 0;
      for (const RankSolveStats& r : d.ranks) {
        CHECK(r.row_begin == rows);
        rows += r.rows;
        CHECK(r.timings.inner_products == d.result.inner_products);  // every rank ran every product
        if (gpus == 1) CHECK(r.halo_rows == 0);
        if (gpus > 1 && v.order == NodeOrder::random) CHECK(r.halo_rows > 0);
      }
      CHECK(rows == problem.a.rows);
    }
  }
}
