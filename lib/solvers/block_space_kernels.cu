// Kernels of the GPU block space: the small steps and the element-wise kernels, which compute in double and round
// once (as the CPU space does). The reductions, the combination of blocks and the CSR product have files of their
// own (block_space_reductions.cu, block_space_combine.cu, block_space_csr_product.cu).
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
static_assert(small::kTeamThreads >= small::kMaxColumns, "small steps run one lane per column");

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

}  // namespace bcsr24::solver::block_gpu
