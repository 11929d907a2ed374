// Experimental, not installed, not stable: the plan knobs the benchmarks and tests turn to compare a plan's
// automatic choices with the alternatives. A library user has no reason to set them: the defaults are what
// the cost model (or the tuner) would pick. In-tree programs reach this header through bcsr24::experimental.
#pragma once

#include <cstdint>

#include "bcsr24/sparse_operator.hpp"
#include "bcsr24/spmm_plan.hpp"

namespace bcsr24::experimental {

/// Pipeline depth of the tile kernel where there is a choice: fp32 B with fp16 or bf16 A at 32 or more columns
/// (docs/KERNELS.md, "Pipeline depth of the fp32-B modes").
enum class TilePipeline {
  automatic,  ///< deep where the tile kernel's blocks fit in one wave of the deep kernel (small matrices), or
              ///< where long bands (>= 6 tiles per warp) fill more than one wave of the standard one
  standard,   ///< the stages that keep fp16 mode's blocks per SM (one per warp in the fp32-B modes at 32+ columns)
  deep,       ///< two stages per warp: copies overlap the math, fewer blocks per SM
};
const char* tile_pipeline_name(TilePipeline pipeline) noexcept;

/// Whether the tile bands run 16 to a thread block, each B block loaded once for every band of the block that
/// has a tile in its tile column (docs/KERNELS.md, "Band groups"). Needs compute capability 9.0 (TMA), 16-bit A
/// and B, a layout whose tiles name their B block by tile column (aligned layouts), and n a multiple of 64 (whole
/// column slices: a partial last slice gave wrong outputs on the H100, cause not yet found).
enum class BandGroups {
  automatic,  ///< grouped where it saves B loads and fills the GPU: n >= 128, at most 0.6 B-block loads per tile,
              ///< enough groups for the SMs (automatic kernel only)
  off,        ///< one band per block
  on,         ///< grouped (automatic and split_pipelined; InvalidArgument where the kernel cannot run)
};
const char* band_groups_name(BandGroups groups) noexcept;

/// Which bands an automatic plan runs on the CUDA-core CSR kernel and on the narrow-vector tensor-core kernel
/// (docs/KERNELS.md, "The cost model" and "The narrow-vector path").
enum class BandPaths {
  automatic,  ///< the fastest of tiles, csr and hybrid by the cost model's prediction (the model does not pick the
              ///< vector paths until their constants are measured; measured plans time them as candidates)
  tiles,      ///< every band on the tile kernel
  csr,        ///< every band on CSR rows (InvalidArgument unless every band has a CSR copy on the device)
  hybrid,     ///< the cost model's per-band split, also where it predicts one of the pure plans faster
  vectors,    ///< every band on narrow vectors (16-bit A and B only: InvalidArgument for split precision or fp32 B;
              ///< experimental::make_plan uploads the vectors of every band for it)
  hybrid_vectors,  ///< the hybrid's split with its CSR bands (the low-reuse ones) on narrow vectors where the
                   ///< upload kept their vectors (where they take at most 2.5x the CSR bytes), else on CSR; the rest
                   ///< on tiles. Same limits as vectors
};
const char* band_paths_name(BandPaths paths) noexcept;

/// What an automatic plan decides by itself, forced one way for a comparison (and by the tuner, which measures
/// a few of these settings: docs/KERNELS.md, "Measured plans").
struct PlanKnobs {
  /// Split a band with far more tiles than the GPU's fair share per block over several blocks, whose partial
  /// sums the last of them adds in a fixed order (still bit-identical run to run). Off: one block per band, as
  /// the thesis's kernels ran.
  bool split_long_bands = true;
  TilePipeline tile_pipeline = TilePipeline::automatic;
  BandGroups band_groups = BandGroups::automatic;
  BandPaths paths = BandPaths::automatic;
  /// Warps per column slice of the narrow-vector kernel; 0: as many as the GPU keeps resident at this n. Tests set
  /// a few so that each warp walks many windows whatever the GPU.
  std::int32_t vector_warps = 0;
  /// Most K-steps of a narrow-vector work piece (longer windows are split, their parts added in part order);
  /// 0: automatic (device/vector_schedule.hpp).
  std::int32_t vector_piece_steps = 0;
  /// CSR short rows two to a group (docs/KERNELS.md, "Short rows in pairs"): -1 automatic, 0 off, 1 on where the
  /// kernel has the path (n >= 8 with 16-bit B; elsewhere it has no effect). Tests force it on small matrices.
  std::int32_t csr_short_pairs = -1;
  /// CSR short rows in runs of consecutive rows per group (docs/KERNELS.md, "Short rows in runs"): -1 automatic, 0
  /// off, R >= 2 runs of R rows (at most 8 and fewer than the group's lanes) where the kernel has the path (16-bit B,
  /// n >= 8, every slot of the CSR copy in the plan: short rows without a list; elsewhere no effect). Runs replace
  /// pairs where both are asked for.
  std::int32_t csr_short_run_rows = -1;
};

/// True when every knob has its default value (the only case in which Tuning::measure measures anything).
bool default_knobs(const PlanKnobs& knobs) noexcept;

/// SparseOperator::make_plan with the knobs set.
/// @throw as make_plan; InvalidArgument where a forced choice cannot run (e.g. band groups on a gathered layout).
SpmmPlan make_plan(const SparseOperator& op, std::int32_t n, KernelKind kernel, const PlanOptions& options,
                   const PlanKnobs& knobs);

}  // namespace bcsr24::experimental
