// The soak program's random matrices: every generator family of the testkit at random sizes and mixes, plus the
// shapes generators do not make (arrowheads, dense rows, empty bands, tiny and one-row/one-column matrices), with
// values over ranges from one binade to 10^24.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24::soak {

struct RandomMatrix {
  CsrMatrix a;
  std::string family;  ///< generator family ("xdys", "mesh", "graph", "power_graph", "arrowhead", ...)
  std::string name;    ///< the family with its parameters
  std::string values;  ///< how the values were drawn ("unit", "integers", "row_scales", "wide")
  double max_abs = 0.0;
};

/// A matrix of at most about max_rows rows and columns (tiny ones included), drawn from `rng`.
RandomMatrix random_matrix(std::mt19937_64& rng, std::int32_t max_rows);

/// Uniform integer in [lo, hi].
std::int64_t uniform(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi);
/// Uniform real in [lo, hi).
double uniform_real(std::mt19937_64& rng, double lo, double hi);

}  // namespace bcsr24::soak
