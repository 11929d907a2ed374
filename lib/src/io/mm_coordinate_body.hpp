// The entry lines of a coordinate Matrix Market file, parsed into 0-based triplets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/matrix_market.hpp"
#include "io/mm_header.hpp"

namespace bcsr24::io {

struct Triplets {
  std::vector<std::int32_t> row;
  std::vector<std::int32_t> col;
  std::vector<double> value;
};

/// Parses the body that follows `header` (data/size is the whole text, header included) into triplets,
/// with the off-diagonal entries of symmetric kinds mirrored (negated for skew-symmetric) and pattern
/// values filled in from `options`. Large bodies are parsed by several threads; an error found by any of
/// them is re-derived sequentially so the reported line is exact.
/// @throw ParseError naming `name` and the line; SizeLimitError when the mirrored count exceeds int32.
Triplets parse_coordinate_body(const char* data, std::size_t size, const MmHeader& header, const std::string& name,
                               const MatrixMarketOptions& options);

/// Value of the k-th (0-based, file order) entry of a pattern file under MatrixMarketOptions::PatternValues::random:
/// uniform in [-1, 1), a pure function of (seed, k) so that threading never changes it.
double pattern_random_value(std::uint64_t seed, std::uint64_t k) noexcept;

}  // namespace bcsr24::io
