// Save and load a preprocessed matrix (.b24): versioned, checksummed binary file.
#pragma once

#include <cstdint>
#include <string>

#include "bcsr24/bcsr24_matrix.hpp"

namespace bcsr24 {

/// Current .b24 version written by save_bcsr24.
inline constexpr std::uint32_t kB24FileVersion = 1;

/// @throw Error if the file cannot be written.
void save_bcsr24(const std::string& path, const Bcsr24Matrix& a);

/// @throw FileFormatError for a missing, truncated, corrupted (checksum) or wrong-version file.
Bcsr24Matrix load_bcsr24(const std::string& path);

}  // namespace bcsr24
