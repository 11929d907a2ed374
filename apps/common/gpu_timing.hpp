// How the programs time GPU work: CUDA events around each run, warm-up first, L2 evicted between runs.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include <cuda_runtime_api.h>

#include "text_report.hpp"  // Timings, summarize

namespace bcsr24::bench {

/// Evicts data from L2 by reading a device buffer larger than L2. Reading (not writing) matters: a memset would
/// leave L2 full of dirty lines whose write-back would be charged to the next timed run.
class L2Flush {
 public:
  /// Allocates and fills `bytes` (use twice the L2 size). @throw CudaError
  explicit L2Flush(std::size_t bytes);
  ~L2Flush();
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;

  /// Enqueues the eviction on `stream`.
  void operator()(cudaStream_t stream) const;

 private:
  void* buffer_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Runs `run` `warmup` times untimed, then `reps` times, each preceded by `flush` (when given, outside the
/// timed region) and bracketed by CUDA events on `stream`. Returns the milliseconds of each timed run.
/// @throw CudaError
std::vector<double> time_gpu_runs(const std::function<void(cudaStream_t)>& run, int warmup, int reps,
                                  const L2Flush* flush, cudaStream_t stream);

}  // namespace bcsr24::bench
