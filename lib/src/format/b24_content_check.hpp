// The checks load_bcsr24 runs on the arrays of a .b24 file whose header, sizes and checksum are already
// known to be right: what a forged or wrongly written file could still get wrong (docs/FORMAT.md, section 7).
#pragma once

#include <string>

#include "format/bcsr24_matrix.hpp"

namespace bcsr24::detail {

/// Throws ParseError (line 0; the message starts with `path`) for the first problem: row_ptr not starting at 0,
/// not monotone or not ending at the tile count; a col_idx out of range or not strictly increasing within a tile
/// row; a tile in both lists; an inf/NaN stored value; an invalid metadata nibble; a nonzero in the padding.
/// Needs every array sized as the header says (row_ptr tile_rows + 1, values per tile, b_rows 0 or 32 per tile).
void check_loaded_tiles(const std::string& path, const Bcsr24Matrix& a);

}  // namespace bcsr24::detail
