// spmm_run's products: the GPU kernels (timed by CUDA events, checked once each) or, without a usable GPU, the
// CPU reference path.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/device.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "check_reference.hpp"
#include "kernel_choice.hpp"
#include "load.hpp"

namespace bcsr24::spmm_run {

/// B and C0 as the kernels get them: random fp16 values in [-1, 1) from --seed.
struct MultiplyInputs {
  std::int32_t n = 0;
  std::vector<fp16_t> b;   ///< cols x n
  std::vector<fp16_t> c0;  ///< rows x n, only when beta != 0
};
/// The same seeds as every earlier spmm_run: B from --seed, C0 from --seed with a constant mixed in.
MultiplyInputs make_inputs(const Options& options, std::int32_t rows, std::int32_t cols);

/// Runs each applicable kernel: one checked run from a known C (NaN-poisoned when beta == 0, so unwritten
/// outputs show), then --warmup untimed and --reps timed runs, each between two CUDA events. Returns the
/// results (printed too unless --json).
std::vector<json> run_gpu_kernels(const Options& options, const SparseOperator& op, const KernelChoice& kernels,
                                  const MultiplyInputs& inputs, const Reference* reference, const DeviceInfo& device);

/// bcsr24::reference_spmm on the host format, --cpu-reps times, the first run checked.
json run_cpu_reference(const Options& options, const SparseOperator& op, const MultiplyInputs& inputs,
                       const Reference* reference, bool show_progress);

}  // namespace bcsr24::spmm_run
