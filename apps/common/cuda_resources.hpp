// Checked CUDA calls and small owners of device memory, streams and events, shared by the programs.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "bcsr24/error.hpp"

namespace bcsr24::bench {

/// Throws CudaError naming the call, the file and the line when `status` is an error.
inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    throw CudaError(std::string(call) + " failed: " + cudaGetErrorString(status) + " (" + file + ":" +
                    std::to_string(line) + ")");
}

/// Device memory owned for the lifetime of one run (at least one byte, so get() is never null).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    check_cuda(cudaMalloc(&pointer_, std::max<std::size_t>(bytes, 1)), "cudaMalloc", __FILE__, __LINE__);
  }
  ~DeviceBuffer() { cudaFree(pointer_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return pointer_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* pointer_ = nullptr;
  std::size_t bytes_;
};

/// A non-blocking stream (it does not synchronise with the legacy default stream).
class CudaStream {
 public:
  CudaStream() {
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", __FILE__,
               __LINE__);
  }
  ~CudaStream() { cudaStreamDestroy(stream_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// A timing event.
class CudaEvent {
 public:
  CudaEvent() { check_cuda(cudaEventCreate(&event_), "cudaEventCreate", __FILE__, __LINE__); }
  ~CudaEvent() { cudaEventDestroy(event_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace bcsr24::bench
