// Instantiations of the SpMM kernels for aligned tiles (B rows implied by the tile column), for plans that split long bands over several blocks.
#include "kernels/spmm_kernel_select.cuh"

namespace bcsr24::kernels {

KernelChoice choose_aligned_split_kernel(KernelKind kind, int slice_width, OutputType out) {
  return choose_kernel<kImplicitRows, true>(kind, slice_width, out);
}

}  // namespace bcsr24::kernels
