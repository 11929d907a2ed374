// Instantiations of the SpMM kernels for gathered tiles (32 B rows per tile), for plans that split long bands over several blocks.
#include "kernels/spmm_kernel_select.cuh"

namespace bcsr24::kernels {

KernelChoice choose_full_split_kernel(KernelKind kind, int slice_width, OutputType out) {
  return choose_kernel<kFullRows, true>(kind, slice_width, out);
}

}  // namespace bcsr24::kernels
