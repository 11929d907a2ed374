// The system to solve (matrix, k right-hand sides, known solution) and the choices shared by the CPU and GPU
// solver spaces: which product the inner solve uses and how P is scaled into fp16.
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
  cusparse_csr_f32  ///< cuSPARSE CSR SpMM in fp32 (the CPU space uses an Eigen fp32 product instead)
};
const char* inner_backend_name(InnerBackend backend) noexcept;
/// @throw InvalidArgument for an unknown name.
InnerBackend inner_backend_from_name(const std::string& name);

enum class RhsKind {
  a_times_random,  ///< b = A x_true with x_true uniform in [-1, 1): the error x - x_true can be reported
  random           ///< b uniform in [-1, 1)
};
/// @throw InvalidArgument for an unknown name.
RhsKind rhs_kind_from_name(const std::string& name);

struct Problem {
  std::string name;
  CsrMatrix a;
  int k = 0;                    ///< right-hand sides
  std::vector<double> b;        ///< n x k, row-major
  std::vector<double> x_true;   ///< n x k, row-major; empty when unknown
};

/// @throw InvalidArgument for k < 1 or a non-square matrix.
Problem make_problem(std::string name, CsrMatrix a, int k, RhsKind rhs, std::uint64_t seed);

/// s_i = 1 / sqrt(a_ii): S A S has a unit diagonal.
/// @throw InvalidArgument naming the first row whose diagonal is missing or not positive.
std::vector<double> jacobi_scale(const CsrMatrix& a);
/// 1 / a_ii. `a` may hold rows first_row .. first_row + a.rows - 1 of a larger matrix (global columns): one rank's
/// share. @throw InvalidArgument as jacobi_scale.
std::vector<double> inverse_diagonal(const CsrMatrix& a, std::int32_t first_row = 0);
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

/// max_j |b_j - A x_j| / |b_j| in fp64 on the host (x, b row-major n x k): the check the reports trust.
double max_relative_residual_host(const CsrMatrix& a, const std::vector<double>& x, const std::vector<double>& b, int k);
/// max_j |x_j - x_true_j| / |x_true_j|.
double max_relative_error(const std::vector<double>& x, const std::vector<double>& x_true, int k);

/// The host's own fp64 check of a solution a solver returned: what every run reports beside the solver's figures.
struct HostCheck {
  double residual = 0.0;  ///< max_relative_residual_host
  double error = -1.0;    ///< max_relative_error against the known solution; -1 when the problem has none
};
HostCheck check_on_host(const Problem& problem, const std::vector<double>& x);

}  // namespace bcsr24::solver
