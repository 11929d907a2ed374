// Band groups: the steps and entries of the band-group kernel (device/band_groups.hpp).
#include "device/band_groups.hpp"

#include <algorithm>
#include <string>
#include <tuple>

#include "bcsr24/error.hpp"

namespace bcsr24::detail {

namespace {

/// Appends the steps of one list of one group; `entries_of[w]` receives warp w's (step << 2 | slot).
void add_list_steps(const std::vector<std::int32_t>& rows, std::size_t first, std::size_t count,
                    const HostTileIndex& list, std::int32_t group_step0, BandGroupSchedule& out,
                    std::vector<std::vector<std::int32_t>>& entries_of) {
  std::vector<std::tuple<std::int32_t, int, std::int32_t>> tiles;  // tile column, warp, tile index
  for (std::size_t w = 0; w < count; ++w) {
    const std::int32_t band = rows[first + w];
    for (std::int32_t t = list.row_ptr[std::size_t(band)]; t < list.row_ptr[std::size_t(band) + 1]; ++t)
      tiles.emplace_back(list.col_idx[std::size_t(t)], int(w), t);
  }
  std::sort(tiles.begin(), tiles.end());
  for (std::size_t i = 0; i < tiles.size();) {
    kernels::BandGroupStep step{};
    step.col = std::get<0>(tiles[i]);
    const std::int64_t index = std::int64_t(out.steps.size()) - group_step0;
    if (index >= (std::int64_t(1) << 29))
      throw SizeLimitError("band groups: a group of " + std::to_string(kernels::kGroupBands) + " bands has more than " +
                           "2^29 steps");
    while (i < tiles.size() && std::get<0>(tiles[i]) == step.col && step.count < kernels::kGroupTilesPerStep) {
      entries_of[std::size_t(std::get<1>(tiles[i]))].push_back(std::int32_t(index << 2) | step.count);
      step.tile[step.count++] = std::get<2>(tiles[i]);
      ++i;
    }
    out.tiles += step.count;
    out.steps.push_back(step);
  }
}

}  // namespace

BandGroupSchedule build_band_groups(const std::vector<std::int32_t>& tile_rows, const HostTileIndex& sparse24,
                                    const HostTileIndex& dense) {
  constexpr int kBands = kernels::kGroupBands;
  BandGroupSchedule out;
  const std::size_t n_groups = (tile_rows.size() + kBands - 1) / kBands;
  out.groups.reserve(n_groups);
  out.group_rows.assign(n_groups * kBands, -1);
  out.entry_ptr.reserve(2 * n_groups * kBands + 1);
  for (std::size_t g = 0; g < n_groups; ++g) {
    const std::size_t first = g * kBands;
    const std::size_t count = std::min<std::size_t>(kBands, tile_rows.size() - first);
    for (std::size_t w = 0; w < count; ++w) out.group_rows[first + w] = tile_rows[first + w];
    kernels::BandGroup group{};
    group.step_begin = std::int32_t(out.steps.size());
    std::vector<std::vector<std::int32_t>> sparse_entries(kBands), dense_entries(kBands);
    add_list_steps(tile_rows, first, count, sparse24, group.step_begin, out, sparse_entries);
    group.dense_begin = std::int32_t(out.steps.size());
    add_list_steps(tile_rows, first, count, dense, group.step_begin, out, dense_entries);
    group.step_end = std::int32_t(out.steps.size());
    out.groups.push_back(group);
    for (int w = 0; w < kBands; ++w) {
      out.entry_ptr.push_back(std::int32_t(out.entries.size()));
      out.entries.insert(out.entries.end(), sparse_entries[std::size_t(w)].begin(), sparse_entries[std::size_t(w)].end());
      out.entry_ptr.push_back(std::int32_t(out.entries.size()));
      out.entries.insert(out.entries.end(), dense_entries[std::size_t(w)].begin(), dense_entries[std::size_t(w)].end());
    }
  }
  out.entry_ptr.push_back(std::int32_t(out.entries.size()));
  return out;
}

bool band_groups_pay(const BandGroupSchedule& schedule, std::int32_t n, int multiprocessors) {
  if (n < kGroupMinColumns || schedule.tiles == 0) return false;
  const std::int64_t slices = (std::int64_t(n) + kernels::kGroupSliceWidth - 1) / kernels::kGroupSliceWidth;
  const double blocks = double(schedule.groups.size()) * double(slices);
  return double(schedule.steps_count()) <= kGroupMaxStepsPerTile * double(schedule.tiles) &&
         blocks >= kGroupMinWaveShare * double(multiprocessors);
}

}  // namespace bcsr24::detail
