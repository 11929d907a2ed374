// Save and load a preprocessed matrix (.b24): versioned, checksummed binary file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/bcsr24_matrix.hpp"

namespace bcsr24 {

/// Newest .b24 version written by save_bcsr24 (docs/FORMAT.md, "The .b24 file"). Version 2 adds the tile
/// layout, the reordering, the row map (row_order) and the per-list B-row indices (b_rows). Version 3 adds the
/// precision, the per-row exponents (row_exponent), the low parts of split values (values_lo) and the storage
/// errors of the census. Version 4 is version 3 with the tuned-choice section after the arrays; it is written only
/// for a matrix with tuned choices, so that files without them stay readable by builds that read version 3.
inline constexpr std::uint32_t kB24FileVersion = 4;
/// The version written for a matrix without tuned choices.
inline constexpr std::uint32_t kB24VersionWithoutChoices = 3;
/// Oldest .b24 version load_bcsr24 still reads. Version 1 files load as aligned tiles in file order
/// (layout aligned, reordering none, no row_order, no b_rows); versions 1 and 2 load as fp16 without row
/// exponents.
inline constexpr std::uint32_t kB24OldestFileVersion = 1;

/// A measured plan's choice as the file stores it (the operator's detail::StoredChoice): for which n, B type
/// (ElementType code: 1 fp16, 2 bf16, 3 fp32), output type (its own codes: 0 fp32, 1 fp16) and device name, the knobs
/// that rebuild the plan (BandPaths: 1 tiles, 2 csr, 3 hybrid; TilePipeline: 1 standard, 2 deep; two flags) and
/// the median measured when it was chosen (-1: none).
struct B24TunedChoice {
  std::int32_t n = 0;
  std::uint8_t input = 0, output = 0, paths = 0, split_long_bands = 0, tile_pipeline = 0, band_groups = 0;
  double measured_us = -1.0;
  std::string device;
};

/// Writes version kB24VersionWithoutChoices, or kB24FileVersion with the tuned-choice section when `choices` is
/// not empty.
/// @throw InvalidArgument if the matrix's arrays are inconsistent (sizes, layout or reordering automatic,
///        condensed tiles without b_rows, values_lo or row_exponent not matching the precision and scaling) or a
///        choice is out of range (codes, n < 1, a device name empty or over 255 bytes);
///        Error if the file cannot be written.
void save_bcsr24(const std::string& path, const Bcsr24Matrix& a, const std::vector<B24TunedChoice>& choices = {});

/// Reads versions kB24OldestFileVersion .. kB24FileVersion; the tuned choices of a version-4 file go to `choices`
/// (cleared first) where given.
/// @throw ParseError (line 0) for a missing, truncated, corrupted (checksum or structure) or unknown-version file;
///        the message starts with the file name.
Bcsr24Matrix load_bcsr24(const std::string& path, std::vector<B24TunedChoice>* choices = nullptr);

}  // namespace bcsr24
