// 2:4-aware packing of one band's columns into 32-column tiles.
#pragma once

#include <cstdint>
#include <vector>

namespace bcsr24::detail {

/// Assigns the distinct columns of one 16-row band to the slots of ceil(columns / 32) tiles (never more), so
/// that as many tiles as possible are 2:4-compliant: in every row, every aligned group of 4 slots holds at
/// most 2 nonzeros.
///
/// Method: first-fit decreasing. Columns are taken by decreasing number of nonzeros in the band (their 16-bit
/// row mask); each goes into the first 4-slot group, in tile order, where it adds no third nonzero to any row.
/// First fit fills the tiles front to back, so the columns that fit nowhere are put, together with the
/// contents of as few trailing tiles as needed to hold them, into those trailing tiles, which become dense
/// tiles. Groups whose rows all hold two nonzeros already, or that are full, are skipped in O(1) (a
/// path-compressed "next open group" array), and each column looks at no more than kSearchGroups open groups,
/// so a band costs O(columns x kSearchGroups) at worst.
///
/// First fit decreasing over the whole band does not see structure that the matrix's own column order already
/// has (a band whose aligned tiles are all 2:4 by construction, say). Given that order, the packer also scores it
/// as it is, and first fit inside each window of 32 consecutive columns of it, and keeps the arrangement with
/// the most 2:4 tiles.
class BandPacker {
 public:
  static constexpr int kSearchGroups = 64;

  /// masks[c]: bit r set when row r of the band has a nonzero in local column c (0 <= c < columns).
  /// rows_mask: the bits of the band's existing rows. On return slots holds ceil(columns / 32) * 32 entries:
  /// the local column in each slot, or -1 for an empty (padding) slot.
  /// natural: optional, the local columns in the matrix's column order (columns entries).
  void pack(const std::uint16_t* masks, std::int32_t columns, std::uint16_t rows_mask, std::vector<std::int32_t>& slots,
            const std::int32_t* natural = nullptr);

  /// Tiles of `slots` (32 slots each, -1 = empty) in which no row has more than 2 nonzeros in a 4-slot group.
  static std::int32_t compliant_tiles(const std::uint16_t* masks, const std::vector<std::int32_t>& slots);

 private:
  void first_fit_decreasing(const std::uint16_t* masks, std::int32_t columns, std::uint16_t rows_mask,
                            std::vector<std::int32_t>& slots);

  std::int32_t find_open(std::int32_t g);

  std::vector<std::int32_t> order_, bucket_start_, overflow_, next_open_, moved_, natural_slots_, window_slots_,
      window_tile_;
  std::vector<std::uint16_t> window_masks_;
  std::vector<std::uint16_t> once_, twice_;
  std::vector<std::uint8_t> used_;
};

}  // namespace bcsr24::detail
