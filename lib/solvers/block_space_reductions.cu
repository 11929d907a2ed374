// The block space's reductions: the Gram matrices of blocks and the fused per-column sums (dots, the PCG steps,
// the Lanczos orthogonalisation), each two passes, partial sums per thread block added in a fixed order by
// sum_partials.
#include <algorithm>

#include "bcsr24/error.hpp"
#include "block_space_kernels.hpp"
#include "block_space_shared.cuh"
#include "kernels/ptx_sm80.cuh"  // the library's cp.async wrappers
#include "launch_support.cuh"

namespace bcsr24::solver::block_gpu {

namespace {

namespace ptx = kernels::ptx;
using launch::check_launch;
using launch::grid_for;
using launch::kThreads;
using shared::kTile;
using shared::launch_sum_partials;
using shared::load_tile_row;
using shared::ReductionOutputs;
/// Doubles a thread's tile of sums takes in the Gram kernel's shared memory (padded by one: conflict-free).
constexpr int kTilePitch = kTile * kTile + 1;
/// Threads of the second pass of a reduction: 32 outputs per thread block, its warps add interleaved partials.
constexpr int kFinalThreads = 1024;
constexpr int kFinalWarps = kFinalThreads / 32;

struct GramRights {
  const double* block[kGramRights] = {};
  int count = 0;
};
static_assert(small::kMaxColumns <= kThreads, "the fused column reductions give each column at least one thread");

/// Blocks of a reduction's first pass over n rows with at least `rows_per_unit` rows each.
int reduction_grid(std::int32_t n, int rows_per_unit) {
  return static_cast<int>(std::clamp<std::int64_t>((std::int64_t(n) + rows_per_unit - 1) / rows_per_unit, 1,
                                                   kReductionBlocks));
}

std::int32_t rows_per_block(std::int32_t n, int blocks) {
  return std::max<std::int32_t>(1, static_cast<std::int32_t>((std::int64_t(n) + blocks - 1) / blocks));
}

/// Doubles of one stage of the Gram kernel's shared memory (24 KiB): a chunk of rows of the left and right blocks,
/// copied with cp.async while the previous chunk is multiplied. Two stages; the group sums reuse them at the end.
constexpr int kGramStageDoubles = 3072;
constexpr int kGramStages = 2;
constexpr std::size_t kGramSharedBytes = kGramStages * kGramStageDoubles * sizeof(double);
static_assert(kGramStages * kGramStageDoubles >= kThreads * kTilePitch, "the group sums fit in the stages");

/// Copies `count` doubles from global to shared memory (16-byte pieces where `pairs`: both ends 16-byte aligned).
__device__ __forceinline__ void copy_rows_async(double* shared, const double* global, int count, bool pairs) {
  if (pairs) {
    for (int e = 2 * static_cast<int>(threadIdx.x); e < count; e += 2 * kThreads)
      ptx::cp_async_16(ptx::smem_addr(shared + e), global + e, 16);
  } else {
    for (int e = static_cast<int>(threadIdx.x); e < count; e += kThreads)
      ptx::cp_async_8(ptx::smem_addr(shared + e), global + e);
  }
}

/// Pass 1 of left^T right_r for up to kGramRights right blocks with at most kThreads tiles (the host splits larger
/// ones). The outputs are split into kTile x kTile tiles, one per thread, which keeps its 16 sums in registers and
/// reads 2 kTile values per row (against 2 reads per product when a thread owns one output). The threads left over
/// split the rows into `groups` interleaved sets, whose sums are added in group order through shared memory at the
/// end. Rows arrive in chunks copied asynchronously into shared memory, one chunk ahead of the arithmetic: the copies
/// in flight do not depend on how many threads an SM holds. A right block equal to the left one is not copied again.
/// Output o = a + b k + r k^2 (column-major per right block).
__global__ void __launch_bounds__(kThreads) gram_partial(const double* left, GramRights rights, std::int32_t n, int k,
                                                         std::int32_t rows_per_block, double* partial) {
  extern __shared__ __align__(16) double gram_shared[];
  const int side = (k + kTile - 1) / kTile;
  const int per_right = side * side;
  const int tiles = rights.count * per_right;
  const int kk = k * k;
  const int groups = kThreads / tiles;
  const int local = static_cast<int>(threadIdx.x) % tiles;
  const int group = static_cast<int>(threadIdx.x) / tiles;
  const int r = local / per_right, within = local % per_right;
  const int a0 = kTile * (within % side), b0 = kTile * (within / side);
  // Shared layout of a stage: left rows, then right block 0's, then right block 1's (chunk_rows x k each).
  const int streams = 1 + rights.count;
  const int chunk_rows = kGramStageDoubles / (streams * k);
  const int chunk_doubles = chunk_rows * k;
  const bool right0_is_left = rights.block[0] == left;
  const bool right1_is_left = rights.count > 1 && rights.block[kGramRights - 1] == left;
  const bool my_right_is_left = r == 0 ? right0_is_left : right1_is_left;
  const int right_offset = my_right_is_left ? 0 : (1 + r) * chunk_doubles;
  const bool pairs = (k & 1) == 0;  // then every chunk starts and ends 16-byte aligned
  const std::int64_t begin = std::int64_t(blockIdx.x) * rows_per_block;
  const std::int64_t end = min(std::int64_t(n), begin + rows_per_block);
  const int chunks = begin < end ? static_cast<int>((end - begin + chunk_rows - 1) / chunk_rows) : 0;
  const auto issue = [&](int c) {
    const std::int64_t first = begin + std::int64_t(c) * chunk_rows;
    const int count = static_cast<int>(min(std::int64_t(chunk_rows), end - first)) * k;
    double* stage = gram_shared + (c % kGramStages) * kGramStageDoubles;
    copy_rows_async(stage, left + first * k, count, pairs);
    if (!right0_is_left) copy_rows_async(stage + chunk_doubles, rights.block[0] + first * k, count, pairs);
    if (rights.count > 1 && !right1_is_left)
      copy_rows_async(stage + 2 * chunk_doubles, rights.block[kGramRights - 1] + first * k, count, pairs);
  };
  double acc[kTile * kTile];
#pragma unroll
  for (int i = 0; i < kTile * kTile; ++i) acc[i] = 0.0;
  if (chunks > 0) issue(0);
  ptx::cp_async_commit();
  for (int c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) issue(c + 1);
    ptx::cp_async_commit();
    ptx::cp_async_wait<1>();  // the chunk issued one step earlier has landed
    __syncthreads();
    const double* stage = gram_shared + (c % kGramStages) * kGramStageDoubles;
    const int rows = static_cast<int>(min(std::int64_t(chunk_rows), end - (begin + std::int64_t(c) * chunk_rows)));
    if (group < groups) {
      for (int row = group; row < rows; row += groups) {
        double la[kTile], rb[kTile];
        load_tile_row(stage + row * k, a0, k, la);
        load_tile_row(stage + right_offset + row * k, b0, k, rb);
#pragma unroll
        for (int i = 0; i < kTile; ++i)
#pragma unroll
          for (int j = 0; j < kTile; ++j) acc[i * kTile + j] += la[i] * rb[j];
      }
    }
    __syncthreads();
  }
  // The groups' sums, added in group order (the stages are free now).
  double* group_sums = gram_shared;
  if (groups > 1) {
#pragma unroll
    for (int i = 0; i < kTile * kTile; ++i) group_sums[threadIdx.x * kTilePitch + i] = acc[i];
    __syncthreads();
    if (static_cast<int>(threadIdx.x) < tiles) {
#pragma unroll
      for (int i = 0; i < kTile * kTile; ++i) {
        double sum = 0.0;
        for (int g = 0; g < groups; ++g) sum += group_sums[(g * tiles + local) * kTilePitch + i];
        acc[i] = sum;
      }
    }
  }
  if (static_cast<int>(threadIdx.x) < tiles) {
    double* out = partial + std::int64_t(blockIdx.x) * rights.count * kk;
#pragma unroll
    for (int i = 0; i < kTile; ++i)
#pragma unroll
      for (int j = 0; j < kTile; ++j)
        if (a0 + i < k && b0 + j < k) out[r * kk + (a0 + i) + (b0 + j) * k] = acc[i * kTile + j];
  }
}

/// Pass 2 of every reduction: out[o] = the sum over b < blocks of partial[b * outputs + o], in a fixed order (warp w
/// adds blocks w, w + kFinalWarps, ...; then the warps' sums in warp order), 32 outputs per thread block.
__global__ void __launch_bounds__(kFinalThreads) sum_partials(int blocks, int outputs, const double* partial,
                                                              ReductionOutputs out) {
  __shared__ double sums[kFinalWarps][32];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int o = static_cast<int>(blockIdx.x) * 32 + lane;
  double total = 0.0;
  if (o < outputs)
    for (int b = warp; b < blocks; b += kFinalWarps) total += partial[std::int64_t(b) * outputs + o];
  sums[warp][lane] = total;
  __syncthreads();
  if (warp == 0 && o < outputs) {
    double sum = 0.0;
    for (int w = 0; w < kFinalWarps; ++w) sum += sums[w][lane];
    (o / out.per_out == 0 ? out.out[0] : out.out[kGramRights - 1])[o % out.per_out] = sum;
  }
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
      partial[(std::int64_t(blockIdx.x) * Sums + s) * k + threadIdx.x] = total;
    }
  }
}

