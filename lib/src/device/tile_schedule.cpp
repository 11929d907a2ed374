// Work items of the tile kernel: which bands are split into parts, where their partial sums go, and the pipeline
// depth.
#include "device/tile_schedule.hpp"

#include <algorithm>
#include <string>

#include "bcsr24/error.hpp"

namespace bcsr24::detail {

namespace {

constexpr std::int32_t kMaxGroups = (std::int32_t{1} << 23) - 1;

std::int64_t tiles_of(const kernels::TileRowWork& w) {
  return std::int64_t(w.sparse24_end - w.sparse24_begin) + (w.dense_end - w.dense_begin);
}

/// [begin, end) cut into `parts` consecutive ranges as equal as possible: the start of range q.
std::int32_t cut(std::int32_t begin, std::int32_t end, std::int32_t q, std::int32_t parts) {
  return begin + static_cast<std::int32_t>(std::int64_t(end - begin) * q / parts);
}

}  // namespace

std::int32_t split_tiles_per_part(const std::vector<BandStats>& bands, std::int64_t block_slots) {
  if (block_slots <= 0) return 0;
  std::int64_t tiles = 0;
  for (const BandStats& b : bands) tiles += b.tiles();
  const std::int64_t share = (tiles + block_slots - 1) / block_slots;
  return static_cast<std::int32_t>(std::min<std::int64_t>(std::max<std::int64_t>(kMinTilesPerPart, share), INT32_MAX / 2));
}

std::int32_t split_parts(std::int64_t tiles, std::int32_t tiles_per_part) {
  if (tiles_per_part <= 0 || tiles <= 2 * std::int64_t(tiles_per_part)) return 1;
  return static_cast<std::int32_t>(std::min<std::int64_t>(kMaxPartsPerBand, (tiles + tiles_per_part - 1) / tiles_per_part));
}

TilePipeline tile_pipeline_for(TilePipeline requested, bool deep_differs, const TileGrid& grid) {
  if (!deep_differs) return TilePipeline::standard;
  if (requested != TilePipeline::automatic) return requested;
  const std::int64_t blocks = grid.bands * grid.slices;
  if (blocks <= grid.deep_slots) return TilePipeline::deep;
  const double tiles_per_warp = double(grid.tiles) / (double(grid.bands) * kernels::kTileKernelWarps);
  if (blocks > grid.standard_slots && tiles_per_warp >= kDeepTilesPerWarp) return TilePipeline::deep;
  return TilePipeline::standard;
}

TileLaunch tile_launch_for(const std::vector<BandStats>& bands, std::int32_t n, kernels::TileKernelKey key,
                           int multiprocessors, const kernels::SmLimits& sm, TilePipeline requested,
                           bool split_long_bands) {
  key.split_bands = false;
  key.pipeline = TilePipeline::standard;
  const kernels::TileKernel& standard = kernels::tile_kernel(key);
  key.pipeline = TilePipeline::deep;
  const kernels::TileKernel* deep = kernels::find_tile_kernel(key);
  TileGrid grid;
  for (const BandStats& s : bands) {
    grid.bands += s.tiles() > 0 ? 1 : 0;
    grid.tiles += s.tiles();
  }
  grid.slices = (std::int64_t(n) + key.slice_width - 1) / key.slice_width;
  grid.standard_slots = std::int64_t(multiprocessors) * kernels::tile_blocks_per_sm(standard, sm);
  grid.deep_slots = std::int64_t(multiprocessors) * kernels::tile_blocks_per_sm(deep ? *deep : standard, sm);
  TileLaunch launch;
  launch.deep_exists = deep != nullptr;
  launch.pipeline = tile_pipeline_for(requested, launch.deep_exists, grid);
  launch.block_slots = launch.pipeline == TilePipeline::deep ? grid.deep_slots : grid.standard_slots;
  // Bands far longer than one block slot's fair share of the tiles are split over several blocks.
  launch.tiles_per_part = split_long_bands ? split_tiles_per_part(bands, launch.block_slots) : 0;
  return launch;
}

TileSchedule schedule_tile_bands(const std::vector<kernels::TileRowWork>& bands, std::int32_t tiles_per_part) {
  TileSchedule s;
  s.items.reserve(bands.size());
  for (const kernels::TileRowWork& w : bands) {
    const std::int32_t parts = split_parts(tiles_of(w), tiles_per_part);
    if (parts == 1) {
      kernels::TileRowWork item = w;
      item.split = kernels::kUnsplit;
      s.items.push_back(item);
      continue;
    }
    if (static_cast<std::int64_t>(s.groups.size()) >= kMaxGroups)
      throw SizeLimitError("tile schedule: more than " + std::to_string(kMaxGroups) + " bands need splitting");
    const std::int32_t group = static_cast<std::int32_t>(s.groups.size());
    s.groups.push_back(kernels::SplitGroup{s.partials, parts});
    s.partials += parts;
    for (std::int32_t q = 0; q < parts; ++q) {
      kernels::TileRowWork item = w;
      item.sparse24_begin = cut(w.sparse24_begin, w.sparse24_end, q, parts);
      item.sparse24_end = cut(w.sparse24_begin, w.sparse24_end, q + 1, parts);
      item.dense_begin = cut(w.dense_begin, w.dense_end, q, parts);
      item.dense_end = cut(w.dense_begin, w.dense_end, q + 1, parts);
      item.merged_begin = cut(w.merged_begin, w.merged_end, q, parts);
      item.merged_end = cut(w.merged_begin, w.merged_end, q + 1, parts);
      item.split = (group << kernels::kSplitPartBits) | q;
      s.items.push_back(item);
    }
  }
  // Longest items first (a 2:4 tile moves ~9/16 of a dense tile's bytes), so they do not end the launch.
  auto work = [](const kernels::TileRowWork& w) {
    return 9 * std::int64_t(w.sparse24_end - w.sparse24_begin) + 16 * std::int64_t(w.dense_end - w.dense_begin);
  };
  std::stable_sort(s.items.begin(), s.items.end(),
                   [&](const kernels::TileRowWork& a, const kernels::TileRowWork& b) { return work(a) > work(b); });
  return s;
}

}  // namespace bcsr24::detail
