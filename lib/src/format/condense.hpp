// Tiles built band by band from a row order: condensed bands (2:4-aware packed) or aligned tiles of a
// reordered matrix. The file-order aligned layout keeps its own faster path in convert.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "format/bcsr24_matrix.hpp"
#include "bcsr24/csr_matrix.hpp"
#include "format/tile_build.hpp"

namespace bcsr24::detail {

/// What to build. `order` is new-to-old (empty = file order). With layout aligned and permute_columns, the
/// columns are permuted by the same order (symmetric reordering of a square matrix), so tile columns are
/// gathered; aligned without permute_columns keeps implicit B rows.
struct BandLayoutRequest {
  TileLayout layout = TileLayout::condensed;
  const std::vector<std::int32_t>* order = nullptr;
  bool permute_columns = false;
  bool force_dense = false;
  int threads = 1;
};

/// Builds the tile lists (with values_lo for a split store), row_order, layout and the nonzero counts; fills
/// the rounding tally of scaling (assemble_lists) and the store's per-row census sums. The caller fills the rest
/// of scaling (magnitudes, exponents), precision and row_exponent.
/// Expects a CSR matrix already checked (sorted unique columns in range, finite values).
Bcsr24Matrix build_band_layout(const CsrMatrix& a, const BandLayoutRequest& request, const ValueStore& store);

/// Stored tiles the request would give, without packing values: for condensed, the sum over bands of
/// ceil(distinct columns / 32); for aligned, the distinct tile columns per band.
std::int64_t count_band_tiles(const CsrMatrix& a, const BandLayoutRequest& request);

}  // namespace bcsr24::detail
