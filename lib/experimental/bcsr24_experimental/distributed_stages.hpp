// Experimental, not installed, not stable: a distributed product run in parts, so that a benchmark can time the
// exchange of B's halo rows, the local product and the halo product on their own (spmm_run's distributed stage
// timing). DistributedPlan::run is the product itself. Needs bcsr24::bcsr24_distributed (built with NCCL).
#pragma once

#include <cstdint>

#include "bcsr24/distributed_operator.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/spmm_plan.hpp"

namespace bcsr24::experimental {

/// Which parts of a distributed product to run (every rank must pass the same value).
enum class DistributedStages {
  all,            ///< exchange overlapped with the local product, then the halo product: the product
  local_only,     ///< the local part's product alone (C = alpha * A_local * B_owned + beta * C)
  exchange_only,  ///< pack and exchange the halo rows of B, no product
  halo_only       ///< the halo part's product alone on the halo rows of the last exchange (C += alpha * A_halo * B_halo)
};

/// DistributedPlan::run limited to `stages`; collective as run() (every rank calls it with the same stages, in the
/// same order relative to its other NCCL calls).
/// @throw as DistributedPlan::run.
void run_stages(const DistributedPlan& plan, DistributedStages stages, const fp16_t* b, std::int64_t ldb, float* c,
                std::int64_t ldc, float alpha, float beta, Stream stream = nullptr);
/// The same with fp32 B.
void run_stages(const DistributedPlan& plan, DistributedStages stages, const float* b, std::int64_t ldb, float* c,
                std::int64_t ldc, float alpha, float beta, Stream stream = nullptr);

}  // namespace bcsr24::experimental
