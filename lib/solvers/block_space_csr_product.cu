// The block space's sparse product: C = alpha A B + beta D for a CSR matrix A (fp64) and row-major fp64 blocks,
// optionally with the column norms of C in the same pass (a reduction's second pass adds them up).
#include <algorithm>

#include "bcsr24/error.hpp"
#include "block_space_kernels.hpp"
#include "block_space_shared.cuh"
#include "launch_support.cuh"

namespace bcsr24::solver::block_gpu {

namespace {

using launch::check_launch;
using launch::kThreads;
using shared::launch_sum_partials;
using shared::ReductionOutputs;

/// Vec doubles of a row from `at` (16-byte aligned where Vec = 2).
template <int Vec>
__device__ __forceinline__ void load_vec(const double* at, double (&v)[Vec]) {
  if constexpr (Vec == 2) {
    const double2 pair = *reinterpret_cast<const double2*>(at);
    v[0] = pair.x;
    v[1] = pair.y;
  } else {
    v[0] = *at;
  }
}

/// C = alpha A B + beta D (beta = 0: D is not read; D may be C) for a CSR matrix A and row-major n x k fp64 blocks.
/// Lanes consecutive lanes of a warp share a row; lane l holds the column groups l, l + Lanes, ... (PerLane of them)
/// of Vec adjacent columns each (Vec = 2 for even k: one 16-byte load per group and entry). Each row's products are
/// summed in the order of its stored entries, so the result does not vary from run to run. With Norms, the grid is a
/// fixed grid-stride loop and each block also writes the column sums of C squared over its rows to
/// partial[block * k + column] (the residual's norms without a second pass over it).
template <int Lanes, int PerLane, int Vec, bool Norms>
__global__ void __launch_bounds__(kThreads)
    csr_product_kernel(const std::int32_t* __restrict__ row_ptr, const std::int32_t* __restrict__ col_idx,
                       const double* __restrict__ values, const double* __restrict__ b, const double* d, double* c,
                       std::int32_t n, int k, double alpha, double beta, double* partial) {
  const int lane = static_cast<int>(threadIdx.x) % Lanes;
  const std::int64_t stride = std::int64_t(gridDim.x) * (kThreads / Lanes);
  double norm[PerLane][Vec] = {};
  for (std::int64_t row = (std::int64_t(blockIdx.x) * kThreads + threadIdx.x) / Lanes; row < n; row += stride) {
    double acc[PerLane][Vec] = {};
    const std::int32_t end = row_ptr[row + 1];
#pragma unroll 4
    for (std::int32_t e = row_ptr[row]; e < end; ++e) {
      const double a = values[e];
      const double* brow = b + std::int64_t(col_idx[e]) * k;
#pragma unroll
      for (int j = 0; j < PerLane; ++j) {
        const int first = (lane + j * Lanes) * Vec;
        if (first < k) {
          double v[Vec];
          load_vec<Vec>(brow + first, v);
#pragma unroll
          for (int x = 0; x < Vec; ++x) acc[j][x] += a * v[x];
        }
      }
    }
#pragma unroll
    for (int j = 0; j < PerLane; ++j) {
      const int first = (lane + j * Lanes) * Vec;
      if (first < k) {
        const std::int64_t at = row * k + first;
        double value[Vec];
        if (beta == 0.0) {
#pragma unroll
          for (int x = 0; x < Vec; ++x) value[x] = alpha * acc[j][x];
        } else {
          double old[Vec];
          load_vec<Vec>(d + at, old);
#pragma unroll
          for (int x = 0; x < Vec; ++x) value[x] = alpha * acc[j][x] + beta * old[x];
        }
        if constexpr (Vec == 2)
          *reinterpret_cast<double2*>(c + at) = make_double2(value[0], value[1]);
        else
          c[at] = value[0];
        if constexpr (Norms) {
#pragma unroll
          for (int x = 0; x < Vec; ++x) norm[j][x] += value[x] * value[x];
        }
      }
    }
  }
  if constexpr (Norms) {
    // Rows of a block in row-slot order per column, the same order every run.
    __shared__ double sums[PerLane * Vec][kThreads];
#pragma unroll
    for (int j = 0; j < PerLane; ++j)
#pragma unroll
      for (int x = 0; x < Vec; ++x) sums[j * Vec + x][threadIdx.x] = norm[j][x];
    __syncthreads();
    const int column = static_cast<int>(threadIdx.x);
    if (column < k) {
      const int group = column / Vec, x = column % Vec;
      const int j = group / Lanes, owner = group % Lanes;
      double total = 0.0;
      for (int slot = 0; slot < kThreads / Lanes; ++slot) total += sums[j * Vec + x][slot * Lanes + owner];
      partial[std::int64_t(blockIdx.x) * k + column] = total;
    }
  }
}

/// Blocks of the csr_product launch that also sums the norms: a full H100 at 256 threads and 8 blocks per SM, and few
/// enough partial sums for the reduction workspace (kNormBlocks * k <= kReductionBlocks * kGramRights * k * k).
constexpr int kNormBlocks = kGramRights * kReductionBlocks;

template <int Lanes, int PerLane, int Vec>
void launch_csr_product(const CsrArrays& a, const double* b, const double* d, double* c, int k, double alpha,
                        double beta, double* norms, double* workspace, cudaStream_t stream) {
  const std::int64_t rows_per_block = kThreads / Lanes;
  const std::int64_t needed = (a.rows + rows_per_block - 1) / rows_per_block;
  if (!norms) {
    const unsigned blocks = static_cast<unsigned>(std::clamp<std::int64_t>(needed, 1, 1 << 20));
    csr_product_kernel<Lanes, PerLane, Vec, false>
        <<<blocks, kThreads, 0, stream>>>(a.row_ptr, a.col_idx, a.values, b, d, c, a.rows, k, alpha, beta, nullptr);
    check_launch("csr_product_kernel");
    return;
  }
  const int blocks = static_cast<int>(std::clamp<std::int64_t>(needed, 1, kNormBlocks));
  csr_product_kernel<Lanes, PerLane, Vec, true>
      <<<blocks, kThreads, 0, stream>>>(a.row_ptr, a.col_idx, a.values, b, d, c, a.rows, k, alpha, beta, workspace);
  check_launch("csr_product_kernel");
  ReductionOutputs outputs;
  outputs.out[0] = norms;
  outputs.out[1] = norms;
  outputs.per_out = k;
  launch_sum_partials(blocks, k, workspace, outputs, stream, "csr_product");
}

}  // namespace

void csr_product(const CsrArrays& a, const double* b, const double* d, double* c, int k, double alpha, double beta,
                 double* norms, double* workspace, cudaStream_t stream) {
  if (k < 1 || k > small::kMaxColumns) throw InvalidArgument("block csr_product: k outside 1 .. 64");
  if (beta != 0.0 && !d) throw InvalidArgument("block csr_product: beta != 0 needs the block it scales");
  if (norms && !workspace) throw InvalidArgument("block csr_product: the norms need the reduction workspace");
  // Even k: two adjacent columns per lane (16-byte loads and stores), so a warp covers twice the rows.
  const bool pairs = (k % 2) == 0;
  if (pairs && k <= 8)
    launch_csr_product<4, 1, 2>(a, b, d, c, k, alpha, beta, norms, workspace, stream);
  else if (pairs && k <= 16)
    launch_csr_product<8, 1, 2>(a, b, d, c, k, alpha, beta, norms, workspace, stream);
  else if (pairs && k <= 32)
    launch_csr_product<16, 1, 2>(a, b, d, c, k, alpha, beta, norms, workspace, stream);
  else if (pairs)
    launch_csr_product<32, 1, 2>(a, b, d, c, k, alpha, beta, norms, workspace, stream);
  else if (k <= 8)
    launch_csr_product<8, 1, 1>(a, b, d, c, k, alpha, beta, norms, workspace, stream);
  else if (k <= 16)
    launch_csr_product<16, 1, 1>(a, b, d, c, k, alpha, beta, norms, workspace, stream);
  else if (k <= 32)
    launch_csr_product<32, 1, 1>(a, b, d, c, k, alpha, beta, norms, workspace, stream);
  else
    launch_csr_product<32, 2, 1>(a, b, d, c, k, alpha, beta, norms, workspace, stream);
}

}  // namespace bcsr24::solver::block_gpu
