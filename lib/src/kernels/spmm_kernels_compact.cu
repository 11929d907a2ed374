// Instantiations of the SpMM kernels for gathered tiles with compact B-row indices (int32 base + 32 uint16).
#include "kernels/spmm_kernel_select.cuh"

namespace bcsr24::kernels {

KernelChoice choose_compact_kernel(KernelKind kind, int slice_width, OutputType out) {
  return choose_kernel<kCompactRows>(kind, slice_width, out);
}

}  // namespace bcsr24::kernels
