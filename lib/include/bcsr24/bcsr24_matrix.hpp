// The host BCSR-2:4 format: a matrix cut into 16x32 tiles, stored as two tile lists (2:4 and dense).
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/half.hpp"
#include "bcsr24/tile_layout.hpp"

namespace bcsr24 {

/// Kind of a 16x32 tile.
enum class TileKind : std::uint8_t {
  zero,      ///< no nonzero: not stored
  sparse24,  ///< every row has at most 2 nonzeros in every aligned group of 4 columns
  dense      ///< anything else
};

/// One BCSR tile list: tile-row pointers, tile-column indices, values in fragment order (tile_layout.hpp).
/// Tiles of a tile row are sorted by column.
struct TileList {
  std::vector<std::int32_t> row_ptr;   ///< tile_rows + 1 entries
  std::vector<std::int32_t> col_idx;   ///< one per tile: tile column (column / 32)
  std::vector<fp16_t> values;          ///< 512 (dense) or 256 (2:4) per tile
  std::vector<std::uint32_t> metadata; ///< 2:4 list only: 16 words per tile

  std::int64_t tiles() const noexcept { return static_cast<std::int64_t>(col_idx.size()); }
  std::int64_t bytes() const noexcept {
    return static_cast<std::int64_t>(row_ptr.size() * 4 + col_idx.size() * 4 + values.size() * 2 +
                                     metadata.size() * 4);
  }
};

/// fp16 range findings and the scaling applied. Stored values are A * 2^-exponent; products are multiplied
/// by 2^exponent, so the caller always sees A * B.
struct Fp16Scaling {
  std::int32_t exponent = 0;          ///< power-of-two scale applied at conversion
  double max_abs = 0.0;               ///< largest |a_ij| of the input
  double min_abs_nonzero = 0.0;       ///< smallest nonzero |a_ij| of the input
  std::int64_t overflow_count = 0;    ///< entries that would exceed fp16 max without scaling
  std::int64_t underflow_count = 0;   ///< nonzeros that would round to 0 without scaling
  std::int64_t subnormal_count = 0;   ///< nonzeros stored as fp16 subnormals (reduced precision) after scaling
  std::int64_t flushed_count = 0;     ///< nonzeros that still round to 0 after scaling (reported, never silent)
};

/// Tile statistics of a converted matrix.
struct TileCensus {
  std::int64_t tile_rows = 0, tile_cols = 0;
  std::int64_t zero_tiles = 0, sparse24_tiles = 0, dense_tiles = 0;
  std::int64_t nnz = 0;                       ///< nonzeros stored (explicit zeros excluded)
  std::int64_t sparse24_nnz = 0, dense_nnz = 0;
  std::int64_t max_tiles_per_tile_row = 0;
  std::int64_t empty_tile_rows = 0;
  std::int64_t sparse24_bytes = 0, dense_bytes = 0;  ///< bytes of each list (pointers, indices, values, metadata)

  std::int64_t stored_tiles() const noexcept { return sparse24_tiles + dense_tiles; }
  double sparse24_share() const noexcept {
    return stored_tiles() ? double(sparse24_tiles) / double(stored_tiles()) : 0.0;
  }
  double nnz_per_tile() const noexcept { return stored_tiles() ? double(nnz) / double(stored_tiles()) : 0.0; }
};

/// The preprocessed matrix. rows x cols is the logical size; the last tile row/column is zero-padded.
struct Bcsr24Matrix {
  std::int32_t rows = 0;
  std::int32_t cols = 0;
  std::int32_t tile_rows = 0;  ///< ceil(rows / 16)
  std::int32_t tile_cols = 0;  ///< ceil(cols / 32)
  std::int64_t nnz = 0;        ///< nonzeros of the source (explicit zeros excluded)
  /// Source nonzeros held by each list (sparse24_nnz + dense_nnz == nnz). Counted from the source, not
  /// from the stored fp16 values, because a value may flush to fp16 zero and still be a nonzero.
  std::int64_t sparse24_nnz = 0;
  std::int64_t dense_nnz = 0;
  TileList sparse24;           ///< 2:4 tiles, compressed, with metadata
  TileList dense;              ///< dense tiles
  Fp16Scaling scaling;

  TileCensus census() const;
};

}  // namespace bcsr24
