// The block space's combination of blocks: dst = (dst or 0) + sum_t source_t M_t with small k x k matrices M_t,
// staged in shared memory, a row of the block on adjacent lanes of a warp.
#include <algorithm>

#include "bcsr24/error.hpp"
#include "block_space_kernels.hpp"
#include "block_space_shared.cuh"
#include "launch_support.cuh"

namespace bcsr24::solver::block_gpu {

namespace {

using launch::check_launch;
using launch::kThreads;
using shared::kTile;
using shared::load_tile_row;
/// Shared memory a combine launch stages its matrices in (the default limit of a thread block).
constexpr int kCombineSharedBytes = 48 * 1024;
/// Rows a combine lane computes at once.
constexpr int kCombineRows = 2;

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

}  // namespace

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

}  // namespace bcsr24::solver::block_gpu
