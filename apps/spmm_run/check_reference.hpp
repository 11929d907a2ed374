// spmm_run's fp64 reference on the checked rows of C, the fp16-derived error figures a correct kernel meets, and
// the relative error of a product against them. Computed from those rows of A and the rows of B they touch:
// neither B nor C is ever held in fp64, so the check's memory depends on the rows checked, not on the matrix.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "check_rows.hpp"

namespace bcsr24::spmm_run {

/// What fp16 arithmetic lets a correct kernel's relative Frobenius error be.
struct ErrorExpectation {
  double typical = 0.0;  ///< RMS estimate from independent roundings: where correct kernels land
  double bound = 0.0;    ///< worst case: a correct kernel never exceeds it
};

/// The product the check compares with: C = alpha * A * B + beta * C0, B and C0 the fp16 values the kernels get.
struct CheckProduct {
  std::int32_t n = 0;
  const fp16_t* b = nullptr;   ///< cols(A) x n, row-major
  const fp16_t* c0 = nullptr;  ///< rows(A) x n, row-major; read only when beta != 0
  double alpha = 1.0, beta = 0.0;
};

struct Reference {
  CheckRows checked;       ///< the rows compared and how they were drawn
  std::int32_t n = 0;
  std::vector<double> c;   ///< alpha * A * B + beta * C0 in fp64 on the checked rows: checked.rows.size() x n
  double norm = 0.0;       ///< ||c||_F
  ErrorExpectation f32_output, f16_output;
  double seconds = 0.0;
  std::int64_t host_bytes = 0;           ///< what the check allocates, counted (check_host_bytes)
  double peak_rss_growth_bytes = -1.0;   ///< peak resident growth while it was computed; -1 where not measurable

  const ErrorExpectation& expectation(bool fp16_output) const { return fp16_output ? f16_output : f32_output; }
};

/// Chooses the rows (choose_check_rows with `uniform_rows` and `seed`) and computes the reference on them,
/// measuring the peak resident growth while it runs.
/// @param original the matrix as read or generated (its rows are the reference; each entry's storage error is
///        the difference to the operator's stored value), or null for a .b24 input: the reference is then the
///        stored matrix itself and only the kernels' arithmetic is checked
Reference compute_reference(const SparseOperator& op, const CsrMatrix* original, const CheckProduct& product,
                            std::int32_t uniform_rows, std::uint64_t seed, bool show_progress);

/// ||C - Cref||_F / ||Cref||_F over the checked rows (an absolute norm when Cref is zero); NaN anywhere in them
/// gives NaN. value_at(k, j) reads column j of the k-th checked row of C.
template <typename ValueAt>
double relative_error(const Reference& reference, ValueAt value_at) {
  double diff_sq = 0.0;
  const std::size_t n = static_cast<std::size_t>(reference.n);
  for (std::size_t k = 0; k < reference.checked.rows.size(); ++k)
    for (std::size_t j = 0; j < n; ++j) {
      const double diff = value_at(k, j) - reference.c[k * n + j];
      diff_sq += diff * diff;
    }
  return std::sqrt(diff_sq) / (reference.norm > 0.0 ? reference.norm : 1.0);
}

}  // namespace bcsr24::spmm_run
