// Kernels of the GPU block space. Element-wise kernels compute in double and round once (as the CPU space does);
// reductions are two passes, partial sums per thread block added in block order.
#include "block_space_kernels.hpp"

#include <algorithm>
#include <string>

#include "bcsr24/error.hpp"
#include "launch_support.cuh"

namespace bcsr24::solver::block_gpu {

namespace {

using launch::check_launch;
using launch::grid_for;
using launch::kThreads;
/// Rows of the blocks a Gram thread block stages in shared memory at a time (3 x 16 x 64 doubles = 24 KiB).
constexpr int kGramRows = 16;
constexpr int kGramOutputsPerThread = kGramRights * small::kMaxColumns * small::kMaxColumns / kThreads;
static_assert(small::kMaxColumns * small::kMaxColumns % kThreads == 0, "Gram outputs split evenly over the threads");

struct GramRights {
  const double* block[kGramRights] = {};
  int count = 0;
};
struct GramOutputs {
  double* matrix[kGramRights] = {};
};
static_assert(small::kMaxColumns <= kThreads, "the fused column reductions give each column at least one thread");
static_assert(small::kTeamThreads >= small::kMaxColumns, "small steps run one lane per column");

/// Blocks of a reduction's first pass over n rows with at least `rows_per_unit` rows each.
int reduction_grid(std::int32_t n, int rows_per_unit) {
  return static_cast<int>(std::clamp<std::int64_t>((std::int64_t(n) + rows_per_unit - 1) / rows_per_unit, 1,
                                                   kReductionBlocks));
}

std::int32_t rows_per_block(std::int32_t n, int blocks) {
  return std::max<std::int32_t>(1, static_cast<std::int32_t>((std::int64_t(n) + blocks - 1) / blocks));
}

struct GpuTeam {
  __device__ int rank() const { return static_cast<int>(threadIdx.x); }
  __device__ int size() const { return static_cast<int>(blockDim.x); }
  __device__ void sync() const { __syncthreads(); }
};

__global__ void small_step_kernel(double* base, small::SmallLayout layout, small::SmallStep step) {
  small::run_step(GpuTeam{}, base, layout, step);
}

__global__ void fill_kernel(double* dst, std::int64_t count, double value) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x)
    dst[e] = value;
}

/// Pass 1 of left^T right_r for up to kGramRights right blocks: each block stages kGramRows rows of every block at a
/// time (a right block equal to the left one is read once); thread t owns outputs t, t + kThreads, ... (output
/// o = a + b k + r k^2).
__global__ void __launch_bounds__(kThreads) gram_partial(const double* left, GramRights rights, std::int32_t n, int k,
                                                         std::int32_t rows_per_block, double* partial) {
  __shared__ double lt[kGramRows * small::kMaxColumns];
  __shared__ double rt[kGramRights][kGramRows * small::kMaxColumns];
  const int kk = k * k;
  const int outputs = rights.count * kk;
  const double* right_tile[kGramRights];
  for (int r = 0; r < kGramRights; ++r) right_tile[r] = r < rights.count && rights.block[r] == left ? lt : rt[r];
  double acc[kGramOutputsPerThread];
#pragma unroll
  for (int s = 0; s < kGramOutputsPerThread; ++s) acc[s] = 0.0;
  const std::int64_t begin = std::int64_t(blockIdx.x) * rows_per_block;
  const std::int64_t end = min(std::int64_t(n), begin + rows_per_block);
  for (std::int64_t chunk = begin; chunk < end; chunk += kGramRows) {
    const int rows = static_cast<int>(min(std::int64_t(kGramRows), end - chunk));
    for (int e = threadIdx.x; e < rows * k; e += kThreads) {
      lt[e] = left[chunk * k + e];
      for (int r = 0; r < rights.count; ++r)
        if (rights.block[r] != left) rt[r][e] = rights.block[r][chunk * k + e];
    }
    __syncthreads();
#pragma unroll
    for (int s = 0; s < kGramOutputsPerThread; ++s) {
      const int o = threadIdx.x + s * kThreads;
      if (o < outputs) {
        const int r = o / kk, within = o % kk;
        const int a = within % k, b = within / k;
        const double* right = right_tile[r];
        double sum = 0.0;
        for (int row = 0; row < rows; ++row) sum += lt[row * k + a] * right[row * k + b];
        acc[s] += sum;
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int s = 0; s < kGramOutputsPerThread; ++s) {
    const int o = threadIdx.x + s * kThreads;
    if (o < outputs) partial[std::int64_t(blockIdx.x) * outputs + o] = acc[s];
  }
}

__global__ void gram_final(int blocks, int kk, int outputs, const double* partial, GramOutputs out) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= outputs) return;
  double total = 0.0;
  for (int b = 0; b < blocks; ++b) total += partial[std::int64_t(b) * outputs + o];
  out.matrix[o / kk][o % kk] = total;
}

