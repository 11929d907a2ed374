// Configures and launches the SpMM kernel chosen for a plan (instantiations: spmm_kernels_{aligned,full}.cu).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"
#include "kernels/spmm_kernel_select.cuh"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels {

int slice_width_for(std::int32_t n) {
  if (n <= 8) return 8;
  if (n <= 16) return 16;
  if (n <= 32) return 32;
  return 64;
}

int tile_blocks_per_sm(int slice_width) {
  return slice_width <= 32 ? min_blocks_per_sm<32>() : min_blocks_per_sm<64>();
}

namespace {

KernelChoice choose(KernelKind kind, int slice_width, OutputType out, BRowIndex index, bool split_bands) {
  switch (index) {
    case BRowIndex::implicit:
      return split_bands ? choose_aligned_split_kernel(kind, slice_width, out)
                         : choose_aligned_kernel(kind, slice_width, out);
    case BRowIndex::full:
      return split_bands ? choose_full_split_kernel(kind, slice_width, out) : choose_full_kernel(kind, slice_width, out);
  }
  throw InvalidArgument("unknown B-row index kind");
}

__global__ void stage_b_kernel(const std::uint16_t* b, std::int64_t ldb, std::int32_t k, std::int32_t n,
                               std::uint16_t* staged, std::int64_t staged_ld) {
  const std::int64_t total = std::int64_t(k) * staged_ld;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / staged_ld;
    const std::int64_t col = i % staged_ld;
    staged[i] = col < n ? b[row * ldb + col] : std::uint16_t(0);
  }
}

}  // namespace

int configure_spmm_kernel(KernelKind kind, int slice_width, OutputType out, BRowIndex index, bool split_bands) {
  const KernelChoice choice = choose(kind, slice_width, out, index, split_bands);
  BCSR24_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(choice.fn),
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, choice.shared_bytes));
  return choice.shared_bytes;
}

void launch_spmm_kernel(KernelKind kind, int slice_width, OutputType out, BRowIndex index, bool split_bands,
                        const SpmmParams& params, cudaStream_t stream) {
  const KernelChoice choice = choose(kind, slice_width, out, index, split_bands);
  const std::int64_t blocks = std::int64_t(params.tile_rows) * params.n_slices;
  if (blocks == 0) return;
  choice.fn<<<static_cast<unsigned>(blocks), kWarpsPerBlock * kWarpSize, choice.shared_bytes, stream>>>(params);
  BCSR24_CUDA_CHECK_LAUNCH();
}

void launch_stage_b(const std::uint16_t* b, std::int64_t ldb, std::int32_t k, std::int32_t n, std::uint16_t* staged,
                    std::int64_t staged_ld, cudaStream_t stream) {
  const std::int64_t total = std::int64_t(k) * staged_ld;
  if (total == 0) return;
  const int threads = 256;
  const std::int64_t blocks = std::min<std::int64_t>((total + threads - 1) / threads, 65535);
  stage_b_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(b, ldb, k, n, staged, staged_ld);
  BCSR24_CUDA_CHECK_LAUNCH();
}

}  // namespace bcsr24::kernels
