// The tile part of a plan (SpmmPlan::Impl::build_tile_part): the tile bands' work items in the matrix's
// longest-first order, long bands split over blocks (with their partial sums and counters) or the bands run in
// band groups, the lists without empty bands that run() uses with beta = 1, and the kernel-table entry to launch.
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "device/spmm_plan_impl.hpp"
#include "device/tile_schedule.hpp"
#include "format/bcsr24_matrix.hpp"
#include "format/tile_layout.hpp"

namespace bcsr24 {

void SpmmPlan::Impl::build_tile_part(const DeviceMatrix::Impl& m, const detail::PlanDraft& draft) {
  Impl& p = *this;
  const std::int64_t n_slices = (std::int64_t(n) + p.slice_width - 1) / p.slice_width;
  // Tile part: the descriptors of the tile bands, in the matrix's longest-first order.
  std::vector<kernels::TileRowWork> tile_work;
  for (const kernels::TileRowWork& w : m.row_work_host) {
    const auto band = static_cast<std::size_t>(w.tile_row);
    if (draft.to_csr[band] || draft.to_vectors[band]) continue;  // on the CSR or the narrow-vector part
    tile_work.push_back(w);
    const detail::BandStats& s = m.band_stats[static_cast<std::size_t>(w.tile_row)];
    report.diagnostics.sparse24_tiles += s.sparse24_tiles;
    report.diagnostics.dense_tiles += s.dense_tiles;
    report.sparse24_nnz += s.sparse24_nnz;
    report.dense_nnz += s.dense_nnz;
  }
  report.tile_bands = static_cast<std::int32_t>(tile_work.size());
  p.run_tiles = !tile_work.empty();
  p.grouped = p.run_tiles && draft.groups != nullptr;
  if (p.grouped) {
    const detail::BandGroupSchedule& groups = *draft.groups;
    kernels::BandGroupParams& g = p.group_params;
    g.sparse24 = m.sparse24.view();
    g.dense = m.dense.view();
    p.storage.add(groups.groups, [&g](kernels::BandGroup* d) { g.groups = d; });
    p.storage.add(groups.steps, [&g](kernels::BandGroupStep* d) { g.steps = d; });
    p.storage.add(groups.entry_ptr, [&g](std::int32_t* d) { g.entry_ptr = d; });
    p.storage.add(groups.entries, [&g](std::int32_t* d) { g.entries = d; });
    p.storage.add(groups.group_rows, [&g](std::int32_t* d) { g.group_rows = d; });
    g.n_groups = static_cast<std::int32_t>(groups.groups.size());
    g.n_slices = static_cast<std::int32_t>((std::int64_t(n) + kernels::kGroupSliceWidth - 1) / kernels::kGroupSliceWidth);
    g.rows = m.rows;
    g.n = n;
    g.row_map = m.row_map.get();
    g.stored_row_exponent = m.stored_row_exponent.get();
  }
  const detail::TileSchedule schedule = detail::schedule_tile_bands(tile_work, p.grouped ? 0 : draft.tiles_per_part);
  PlanDiagnostics& diagnostics = report.diagnostics;
  diagnostics.split_bands = static_cast<std::int32_t>(schedule.groups.size());
  diagnostics.split_parts = schedule.partials;
  const std::int64_t index_bytes = m.b_row_index == BRowIndex::full ? kFullIndexBytesPerTile : 0;
  diagnostics.sparse24_bytes =
      diagnostics.sparse24_tiles * (kSparseTileValues * 2 + kSparseTileMetaWords * 4 + 4 + index_bytes);
  diagnostics.dense_bytes = diagnostics.dense_tiles * (kDenseTileValues * 2 + 4 + index_bytes);
  // The matrix's own descriptors serve when the plan runs every band as one item each.
  const bool own_descriptors = tile_work.size() == m.row_work_host.size() && schedule.groups.empty();

  kernels::SpmmParams& k = p.params;
  k.sparse24 = m.sparse24.view();
  k.dense = m.dense.view();
  k.row_work = own_descriptors ? m.row_work.get() : nullptr;
  if (!own_descriptors && p.run_tiles && !p.grouped)
    p.storage.add(schedule.items, [&k](kernels::TileRowWork* d) { k.row_work = d; });
  k.row_map = m.row_map.get();
  k.stored_row_exponent = m.stored_row_exponent.get();
  if (std::int64_t(schedule.items.size()) * n_slices > INT32_MAX)
    throw SizeLimitError("SpmmPlan: " + std::to_string(schedule.items.size()) + " tile work items x " +
                         std::to_string(n_slices) + " column slices exceed the 2^31 - 1 blocks of one launch");
  k.tile_rows = static_cast<std::int32_t>(schedule.items.size());
  {
    // Split parts always hold tiles (a band is split only when long); keep every part of a group regardless, so
    // that the group's counter still sees all of them.
    std::vector<kernels::TileRowWork> with_entries;
    for (const kernels::TileRowWork& w : schedule.items)
      if (w.split != kernels::kUnsplit || w.sparse24_end > w.sparse24_begin || w.dense_end > w.dense_begin)
        with_entries.push_back(w);
    report.empty_bands += static_cast<std::int32_t>(schedule.items.size() - with_entries.size());
    // A grouped plan runs every band of its groups (the kernel's grid is the groups): no list without the empty ones.
    p.tiles_have_empty = !p.grouped && with_entries.size() < schedule.items.size();
    if (p.tiles_have_empty) {
      p.tile_items_with_entries = static_cast<std::int32_t>(with_entries.size());
      p.storage.add(with_entries, [&p](kernels::TileRowWork* d) { p.tile_work_with_entries = d; });
    }
  }
  k.rows = m.rows;
  k.k = m.cols;
  k.n = n;
  k.n_slices = static_cast<std::int32_t>(n_slices);
  if (!schedule.groups.empty()) {
    p.storage.add(schedule.groups, [&k](kernels::SplitGroup* d) { k.split_groups = d; });
    p.storage.add_workspace<float>(std::size_t(schedule.partials) * std::size_t(n_slices) * kTileRows *
                                       std::size_t(p.slice_width),
                                   [&k](float* d) { k.split_partials = d; });
    // The counters start at zero; the last part of each group resets its counter, so they stay zero between runs.
    p.storage.add_zeroed<unsigned>(schedule.groups.size() * std::size_t(n_slices),
                                   [&k](unsigned* d) { k.split_counters = d; });
  }

  p.split_bands = !schedule.groups.empty();
  if (p.grouped) {
    report.diagnostics.tile_stages = kernels::kGroupStages;
  } else if (p.run_tiles) {
    kernels::TileKernelKey tile_key = draft.tile_key;
    tile_key.split_bands = p.split_bands;
    p.tile = &kernels::tile_kernel(tile_key);
    report.diagnostics.tile_stages = p.tile->stages;
  }
}

}  // namespace bcsr24