/// Pass 1 of up to two per-column sums over rows, with an element-wise operation on the way: thread t handles
/// column t % k of rows t / k, t / k + kThreads / k, ... of the block's range (a warp reads consecutive elements).
template <int Sums, class Op>
__global__ void __launch_bounds__(kThreads) column_sums_partial(Op op, std::int32_t n, int k,
                                                                std::int32_t rows_per_block, double* partial) {
  __shared__ double sums[Sums][kThreads];
  const int column = threadIdx.x % k;
  const int rows_per_step = kThreads / k;
  const int row_offset = threadIdx.x / k;
  double acc[Sums];
#pragma unroll
  for (int s = 0; s < Sums; ++s) acc[s] = 0.0;
  if (row_offset < rows_per_step) {
    const std::int64_t begin = std::int64_t(blockIdx.x) * rows_per_block;
    const std::int64_t end = min(std::int64_t(n), begin + rows_per_block);
    for (std::int64_t row = begin + row_offset; row < end; row += rows_per_step) op(row, column, acc);
  }
#pragma unroll
  for (int s = 0; s < Sums; ++s) sums[s][threadIdx.x] = acc[s];
  __syncthreads();
  if (threadIdx.x < k) {
#pragma unroll
    for (int s = 0; s < Sums; ++s) {
      double total = 0.0;
      for (int r = 0; r < rows_per_step; ++r) total += sums[s][r * k + threadIdx.x];
      partial[(std::int64_t(s) * gridDim.x + blockIdx.x) * k + threadIdx.x] = total;
    }
  }
}

template <int Sums>
__global__ void column_sums_final(int blocks, int k, const double* partial, double* out0, double* out1) {
  const int index = blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= Sums * k) return;
  const int s = index / k, column = index % k;
  double total = 0.0;
  for (int b = 0; b < blocks; ++b) total += partial[(std::int64_t(s) * blocks + b) * k + column];
  (s == 0 ? out0 : out1)[column] = total;
}

template <int Sums, class Op>
void column_sums(const Op& op, std::int32_t n, int k, double* workspace, double* out0, double* out1,
                 cudaStream_t stream, const char* name) {
  const int blocks = reduction_grid(n, kThreads / k);
  column_sums_partial<Sums><<<blocks, kThreads, 0, stream>>>(op, n, k, rows_per_block(n, blocks), workspace);
  check_launch(name);
  column_sums_final<Sums><<<(Sums * k + kThreads - 1) / kThreads, kThreads, 0, stream>>>(blocks, k, workspace, out0,
                                                                                         out1);
  check_launch(name);
}

template <typename T>
struct DotsOp {
  const T* x;
  const T* y;
  std::int64_t ld;
  __device__ void operator()(std::int64_t row, int column, double* acc) const {
    acc[0] += double(x[row * ld + column]) * double(y[row * ld + column]);
  }
};

struct PcgFirstOp {
  double* p;
  const double* r;
  const double* d;
  int k;
  __device__ void operator()(std::int64_t row, int column, double* acc) const {
    const std::int64_t e = row * k + column;
    const double z = r[e] * d[row];
    p[e] = z;
    acc[0] += r[e] * z;
  }
};

struct PcgUpdateOp {
  double* x;
  const double* p;
  double* r;
  const double* q;
  const double* alpha;
  const double* d;
  int k;
  __device__ void operator()(std::int64_t row, int column, double* acc) const {
    const std::int64_t e = row * k + column;
    const double a = alpha[column];
    x[e] += a * p[e];
    const double v = r[e] - a * q[e];
    r[e] = v;
    acc[0] += v * v * d[row];
    acc[1] += v * v;
  }
};

__global__ void pcg_direction_kernel(double* p, const double* r, const double* d, const double* beta,
                                     std::int64_t count, int k) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x)
    p[e] = r[e] * d[e / k] + beta[e % k] * p[e];
}

