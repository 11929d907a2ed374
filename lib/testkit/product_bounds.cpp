// Error bounds of a product in each precision mode (product_bounds.hpp).
#include "bcsr24_testkit/product_bounds.hpp"

#include <algorithm>
#include <cmath>

namespace bcsr24 {

ModeArithmetic mode_arithmetic(Precision precision, ElementType input) {
  ModeArithmetic m{};
  switch (precision) {
    case Precision::fp16: m.u_a = std::ldexp(1.0, -11); m.s_a = std::ldexp(1.0, -25); break;
    case Precision::bf16: m.u_a = std::ldexp(1.0, -8); m.s_a = std::ldexp(1.0, -134); break;
    // split: hi's residual is kept to 11 more bits (2^-22); a subnormal low part errs by 2^-25 * 2^-11, and the
    // dropped A_lo B_lo term can add as much again when the high part is subnormal (hence 2^-35).
    case Precision::split: m.u_a = std::ldexp(1.0, -22); m.s_a = std::ldexp(1.0, -35); m.dropped = std::ldexp(1.0, -22); break;
  }
  // A is stored in fp16 (split: its high part) in its row's scale 2^e, so fp16's smallest normal is 2^-14 2^e there.
  // The A_lo products of split mode are scaled down by 2^-11 after the tensor cores add them, so their own
  // subnormals add at most gamma 2^-25 2^e |b|, far inside s_a.
  if (precision != Precision::bf16) m.min_normal_a = std::ldexp(1.0, -14);
  // 16-bit B goes to the tensor cores as given. fp32 B is staged to fp16 with its block's largest magnitude in
  // [2^14, 2^15): a staged subnormal's charge, gamma 2^-29 of the column's largest, is far inside s_b.
  if (input == ElementType::f16) m.min_normal_b = std::ldexp(1.0, -14);
  if (input == ElementType::f32) {
    // fp16 staging: the block's largest magnitude sits in [2^14, 2^15), so a value's subnormal error is at most
    // 2^-25 * 2^(e_block) <= 2^-39 of the column's largest; bf16 keeps fp32's exponent range.
    switch (precision) {
      case Precision::fp16: m.u_b = std::ldexp(1.0, -11); m.s_b = std::ldexp(1.0, -39); break;
      case Precision::bf16: m.u_b = std::ldexp(1.0, -8); m.s_b = 0.0; break;
      case Precision::split: m.u_b = std::ldexp(1.0, -22); m.s_b = std::ldexp(1.0, -50); break;
    }
  }
  return m;
}

ModeArithmetic stored_matrix_arithmetic(Precision precision, ElementType input) {
  ModeArithmetic m = mode_arithmetic(precision, input);
  m.u_a = 0.0;
  // Storing costs nothing more against the stored matrix, but split mode's products still drop A_lo B_lo: where the
  // high part is subnormal or zero, 2^-11 |A_lo| is the element's whole distance from hi (at most half a subnormal
  // step, 2^-25) and the dropped term reaches 2^-25 2^-11 |b| per element: an absolute term of the row's scale,
  // half of mode_arithmetic's s_a (whose other half is storing's own rounding).
  m.s_a = precision == Precision::split ? std::ldexp(1.0, -36) : 0.0;
  return m;
}

ProductBound product_bound(const CsrMatrix& a, std::int32_t n, const std::vector<double>& b_exact,
                           const std::vector<float>& c0, double alpha, double beta,
                           const std::vector<std::int32_t>& row_exponent, const ModeArithmetic& m, int extra_terms) {
  const double u32 = std::ldexp(1.0, -23);
  std::vector<double> col_max(static_cast<std::size_t>(n), 0.0);
  for (std::int32_t k = 0; k < a.cols; ++k)
    for (std::int32_t j = 0; j < n; ++j)
      col_max[std::size_t(j)] = std::max(col_max[std::size_t(j)], std::fabs(b_exact[std::size_t(k) * n + j]));
  ProductBound out;
  out.want.resize(std::size_t(a.rows) * std::size_t(n));
  out.bound.resize(out.want.size());
  for (std::int32_t i = 0; i < a.rows; ++i) {
    const int e = row_exponent.empty() ? 0 : row_exponent[std::size_t(i)];
    const double row_step = m.s_a == 0.0 ? 0.0 : std::ldexp(m.s_a, e);
    const std::int32_t k_i = a.row_ptr[i + 1] - a.row_ptr[i];
    const double terms = 2.0 * k_i + extra_terms;
    const double gamma = terms * u32 / (1.0 - terms * u32);
    const double a_floor = std::ldexp(m.min_normal_a, e);
    // The size the accumulation sees: a nonzero operand below the floor counts as the floor (see ModeArithmetic).
    auto aligned = [](double v, double floor) { return v == 0.0 ? 0.0 : std::max(std::fabs(v), floor); };
    for (std::int32_t j = 0; j < n; ++j) {
      double ref = 0.0, abs_sum = 0.0, aligned_sum = 0.0, abs_b = 0.0, abs_a = 0.0;
      for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const double av = a.values[std::size_t(p)], bv = b_exact[std::size_t(a.col_idx[std::size_t(p)]) * n + j];
        ref += av * bv;
        abs_sum += std::fabs(av * bv);
        aligned_sum += aligned(av, a_floor) * aligned(bv, m.min_normal_b);
        abs_b += std::fabs(bv);
        abs_a += std::fabs(av);
      }
      const double product_error = abs_sum * (m.u_a + m.u_b + m.u_a * m.u_b + m.dropped) + aligned_sum * gamma +
                                   abs_b * row_step + abs_a * (1.0 + m.u_a) * m.s_b * col_max[std::size_t(j)];
      const double c_old = beta == 0.0 ? 0.0 : c0[std::size_t(i) * n + j];
      const double want = alpha * ref + beta * c_old;
      const std::size_t at = std::size_t(i) * n + j;
      out.want[at] = want;
      out.bound[at] = std::fabs(alpha) * product_error + std::fabs(beta * c_old) * 2 * u32 + std::fabs(want) * u32 + 1e-300;
    }
  }
  return out;
}

ModeCheck check_mode_product(const CsrMatrix& a, std::int32_t n, const std::vector<double>& b_exact,
                             const std::vector<float>& c0, double alpha, double beta, const std::vector<float>& c,
                             const std::vector<std::int32_t>& row_exponent, const ModeArithmetic& m,
                             int extra_terms) {
  const ProductBound pb = product_bound(a, n, b_exact, c0, alpha, beta, row_exponent, m, extra_terms);
  ModeCheck r;
  double err2 = 0.0, ref2 = 0.0;
  for (std::size_t at = 0; at < pb.want.size(); ++at) {
    const double got = c[at], want = pb.want[at];
    ++r.checked;
    const double e = std::fabs(got - want);
    if (!std::isfinite(got) || e > pb.bound[at]) ++r.violations;
    r.max_ratio = std::max(r.max_ratio, e / pb.bound[at]);
    err2 += e * e;
    ref2 += want * want;
    r.output_norm += got * got;
  }
  r.rel_error = std::sqrt(err2 / std::max(ref2, 1e-300));
  r.output_norm = std::sqrt(r.output_norm);
  return r;
}

}  // namespace bcsr24
