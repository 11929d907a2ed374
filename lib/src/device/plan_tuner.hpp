// Measured plans (Tuning::measure) on the GPU: drafts the candidates, builds the few worth measuring, times them
// round-robin on the matrix with a scratch B and C, and keeps the fastest (device/plan_tuning.hpp has the rules).
#pragma once

#include <cstdint>

#include "bcsr24/spmm_plan.hpp"
#include "device/device_matrix.hpp"
#include "device/plan_tuning.hpp"

namespace bcsr24::detail {

/// The name a stored choice is keyed by: the CUDA device's name (cudaDeviceProp::name) of `matrix`'s device.
std::string tuning_device_name(const DeviceMatrix& matrix);

/// An automatic plan chosen by measurement (SparseOperator::make_plan with Tuning::measure and the default knobs):
/// reuses the choice `store` holds for this n, types and device where there is one; otherwise measures and, when
/// a candidate was timed, records the choice in `store` (which may be null). The budget is options.tuning_budget_ms,
/// or by default a share of `conversion_ms`, what converting the operator took (0: unknown; tuning_budget). Falls
/// back to the model's plan, and says so in the report, where the scratch B and C do not fit in device memory or
/// the budget leaves no room.
/// @throw as SparseOperator::make_plan.
SpmmPlan tune_plan(const DeviceMatrix& matrix, std::int32_t n, const PlanOptions& options, TunedChoices* store,
                   double conversion_ms = 0.0);

}  // namespace bcsr24::detail
