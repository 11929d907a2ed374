// The tile kernel's work items (lib/src/device/tile_schedule.hpp): which bands are split, into how many parts,
// and that the parts cover every list range of their band exactly once. Host code: tested without a GPU.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "device/cost_model.hpp"
#include "device/tile_schedule.hpp"

using namespace bcsr24;

namespace {

detail::BandStats band_of(std::int32_t sparse24_tiles, std::int32_t dense_tiles) {
  detail::BandStats s;
  s.sparse24_tiles = sparse24_tiles;
  s.dense_tiles = dense_tiles;
  s.sparse24_nnz = 64 * std::int64_t(sparse24_tiles);
  s.dense_nnz = 200 * std::int64_t(dense_tiles);
  s.rows = 16;
  s.max_row_nnz = static_cast<std::int32_t>((s.sparse24_nnz + s.dense_nnz) / 16);
  return s;
}

/// Descriptors of consecutive bands with the given (2:4, dense) tile counts, as a DeviceMatrix builds them.
std::vector<kernels::TileRowWork> descriptors(const std::vector<std::pair<std::int32_t, std::int32_t>>& tiles) {
  std::vector<kernels::TileRowWork> out;
  std::int32_t s24 = 0, dense = 0, merged = 0;
  for (std::size_t r = 0; r < tiles.size(); ++r) {
    kernels::TileRowWork w{};
    w.tile_row = static_cast<std::int32_t>(r);
    w.sparse24_begin = s24;
    w.sparse24_end = s24 += tiles[r].first;
    w.dense_begin = dense;
    w.dense_end = dense += tiles[r].second;
    w.merged_begin = merged;
    w.merged_end = merged += tiles[r].first + tiles[r].second;
    w.split = kernels::kUnsplit;
    out.push_back(w);
  }
  return out;
}

}  // namespace

TEST_CASE("tile schedule: parts per band from the fair share of a block slot", "[schedule]") {
  const std::vector<detail::BandStats> bands(1000, band_of(3, 2));  // 5,000 tiles
  CHECK(detail::split_tiles_per_part(bands, 0) == 0);                // no GPU size: never split
  CHECK(detail::split_tiles_per_part(bands, 1188) == detail::kMinTilesPerPart);  // share 5: the floor holds
  CHECK(detail::split_tiles_per_part(bands, 50) == 100);
  CHECK(detail::split_parts(1000, 0) == 1);
  CHECK(detail::split_parts(64, 32) == 1);   // up to twice the share: one block
  CHECK(detail::split_parts(65, 32) == 3);
  CHECK(detail::split_parts(320, 32) == 10);
  CHECK(detail::split_parts(std::int64_t(1) << 40, 32) == detail::kMaxPartsPerBand);
}

TEST_CASE("tile schedule: split parts cover their band's lists exactly, longest items first", "[schedule]") {
  // Band 1 (500 tiles) and band 3 (100 dense) are split at 32 tiles per part; bands 0, 2 and 4 are not.
  const std::vector<std::pair<std::int32_t, std::int32_t>> tiles = {{3, 4}, {300, 200}, {0, 0}, {0, 100}, {60, 4}};
  const auto bands = descriptors(tiles);
  const detail::TileSchedule s = detail::schedule_tile_bands(bands, 32);
  REQUIRE(s.groups.size() == 2);
  CHECK(s.groups[0].parts == 16);  // ceil(500 / 32)
  CHECK(s.groups[1].parts == 4);   // ceil(100 / 32)
  CHECK(s.groups[0].first_partial == 0);
  CHECK(s.groups[1].first_partial == 16);
  CHECK(s.partials == 20);
  CHECK(s.items.size() == 3 + 16 + 4);

  // Per band: the items' ranges of each list tile the band's range without gaps or overlap.
  for (const kernels::TileRowWork& band : bands) {
    INFO("band " << band.tile_row);
    std::vector<std::uint8_t> s24(std::size_t(band.sparse24_end - band.sparse24_begin)),
        dense(std::size_t(band.dense_end - band.dense_begin)), merged(std::size_t(band.merged_end - band.merged_begin));
    std::vector<std::uint8_t> parts_seen;
    for (const kernels::TileRowWork& item : s.items) {
      if (item.tile_row != band.tile_row) continue;
      for (std::int32_t t = item.sparse24_begin; t < item.sparse24_end; ++t) ++s24[std::size_t(t - band.sparse24_begin)];
      for (std::int32_t t = item.dense_begin; t < item.dense_end; ++t) ++dense[std::size_t(t - band.dense_begin)];
      for (std::int32_t t = item.merged_begin; t < item.merged_end; ++t) ++merged[std::size_t(t - band.merged_begin)];
      if (item.split != kernels::kUnsplit) {
        const std::int32_t group = item.split >> kernels::kSplitPartBits;
        const std::int32_t part = item.split & ((1 << kernels::kSplitPartBits) - 1);
        REQUIRE(group < static_cast<std::int32_t>(s.groups.size()));
        CHECK(part < s.groups[std::size_t(group)].parts);
        if (parts_seen.size() <= std::size_t(part)) parts_seen.resize(std::size_t(part) + 1);
        ++parts_seen[std::size_t(part)];
      }
    }
    for (const auto* list : {&s24, &dense, &merged})
      for (const std::uint8_t times : *list) CHECK(times == 1);
    for (const std::uint8_t times : parts_seen) CHECK(times == 1);  // each part exactly once
  }
  // Longest first, by the bytes a block moves (2:4 tiles count 9/16 of a dense one).
  for (std::size_t i = 1; i < s.items.size(); ++i) {
    auto work = [](const kernels::TileRowWork& w) {
      return 9 * (w.sparse24_end - w.sparse24_begin) + 16 * (w.dense_end - w.dense_begin);
    };
    CHECK(work(s.items[i - 1]) >= work(s.items[i]));
  }
  // Nothing to split: the items are the bands, unchanged.
  const detail::TileSchedule none = detail::schedule_tile_bands(bands, 0);
  CHECK(none.groups.empty());
  CHECK(none.items.size() == bands.size());
}