template <int Sums, class Op>
void column_sums(const Op& op, std::int32_t n, int k, double* workspace, double* out0, double* out1,
                 cudaStream_t stream, const char* name) {
  const int blocks = reduction_grid(n, kThreads / k);
  column_sums_partial<Sums><<<blocks, kThreads, 0, stream>>>(op, n, k, rows_per_block(n, blocks), workspace);
  check_launch(name);
  ReductionOutputs outputs;
  outputs.out[0] = out0;
  outputs.out[1] = out1;
  outputs.per_out = k;
  launch_sum_partials(blocks, Sums * k, workspace, outputs, stream, name);
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

/// Lanczos: w = w - alpha_c v - beta_c previous (no third term without beta), stored in fp32, with the column sums
/// of the stored w squared (its norms for the next beta) in the same pass. Columns c >= k of w are products of zero
/// columns and stay zero.
struct LanczosOrthogonalizeOp {
  float* w;
  const float* v;
  const float* previous;
  const double* alpha;
  const double* beta;
  int kp;
  __device__ void operator()(std::int64_t row, int column, double* acc) const {
    const std::int64_t e = row * kp + column;
    double value = double(w[e]) - alpha[column] * double(v[e]);
    if (beta) value -= beta[column] * double(previous[e]);
    const float stored = static_cast<float>(value);
    w[e] = stored;
    acc[0] += double(stored) * double(stored);
  }
};

__global__ void pcg_direction_kernel(double* p, const double* r, const double* d, const double* beta,
                                     std::int64_t count, int k) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x)
    p[e] = r[e] * d[e / k] + beta[e % k] * p[e];
}

}  // namespace