__global__ void combine_kernel(double* dst, CombineArgs args, bool accumulate, std::int64_t count, int k) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = e / k;
    const int column = static_cast<int>(e % k);
    double v = accumulate ? dst[e] : 0.0;
    for (int t = 0; t < args.count; ++t) {
      const double* s = args.source[t] + row * k;
      const double* m = args.matrix[t] + std::int64_t(column) * k;
      double sum = 0.0;
      for (int l = 0; l < k; ++l) sum += s[l] * m[l];
      v += args.factor[t] * sum;
    }
    dst[e] = v;
  }
}

__global__ void chebyshev_start_kernel(const double* r, const double* row_scale, const double* scale, double theta,
                                       float* f, float* z1, std::int64_t count, int k, int kp) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = e / kp;
    const int column = static_cast<int>(e % kp);
    const float v =
        column < k ? static_cast<float>((row_scale ? row_scale[row] : 1.0) * r[row * k + column] * scale[column]) : 0.0f;
    f[e] = v;
    z1[e] = static_cast<float>(double(v) / theta);
  }
}

__global__ void chebyshev_update_kernel(float* previous, const float* current, const float* f, double omega,
                                        double theta, std::int64_t count) {
  const double g = omega / theta;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x)
    previous[e] = static_cast<float>(double(previous[e]) + omega * double(current[e]) + g * double(f[e]));
}

__global__ void chebyshev_finish_kernel(const float* current, const double* row_scale, const double* scale, double* z,
                                        std::int64_t count, int k, int kp) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = e / k;
    const int column = static_cast<int>(e % k);
    const double s = scale[column];
    z[e] = s != 0.0 ? double(current[row * kp + column]) * (row_scale ? row_scale[row] : 1.0) / s : 0.0;
  }
}

__global__ void jacobi_kernel(const double* r, const double* d, const double* active, double* z, std::int64_t count,
                              int k) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x)
    z[e] = active[e % k] != 0.0 ? r[e] * d[e / k] : 0.0;
}

__global__ void lanczos_fill_kernel(float* v, std::int64_t count, int k, int kp, std::uint64_t seed) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const int column = static_cast<int>(e % kp);
    v[e] = column < k ? small::lanczos_start(e / kp, column, seed) : 0.0f;
  }
}

__global__ void lanczos_scale_kernel(float* v, const double* inverse_beta, std::int64_t count, int k, int kp) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const int column = static_cast<int>(e % kp);
    v[e] = column < k ? static_cast<float>(double(v[e]) * inverse_beta[column]) : 0.0f;
  }
}

__global__ void lanczos_orthogonalize_kernel(float* w, const float* v, const float* previous, const double* alpha,
                                             const double* beta, std::int64_t count, int k, int kp) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const int column = static_cast<int>(e % kp);
    if (column >= k) {
      w[e] = 0.0f;
      continue;
    }
    double value = double(w[e]) - alpha[column] * double(v[e]);
    if (beta) value -= beta[column] * double(previous[e]);
    w[e] = static_cast<float>(value);
  }
}

}  // namespace

std::int64_t reduction_workspace(int k) {
  return std::int64_t(kReductionBlocks) * std::max<std::int64_t>(std::int64_t(kGramRights) * k * k, 2 * k);
}

void gram(const double* left, const double* const* rights, double* const* outs, int count, std::int32_t n, int k,
          double* workspace, cudaStream_t stream) {
  if (k < 1 || k > small::kMaxColumns) throw InvalidArgument("block gram: k outside 1 .. 64");
  if (count < 1 || count > kGramRights) throw InvalidArgument("block gram: 1 or 2 right blocks per launch");
  GramRights r;
  GramOutputs o;
  for (int i = 0; i < count; ++i) {
    r.block[i] = rights[i];
    o.matrix[i] = outs[i];
  }
  r.count = count;
  const int blocks = reduction_grid(n, kGramRows);
  gram_partial<<<blocks, kThreads, 0, stream>>>(left, r, n, k, rows_per_block(n, blocks), workspace);
  check_launch("gram_partial");
  const int outputs = count * k * k;
  gram_final<<<(outputs + kThreads - 1) / kThreads, kThreads, 0, stream>>>(blocks, k * k, outputs, workspace, o);
  check_launch("gram_final");
}

template <typename T>
void column_dots(const T* x, const T* y, std::int32_t n, int k, std::int64_t ld, double* workspace, double* out,
                 cudaStream_t stream) {
  column_sums<1>(DotsOp<T>{x, y, ld}, n, k, workspace, out, out, stream, "column_dots");
}
template void column_dots<double>(const double*, const double*, std::int32_t, int, std::int64_t, double*, double*,
                                  cudaStream_t);
