// RAII owner of one device allocation (move-only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "device/cuda_check.hpp"
#include "device/device_memory.hpp"

namespace bcsr24::detail {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) ptr_ = static_cast<T*>(device_allocate(count_ * sizeof(T)));
  }
  /// Allocates and copies a host vector; the copy has landed when the constructor returns, so work on any
  /// stream may read it (device_memory.hpp, wait_for_device_writes). If the copy fails, the allocation is freed
  /// (the delegated constructor has completed, so the destructor runs).
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    if (count_ > 0) {
      BCSR24_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice));
      wait_for_device_writes();
    }
  }
  /// Allocates `count` >= host.size() elements, copies the host vector to the front and zeroes the rest (a
  /// kernel's whole-vector loads may read past the last element).
  DeviceBuffer(const std::vector<T>& host, std::size_t count) : DeviceBuffer(count) {
    if (count_ > 0) {
      if (!host.empty())
        BCSR24_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
      if (count_ > host.size())
        BCSR24_CUDA_CHECK(cudaMemset(ptr_ + host.size(), 0, (count_ - host.size()) * sizeof(T)));
      wait_for_device_writes();
    }
  }
  ~DeviceBuffer() { device_free(ptr_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      device_free(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace bcsr24::detail
