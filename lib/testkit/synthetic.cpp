// Synthetic XdYs matrices: random dense and 2:4 tiles in exact proportions, built directly as CSR.
#include "bcsr24_testkit/synthetic.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/error.hpp"
#include "format/tile_layout.hpp"
#include "random_values.hpp"

namespace bcsr24 {

using detail::uniform_below;
using detail::uniform_nonzero;

namespace {

/// The six ways to keep 2 of 4 positions in a group, as bit masks.
constexpr unsigned kTwoOfFour[6] = {0x3, 0x5, 0x6, 0x9, 0xA, 0xC};

enum class SyntheticKind : std::uint8_t { zero, sparse24, dense };

void check_spec(const XdYsSpec& spec) {
  if (spec.rows < 0 || spec.cols < 0)
    throw InvalidArgument("generate_xdys: negative size " + std::to_string(spec.rows) + " x " + std::to_string(spec.cols));
  const auto in_range = [](double p) { return std::isfinite(p) && p >= 0.0 && p <= 100.0; };
  if (!in_range(spec.dense_percent) || !in_range(spec.sparse24_percent) ||
      spec.dense_percent + spec.sparse24_percent > 100.0 + 1e-9) {
    std::ostringstream msg;
    msg << "generate_xdys: percentages " << spec.dense_percent << "% dense and " << spec.sparse24_percent
        << "% 2:4 must each lie in [0, 100] and sum to at most 100";
    throw InvalidArgument(msg.str());
  }
}

}  // namespace

CsrMatrix generate_xdys(const XdYsSpec& spec) {
  check_spec(spec);
  const std::int64_t tile_rows = (std::int64_t{spec.rows} + kTileRows - 1) / kTileRows;
  const std::int64_t tile_cols = (std::int64_t{spec.cols} + kTileCols - 1) / kTileCols;
  const std::int64_t tiles = tile_rows * tile_cols;
  std::int64_t dense_left = std::llround(spec.dense_percent / 100.0 * static_cast<double>(tiles));
  std::int64_t sparse_left = std::llround(spec.sparse24_percent / 100.0 * static_cast<double>(tiles));
  // Two roundings up (e.g. 50.5 + 49.5 of 101 tiles) may exceed the grid by one.
  sparse_left = std::min(sparse_left, tiles - dense_left);

  CsrMatrix a;
  a.rows = spec.rows;
  a.cols = spec.cols;
  a.row_ptr.assign(static_cast<std::size_t>(spec.rows) + 1, 0);
  const std::int64_t capacity_bound = dense_left * kDenseTileValues + sparse_left * kSparseTileValues;
  const std::int64_t max_nnz = std::numeric_limits<std::int32_t>::max();
  a.col_idx.reserve(static_cast<std::size_t>(std::min(capacity_bound, max_nnz)));
  a.values.reserve(static_cast<std::size_t>(std::min(capacity_bound, max_nnz)));

  std::mt19937_64 rng(spec.seed);
  std::vector<std::pair<std::int32_t, SyntheticKind>> row_tiles;  // non-zero tiles of the current tile row
  std::int64_t tiles_seen = 0;
  for (std::int64_t tr = 0; tr < tile_rows; ++tr) {
    // Selection sampling: each tile is dense with probability dense_left / tiles_left, else 2:4 with
    // probability sparse_left / tiles_left. This yields exactly the requested counts, every placement
    // equally likely, in one pass and without a tile-sized array.
    row_tiles.clear();
    for (std::int64_t tc = 0; tc < tile_cols; ++tc, ++tiles_seen) {
      if (dense_left == 0 && sparse_left == 0) break;
      const auto u = static_cast<std::int64_t>(uniform_below(rng, static_cast<std::uint64_t>(tiles - tiles_seen)));
      if (u < dense_left) {
        --dense_left;
        row_tiles.emplace_back(static_cast<std::int32_t>(tc), SyntheticKind::dense);
      } else if (u < dense_left + sparse_left) {
        --sparse_left;
        row_tiles.emplace_back(static_cast<std::int32_t>(tc), SyntheticKind::sparse24);
      }
    }
    const std::int32_t r0 = static_cast<std::int32_t>(tr * kTileRows);
    const std::int32_t r_end = static_cast<std::int32_t>(std::min<std::int64_t>(spec.rows, r0 + kTileRows));
    for (std::int32_t r = r0; r < r_end; ++r) {
      for (const auto& [tc, kind] : row_tiles) {
        const std::int64_t c0 = std::int64_t{tc} * kTileCols;
        const std::int64_t c_end = std::min<std::int64_t>(spec.cols, c0 + kTileCols);  // edge tiles are cut
        if (kind == SyntheticKind::dense) {
          for (std::int64_t c = c0; c < c_end; ++c) {
            a.col_idx.push_back(static_cast<std::int32_t>(c));
            a.values.push_back(uniform_nonzero(rng));
          }
        } else {
          for (std::int64_t g = c0; g < c0 + kTileCols; g += kGroupCols) {
            const unsigned keep = kTwoOfFour[uniform_below(rng, 6)];
            for (int q = 0; q < kGroupCols; ++q) {
              if (!(keep & (1u << q)) || g + q >= c_end) continue;
              a.col_idx.push_back(static_cast<std::int32_t>(g + q));
              a.values.push_back(uniform_nonzero(rng));
            }
          }
        }
      }
      if (static_cast<std::int64_t>(a.col_idx.size()) > max_nnz)
        throw SizeLimitError("generate_xdys: more than 2^31 - 1 nonzeros do not fit 32-bit CSR indices");
      a.row_ptr[static_cast<std::size_t>(r) + 1] = static_cast<std::int32_t>(a.col_idx.size());
    }
  }
  return a;
}

void parse_xdys_name(const std::string& name, double& dense_percent, double& sparse24_percent) {
  const auto bad = [&](const std::string& why) {
    return InvalidArgument("XdYs name \"" + name + "\": " + why + " (expected e.g. 10d5s: 10% dense, 5% 2:4 tiles)");
  };
  // Digits with at most one decimal point, checked by hand because from_chars would also take "1e5" or "inf".
  const auto number = [&](std::size_t& pos, char terminator) {
    const std::size_t begin = pos;
    bool point = false;
    while (pos < name.size() && (std::isdigit(static_cast<unsigned char>(name[pos])) || (name[pos] == '.' && !point))) {
      point = point || name[pos] == '.';
      ++pos;
    }
    if (pos == begin || (pos - begin == 1 && point)) throw bad("missing number");
    if (pos >= name.size() || name[pos] != terminator) throw bad(std::string("expected '") + terminator + "'");
    double v = 0.0;
    const auto result = std::from_chars(name.data() + begin, name.data() + pos, v);
    if (result.ec != std::errc() || result.ptr != name.data() + pos) throw bad("unreadable number");
    ++pos;
    return v;
  };
  std::size_t pos = 0;
  const double dense = number(pos, 'd');
  const double sparse = number(pos, 's');
  if (pos != name.size()) throw bad("unexpected text after 's'");
  if (dense > 100.0 || sparse > 100.0 || dense + sparse > 100.0 + 1e-9) throw bad("percentages sum over 100");
  dense_percent = dense;
  sparse24_percent = sparse;
}

}  // namespace bcsr24
