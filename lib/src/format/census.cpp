// Bcsr24Matrix::census(): tile counts per kind, nonzeros per list, tile-row occupancy and list sizes.
#include <algorithm>

#include "format/bcsr24_matrix.hpp"

namespace bcsr24 {

TileCensus Bcsr24Matrix::census() const {
  TileCensus c;
  c.tile_rows = tile_rows;
  c.tile_cols = tile_cols;
  c.sparse24_tiles = sparse24.tiles();
  c.dense_tiles = dense.tiles();
  // For the condensed layout, "zero" is relative to the aligned grid of the same matrix.
  c.zero_tiles = std::max<std::int64_t>(0, std::int64_t{tile_rows} * tile_cols - c.sparse24_tiles - c.dense_tiles);
  // Nonzeros come from the conversion's count of source nonzeros: counting nonzero fp16 values instead would
  // miss values that flushed to zero and count nothing for the padding of 2:4 groups.
  c.nnz = nnz;
  c.sparse24_nnz = sparse24_nnz;
  c.dense_nnz = dense_nnz;
  for (std::int32_t tr = 0; tr < tile_rows; ++tr) {
    const auto in_row = [tr](const TileList& list) -> std::int64_t {
      if (list.row_ptr.size() <= static_cast<std::size_t>(tr) + 1) return 0;
      return list.row_ptr[static_cast<std::size_t>(tr) + 1] - list.row_ptr[static_cast<std::size_t>(tr)];
    };
    const std::int64_t stored = in_row(sparse24) + in_row(dense);
    c.max_tiles_per_tile_row = std::max(c.max_tiles_per_tile_row, stored);
    c.empty_tile_rows += stored == 0;
  }
  const BRowIndex index = b_row_index();
  c.gathered_b_rows = index == BRowIndex::full;
  c.sparse24_bytes = sparse24.tile_bytes() + sparse24.index_bytes(index);
  c.dense_bytes = dense.tile_bytes() + dense.index_bytes(index);
  c.index_bytes = sparse24.index_bytes(index) + dense.index_bytes(index) + row_order_bytes();
  c.row_order_bytes = row_order_bytes();
  c.layout = layout;
  c.reordering = reordering;
  return c;
}

}  // namespace bcsr24
