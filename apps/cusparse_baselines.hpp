// cuSPARSE and cuBLAS baselines for the benchmark, each behind one "run" call on prepared device data.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24::bench {

/// Library methods measured next to bcsr24's kernels. The SpMV ones (cusparseSpMV on CSR, n = 1 only) are what a
/// single-vector product is compared with: fp16 A (and x where cuSPARSE takes it) with fp32 y, and all fp32.
enum class Baseline { csr_f16, csr_f32, bsr16_f16, bsr16_f32, cublas_dense, spmv_f16, spmv_f32 };
const char* baseline_name(Baseline b);
std::vector<Baseline> all_baselines();

/// Owns the matrix in every baseline format on the device plus the cuSPARSE/cuBLAS handles.
class Baselines {
 public:
  /// Uploads CSR (fp64, fp32, fp16), BSR 16x16 (fp32, fp16) and, when it fits in `dense_limit_bytes`,
  /// the dense fp16 matrix. Formats that do not fit or fail are marked unavailable with a reason.
  Baselines(const CsrMatrix& a, std::int64_t dense_limit_bytes, std::int64_t bsr_limit_bytes);
  ~Baselines();
  Baselines(const Baselines&) = delete;
  Baselines& operator=(const Baselines&) = delete;

  /// Prepares method `m` for width n (descriptors, workspace). Returns false with `why` if unsupported.
  /// B (both copies) must have round_up(cols, 16) rows with the rows past cols zero, C round_up(rows, 16) rows.
  bool prepare(Baseline m, std::int32_t n, const void* b_f16, const float* b_f32, float* c, std::string& why);
  /// C = A * B with the prepared method (enqueue only).
  void run(Baseline m, cudaStream_t stream);

  /// Float64 reference C = A * B (row-major rows x n) computed with cuSPARSE CSR fp64 on the GPU.
  std::vector<double> reference(std::int32_t n, const double* b_f64_device);

 private:
  bool prepare_spmv(Baseline m, std::int32_t n, const void* b_f16, const float* b_f32, float* c, std::string& why);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bcsr24::bench
