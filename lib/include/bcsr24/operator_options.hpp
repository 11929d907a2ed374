// The choices fixed when a SparseOperator is built: how A's values are stored and how A is cut into tiles.
#pragma once

#include <cstdint>
#include <string>

#include "bcsr24/matrix_market.hpp"
#include "bcsr24/precision.hpp"

namespace bcsr24 {

/// How values outside the stored precision's range are brought into it (docs/PRECISION.md).
enum class ScalingPolicy {
  per_row,    ///< a power-of-two scale per row, so each row's largest magnitude sits just under 2^15: an entry
              ///< flushes to zero only if it is below about 2^-40 of its row's largest (the default)
  automatic,  ///< one power-of-two scale for the whole matrix when values overflow fp16 (or would underflow)
  none,       ///< never scale; values beyond the precision's range raise RangeError
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
  rcm,        ///< reverse Cuthill-McKee with supervariables
  automatic,  ///< options only: rcm when it stores fewer tiles, else none
};

const char* scaling_policy_name(ScalingPolicy policy) noexcept;  ///< "per_row", "auto", "none"
const char* layout_name(TileLayout layout) noexcept;             ///< "aligned", "condensed", "auto"
const char* reordering_name(Reordering reordering) noexcept;     ///< "none", "rcm", "auto"
/// Inverses of the names above. @throw InvalidArgument naming the accepted values.
ScalingPolicy scaling_policy_from_name(const std::string& name);
TileLayout layout_from_name(const std::string& name);
Reordering reordering_from_name(const std::string& name);

/// Everything fixed when an operator is built. The defaults suit every matrix: the conversion picks the layout
/// and row order that store fewer bytes, and per-row scaling keeps any finite value in range.
struct OperatorOptions {
  /// Number format of the stored values: fp16 (default), bf16, or split (fp16 hi + lo, about fp32 accuracy).
  Precision precision = Precision::fp16;
  ScalingPolicy scaling = ScalingPolicy::per_row;
  /// Tile layout; automatic stores whichever of aligned and condensed takes fewer bytes.
  TileLayout layout = TileLayout::automatic;
  /// Row ordering before tiling; automatic computes RCM unless the file order's aligned tiles already hold >= 256
  /// nonzeros each, and uses it when it saves more than 5% of the tiles of the layout in question.
  Reordering reorder = Reordering::automatic;
  /// Host threads of the conversion; 0 = std::thread::hardware_concurrency().
  int threads = 0;
  /// How from_file() fills the values of pattern files (ones, or seeded random values).
  MatrixMarketOptions matrix_market;
};

}  // namespace bcsr24
