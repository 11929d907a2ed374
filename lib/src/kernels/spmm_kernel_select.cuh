// Picks the instantiation of the SpMM kernel template for a rung, slice width, output type and B-row mode.
// The aligned and gathered instantiations are compiled in two translation units (spmm_kernels_aligned.cu,
// spmm_kernels_gathered.cu) so a parallel build compiles them at the same time.
#pragma once

#include <cuda_fp16.h>

#include <string>

#include "bcsr24/device.hpp"
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
KernelChoice choose_gathered_kernel(KernelKind kind, int slice_width, OutputType out);

template <int kSliceWidth, bool kGathered, typename OutT>
KernelChoice choose_for_width(KernelKind kind) {
  constexpr int kDeep = pipelined_stages<kSliceWidth>();
  switch (kind) {
    case KernelKind::dense_bt:
      return {bcsr24_spmm_kernel<kSliceWidth, 1, false, kGathered, OutT>, spmm_shared_bytes<kSliceWidth, 1, false>()};
    case KernelKind::dense_pipelined:
      return {bcsr24_spmm_kernel<kSliceWidth, kDeep, false, kGathered, OutT>,
              spmm_shared_bytes<kSliceWidth, kDeep, false>()};
    case KernelKind::split_pipelined:
      return {bcsr24_spmm_kernel<kSliceWidth, kDeep, true, kGathered, OutT>,
              spmm_shared_bytes<kSliceWidth, kDeep, true>()};
  }
  throw InvalidArgument("unknown kernel kind");
}

template <bool kGathered, typename OutT>
KernelChoice choose_for_output(KernelKind kind, int slice_width) {
  switch (slice_width) {
    case 8: return choose_for_width<8, kGathered, OutT>(kind);
    case 16: return choose_for_width<16, kGathered, OutT>(kind);
    case 32: return choose_for_width<32, kGathered, OutT>(kind);
    case 64: return choose_for_width<64, kGathered, OutT>(kind);
  }
  throw InvalidArgument("unsupported slice width " + std::to_string(slice_width));
}

template <bool kGathered>
KernelChoice choose_kernel(KernelKind kind, int slice_width, OutputType out) {
  return out == OutputType::f32 ? choose_for_output<kGathered, float>(kind, slice_width)
                                : choose_for_output<kGathered, __half>(kind, slice_width);
}

}  // namespace bcsr24::kernels
