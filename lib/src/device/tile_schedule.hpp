// How the tile kernel's blocks share the bands: one work item per band, except that a band much longer than the
// GPU's fair share is split into parts whose partial sums are added in a fixed order (deterministic), so one
// long band does not run alone on one SM while the rest of the GPU idles.
//
// Host code only (tested without a GPU). The plan builds the schedule once; the kernel reads the items and,
// for split bands, the groups (kernels/spmm_params.hpp, TileRowWork::split).
#pragma once

#include <cstdint>
#include <vector>

#include "format/band_csr.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/sm_limits.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24::detail {

/// Fewest tiles a part of a split band gets: 8 pipeline rounds of each of the block's 4 warps, enough to
/// amortise the block's start and the extra pass through the partial-sum buffer.
inline constexpr std::int32_t kMinTilesPerPart = 32;
/// Most parts of one band (the part index has 8 bits in TileRowWork::split).
inline constexpr std::int32_t kMaxPartsPerBand = 255;

/// Tiles per part for a matrix whose bands are `bands`, on a GPU that holds `block_slots` tile-kernel blocks at
/// once: the fair share of one block slot, at least kMinTilesPerPart. 0 when block_slots is 0 (never split).
std::int32_t split_tiles_per_part(const std::vector<BandStats>& bands, std::int64_t block_slots);

/// Parts a band of `tiles` tiles is cut into: 1 unless it is more than twice `tiles_per_part` long.
std::int32_t split_parts(std::int64_t tiles, std::int32_t tiles_per_part);

/// What the choice of pipeline depth looks at: the tile kernel's grid and how long its warps' walks are.
struct TileGrid {
  std::int64_t bands = 0;           ///< bands with tiles (one block each per column slice)
  std::int64_t tiles = 0;           ///< tiles of those bands
  std::int64_t slices = 1;          ///< column slices
  std::int64_t standard_slots = 0;  ///< SMs x the standard kernel's blocks per SM
  std::int64_t deep_slots = 0;      ///< SMs x the deep kernel's blocks per SM
};

/// Mean tiles per warp from which the deep pipeline pays on grids of more than one standard wave: below it a
/// warp has too few tiles for its two stages to overlap anything, and the standard kernel's extra blocks per SM
/// win (meshes, 1.7-2.2 tiles per warp: deep 3-14% slower at every n); from it on the deep one is faster where
/// both need several waves (XdYs 16384^2, 12.8 tiles per warp: 3-11% faster at n = 64 and 128). Between 2.2 and
/// 5 nothing was measured; at 5.1 (1d1s 32768^2) deep is 5% faster at n = 32 and within 1% from 64 on.
inline constexpr double kDeepTilesPerWarp = 6.0;

/// The tile kernel's pipeline depth for a plan that asks for `requested`. Where the mode and width offer no
/// deep pipeline (`deep_differs` false) it is standard. automatic takes the deep one
/// - when the grid fits in one wave of it: the fewer blocks per SM then cost nothing, and each warp gets its
///   copies in flight during its math (bcsstk13/16: 10-16% faster with fp32 B at 32 and 64 columns); or
/// - when the grid needs more than one wave of the standard kernel anyway and the warps walk long bands
///   (kDeepTilesPerWarp): then a block's time is its warps' walks, which the second stage shortens.
/// Otherwise standard: a grid that fits one standard wave but not one deep wave would get a second wave (XdYs
/// 16384^2 at n = 32: 3-6% slower deep), and short bands gain nothing from the depth (meshes: 3-14% slower).
/// docs/KERNELS.md, "Pipeline depth of the fp32-B modes".
TilePipeline tile_pipeline_for(TilePipeline requested, bool deep_differs, const TileGrid& grid);

/// The tile part's depth and long-band split as a plan decides them, before it knows which bands run on tiles.
struct TileLaunch {
  TilePipeline pipeline = TilePipeline::standard;  ///< resolved: standard or deep
  bool deep_exists = false;          ///< the kernel table has a deep entry for the key: the depth is a choice
  std::int64_t block_slots = 0;      ///< SMs x blocks per SM of the entry at `pipeline`
  std::int32_t tiles_per_part = 0;   ///< the long-band split's part size (0: no split)
};

/// The depth (tile_pipeline_for, on the grid of every band with tiles) and the part size of the long-band split
/// (split_tiles_per_part, 0 unless `split_long_bands`) of a tile part whose kernel is the table entry of `key` at
/// each depth (its pipeline and split_bands are not looked at: the register budget, so the block slots, is the
/// same with or without split bands). The block slots come from each entry's blocks per SM on an SM of `sm`, times
/// `multiprocessors`: the device's values in a plan, an assumed device's where there is none (model_predict).
/// @throw InvalidArgument where the table has no standard entry for the key.
TileLaunch tile_launch_for(const std::vector<BandStats>& bands, std::int32_t n, kernels::TileKernelKey key,
                           int multiprocessors, const kernels::SmLimits& sm, TilePipeline requested,
                           bool split_long_bands);

struct TileSchedule {
  std::vector<kernels::TileRowWork> items;       ///< longest first; split bands have one item per part
  std::vector<kernels::SplitGroup> groups;       ///< one per split band
  std::int32_t partials = 0;                     ///< partial-sum slots of all groups (per column slice)
};

/// The work items for `bands` (the tile bands' descriptors, any order). A band of t tiles is cut into
/// split_parts(t, tiles_per_part) items over consecutive ranges of each of its lists.
/// @throw SizeLimitError when there are more split bands than TileRowWork::split can number.
TileSchedule schedule_tile_bands(const std::vector<kernels::TileRowWork>& bands, std::int32_t tiles_per_part);

}  // namespace bcsr24::detail
