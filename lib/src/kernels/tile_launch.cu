// Launches the tile kernel a plan found in the kernel table (kernel_table.hpp), and the copy that stages
// unaligned B for it; the slice width of n and the operand modes' names.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "format/tile_layout.hpp"
#include "device/cuda_check.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels {

int slice_width_for(std::int32_t n, OperandMode mode) {
  const int width = n <= 8 ? 8 : (n <= 16 ? 16 : (n <= 32 ? 32 : 64));
  // Split mode's three products need about 200 registers per thread at 64 columns, which leaves room for two
  // blocks (8 warps) per SM; at 32 columns more fit (register_blocks_per_sm), and the extra column slices re-read
  // A from L2.
  return mode == OperandMode::split_f32b && width > 32 ? 32 : width;
}

const char* operand_mode_name(OperandMode mode) noexcept {
  switch (mode) {
    case OperandMode::f16: return "fp16";
    case OperandMode::bf16: return "bf16";
    case OperandMode::f16_f32b: return "fp16, fp32 B";
    case OperandMode::bf16_f32b: return "bf16, fp32 B";
    case OperandMode::split_f32b: return "split, fp32 B";
  }
  return "?";
}

namespace {

/// B copied to rows of `staged_ld` elements (a multiple of 8: 16-byte aligned rows), columns n .. staged_ld - 1
/// zero. A warp copies one row at a time, its lanes on consecutive columns, so reads and writes are coalesced and no
/// element pays an index division: the first version divided a 64-bit element index by staged_ld per element, and
/// staging took more than the product itself at n not a multiple of 8 (Andrews at n = 255: 174 us against 72 at
/// n = 256, where B needs no copy; run 76). A warp loads up to kStageColumns columns of its row before it stores
/// any, so a row costs one memory latency, not one per 32 columns: with a load and a store per 32 columns, a small
/// B (dwt_992, 992 rows, a row per warp) took 6 us to stage at n = 255 (run 78).
constexpr int kStageWarp = 32;
constexpr int kStagePerLane = 8;
constexpr int kStageColumns = kStageWarp * kStagePerLane;

template <typename T>
__global__ void stage_b_kernel(const T* b, std::int64_t ldb, std::int32_t k, std::int32_t n, T* staged,
                               std::int64_t staged_ld) {
  const int lane = threadIdx.x % kStageWarp;
  const std::int64_t warps = std::int64_t(gridDim.x) * (blockDim.x / kStageWarp);
  for (std::int64_t row = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kStageWarp; row < k; row += warps) {
    const T* src = b + row * ldb;
    T* dst = staged + row * staged_ld;
    for (std::int64_t col0 = 0; col0 < staged_ld; col0 += kStageColumns) {
      T v[kStagePerLane];
#pragma unroll
      for (int i = 0; i < kStagePerLane; ++i) {
        const std::int64_t col = col0 + i * kStageWarp + lane;
        v[i] = col < n ? src[col] : T(0);
      }
#pragma unroll
      for (int i = 0; i < kStagePerLane; ++i) {
        const std::int64_t col = col0 + i * kStageWarp + lane;
        if (col < staged_ld) dst[col] = v[i];
      }
    }
  }
}

template <typename T>
void stage_b(const T* b, std::int64_t ldb, std::int32_t k, std::int32_t n, T* staged, std::int64_t staged_ld,
             cudaStream_t stream) {
  if (k == 0 || staged_ld == 0) return;
  const int threads = 256;  // 8 warps, a row each at a time
  const std::int64_t blocks = std::min<std::int64_t>((std::int64_t(k) + 7) / 8, 65535);
  stage_b_kernel<T><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(b, ldb, k, n, staged, staged_ld);
  BCSR24_CUDA_CHECK_LAUNCH();
}

}  // namespace

void configure_tile_kernel(const TileKernel& kernel) {
  BCSR24_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel.fn),
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, kernel.shared_bytes));
}

void launch_tile_kernel(const TileKernel& kernel, const SpmmParams& params, cudaStream_t stream) {
  const std::int64_t blocks = std::int64_t(params.tile_rows) * params.n_slices;
  if (blocks == 0) return;
  kernel.fn<<<static_cast<unsigned>(blocks), kTileKernelWarps * kWarpSize, kernel.shared_bytes, stream>>>(params);
  BCSR24_CUDA_CHECK_LAUNCH();
}

void launch_stage_b(const std::uint16_t* b, std::int64_t ldb, std::int32_t k, std::int32_t n, std::uint16_t* staged,
                    std::int64_t staged_ld, cudaStream_t stream) {
  stage_b(b, ldb, k, n, staged, staged_ld, stream);
}

void launch_stage_b(const float* b, std::int64_t ldb, std::int32_t k, std::int32_t n, float* staged,
                    std::int64_t staged_ld, cudaStream_t stream) {
  stage_b(b, ldb, k, n, staged, staged_ld, stream);
}

}  // namespace bcsr24::kernels
