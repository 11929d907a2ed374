// Error bounds of a product in each precision mode (docs/PRECISION.md derives them): what the GPU tests and the
// soak program (test/soak) accept as the difference between a kernel's C and the float64 product.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/precision.hpp"
#include "bcsr24/spmm_plan.hpp"

namespace bcsr24 {

/// The arithmetic of one mode, as error bounds:
///  - storing a (row exponent e): |stored - a| <= u_a |a| + s_a 2^e  (s_a: half the smallest subnormal step);
///  - staging b: |staged - b| <= u_b |b| + s_b max_k |b_kj|  (fp32 B converted per tile and column);
///  - split mode drops A_lo B_lo: <= dropped |a| |b|;
///  - fp32 accumulation (tensor cores may truncate: 2^-23 per addition) over the row's terms, per-tile rescales
///    and the block reduction. The tensor cores align an fp16 subnormal operand as if it had fp16's smallest normal
///    exponent (apps/research/probe_mma_subnormal measured it; docs/PRECISION.md), so the accumulation term charges
///    such an operand as if it were min_normal_a 2^e (A, in its row's scale) or min_normal_b (16-bit B) in size.
struct ModeArithmetic {
  double u_a = 0.0, s_a = 0.0, u_b = 0.0, s_b = 0.0, dropped = 0.0;
  double min_normal_a = 0.0, min_normal_b = 0.0;  ///< 0: the operand's subnormals need no such charge
};

/// The terms of `precision` with B given as `input` (16-bit B is exact: u_b = s_b = 0).
ModeArithmetic mode_arithmetic(Precision precision, ElementType input);

/// The same against the matrix as stored (SparseOperator::stored_csr, reference_spmm): storing A costs nothing
/// more (u_a = 0, and s_a = 0 but for split mode's A_lo B_lo, which a subnormal or zero high part leaves at
/// 2^-36 2^e |b|: pass the rows' exponents); staging B, the dropped split term and the accumulation remain.
ModeArithmetic stored_matrix_arithmetic(Precision precision, ElementType input);

/// The float64 value of alpha * A * B + beta * C0 for every output (rows x n, leading dimension n) and the bound
/// of `m` on a kernel's difference from it: row i stored with exponent row_exponent[i] (empty: 0 for every row),
/// fp32 accumulation over 2 k_i + extra_terms additions (k_i: the row's entries; extra: per-tile rescales, block
/// and part sums), and the final fp32 rounding. The bound does not include the rounding of an fp16 output.
struct ProductBound {
  std::vector<double> want, bound;
};
ProductBound product_bound(const CsrMatrix& a, std::int32_t n, const std::vector<double>& b_exact,
                           const std::vector<float>& c0, double alpha, double beta,
                           const std::vector<std::int32_t>& row_exponent, const ModeArithmetic& m, int extra_terms);

struct ModeCheck {
  std::int64_t checked = 0, violations = 0;
  double max_ratio = 0.0;    ///< max |error| / bound
  double rel_error = 0.0;    ///< normwise, against the float64 value
  double output_norm = 0.0;  ///< ||C||_F: a product writing nothing cannot pass
};
/// Compares c (a.rows x n, ld n) element by element with product_bound's value under its bound (the float64
/// alpha * A * B + beta * C0 of the original A and the B the kernel was given exactly, b_exact, a.cols x n).
/// Non-finite outputs are violations.
ModeCheck check_mode_product(const CsrMatrix& a, std::int32_t n, const std::vector<double>& b_exact,
                             const std::vector<float>& c0, double alpha, double beta, const std::vector<float>& c,
                             const std::vector<std::int32_t>& row_exponent, const ModeArithmetic& m,
                             int extra_terms);

}  // namespace bcsr24
