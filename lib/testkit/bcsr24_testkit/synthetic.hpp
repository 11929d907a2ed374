// Synthetic matrices: the thesis's XdYs set (X% dense 16x32 tiles, Y% 2:4 tiles, the rest zero) and random
// graphs (scattered nonzeros with no block structure, the kind of matrix tiles do not suit).
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

/// A random graph's adjacency-like matrix: every row has its own number of nonzeros in distinct, uniformly
/// random columns, values uniform in [-1, 1) excluding zero. Row lengths are `degree` each, or with
/// power_law drawn from a Pareto distribution (exponent 2) of mean ~degree, capped at cols, so a few rows are
/// very long (as in circuit and web matrices).
struct RandomGraphSpec {
  std::int32_t rows = 0;
  std::int32_t cols = 0;  ///< 0 = rows
  std::int32_t degree = 8;
  bool power_law = false;
  std::uint64_t seed = 1;
};

/// @throw InvalidArgument for non-positive sizes or degree, a degree above cols, or more than 2^31 - 1 nonzeros.
CsrMatrix generate_random_graph(const RandomGraphSpec& spec);

/// Parses "ROWS[,cols=C][,degree=D][,power][,seed=S]". @throw InvalidArgument naming the bad part.
RandomGraphSpec parse_random_graph_spec(const std::string& text);

/// A name for reports, e.g. "graph100000_d8" or "graph100000_d8_power".
std::string random_graph_name(const RandomGraphSpec& spec);

}  // namespace bcsr24
