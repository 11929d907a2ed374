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

/// The stages and the blocks per SM of one instantiation (mode, width, depth as template arguments).
template <OperandMode kMode, int kSliceWidth, bool kDeep>
struct StagesOf {
  static constexpr int value = tile_stages<kSliceWidth, kMode, kDeep>();
};
template <OperandMode kMode, int kSliceWidth, bool kDeep>
struct BlocksOf {
  static constexpr int value = min_blocks_per_sm<kSliceWidth, kMode, tile_stages<kSliceWidth, kMode, kDeep>()>();
};

/// Fn<mode, width, deep>::value at run-time mode, width (widths above 32 are 64) and depth.
template <template <OperandMode, int, bool> class Fn, OperandMode kMode, bool kDeep>
int for_width(int slice_width) {
  switch (slice_width) {
    case 8: return Fn<kMode, 8, kDeep>::value;
    case 16: return Fn<kMode, 16, kDeep>::value;
    case 32: return Fn<kMode, 32, kDeep>::value;
    default: return Fn<kMode, 64, kDeep>::value;
  }
}

template <template <OperandMode, int, bool> class Fn, bool kDeep>
int for_mode(int slice_width, OperandMode mode) {
  switch (mode) {
    case OperandMode::f16: return for_width<Fn, OperandMode::f16, kDeep>(slice_width);
    case OperandMode::bf16: return for_width<Fn, OperandMode::bf16, kDeep>(slice_width);
    case OperandMode::f16_f32b: return for_width<Fn, OperandMode::f16_f32b, kDeep>(slice_width);
    case OperandMode::bf16_f32b: return for_width<Fn, OperandMode::bf16_f32b, kDeep>(slice_width);
    case OperandMode::split_f32b: return for_width<Fn, OperandMode::split_f32b, kDeep>(slice_width);
  }
  return 1;
}

template <template <OperandMode, int, bool> class Fn>
int for_depth(int slice_width, OperandMode mode, TilePipeline pipeline) {
  return pipeline == TilePipeline::deep ? for_mode<Fn, true>(slice_width, mode) : for_mode<Fn, false>(slice_width, mode);
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
  return for_depth<BlocksOf>(slice_width, mode, pipeline);
}

int tile_pipeline_stages(int slice_width, OperandMode mode, TilePipeline pipeline) {
  return for_depth<StagesOf>(slice_width, mode, pipeline);
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
  choice.fn<<<static_cast<unsigned>(blocks), kTileKernelWarps * kWarpSize, choice.shared_bytes, stream>>>(params);
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
