// --emulate of bcsr24_soak: a case's matrix through the CPU emulation of the tile kernel (tile_emulation.hpp)
// instead of the GPU, against the same reference and bounds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "bcsr24_testkit/product_bounds.hpp"
#include "device/plan_access.hpp"
#include "format/bcsr24_matrix.hpp"
#include "soak_case.hpp"
#include "soak_matrices.hpp"
#include "tile_emulation.hpp"

namespace bcsr24::soak {

/// --emulate: the case's matrix and options, then instead of GPU products the tile kernel's arithmetic emulated on
/// the CPU (tile_emulation.hpp) for B of the soak's kinds at n = 36, against the same reference and bound. Prints one
/// line per B kind; a product outside its bound here is the algorithm's, not the GPU's.
void emulate_case(std::uint64_t seed, std::int32_t max_rows, std::int64_t index, Tally& tally,
                  std::vector<Failure>& failures) {
  std::mt19937_64 rng(seed);
  const soak::RandomMatrix m = soak::random_matrix(rng, max_rows);
  const OperatorOptions options = random_options(rng);
  if (options.precision == Precision::bf16) return;
  std::optional<SparseOperator> op;
  try {
    op.emplace(SparseOperator::from_csr(m.a, options));
  } catch (const RangeError&) {
    return;
  }
  ++tally.cases;
  const CsrMatrix stored = op->stored_csr();
  const Bcsr24Matrix& host = detail::OperatorAccess::host(*op);
  const std::vector<std::int32_t> exponents = row_exponents(*op);
  const std::int32_t rows = op->rows(), cols = op->cols(), n = 36;
  for (const bool f32_b : {true, false}) {
    if (!f32_b && op->precision() == Precision::split) continue;  // split takes fp32 B only
    std::vector<double> b_exact;
    std::vector<float> b32;
    std::vector<fp16_t> b16;
    draw_b(rng, cols, n, f32_b, op->precision(), b_exact, b32, b16);
    const float alpha = 1.0f;
    const std::vector<float> got = soak::emulate_tile_product(host, n, f32_b, b32, b16, alpha);
    const ElementType input = f32_b ? ElementType::f32 : ElementType::f16;
    const ProductBound pb = product_bound(stored, n, b_exact, {}, alpha, 0.0, exponents,
                                          stored_matrix_arithmetic(op->precision(), input), kExtraTerms);
    std::int64_t bad = 0;
    double worst = 0.0, worst_error = 0.0;
    std::int32_t wi = -1;
    std::int64_t wj = -1;
    for (std::int32_t i = 0; i < rows; ++i)
      for (std::int32_t j = 0; j < n; ++j) {
        const std::size_t at = std::size_t(i) * std::size_t(n) + std::size_t(j);
        const double want = double(float(pb.want[at]));  // the reference as the soak has it: rounded to float
        const double bound = output_bound(pb.bound[at], want, false);
        const double error = std::fabs(double(got[at]) - want);
        tally.outputs++;
        if (error > bound) ++bad;
        if (error / bound > worst) worst = error / bound, worst_error = error, wi = i, wj = j;
      }
    tally.max_ratio = std::max(tally.max_ratio, worst);
    const std::string what = "case " + std::to_string(index) + ": " + m.name + " (values " + m.values + "); " +
                             precision_name(options.precision) + ", layout " + layout_name(options.layout) +
                             ", scaling " + scaling_policy_name(options.scaling) + ", B " +
                             (f32_b ? "fp32" : "fp16") + ", n 36 (CPU emulation of the tile kernel)";
    std::printf("%s: %lld outputs outside the bound, largest |error| / bound %.3g\n", what.c_str(),
                static_cast<long long>(bad), worst);
    if (bad > 0) {
      failures.push_back({what + ": " + std::to_string(bad) + " outputs outside the bound; " +
                          explain_output(stored, n, b_exact, alpha, wi, wj, worst_error, worst)});
    }
  }
}

}  // namespace bcsr24::soak
