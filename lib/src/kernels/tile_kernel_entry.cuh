// The kernel-table entry of one tile-kernel instantiation: the template arguments a kernel kind, operand mode,
// width and depth stand for, and the geometry the plan reads. The generated tile_kernels_*.cu
// (BUILD/lib/kernels_generated/) list the entries.
#pragma once

#include "device/plan_choices.hpp"
#include "format/bcsr24_matrix.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/output_access.cuh"
#include "kernels/spmm_kernel.cuh"
#include "kernels/tile_geometry.hpp"

namespace bcsr24::kernels {

template <KernelKind kKind, OperandMode kMode, int kSliceWidth, TilePipeline kPipeline, typename OutT,
          BRowIndex kBRows, bool kSplitBands>
constexpr TileKernel tile_kernel_entry() {
  static_assert(kKind == KernelKind::split_pipelined, "split_pipelined is the one tile kernel");
  static_assert(kPipeline == TilePipeline::standard ||
                    tile_stages<kSliceWidth, kMode, true>() != tile_stages<kSliceWidth, kMode, false>(),
                "a deep entry must be a kernel of its own (where the depths agree, plans ask for standard)");
  constexpr int kStages = tile_stages<kSliceWidth, kMode, kPipeline == TilePipeline::deep>();
  constexpr bool kSparseList = true;  // the 2:4 list on mma.sp, the dense list on mma.sync
  constexpr int kRows = kBRows == BRowIndex::implicit ? kImplicitRows : kFullRows;
  return {TileKernelKey{kKind, kMode, kSliceWidth, kPipeline, output_type_of<OutT>(), kBRows, kSplitBands},
          bcsr24_spmm_kernel<kSliceWidth, kMode, kStages, kSparseList, kRows, OutT, kSplitBands>,
          spmm_shared_bytes<kSliceWidth, kStages, kSparseList, kMode>(), kStages,
          &register_blocks_per_sm<kSliceWidth, kMode, kStages, kSparseList, kRows>};
}

}  // namespace bcsr24::kernels
