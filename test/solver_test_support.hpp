// What the solver's CPU tests share (test_solver*.cpp): a small matrix as a dense Eigen matrix, the small diffusion
// problems, the inner matrix of a backend, and the spectrum of the Jacobi-scaled matrix that the preconditioner's bounds must contain.
#pragma once

#include <cstdint>
#include <vector>

#include <Eigen/Dense>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24_testkit/diffusion.hpp"
#include "problem.hpp"
#include "test_eigen.hpp"
#include "test_support.hpp"

namespace bcsr24::solver {
// The diffusion generator lives in the testkit (bcsr24_testkit/diffusion.hpp); the tests name it as before.
using bcsr24::CoefficientField;
using bcsr24::DiffusionSpec;
using bcsr24::coefficient_field_from_name;
using bcsr24::coefficient_field_name;
using bcsr24::diffusion_coefficients;
using bcsr24::diffusion_name;
using bcsr24::generate_diffusion_matrix;
}  // namespace bcsr24::solver

namespace bcsr24::solver::test {

inline Eigen::MatrixXd dense(const CsrMatrix& a) { return Eigen::MatrixXd(bcsr24::test::to_eigen(a)); }

/// An n^3 diffusion problem of the field, with inclusions, correlation and layers scaled to the small grid.
inline DiffusionSpec small_diffusion(CoefficientField field, std::int32_t n, std::uint64_t seed = 1) {
  DiffusionSpec spec;
  spec.nx = spec.ny = spec.nz = n;
  spec.field = field;
  spec.seed = seed;
  spec.inclusion_size = 3;
  spec.correlation = 2;
  if (field == CoefficientField::layers) {
    spec.contrast = 1e4;
    spec.layer_thickness = 1;
    spec.anisotropy = {1.0, 1.0, 1e-4};
  }
  return spec;
}

/// Eigenvalues of diag(s) A diag(s) (dense; small matrices only).
inline Eigen::VectorXd scaled_spectrum(const CsrMatrix& a) {
  const std::vector<double> s = jacobi_scale(a);
  const Eigen::MatrixXd scaled = dense(scale_symmetric(a, s));
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(scaled, Eigen::EigenvaluesOnly).eigenvalues();
}

/// The inner matrix (Jacobi-scaled A) for a backend and precision.
inline InnerMatrix make_inner(const CsrMatrix& a, InnerBackend backend, bcsr24::Precision precision) {
  bcsr24::OperatorOptions options;
  options.precision = precision;
  return prepare_inner_matrix(a, backend, true, options);
}

}  // namespace bcsr24::solver::test
