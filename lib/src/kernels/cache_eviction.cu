// The L2 eviction read (kernels/cache_eviction.hpp).
#include "kernels/cache_eviction.hpp"

#include <cstdint>

#include "device/cuda_check.hpp"

namespace bcsr24::kernels {

namespace {

__global__ void l2_eviction_kernel(const uint4* data, std::size_t count, unsigned* sink) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(data + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  // Practically never true: it keeps the loads from being optimised away without a store per thread.
  if (acc == 0x9e3779b9u && sink != nullptr) *sink = acc;
}

}  // namespace

void enqueue_l2_eviction(const void* buffer, std::size_t bytes, cudaStream_t stream) {
  const std::size_t count = bytes / sizeof(uint4);
  if (count == 0) return;
  l2_eviction_kernel<<<1024, 256, 0, stream>>>(static_cast<const uint4*>(buffer), count, nullptr);
  BCSR24_CUDA_CHECK(cudaGetLastError());
}

}  // namespace bcsr24::kernels
