// What the block space's kernel files share (block_space_kernels.cu, block_space_reductions.cu,
// block_space_combine.cu, block_space_csr_product.cu): the tile width of the Gram and combine kernels, the row of a
// tile, where a reduction's outputs go and its second pass.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "block_space_kernels.hpp"

namespace bcsr24::solver::block_gpu::shared {

/// A Gram thread computes a kTile x kTile tile of one k x k output; a combine thread kTile adjacent columns of a row.
constexpr int kTile = 4;

/// Where a reduction's outputs go: output o to out[o / per_out][o % per_out].
struct ReductionOutputs {
  double* out[kGramRights] = {};
  int per_out = 1;
};
static_assert(kGramRights == 2, "the Gram kernel and the reductions' outputs pick one of two blocks");

/// The kTile values of a row from column c0 (0 beyond k).
__device__ __forceinline__ void load_tile_row(const double* row, int c0, int k, double v[kTile]) {
#pragma unroll
  for (int i = 0; i < kTile; ++i) v[i] = c0 + i < k ? row[c0 + i] : 0.0;
}

/// Pass 2 of every reduction (block_space_reductions.cu): out[o] = the sum over b < blocks of
/// partial[b * outputs + o], in a fixed order; `name` names the reduction in a launch error.
void launch_sum_partials(int blocks, int outputs, const double* partial, const ReductionOutputs& out,
                         cudaStream_t stream, const char* name);

}  // namespace bcsr24::solver::block_gpu::shared
