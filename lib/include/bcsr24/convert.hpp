// CSR -> BCSR-2:4 conversion: tiling, classification, 2:4 compression, fp16 range handling.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/bcsr24_matrix.hpp"
#include "bcsr24/csr_matrix.hpp"

namespace bcsr24 {

enum class ScalingPolicy {
  automatic,  ///< pick a power-of-two scale when values overflow fp16 (or would underflow), else none
  none,       ///< never scale; values beyond fp16 range raise RangeError
};

struct ConvertOptions {
  ScalingPolicy scaling = ScalingPolicy::automatic;
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

/// Classifies one 16x32 tile given as a row-major 16x32 array (exact zeros are absent entries).
TileKind classify_tile(const double* tile_row_major);

/// Converts a CSR matrix. Explicit zeros are dropped (they do not make a tile non-zero).
/// @throw RangeError if a value is beyond fp16 range and options.scaling == none, or is not finite;
///        SizeLimitError if the tiles do not fit in host memory.
Bcsr24Matrix convert_to_bcsr24(const CsrMatrix& a, const ConvertOptions& options = {},
                               LayoutReport* report = nullptr);

/// Expands every stored tile (2:4 ones decompressed) into one dense list in tile-row/column order:
/// the input of the all-dense kernels.
TileList merge_to_dense_list(const Bcsr24Matrix& a);

/// Decodes the whole matrix into a dense row-major rows x cols array of the stored fp16 values
/// times 2^scaling.exponent (for tests on small matrices).
std::vector<double> decode_to_dense(const Bcsr24Matrix& a);

/// The stored matrix (fp16 values times 2^scaling.exponent, in the caller's row and column order) as CSR: the
/// reference for a matrix loaded from a .b24 file, whatever its layout. Values that flushed to fp16 zero are
/// absent.
CsrMatrix stored_matrix_csr(const Bcsr24Matrix& a);

}  // namespace bcsr24
