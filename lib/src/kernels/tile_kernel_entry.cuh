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

/// Stages per warp of a kind's dense loop: dense_bt copies, waits and computes one tile at a time; the pipelined
/// kinds take the depth of their width and mode.
template <KernelKind kKind, OperandMode kMode, int kSliceWidth, TilePipeline kPipeline>
constexpr int kind_stages() {
  if constexpr (kKind == KernelKind::dense_bt) return 1;
  else if constexpr (kKind == KernelKind::dense_pipelined) return pipelined_stages<kSliceWidth, kMode>();
  else return tile_stages<kSliceWidth, kMode, kPipeline == TilePipeline::deep>();
}

template <KernelKind kKind, OperandMode kMode, int kSliceWidth, TilePipeline kPipeline, typename OutT,
          BRowIndex kBRows, bool kSplitBands>
constexpr TileKernel tile_kernel_entry() {
  static_assert(kKind == KernelKind::dense_bt || kKind == KernelKind::dense_pipelined ||
                    kKind == KernelKind::split_pipelined,
                "tile kernels are the three rungs of the ladder");
  static_assert(kKind == KernelKind::split_pipelined || kMode == OperandMode::f16,
                "the dense rungs multiply fp16 A with fp16 B only");
  static_assert(kPipeline == TilePipeline::standard ||
                    kind_stages<kKind, kMode, kSliceWidth, TilePipeline::deep>() !=
                        kind_stages<kKind, kMode, kSliceWidth, TilePipeline::standard>(),
                "a deep entry must be a kernel of its own (where the depths agree, plans ask for standard)");
  constexpr int kStages = kind_stages<kKind, kMode, kSliceWidth, kPipeline>();
  constexpr bool kSparseList = kKind == KernelKind::split_pipelined;
  constexpr int kRows = kBRows == BRowIndex::implicit ? kImplicitRows : kFullRows;
  return {TileKernelKey{kKind, kMode, kSliceWidth, kPipeline, output_type_of<OutT>(), kBRows, kSplitBands},
          bcsr24_spmm_kernel<kSliceWidth, kMode, kStages, kSparseList, kRows, OutT, kSplitBands>,
          spmm_shared_bytes<kSliceWidth, kStages, kSparseList, kMode>(), kStages,
          &register_blocks_per_sm<kSliceWidth, kMode, kStages, kSparseList, kRows>};
}

}  // namespace bcsr24::kernels
