// Band groups: which tiles a block of the band-group kernel multiplies in which step, and when a plan takes that
// kernel instead of the one-band-per-block tile kernel (kernels/band_group_params.hpp, docs/KERNELS.md).
//
// Host code only (tested without a GPU).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/band_group_params.hpp"

namespace bcsr24::detail {

/// The tile index of one list on the host: per band its range of tiles, per tile its tile column.
struct HostTileIndex {
  std::vector<std::int32_t> row_ptr;  ///< tile_rows + 1
  std::vector<std::int32_t> col_idx;
};

struct BandGroupSchedule {
  std::vector<kernels::BandGroup> groups;
  std::vector<kernels::BandGroupStep> steps;
  std::vector<std::int32_t> entry_ptr;   ///< 2 x groups x kGroupBands + 1 (kernels::BandGroupParams)
  std::vector<std::int32_t> entries;
  std::vector<std::int32_t> group_rows;  ///< groups x kGroupBands
  std::int64_t tiles = 0;                ///< tiles of all steps
  std::int64_t steps_count() const { return std::int64_t(steps.size()); }
};

/// Groups kGroupBands consecutive entries of `tile_rows` (the bands the tile kernel runs, ascending) and, per
/// group and list (2:4 first), merges its bands' tiles by tile column into steps of at most kGroupTilesPerStep
/// tiles of one column. Tiles of an aligned layout name their B block by their tile column, which is what lets
/// the bands share it.
/// @throw SizeLimitError when a group's steps do not fit the entries' 30 bits.
BandGroupSchedule build_band_groups(const std::vector<std::int32_t>& tile_rows, const HostTileIndex& sparse24,
                                    const HostTileIndex& dense);

/// Fewest output columns at which automatic plans group bands: at 64 one slice leaves half the SMs of a
/// 1024-band matrix idle (10d0s 16384^2: 48 us grouped against 39 us on the H100), from 128 on two or more
/// slices fill the GPU.
inline constexpr std::int32_t kGroupMinColumns = 128;
/// Most B-block loads per tile at which grouping pays: the step has to save at least this share of B loads for
/// the producer-consumer hand-off to be worth it. Random 10% tile density gives 0.52 (16 bands).
inline constexpr double kGroupMaxStepsPerTile = 0.6;
/// Fewest blocks, as a share of the SMs, a grouped grid must have: one block runs per SM.
inline constexpr double kGroupMinWaveShare = 0.9;

/// Whether an automatic plan runs its tile bands grouped: n >= kGroupMinColumns, the steps save B loads
/// (steps <= kGroupMaxStepsPerTile x tiles) and the grid fills the GPU.
bool band_groups_pay(const BandGroupSchedule& schedule, std::int32_t n, int multiprocessors);

}  // namespace bcsr24::detail
