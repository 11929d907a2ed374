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

template <typename T>
__global__ void stage_b_kernel(const T* b, std::int64_t ldb, std::int32_t k, std::int32_t n, T* staged,
                               std::int64_t staged_ld) {
  const std::int64_t total = std::int64_t(k) * staged_ld;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / staged_ld;
    const std::int64_t col = i % staged_ld;
    staged[i] = col < n ? b[row * ldb + col] : T(0);
  }
}

template <typename T>
void stage_b(const T* b, std::int64_t ldb, std::int32_t k, std::int32_t n, T* staged, std::int64_t staged_ld,
             cudaStream_t stream) {
  const std::int64_t total = std::int64_t(k) * staged_ld;
  if (total == 0) return;
  const int threads = 256;
  const std::int64_t blocks = std::min<std::int64_t>((total + threads - 1) / threads, 65535);
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
