// Test-side CUDA memory for the GPU tests and the soak program: checked runtime calls and owners of device and of
// pinned host memory (at least 16 bytes, so the pointer is never null), freed with their owner.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "bcsr24/error.hpp"

namespace bcsr24::test {

/// Throws CudaError "<what>: <CUDA's message>" when `status` is an error.
inline void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(status));
}

/// Device memory of the test's own (B, C, images of C), apart from what the library allocates.
struct DeviceBytes {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  explicit DeviceBytes(std::size_t n) : bytes(n) {
    cuda_ok(cudaMalloc(&ptr, std::max<std::size_t>(n, 16)), "cudaMalloc");
  }
  ~DeviceBytes() { cudaFree(ptr); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
};

/// Pinned host memory, so that copies to and from the device can be asynchronous.
struct PinnedBytes {
  void* ptr = nullptr;
  explicit PinnedBytes(std::size_t n) { cuda_ok(cudaMallocHost(&ptr, std::max<std::size_t>(n, 16)), "cudaMallocHost"); }
  ~PinnedBytes() { cudaFreeHost(ptr); }
  PinnedBytes(const PinnedBytes&) = delete;
  PinnedBytes& operator=(const PinnedBytes&) = delete;
};

}  // namespace bcsr24::test
