// Device plumbing shared by the solver's GPU spaces (gpu_block_space.cpp, nccl_rank_link.cpp): owning
// arrays, checked CUDA calls, CSR arrays and CUDA-event timing. No cuSPARSE here (cusparse_support.hpp has it, for
// the comparisons), and no kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"

namespace bcsr24::solver::device {

inline std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " (" + file + ":" + std::to_string(line) + ")";
}
inline void cuda_check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw CudaError(std::string(cudaGetErrorString(status)) + " in " + where(call, file, line));
}

}  // namespace bcsr24::solver::device

#define CUDA_OK(call) ::bcsr24::solver::device::cuda_check((call), #call, __FILE__, __LINE__)

namespace bcsr24::solver::device {

/// Owner of one device allocation of `count` elements (moved from: empty).
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t count) : count_(count) {
    T* ptr = nullptr;
    if (count_ > 0) CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&ptr), count_ * sizeof(T)));
    ptr_.reset(ptr);
  }
  DeviceArray(const T* host, std::size_t count) : DeviceArray(count) {
    if (count_ > 0) CUDA_OK(cudaMemcpy(ptr_.get(), host, count_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  DeviceArray(DeviceArray&& o) noexcept : ptr_(std::move(o.ptr_)), count_(std::exchange(o.count_, 0)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    ptr_ = std::move(o.ptr_);
    count_ = std::exchange(o.count_, 0);
    return *this;
  }
  T* get() const noexcept { return ptr_.get(); }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }

 private:
  struct Free {
    void operator()(T* ptr) const noexcept { cudaFree(ptr); }
  };
  std::unique_ptr<T, Free> ptr_;
  std::size_t count_ = 0;
};

/// Page-locked host memory for the small per-iteration transfers (asynchronous copies need it).
template <typename T>
class PinnedArray {
 public:
  PinnedArray() = default;
  explicit PinnedArray(std::size_t count) {
    if (count > 0) CUDA_OK(cudaMallocHost(reinterpret_cast<void**>(&ptr_), count * sizeof(T)));
  }
  ~PinnedArray() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedArray(PinnedArray&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)) {}
  PinnedArray& operator=(PinnedArray&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  T* get() const noexcept { return ptr_; }
  T& operator[](std::size_t i) const noexcept { return ptr_[i]; }

 private:
  T* ptr_ = nullptr;
};

/// CUDA events around enqueued operations, per category. Intervals are read only in collect(), which the owner calls
/// right after a host synchronisation of the stream, so reading never waits and the events can be reused.
class EventTimer {
 public:
  explicit EventTimer(int categories = 2) : ms_(std::size_t(categories), 0.0) {}
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  ~EventTimer() {
    for (cudaEvent_t e : pool_) cudaEventDestroy(e);
  }
  void set_enabled(bool enabled) { enabled_ = enabled; }
  bool enabled() const { return enabled_; }
  /// Records an event on the stream (nullptr when timing is off).
  cudaEvent_t record(cudaStream_t stream) {
    if (!enabled_) return nullptr;
    if (used_ == pool_.size()) {
      cudaEvent_t e = nullptr;
      CUDA_OK(cudaEventCreate(&e));
      pool_.push_back(e);
    }
    cudaEvent_t e = pool_[used_++];
    CUDA_OK(cudaEventRecord(e, stream));
    return e;
  }
  void interval(int category, cudaEvent_t start, cudaEvent_t stop) {
    if (enabled_) pending_.push_back({category, start, stop});
  }
  void collect() {
    for (const Pending& p : pending_) {
      float ms = 0.0f;
      CUDA_OK(cudaEventElapsedTime(&ms, p.start, p.stop));
      ms_[std::size_t(p.category)] += ms;
    }
    pending_.clear();
    used_ = 0;
  }
  double ms(int category) const { return ms_[std::size_t(category)]; }
  void reset() {
    for (double& v : ms_) v = 0.0;
  }

 private:
  struct Pending {
    int category;
    cudaEvent_t start, stop;
  };
  bool enabled_ = true;
  std::vector<cudaEvent_t> pool_;
  std::size_t used_ = 0;
  std::vector<Pending> pending_;
  std::vector<double> ms_;
};

/// CSR arrays on the device (fp64 or fp32 values), for the space's own kernels.
struct DeviceCsrArrays {
  DeviceArray<std::int32_t> row_ptr, col_idx;
  DeviceArray<double> values64;
  DeviceArray<float> values32;

  DeviceCsrArrays(const CsrMatrix& a, bool fp32)
      : row_ptr(a.row_ptr.data(), a.row_ptr.size()), col_idx(a.col_idx.data(), a.col_idx.size()) {
    if (fp32) {
      const std::vector<float> v(a.values.begin(), a.values.end());
      values32 = DeviceArray<float>(v.data(), v.size());
    } else {
      values64 = DeviceArray<double>(a.values.data(), a.values.size());
    }
  }
  std::size_t bytes() const { return row_ptr.bytes() + col_idx.bytes() + values64.bytes() + values32.bytes(); }
};

}  // namespace bcsr24::solver::device
