// Eigen views of the tests' matrices. Kept out of test_support.hpp, which most test units include without using
// Eigen: <Eigen/Sparse> alone costs about 2 s of compile time per unit that includes it.
#pragma once

#include <Eigen/Sparse>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24::test {

/// Eigen view of a CSR matrix (double).
Eigen::SparseMatrix<double, Eigen::RowMajor> to_eigen(const CsrMatrix& a);

}  // namespace bcsr24::test
