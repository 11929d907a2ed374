// Checked CUDA calls and small owners of device memory, streams and events, shared by the programs.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "bcsr24/error.hpp"

namespace bcsr24::bench {

/// Throws CudaError naming the call, the file and the line when `status` is an error.
inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    throw CudaError(std::string(call) + " failed: " + cudaGetErrorString(status) + " (" + file + ":" +
                    std::to_string(line) + ")");
}

/// Device memory owned for the lifetime of one run (at least one byte, so get() is never null); movable.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    check_cuda(cudaMalloc(&pointer_, std::max<std::size_t>(bytes, 1)), "cudaMalloc", __FILE__, __LINE__);
  }
  ~DeviceBuffer() { cudaFree(pointer_); }
  DeviceBuffer(DeviceBuffer&& other) noexcept : pointer_(other.pointer_), bytes_(other.bytes_) {
    other.pointer_ = nullptr;
    other.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(pointer_, other.pointer_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return pointer_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* pointer_ = nullptr;
  std::size_t bytes_;
};

/// Owns one CUDA handle (a stream or an event) from its creation to its destruction.
template <typename Handle, cudaError_t (*destroy)(Handle)>
class CudaHandle {
 public:
  ~CudaHandle() { destroy(handle_); }
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;
  Handle get() const { return handle_; }

 protected:
  CudaHandle() = default;
  Handle handle_ = nullptr;
};

/// A non-blocking stream (it does not synchronise with the legacy default stream).
class CudaStream : public CudaHandle<cudaStream_t, cudaStreamDestroy> {
 public:
  CudaStream() {
    check_cuda(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", __FILE__,
               __LINE__);
  }
};

/// A timing event.
class CudaEvent : public CudaHandle<cudaEvent_t, cudaEventDestroy> {
 public:
  CudaEvent() { check_cuda(cudaEventCreate(&handle_), "cudaEventCreate", __FILE__, __LINE__); }
};

}  // namespace bcsr24::bench
