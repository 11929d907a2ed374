// Instantiates the SpMM kernel template for each rung, slice width and output type, and launches it.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"
#include "kernels/spmm_kernel.cuh"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels {

int slice_width_for(std::int32_t n) {
  if (n <= 8) return 8;
  if (n <= 16) return 16;
  if (n <= 32) return 32;
  return 64;
}

namespace {

using KernelFn = void (*)(SpmmParams);

struct KernelChoice {
  KernelFn fn;
  int shared_bytes;
};

template <int kSliceWidth, typename OutT>
KernelChoice choose_for_width(KernelKind kind) {
  constexpr int kDeep = pipelined_stages<kSliceWidth>();
  switch (kind) {
    case KernelKind::dense_bt:
      return {bcsr24_spmm_kernel<kSliceWidth, 1, false, OutT>, spmm_shared_bytes<kSliceWidth, 1, false>()};
    case KernelKind::dense_pipelined:
      return {bcsr24_spmm_kernel<kSliceWidth, kDeep, false, OutT>, spmm_shared_bytes<kSliceWidth, kDeep, false>()};
    case KernelKind::split_pipelined:
      return {bcsr24_spmm_kernel<kSliceWidth, kDeep, true, OutT>, spmm_shared_bytes<kSliceWidth, kDeep, true>()};
  }
  throw InvalidArgument("unknown kernel kind");
}

template <typename OutT>
KernelChoice choose_for_output(KernelKind kind, int slice_width) {
  switch (slice_width) {
    case 8: return choose_for_width<8, OutT>(kind);
    case 16: return choose_for_width<16, OutT>(kind);
    case 32: return choose_for_width<32, OutT>(kind);
    case 64: return choose_for_width<64, OutT>(kind);
  }
  throw InvalidArgument("unsupported slice width " + std::to_string(slice_width));
}

KernelChoice choose(KernelKind kind, int slice_width, OutputType out) {
  return out == OutputType::f32 ? choose_for_output<float>(kind, slice_width)
                                : choose_for_output<__half>(kind, slice_width);
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

int configure_spmm_kernel(KernelKind kind, int slice_width, OutputType out) {
  const KernelChoice choice = choose(kind, slice_width, out);
  BCSR24_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(choice.fn),
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, choice.shared_bytes));
  return choice.shared_bytes;
}

void launch_spmm_kernel(KernelKind kind, int slice_width, OutputType out, const SpmmParams& params,
                        cudaStream_t stream) {
  const KernelChoice choice = choose(kind, slice_width, out);
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
