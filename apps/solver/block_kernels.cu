// Element-wise and reduction kernels on row-major n x k blocks for the solver's GPU space.
#include "block_kernels.hpp"

#include <algorithm>
#include <string>

#include <cuda_fp16.h>

#include "bcsr24/error.hpp"
#include "launch_support.cuh"

namespace bcsr24::solver::gpu {

namespace {

using launch::check_launch;
using launch::grid_for;
using launch::kThreads;

/// Pass 1: block b of pair p sums rows [b * rows_per_block, ...) of each column. Threads are laid out
/// column-fastest so that a warp reads consecutive elements of a row (coalesced).
__global__ void column_dots_partial(DotBatch batch, std::int32_t n, int k, std::int32_t rows_per_block,
                                    double* partial) {
  __shared__ double sums[kThreads];
  const int pair = blockIdx.y;
  const double* x = batch.x[pair];
  const double* y = batch.y[pair];
  const std::int64_t row_begin = std::int64_t(blockIdx.x) * rows_per_block;
  const std::int64_t row_end = min(std::int64_t(n), row_begin + rows_per_block);
  for (int group = 0; group < k; group += kThreads) {
    const int columns = min(kThreads, k - group);
    const int rows_per_step = kThreads / columns;
    const int column = threadIdx.x % columns;
    const int row_offset = threadIdx.x / columns;
    double sum = 0.0;
    if (row_offset < rows_per_step)
      for (std::int64_t row = row_begin + row_offset; row < row_end; row += rows_per_step) {
        const std::int64_t e = row * k + group + column;
        sum += x[e] * y[e];
      }
    sums[threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.x < columns) {
      double total = 0.0;
      for (int r = 0; r < rows_per_step; ++r) total += sums[r * columns + threadIdx.x];
      partial[(std::int64_t(pair) * gridDim.x + blockIdx.x) * k + group + threadIdx.x] = total;
    }
    __syncthreads();
  }
}

/// Pass 2: one thread per (pair, column) adds the block partials in block order.
__global__ void column_dots_final(int blocks, int k, int pairs, const double* partial, double* out) {
  const int index = blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= pairs * k) return;
  const int pair = index / k, column = index % k;
  double total = 0.0;
  for (int b = 0; b < blocks; ++b) total += partial[(std::int64_t(pair) * blocks + b) * k + column];
  out[index] = total;
}

__global__ void combine_kernel(double* dst, const double* z, CombineTerms terms, const double* coef,
                               std::int64_t count, int k) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const int column = static_cast<int>(e % k);
    double v = z[e];
    for (int t = 0; t < terms.count; ++t) v -= coef[t * k + column] * terms.p[t][e];
    dst[e] = v;
  }
}

__global__ void update_kernel(double* x, const double* p, double* r, const double* q, const double* alpha,
                              std::int64_t count, int k) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const double a = alpha[e % k];
    x[e] += a * p[e];
    r[e] -= a * q[e];
  }
}

__global__ void fp64_to_fp32_kernel(const double* in, const double* row_scale, const double* column_scale,
                                    float* out, std::int64_t ld_out, std::int64_t count, int k) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = e / k;
    const int column = static_cast<int>(e % k);
    const double s = column_scale[column] * (row_scale ? row_scale[row] : 1.0);
    out[row * ld_out + column] = static_cast<float>(in[e] * s);
  }
}

__global__ void fp32_to_fp64_kernel(const float* in, std::int64_t ld_in, const double* row_scale,
                                    const double* column_scale, double* out, std::int64_t count, int k) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = e / k;
    const int column = static_cast<int>(e % k);
    const double s = column_scale[column] * (row_scale ? row_scale[row] : 1.0);
    // A skipped column (scale 0) is written as 0 even if the inner block held garbage there.
    out[e] = s == 0.0 ? 0.0 : static_cast<double>(in[row * ld_in + column]) * s;
  }
}

__global__ void scale_fp64_kernel(const double* in, const double* row_scale, const double* column_scale,
                                  double* out, std::int64_t count, int k) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x)
    out[e] = in[e] * row_scale[e / k] * column_scale[e % k];
}

}  // namespace

void column_dots(const DotBatch& batch, std::int32_t n, int k, double* partial, double* out, cudaStream_t stream) {
  if (batch.count < 1 || batch.count > kMaxDotPairs) throw InvalidArgument("column_dots: 1..24 pairs");
  const int blocks = static_cast<int>(std::clamp<std::int64_t>((std::int64_t(n) + 63) / 64, 1, kDotBlocks));
  const std::int32_t rows_per_block = static_cast<std::int32_t>((std::int64_t(n) + blocks - 1) / blocks);
  column_dots_partial<<<dim3(blocks, batch.count), kThreads, 0, stream>>>(batch, n, k, std::max(rows_per_block, 1),
                                                                         partial);
  check_launch("column_dots_partial");
  const int outputs = batch.count * k;
  column_dots_final<<<(outputs + kThreads - 1) / kThreads, kThreads, 0, stream>>>(blocks, k, batch.count, partial,
                                                                                   out);
  check_launch("column_dots_final");
}

void combine(double* dst, const double* z, const CombineTerms& terms, const double* coef, std::int32_t n, int k,
             cudaStream_t stream) {
  if (terms.count < 0 || terms.count > kMaxCombineTerms) throw InvalidArgument("combine: at most 24 terms");
  const std::int64_t count = std::int64_t(n) * k;
  if (count == 0) return;
  combine_kernel<<<grid_for(count), kThreads, 0, stream>>>(dst, z, terms, coef, count, k);
  check_launch("combine_kernel");
}

void update_solution(double* x, const double* p, double* r, const double* q, const double* alpha, std::int32_t n,
                     int k, cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * k;
  if (count == 0) return;
  update_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, p, r, q, alpha, count, k);
  check_launch("update_kernel");
}

void fp64_to_fp32(const double* in, const double* row_scale, const double* column_scale, float* out,
                  std::int64_t ld_out, std::int32_t n, int k, cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * k;
  if (count == 0) return;
  fp64_to_fp32_kernel<<<grid_for(count), kThreads, 0, stream>>>(in, row_scale, column_scale, out, ld_out, count, k);
  check_launch("fp64_to_fp32_kernel");
}

void fp32_to_fp64(const float* in, std::int64_t ld_in, const double* row_scale, const double* column_scale,
                  double* out, std::int32_t n, int k, cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * k;
  if (count == 0) return;
  fp32_to_fp64_kernel<<<grid_for(count), kThreads, 0, stream>>>(in, ld_in, row_scale, column_scale, out, count, k);
  check_launch("fp32_to_fp64_kernel");
}

void scale_fp64(const double* in, const double* row_scale, const double* column_scale, double* out, std::int32_t n,
                int k, cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * k;
  if (count == 0) return;
  scale_fp64_kernel<<<grid_for(count), kThreads, 0, stream>>>(in, row_scale, column_scale, out, count, k);
  check_launch("scale_fp64_kernel");
}

}  // namespace bcsr24::solver::gpu
