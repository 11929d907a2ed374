// The shared pieces of a soak case (soak_case.hpp).
#include "soak_case.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "device/plan_access.hpp"
#include "format/bcsr24_matrix.hpp"
#include "soak_matrices.hpp"

namespace bcsr24::soak {

std::uint64_t case_seed(std::uint64_t seed, std::int64_t index) {  // splitmix64 of the pair
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * std::uint64_t(index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double output_bound(double mode_bound, double want, bool fp16_output) {
  const double bound = mode_bound + std::fabs(want) * 0x1p-24 + 0x1p-126;
  return fp16_output ? bound + std::fabs(want) * 0x1p-11 + 0x1p-25 : bound;
}

OperatorOptions random_options(std::mt19937_64& rng) {
  OperatorOptions o;
  const Precision precisions[] = {Precision::fp16, Precision::fp16, Precision::bf16, Precision::split};
  o.precision = precisions[rng() % 4];
  const TileLayout layouts[] = {TileLayout::automatic, TileLayout::aligned, TileLayout::condensed};
  o.layout = layouts[rng() % 3];
  const Reordering orders[] = {Reordering::automatic, Reordering::none, Reordering::rcm};
  o.reorder = orders[rng() % 3];
  const ScalingPolicy scalings[] = {ScalingPolicy::per_row, ScalingPolicy::per_row, ScalingPolicy::automatic,
                                    ScalingPolicy::none};
  o.scaling = scalings[rng() % 4];
  o.threads = static_cast<int>(uniform(rng, 0, 4));
  return o;
}

/// B (cols x n, ld n): columns of different scales for fp32 B; 16-bit B in the matrix's 16-bit type, times
/// 2^-4 .. 2^4. b_exact holds the values the kernels are given, b32 them as floats, b16 the 16-bit bits.
void draw_b(std::mt19937_64& rng, std::int32_t cols, std::int32_t n, bool f32_b, Precision precision,
            std::vector<double>& b_exact, std::vector<float>& b32, std::vector<fp16_t>& b16) {
  b_exact.assign(std::size_t(cols) * std::size_t(n), 0.0);
  b32.assign(b_exact.size(), 0.0f);
  b16.assign(b_exact.size(), 0);
  std::vector<double> col_scale(static_cast<std::size_t>(n));
  for (double& s : col_scale) s = f32_b ? std::pow(10.0, uniform_real(rng, -6.0, 6.0)) : std::ldexp(1.0, int(uniform(rng, -4, 4)));
  for (std::int32_t k = 0; k < cols; ++k)
    for (std::int32_t j = 0; j < n; ++j) {
      const std::size_t at = std::size_t(k) * std::size_t(n) + std::size_t(j);
      const double v = uniform_real(rng, -1.0, 1.0) * col_scale[std::size_t(j)];
      if (f32_b) {
        b32[at] = float(v);
        b_exact[at] = b32[at];
      } else if (precision == Precision::bf16) {
        b16[at] = double_to_bf16(v);
        b_exact[at] = b32[at] = bf16_to_float(b16[at]);
      } else {
        b16[at] = double_to_fp16(v);
        b_exact[at] = b32[at] = fp16_to_float(b16[at]);
      }
    }
}

/// Each row's power of two (the matrix's and its own): what the bound's absolute terms are relative to.
std::vector<std::int32_t> row_exponents(const SparseOperator& op) {
  const Bcsr24Matrix& host = detail::OperatorAccess::host(op);
  std::vector<std::int32_t> e(static_cast<std::size_t>(op.rows()));
  for (std::int32_t i = 0; i < op.rows(); ++i) e[std::size_t(i)] = host.exponent_of_row(i);
  return e;
}

/// What the bound model sees of one output (the worst violation of a product), in units of fp32's 2^-23 times
/// sum_p |a_ip b_pj|: the accumulation term charges 2 k_i + kExtraTerms of them; the row's nonzeros, the 32-column
/// tiles they fall in, its largest product and the output's magnitude say which part of the arithmetic the error
/// outgrew.
std::string explain_output(const CsrMatrix& a, std::int32_t n, const std::vector<double>& b_exact, double alpha,
                           std::int32_t i, std::int64_t j, double error, double ratio) {
  double abs_sum = 0.0, max_product = 0.0, value = 0.0;
  std::vector<std::int32_t> tiles;
  for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
    const std::int32_t col = a.col_idx[std::size_t(p)];
    const double term = a.values[std::size_t(p)] * b_exact[std::size_t(col) * std::size_t(n) + std::size_t(j)];
    abs_sum += std::fabs(term);
    max_product = std::max(max_product, std::fabs(term));
    value += term;
    if (tiles.empty() || tiles.back() != col / 32) tiles.push_back(col / 32);
  }
  std::sort(tiles.begin(), tiles.end());
  tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
  const std::int32_t k_i = a.row_ptr[i + 1] - a.row_ptr[i];
  const double unit = std::fabs(alpha) * abs_sum * 0x1p-23;
  char text[320];
  std::snprintf(text, sizeof text,
                "worst: C(%d, %lld) |error| %.3g = %.3g bound, = %.3g x 2^-23 |alpha| sum|ab| (accumulation term "
                "charges %d); row: %d nonzeros in %zu tiles of 32 columns, max|ab| / sum|ab| %.3g, |sum ab| / "
                "sum|ab| %.3g",
                i, static_cast<long long>(j), error, ratio, unit > 0.0 ? error / unit : 0.0, 2 * k_i + kExtraTerms,
                k_i, tiles.size(), abs_sum > 0.0 ? max_product / abs_sum : 0.0,
                abs_sum > 0.0 ? std::fabs(value) / abs_sum : 0.0);
  return text;
}

}  // namespace bcsr24::soak
