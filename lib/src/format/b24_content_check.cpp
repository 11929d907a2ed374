// The array checks of load_bcsr24 (see b24_content_check.hpp): structure of the two tile lists and content of
// their tiles. They run after the checksum, so they catch forged or wrongly written files, not damage.
#include "format/b24_content_check.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "bcsr24/precision.hpp"
#include "format/tile_layout.hpp"
#include "format/stored_value.hpp"
#include "format/tile_codec.hpp"

namespace bcsr24::detail {

namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

/// Row pointers start at 0, are monotone and end at the list's tile count.
void check_row_ptr(const std::string& path, const TileList& list, const char* name) {
  const auto fail = [&](const std::string& why) { throw ParseError(path, 0, std::string(name) + " list: " + why); };
  if (list.row_ptr.front() != 0) fail("row_ptr[0] is " + std::to_string(list.row_ptr.front()) + ", expected 0");
  for (std::size_t tr = 0; tr + 1 < list.row_ptr.size(); ++tr) {
    const std::int32_t begin = list.row_ptr[tr], end = list.row_ptr[tr + 1];
    if (end < begin || end > list.tiles())
      fail("row_ptr is not monotone within [0, tiles] at tile row " + std::to_string(tr));
  }
  if (list.row_ptr.back() != list.tiles())
    fail("row_ptr ends at " + std::to_string(list.row_ptr.back()) + " but the list has " +
         std::to_string(list.tiles()) + " tiles");
}

/// Column indices: in range and strictly increasing per tile row. Aligned layout: tile columns in
/// [0, tile_cols). Condensed layout: ordinals in [0, tiles of the band in both lists). Needs both lists'
/// row_ptr checked.
void check_col_idx(const std::string& path, const Bcsr24Matrix& a, const TileList& list, const char* name) {
  const auto fail = [&](const std::string& why) { throw ParseError(path, 0, std::string(name) + " list: " + why); };
  const bool condensed = a.layout == TileLayout::condensed;
  for (std::int32_t tr = 0; tr < a.tile_rows; ++tr) {
    const std::int32_t begin = list.row_ptr[at(tr)], end = list.row_ptr[at(tr) + 1];
    const std::int64_t limit =
        condensed ? std::int64_t{a.sparse24.row_ptr[at(tr) + 1]} - a.sparse24.row_ptr[at(tr)] +
                        a.dense.row_ptr[at(tr) + 1] - a.dense.row_ptr[at(tr)]
                  : std::int64_t{a.tile_cols};
    for (std::int32_t t = begin; t < end; ++t) {
      const std::int32_t c = list.col_idx[at(t)];
      if (c < 0 || c >= limit)
        fail("tile " + std::to_string(t) + " has " +
             (condensed ? "band ordinal " + std::to_string(c) + " outside [0, " + std::to_string(limit) +
                              ") (the tiles of tile row " + std::to_string(tr) + " in both lists)"
                        : "tile column " + std::to_string(c) + " outside [0, " + std::to_string(limit) + ")"));
      if (t > begin && c <= list.col_idx[at(t) - 1])
        fail(std::string(condensed ? "band ordinals" : "tile columns") + " of tile row " + std::to_string(tr) +
             " are not strictly increasing");
    }
  }
}

/// A tile column (condensed: a band ordinal) stored in both lists would be counted twice by the kernels.
void check_lists_disjoint(const std::string& path, const Bcsr24Matrix& a) {
  for (std::int32_t tr = 0; tr < a.tile_rows; ++tr) {
    std::int32_t s = a.sparse24.row_ptr[at(tr)];
    std::int32_t d = a.dense.row_ptr[at(tr)];
    const std::int32_t s_end = a.sparse24.row_ptr[at(tr) + 1];
    const std::int32_t d_end = a.dense.row_ptr[at(tr) + 1];
    while (s < s_end && d < d_end) {
      const std::int32_t cs = a.sparse24.col_idx[at(s)];
      const std::int32_t cd = a.dense.col_idx[at(d)];
      if (cs == cd)
        throw ParseError(path, 0, "tile (" + std::to_string(tr) + ", " + std::to_string(cs) +
                                      ") is stored in both the 2:4 and the dense list");
      if (cs < cd) ++s; else ++d;
    }
  }
}

/// Values must be finite, metadata nibbles valid, and the padding of tiles zero (kernels may multiply it).
/// Padding: rows >= rows in the last tile row; columns >= cols in the last tile column (lists without
/// b_rows) or columns whose b_rows entry is -1 (gathered lists).
void check_tile_contents(const std::string& path, const Bcsr24Matrix& a) {
  for (const std::vector<fp16_t>* values : {&a.sparse24.values, &a.sparse24.values_lo, &a.dense.values, &a.dense.values_lo})
    for (const fp16_t v : *values)
      if (is_stored_non_finite(a.precision, v))
        throw ParseError(path, 0, std::string("a stored value is infinite or NaN (read as ") +
                                      precision_name(a.precision) + ")");
  for (std::int64_t t = 0; t < a.sparse24.tiles(); ++t)
    if (!sparse24_metadata_valid(a.sparse24.metadata.data() + t * kSparseTileMetaWords))
      throw ParseError(path, 0, "2:4 tile " + std::to_string(t) + " has a metadata nibble mma.sp rejects");

  const std::int32_t last_rows = a.rows - (a.tile_rows - 1) * kTileRows;  // rows used in the last tile row
  const std::int32_t last_cols = a.cols - (a.tile_cols - 1) * kTileCols;  // columns used in the last tile column
  TileElements tile{}, tile_lo{};
  std::array<bool, kTileCols> padding_col{};
  const auto check_list = [&](const TileList& list, bool sparse, const char* name) {
    const bool gathered = list.gathered();
    for (std::int32_t tr = 0; tr < a.tile_rows; ++tr) {
      const int used_rows = tr == a.tile_rows - 1 ? last_rows : kTileRows;
      for (std::int32_t t = list.row_ptr[at(tr)]; t < list.row_ptr[at(tr) + 1]; ++t) {
        const std::int32_t tc = list.col_idx[at(t)];
        bool any_padding_col = false;
        for (int c = 0; c < kTileCols; ++c) {
          padding_col[at(c)] = gathered ? list.b_rows[at(t) * kTileCols + at(c)] == -1
                                        : tc == a.tile_cols - 1 && c >= last_cols;
          any_padding_col = any_padding_col || padding_col[at(c)];
        }
        if (used_rows == kTileRows && !any_padding_col) continue;  // interior tile: no padding
        unpack_list_tile(list, sparse, t, tile, tile_lo);
        for (int r = 0; r < kTileRows; ++r)
          for (int c = 0; c < kTileCols; ++c)
            if ((r >= used_rows || padding_col[at(c)]) &&
                is_stored_nonzero(a.precision, tile[at(r * kTileCols + c)], tile_lo[at(r * kTileCols + c)]))
              throw ParseError(
                  path, 0, std::string(name) + " tile (" + std::to_string(tr) + ", " + std::to_string(tc) +
                  ") has a nonzero outside the matrix (tile row " + std::to_string(r) + ", tile column " +
                  std::to_string(c) +
                  (r >= used_rows ? std::string(": a padding row)")
                                  : gathered ? std::string(": b_rows is -1)") : std::string(": beyond cols)")));
      }
    }
  };
  check_list(a.sparse24, true, "2:4");
  check_list(a.dense, false, "dense");
}

}  // namespace

void check_loaded_tiles(const std::string& path, const Bcsr24Matrix& a) {
  check_row_ptr(path, a.sparse24, "2:4");
  check_row_ptr(path, a.dense, "dense");
  check_col_idx(path, a, a.sparse24, "2:4");
  check_col_idx(path, a, a.dense, "dense");
  check_lists_disjoint(path, a);
  check_tile_contents(path, a);
}

}  // namespace bcsr24::detail
