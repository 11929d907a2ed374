// Random-graph matrices: scattered nonzeros with no block structure (synthetic.hpp).
#include <algorithm>
#include <climits>
#include <cmath>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "bcsr24/error.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "random_values.hpp"
#include "spec_text.hpp"

namespace bcsr24 {

CsrMatrix generate_random_graph(const RandomGraphSpec& spec) {
  const std::int32_t cols = spec.cols == 0 ? spec.rows : spec.cols;
  if (spec.rows < 1 || cols < 1 || spec.degree < 1 || spec.degree > cols)
    throw InvalidArgument("generate_random_graph: need rows, cols >= 1 and 1 <= degree <= cols; got " +
                          std::to_string(spec.rows) + " x " + std::to_string(cols) + ", degree " +
                          std::to_string(spec.degree));
  std::mt19937_64 rng(spec.seed);
  // Row lengths first, so the size is checked before anything large is allocated.
  std::vector<std::int32_t> length(static_cast<std::size_t>(spec.rows), spec.degree);
  if (spec.power_law) {
    // Pareto with exponent 2 and scale degree / 2 has mean degree; u is uniform in (0, 1].
    for (std::int32_t& d : length) {
      const double u = double((rng() >> 11) + 1) * 0x1p-53;
      d = static_cast<std::int32_t>(std::min<double>(cols, std::max(1.0, std::floor(0.5 * spec.degree / std::sqrt(u)))));
    }
  }
  std::int64_t nnz = 0;
  for (const std::int32_t d : length) nnz += d;
  if (nnz > INT32_MAX)
    throw InvalidArgument("generate_random_graph: " + std::to_string(nnz) + " nonzeros exceed 2^31 - 1");

  CsrMatrix a;
  a.rows = spec.rows;
  a.cols = cols;
  a.row_ptr.assign(static_cast<std::size_t>(spec.rows) + 1, 0);
  a.col_idx.reserve(static_cast<std::size_t>(nnz));
  a.values.reserve(static_cast<std::size_t>(nnz));
  std::vector<std::int32_t> row_cols;
  std::unordered_set<std::int32_t> taken;
  for (std::int32_t r = 0; r < spec.rows; ++r) {
    const std::int32_t d = length[static_cast<std::size_t>(r)];
    row_cols.clear();
    if (std::int64_t(d) * 4 > cols) {
      // Dense-ish row: choose by selection sampling over all columns (in order, exactly d of them).
      std::int32_t left = d;
      for (std::int32_t c = 0; c < cols && left > 0; ++c)
        if (detail::uniform_below(rng, std::uint64_t(cols - c)) < std::uint64_t(left)) {
          row_cols.push_back(c);
          --left;
        }
    } else {
      taken.clear();
      while (std::int32_t(row_cols.size()) < d) {
        const auto c = static_cast<std::int32_t>(detail::uniform_below(rng, std::uint64_t(cols)));
        if (taken.insert(c).second) row_cols.push_back(c);
      }
      std::sort(row_cols.begin(), row_cols.end());
    }
    for (const std::int32_t c : row_cols) {
      a.col_idx.push_back(c);
      a.values.push_back(detail::uniform_nonzero(rng));
    }
    a.row_ptr[static_cast<std::size_t>(r) + 1] = static_cast<std::int32_t>(a.col_idx.size());
  }
  return a;
}

RandomGraphSpec parse_random_graph_spec(const std::string& text) {
  const detail::SpecText spec_text("random graph spec", text, "ROWS[,cols=C][,degree=D][,power][,seed=S]");
  const std::vector<std::string> parts = spec_text.parts(0);
  RandomGraphSpec spec;
  spec.rows = spec_text.rows(parts[0]);
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const std::size_t eq = part.find('=');
    const std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (key == "power" && eq == std::string::npos) {
      spec.power_law = true;
    } else if (key == "cols") {
      const std::int64_t v = spec_text.integer(value, "cols");
      if (v < 1 || v > INT32_MAX) throw spec_text.fail("cols must be in 1 .. 2^31 - 1");
      spec.cols = static_cast<std::int32_t>(v);
    } else if (key == "degree") {
      const std::int64_t v = spec_text.integer(value, "degree");
      if (v < 1 || v > INT32_MAX) throw spec_text.fail("degree must be >= 1");
      spec.degree = static_cast<std::int32_t>(v);
    } else if (key == "seed") {
      spec.seed = static_cast<std::uint64_t>(spec_text.integer(value, "seed"));
    } else {
      throw spec_text.fail("unknown part '" + part + "'");
    }
  }
  return spec;
}

std::string random_graph_name(const RandomGraphSpec& spec) {
  std::string name = "graph" + std::to_string(spec.rows);
  if (spec.cols != 0 && spec.cols != spec.rows) name += "x" + std::to_string(spec.cols);
  name += "_d" + std::to_string(spec.degree);
  if (spec.power_law) name += "_power";
  return name;
}

}  // namespace bcsr24
