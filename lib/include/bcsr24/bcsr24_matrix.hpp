// The host BCSR-2:4 format: a matrix cut into 16x32 tiles, stored as two tile lists (2:4 and dense).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/half.hpp"
#include "bcsr24/precision.hpp"
#include "bcsr24/tile_layout.hpp"

namespace bcsr24 {

/// Kind of a 16x32 tile.
enum class TileKind : std::uint8_t {
  zero,      ///< no nonzero: not stored
  sparse24,  ///< every row has at most 2 nonzeros in every aligned group of 4 columns
  dense      ///< anything else
};

/// How the columns of a 16-row band are cut into 32-column tiles (docs/FORMAT.md, "Layouts").
enum class TileLayout : std::uint8_t {
  aligned,    ///< tile column t holds (permuted) columns 32t .. 32t+31: the thesis's BCSR
  condensed,  ///< each band's nonzero columns, packed densely into as few tiles as possible and arranged
              ///< inside each tile so that as many tiles as possible are 2:4; B rows gathered by index
  automatic,  ///< options only: whichever of the two stores fewer bytes
};
/// How the rows (and, for aligned tiles of a square matrix, the columns) are ordered before tiling.
enum class Reordering : std::uint8_t {
  none,       ///< the file's order
  rcm,        ///< reverse Cuthill-McKee with supervariables (reorder.hpp)
  automatic,  ///< options only: rcm when it stores fewer tiles, else none
};
const char* layout_name(TileLayout layout) noexcept;
const char* reordering_name(Reordering reordering) noexcept;
/// Inverses of the names above ("aligned", "condensed", "auto"; "none", "rcm", "auto").
/// @throw InvalidArgument naming the accepted values.
TileLayout layout_from_name(const std::string& name);
Reordering reordering_from_name(const std::string& name);

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

/// Range findings and the scaling applied (fp16 range, or bf16's for Precision::bf16). Stored values of row i
/// are A(i, :) * 2^-(exponent + row exponent i) (Bcsr24Matrix::row_exponent); products are multiplied back,
/// so the caller always sees A * B.
struct Fp16Scaling {
  std::int32_t exponent = 0;          ///< power-of-two scale of the whole matrix (0 with per-row scaling)
  bool per_row = false;               ///< rows carry their own exponents (ScalingPolicy::per_row)
  std::int32_t min_row_exponent = 0, max_row_exponent = 0;  ///< range of the row exponents (0, 0 without)
  double max_abs = 0.0;               ///< largest |a_ij| of the input
  double min_abs_nonzero = 0.0;       ///< smallest nonzero |a_ij| of the input
  std::int64_t overflow_count = 0;    ///< entries that would exceed fp16 max without scaling
  std::int64_t underflow_count = 0;   ///< nonzeros that would round to 0 without scaling
  std::int64_t subnormal_count = 0;   ///< nonzeros stored as fp16 subnormals (reduced precision) after scaling
  std::int64_t flushed_count = 0;     ///< nonzeros that still round to 0 after scaling (reported, never silent)
  /// Largest |a_ij| / max_j |a_ij| (its row's largest magnitude) among the flushed nonzeros; 0 when none.
  double max_flushed_relative = 0.0;
  /// What storing did to A: the largest |stored - a| / |a| over the nonzeros that were not flushed, and
  /// ||stored - A||_F / ||A||_F over all of them (flushed ones included). stored = hi + 2^-kSplitLoShift lo for
  /// Precision::split.
  double max_relative_error = 0.0;
  double frobenius_relative_error = 0.0;
};

/// Tile statistics of a converted matrix.
struct TileCensus {
  std::int64_t tile_rows = 0, tile_cols = 0;
  std::int64_t zero_tiles = 0, sparse24_tiles = 0, dense_tiles = 0;
  std::int64_t nnz = 0;                       ///< nonzeros stored (explicit zeros excluded)
  std::int64_t sparse24_nnz = 0, dense_nnz = 0;
  std::int64_t max_tiles_per_tile_row = 0;
  std::int64_t empty_tile_rows = 0;
  std::int64_t sparse24_bytes = 0, dense_bytes = 0;  ///< bytes of each list as the kernels read it (pointers,
                                                     ///< indices, values, metadata, B-row indices)
  std::int64_t index_bytes = 0;  ///< B-row indices (both lists) and the row map: the cost of gathering
  BRowIndex b_row_index = BRowIndex::implicit;
  std::int64_t row_order_bytes = 0;  ///< the row map alone (not part of either list's bytes)
  TileLayout layout = TileLayout::aligned;
  Reordering reordering = Reordering::none;

  std::int64_t stored_tiles() const noexcept { return sparse24_tiles + dense_tiles; }
  double sparse24_share() const noexcept {
    return stored_tiles() ? double(sparse24_tiles) / double(stored_tiles()) : 0.0;
  }
  double nnz_per_tile() const noexcept { return stored_tiles() ? double(nnz) / double(stored_tiles()) : 0.0; }
  /// Everything the kernels read of A: both lists and the row map.
  std::int64_t total_bytes() const noexcept { return sparse24_bytes + dense_bytes + row_order_bytes; }
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

/// What the layout choice cost and bought, against the thesis baseline (aligned tiles, file order).
struct LayoutReport {
  TileLayout layout = TileLayout::aligned;
  Reordering reordering = Reordering::none;
  std::string reason;                       ///< one line: why automatic picked what it did, or "requested"
  std::int64_t baseline_stored_tiles = 0;   ///< aligned, file order (-1 when not computed)
  std::int64_t baseline_sparse24_tiles = 0;
  std::int64_t baseline_bytes = 0;
  std::int64_t condensed_tiles_file_order = -1;  ///< sum over bands of ceil(distinct columns / 32), -1 if unknown
  std::int64_t condensed_tiles_rcm = -1;
  double reorder_seconds = 0.0;   ///< computing the reordering
  double baseline_seconds = 0.0;  ///< counting the baseline's tiles
  double pack_seconds = 0.0;      ///< building the chosen layout (condensing, 2:4 packing, fp16 conversion)
  double total_seconds = 0.0;
};

}  // namespace bcsr24
