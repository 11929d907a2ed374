// Instantiations of the split_pipelined kernel for operand mode f16_f32b (every slice width, B-row index kind and
// split-band variant; fp32 output), in a translation unit of their own so a parallel build compiles the modes at once.
#include "kernels/spmm_kernel_select.cuh"

namespace bcsr24::kernels {

KernelChoice choose_f16_f32b_kernel(int slice_width, BRowIndex index, bool split_bands, TilePipeline pipeline) {
  return choose_mode_kernel<OperandMode::f16_f32b>(slice_width, index, split_bands, pipeline);
}

}  // namespace bcsr24::kernels
