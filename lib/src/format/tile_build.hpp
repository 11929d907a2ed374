// Pieces shared by the builders of the tile layouts (convert.cpp: aligned tiles in file order; condense.cpp:
// reordered and/or condensed bands): per-thread partial lists, appending a tile, the thread fan-out.
#pragma once

#include <cmath>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

#include "format/bcsr24_matrix.hpp"
#include "format/tile_codec.hpp"
#include "format/value_store.hpp"

namespace bcsr24::detail {

/// One list's share of a chunk of tile rows; concatenated in chunk order afterwards.
struct ListPart {
  std::vector<std::int32_t> tiles_per_row;
  std::vector<std::int32_t> col_idx;
  std::vector<fp16_t> values;
  std::vector<fp16_t> values_lo;     ///< Precision::split only
  std::vector<std::uint32_t> metadata;
  std::vector<std::int32_t> b_rows;  ///< gathered layouts only: 32 per tile
  std::int64_t nnz = 0;
};

struct ChunkPart {
  ListPart sparse24, dense;
  StoreTally tally;  ///< what rounding did to this chunk's values
};

/// Classifies a filled tile by its occupancy and appends it to the 2:4 or the dense part. tile_lo: the low
/// parts (Precision::split), packed at the same positions, or null. Returns true when it went to the 2:4 list.
inline bool append_tile(const TileElements& tile, const TileElements* tile_lo, const TileOccupancy& occupancy,
                        int nrows, int tile_nnz, std::int32_t col, bool force_dense, ChunkPart& out,
                        std::size_t band_in_chunk, const std::int32_t* b_rows32) {
  bool dense = force_dense;
  for (int i = 0; i < nrows && !dense; ++i) dense = row_violates_24(occupancy[static_cast<std::size_t>(i)]);
  ListPart& list = dense ? out.dense : out.sparse24;
  list.tiles_per_row[band_in_chunk] += 1;
  list.col_idx.push_back(col);
  list.nnz += tile_nnz;
  if (b_rows32) list.b_rows.insert(list.b_rows.end(), b_rows32, b_rows32 + kTileCols);
  const std::size_t value_offset = list.values.size();
  const std::size_t tile_values = dense ? kDenseTileValues : kSparseTileValues;
  list.values.resize(value_offset + tile_values);
  if (tile_lo) list.values_lo.resize(value_offset + tile_values);
  if (dense) {
    pack_dense_tile(tile, list.values.data() + value_offset);
    if (tile_lo) pack_dense_tile(*tile_lo, list.values_lo.data() + value_offset);
  } else {
    const std::size_t meta_offset = list.metadata.size();
    list.metadata.resize(meta_offset + kSparseTileMetaWords);
    pack_sparse24_tile(tile, occupancy, list.values.data() + value_offset, list.metadata.data() + meta_offset);
    // The metadata follows the source's nonzero pattern, not the values, so the low parts share it.
    if (tile_lo) pack_sparse24_values(*tile_lo, occupancy, list.values_lo.data() + value_offset);
  }
  return !dense;
}

/// Runs fn(0..chunks-1), chunk 0 on the calling thread, and rethrows the first chunk's exception.
template <class Fn>
void run_chunks(int chunks, const Fn& fn) {
  if (chunks <= 1) {
    fn(0);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(chunks));
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(chunks - 1));
  for (int c = 1; c < chunks; ++c)
    workers.emplace_back([&, c] {
      try {
        fn(c);
      } catch (...) {
        errors[static_cast<std::size_t>(c)] = std::current_exception();
      }
    });
  try {
    fn(0);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& w : workers) w.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// Concatenates the chunks' parts of one list into a TileList with a global row_ptr (releases the parts).
TileList assemble_list(std::vector<ChunkPart>& parts, ListPart ChunkPart::*which, std::int32_t tile_rows,
                       bool with_metadata);
/// Both lists of `out` (tile_rows set) from the parts, plus the nonzero counts and the merged rounding tally
/// (scaling.subnormal_count, flushed_count, max_flushed_relative, max_relative_error).
void assemble_lists(std::vector<ChunkPart>& parts, Bcsr24Matrix& out);

}  // namespace bcsr24::detail
