// The matrix the block solver's preconditioner and spectrum estimate multiply by (the inner operator): the
// Jacobi-scaled A stored by bcsr24 (or as fp32 CSR for the cuSPARSE comparison), and the diagonal scalings shared by
// the CPU and GPU solver spaces.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/sparse_operator.hpp"

namespace bcsr24 {
class DistributedOperator;  // bcsr24/distributed_operator.hpp (NCCL builds)
}

namespace bcsr24::solver {

/// The product used inside the inner solve.
enum class InnerBackend {
  bcsr24,           ///< bcsr24 SpmmPlan: fp16 A (library scaling), P converted to fp16, fp32 accumulate/output
  cusparse_csr_f32,  ///< cuSPARSE CSR SpMM in fp32 (the CPU space uses an Eigen fp32 product instead)
  none               ///< no inner product: the block solver runs without the polynomial (Jacobi or no preconditioner)
};
const char* inner_backend_name(InnerBackend backend) noexcept;
/// @throw InvalidArgument for an unknown name.
InnerBackend inner_backend_from_name(const std::string& name);

/// s_i = 1 / sqrt(a_ii): S A S has a unit diagonal.
/// @throw InvalidArgument naming the first row whose diagonal is missing or not positive.
std::vector<double> jacobi_scale(const CsrMatrix& a);
/// 1 / a_ii. `a` may hold rows first_row .. first_row + a.rows - 1 of a larger matrix (global columns): one rank's
/// share. @throw InvalidArgument as jacobi_scale.
std::vector<double> inverse_diagonal(const CsrMatrix& a, std::int32_t first_row = 0);
/// 1 / a_ii where a_ii > 0, else 0: the spaces' Jacobi step, which leaves rows of a non-positive diagonal alone
/// (the eigensolver takes matrices that are not positive definite; the linear solvers never reach the spaces with
/// one).
std::vector<double> inverse_positive_diagonal(const CsrMatrix& a);
/// diag(s) A diag(s).
CsrMatrix scale_symmetric(const CsrMatrix& a, const std::vector<double>& s);

/// The matrix of the inner solve, ready for either product.
struct InnerMatrix {
  InnerBackend backend = InnerBackend::bcsr24;
  /// s with the inner solve working on diag(s) A diag(s) (--inner-scaling jacobi); empty = A itself. On several
  /// GPUs, this rank's rows of s.
  std::vector<double> row_scale;
  /// bcsr24: the preprocessed operator (census and fp16 scaling decided by the library).
  std::shared_ptr<const SparseOperator> op;
  /// bcsr24 on several GPUs (instead of op): this rank's share of the operator.
  std::shared_ptr<const DistributedOperator> distributed;
  /// cusparse_csr_f32: the (scaled) matrix, or on several GPUs this rank's rows of it with global columns; the
  /// space rounds its values to fp32.
  CsrMatrix csr;
  double preprocess_seconds = 0.0;  ///< host time of the scaling and (for bcsr24) the BCSR-2:4 conversion
};

/// @throw InvalidArgument (jacobi_scaling with a non-positive diagonal); the conversion's exceptions.
InnerMatrix prepare_inner_matrix(const CsrMatrix& a, InnerBackend backend, bool jacobi_scaling,
                                 const OperatorOptions& options = {});

}  // namespace bcsr24::solver
