// How spmm_run and bench_spmm time GPU work: CUDA events around each run, warm-up first, L2 evicted between runs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

#include <cuda_runtime_api.h>

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

/// Median, minimum and maximum of a set of timed runs, in milliseconds (all zero for no runs).
struct Timings {
  double median_ms = 0.0, min_ms = 0.0, max_ms = 0.0;
};
inline Timings summarize(std::vector<double> ms) {
  Timings t;
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  const std::size_t count = ms.size();
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  t.median_ms = count % 2 ? ms[count / 2] : 0.5 * (ms[count / 2 - 1] + ms[count / 2]);
  return t;
}

}  // namespace bcsr24::bench
