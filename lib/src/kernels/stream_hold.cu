// The stream hold (kernels/stream_hold.hpp).
#include "kernels/stream_hold.hpp"

#include "device/cuda_check.hpp"

namespace bcsr24::kernels {

namespace {

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void stream_hold_kernel(const volatile std::uint32_t* release, std::uint64_t limit_ns) {
  const std::uint64_t start = global_ns();
  // The pause keeps one polling thread from competing with the memory traffic of the release's memset.
  while (*release == 0u && global_ns() - start < limit_ns) __nanosleep(500);
}

}  // namespace

void enqueue_stream_hold(const volatile std::uint32_t* release, std::uint64_t limit_ns, cudaStream_t stream) {
  stream_hold_kernel<<<1, 1, 0, stream>>>(release, limit_ns);
  BCSR24_CUDA_CHECK(cudaGetLastError());
}

}  // namespace bcsr24::kernels
