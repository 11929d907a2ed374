// The Matrix Market header: the %%MatrixMarket banner, comment lines and the size line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "bcsr24/matrix_market.hpp"

namespace bcsr24::io {

enum class MmFormat { coordinate, array };
enum class MmField { real, double_, integer, pattern, complex };
enum class MmSymmetry { general, symmetric, skew_symmetric, hermitian };

/// The banner and size line as the reader works with them (MatrixMarketInfo spells them as text for callers).
struct MmBanner {
  MmFormat format = MmFormat::coordinate;
  MmField field = MmField::real;
  MmSymmetry symmetry = MmSymmetry::general;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t entries = 0;  ///< entries listed in the file (before symmetric expansion)
};

/// The caller's view of a banner.
MatrixMarketInfo to_info(const MmBanner& banner);

struct MmHeader {
  MmBanner info;
  std::int64_t size_line = 0;        ///< 1-based line number of the size line
  std::size_t body_offset = 0;       ///< byte offset of the first line after the size line
  std::int64_t body_first_line = 0;  ///< its 1-based line number
};

/// Parses and checks the banner and size line, and refuses what bcsr24 does not read (vectors, complex)
/// and sizes beyond 32-bit indices before anything is allocated for the body.
/// @throw ParseError (also for vectors and complex values) / SizeLimitError, each naming `name` and the line.
MmHeader parse_header(const char* data, std::size_t size, const std::string& name);

/// Line number to report for a problem found at end of input: the last line that exists, rather than the
/// empty "line" after a final newline.
std::int64_t line_at_end(const char* data, std::size_t size, std::int64_t line) noexcept;

}  // namespace bcsr24::io
