// Band groups (lib/src/device/band_groups.hpp): every tile lands in exactly one step slot of its group, steps
// hold tiles of one tile column and one list, 2:4 steps come first, warps' entries are in step order, and the
// rule automatic plans use. Host code: tested without a GPU.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "device/band_groups.hpp"
#include "device/cost_model.hpp"

using namespace bcsr24;
using detail::BandGroupSchedule;
using detail::HostTileIndex;
using kernels::kGroupBands;
using kernels::kGroupTilesPerStep;

namespace {

/// A tile index of `bands` bands over `tile_cols` tile columns, each (band, column) holding a tile with
/// probability `density`.
HostTileIndex random_index(std::int32_t bands, std::int32_t tile_cols, double density, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution pick(density);
  HostTileIndex index;
  index.row_ptr.push_back(0);
  for (std::int32_t b = 0; b < bands; ++b) {
    for (std::int32_t c = 0; c < tile_cols; ++c)
      if (pick(rng)) index.col_idx.push_back(c);
    index.row_ptr.push_back(std::int32_t(index.col_idx.size()));
  }
  return index;
}

/// Checks the schedule against the lists it was built from; returns the tiles it covers.
std::int64_t check_schedule(const BandGroupSchedule& s, const std::vector<std::int32_t>& rows, const HostTileIndex& sparse24,
                            const HostTileIndex& dense) {
  REQUIRE(s.groups.size() == (rows.size() + kGroupBands - 1) / kGroupBands);
  REQUIRE(s.entry_ptr.size() == 2 * s.groups.size() * kGroupBands + 1);
  REQUIRE(s.group_rows.size() == s.groups.size() * kGroupBands);
  std::set<std::pair<int, std::int32_t>> seen;  // (list, tile)
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    const kernels::BandGroup& group = s.groups[g];
    REQUIRE(group.step_begin <= group.dense_begin);
    REQUIRE(group.dense_begin <= group.step_end);
    if (g > 0) REQUIRE(group.step_begin == s.groups[g - 1].step_end);
    for (int w = 0; w < kGroupBands; ++w) {
      const std::size_t slot = g * kGroupBands + std::size_t(w);
      const std::size_t row_index = g * kGroupBands + std::size_t(w);
      REQUIRE(s.group_rows[slot] == (row_index < rows.size() ? rows[row_index] : -1));
      for (int list = 0; list < 2; ++list) {
        const HostTileIndex& index = list == 0 ? sparse24 : dense;
        const std::int32_t begin = s.entry_ptr[2 * slot + std::size_t(list)];
        const std::int32_t end = s.entry_ptr[2 * slot + std::size_t(list) + 1];
        std::int32_t previous = -1;
        for (std::int32_t e = begin; e < end; ++e) {
          const std::int32_t step = s.entries[std::size_t(e)] >> 2, k = s.entries[std::size_t(e)] & 3;
          REQUIRE(step > previous);  // in step order
          previous = step;
          const std::int32_t global = group.step_begin + step;
          REQUIRE(global < (list == 0 ? group.dense_begin : group.step_end));
          REQUIRE(global >= (list == 0 ? group.step_begin : group.dense_begin));
          const kernels::BandGroupStep& st = s.steps[std::size_t(global)];
          REQUIRE(k < st.count);
          const std::int32_t tile = st.tile[k];
          const std::int32_t band = s.group_rows[slot];
          REQUIRE(tile >= index.row_ptr[std::size_t(band)]);  // the tile belongs to this warp's band
          REQUIRE(tile < index.row_ptr[std::size_t(band) + 1]);
          REQUIRE(index.col_idx[std::size_t(tile)] == st.col);
          REQUIRE(seen.insert({list, tile}).second);
        }
      }
    }
  }
  std::int64_t slots = 0;
  for (const kernels::BandGroupStep& st : s.steps) {
    REQUIRE(st.count >= 1);
    REQUIRE(st.count <= kGroupTilesPerStep);
    slots += st.count;
  }
  REQUIRE(slots == std::int64_t(seen.size()));  // every slot is some warp's entry
  REQUIRE(slots == s.tiles);
  return slots;
}

}  // namespace

