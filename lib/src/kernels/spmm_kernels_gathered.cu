// Instantiations of the SpMM kernels for gathered tiles (each tile names its 32 B rows).
#include "kernels/spmm_kernel_select.cuh"

namespace bcsr24::kernels {

KernelChoice choose_gathered_kernel(KernelKind kind, int slice_width, OutputType out) {
  return choose_kernel<true>(kind, slice_width, out);
}

}  // namespace bcsr24::kernels
