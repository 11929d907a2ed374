// Device allocations with typed out-of-memory errors and test hooks (device_memory.hpp).
#include "device/device_memory.hpp"

#include <atomic>
#include <cstdio>
#include <string>

#include <cuda_runtime_api.h>

#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"

namespace bcsr24::detail {

namespace {

/// Bytes the test budget still allows; negative: no budget.
std::atomic<std::int64_t> budget_left{-1};
/// Allocations until the injected failure (the one that brings it to 0 fails); 0: none pending.
std::atomic<std::int64_t> failure_countdown{0};
std::atomic<std::int64_t> allocation_calls{0};
std::atomic<std::int64_t> live_allocations{0};

/// Takes `bytes` from the test budget, or throws as the device would.
void take_from_budget(std::int64_t bytes, const std::string& what) {
  std::int64_t left = budget_left.load();
  while (left >= 0) {
    if (bytes > left)
      throw OutOfMemory("out of device memory: " + what + " needs " + byte_size_text(bytes) + ", the test budget has " +
                        byte_size_text(left) + " left");
    if (budget_left.compare_exchange_weak(left, left - bytes)) return;
  }
}

/// True when this allocation is the one the test hook makes fail (counts it down otherwise).
bool injected_failure() {
  std::int64_t left = failure_countdown.load();
  while (left > 0)
    if (failure_countdown.compare_exchange_weak(left, left - 1)) return left == 1;
  return false;
}

}  // namespace

std::string byte_size_text(std::int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, value < 10.0 ? "%.2f %s" : value < 100.0 ? "%.1f %s" : "%.0f %s", value,
                units[unit]);
  return text;
}

void* device_allocate(std::size_t bytes) {
  allocation_calls.fetch_add(1);
  const std::int64_t size = static_cast<std::int64_t>(bytes);
  if (injected_failure())
    throw OutOfMemory("out of device memory: cudaMalloc of " + byte_size_text(size) +
                      " failed (injected by the test hook)");
  take_from_budget(size, "an allocation");
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so that later calls start clean
    std::size_t free_bytes = 0, total_bytes = 0;
    const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
    throw OutOfMemory("out of device memory: cudaMalloc of " + byte_size_text(size) + " failed" +
                      (known ? " (" + byte_size_text(static_cast<std::int64_t>(free_bytes)) + " free)" : std::string()));
  }
  if (status != cudaSuccess) throw_cuda_error(status, "cudaMalloc", __FILE__, __LINE__);
  live_allocations.fetch_add(1);
  return ptr;
}

void device_free(void* ptr) noexcept {
  if (!ptr) return;
  cudaFree(ptr);  // a failing free leaves nothing to recover
  live_allocations.fetch_sub(1);
}

void check_device_memory(std::int64_t bytes, const std::string& what) {
  std::size_t free_bytes = 0, total_bytes = 0;
  BCSR24_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes > static_cast<std::int64_t>(free_bytes))
    throw OutOfMemory("out of device memory: " + what + " need " + byte_size_text(bytes) + ", " +
                      byte_size_text(static_cast<std::int64_t>(free_bytes)) + " are free");
  const std::int64_t left = budget_left.load();
  if (left >= 0 && bytes > left)
    throw OutOfMemory("out of device memory: " + what + " need " + byte_size_text(bytes) + ", the test budget has " +
                      byte_size_text(left) + " left");
}

void wait_for_device_writes() { BCSR24_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy)); }

void set_device_allocation_budget(std::int64_t bytes) noexcept { budget_left.store(bytes < 0 ? -1 : bytes); }

void fail_device_allocation_at(std::int64_t k) noexcept { failure_countdown.store(k > 0 ? k : 0); }

std::int64_t device_allocation_calls() noexcept { return allocation_calls.load(); }

std::int64_t live_device_allocations() noexcept { return live_allocations.load(); }

}  // namespace bcsr24::detail
