// The host BCSR-2:4 format (internal): a matrix cut into 16x32 tiles, stored as two tile lists (2:4 and dense).
// Callers see it through SparseOperator; the format is described in docs/FORMAT.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/half.hpp"
#include "bcsr24/operator_options.hpp"
#include "bcsr24/operator_reports.hpp"
#include "bcsr24/precision.hpp"
#include "format/tile_layout.hpp"

namespace bcsr24 {

/// Kind of a 16x32 tile.
enum class TileKind : std::uint8_t {
  zero,      ///< no nonzero: not stored
  sparse24,  ///< every row has at most 2 nonzeros in every aligned group of 4 columns
  dense      ///< anything else
};

/// Index bytes per gathered tile as the kernels read them: 32 int32 B rows. (A compact form, one int32 base and
/// 32 uint16 offsets, was built and measured slower on the H100: docs/PERFORMANCE.md.)
inline constexpr int kFullIndexBytesPerTile = kTileCols * 4;

/// How the kernels find the B rows of a tile.
enum class BRowIndex : std::uint8_t {
  implicit,  ///< aligned tiles in file order: tile column j of tile column t is row 32 t + j
  full,      ///< gathered: 32 int32 per tile
};

/// One BCSR tile list: tile-row pointers, tile-column indices, values in fragment order (tile_layout.hpp).
/// Tiles of a tile row are sorted by col_idx.
struct TileList {
  std::vector<std::int32_t> row_ptr;   ///< tile_rows + 1 entries
  /// One per tile. Aligned layout: tile column (stored column / 32). Condensed layout: the tile's position
  /// among its band's tiles (unique within a band across both lists).
  std::vector<std::int32_t> col_idx;
  /// 512 (dense) or 256 (2:4) per tile: 16-bit values in the matrix's precision (fp16 bits, or bf16 bits for
  /// Precision::bf16), times 2^-(the row's exponent).
  std::vector<fp16_t> values;
  /// Precision::split only (else empty): the low parts, in the same layout as `values` (a 2:4 tile's low parts
  /// sit at the positions of its high parts and share its metadata): fp16 of (a_scaled - hi) * 2^kSplitLoShift.
  std::vector<fp16_t> values_lo;
  std::vector<std::uint32_t> metadata; ///< 2:4 list only: 16 words per tile
  /// Empty: tile column j of tile t multiplies row col_idx[t] * 32 + j of B (aligned layout, file order).
  /// Otherwise 32 per tile: the row of B (= original column of A) that tile column j multiplies, or -1 for a
  /// padding column (all zero in A; B is not read).
  std::vector<std::int32_t> b_rows;

  bool gathered() const noexcept { return !b_rows.empty(); }
  /// Row of B that tile column j (0..31) of tile t multiplies, or -1 for a padding column; cols = columns of A.
  std::int64_t b_row(std::int64_t t, int j, std::int32_t cols) const noexcept {
    const std::int64_t k = b_rows.empty() ? std::int64_t{col_idx[static_cast<std::size_t>(t)]} * kTileCols + j
                                          : b_rows[static_cast<std::size_t>(t * kTileCols + j)];
    return k < cols ? k : -1;
  }
  std::int64_t tiles() const noexcept { return static_cast<std::int64_t>(col_idx.size()); }
  /// Bytes of the B-row indices as the kernels read them with the given index kind.
  std::int64_t index_bytes(BRowIndex kind) const noexcept {
    if (kind == BRowIndex::implicit || b_rows.empty()) return 0;
    return tiles() * kFullIndexBytesPerTile;
  }
  /// Bytes of the list without B-row indices (row pointers, tile columns, values, metadata).
  std::int64_t tile_bytes() const noexcept {
    return static_cast<std::int64_t>(row_ptr.size() * 4 + col_idx.size() * 4 + values.size() * 2 +
                                     values_lo.size() * 2 + metadata.size() * 4);
  }
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
  Precision precision = Precision::fp16;
  /// Per-row scaling (ScalingPolicy::per_row): `rows` entries, indexed by the row of A (not the stored row);
  /// stored values of row i are A(i, :) * 2^-(scaling.exponent + row_exponent[i]). Empty: no per-row scale.
  std::vector<std::int16_t> row_exponent;
  TileLayout layout = TileLayout::aligned;   ///< never automatic
  Reordering reordering = Reordering::none;  ///< never automatic
  /// Empty: stored row i is row i of A and of C. Otherwise tile_rows * 16 entries: stored row i is original
  /// row row_order[i] (-1 for the padding rows of the last band). Both lists share the row order.
  std::vector<std::int32_t> row_order;

  TileCensus census() const;
  /// Row of A and C held by stored row i (0 <= i < tile_rows * 16), or -1 for a padding row.
  std::int32_t original_row(std::int64_t i) const noexcept {
    if (!row_order.empty()) return row_order[static_cast<std::size_t>(i)];
    return i < rows ? static_cast<std::int32_t>(i) : -1;
  }
  /// True when some tile gathers its B rows by index (condensed, or columns reordered).
  bool gathered() const noexcept { return sparse24.gathered() || dense.gathered(); }
  /// How the kernels will read the B rows: implicit for aligned file-order tiles, else gathered by index.
  BRowIndex b_row_index() const noexcept { return gathered() ? BRowIndex::full : BRowIndex::implicit; }
  /// Bytes of the row map.
  std::int64_t row_order_bytes() const noexcept { return static_cast<std::int64_t>(row_order.size()) * 4; }
  /// Exponent e of row i of A (0 <= i < rows): its stored values are A(i, :) * 2^-e.
  std::int32_t exponent_of_row(std::int32_t i) const noexcept {
    return scaling.exponent + (row_exponent.empty() ? 0 : row_exponent[static_cast<std::size_t>(i)]);
  }
};

}  // namespace bcsr24
