// spmm_run's CPU path and inputs (runs.hpp).
#include <limits>

#include "bcsr24/reference.hpp"
#include "random_fill.hpp"
#include "report.hpp"
#include "runs.hpp"

namespace bcsr24::spmm_run {

MultiplyInputs make_inputs(const Options& options, std::int32_t rows, std::int32_t cols) {
  MultiplyInputs inputs;
  inputs.n = options.n();
  inputs.b = apps::random_fp16(std::int64_t(cols) * inputs.n, options.seed());
  if (options.beta != 0.0)
    inputs.c0 = apps::random_fp16(std::int64_t(rows) * inputs.n, options.seed() ^ 0xC0C0C0C0C0C0C0C0ull);
  return inputs;
}

json run_cpu_reference(const Options& options, const SparseOperator& op, const MultiplyInputs& inputs,
                       const Reference* reference, bool show_progress) {
  const std::int32_t n = inputs.n;
  const std::size_t c_count = static_cast<std::size_t>(op.rows()) * n;
  const SpmmCost cost = spmm_cost(op.census(), op.rows(), op.cols(), n, 4, options.beta != 0.0);
  std::vector<float> c(c_count);
  auto reset_c = [&] {
    if (options.beta == 0.0)
      std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN());
    else
      for (std::size_t i = 0; i < c_count; ++i) c[i] = fp16_to_float(inputs.c0[i]);
  };

  // B's values are fp16 numbers; a bf16 or split operator takes them as fp32 (widened exactly), as the GPU runs do.
  std::vector<float> b_f32;
  if (op.precision() != Precision::fp16) {
    b_f32.resize(inputs.b.size());
    for (std::size_t i = 0; i < b_f32.size(); ++i) b_f32[i] = fp16_to_float(inputs.b[i]);
  }
  std::vector<double> milliseconds;
  std::optional<double> rel_error;
  for (int rep = 0; rep < options.cpu_reps; ++rep) {
    reset_c();
    bench::ProgressLine progress(show_progress, "CPU reference_spmm run " + std::to_string(rep + 1));
    bench::Stopwatch watch;
    if (b_f32.empty())
      reference_spmm(op, n, inputs.b.data(), n, c.data(), n, options.alpha, options.beta);
    else
      reference_spmm(op, n, b_f32.data(), n, c.data(), n, options.alpha, options.beta);
    milliseconds.push_back(watch.seconds() * 1e3);
    progress.done(watch.seconds());
    if (rep == 0 && reference) {
      const std::vector<std::int32_t>& rows = reference->checked.rows;
      const std::size_t width = static_cast<std::size_t>(n);
      rel_error = relative_error(*reference, [&](std::size_t k, std::size_t j) {
        return double(c[static_cast<std::size_t>(rows[k]) * width + j]);
      });
    }
  }
  // reference_spmm writes float C, so the fp32-output expectation applies.
  json result = result_json("cpu_reference", "cpu", bench::summarize(milliseconds), cost, false, rel_error,
                            reference ? &reference->expectation(false) : nullptr);
  if (!options.json_output) print_result(result);
  return result;
}

}  // namespace bcsr24::spmm_run