TEST_CASE("band groups cover every tile once, by tile column, 2:4 steps first", "[band_groups]") {
  const std::int32_t bands = 53, tile_cols = 40;
  const HostTileIndex sparse24 = random_index(bands, tile_cols, 0.15, 1);
  const HostTileIndex dense = random_index(bands, tile_cols, 0.3, 2);
  SECTION("every band") {
    std::vector<std::int32_t> rows(bands);
    for (std::int32_t b = 0; b < bands; ++b) rows[std::size_t(b)] = b;
    const BandGroupSchedule s = detail::build_band_groups(rows, sparse24, dense);
    CHECK(check_schedule(s, rows, sparse24, dense) == std::int64_t(sparse24.col_idx.size() + dense.col_idx.size()));
    CHECK(s.groups.size() == 4);  // 16 + 16 + 16 + 5
    CHECK(s.group_rows.back() == -1);
    // Sharing: 16 bands at 30% density put ~4.8 tiles in a column, so steps are far fewer than tiles.
    CHECK(s.steps_count() < s.tiles / 2);
  }
  SECTION("a subset of the bands (the others on CSR)") {
    const std::vector<std::int32_t> rows{0, 3, 4, 9, 10, 11, 30, 52};
    const BandGroupSchedule s = detail::build_band_groups(rows, sparse24, dense);
    check_schedule(s, rows, sparse24, dense);
    CHECK(s.groups.size() == 1);
  }
  SECTION("a column shared by all 16 bands takes four steps of four") {
    HostTileIndex full;
    full.row_ptr.push_back(0);
    for (int b = 0; b < 16; ++b) {
      full.col_idx.push_back(7);
      full.row_ptr.push_back(std::int32_t(full.col_idx.size()));
    }
    HostTileIndex none;
    none.row_ptr.assign(17, 0);
    std::vector<std::int32_t> rows(16);
    for (int b = 0; b < 16; ++b) rows[std::size_t(b)] = b;
    const BandGroupSchedule s = detail::build_band_groups(rows, none, full);
    check_schedule(s, rows, none, full);
    REQUIRE(s.steps.size() == 4);
    for (const kernels::BandGroupStep& st : s.steps) {
      CHECK(st.col == 7);
      CHECK(st.count == 4);
    }
    CHECK(s.groups[0].dense_begin == 0);
  }
  SECTION("no bands") {
    const BandGroupSchedule s = detail::build_band_groups({}, sparse24, dense);
    CHECK(s.groups.empty());
    CHECK(s.entry_ptr.size() == 1);
  }
}

TEST_CASE("automatic plans group bands where B loads fall and the grid fills the GPU", "[band_groups]") {
  const std::int32_t bands = 1024, tile_cols = 512;
  std::vector<std::int32_t> rows(bands);
  for (std::int32_t b = 0; b < bands; ++b) rows[std::size_t(b)] = b;
  HostTileIndex none;
  none.row_ptr.assign(std::size_t(bands) + 1, 0);
  // 10d0s 16384^2: 10% of the tile positions, 0.52 B loads per tile; 64 groups.
  const BandGroupSchedule ten = detail::build_band_groups(rows, none, random_index(bands, tile_cols, 0.10, 3));
  CHECK(double(ten.steps_count()) / double(ten.tiles) == Approx(0.52).margin(0.02));
  CHECK(detail::band_groups_pay(ten, 128, 132));   // 128 blocks on 132 SMs
  CHECK(detail::band_groups_pay(ten, 256, 132));
  CHECK_FALSE(detail::band_groups_pay(ten, 64, 132));   // below kGroupMinColumns
  CHECK_FALSE(detail::band_groups_pay(ten, 128, 160));  // 128 blocks leave more than a tenth of 160 SMs idle
  // 1% of the positions: the bands of a group hardly share a column, nothing to save.
  const BandGroupSchedule one = detail::build_band_groups(rows, none, random_index(bands, tile_cols, 0.01, 4));
  CHECK(double(one.steps_count()) / double(one.tiles) > 0.9);
  CHECK_FALSE(detail::band_groups_pay(one, 128, 132));
}

TEST_CASE("the band-group cost model: steps and tile copies per block, one block per SM in launch order",
          "[band_groups][cost_model]") {
  const std::int32_t bands = 1024, tile_cols = 512;
  std::vector<std::int32_t> rows(bands);
  for (std::int32_t b = 0; b < bands; ++b) rows[std::size_t(b)] = b;
  HostTileIndex none;
  none.row_ptr.assign(std::size_t(bands) + 1, 0);
  const HostTileIndex ten_percent = random_index(bands, tile_cols, 0.10, 3);
  const BandGroupSchedule dense = detail::build_band_groups(rows, none, ten_percent);     // like 10d0s 16384^2
  const BandGroupSchedule sparse = detail::build_band_groups(rows, ten_percent, none);    // like 0d10s
  const double launch = detail::band_groups_ns(BandGroupSchedule{}, 128, 132);
  CHECK(launch > 0.0);
  const double t64 = detail::band_groups_ns(dense, 64, 132), t128 = detail::band_groups_ns(dense, 128, 132);
  CHECK(t64 == Approx(t128));  // 64 and 128 blocks: one wave on 132 SMs, the same longest block
  const double t256 = detail::band_groups_ns(dense, 256, 132);  // 256 blocks: most SMs run two
  CHECK((t256 - launch) / (t128 - launch) == Approx(2.0).epsilon(0.05));
  CHECK(detail::band_groups_ns(dense, 256, 264) == Approx(t128));  // one wave again on twice the SMs
  // A 2:4 tile is two bulk copies (values, metadata), a dense tile one: the same tiles cost more as 2:4.
  CHECK(detail::band_groups_ns(sparse, 128, 132) > t128);
  // The grids the constants were fitted to: 10d0s and 0d10s 16384^2 at n = 128 measured 51.3 and 58.0 us.
  CHECK(t128 == Approx(51.3e3).epsilon(0.06));
  CHECK(detail::band_groups_ns(sparse, 128, 132) == Approx(58.0e3).epsilon(0.06));
}
