// CSR -> BCSR-2:4 conversion: tiling, classification, 2:4 compression, range handling of the stored format.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/operator_options.hpp"
#include "format/bcsr24_matrix.hpp"

namespace bcsr24 {

/// The conversion's options: the operator's (OperatorOptions) plus what only tests and experiments set.
struct ConvertOptions {
  ScalingPolicy scaling = ScalingPolicy::per_row;
  /// Number format of the stored values (precision.hpp).
  Precision precision = Precision::fp16;
  /// Treat every non-empty tile as dense (no 2:4 list). For experiments.
  bool force_dense = false;
  /// Host threads converting tile rows in parallel; 0 = std::thread::hardware_concurrency().
  int threads = 0;
  /// Tile layout; automatic (the default) stores whichever of aligned and condensed takes fewer bytes.
  TileLayout layout = TileLayout::automatic;
  /// Row ordering before tiling; automatic (the default) computes RCM unless the file order's aligned tiles already
  /// hold >= 256 nonzeros each, and uses it when it saves more than 5% of the tiles of the layout in question.
  Reordering reorder = Reordering::automatic;
};

/// The conversion an operator with these options runs.
ConvertOptions convert_options(const OperatorOptions& options);

/// Classifies one 16x32 tile given as a row-major 16x32 array (exact zeros are absent entries).
TileKind classify_tile(const double* tile_row_major);

/// Converts a CSR matrix. Explicit zeros are dropped (they do not make a tile non-zero). The result's scaling
/// field reports the range findings and what storing did to the values (docs/FORMAT.md, section 5).
/// @throw RangeError if a value is beyond the range of options.precision and options.scaling == none, or is
///        not finite;
///        SizeLimitError if the tiles do not fit in host memory.
Bcsr24Matrix convert_to_bcsr24(const CsrMatrix& a, const ConvertOptions& options = {},
                               LayoutReport* report = nullptr);

/// Expands every stored tile (2:4 ones decompressed) into one dense list in tile-row/column order:
/// the input of the all-dense kernels. A split matrix's low parts are expanded into values_lo the same way.
TileList merge_to_dense_list(const Bcsr24Matrix& a);

/// Decodes the whole matrix into a dense row-major rows x cols array of the stored values in their precision
/// (split: hi + 2^-11 lo), each times 2^exponent_of_row(its row), exactly (for tests on small matrices).
std::vector<double> decode_to_dense(const Bcsr24Matrix& a);

/// The stored matrix (decoded as in decode_to_dense, in the caller's row and column order) as CSR: the
/// reference for a matrix loaded from a .b24 file, whatever its layout and precision. Values that flushed to
/// zero are absent.
CsrMatrix stored_matrix_csr(const Bcsr24Matrix& a);

/// Rows `rows` (ascending, distinct, in the caller's numbering) of stored_matrix_csr(a), as a rows.size() x cols
/// matrix, decoding only the bands that hold them. @throw InvalidArgument for rows out of range or out of order.
CsrMatrix stored_matrix_rows(const Bcsr24Matrix& a, const std::vector<std::int32_t>& rows);

}  // namespace bcsr24
