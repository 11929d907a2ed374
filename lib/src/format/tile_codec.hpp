// Packing one 16x32 tile into fragment order (dense, or 2:4-compressed with metadata) and unpacking it back.
//
// Every position is computed with the functions of tile_layout.hpp; this file only adds the loops, the
// occupancy-mask classification and the choice of metadata pair for groups with fewer than two nonzeros.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "format/bcsr24_matrix.hpp"
#include "format/tile_layout.hpp"

namespace bcsr24::detail {

/// A 16x32 tile in row-major order, one 16-bit stored value per element.
using TileElements = std::array<fp16_t, kDenseTileValues>;
/// One bit per element: bit c of row r set when element (r, c) is a nonzero of the source.
using TileOccupancy = std::array<std::uint32_t, kTileRows>;

/// True when some aligned group of 4 bits of `row_mask` has more than 2 bits set.
constexpr bool row_violates_24(std::uint32_t row_mask) {
  // Per-nibble popcount (0..4) by the usual SWAR steps; a count c > 2 is exactly when c + 5 sets bit 3,
  // and c + 5 <= 9 never carries into the next nibble.
  std::uint32_t x = row_mask - ((row_mask >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  return ((x + 0x55555555u) & 0x88888888u) != 0;
}

/// The two kept positions of a 2:4 group and the metadata nibble (idx0 | idx1 << 2) that names them.
struct GroupPair {
  std::uint8_t idx0, idx1, nibble;
};

/// Pair for a group whose nonzeros are the set bits of `occupancy` (at most 2). mma.sp accepts only the six
/// ordered pairs, so groups with 0 or 1 nonzero still name two positions; the extra one holds a stored 0:
/// none -> (0,1); one at p -> (p, p+1) for p < 3, (2, 3) for p = 3.
constexpr GroupPair pair_for_occupancy(unsigned occupancy) {
  int first = -1, second = -1;
  for (int p = 0; p < kGroupCols; ++p) {
    if (!(occupancy & (1u << p))) continue;
    if (first < 0) first = p; else if (second < 0) second = p;
  }
  if (first < 0) { first = 0; second = 1; }
  else if (second < 0) {
    if (first < 3) second = first + 1; else { first = 2; second = 3; }
  }
  return {static_cast<std::uint8_t>(first), static_cast<std::uint8_t>(second),
          static_cast<std::uint8_t>(first | (second << 2))};
}

/// pair_for_occupancy for all 16 occupancies (entries with more than 2 bits are never used).
inline constexpr std::array<GroupPair, 16> kGroupPairs = [] {
  std::array<GroupPair, 16> t{};
  for (unsigned m = 0; m < 16; ++m) t[m] = pair_for_occupancy(m);
  return t;
}();

/// Decodes a metadata nibble into its two positions (only meaningful for valid nibbles).
constexpr int nibble_idx0(unsigned nibble) { return static_cast<int>(nibble & 3u); }
constexpr int nibble_idx1(unsigned nibble) { return static_cast<int>((nibble >> 2) & 3u); }

/// kDenseSource[k] = row-major element (row * 32 + col) stored at fragment position k of a dense tile.
inline constexpr std::array<std::uint16_t, kDenseTileValues> kDenseSource = [] {
  std::array<std::uint16_t, kDenseTileValues> t{};
  for (int r = 0; r < kTileRows; ++r)
    for (int c = 0; c < kTileCols; ++c) t[dense_value_index(r, c)] = static_cast<std::uint16_t>(r * kTileCols + c);
  return t;
}();

/// Writes the 512 values of a dense tile in fragment order.
inline void pack_dense_tile(const TileElements& tile, fp16_t* out) {
  for (int k = 0; k < kDenseTileValues; ++k) out[k] = tile[kDenseSource[k]];
}

/// Writes the 256 compressed values of a 2:4 tile: compressed column 2*grp holds the element at idx0 of the
/// group's pair, 2*grp+1 the one at idx1 (ordered metadata). Also used for a second array of values (a split
/// matrix's low parts), which then sits at the positions that the same occupancy's metadata names.
inline void pack_sparse24_values(const TileElements& tile, const TileOccupancy& occupancy, fp16_t* values_out) {
  for (int r = 0; r < kTileRows; ++r) {
    for (int grp = 0; grp < kTileCols / kGroupCols; ++grp) {
      const GroupPair pair = kGroupPairs[(occupancy[r] >> (grp * kGroupCols)) & 0xFu];
      const fp16_t* group = &tile[r * kTileCols + grp * kGroupCols];
      values_out[sparse_value_index(r, 2 * grp)] = group[pair.idx0];
      values_out[sparse_value_index(r, 2 * grp + 1)] = group[pair.idx1];
    }
  }
}

/// Writes the 256 compressed values and 16 metadata words of a 2:4 tile. Every group of `occupancy` must
/// hold at most 2 nonzeros (row_violates_24 false for every row).
inline void pack_sparse24_tile(const TileElements& tile, const TileOccupancy& occupancy, fp16_t* values_out,
                               std::uint32_t* metadata_out) {
  pack_sparse24_values(tile, occupancy, values_out);
  for (int w = 0; w < kSparseTileMetaWords; ++w) metadata_out[w] = 0;
  for (int r = 0; r < kTileRows; ++r)
    for (int grp = 0; grp < kTileCols / kGroupCols; ++grp) {
      const GroupPair pair = kGroupPairs[(occupancy[r] >> (grp * kGroupCols)) & 0xFu];
      metadata_out[metadata_word(r, grp)] |= std::uint32_t{pair.nibble} << metadata_shift(r, grp);
    }
}

/// Inverse of pack_dense_tile.
inline void unpack_dense_tile(const fp16_t* values, TileElements& tile) {
  for (int k = 0; k < kDenseTileValues; ++k) tile[kDenseSource[k]] = values[k];
}

/// Inverse of pack_sparse24_tile: positions not named by the metadata become 0.
inline void unpack_sparse24_tile(const fp16_t* values, const std::uint32_t* metadata, TileElements& tile) {
  tile.fill(0);
  for (int r = 0; r < kTileRows; ++r) {
    for (int grp = 0; grp < kTileCols / kGroupCols; ++grp) {
      const unsigned nibble = (metadata[metadata_word(r, grp)] >> metadata_shift(r, grp)) & 0xFu;
      fp16_t* group = &tile[r * kTileCols + grp * kGroupCols];
      group[nibble_idx0(nibble)] = values[sparse_value_index(r, 2 * grp)];
      group[nibble_idx1(nibble)] = values[sparse_value_index(r, 2 * grp + 1)];
    }
  }
}

/// Tile t of `list` (the 2:4 list when sparse24) unpacked into `tile`, and its low parts into `tile_lo` when the
/// list has them (Precision::split); otherwise `tile_lo` is left as it is.
inline void unpack_list_tile(const TileList& list, bool sparse24, std::int64_t t, TileElements& tile,
                             TileElements& tile_lo) {
  const auto at = static_cast<std::size_t>(t);
  if (sparse24) {
    const std::uint32_t* metadata = list.metadata.data() + at * kSparseTileMetaWords;
    unpack_sparse24_tile(list.values.data() + at * kSparseTileValues, metadata, tile);
    if (!list.values_lo.empty()) unpack_sparse24_tile(list.values_lo.data() + at * kSparseTileValues, metadata, tile_lo);
  } else {
    unpack_dense_tile(list.values.data() + at * kDenseTileValues, tile);
    if (!list.values_lo.empty()) unpack_dense_tile(list.values_lo.data() + at * kDenseTileValues, tile_lo);
  }
}

/// True when all 128 nibbles of a tile's metadata are among the six mma.sp accepts.
inline bool sparse24_metadata_valid(const std::uint32_t* metadata) {
  for (int w = 0; w < kSparseTileMetaWords; ++w)
    for (int s = 0; s < 32; s += 4)
      if (!is_valid_metadata_nibble((metadata[w] >> s) & 0xFu)) return false;
  return true;
}

}  // namespace bcsr24::detail
