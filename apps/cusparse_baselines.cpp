// cuSPARSE (SpMM on CSR fp16/fp32 and BSR16 fp16/fp32, SpMV on CSR fp16/fp32, CSR fp64 reference) and cuBLAS dense
// baselines.
#include "cusparse_baselines.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <stdexcept>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cusparse.h>

#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "cuda_resources.hpp"

namespace bcsr24::bench {

namespace {

void cusparse_check(cusparseStatus_t s, const char* call, int line) {
  if (s != CUSPARSE_STATUS_SUCCESS)
    throw CudaError(std::string(cusparseGetErrorString(s)) + " in " + call + " at cusparse_baselines.cpp:" +
                    std::to_string(line));
}
#define CUDA_OK(x) check_cuda((x), #x, __FILE__, __LINE__)
#define CUSPARSE_OK(x) cusparse_check((x), #x, __LINE__)

struct DevMem {
  void* p = nullptr;
  DevMem() = default;
  explicit DevMem(std::size_t bytes) { CUDA_OK(cudaMalloc(&p, std::max<std::size_t>(bytes, 16))); }
  ~DevMem() { if (p) cudaFree(p); }
  DevMem(DevMem&& o) noexcept : p(o.p) { o.p = nullptr; }
  DevMem& operator=(DevMem&& o) noexcept { std::swap(p, o.p); return *this; }
};

template <typename T>
DevMem upload(const std::vector<T>& v) {
  DevMem d(v.size() * sizeof(T));
  if (!v.empty()) CUDA_OK(cudaMemcpy(d.p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

const char* baseline_name(Baseline b) {
  // In the order of the enumerators.
  static const char* const kNames[] = {"cusparse_csr_f16",   "cusparse_csr_f32",  "cusparse_bsr16_f16",
                                       "cusparse_bsr16_f32", "cublas_dense",      "cusparse_spmv_f16",
                                       "cusparse_spmv_f32"};
  const auto index = static_cast<std::size_t>(b);
  return index < sizeof kNames / sizeof kNames[0] ? kNames[index] : "unknown";
}

std::vector<Baseline> all_baselines() {
  return {Baseline::csr_f16,      Baseline::csr_f32,  Baseline::bsr16_f16, Baseline::bsr16_f32,
          Baseline::cublas_dense, Baseline::spmv_f16, Baseline::spmv_f32};
}

struct Prepared {
  cusparseSpMatDescr_t a = nullptr;
  cusparseDnMatDescr_t b = nullptr, c = nullptr;
  cusparseDnVecDescr_t x = nullptr, y = nullptr;  // SpMV
  DevMem workspace;
  cudaDataType compute = CUDA_R_32F;
  cusparseSpMMAlg_t alg = CUSPARSE_SPMM_ALG_DEFAULT;
  // cuBLAS
  const void* b_ptr = nullptr;
  float* c_ptr = nullptr;
  std::int32_t n = 0;
};

struct Baselines::Impl {
  std::int32_t rows = 0, cols = 0;
  std::int64_t nnz = 0;
  cusparseHandle_t sp = nullptr;
  cublasHandle_t blas = nullptr;
  DevMem row_ptr, col_idx, val64, val32, val16;
  bool have_bsr = false;
  std::string bsr_why;
  std::int64_t bsr_rows = 0, bsr_cols = 0, bsr_nnzb = 0;
  DevMem bsr_ptr, bsr_idx, bsr_val32, bsr_val16;
  bool have_dense = false;
  std::string dense_why;
  DevMem dense16;
  std::map<Baseline, Prepared> prepared;

  void release(Prepared& p) {
    if (p.a) cusparseDestroySpMat(p.a);
    if (p.b) cusparseDestroyDnMat(p.b);
    if (p.c) cusparseDestroyDnMat(p.c);
    if (p.x) cusparseDestroyDnVec(p.x);
    if (p.y) cusparseDestroyDnVec(p.y);
    p.a = nullptr; p.b = nullptr; p.c = nullptr; p.x = nullptr; p.y = nullptr;
  }
};

Baselines::Baselines(const CsrMatrix& a, std::int64_t dense_limit_bytes, std::int64_t bsr_limit_bytes)
    : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.rows = a.rows;
  d.cols = a.cols;
  d.nnz = a.nnz();
  CUSPARSE_OK(cusparseCreate(&d.sp));
  if (cublasCreate(&d.blas) != CUBLAS_STATUS_SUCCESS) throw CudaError("cublasCreate failed");
  std::vector<float> v32(a.values.begin(), a.values.end());
  std::vector<fp16_t> v16(a.values.size());
  for (std::size_t i = 0; i < v16.size(); ++i) v16[i] = double_to_fp16(a.values[i]);
  d.row_ptr = upload(a.row_ptr);
  d.col_idx = upload(a.col_idx);
  d.val64 = upload(a.values);
  d.val32 = upload(v32);
  d.val16 = upload(v16);

  // BSR with 16x16 blocks, row-major inside a block.
  constexpr int kB = 16;
  d.bsr_rows = (a.rows + kB - 1) / kB;
  d.bsr_cols = (a.cols + kB - 1) / kB;
  std::vector<std::int32_t> bptr(static_cast<std::size_t>(d.bsr_rows) + 1, 0), bidx;
  std::vector<std::int32_t> slot(static_cast<std::size_t>(d.bsr_cols), -1);
  for (std::int64_t br = 0; br < d.bsr_rows; ++br) {
    std::vector<std::int32_t> cols_here;
    for (std::int64_t r = br * kB; r < std::min<std::int64_t>(a.rows, (br + 1) * kB); ++r)
      for (std::int32_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) {
        const std::int32_t bc = a.col_idx[p] / kB;
        if (slot[bc] < 0) { slot[bc] = 0; cols_here.push_back(bc); }
      }
    std::sort(cols_here.begin(), cols_here.end());
    for (std::int32_t bc : cols_here) { slot[bc] = -1; bidx.push_back(bc); }
    bptr[br + 1] = static_cast<std::int32_t>(bidx.size());
  }
  d.bsr_nnzb = static_cast<std::int64_t>(bidx.size());
  if (d.bsr_nnzb * kB * kB > INT32_MAX) {
    // cuSPARSE addresses the block values with the 32-bit index type: past 2^31 values its BSR SpMM reads out of
    // bounds (an illegal memory access on a 1M-row power-law graph of degree 16, 3.6G values).
    d.bsr_why = "BSR16 holds " + std::to_string(d.bsr_nnzb) + " blocks, " + std::to_string(d.bsr_nnzb * kB * kB) +
                " values: more than 32-bit indices address";
  } else if (d.bsr_nnzb * kB * kB * 4 > bsr_limit_bytes) {
    d.bsr_why = "BSR16 needs " + std::to_string(d.bsr_nnzb * kB * kB * 4 >> 20) + " MiB";
  } else {
    std::vector<float> b32(static_cast<std::size_t>(d.bsr_nnzb) * kB * kB, 0.0f);
    for (std::int64_t br = 0; br < d.bsr_rows; ++br) {
      for (std::int32_t q = bptr[br]; q < bptr[br + 1]; ++q) slot[bidx[q]] = q;
      for (std::int64_t r = br * kB; r < std::min<std::int64_t>(a.rows, (br + 1) * kB); ++r)
        for (std::int32_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) {
          const std::int32_t c = a.col_idx[p];
          b32[std::size_t(slot[c / kB]) * kB * kB + std::size_t(r % kB) * kB + c % kB] = float(a.values[p]);
        }
      for (std::int32_t q = bptr[br]; q < bptr[br + 1]; ++q) slot[bidx[q]] = -1;
    }
    std::vector<fp16_t> b16(b32.size());
    for (std::size_t i = 0; i < b16.size(); ++i) b16[i] = float_to_fp16(b32[i]);
    d.bsr_ptr = upload(bptr);
    d.bsr_idx = upload(bidx);
    d.bsr_val32 = upload(b32);
    d.bsr_val16 = upload(b16);
    d.have_bsr = true;
  }

  const std::int64_t dense_bytes = std::int64_t(a.rows) * a.cols * 2;
  if (dense_bytes > dense_limit_bytes) {
    d.dense_why = "dense A needs " + std::to_string(dense_bytes >> 20) + " MiB";
  } else {
    std::vector<fp16_t> dense(static_cast<std::size_t>(dense_bytes / 2), 0);
    for (std::int32_t r = 0; r < a.rows; ++r)
      for (std::int32_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p)
        dense[std::size_t(r) * a.cols + a.col_idx[p]] = double_to_fp16(a.values[p]);
    d.dense16 = upload(dense);
    d.have_dense = true;
  }
}

Baselines::~Baselines() {
  for (auto& [m, p] : impl_->prepared) impl_->release(p);
  if (impl_->sp) cusparseDestroy(impl_->sp);
  if (impl_->blas) cublasDestroy(impl_->blas);
}

bool Baselines::prepare(Baseline m, std::int32_t n, const void* b_f16, const float* b_f32, float* c, std::string& why) {
  Impl& d = *impl_;
  if (auto it = d.prepared.find(m); it != d.prepared.end()) {
    d.release(it->second);
    d.prepared.erase(it);
  }
  Prepared p;
  p.n = n;
  p.c_ptr = c;
  if (m == Baseline::cublas_dense) {
    if (!d.have_dense) { why = d.dense_why; return false; }
    p.b_ptr = b_f16;
    d.prepared.emplace(m, std::move(p));
    return true;
  }
  if (m == Baseline::spmv_f16 || m == Baseline::spmv_f32) return prepare_spmv(m, n, b_f16, b_f32, c, why);
  const bool half = m == Baseline::csr_f16 || m == Baseline::bsr16_f16;
  const cudaDataType ab_type = half ? CUDA_R_16F : CUDA_R_32F;
  const void* b = half ? b_f16 : static_cast<const void*>(b_f32);
  cusparseStatus_t s;
  if (m == Baseline::csr_f16 || m == Baseline::csr_f32) {
    s = cusparseCreateCsr(&p.a, d.rows, d.cols, d.nnz, d.row_ptr.p, d.col_idx.p, half ? d.val16.p : d.val32.p,
                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, ab_type);
    p.alg = CUSPARSE_SPMM_ALG_DEFAULT;
  } else {
    if (!d.have_bsr) { why = d.bsr_why; return false; }
    s = cusparseCreateBsr(&p.a, d.bsr_rows, d.bsr_cols, d.bsr_nnzb, 16, 16, d.bsr_ptr.p, d.bsr_idx.p,
                          half ? d.bsr_val16.p : d.bsr_val32.p, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_BASE_ZERO, ab_type, CUSPARSE_ORDER_ROW);
    p.alg = CUSPARSE_SPMM_BSR_ALG1;
  }
  if (s != CUSPARSE_STATUS_SUCCESS) { why = cusparseGetErrorString(s); d.release(p); return false; }
  // BSR describes the matrix padded to whole 16x16 blocks, so B and C are described with padded rows too
  // (the caller allocates B and C with round_up(size, 16) rows; B's extra rows are zero).
  const bool csr = m == Baseline::csr_f16 || m == Baseline::csr_f32;
  const std::int64_t a_rows = csr ? d.rows : d.bsr_rows * 16;
  const std::int64_t a_cols = csr ? d.cols : d.bsr_cols * 16;
  CUSPARSE_OK(cusparseCreateDnMat(&p.b, a_cols, n, n, const_cast<void*>(b), ab_type, CUSPARSE_ORDER_ROW));
  CUSPARSE_OK(cusparseCreateDnMat(&p.c, a_rows, n, n, c, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  const float alpha = 1.0f, beta = 0.0f;
  std::size_t bytes = 0;
  s = cusparseSpMM_bufferSize(d.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.a,
                              p.b, &beta, p.c, CUDA_R_32F, p.alg, &bytes);
  if (s != CUSPARSE_STATUS_SUCCESS) { why = std::string("bufferSize: ") + cusparseGetErrorString(s); d.release(p); return false; }
  p.workspace = DevMem(bytes);
  s = cusparseSpMM_preprocess(d.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.a,
                              p.b, &beta, p.c, CUDA_R_32F, p.alg, p.workspace.p);
  if (s != CUSPARSE_STATUS_SUCCESS) { why = std::string("preprocess: ") + cusparseGetErrorString(s); d.release(p); return false; }
  // One trial run: some type combinations are only rejected here.
  s = cusparseSpMM(d.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.a, p.b, &beta,
                   p.c, CUDA_R_32F, p.alg, p.workspace.p);
  if (s != CUSPARSE_STATUS_SUCCESS) { why = std::string("SpMM: ") + cusparseGetErrorString(s); d.release(p); return false; }
  d.prepared.emplace(m, std::move(p));
  return true;
}

bool Baselines::prepare_spmv(Baseline m, std::int32_t n, const void* b_f16, const float* b_f32, float* c,
                             std::string& why) {
  Impl& d = *impl_;
  if (n != 1) {
    why = "SpMV multiplies one vector (n = 1)";
    return false;
  }
  const bool half = m == Baseline::spmv_f16;
  // fp16 A with fp16 x where cuSPARSE takes that mix, else with fp32 x; y and the arithmetic fp32 either way.
  const std::vector<cudaDataType> x_types = half ? std::vector<cudaDataType>{CUDA_R_16F, CUDA_R_32F}
                                                 : std::vector<cudaDataType>{CUDA_R_32F};
  const float alpha = 1.0f, beta = 0.0f;
  for (const cudaDataType x_type : x_types) {
    Prepared p;
    p.n = n;
    p.c_ptr = c;
    const void* x = x_type == CUDA_R_16F ? b_f16 : static_cast<const void*>(b_f32);
    cusparseStatus_t s = cusparseCreateCsr(&p.a, d.rows, d.cols, d.nnz, d.row_ptr.p, d.col_idx.p,
                                           half ? d.val16.p : d.val32.p, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                           CUSPARSE_INDEX_BASE_ZERO, half ? CUDA_R_16F : CUDA_R_32F);
    if (s != CUSPARSE_STATUS_SUCCESS) { why = cusparseGetErrorString(s); d.release(p); return false; }
    CUSPARSE_OK(cusparseCreateDnVec(&p.x, d.cols, const_cast<void*>(x), x_type));
    CUSPARSE_OK(cusparseCreateDnVec(&p.y, d.rows, c, CUDA_R_32F));
    std::size_t bytes = 0;
    s = cusparseSpMV_bufferSize(d.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.a, p.x, &beta, p.y, CUDA_R_32F,
                                CUSPARSE_SPMV_ALG_DEFAULT, &bytes);
    if (s == CUSPARSE_STATUS_SUCCESS) {
      p.workspace = DevMem(bytes);
      // One trial run: some type combinations are only rejected here.
      s = cusparseSpMV(d.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.a, p.x, &beta, p.y, CUDA_R_32F,
                       CUSPARSE_SPMV_ALG_DEFAULT, p.workspace.p);
    }
    if (s != CUSPARSE_STATUS_SUCCESS) {
      why = std::string("SpMV: ") + cusparseGetErrorString(s);
      d.release(p);
      continue;
    }
    d.prepared.emplace(m, std::move(p));
    return true;
  }
  return false;
}

void Baselines::run(Baseline m, cudaStream_t stream) {
  Impl& d = *impl_;
  Prepared& p = d.prepared.at(m);
  const float alpha = 1.0f, beta = 0.0f;
  if (m == Baseline::cublas_dense) {
    // Row-major C = A B is column-major C^T = B^T A^T: the row-major arrays read as their transposes.
    cublasSetStream(d.blas, stream);
    const cublasStatus_t s = cublasGemmEx(d.blas, CUBLAS_OP_N, CUBLAS_OP_N, p.n, d.rows, d.cols, &alpha, p.b_ptr,
                                          CUDA_R_16F, p.n, d.dense16.p, CUDA_R_16F, d.cols, &beta, p.c_ptr, CUDA_R_32F,
                                          p.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) throw CudaError("cublasGemmEx failed with status " + std::to_string(int(s)));
    return;
  }
  CUSPARSE_OK(cusparseSetStream(d.sp, stream));
  if (p.x != nullptr) {
    CUSPARSE_OK(cusparseSpMV(d.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.a, p.x, &beta, p.y, CUDA_R_32F,
                             CUSPARSE_SPMV_ALG_DEFAULT, p.workspace.p));
    return;
  }
  CUSPARSE_OK(cusparseSpMM(d.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.a, p.b,
                           &beta, p.c, CUDA_R_32F, p.alg, p.workspace.p));
}

std::vector<double> Baselines::reference(std::int32_t n, const double* b_f64_device) {
  Impl& d = *impl_;
  DevMem c(std::size_t(d.rows) * n * 8);
  cusparseSpMatDescr_t a;
  cusparseDnMatDescr_t b, cd;
  CUSPARSE_OK(cusparseCreateCsr(&a, d.rows, d.cols, d.nnz, d.row_ptr.p, d.col_idx.p, d.val64.p, CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
  CUSPARSE_OK(cusparseCreateDnMat(&b, d.cols, n, n, const_cast<double*>(b_f64_device), CUDA_R_64F, CUSPARSE_ORDER_ROW));
  CUSPARSE_OK(cusparseCreateDnMat(&cd, d.rows, n, n, c.p, CUDA_R_64F, CUSPARSE_ORDER_ROW));
  const double alpha = 1.0, beta = 0.0;
  std::size_t bytes = 0;
  CUSPARSE_OK(cusparseSetStream(d.sp, nullptr));
  CUSPARSE_OK(cusparseSpMM_bufferSize(d.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                      a, b, &beta, cd, CUDA_R_64F, CUSPARSE_SPMM_ALG_DEFAULT, &bytes));
  DevMem ws(bytes);
  CUSPARSE_OK(cusparseSpMM(d.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, b, &beta,
                           cd, CUDA_R_64F, CUSPARSE_SPMM_ALG_DEFAULT, ws.p));
  std::vector<double> out(std::size_t(d.rows) * n);
  CUDA_OK(cudaMemcpy(out.data(), c.p, out.size() * 8, cudaMemcpyDeviceToHost));
  cusparseDestroySpMat(a);
  cusparseDestroyDnMat(b);
  cusparseDestroyDnMat(cd);
  return out;
}

}  // namespace bcsr24::bench
