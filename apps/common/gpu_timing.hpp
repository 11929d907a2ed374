// How the programs time GPU work: CUDA events around each run, warm-up first, L2 evicted between runs; and the
// device's copy bandwidth that their "% of copy" figures divide by.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
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

/// As time_gpu_runs for several runs compared with each other: two passes over them, the first in order with half of
/// `reps` each, the second in reverse order with the rest, each a call of time_gpu_runs (warm-up included). Why:
/// consecutive calls of time_gpu_runs alternate between two medians ~0.35 us apart on products of ~5 us, whatever
/// they run (one plan timed by six consecutive calls: 5.47 / 5.12 / 5.47 / 5.14 / 5.38 / 5.12 us, equal minima; an
/// H200, session 57), so one call per run ranked runs of ~5 us by their place in the list. In the two passes every
/// run has one call of each parity. Interleaving the runs instead (one of each per round) made a run's time depend on
/// the run before it: a tile plan took 13% longer behind another method's kernel than behind its own (the same
/// plan, the same minimum); the instruction cache, which the L2 eviction does not empty, is our guess.
/// Returns the milliseconds per run, in order (first pass, then second).
/// @throw CudaError
std::vector<std::vector<double>> time_gpu_runs_both_orders(const std::vector<std::function<void(cudaStream_t)>>& runs,
                                                           int warmup, int reps, const L2Flush* flush,
                                                           cudaStream_t stream);

/// What copy_bandwidth measured on one device.
struct CopyBandwidth {
  double bytes_per_s = 0.0;  ///< (bytes read + bytes written) / time of the median copy; 0 where not measured
  std::size_t buffer_bytes = 0;  ///< the size of each of the two buffers
  int runs = 0;                  ///< timed copies
  std::string note;              ///< why it was not measured, or a smaller buffer than asked for was used
};

/// Bytes per buffer and timed copies of copy_bandwidth: two buffers of 256 MiB, far larger than any L2 (50-60 MiB
/// on the H100 and H200), so that a copy streams from and to DRAM.
inline constexpr std::size_t kCopyBufferBytes = std::size_t(256) << 20;
inline constexpr int kCopyRuns = 5;

/// The current device's device-to-device copy bandwidth: cudaMemcpy between two buffers of kCopyBufferBytes
/// (halved until they fit, down to 32 MiB), a warm-up then the median of kCopyRuns timed copies, counting the bytes
/// read and written (a copy of S bytes moves 2 S). Measured once per process and device (later calls return the
/// first result) and the buffers freed: the "% of copy" figure of bench_spmm and spmm_run divides by it.
/// @throw CudaError
const CopyBandwidth& copy_bandwidth();

}  // namespace bcsr24::bench
