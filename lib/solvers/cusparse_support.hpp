// cuSPARSE for the comparisons the solver is measured against (bcsr24_solve --compare, the Jacobi-PCG baseline, the
// legacy solver): checked calls, CSR matrices with their descriptors, fixed-shape SpMM, and the foreign products a
// GpuBlockSpace runs through. libbcsr24_solvers itself never includes this header, so it needs no cuSPARSE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <cusparse.h>

#include "gpu_block_space.hpp"
#include "gpu_support.hpp"

namespace bcsr24::solver::device {

inline void cusparse_check(cusparseStatus_t status, const char* call, const char* file, int line) {
  if (status != CUSPARSE_STATUS_SUCCESS)
    throw CudaError(std::string(cusparseGetErrorString(status)) + " in " + where(call, file, line));
}

}  // namespace bcsr24::solver::device

#define CUSPARSE_OK(call) ::bcsr24::solver::device::cusparse_check((call), #call, __FILE__, __LINE__)

namespace bcsr24::solver::device {

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

namespace bcsr24::solver {

/// The foreign products of a GpuBlockSpace made with cuSPARSE (one handle for all the products it makes).
ForeignProducts cusparse_products();

}  // namespace bcsr24::solver
