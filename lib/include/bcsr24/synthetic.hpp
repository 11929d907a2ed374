// The thesis's synthetic XdYs matrices: X% dense 16x32 tiles, Y% 2:4 tiles, the rest zero.
#pragma once

#include <cstdint>
#include <string>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24 {

struct XdYsSpec {
  std::int32_t rows = 0;
  std::int32_t cols = 0;
  double dense_percent = 0.0;     ///< X: share of tiles that are dense (fully populated)
  double sparse24_percent = 0.0;  ///< Y: share of tiles that are 2:4 (exactly 2 of every 4 nonzero)
  std::uint64_t seed = 1;
};

/// Generates the matrix; values are uniform in [-1, 1) excluding exact zero. Edge tiles are cut at the
/// matrix border (so they may classify as 2:4 or zero after cutting: the census tells).
/// @throw InvalidArgument for negative sizes or percentages outside [0, 100] summing over 100.
CsrMatrix generate_xdys(const XdYsSpec& spec);

/// Parses names like "10d5s" into percentages. @throw InvalidArgument on other text.
void parse_xdys_name(const std::string& name, double& dense_percent, double& sparse24_percent);

}  // namespace bcsr24