template void column_dots<float>(const float*, const float*, std::int32_t, int, std::int64_t, double*, double*,
                                 cudaStream_t);

void combine(double* dst, const CombineArgs& args, bool accumulate, std::int32_t n, int k, cudaStream_t stream) {
  if (args.count < 0 || args.count > kMaxTerms) throw InvalidArgument("block combine: too many terms");
  const std::int64_t count = std::int64_t(n) * k;
  combine_kernel<<<grid_for(count), kThreads, 0, stream>>>(dst, args, accumulate, count, k);
  check_launch("combine_kernel");
}

void small_step(double* base, const small::SmallLayout& layout, const small::SmallStep& step, cudaStream_t stream) {
  small_step_kernel<<<1, small::kTeamThreads, 0, stream>>>(base, layout, step);
  check_launch("small_step_kernel");
}

void fill(double* dst, std::int64_t count, double value, cudaStream_t stream) {
  fill_kernel<<<grid_for(count), kThreads, 0, stream>>>(dst, count, value);
  check_launch("fill_kernel");
}

void chebyshev_start(const double* r, const double* row_scale, const double* scale, double theta, float* f, float* z1,
                     std::int32_t n, int k, int kp, cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * kp;
  chebyshev_start_kernel<<<grid_for(count), kThreads, 0, stream>>>(r, row_scale, scale, theta, f, z1, count, k, kp);
  check_launch("chebyshev_start_kernel");
}

void chebyshev_update(float* previous, const float* current, const float* f, double omega, double theta,
                      std::int64_t count, cudaStream_t stream) {
  chebyshev_update_kernel<<<grid_for(count), kThreads, 0, stream>>>(previous, current, f, omega, theta, count);
  check_launch("chebyshev_update_kernel");
}

void chebyshev_finish(const float* current, const double* row_scale, const double* scale, double* z, std::int32_t n,
                      int k, int kp, cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * k;
  chebyshev_finish_kernel<<<grid_for(count), kThreads, 0, stream>>>(current, row_scale, scale, z, count, k, kp);
  check_launch("chebyshev_finish_kernel");
}

void jacobi(const double* r, const double* inverse_diagonal, const double* active, double* z, std::int32_t n, int k,
            cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * k;
  jacobi_kernel<<<grid_for(count), kThreads, 0, stream>>>(r, inverse_diagonal, active, z, count, k);
  check_launch("jacobi_kernel");
}

void lanczos_fill(float* v, std::int32_t n, int k, int kp, std::uint64_t seed, cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * kp;
  lanczos_fill_kernel<<<grid_for(count), kThreads, 0, stream>>>(v, count, k, kp, seed);
  check_launch("lanczos_fill_kernel");
}

void lanczos_scale(float* v, const double* inverse_beta, std::int32_t n, int k, int kp, cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * kp;
  lanczos_scale_kernel<<<grid_for(count), kThreads, 0, stream>>>(v, inverse_beta, count, k, kp);
  check_launch("lanczos_scale_kernel");
}

void lanczos_orthogonalize(float* w, const float* v, const float* previous, const double* alpha, const double* beta,
                           std::int32_t n, int k, int kp, cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * kp;
  lanczos_orthogonalize_kernel<<<grid_for(count), kThreads, 0, stream>>>(w, v, previous, alpha, beta, count, k, kp);
  check_launch("lanczos_orthogonalize_kernel");
}

void pcg_direction(double* p, const double* r, const double* inverse_diagonal, const double* beta, bool first,
                   double* rho, std::int32_t n, int k, double* workspace, cudaStream_t stream) {
  if (first) {
    column_sums<1>(PcgFirstOp{p, r, inverse_diagonal, k}, n, k, workspace, rho, rho, stream, "pcg_direction");
    return;
  }
  const std::int64_t count = std::int64_t(n) * k;
  pcg_direction_kernel<<<grid_for(count), kThreads, 0, stream>>>(p, r, inverse_diagonal, beta, count, k);
  check_launch("pcg_direction_kernel");
}

void pcg_update(double* x, const double* p, double* r, const double* q, const double* alpha,
                const double* inverse_diagonal, double* rho_next, double* r_norm2, std::int32_t n, int k,
                double* workspace, cudaStream_t stream) {
  column_sums<2>(PcgUpdateOp{x, p, r, q, alpha, inverse_diagonal, k}, n, k, workspace, rho_next, r_norm2, stream,
                 "pcg_update");
}

}  // namespace bcsr24::solver::block_gpu
