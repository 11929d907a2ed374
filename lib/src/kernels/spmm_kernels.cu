// Configures and launches the SpMM kernel chosen for a plan (instantiations: spmm_kernels_{aligned,full}.cu).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"
#include "kernels/spmm_kernel_select.cuh"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels {

int slice_width_for(std::int32_t n, OperandMode mode) {
  const int width = n <= 8 ? 8 : (n <= 16 ? 16 : (n <= 32 ? 32 : 64));
  // Split mode's three products need about 200 registers per thread at 64 columns, which leaves room for two
  // blocks (8 warps) per SM; at 32 columns seven fit (min_blocks_per_sm), and the extra column slices re-read A
  // from L2.
  return mode == OperandMode::split_f32b && width > 32 ? 32 : width;
}

namespace {

/// The stages and the blocks per SM of a pipeline depth, per mode and width (template arguments).
template <OperandMode kMode, int kSliceWidth>
struct StagesOf {
  static int get(TilePipeline pipeline) {
    return pipeline == TilePipeline::deep ? deep_pipelined_stages<kSliceWidth, kMode>()
                                          : pipelined_stages<kSliceWidth, kMode>();
  }
};
template <OperandMode kMode, int kSliceWidth>
struct BlocksOf {
  static int get(TilePipeline pipeline) {
    return pipeline == TilePipeline::deep
               ? min_blocks_per_sm<kSliceWidth, kMode, deep_pipelined_stages<kSliceWidth, kMode>()>()
               : min_blocks_per_sm<kSliceWidth, kMode>();
  }
};

/// Fn<mode, width>::get(pipeline) at run-time mode and width (widths above 32 are 64).
template <OperandMode kMode, template <OperandMode, int> class Fn>
int for_width(int slice_width, TilePipeline pipeline) {
  switch (slice_width) {
    case 8: return Fn<kMode, 8>::get(pipeline);
    case 16: return Fn<kMode, 16>::get(pipeline);
    case 32: return Fn<kMode, 32>::get(pipeline);
    default: return Fn<kMode, 64>::get(pipeline);
  }
}

template <template <OperandMode, int> class Fn>
int for_mode(int slice_width, OperandMode mode, TilePipeline pipeline) {
  switch (mode) {
    case OperandMode::f16: return for_width<OperandMode::f16, Fn>(slice_width, pipeline);
    case OperandMode::bf16: return for_width<OperandMode::bf16, Fn>(slice_width, pipeline);
    case OperandMode::f16_f32b: return for_width<OperandMode::f16_f32b, Fn>(slice_width, pipeline);
    case OperandMode::bf16_f32b: return for_width<OperandMode::bf16_f32b, Fn>(slice_width, pipeline);
    case OperandMode::split_f32b: return for_width<OperandMode::split_f32b, Fn>(slice_width, pipeline);
  }
  return 1;
}

}  // namespace

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

int tile_blocks_per_sm(int slice_width, OperandMode mode, TilePipeline pipeline) {
  return for_mode<BlocksOf>(slice_width, mode, pipeline);
}

int tile_pipeline_stages(int slice_width, OperandMode mode, TilePipeline pipeline) {
  return for_mode<StagesOf>(slice_width, mode, pipeline);
}

bool has_deep_pipeline(int slice_width, OperandMode mode) {
  return tile_pipeline_stages(slice_width, mode, TilePipeline::deep) !=
         tile_pipeline_stages(slice_width, mode, TilePipeline::standard);
}

namespace {

KernelChoice choose(KernelKind kind, int slice_width, OutputType out, BRowIndex index, bool split_bands,
                    OperandMode mode, TilePipeline pipeline) {
  if (mode != OperandMode::f16) {
    if (kind != KernelKind::split_pipelined || out != OutputType::f32)
      throw InvalidArgument(std::string("SpMM kernel: operand mode '") + operand_mode_name(mode) +
                            "' runs on split_pipelined with fp32 output only");
    switch (mode) {
      case OperandMode::bf16: return choose_bf16_kernel(slice_width, index, split_bands, pipeline);
      case OperandMode::f16_f32b: return choose_f16_f32b_kernel(slice_width, index, split_bands, pipeline);
      case OperandMode::bf16_f32b: return choose_bf16_f32b_kernel(slice_width, index, split_bands, pipeline);
      case OperandMode::split_f32b: return choose_split_f32b_kernel(slice_width, index, split_bands, pipeline);
      case OperandMode::f16: break;
    }
  }
  switch (index) {
    case BRowIndex::implicit:
      return split_bands ? choose_aligned_split_kernel(kind, slice_width, out)
                         : choose_aligned_kernel(kind, slice_width, out);
    case BRowIndex::full:
      return split_bands ? choose_full_split_kernel(kind, slice_width, out) : choose_full_kernel(kind, slice_width, out);
  }
  throw InvalidArgument("unknown B-row index kind");
}

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

}  // namespace

int configure_spmm_kernel(KernelKind kind, int slice_width, OutputType out, BRowIndex index, bool split_bands,
                          OperandMode mode, TilePipeline pipeline) {
  const KernelChoice choice = choose(kind, slice_width, out, index, split_bands, mode, pipeline);
  BCSR24_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(choice.fn),
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, choice.shared_bytes));
  return choice.shared_bytes;
}

void launch_spmm_kernel(KernelKind kind, int slice_width, OutputType out, BRowIndex index, bool split_bands,
                        OperandMode mode, TilePipeline pipeline, const SpmmParams& params, cudaStream_t stream) {
  const KernelChoice choice = choose(kind, slice_width, out, index, split_bands, mode, pipeline);
  const std::int64_t blocks = std::int64_t(params.tile_rows) * params.n_slices;
  if (blocks == 0) return;
  choice.fn<<<static_cast<unsigned>(blocks), kWarpsPerBlock * kWarpSize, choice.shared_bytes, stream>>>(params);
  BCSR24_CUDA_CHECK_LAUNCH();
}

namespace {

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

void launch_stage_b(const std::uint16_t* b, std::int64_t ldb, std::int32_t k, std::int32_t n, std::uint16_t* staged,
                    std::int64_t staged_ld, cudaStream_t stream) {
  stage_b(b, ldb, k, n, staged, staged_ld, stream);
}

void launch_stage_b(const float* b, std::int64_t ldb, std::int32_t k, std::int32_t n, float* staged,
                    std::int64_t staged_ld, cudaStream_t stream) {
  stage_b(b, ldb, k, n, staged, staged_ld, stream);
}

}  // namespace bcsr24::kernels
