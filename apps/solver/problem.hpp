// The system to solve (matrix, k right-hand sides, known solution) and the choices shared by the CPU and GPU
// solver spaces: which product the inner solve uses and how P is scaled into fp16.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "inner_matrix.hpp"

namespace bcsr24::solver {

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