TEST_CASE("cost model: splitting a long band shortens its latency, not its work", "[schedule][cost_model]") {
  const detail::BandStats long_band = band_of(400, 400);
  detail::CostContext whole{32, true, 100000, std::int64_t(50) << 20, 0};
  detail::CostContext split = whole;
  split.tiles_per_part = 32;
  CHECK(detail::tile_band_latency_ns(long_band, split) < 0.2 * detail::tile_band_latency_ns(long_band, whole));
  CHECK(detail::tile_band_ns(long_band, split) >= detail::tile_band_ns(long_band, whole));
  const detail::BandStats short_band = band_of(10, 10);
  CHECK(detail::tile_band_latency_ns(short_band, split) == detail::tile_band_latency_ns(short_band, whole));
  CHECK(detail::tile_band_ns(short_band, split) == detail::tile_band_ns(short_band, whole));
}

TEST_CASE("tile pipeline: deep where the grid fits one wave of it or long bands fill several, or where asked",
          "[schedule]") {
  using detail::TileGrid;
  using detail::tile_pipeline_for;
  // 132 SMs at 32 columns: 9 standard blocks per SM, 5 deep.
  auto grid = [](std::int64_t bands, std::int64_t tiles, std::int64_t slices) {
    return TileGrid{bands, tiles, slices, 132 * 9, 132 * 5};
  };
  // No deep pipeline at this width and mode: standard whatever was asked.
  for (const TilePipeline asked : {TilePipeline::automatic, TilePipeline::standard, TilePipeline::deep})
    CHECK(tile_pipeline_for(asked, false, grid(10, 40, 1)) == TilePipeline::standard);
  // One deep wave (660 blocks): deep, whatever the band lengths.
  CHECK(tile_pipeline_for(TilePipeline::automatic, true, grid(306, 1519, 1)) == TilePipeline::deep);  // bcsstk16
  CHECK(tile_pipeline_for(TilePipeline::automatic, true, grid(660, 660, 1)) == TilePipeline::deep);
  // More than one deep wave but one standard wave (1188 blocks): standard, even for long bands (XdYs 16384^2).
  CHECK(tile_pipeline_for(TilePipeline::automatic, true, grid(661, 661, 1)) == TilePipeline::standard);
  CHECK(tile_pipeline_for(TilePipeline::automatic, true, grid(1024, 52429, 1)) == TilePipeline::standard);
  CHECK(tile_pipeline_for(TilePipeline::automatic, true, grid(1188, 1188 * 4 * 20, 1)) == TilePipeline::standard);
  // Several standard waves: deep for long bands (>= 6 tiles per warp), standard for short ones (meshes).
  CHECK(tile_pipeline_for(TilePipeline::automatic, true, grid(1024, 52429, 2)) == TilePipeline::deep);  // 12.8
  CHECK(tile_pipeline_for(TilePipeline::automatic, true, grid(1189, 1189 * 24, 1)) == TilePipeline::deep);  // 6.0
  CHECK(tile_pipeline_for(TilePipeline::automatic, true, grid(1189, 1189 * 24 - 1, 1)) == TilePipeline::standard);
  CHECK(tile_pipeline_for(TilePipeline::automatic, true, grid(12000, 80004, 1)) == TilePipeline::standard);  // 40^3
  // Forced: as asked.
  CHECK(tile_pipeline_for(TilePipeline::deep, true, grid(12000, 80004, 1)) == TilePipeline::deep);
  CHECK(tile_pipeline_for(TilePipeline::standard, true, grid(306, 1519, 1)) == TilePipeline::standard);
}
