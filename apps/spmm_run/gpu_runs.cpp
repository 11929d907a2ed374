// spmm_run's GPU path (runs.hpp): the kernels through SparseOperator::make_plan, timed and checked.
#include <algorithm>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>

#include <cuda_runtime_api.h>

#include "cuda_resources.hpp"
#include "gpu_timing.hpp"
#include "report.hpp"
#include "runs.hpp"

namespace bcsr24::spmm_run {

namespace {

using bench::CudaStream;
using bench::DeviceBuffer;
#define SPMM_RUN_CUDA(call) bcsr24::bench::check_cuda((call), #call, __FILE__, __LINE__)

/// Values widened per copy to the device when B goes as fp32: the fp32 copy of B never exists whole on the host.
constexpr std::size_t kWidenChunk = std::size_t{1} << 22;

/// B on the device in the type the plans take: fp16 for fp16 matrices, the same values widened to fp32 for bf16
/// and split ones (the kernels convert them while staging).
DeviceBuffer upload_b(const std::vector<fp16_t>& b, bool f32_b) {
  DeviceBuffer device(b.size() * (f32_b ? sizeof(float) : sizeof(fp16_t)));
  if (!f32_b) {
    SPMM_RUN_CUDA(cudaMemcpy(device.get(), b.data(), device.bytes(), cudaMemcpyHostToDevice));
    return device;
  }
  std::vector<float> widened(std::min(b.size(), kWidenChunk));
  for (std::size_t first = 0; first < b.size(); first += kWidenChunk) {
    const std::size_t count = std::min(kWidenChunk, b.size() - first);
    for (std::size_t i = 0; i < count; ++i) widened[i] = fp16_to_float(b[first + i]);
    SPMM_RUN_CUDA(cudaMemcpy(static_cast<float*>(device.get()) + first, widened.data(), count * sizeof(float),
                             cudaMemcpyHostToDevice));
  }
  return device;
}

/// Copies the checked rows of the device C (rows x n, `element` bytes each) into `out` (checked rows x n), one copy
/// per run of consecutive rows.
void fetch_checked_rows(const Reference& reference, const void* c, std::size_t element, std::vector<unsigned char>& out,
                        cudaStream_t stream) {
  const std::vector<std::int32_t>& rows = reference.checked.rows;
  const std::size_t row_bytes = static_cast<std::size_t>(reference.n) * element;
  out.resize(rows.size() * row_bytes);
  for (std::size_t k = 0; k < rows.size();) {
    std::size_t end = k + 1;
    while (end < rows.size() && rows[end] == rows[end - 1] + 1) ++end;
    SPMM_RUN_CUDA(cudaMemcpyAsync(out.data() + k * row_bytes,
                                  static_cast<const unsigned char*>(c) + std::size_t(rows[k]) * row_bytes,
                                  (end - k) * row_bytes, cudaMemcpyDeviceToHost, stream));
    k = end;
  }
  SPMM_RUN_CUDA(cudaStreamSynchronize(stream));
}

}  // namespace

std::vector<json> run_gpu_kernels(const Options& options, const SparseOperator& op, const KernelChoice& kernels,
                                  const MultiplyInputs& inputs, const Reference* reference, const DeviceInfo& device) {
  const std::int32_t n = inputs.n;
  const bool fp16_out = options.fp16_out;
  const std::size_t c_element = fp16_out ? 2 : 4;
  const std::size_t c_count = static_cast<std::size_t>(op.rows()) * n;
  const SpmmCost cost = spmm_cost(op.census(), op.rows(), op.cols(), n, int(c_element), options.beta != 0.0);
  const bool f32_b = op.precision() != Precision::fp16;

  const DeviceBuffer b_device = upload_b(inputs.b, f32_b);
  DeviceBuffer c_device(c_count * c_element);
  // C0 in the output type: the same fp16-representable values the reference used.
  std::vector<unsigned char> c0_bytes;
  if (options.beta != 0.0) {
    c0_bytes.resize(c_count * c_element);
    if (fp16_out) {
      std::memcpy(c0_bytes.data(), inputs.c0.data(), c0_bytes.size());
    } else {
      auto* c0_float = reinterpret_cast<float*>(c0_bytes.data());
      for (std::size_t i = 0; i < c_count; ++i) c0_float[i] = fp16_to_float(inputs.c0[i]);
    }
  }
  std::optional<bench::L2Flush> l2_flush;
  if (options.flush_l2 && device.l2_bytes > 0) l2_flush.emplace(static_cast<std::size_t>(device.l2_bytes) * 2);

  const CudaStream stream;
  PlanOptions plan_options;
  plan_options.output = fp16_out ? ElementType::f16 : ElementType::f32;
  plan_options.input = f32_b ? ElementType::f32 : ElementType::f16;
  options.tuning.apply(plan_options);
  const float alpha = float(options.alpha), beta = float(options.beta);
  auto multiply = [&](const SpmmPlan& plan, cudaStream_t s) {
    if (f32_b)
      plan.run(static_cast<const float*>(b_device.get()), n, static_cast<float*>(c_device.get()), n, alpha, beta, s);
    else
      plan.run(static_cast<const fp16_t*>(b_device.get()), n, c_device.get(), n, alpha, beta, s);
  };
  auto reset_c = [&] {
    if (options.beta == 0.0)
      SPMM_RUN_CUDA(cudaMemsetAsync(c_device.get(), 0xFF, c_device.bytes(), stream.get()));  // NaN in f32 and f16
    else
      SPMM_RUN_CUDA(cudaMemcpyAsync(c_device.get(), c0_bytes.data(), c0_bytes.size(), cudaMemcpyHostToDevice,
                                    stream.get()));
  };
  std::vector<unsigned char> checked_c;

  // Every plan is made and checked first, then all are timed together (bench::time_gpu_runs_both_orders): timed
  // one after the other, a kernel's figure depended on its place in the list (gpu_timing.hpp says why).
  std::vector<SpmmPlan> plans;
  std::vector<std::optional<double>> rel_errors;
  plans.reserve(kernels.applicable.size());
  for (const KernelKind kind : kernels.applicable) {
    // The first plan uploads the operator (on the legacy default stream), and a dense or CSR kernel's first plan
    // adds its lists: wait for that before our stream, which does not synchronise with the default one, runs.
    plans.push_back(op.make_plan(n, kind, plan_options));
    const SpmmPlan& plan = plans.back();
    SPMM_RUN_CUDA(cudaDeviceSynchronize());

    std::optional<double> rel_error;
    if (reference) {
      reset_c();
      multiply(plan, stream.get());
      fetch_checked_rows(*reference, c_device.get(), c_element, checked_c, stream.get());
      const std::size_t n_columns = static_cast<std::size_t>(n);
      if (fp16_out) {
        const auto* c = reinterpret_cast<const fp16_t*>(checked_c.data());
        rel_error = relative_error(*reference, [&](std::size_t k, std::size_t j) {
          return double(fp16_to_float(c[k * n_columns + j]));
        });
      } else {
        const auto* c = reinterpret_cast<const float*>(checked_c.data());
        rel_error = relative_error(*reference, [&](std::size_t k, std::size_t j) { return double(c[k * n_columns + j]); });
      }
    }
    rel_errors.push_back(rel_error);
  }

  // Timed runs use C as it stands: with beta != 0 it accumulates, which changes values, not the work done.
  reset_c();
  std::vector<std::function<void(cudaStream_t)>> runs;
  for (const SpmmPlan& plan : plans) runs.emplace_back([&multiply, &plan](cudaStream_t s) { multiply(plan, s); });
  const std::vector<std::vector<double>> milliseconds = bench::time_gpu_runs_both_orders(
      runs, options.warmup, options.reps, l2_flush ? &*l2_flush : nullptr, stream.get());

  std::vector<json> results;
  for (std::size_t k = 0; k < plans.size(); ++k) {
    results.push_back(result_json(kernel_name(kernels.applicable[k]), "gpu", bench::summarize(milliseconds[k]), cost,
                                  true, rel_errors[k], reference ? &reference->expectation(fp16_out) : nullptr));
    add_plan_traffic(results.back(),
                     plan_dram_bytes(plans[k].report(), op.rows(), op.cols(), int(c_element), options.beta != 0.0),
                     bench::copy_bandwidth().bytes_per_s);
    results.back()["plan"] = reports::plan_json(plans[k].report());
    if (!options.json_output) print_result(results.back());
  }
  if (!options.json_output)
    for (const json& result : results)
      if (result["kernel"] == "auto") {
        std::cout << "\n";
        print_plan("auto", result["plan"]);
      }
  return results;
}

}  // namespace bcsr24::spmm_run
