// Tests of the solver's test problems (apps/solver): the mesh and diffusion matrices are symmetric, diagonally
// dominant or M-matrices, SPD, and as ill-conditioned as their coefficients say.
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
#include "bcsr24_testkit/diffusion.hpp"
#include "mesh_matrix.hpp"
#include "problem.hpp"
#include "solver_test_support.hpp"
#include "test_support.hpp"

using namespace bcsr24::solver;
using namespace bcsr24::solver::test;
using bcsr24::CsrMatrix;

TEST_CASE("mesh matrices are symmetric, strictly diagonally dominant with a positive diagonal", "[solver][mesh]") {
  for (const MeshSpec& spec : bcsr24::test::small_mesh_specs()) {
    const int dofs = spec.dofs_per_node;
    INFO("stencil " << spec.stencil << ", dofs " << dofs << ", " << mesh_name(spec));
    const CsrMatrix a = generate_mesh_matrix(spec);
    CHECK(a.rows == 60 * dofs);
    CHECK(a.nnz() == mesh_nonzeros(spec));
    REQUIRE_NOTHROW(bcsr24::validate_csr(a));
    const SpdEvidence ev = check_spd_evidence(a);
    INFO(ev.summary());
    CHECK(ev.proves_spd());
    CHECK(ev.symmetric);
    CHECK(ev.min_dominance_ratio == Approx(1.0 + spec.diagonal_margin));
    CHECK(ev.min_dominance_ratio > 1.0);
    // Independent check on the small matrix: symmetric with a positive smallest eigenvalue.
    const Eigen::MatrixXd d = dense(a);
    CHECK((d - d.transpose()).cwiseAbs().maxCoeff() == 0.0);
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(d);
    CHECK(eig.eigenvalues()(0) > 0.0);
    // Off-diagonal couplings exist between dofs of one node and between neighbours.
    if (dofs > 1) CHECK(d(0, 1) != 0.0);
    if (spec.order == NodeOrder::lexicographic) CHECK(d(0, dofs) != 0.0);  // node 1 neighbours node 0
  }
  // Interior rows of a 27-point stencil with 3 dofs have 81 entries.
  MeshSpec spec;
  spec.nx = spec.ny = spec.nz = 3;
  const CsrMatrix a = generate_mesh_matrix(spec);
  const std::int32_t centre = (1 * 3 + 1) * 3 + 1;
  CHECK(a.row_ptr[centre * 3 + 1] - a.row_ptr[centre * 3] == 81);
  // Reproducible from the seed, different with another.
  CHECK(generate_mesh_matrix(spec).values == a.values);
  spec.seed = 2;
  CHECK(generate_mesh_matrix(spec).values != a.values);
  spec.stencil = 9;
  CHECK_THROWS_AS(generate_mesh_matrix(spec), bcsr24::InvalidArgument);
}

TEST_CASE("the default mesh has more than a million nonzeros and is diagonally dominant", "[solver][mesh][large]") {
  const MeshSpec spec;  // 40^3 nodes, 3 dofs, 27 points
  CHECK(mesh_nonzeros(spec) >= 1000000);
  // The smallest mesh the solver's checks use for ">= 1M nonzeros" is generated and checked in full.
  MeshSpec small = spec;
  small.nx = small.ny = small.nz = 20;
  REQUIRE(mesh_nonzeros(small) >= 1000000);
  const CsrMatrix a = generate_mesh_matrix(small);
  CHECK(a.nnz() == mesh_nonzeros(small));
  const SpdEvidence ev = check_spd_evidence(a);
  INFO(ev.summary());
  CHECK(ev.proves_spd());
}

TEST_CASE("diffusion matrices are symmetric M-matrices, SPD and as ill-conditioned as their contrast", "[solver][diffusion]") {
  for (CoefficientField field : {CoefficientField::constant, CoefficientField::inclusions, CoefficientField::layers,
                                 CoefficientField::lognormal}) {
    DiffusionSpec spec = small_diffusion(field, 7);
    spec.nx = 8;
    spec.nz = 6;
    INFO(diffusion_name(spec));
    const CsrMatrix a = generate_diffusion_matrix(spec);
    REQUIRE(a.rows == 8 * 7 * 6);
    REQUIRE_NOTHROW(bcsr24::validate_csr(a));
    const SpdEvidence ev = check_spd_evidence(a);
    INFO(ev.summary());
    CHECK(ev.symmetric);
    CHECK(ev.positive_diagonal);
    // Interior rows have exactly 7 entries; off-diagonals are negative; the diagonal is at least their sum.
    const std::int32_t interior = (3 * 7 + 3) * 8 + 3;
    CHECK(a.row_ptr[interior + 1] - a.row_ptr[interior] == 7);
    for (std::int32_t i = 0; i < a.rows; ++i) {
      double diagonal = 0.0, off = 0.0;
      for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        if (a.col_idx[p] == i) {
          diagonal = a.values[p];
        } else {
          CHECK(a.values[p] < 0.0);
          off -= a.values[p];
        }
      }
      CHECK(diagonal >= off * (1.0 - 1e-14));
    }
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(dense(a), Eigen::EigenvaluesOnly);
    const double kappa = eig.eigenvalues()(a.rows - 1) / eig.eigenvalues()(0);
    CHECK(eig.eigenvalues()(0) > 0.0);
    WARN(diffusion_name(spec) << ": condition number " << kappa << ", Jacobi-scaled "
                              << [&] { const Eigen::VectorXd e = scaled_spectrum(a); return e(e.size() - 1) / e(0); }());
    if (field == CoefficientField::inclusions) CHECK(kappa > 1e6);
    if (field == CoefficientField::constant) CHECK(kappa < 1e3);
    // Reproducible from the seed, different with another (except the constant field).
    CHECK(generate_diffusion_matrix(spec).values == a.values);
    if (field != CoefficientField::constant) {
      spec.seed = 2;
      CHECK(generate_diffusion_matrix(spec).values != a.values);
    }
  }
  // nz = 1: the 2-D five-point problem.
  DiffusionSpec flat = small_diffusion(CoefficientField::lognormal, 9);
  flat.nz = 1;
  const CsrMatrix a2 = generate_diffusion_matrix(flat);
  CHECK(a2.row_ptr[4 * 9 + 4 + 1] - a2.row_ptr[4 * 9 + 4] == 5);
  DiffusionSpec bad = flat;
  bad.contrast = -1.0;
  CHECK_THROWS_AS(generate_diffusion_matrix(bad), bcsr24::InvalidArgument);
  bad = flat;
  bad.nx = 0;
  CHECK_THROWS_AS(generate_diffusion_matrix(bad), bcsr24::InvalidArgument);
  CHECK_THROWS_AS(coefficient_field_from_name("marble"), bcsr24::InvalidArgument);
  CHECK(coefficient_field_from_name("layers") == CoefficientField::layers);
}
