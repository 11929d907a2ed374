// Instantiations of the SpMM kernels for gathered tiles with full B-row indices (32 int32 per tile).
#include "kernels/spmm_kernel_select.cuh"

namespace bcsr24::kernels {

KernelChoice choose_full_kernel(KernelKind kind, int slice_width, OutputType out) {
  return choose_kernel<kFullRows, false>(kind, slice_width, out);
}

}  // namespace bcsr24::kernels
