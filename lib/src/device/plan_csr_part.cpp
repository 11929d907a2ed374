// The CSR part of a plan (SpmmPlan::Impl::build_csr_part): the non-padding rows of the bands that run on CUDA
// cores, sorted into long rows (a block each, or several for the longest), medium and short rows by the CSR
// kernel's shape, and the kernel-table entry to launch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/error.hpp"
#include "device/spmm_plan_impl.hpp"
#include "format/tile_layout.hpp"

namespace bcsr24 {

namespace detail {

/// The CSR part's rows by length class: long and medium rows as lists of slots; short rows as a list, as flags
/// over the copy's slots (short-row tiles), or not at all (every slot of the copy is in the part: the kernel takes
/// them as a range).
struct CsrRowSlots {
  std::vector<std::int32_t> long_slots, medium_slots, short_slots;
  std::vector<std::uint8_t> short_slot;  ///< tiles: which slots of the copy are this part's short rows
  std::size_t short_empty = 0;           ///< short rows without entries
  std::int64_t short_rows = 0, short_entries = 0;
};

/// Short-row tiles (n = 1) and each tile slot's word.
struct ShortTiles {
  std::vector<kernels::CsrShortTile> tiles;
  std::vector<std::uint32_t> slot_words;
};

/// The blocks of the long rows, and the rows among them split by entries with their part slots.
struct LongBlocks {
  std::vector<kernels::CsrLongBlock> blocks;
  std::vector<kernels::CsrSplitRow> split_rows;
  std::int32_t part_slots = 0;
  std::int32_t rows_split = 0;  ///< long rows split by entries (PlanDiagnostics::csr_split_rows)
};

}  // namespace detail

namespace {

using detail::CsrRowSlots;
using detail::LongBlocks;
using detail::ShortTiles;

/// Calls visit(slot) for every non-padding row of the CSR bands, in band and row order. No list of them: a 1M-row
/// matrix made a 1M-entry list of rows and another of its short rows only to count them, and plan building is what
/// the tuner's budget pays for (issue 33).
template <class Visit>
void for_each_csr_row(const DeviceBandCsr& csr, const std::vector<std::uint8_t>& to_csr, Visit&& visit) {
  for (std::size_t b = 0; b < to_csr.size(); ++b) {
    if (!to_csr[b]) continue;
    for (int r = 0; r < kTileRows; ++r) {
      const std::int32_t slot = csr.first_slot[b] + r;
      if (csr.out_row_host[static_cast<std::size_t>(slot)] >= 0) visit(slot);
    }
  }
}

CsrRowSlots classify_rows(const DeviceBandCsr& csr, const std::vector<std::uint8_t>& to_csr,
                          const kernels::CsrRowClasses& classes, bool short_tiles, bool short_range,
                          std::int64_t row_count) {
  CsrRowSlots rows;
  if (!short_range && !short_tiles) rows.short_slots.reserve(static_cast<std::size_t>(row_count));
  if (short_tiles) rows.short_slot.assign(csr.row_nnz.size(), 0);
  for_each_csr_row(csr, to_csr, [&](std::int32_t slot) {
    const std::int32_t entries = csr.row_nnz[static_cast<std::size_t>(slot)];
    if (entries > classes.medium_max) {
      rows.long_slots.push_back(slot);
    } else if (entries > classes.short_max) {
      rows.medium_slots.push_back(slot);
    } else {
      rows.short_empty += entries == 0;
      ++rows.short_rows;
      rows.short_entries += entries;
      if (short_tiles)
        rows.short_slot[static_cast<std::size_t>(slot)] = 1;
      else if (!short_range)
        rows.short_slots.push_back(slot);
    }
  });
  return rows;
}

/// Tiles: runs of consecutive short slots, cut where a tile's entries would pass its window (kCsrTileEntries from
/// its first entry rounded down to a quad) or it would have more slots than threads. The copy's entries are its
/// slots' in slot order, so a run's entries are contiguous. Each tile slot gets its word (first entry in the
/// window, length, exponent); a tile whose slots write consecutive rows of C gets its first row.
ShortTiles make_short_tiles(const DeviceBandCsr& csr, const std::vector<std::uint8_t>& short_slot) {
  const std::size_t copy_slots = csr.row_nnz.size();
  ShortTiles out;
  out.slot_words.assign(copy_slots, 0);
  auto exponent = [&](std::size_t slot) -> std::int32_t {
    if (csr.slot_exponent_host.empty()) return 0;
    const std::int32_t e = csr.slot_exponent_host[slot];
    if (e < -kernels::kCsrTileMaxExponent || e > kernels::kCsrTileMaxExponent)
      throw RangeError("SpmmPlan: row exponent " + std::to_string(e) + " does not fit a tile slot's word");
    return e;
  };
  std::int64_t entry = 0, window = 0, tile_entry_begin = 0, tile_end = 0;
  std::size_t tile_begin = 0;
  bool open = false;
  auto close = [&](std::size_t slot_end) {
    kernels::CsrShortTile tile;
    tile.slot_begin = static_cast<std::int32_t>(tile_begin);
    tile.slots = static_cast<std::uint16_t>(slot_end - tile_begin);
    tile.entry_begin = static_cast<std::int32_t>(tile_entry_begin);
    tile.entries = static_cast<std::uint16_t>(tile_end - tile_entry_begin);
    const std::int32_t first_row = csr.out_row_host[tile_begin];
    bool consecutive = first_row >= 0;
    std::int64_t at = tile_entry_begin;
    for (std::size_t s = tile_begin; s < slot_end; ++s) {
      consecutive = consecutive && std::int64_t(csr.out_row_host[s]) == first_row + std::int64_t(s - tile_begin);
      out.slot_words[s] = kernels::csr_tile_slot_word(static_cast<std::int32_t>(at - window), csr.row_nnz[s],
                                                      exponent(s));
      at += csr.row_nnz[s];
    }
    tile.row_base = consecutive ? first_row : -1;
    out.tiles.push_back(tile);
  };
  for (std::size_t slot = 0; slot < copy_slots; ++slot) {
    const std::int32_t entries = csr.row_nnz[slot];
    if (!short_slot[slot]) {
      if (open) close(slot);
      open = false;
    } else if (open && slot - tile_begin < std::size_t(kernels::kCsrBlockThreads) &&
               entry + entries - window <= kernels::kCsrTileEntries) {
      tile_end = entry + entries;
    } else {
      if (open) close(slot);
      tile_begin = slot;
      tile_entry_begin = entry;
      window = entry / 4 * 4;
      tile_end = entry + entries;
      open = true;
    }
    entry += entries;
  }
  if (open) close(copy_slots);
  return out;
}

/// Longest first: they are the launch's critical path. A stable radix sort (two passes of 16 bits, on ~entries:
/// longest first) rather than a comparison sort: power_law:1000000 has ~59,000 long rows at n = 128, and their sort
/// was the largest step of its build.
void sort_longest_first(const DeviceBandCsr& csr, std::vector<std::int32_t>& long_slots) {
  if (long_slots.size() <= 1) return;
  std::vector<std::int32_t> sorted(long_slots.size());
  std::vector<std::size_t> start(std::size_t(1) << 16);
  for (const int shift : {0, 16}) {
    auto digit = [&](std::int32_t slot) {
      return (~std::uint32_t(csr.row_nnz[static_cast<std::size_t>(slot)]) >> shift) & 0xffffu;
    };
    std::fill(start.begin(), start.end(), 0);
    for (const std::int32_t slot : long_slots) ++start[digit(slot)];
    std::size_t at = 0;
    for (std::size_t& count : start) at += std::exchange(count, at);
    for (const std::int32_t slot : long_slots) sorted[start[digit(slot)]++] = slot;
    long_slots.swap(sorted);
  }
}

/// A row far longer than one block's lanes cover gets several blocks, each on its share of the column chunks. A row
/// still too long for the blocks its chunks allow is split by entries too (csr_long_row_parts): each share of its
/// chunks becomes `parts` blocks with a part slot each; the last to finish adds them up.
LongBlocks make_long_blocks(const DeviceBandCsr& csr, const std::vector<std::int32_t>& long_slots,
                            const kernels::CsrShape& shape) {
  LongBlocks out;
  out.blocks.reserve(long_slots.size());  // a block or more per row
  for (const std::int32_t slot : long_slots) {
    const std::int32_t entries = csr.row_nnz[static_cast<std::size_t>(slot)];
    const int blocks = kernels::csr_long_row_blocks(shape.chunks, entries);
    const int chunks = shape.chunks / blocks;
    const int parts = kernels::csr_long_row_parts(chunks, entries);
    if (parts > 1) ++out.rows_split;
    for (int b = 0; b < blocks; ++b) {
      const auto first_chunk = static_cast<std::int16_t>(b * chunks);
      const auto split_row = static_cast<std::int32_t>(out.split_rows.size());
      if (parts > 1) out.split_rows.push_back({out.part_slots, parts});
      for (int q = 0; q < parts; ++q) {
        kernels::CsrLongBlock item;
        item.slot = slot;
        item.first_chunk = first_chunk;
        item.chunks = static_cast<std::int16_t>(chunks);
        item.entry_begin = static_cast<std::int32_t>(std::int64_t(entries) * q / parts);
        item.entry_end = static_cast<std::int32_t>(std::int64_t(entries) * (q + 1) / parts);
        if (parts > 1) {
          item.part_slot = out.part_slots + q;
          item.split_row = split_row;
        }
        out.blocks.push_back(item);
      }
      if (parts > 1) out.part_slots += parts;
    }
  }
  return out;
}

}  // namespace

void SpmmPlan::Impl::build_csr_part(const DeviceMatrix::Impl& m, const std::vector<std::uint8_t>& to_csr,
                                    const PlanKnobs& knobs) {
  Impl& p = *this;
  const DeviceBandCsr& csr = *p.csr;
  // CSR part: the non-padding rows of the CSR bands; rows far longer than the rest get a block each. Two passes
  // over the bands' rows (their count and mean length set the shape, the shape sets the classes).
  for (std::size_t b = 0; b < to_csr.size(); ++b) {
    if (!to_csr[b]) continue;
    ++report.csr_bands;
    const detail::BandStats& s = m.band_stats[b];
    report.csr_nnz += s.nnz();
    if (s.nnz() == 0) ++report.empty_bands;
  }
  std::int64_t row_count = 0, row_entries = 0;
  for_each_csr_row(csr, to_csr, [&](std::int32_t slot) {
    ++row_count;
    row_entries += csr.row_nnz[static_cast<std::size_t>(slot)];
  });
  p.run_csr = row_count > 0;
  if (!p.run_csr) return;
  const double mean_row_nnz = double(row_entries) / double(row_count);
  p.csr_shape = kernels::csr_shape_for(n, mean_row_nnz, row_count, m.multiprocessors);
  p.csr_kernel = &kernels::csr_kernel({p.mode, p.options.output, p.csr_shape});
  // n = 1 where the rows' B reads scatter (kCsrTileMinScattered): short rows in tiles of consecutive slots
  // (CsrShortTile), which take rows of up to kCsrTileRowMax entries; medium and long rows as at other widths. Only
  // where the groups' short rows are no longer than a tile's: longer ones keep the groups' class (long_rows:20000,
  // rows of 512: 80.0 us as medium rows behind a list, run 88; 75.9 as short rows, run 89).
  kernels::CsrRowClasses classes = kernels::csr_row_classes(p.csr_shape, mean_row_nnz);
  p.csr_short_tiles = p.csr_shape.one_column && classes.short_max <= kernels::kCsrTileRowMax &&
                      csr.scattered_share(to_csr, 0.0) >= kernels::kCsrTileMinScattered;
  if (p.csr_short_tiles) {
    classes.short_max = kernels::kCsrTileRowMax;
    classes.medium_max = std::max(classes.medium_max, classes.short_max);
  }
  // Where every slot of the CSR copy is in this part, the short rows need no list: a group takes its slot
  // directly and skips padding rows, rows that are not short and (short_min_entries 1) empty rows. The list's load
  // was one more memory latency in front of every short row; on a partial copy the list is what says which
  // slots are this plan's.
  const std::size_t copy_slots = csr.row_nnz.size();
  bool every_copy_here = copy_slots <= std::size_t(INT32_MAX) && csr.first_slot.size() == to_csr.size();
  for (std::size_t b = 0; every_copy_here && b < to_csr.size(); ++b)
    every_copy_here = csr.first_slot[b] < 0 || to_csr[b];
  p.csr_short_range = every_copy_here && !p.csr_short_tiles;
  CsrRowSlots rows = classify_rows(csr, to_csr, classes, p.csr_short_tiles, p.csr_short_range, row_count);
  ShortTiles short_tiles;
  if (p.csr_short_tiles) short_tiles = make_short_tiles(csr, rows.short_slot);
  sort_longest_first(csr, rows.long_slots);
  const LongBlocks long_blocks = make_long_blocks(csr, rows.long_slots, p.csr_shape);
  report.diagnostics.csr_split_rows += long_blocks.rows_split;
  add_csr_lists(m, rows, short_tiles, long_blocks, classes, knobs);
  PlanDiagnostics& d = report.diagnostics;
  d.csr_long_rows = static_cast<std::int32_t>(rows.long_slots.size());
  d.csr_long_blocks = p.csr_params.long_count;
  d.csr_medium_rows = p.csr_params.medium_count;
  d.csr_short_tiles = p.csr_short_tiles ? p.csr_params.short_count : 0;
  d.csr_chunks = p.csr_shape.chunks;
  d.csr_nz_lanes = p.csr_shape.nz_lanes;
  d.csr_short_pairs = p.csr_params.short_pairs != 0;
  d.csr_short_run_rows = p.csr_params.short_run_rows;
  const std::int64_t value_bytes = m.precision == Precision::split ? 4 : 2;
  d.csr_bytes = report.csr_nnz * (4 + value_bytes) + row_count * 12;
}

void SpmmPlan::Impl::add_csr_lists(const DeviceMatrix::Impl& m, const CsrRowSlots& rows, const ShortTiles& short_tiles,
                                   const LongBlocks& long_blocks, const kernels::CsrRowClasses& classes,
                                   const PlanKnobs& knobs) {
  Impl& p = *this;
  const DeviceBandCsr& csr = *p.csr;
  p.csr_has_empty = rows.short_empty > 0;
  if (p.csr_has_empty && !p.csr_short_range && !p.csr_short_tiles) {
    std::vector<std::int32_t> short_with_entries;
    short_with_entries.reserve(rows.short_slots.size() - rows.short_empty);
    for (const std::int32_t slot : rows.short_slots)
      if (csr.row_nnz[static_cast<std::size_t>(slot)] > 0) short_with_entries.push_back(slot);
    p.csr_short_with_entries = static_cast<std::int32_t>(short_with_entries.size());
    p.storage.add(short_with_entries, [&p](std::int32_t* d) { p.csr_short_slots_with_entries = d; });
  }
  kernels::CsrSpmmParams& c = p.csr_params;
  c.row_ptr = csr.row_ptr.get();
  c.b_row = csr.b_row.get();
  c.values = csr.values.get();
  c.values_lo = csr.values_lo.get();
  c.slot_exponent = csr.slot_exponent.get();
  c.out_row = csr.out_row.get();
  p.storage.add(long_blocks.blocks, [&c](kernels::CsrLongBlock* d) { c.long_blocks = d; });
  if (!long_blocks.split_rows.empty()) {
    const std::int32_t part_slots = long_blocks.part_slots;
    const std::size_t passes = (std::size_t(n) + kernels::kCsrPassColumns - 1) / kernels::kCsrPassColumns;
    // The kernel addresses the part slots' sums with 32-bit offsets (csr_part_sums). A part sums at least one
    // round of 1,024 entries, so this takes ~2^21 part slots (2^31 entries in split rows) and n > 2,048.
    const std::uint64_t partial_floats = std::uint64_t(part_slots) * passes * kernels::kCsrPassColumns;
    if (partial_floats > UINT32_MAX)
      throw SizeLimitError("SpmmPlan: the CSR rows split by entries need " + std::to_string(part_slots) +
                           " part slots x " + std::to_string(passes) + " column passes of " +
                           std::to_string(kernels::kCsrPassColumns) +
                           " partial sums, past the CSR kernel's 32-bit offsets; use a narrower B (fewer columns "
                           "per plan)");
    p.storage.add_workspace<float>(std::size_t(part_slots) * passes * kernels::kCsrPassColumns,
                                   [&c](float* d) { c.long_partials = d; });
    p.storage.add(long_blocks.split_rows, [&c](kernels::CsrSplitRow* d) { c.split_rows = d; });
    // The counters start at zero; the last part of each split row resets its counter, so they stay zero.
    p.storage.add_zeroed<unsigned>(long_blocks.split_rows.size() * passes, [&c](unsigned* d) { c.split_counters = d; });
  }
  p.storage.add(rows.medium_slots, [&c](std::int32_t* d) { c.medium_slots = d; });
  c.long_count = static_cast<std::int32_t>(long_blocks.blocks.size());
  c.medium_count = static_cast<std::int32_t>(rows.medium_slots.size());
  if (p.csr_short_tiles) {
    p.storage.add(short_tiles.tiles, [&c](kernels::CsrShortTile* d) { c.short_tiles = d; });
    p.storage.add(short_tiles.slot_words, [&c](std::uint32_t* d) { c.tile_slot_words = d; });
    c.short_count = static_cast<std::int32_t>(short_tiles.tiles.size());
  } else if (p.csr_short_range) {
    c.short_slots = nullptr;
    c.short_count = static_cast<std::int32_t>(csr.row_nnz.size());
    c.short_min_entries = 0;
    c.short_max_entries = classes.short_max;
  } else {
    p.storage.add(rows.short_slots, [&c](std::int32_t* d) { c.short_slots = d; });
    c.short_count = static_cast<std::int32_t>(rows.short_slots.size());
  }
  // Short rows two to a group where a row alone leaves half of a round's loads idle (16-byte chunks).
  const double short_lane_entries = rows.short_rows > 0 ? double(rows.short_entries) / double(rows.short_rows) /
                                                              p.csr_shape.nz_lanes : 0.0;
  const bool pairs_possible = !p.csr_shape.scalar_b && !p.csr_short_tiles && !reads_f32_b(p.mode);
  const double short_threads = double(rows.short_rows) * p.csr_shape.chunks * p.csr_shape.nz_lanes;
  const double resident_threads = double(m.multiprocessors) * kernels::kCsrChunkBlocksPerSm * kernels::kCsrBlockThreads;
  c.short_pairs = pairs_possible && p.csr_shape.chunks >= kernels::kCsrPairMinChunks &&
                  short_lane_entries <= kernels::kCsrPairMaxLaneEntries && short_threads >= resident_threads;
  if (knobs.csr_short_pairs >= 0) c.short_pairs = knobs.csr_short_pairs > 0 && pairs_possible;
  // Short rows in runs where they take at most two rounds of loads a lane on average, their groups have at least
  // kCsrRunMinChunks chunks and queue for the device (kCsrRunMinWaves): they take the place of pairs there.
  const int group_lanes = p.csr_shape.chunks * p.csr_shape.nz_lanes;
  const int run_cap = std::min(kernels::kCsrRunMaxRows, group_lanes);
  const bool runs_possible = pairs_possible && run_cap >= 2;
  double run = 0.0;
  if (runs_possible && rows.short_rows > 0 && p.csr_shape.chunks >= kernels::kCsrRunMinChunks &&
      short_lane_entries <= kernels::kCsrRunMaxLaneEntries)
    run = std::floor(double(c.short_count) * group_lanes / (kernels::kCsrRunMinWaves * resident_threads));
  if (knobs.csr_short_run_rows >= 0) run = knobs.csr_short_run_rows;
  c.short_run_rows = runs_possible && run >= 2.0 ? static_cast<std::int32_t>(std::min<double>(run, run_cap)) : 0;
  if (c.short_run_rows > 0) c.short_pairs = 0;
  c.k = m.cols;
  c.n = n;
}

}  // namespace bcsr24
