// Small CUDA kernels of the solver's GPU space: column dot products, per-column updates of n x k fp64
// blocks, and the conversions fp64 <-> fp32 (inner solve) and fp32 -> fp16 (bcsr24's B). Row-major blocks.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace bcsr24::solver::gpu {

/// Most (x, y) pairs one column_dots launch handles, and most terms of one combine.
inline constexpr int kMaxDotPairs = 24;
inline constexpr int kMaxCombineTerms = 24;
/// Blocks of the first pass of column_dots: partial sums per block, reduced by a second kernel in a fixed
/// order, so results are deterministic.
inline constexpr int kDotBlocks = 264;

struct DotBatch {
  const double* x[kMaxDotPairs];
  const double* y[kMaxDotPairs];
  int count = 0;
};

/// out[pair * k + j] = sum_i x_pair[i * k + j] * y_pair[i * k + j] (contiguous n x k blocks).
/// partial: device workspace of kDotBlocks * kMaxDotPairs * k doubles.
void column_dots(const DotBatch& batch, std::int32_t n, int k, double* partial, double* out, cudaStream_t stream);

struct CombineTerms {
  const double* p[kMaxCombineTerms];
  int count = 0;
};
/// dst[i, j] = z[i, j] - sum_t coef[t * k + j] * p_t[i, j]; coef on the device.
void combine(double* dst, const double* z, const CombineTerms& terms, const double* coef, std::int32_t n, int k,
             cudaStream_t stream);

/// x[:, j] += alpha_j p[:, j]; r[:, j] -= alpha_j q[:, j]; alpha on the device.
void update_solution(double* x, const double* p, double* r, const double* q, const double* alpha, std::int32_t n, int k,
                     cudaStream_t stream);

/// out[i * ld_out + j] = float(in[i * k + j] * row_scale[i] * column_scale[j]) for j < k (row_scale may be null).
void fp64_to_fp32(const double* in, const double* row_scale, const double* column_scale, float* out,
                  std::int64_t ld_out, std::int32_t n, int k, cudaStream_t stream);

/// out[i * k + j] = double(in[i * ld_in + j]) * row_scale[i] * column_scale[j] (row_scale may be null).
void fp32_to_fp64(const float* in, std::int64_t ld_in, const double* row_scale, const double* column_scale,
                  double* out, std::int32_t n, int k, cudaStream_t stream);

/// out[i, j] = in[i, j] * row_scale[i] * column_scale[j] for contiguous n x k fp64 blocks.
void scale_fp64(const double* in, const double* row_scale, const double* column_scale, double* out, std::int32_t n,
                int k, cudaStream_t stream);

}  // namespace bcsr24::solver::gpu
