// Kernels of the GPU block space. Element-wise kernels compute in double and round once (as the CPU space does);
// reductions are two passes, partial sums per thread block added in a fixed order by sum_partials.
#include "block_space_kernels.hpp"

#include <algorithm>
#include <string>

#include "bcsr24/error.hpp"
#include "kernels/ptx_sm80.cuh"  // the library's cp.async wrappers
#include "launch_support.cuh"

namespace bcsr24::solver::block_gpu {

namespace {

namespace ptx = kernels::ptx;
using launch::check_launch;
using launch::grid_for;
using launch::kThreads;
/// A Gram thread computes a kTile x kTile tile of one k x k output; a combine thread kTile adjacent columns of a row.
constexpr int kTile = 4;
/// Doubles a thread's tile of sums takes in the Gram kernel's shared memory (padded by one: conflict-free).
constexpr int kTilePitch = kTile * kTile + 1;
/// Threads of the second pass of a reduction: 32 outputs per thread block, its warps add interleaved partials.
constexpr int kFinalThreads = 1024;
constexpr int kFinalWarps = kFinalThreads / 32;
/// Shared memory a combine launch stages its matrices in (the default limit of a thread block).
constexpr int kCombineSharedBytes = 48 * 1024;
/// Rows a combine lane computes at once.
constexpr int kCombineRows = 2;

struct GramRights {
  const double* block[kGramRights] = {};
  int count = 0;
};
/// Where a reduction's outputs go: output o to out[o / per_out][o % per_out].
struct ReductionOutputs {
  double* out[kGramRights] = {};
  int per_out = 1;
};
static_assert(small::kMaxColumns <= kThreads, "the fused column reductions give each column at least one thread");
static_assert(small::kTeamThreads >= small::kMaxColumns, "small steps run one lane per column");
static_assert(kGramRights == 2, "the Gram kernel and the reductions' outputs pick one of two blocks");

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

/// Copies count doubles with kCopyBatch independent loads in flight per thread (a small-step launch has one thread
/// block: one load at a time per thread would make the copy a chain of L2 round trips).
constexpr int kCopyBatch = 8;
__device__ __forceinline__ void copy_doubles(double* dst, const double* src, int count) {
  const int threads = static_cast<int>(blockDim.x);
  for (int first = static_cast<int>(threadIdx.x); first < count; first += kCopyBatch * threads) {
    double v[kCopyBatch];
#pragma unroll
    for (int i = 0; i < kCopyBatch; ++i) v[i] = first + i * threads < count ? src[first + i * threads] : 0.0;
#pragma unroll
    for (int i = 0; i < kCopyBatch; ++i)
      if (first + i * threads < count) dst[first + i * threads] = v[i];
  }
}

/// One small step. With `staged`, the part of the small buffer the flexible block CG's factorising steps touch is
/// copied into shared memory first and back after: those steps are chains of dependent reads of values other threads
/// just wrote (a Cholesky pivot, the column above it), which in global memory go to L2 each time (~36 us per step on
/// an H100 at k = 16); in shared memory they take tens of cycles. What they touch is everything before the Lanczos
/// arrays, and the scratch and status after them: the two ranges are packed together, under a layout with the scratch
/// and status moved down (the steps never read the Lanczos arrays).
__global__ void small_step_kernel(double* base, small::SmallLayout layout, small::SmallStep step, bool staged) {
  extern __shared__ double small_shared[];
  if (!staged) {
    small::run_step(GpuTeam{}, base, layout, step);
    return;
  }
  const int head = static_cast<int>(layout.lanczos_alpha);
  const int tail = static_cast<int>(layout.total - layout.scratch);
  small::SmallLayout packed = layout;
  packed.scratch = head;
  packed.status = head + (layout.status - layout.scratch);
  packed.total = head + tail;
  copy_doubles(small_shared, base, head);
  copy_doubles(small_shared + head, base + layout.scratch, tail);
  __syncthreads();
  small::run_step(GpuTeam{}, small_shared, packed, step);
  __syncthreads();
  copy_doubles(base, small_shared, head);
  copy_doubles(base + layout.scratch, small_shared + head, tail);
}

__global__ void fill_kernel(double* dst, std::int64_t count, double value) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x)
    dst[e] = value;
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

/// The kTile values of a row from column c0 (0 beyond k).
__device__ __forceinline__ void load_tile_row(const double* row, int c0, int k, double v[kTile]) {
#pragma unroll
  for (int i = 0; i < kTile; ++i) v[i] = c0 + i < k ? row[c0 + i] : 0.0;
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

void launch_sum_partials(int blocks, int outputs, const double* partial, const ReductionOutputs& out,
                         cudaStream_t stream, const char* name) {
  sum_partials<<<(outputs + 31) / 32, kFinalThreads, 0, stream>>>(blocks, outputs, partial, out);
  check_launch(name);
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

/// The kTile values of a row from column c0 (0 beyond k); pairs as double2 where k is even (then row and c0 are).
__device__ __forceinline__ void load_quad(const double* row, int c0, int k, double v[kTile]) {
  if ((k & 1) == 0) {
    const double2 lo = c0 < k ? *reinterpret_cast<const double2*>(row + c0) : make_double2(0.0, 0.0);
    const double2 hi = c0 + 2 < k ? *reinterpret_cast<const double2*>(row + c0 + 2) : make_double2(0.0, 0.0);
    v[0] = lo.x;
    v[1] = lo.y;
    v[2] = hi.x;
    v[3] = hi.y;
  } else {
    load_tile_row(row, c0, k, v);
  }
}

/// The kTile values of `v` stored into a row from column c0 (as double2 pairs where k is even), columns < k only.
__device__ __forceinline__ void store_quad(double* row, int c0, int k, const double v[kTile]) {
  if ((k & 1) == 0) {
    if (c0 < k) *reinterpret_cast<double2*>(row + c0) = make_double2(v[0], v[1]);
    if (c0 + 2 < k) *reinterpret_cast<double2*>(row + c0 + 2) = make_double2(v[2], v[3]);
  } else {
#pragma unroll
    for (int j = 0; j < kTile; ++j)
      if (c0 + j < k) row[c0 + j] = v[j];
  }
}

/// acc[h] += (source row h) M over one term: lane group g of a row holds source columns 4 g .. 4 g + 3 (`own`), which
/// every lane of the row receives by shuffles; `m` points at the lane's columns of the staged (transposed) matrix.
__device__ __forceinline__ void combine_term(const double (&own)[kCombineRows][kTile], const double* m,
                                             int lanes_per_row, int first_lane, int k, int pitch,
                                             double (&acc)[kCombineRows][kTile]) {
  for (int g = 0; g < lanes_per_row; ++g) {
#pragma unroll
    for (int q = 0; q < kTile; ++q) {
      const int l = kTile * g + q;
      if (l < k) {
        const double2 m01 = *reinterpret_cast<const double2*>(m + l * pitch);
        const double2 m23 = *reinterpret_cast<const double2*>(m + l * pitch + 2);
#pragma unroll
        for (int h = 0; h < kCombineRows; ++h) {
          const double v = __shfl_sync(0xffffffffu, own[h][q], first_lane + g);
          acc[h][0] += v * m01.x;
          acc[h][1] += v * m01.y;
          acc[h][2] += v * m23.x;
          acc[h][3] += v * m23.y;
        }
      }
    }
  }
}

/// dst = (accumulate ? dst : 0) + sum_t source_t M_t over the terms of one launch. The factor-scaled matrices are
/// staged in shared memory transposed, staged[t][l][c] = factor_t M_t[l + c k], with a row pitch of k rounded up to
/// kTile (zeros beyond k). A row of the block is handled by ceil(k / kTile) adjacent lanes of one warp, each computing
/// kTile columns: each lane loads its own kTile values of the source row (coalesced) and receives the others by warp
/// shuffles, so the source is read once rather than once per lane. With `Terms` > 0 (the launch has exactly that
/// many terms) every load of a pass, the old dst values included, is issued before the arithmetic, so a lane has
/// (Terms + 1) kCombineRows loads in flight rather than kCombineRows; Terms = 0 takes args.count terms one at a time.
template <int Terms>
__global__ void __launch_bounds__(kThreads) combine_kernel(double* dst, CombineArgs args, bool accumulate,
                                                           std::int32_t n, int k) {
  extern __shared__ __align__(16) double staged[];
  __shared__ const double* sources[kMaxTerms];
  __shared__ const double* matrices[kMaxTerms];
  __shared__ double factors[kMaxTerms];
  // Constant indices into the parameter arrays (a variable index would copy them to local memory).
#pragma unroll
  for (int t = 0; t < kMaxTerms; ++t)
    if (static_cast<int>(threadIdx.x) == t && t < args.count) {
      sources[t] = args.source[t];
      matrices[t] = args.matrix[t];
      factors[t] = args.factor[t];
    }
  __syncthreads();
  const int lanes_per_row = (k + kTile - 1) / kTile;
  const int pitch = kTile * lanes_per_row;
  const int per_matrix = k * pitch;
  for (int e = threadIdx.x; e < args.count * per_matrix; e += kThreads) {
    const int t = e / per_matrix, within = e % per_matrix;
    const int l = within / pitch, c = within % pitch;
    staged[e] = c < k ? factors[t] * matrices[t][l + c * k] : 0.0;
  }
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int rows_per_warp = 32 / lanes_per_row;  // k <= 64: at least 2
  // Lanes past the warp's last whole row (32 % lanes_per_row of them) shadow that row and store nothing.
  const int row_in_warp = min(lane / lanes_per_row, rows_per_warp - 1);
  const bool stores = lane / lanes_per_row < rows_per_warp;
  const int first_lane = row_in_warp * lanes_per_row;
  // A shadow lane works on column 0 (its values are never shuffled to others nor stored): a column past the row would
  // read past the staged matrices (k = 33 .. 37 and others where 32 is no multiple of the lanes per row).
  const int c0 = stores ? kTile * (lane - first_lane) : 0;
  // Each lane works on kCombineRows rows at once, half a pass apart: their loads are in flight together.
  const int rows_per_half = (kThreads / 32) * rows_per_warp;
  const int rows_per_pass = kCombineRows * rows_per_half;
  for (std::int64_t base = std::int64_t(blockIdx.x) * rows_per_pass; base < n;
       base += std::int64_t(gridDim.x) * rows_per_pass) {
    std::int64_t row[kCombineRows], read_row[kCombineRows];
#pragma unroll
    for (int h = 0; h < kCombineRows; ++h) {
      row[h] = base + h * rows_per_half + warp * rows_per_warp + row_in_warp;
      read_row[h] = min(row[h], std::int64_t(n) - 1);  // every lane shuffles; rows past n read the last
    }
    double old[kCombineRows][kTile] = {};
    if (accumulate) {
#pragma unroll
      for (int h = 0; h < kCombineRows; ++h)
        if (stores && row[h] < n) load_quad(dst + row[h] * k, c0, k, old[h]);
    }
    double acc[kCombineRows][kTile] = {};
    if constexpr (Terms > 0) {
      double own[Terms][kCombineRows][kTile];
#pragma unroll
      for (int t = 0; t < Terms; ++t)
#pragma unroll
        for (int h = 0; h < kCombineRows; ++h) load_quad(args.source[t] + read_row[h] * k, c0, k, own[t][h]);
#pragma unroll
      for (int t = 0; t < Terms; ++t)
        combine_term(own[t], staged + t * per_matrix + c0, lanes_per_row, first_lane, k, pitch, acc);
    } else {
      for (int t = 0; t < args.count; ++t) {
        double own[kCombineRows][kTile];
#pragma unroll
        for (int h = 0; h < kCombineRows; ++h) load_quad(sources[t] + read_row[h] * k, c0, k, own[h]);
        combine_term(own, staged + t * per_matrix + c0, lanes_per_row, first_lane, k, pitch, acc);
      }
    }
#pragma unroll
    for (int h = 0; h < kCombineRows; ++h) {
      if (stores && row[h] < n) {
        double out[kTile];
#pragma unroll
        for (int j = 0; j < kTile; ++j) out[j] = old[h][j] + acc[h][j];
        store_quad(dst + row[h] * k, c0, k, out);
      }
    }
  }
}
static_assert(kTile == 4, "combine_kernel reads a thread's kTile matrix entries as two double2");

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

/// A thread's place in a grid-stride sweep over the rows of an n x width block (width <= 64): `width` consecutive
/// threads share a row, so a thread's column comes from its index once rather than from a 64-bit division per element.
struct RowSweep {
  int column;          ///< the thread's column; -1 for the threads past a thread block's last whole row
  std::int64_t first;  ///< its first row
  std::int64_t step;   ///< rows between its rows
  __device__ explicit RowSweep(int width) {
    const int per_block = kThreads / width;
    const int slot = static_cast<int>(threadIdx.x) / width;
    column = slot < per_block ? static_cast<int>(threadIdx.x) % width : -1;
    first = std::int64_t(blockIdx.x) * per_block + slot;
    step = std::int64_t(gridDim.x) * per_block;
  }
};

/// Grid of a RowSweep over n rows of `width` columns.
unsigned grid_for_rows(std::int32_t n, int width) {
  const std::int64_t per_block = kThreads / width;
  return static_cast<unsigned>(std::clamp<std::int64_t>((std::int64_t(n) + per_block - 1) / per_block, 1, 4096));
}

__global__ void chebyshev_start_kernel(const double* r, const double* row_scale, const double* scale, float* f,
                                       std::int32_t n, int k, int kp) {
  const RowSweep sweep(kp);
  if (sweep.column < 0) return;
  const int c = sweep.column;
  for (std::int64_t row = sweep.first; row < n; row += sweep.step)
    f[row * kp + c] =
        c < k ? static_cast<float>((row_scale ? row_scale[row] : 1.0) * r[row * k + c] * scale[c]) : 0.0f;
}

__global__ void chebyshev_update_kernel(float* previous, const float* current, const float* f, double c_current,
                                        double c_f, std::int64_t count) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x)
    previous[e] = static_cast<float>(double(previous[e]) + (current ? c_current * double(current[e]) : 0.0) +
                                     c_f * double(f[e]));
}

__global__ void chebyshev_finish_kernel(const float* current, double factor, const double* row_scale,
                                        const double* scale, double* z, std::int32_t n, int k, int kp) {
  const RowSweep sweep(k);
  if (sweep.column < 0) return;
  const int c = sweep.column;
  const double column_factor = scale[c] != 0.0 ? factor / scale[c] : 0.0;  // one division per thread
  for (std::int64_t row = sweep.first; row < n; row += sweep.step)
    z[row * k + c] = double(current[row * kp + c]) * (row_scale ? row_scale[row] : 1.0) * column_factor;
}

__global__ void jacobi_kernel(const double* r, const double* d, const double* active, double* z, std::int32_t n,
                              int k) {
  const RowSweep sweep(k);
  if (sweep.column < 0) return;
  const int c = sweep.column;
  const bool on = active[c] != 0.0;
  for (std::int64_t row = sweep.first; row < n; row += sweep.step)
    z[row * k + c] = on ? r[row * k + c] * (d ? d[row] : 1.0) : 0.0;
}

__global__ void widen_kernel(const float* src, int ld, double* dst, std::int32_t n, int k) {
  const RowSweep sweep(k);
  if (sweep.column < 0) return;
  const int c = sweep.column;
  for (std::int64_t row = sweep.first; row < n; row += sweep.step) dst[row * k + c] = double(src[row * ld + c]);
}

__global__ void narrow_kernel(const double* src, float* dst, int ld, std::int32_t n, int k) {
  const RowSweep sweep(k);
  if (sweep.column < 0) return;
  const int c = sweep.column;
  for (std::int64_t row = sweep.first; row < n; row += sweep.step) dst[row * ld + c] = float(src[row * k + c]);
}

__global__ void lanczos_fill_kernel(float* v, const std::int32_t* caller_rows, std::int32_t n, int k, int kp,
                                    std::uint64_t seed) {
  const RowSweep sweep(kp);
  if (sweep.column < 0) return;
  const int c = sweep.column;
  for (std::int64_t row = sweep.first; row < n; row += sweep.step)
    v[row * kp + c] = c < k ? small::lanczos_start(caller_rows ? caller_rows[row] : row, c, seed) : 0.0f;
}

__global__ void lanczos_scale_kernel(float* v, const double* inverse_beta, std::int32_t n, int k, int kp) {
  const RowSweep sweep(kp);
  if (sweep.column < 0) return;
  const int c = sweep.column;
  const double scale = c < k ? inverse_beta[c] : 0.0;
  for (std::int64_t row = sweep.first; row < n; row += sweep.step)
    v[row * kp + c] = c < k ? static_cast<float>(double(v[row * kp + c]) * scale) : 0.0f;
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

void combine(double* dst, const CombineArgs& args, bool accumulate, std::int32_t n, int k, cudaStream_t stream) {
  if (args.count < 0 || args.count > kMaxTerms) throw InvalidArgument("block combine: too many terms");
  if (k < 1 || k > small::kMaxColumns) throw InvalidArgument("block combine: k outside 1 .. 64");
  const int groups_per_row = (k + kTile - 1) / kTile;
  const std::size_t matrix_bytes = std::size_t(k) * kTile * groups_per_row * sizeof(double);
  const int per_launch = static_cast<int>(std::max<std::size_t>(1, kCombineSharedBytes / matrix_bytes));
  const int rows_per_pass = kCombineRows * (kThreads / 32) * (32 / groups_per_row);  // as combine_kernel
  const unsigned blocks =
      static_cast<unsigned>(std::clamp<std::int64_t>((std::int64_t(n) + rows_per_pass - 1) / rows_per_pass, 1, 2048));
  // Terms beyond what one launch stages go to further launches that accumulate (k = 64: one term per launch).
  int first = 0;
  do {
    CombineArgs part;
    part.count = std::min(per_launch, args.count - first);
    for (int t = 0; t < part.count; ++t) {
      part.source[t] = args.source[first + t];
      part.matrix[t] = args.matrix[first + t];
      part.factor[t] = args.factor[first + t];
    }
    const std::size_t shared = std::size_t(part.count) * matrix_bytes;
    const bool add = accumulate || first > 0;
    // The usual term counts (memory 1 and 2: one or two) get their loads issued together.
    if (part.count == 1)
      combine_kernel<1><<<blocks, kThreads, shared, stream>>>(dst, part, add, n, k);
    else if (part.count == 2)
      combine_kernel<2><<<blocks, kThreads, shared, stream>>>(dst, part, add, n, k);
    else if (part.count == 3)
      combine_kernel<3><<<blocks, kThreads, shared, stream>>>(dst, part, add, n, k);
    else
      combine_kernel<0><<<blocks, kThreads, shared, stream>>>(dst, part, add, n, k);
    check_launch("combine_kernel");
    first += part.count;
  } while (first < args.count);
}

void small_step(double* base, const small::SmallLayout& layout, const small::SmallStep& step, cudaStream_t stream) {
  // Shared memory a block may opt into on this device, asked once per process (one device per solver process).
  static const std::size_t shared_limit = [] {
    int device = 0, optin = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
      return std::size_t(48 * 1024);
    return std::size_t(optin);
  }();
  // The flexible block CG's factorisations are the serial chains; the per-column steps run in place.
  const bool factorises = step.kind == small::StepKind::bfcg_orthogonalize ||
                          step.kind == small::StepKind::bfcg_whiten || step.kind == small::StepKind::bfcg_step;
  const std::size_t bytes = std::size_t(layout.lanczos_alpha + layout.total - layout.scratch) * sizeof(double);
  const bool staged = factorises && bytes <= shared_limit;
  if (staged && bytes > 48 * 1024) {
    const cudaError_t status =
        cudaFuncSetAttribute(small_step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (status != cudaSuccess)
      throw CudaError(std::string("small_step_kernel: shared memory of ") + std::to_string(bytes) +
                      " bytes refused: " + cudaGetErrorString(status));
  }
  // A staged step runs with kThreads threads, so that the copies have more loads in flight (the steps work with any
  // team size of at least small::kTeamThreads).
  small_step_kernel<<<1, staged ? kThreads : small::kTeamThreads, staged ? bytes : 0, stream>>>(base, layout, step,
                                                                                              staged);
  check_launch("small_step_kernel");
}

void fill(double* dst, std::int64_t count, double value, cudaStream_t stream) {
  fill_kernel<<<grid_for(count), kThreads, 0, stream>>>(dst, count, value);
  check_launch("fill_kernel");
}

void chebyshev_start(const double* r, const double* row_scale, const double* scale, float* f, std::int32_t n, int k,
                     int kp, cudaStream_t stream) {
  chebyshev_start_kernel<<<grid_for_rows(n, kp), kThreads, 0, stream>>>(r, row_scale, scale, f, n, k, kp);
  check_launch("chebyshev_start_kernel");
}

void chebyshev_update(float* previous, const float* current, const float* f, double c_current, double c_f,
                      std::int64_t count, cudaStream_t stream) {
  chebyshev_update_kernel<<<grid_for(count), kThreads, 0, stream>>>(previous, current, f, c_current, c_f, count);
  check_launch("chebyshev_update_kernel");
}

void chebyshev_finish(const float* current, double factor, const double* row_scale, const double* scale, double* z,
                      std::int32_t n, int k, int kp, cudaStream_t stream) {
  chebyshev_finish_kernel<<<grid_for_rows(n, k), kThreads, 0, stream>>>(current, factor, row_scale, scale, z, n, k,
                                                                         kp);
  check_launch("chebyshev_finish_kernel");
}

void jacobi(const double* r, const double* inverse_diagonal, const double* active, double* z, std::int32_t n, int k,
            cudaStream_t stream) {
  jacobi_kernel<<<grid_for_rows(n, k), kThreads, 0, stream>>>(r, inverse_diagonal, active, z, n, k);
  check_launch("jacobi_kernel");
}

void widen(const float* src, int ld, double* dst, std::int32_t n, int k, cudaStream_t stream) {
  widen_kernel<<<grid_for_rows(n, k), kThreads, 0, stream>>>(src, ld, dst, n, k);
  check_launch("widen_kernel");
}

void narrow(const double* src, float* dst, int ld, std::int32_t n, int k, cudaStream_t stream) {
  narrow_kernel<<<grid_for_rows(n, k), kThreads, 0, stream>>>(src, dst, ld, n, k);
  check_launch("narrow_kernel");
}

void lanczos_fill(float* v, const std::int32_t* caller_rows, std::int32_t n, int k, int kp, std::uint64_t seed,
                  cudaStream_t stream) {
  lanczos_fill_kernel<<<grid_for_rows(n, kp), kThreads, 0, stream>>>(v, caller_rows, n, k, kp, seed);
  check_launch("lanczos_fill_kernel");
}

void lanczos_scale(float* v, const double* inverse_beta, std::int32_t n, int k, int kp, cudaStream_t stream) {
  lanczos_scale_kernel<<<grid_for_rows(n, kp), kThreads, 0, stream>>>(v, inverse_beta, n, k, kp);
  check_launch("lanczos_scale_kernel");
}

void lanczos_orthogonalize(float* w, const float* v, const float* previous, const double* alpha, const double* beta,
                           double* w_norm2, std::int32_t n, int k, int kp, double* workspace, cudaStream_t stream) {
  column_sums<1>(LanczosOrthogonalizeOp{w, v, previous, alpha, beta, kp}, n, k, workspace, w_norm2, w_norm2, stream,
                 "lanczos_orthogonalize");
}

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
