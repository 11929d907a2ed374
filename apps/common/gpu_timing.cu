// GPU timing support for the programs (see gpu_timing.hpp).
#include "gpu_timing.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "bcsr24/error.hpp"
#include "cuda_resources.hpp"

namespace bcsr24::bench {

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(status));
}

__global__ void read_all(const uint4* data, std::size_t count, unsigned* sink) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const uint4 v = data[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // practically never: keeps the loads from being optimised away
}

}  // namespace

L2Flush::L2Flush(std::size_t bytes) : bytes_(bytes < 16 ? 16 : bytes) {
  check(cudaMalloc(&buffer_, bytes_), "L2 flush buffer");
  check(cudaMemset(buffer_, 0x5a, bytes_), "L2 flush buffer fill");
}

L2Flush::~L2Flush() { cudaFree(buffer_); }

void L2Flush::operator()(cudaStream_t stream) const {
  read_all<<<1024, 256, 0, stream>>>(static_cast<const uint4*>(buffer_), bytes_ / sizeof(uint4),
                                     static_cast<unsigned*>(buffer_));
  check(cudaGetLastError(), "L2 flush launch");
}

std::vector<double> time_gpu_runs(const std::function<void(cudaStream_t)>& run, int warmup, int reps,
                                  const L2Flush* flush, cudaStream_t stream) {
  const CudaEvent start, stop;
  std::vector<double> milliseconds;
  for (int i = 0; i < warmup; ++i) run(stream);
  for (int i = 0; i < reps; ++i) {
    if (flush) (*flush)(stream);
    check(cudaEventRecord(start.get(), stream), "cudaEventRecord");
    run(stream);
    check(cudaEventRecord(stop.get(), stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop.get()), "timed run");
    float elapsed = 0.0f;
    check(cudaEventElapsedTime(&elapsed, start.get(), stop.get()), "cudaEventElapsedTime");
    milliseconds.push_back(elapsed);
  }
  return milliseconds;
}

std::vector<std::vector<double>> time_gpu_runs_both_orders(const std::vector<std::function<void(cudaStream_t)>>& runs,
                                                           int warmup, int reps, const L2Flush* flush,
                                                           cudaStream_t stream) {
  std::vector<std::vector<double>> milliseconds(runs.size());
  const int first = (reps + 1) / 2, second = reps - first;
  for (std::size_t k = 0; k < runs.size(); ++k) milliseconds[k] = time_gpu_runs(runs[k], warmup, first, flush, stream);
  if (second > 0)
    for (std::size_t k = runs.size(); k-- > 0;) {
      const std::vector<double> more = time_gpu_runs(runs[k], warmup, second, flush, stream);
      milliseconds[k].insert(milliseconds[k].end(), more.begin(), more.end());
    }
  return milliseconds;
}

namespace {

/// One measurement (copy_bandwidth): allocation failures shrink the buffers, anything else throws.
CopyBandwidth measure_copy_bandwidth() {
  CopyBandwidth result;
  constexpr std::size_t kLeastBytes = std::size_t(32) << 20;
  void* from = nullptr;
  void* to = nullptr;
  std::size_t bytes = kCopyBufferBytes;
  for (; bytes >= kLeastBytes; bytes /= 2) {
    if (cudaMalloc(&from, bytes) == cudaSuccess) {
      if (cudaMalloc(&to, bytes) == cudaSuccess) break;
      cudaFree(from);
      from = nullptr;
    }
    cudaGetLastError();  // the failed allocation's error is not sticky; clear it
  }
  if (to == nullptr) {
    result.note = "no room for two buffers of 32 MiB";
    return result;
  }
  struct Free {
    void* a;
    void* b;
    ~Free() {
      cudaFree(a);
      cudaFree(b);
    }
  } free_both{from, to};
  if (bytes < kCopyBufferBytes) result.note = "buffers of " + std::to_string(bytes >> 20) + " MiB (less free memory)";
  const CudaEvent start, stop;
  check(cudaMemset(from, 0x3c, bytes), "copy bandwidth buffer fill");
  check(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToDevice), "copy bandwidth warm-up");
  std::vector<double> ms;
  for (int i = 0; i < kCopyRuns; ++i) {
    check(cudaEventRecord(start.get(), nullptr), "cudaEventRecord");
    check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, nullptr), "copy bandwidth copy");
    check(cudaEventRecord(stop.get(), nullptr), "cudaEventRecord");
    check(cudaEventSynchronize(stop.get()), "copy bandwidth copy");
    float elapsed = 0.0f;
    check(cudaEventElapsedTime(&elapsed, start.get(), stop.get()), "cudaEventElapsedTime");
    ms.push_back(elapsed);
  }
  const Timings t = summarize(ms);
  result.buffer_bytes = bytes;
  result.runs = kCopyRuns;
  result.bytes_per_s = t.median_ms > 0 ? 2.0 * double(bytes) / (t.median_ms * 1e-3) : 0.0;
  return result;
}

}  // namespace

const CopyBandwidth& copy_bandwidth() {
  static std::mutex mutex;
  static std::map<int, CopyBandwidth> measured;  // by device; entries never move once made
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = measured.find(device);
  if (found != measured.end()) return found->second;
  return measured.emplace(device, measure_copy_bandwidth()).first->second;
}

}  // namespace bcsr24::bench
