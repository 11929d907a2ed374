// Device allocations with typed out-of-memory errors and a test budget (device_memory.hpp).
#include "device/device_memory.hpp"

#include <atomic>
#include <string>

#include <cuda_runtime_api.h>

#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"

namespace bcsr24::detail {

namespace {

/// Bytes the test budget still allows; negative: no budget.
std::atomic<std::int64_t> budget_left{-1};

std::string mib(std::int64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

/// Takes `bytes` from the test budget, or throws as the device would.
void take_from_budget(std::int64_t bytes, const std::string& what) {
  std::int64_t left = budget_left.load();
  while (left >= 0) {
    if (bytes > left)
      throw OutOfMemory("out of device memory: " + what + " needs " + mib(bytes) + ", the test budget has " +
                        mib(left) + " left");
    if (budget_left.compare_exchange_weak(left, left - bytes)) return;
  }
}

}  // namespace

void* device_allocate(std::size_t bytes) {
  take_from_budget(static_cast<std::int64_t>(bytes), "an allocation");
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so that later calls start clean
    std::size_t free_bytes = 0, total_bytes = 0;
    const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
    throw OutOfMemory("out of device memory: cudaMalloc of " + mib(static_cast<std::int64_t>(bytes)) + " failed" +
                      (known ? " (" + mib(static_cast<std::int64_t>(free_bytes)) + " free)" : std::string()));
  }
  if (status != cudaSuccess) throw_cuda_error(status, "cudaMalloc", __FILE__, __LINE__);
  return ptr;
}

void device_free(void* ptr) noexcept {
  if (ptr) cudaFree(ptr);  // a failing free leaves nothing to recover
}

void check_device_memory(std::int64_t bytes, const std::string& what) {
  std::size_t free_bytes = 0, total_bytes = 0;
  BCSR24_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes > static_cast<std::int64_t>(free_bytes))
    throw OutOfMemory("out of device memory: " + what + " need " + mib(bytes) + ", " +
                      mib(static_cast<std::int64_t>(free_bytes)) + " are free");
  const std::int64_t left = budget_left.load();
  if (left >= 0 && bytes > left)
    throw OutOfMemory("out of device memory: " + what + " need " + mib(bytes) + ", the test budget has " + mib(left) +
                      " left");
}

void set_device_allocation_budget(std::int64_t bytes) noexcept { budget_left.store(bytes < 0 ? -1 : bytes); }

}  // namespace bcsr24::detail
