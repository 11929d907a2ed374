// First-fit-decreasing packing of a band's columns into 2:4-compliant 4-slot groups (pack24.hpp).
#include "format/pack24.hpp"

#include <algorithm>

#include "format/tile_layout.hpp"

namespace bcsr24::detail {

namespace {
constexpr int kGroupsPerTile = kTileCols / kGroupCols;  // 8
}

std::int32_t BandPacker::find_open(std::int32_t g) {
  // next_open_[g] == g marks an open group; closed groups point further right. Path halving keeps chains short.
  while (next_open_[static_cast<std::size_t>(g)] != g) {
    const std::int32_t up = next_open_[static_cast<std::size_t>(g)];
    next_open_[static_cast<std::size_t>(g)] = next_open_[static_cast<std::size_t>(up)];
    g = up;
  }
  return g;
}

std::int32_t BandPacker::compliant_tiles(const std::uint16_t* masks, const std::vector<std::int32_t>& slots) {
  std::int32_t compliant = 0;
  for (std::size_t t = 0; t < slots.size() / kTileCols; ++t) {
    bool ok = true;
    for (int g = 0; g < kGroupsPerTile && ok; ++g) {
      std::uint16_t once = 0, twice = 0;
      for (int q = 0; q < kGroupCols; ++q) {
        const std::int32_t c = slots[t * kTileCols + static_cast<std::size_t>(g * kGroupCols + q)];
        if (c < 0) continue;
        const std::uint16_t m = masks[c];
        if (m & twice) { ok = false; break; }
        twice = static_cast<std::uint16_t>(twice | (once & m));
        once = static_cast<std::uint16_t>(once | m);
      }
    }
    compliant += ok;
  }
  return compliant;
}

void BandPacker::pack(const std::uint16_t* masks, std::int32_t columns, std::uint16_t rows_mask,
                      std::vector<std::int32_t>& slots, const std::int32_t* natural) {
  first_fit_decreasing(masks, columns, rows_mask, slots);
  if (!natural || columns == 0) return;
  const std::int32_t tiles = (columns + kTileCols - 1) / kTileCols;
  std::int32_t best = compliant_tiles(masks, slots);
  if (best == tiles) return;  // every tile 2:4 already: nothing to gain
  // Candidates beside band-wide first fit: the matrix's own order, and first fit inside each window of 32
  // consecutive columns of that order.
  natural_slots_.assign(static_cast<std::size_t>(tiles) * kTileCols, -1);
  std::copy(natural, natural + columns, natural_slots_.begin());
  window_slots_.assign(natural_slots_.size(), -1);
  for (std::int32_t t = 0; t < tiles; ++t) {
    const std::int32_t first = t * kTileCols, count = std::min<std::int32_t>(kTileCols, columns - first);
    window_masks_.resize(static_cast<std::size_t>(count));
    for (std::int32_t q = 0; q < count; ++q) window_masks_[static_cast<std::size_t>(q)] = masks[natural[first + q]];
    first_fit_decreasing(window_masks_.data(), count, rows_mask, window_tile_);
    for (int j = 0; j < kTileCols; ++j) {
      const std::int32_t q = window_tile_[static_cast<std::size_t>(j)];
      window_slots_[static_cast<std::size_t>(first) + static_cast<std::size_t>(j)] = q >= 0 ? natural[first + q] : -1;
    }
  }
  // The arrangement with the most 2:4 tiles; band-wide first fit on ties.
  for (std::vector<std::int32_t>* candidate : {&window_slots_, &natural_slots_}) {
    const std::int32_t s = compliant_tiles(masks, *candidate);
    if (s > best) {
      best = s;
      slots.swap(*candidate);
    }
  }
}

void BandPacker::first_fit_decreasing(const std::uint16_t* masks, std::int32_t columns, std::uint16_t rows_mask,
                                      std::vector<std::int32_t>& slots) {
  const std::int32_t tiles = (columns + kTileCols - 1) / kTileCols;
  const std::int32_t groups = tiles * kGroupsPerTile;
  slots.assign(static_cast<std::size_t>(tiles) * kTileCols, -1);
  if (columns == 0) return;

  // Decreasing nonzero count, ties in local-column order: a counting sort over the 17 possible counts.
  bucket_start_.assign(18, 0);
  for (std::int32_t c = 0; c < columns; ++c) ++bucket_start_[static_cast<std::size_t>(16 - __builtin_popcount(masks[c])) + 1];
  for (int b = 0; b < 17; ++b) bucket_start_[static_cast<std::size_t>(b) + 1] += bucket_start_[static_cast<std::size_t>(b)];
  order_.resize(static_cast<std::size_t>(columns));
  for (std::int32_t c = 0; c < columns; ++c)
    order_[static_cast<std::size_t>(bucket_start_[static_cast<std::size_t>(16 - __builtin_popcount(masks[c]))]++)] = c;

  once_.assign(static_cast<std::size_t>(groups), 0);   // rows with at least one nonzero in the group
  twice_.assign(static_cast<std::size_t>(groups), 0);  // rows with two: the group takes no column touching them
  used_.assign(static_cast<std::size_t>(groups), 0);
  next_open_.resize(static_cast<std::size_t>(groups) + 1);
  for (std::int32_t g = 0; g <= groups; ++g) next_open_[static_cast<std::size_t>(g)] = g;  // groups = sentinel
  overflow_.clear();

  for (const std::int32_t c : order_) {
    const std::uint16_t m = masks[c];
    bool placed = false;
    std::int32_t g = find_open(0);
    for (int looked = 0; g < groups && looked < kSearchGroups; ++looked, g = find_open(g + 1)) {
      const std::size_t gi = static_cast<std::size_t>(g);
      if (m & twice_[gi]) continue;
      slots[static_cast<std::size_t>(g / kGroupsPerTile) * kTileCols + static_cast<std::size_t>(g % kGroupsPerTile) * kGroupCols +
            used_[gi]] = c;
      twice_[gi] = static_cast<std::uint16_t>(twice_[gi] | (once_[gi] & m));
      once_[gi] = static_cast<std::uint16_t>(once_[gi] | m);
      ++used_[gi];
      if (used_[gi] == kGroupCols || (twice_[gi] & rows_mask) == rows_mask) next_open_[gi] = g + 1;
      placed = true;
      break;
    }
    if (!placed) overflow_.push_back(c);
  }
  if (overflow_.empty()) return;

  // The columns that fit nowhere go, with the contents of the fewest trailing tiles that can hold them all, into
  // those trailing tiles (which will be dense). First fit leaves the trailing tiles the emptiest.
  std::int32_t dense_tiles = 0;
  std::int64_t held = 0;
  const auto tile_columns = [&](std::int32_t t) {
    std::int64_t n = 0;
    for (int k = 0; k < kTileCols; ++k) n += slots[static_cast<std::size_t>(t) * kTileCols + k] >= 0;
    return n;
  };
  while (held + static_cast<std::int64_t>(overflow_.size()) > std::int64_t{dense_tiles} * kTileCols) {
    ++dense_tiles;
    held += tile_columns(tiles - dense_tiles);
  }
  moved_.assign(overflow_.begin(), overflow_.end());
  const std::size_t first_slot = static_cast<std::size_t>(tiles - dense_tiles) * kTileCols;
  for (std::size_t s = first_slot; s < slots.size(); ++s)
    if (slots[s] >= 0) moved_.push_back(slots[s]);
  std::sort(moved_.begin(), moved_.end());
  std::fill(slots.begin() + static_cast<std::ptrdiff_t>(first_slot), slots.end(), -1);
  std::copy(moved_.begin(), moved_.end(), slots.begin() + static_cast<std::ptrdiff_t>(first_slot));
}

}  // namespace bcsr24::detail
