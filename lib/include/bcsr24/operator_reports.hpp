// What building an operator found and did: the tile census, the layout choice and the range handling of the
// values. Filled once by the conversion; read through SparseOperator.
#pragma once

#include <cstdint>
#include <string>

#include "bcsr24/operator_options.hpp"

namespace bcsr24 {

/// Range findings and the scaling applied (fp16 range, or bf16's for Precision::bf16). Stored values of row i
/// are A(i, :) * 2^-(exponent + the row's own exponent); products are multiplied back, so the caller always sees
/// A * B.
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
  bool gathered_b_rows = false;  ///< tiles name their B rows by index (condensed, or columns reordered)
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
