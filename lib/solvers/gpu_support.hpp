// Device plumbing shared by the solver's GPU spaces (gpu_system.cpp, gpu_block_space.cpp): owning arrays, checked
// CUDA and cuSPARSE calls, CSR matrices with their cuSPARSE descriptors, fixed-shape SpMM, and CUDA-event timing.
// Internal to apps/solver; no kernels here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"

namespace bcsr24::solver::device {

inline std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " (" + file + ":" + std::to_string(line) + ")";
}
inline void cuda_check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw CudaError(std::string(cudaGetErrorString(status)) + " in " + where(call, file, line));
}
inline void cusparse_check(cusparseStatus_t status, const char* call, const char* file, int line) {
  if (status != CUSPARSE_STATUS_SUCCESS)
    throw CusparseError(std::string(cusparseGetErrorString(status)) + " in " + where(call, file, line));
}

}  // namespace bcsr24::solver::device

#define CUDA_OK(call) ::bcsr24::solver::device::cuda_check((call), #call, __FILE__, __LINE__)
#define CUSPARSE_OK(call) ::bcsr24::solver::device::cusparse_check((call), #call, __FILE__, __LINE__)

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

/// CSR arrays on the device with their cuSPARSE descriptor.
struct DeviceCsr {
  DeviceArray<std::int32_t> row_ptr, col_idx;
  DeviceArray<double> values64;
  DeviceArray<float> values32;
  cusparseSpMatDescr_t descriptor = nullptr;

  DeviceCsr(const CsrMatrix& a, bool fp32)
      : row_ptr(a.row_ptr.data(), a.row_ptr.size()), col_idx(a.col_idx.data(), a.col_idx.size()) {
    void* values = nullptr;
    if (fp32) {
      const std::vector<float> v(a.values.begin(), a.values.end());
      values32 = DeviceArray<float>(v.data(), v.size());
      values = values32.get();
    } else {
      values64 = DeviceArray<double>(a.values.data(), a.values.size());
      values = values64.get();
    }
    CUSPARSE_OK(cusparseCreateCsr(&descriptor, a.rows, a.cols, a.nnz(), row_ptr.get(), col_idx.get(), values,
                                  CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                  fp32 ? CUDA_R_32F : CUDA_R_64F));
  }
  DeviceCsr(const DeviceCsr&) = delete;
  DeviceCsr& operator=(const DeviceCsr&) = delete;
  ~DeviceCsr() {
    if (descriptor) cusparseDestroySpMat(descriptor);
  }
  std::size_t bytes() const { return row_ptr.bytes() + col_idx.bytes() + values64.bytes() + values32.bytes(); }
};

/// One sparse x dense product C = alpha A B + beta C with row-major B and C of fixed shape; the data pointers are
/// set per call (cusparseDnMatSetValues), so the workspace is sized once.
class CusparseProduct {
 public:
  CusparseProduct(cusparseHandle_t handle, const DeviceCsr& a, std::int32_t rows, std::int32_t cols, int n,
                  std::int64_t ldb, std::int64_t ldc, cudaDataType type, const void* any_b, void* any_c)
      : handle_(handle), a_(a.descriptor), type_(type) {
    CUSPARSE_OK(cusparseCreateDnMat(&b_, cols, n, ldb, const_cast<void*>(any_b), type, CUSPARSE_ORDER_ROW));
    CUSPARSE_OK(cusparseCreateDnMat(&c_, rows, n, ldc, any_c, type, CUSPARSE_ORDER_ROW));
    std::size_t bytes = 0;
    const double one64 = 1.0;
    const float one32 = 1.0f;
    CUSPARSE_OK(cusparseSpMM_bufferSize(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                        scalar(one64, one32), a_, b_, scalar(one64, one32), c_, type_,
                                        CUSPARSE_SPMM_ALG_DEFAULT, &bytes));
    workspace_ = DeviceArray<unsigned char>(bytes);
  }
  CusparseProduct(const CusparseProduct&) = delete;
  CusparseProduct& operator=(const CusparseProduct&) = delete;
  ~CusparseProduct() {
    if (b_) cusparseDestroyDnMat(b_);
    if (c_) cusparseDestroyDnMat(c_);
  }
  void run(const void* b, void* c, double alpha, double beta) {
    CUSPARSE_OK(cusparseDnMatSetValues(b_, const_cast<void*>(b)));
    CUSPARSE_OK(cusparseDnMatSetValues(c_, c));
    const float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta);
    CUSPARSE_OK(cusparseSpMM(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                             scalar(alpha, alpha32), a_, b_, scalar(beta, beta32), c_, type_,
                             CUSPARSE_SPMM_ALG_DEFAULT, workspace_.get()));
  }
  std::size_t bytes() const { return workspace_.bytes(); }

 private:
  const void* scalar(const double& v64, const float& v32) const {
    return type_ == CUDA_R_64F ? static_cast<const void*>(&v64) : static_cast<const void*>(&v32);
  }
  cusparseHandle_t handle_;
  cusparseSpMatDescr_t a_;
  cudaDataType type_;
  cusparseDnMatDescr_t b_ = nullptr, c_ = nullptr;
  DeviceArray<unsigned char> workspace_;
};

}  // namespace bcsr24::solver::device
