// Save and load a preprocessed matrix (.b24): versioned, checksummed binary file.
#pragma once

#include <cstdint>
#include <string>

#include "format/bcsr24_matrix.hpp"

namespace bcsr24 {

/// Current .b24 version written by save_bcsr24 (docs/FORMAT.md, "The .b24 file"). Version 2 adds the tile
/// layout, the reordering, the row map (row_order) and the per-list B-row indices (b_rows). Version 3 adds the
/// precision, the per-row exponents (row_exponent), the low parts of split values (values_lo) and the storage
/// errors of the census.
inline constexpr std::uint32_t kB24FileVersion = 3;
/// Oldest .b24 version load_bcsr24 still reads. Version 1 files load as aligned tiles in file order
/// (layout aligned, reordering none, no row_order, no b_rows); versions 1 and 2 load as fp16 without row
/// exponents.
inline constexpr std::uint32_t kB24OldestFileVersion = 1;

/// Always writes version kB24FileVersion.
/// @throw InvalidArgument if the matrix's arrays are inconsistent (sizes, layout or reordering automatic,
///        condensed tiles without b_rows, values_lo or row_exponent not matching the precision and scaling);
///        Error if the file cannot be written.
void save_bcsr24(const std::string& path, const Bcsr24Matrix& a);

/// Reads versions kB24OldestFileVersion .. kB24FileVersion.
/// @throw FileFormatError for a missing, truncated, corrupted (checksum or structure) or unknown-version file;
///        the message starts with the file name.
Bcsr24Matrix load_bcsr24(const std::string& path);

}  // namespace bcsr24