namespace shared {

void launch_sum_partials(int blocks, int outputs, const double* partial, const ReductionOutputs& out,
                         cudaStream_t stream, const char* name) {
  sum_partials<<<(outputs + 31) / 32, kFinalThreads, 0, stream>>>(blocks, outputs, partial, out);
  check_launch(name);
}

}  // namespace shared

std::int64_t reduction_workspace(int k) {
  return std::int64_t(kReductionBlocks) * std::max<std::int64_t>(std::int64_t(kGramRights) * k * k, 2 * k);
}

void gram(const double* left, const double* const* rights, double* const* outs, int count, std::int32_t n, int k,
          double* workspace, cudaStream_t stream) {
  if (k < 1 || k > small::kMaxColumns) throw InvalidArgument("block gram: k outside 1 .. 64");
  if (count < 1 || count > kGramRights) throw InvalidArgument("block gram: 1 or 2 right blocks per launch");
  GramRights r;
  ReductionOutputs o;
  for (int i = 0; i < count; ++i) {
    r.block[i] = rights[i];
    o.out[i] = outs[i];
  }
  r.count = count;
  o.per_out = k * k;
  const int side = (k + kTile - 1) / kTile;
  if (count * side * side > kThreads) {
    // More tiles than threads (k > 32 with two right blocks): one launch per right block.
    for (int i = 0; i < count; ++i) gram(left, rights + i, outs + i, 1, n, k, workspace, stream);
    return;
  }
  // Enough rows per thread block that each group of threads reads several rows of every chunk.
  const int blocks = reduction_grid(n, 8 * kTile);
  gram_partial<<<blocks, kThreads, kGramSharedBytes, stream>>>(left, r, n, k, rows_per_block(n, blocks), workspace);
  check_launch("gram_partial");
  launch_sum_partials(blocks, count * k * k, workspace, o, stream, "gram");
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

void lanczos_orthogonalize(float* w, const float* v, const float* previous, const double* alpha, const double* beta,
                           double* w_norm2, std::int32_t n, int k, int kp, double* workspace, cudaStream_t stream) {
  column_sums<1>(LanczosOrthogonalizeOp{w, v, previous, alpha, beta, kp}, n, k, workspace, w_norm2, w_norm2, stream,
                 "lanczos_orthogonalize");
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
