// GPU timing support for the programs (see gpu_timing.hpp).
#include "gpu_timing.hpp"

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

}  // namespace bcsr24::bench
