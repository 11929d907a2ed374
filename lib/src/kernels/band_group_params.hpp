// Arguments of the band-group kernel (kernels/band_group_kernel.cu): several consecutive tile bands per thread
// block, each B block loaded once for all of them (docs/KERNELS.md, "Band groups").
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "device/plan_choices.hpp"
#include "kernels/output_addends.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels {

/// Bands per group: one consumer warp each. 16 bands of a matrix whose tiles lie at random share each B block
/// about twice as often as 4 do (10% tile density: 0.52 B-block loads per tile against 0.86).
inline constexpr int kGroupBands = 16;
/// Output columns per block: one 32 x 64 fp16 B block is one 128-byte-swizzled TMA box.
inline constexpr int kGroupSliceWidth = 64;
/// A tiles per stage (the tiles of one tile column that belong to bands of the group; a column with more
/// takes several steps, each loading the B block again).
inline constexpr int kGroupTilesPerStep = 4;
/// Warps that issue the copies, each every kGroupProducers-th step: one warp issuing a B box, the A tiles and
/// the barrier operations for every step left the consumers waiting (10d0s 16384^2 at n = 128: 118 us with one,
/// 48 us with four, on the H100).
inline constexpr int kGroupProducers = 4;
/// Stages in flight per block (a multiple of kGroupProducers: each stage is then always filled by the same
/// producer, which is what keeps its barrier phases in order).
inline constexpr int kGroupStages = 24;
static_assert(kGroupStages % kGroupProducers == 0, "a stage belongs to one producer");

/// One step: a B block (tile column `col`, the block's column slice) and up to kGroupTilesPerStep A tiles of one
/// list (2:4 steps come first in a group, then dense steps). 32 bytes: one sector.
struct alignas(32) BandGroupStep {
  std::int32_t col;
  std::int32_t count;                        ///< A tiles in the stage, 1..kGroupTilesPerStep
  std::int32_t tile[kGroupTilesPerStep];     ///< index of slot s's tile in its list (slots >= count: unused)
  std::int32_t pad[2];
};
static_assert(sizeof(BandGroupStep) == 32, "one sector");

/// A group's steps: [step_begin, dense_begin) are 2:4 steps, [dense_begin, step_end) dense steps.
struct BandGroup {
  std::int32_t step_begin, dense_begin, step_end;
};

struct BandGroupParams {
  TileListView sparse24;
  TileListView dense;
  const BandGroup* groups = nullptr;
  const BandGroupStep* steps = nullptr;
  /// Per (group, warp) w = group * kGroupBands + warp: the warp's entries are entries[entry_ptr[2w],
  /// entry_ptr[2w + 1]) in the 2:4 steps, then [entry_ptr[2w + 1], entry_ptr[2w + 2]) in the dense steps; an entry
  /// is (step index within the group << 2) | slot.
  const std::int32_t* entry_ptr = nullptr;
  const std::int32_t* entries = nullptr;
  const std::int32_t* group_rows = nullptr;  ///< tile row of (group, warp), -1 where the group has fewer bands
  std::int32_t n_groups = 0;
  std::int32_t n_slices = 0;  ///< ceil(n / kGroupSliceWidth)
  std::int32_t rows = 0;      ///< M
  std::int32_t n = 0;
  const std::int32_t* row_map = nullptr;
  const std::int16_t* stored_row_exponent = nullptr;
  void* c = nullptr;
  std::int64_t ldc = 0;
  float alpha = 1.0f;
  float beta = 0.0f;
  OutputAddends addends;  ///< added to the rows written (band groups never skip a band then)
};

/// Whether the band-group kernel exists for this operand mode (16-bit A and B: the copies land in shared
/// memory as they are, no conversion) and device (compute capability 9.0 or newer: TMA and bulk copies; and a
/// block's opt-in shared memory large enough for the kernel's stages, which the 100 KiB SMs of sm_120 are not).
bool band_groups_supported(OperandMode mode, int device);

/// Sets the kernel's shared-memory attribute (once per plan).
void configure_band_group_kernel(OperandMode mode, ElementType out);

/// The TMA descriptor of B (a CUtensorMap) for one pointer, pitch and shape. The plan keeps the last one, so
/// that runs on the same B (a solver's usual case) do not encode it again on the host.
struct BandGroupBMap {
  alignas(128) std::uint64_t descriptor[16] = {};
  const void* b = nullptr;
  std::uint32_t pitch = 0;
  std::int32_t k = 0, n = 0;
  OperandMode mode = OperandMode::f16;
  bool valid = false;
};

/// Enqueues the kernel over params.n_groups x params.n_slices blocks. `b`: 16-byte aligned, pitch a multiple
/// of 16 bytes (the plan stages B otherwise); rows >= k and columns >= n read as zero. `map` is re-encoded
/// only when b, pitch, k, n or the mode differ from the ones it holds.
void launch_band_group_kernel(OperandMode mode, ElementType out, const BandGroupParams& params,
                              const std::uint16_t* b, std::int32_t k, std::uint32_t b_pitch, BandGroupBMap& map,
                              cudaStream_t stream);

}  // namespace bcsr24::kernels
