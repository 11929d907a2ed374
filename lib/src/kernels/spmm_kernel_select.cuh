// Picks the instantiation of the SpMM kernel template for a rung, slice width, output type, B-row index kind,
// operand mode and whether the plan splits bands. Each (index kind, split) pair's instantiations are compiled in a translation unit
// of their own (spmm_kernels_{aligned,full}[_split].cu) so a parallel build compiles them at the same time.
#pragma once

#include <cuda_fp16.h>

#include <string>

#include "device/plan_choices.hpp"
#include "bcsr24/error.hpp"
#include "kernels/spmm_kernel.cuh"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels {

using KernelFn = void (*)(SpmmParams);

struct KernelChoice {
  KernelFn fn;
  int shared_bytes;
};

KernelChoice choose_aligned_kernel(KernelKind kind, int slice_width, OutputType out);
KernelChoice choose_full_kernel(KernelKind kind, int slice_width, OutputType out);
KernelChoice choose_aligned_split_kernel(KernelKind kind, int slice_width, OutputType out);
KernelChoice choose_full_split_kernel(KernelKind kind, int slice_width, OutputType out);
/// Modes other than f16 (split_pipelined, fp32 output): one translation unit per mode (spmm_kernels_<mode>.cu).
/// `pipeline`: deep_pipelined_stages or pipelined_stages (the same instantiation where they agree).
KernelChoice choose_bf16_kernel(int slice_width, BRowIndex index, bool split_bands, TilePipeline pipeline);
KernelChoice choose_f16_f32b_kernel(int slice_width, BRowIndex index, bool split_bands, TilePipeline pipeline);
KernelChoice choose_bf16_f32b_kernel(int slice_width, BRowIndex index, bool split_bands, TilePipeline pipeline);
KernelChoice choose_split_f32b_kernel(int slice_width, BRowIndex index, bool split_bands, TilePipeline pipeline);

template <int kSliceWidth, int kRows, typename OutT, bool kSplit>
KernelChoice choose_for_width(KernelKind kind) {
  constexpr OperandMode kF16 = OperandMode::f16;
  constexpr int kDeep = pipelined_stages<kSliceWidth>();
  switch (kind) {
    case KernelKind::dense_bt:
      return {bcsr24_spmm_kernel<kSliceWidth, kF16, 1, false, kRows, OutT, kSplit>,
              spmm_shared_bytes<kSliceWidth, 1, false>()};
    case KernelKind::dense_pipelined:
      return {bcsr24_spmm_kernel<kSliceWidth, kF16, kDeep, false, kRows, OutT, kSplit>,
              spmm_shared_bytes<kSliceWidth, kDeep, false>()};
    case KernelKind::split_pipelined:
      return {bcsr24_spmm_kernel<kSliceWidth, kF16, kDeep, true, kRows, OutT, kSplit>,
              spmm_shared_bytes<kSliceWidth, kDeep, true>()};
    case KernelKind::csr_cuda_cores:
    case KernelKind::automatic:
      break;  // not tile kernels: the plan launches split_pipelined for the tile part of an automatic plan
  }
  throw InvalidArgument("unknown kernel kind");
}

template <int kRows, typename OutT, bool kSplit>
KernelChoice choose_for_output(KernelKind kind, int slice_width) {
  switch (slice_width) {
    case 8: return choose_for_width<8, kRows, OutT, kSplit>(kind);
    case 16: return choose_for_width<16, kRows, OutT, kSplit>(kind);
    case 32: return choose_for_width<32, kRows, OutT, kSplit>(kind);
    case 64: return choose_for_width<64, kRows, OutT, kSplit>(kind);
  }
  throw InvalidArgument("unsupported slice width " + std::to_string(slice_width));
}

template <int kRows, bool kSplit>
KernelChoice choose_kernel(KernelKind kind, int slice_width, OutputType out) {
  return out == OutputType::f32 ? choose_for_output<kRows, float, kSplit>(kind, slice_width)
                                : choose_for_output<kRows, __half, kSplit>(kind, slice_width);
}

/// The split_pipelined instantiation of a mode other than f16 (fp32 output).
template <OperandMode kMode, int kSliceWidth, int kRows, bool kSplit, int kStages>
KernelChoice mode_kernel() {
  return {bcsr24_spmm_kernel<kSliceWidth, kMode, kStages, true, kRows, float, kSplit>,
          spmm_shared_bytes<kSliceWidth, kStages, true, kMode>()};
}

template <OperandMode kMode, int kSliceWidth, int kRows, bool kSplit>
KernelChoice mode_kernel(TilePipeline pipeline) {
  return pipeline == TilePipeline::deep
             ? mode_kernel<kMode, kSliceWidth, kRows, kSplit, tile_stages<kSliceWidth, kMode, true>()>()
             : mode_kernel<kMode, kSliceWidth, kRows, kSplit, tile_stages<kSliceWidth, kMode, false>()>();
}

template <OperandMode kMode, int kRows, bool kSplit>
KernelChoice choose_mode_for_width(int slice_width, TilePipeline pipeline) {
  switch (slice_width) {
    case 8: return mode_kernel<kMode, 8, kRows, kSplit>(pipeline);
    case 16: return mode_kernel<kMode, 16, kRows, kSplit>(pipeline);
    case 32: return mode_kernel<kMode, 32, kRows, kSplit>(pipeline);
    case 64:
      // Split mode runs slices of at most 32 columns (slice_width_for): no 64-column instantiation.
      if constexpr (kMode != OperandMode::split_f32b) return mode_kernel<kMode, 64, kRows, kSplit>(pipeline);
      break;
  }
  throw InvalidArgument("unsupported slice width " + std::to_string(slice_width));
}

template <OperandMode kMode>
KernelChoice choose_mode_kernel(int slice_width, BRowIndex index, bool split_bands, TilePipeline pipeline) {
  if (index == BRowIndex::implicit)
    return split_bands ? choose_mode_for_width<kMode, kImplicitRows, true>(slice_width, pipeline)
                       : choose_mode_for_width<kMode, kImplicitRows, false>(slice_width, pipeline);
  return split_bands ? choose_mode_for_width<kMode, kFullRows, true>(slice_width, pipeline)
                     : choose_mode_for_width<kMode, kFullRows, false>(slice_width, pipeline);
}

}  // namespace bcsr24::kernels
