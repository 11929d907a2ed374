// The mixed test matrices (mixed_matrices.hpp).
#include "gpu/mixed_matrices.hpp"

#include <algorithm>
#include <random>
#include <vector>

#include "bcsr24_testkit/synthetic.hpp"

namespace bcsr24::test {

/// Rows [0, block_rows): dense 16 x 64 blocks on a diagonal (tiles reuse every B row 16 times); the rest: a
/// random graph of `degree` scattered nonzeros per row over all columns, some rows left empty.
CsrMatrix blocks_over_graph(std::int32_t block_rows, std::int32_t graph_rows, std::int32_t cols, std::int32_t degree,
                            std::uint64_t seed) {
  const CsrMatrix graph = generate_random_graph(RandomGraphSpec{graph_rows, cols, degree, /*power_law=*/false, seed});
  CsrMatrix a;
  a.rows = block_rows + graph_rows;
  a.cols = cols;
  a.row_ptr.assign(std::size_t(a.rows) + 1, 0);
  for (std::int32_t r = 0; r < block_rows; ++r) {
    const std::int32_t first = (r / 16 * 64) % (cols - 64);
    for (std::int32_t c = first; c < first + 64; ++c) {
      a.col_idx.push_back(c);
      a.values.push_back(double((r * 7 + c * 3) % 17 - 8) / 8.0 + 0.0625);
    }
    a.row_ptr[std::size_t(r) + 1] = std::int32_t(a.col_idx.size());
  }
  for (std::int32_t g = 0; g < graph_rows; ++g) {
    const std::int32_t r = block_rows + g;
    if (g % 29 != 3)  // an empty row now and then: it must still get beta * C
      for (std::int32_t e = graph.row_ptr[g]; e < graph.row_ptr[g + 1]; ++e) {
        a.col_idx.push_back(graph.col_idx[e]);
        a.values.push_back(graph.values[e]);
      }
    a.row_ptr[std::size_t(r) + 1] = std::int32_t(a.col_idx.size());
  }
  return a;
}

/// `a` with row `row` replaced by a full row (every column): a row far longer than one block's lanes cover.
CsrMatrix with_full_row(const CsrMatrix& a, std::int32_t row) {
  CsrMatrix out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.assign(std::size_t(a.rows) + 1, 0);
  for (std::int32_t r = 0; r < a.rows; ++r) {
    if (r == row) {
      for (std::int32_t c = 0; c < a.cols; ++c) {
        out.col_idx.push_back(c);
        out.values.push_back(double((c * 5) % 13 - 6) / 4.0 + 0.125);
      }
    } else {
      for (std::int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
        out.col_idx.push_back(a.col_idx[e]);
        out.values.push_back(a.values[e]);
      }
    }
    out.row_ptr[std::size_t(r) + 1] = std::int32_t(out.col_idx.size());
  }
  return out;
}

/// Short rows among the classes: 2,999 rows (an odd count), the first 160 dense blocks, row 2001 full (long), every
/// 211th row from 160 on 150 entries (medium), the rest a random graph's rows cut to their first 0 .. short_max
/// entries.
CsrMatrix short_rows_among_classes(std::uint64_t seed, std::int32_t short_max) {
  const CsrMatrix a = with_full_row(blocks_over_graph(160, 2839, 3001, std::max(3, short_max), seed), 2001);
  CsrMatrix b;
  b.rows = a.rows;
  b.cols = a.cols;
  b.row_ptr.assign(std::size_t(a.rows) + 1, 0);
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  for (std::int32_t r = 0; r < a.rows; ++r) {
    if (r >= 160 && r != 2001 && r % 211 == 5) {
      for (std::int32_t k = 0; k < 150; ++k) {  // a medium row: columns r % 50 + 19 k, ascending, below 2,881
        b.col_idx.push_back(r % 50 + 19 * k);
        b.values.push_back(double(k % 7) / 8.0 - 0.375);
      }
    } else {
      // The dense blocks and the full row whole; the graph's rows cut to their first 0 .. short_max entries.
      const std::int32_t keep = r < 160 || r == 2001 ? a.cols : std::int32_t(rng() % std::uint32_t(short_max + 1));
      for (std::int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1] && e - a.row_ptr[r] < keep; ++e) {
        b.col_idx.push_back(a.col_idx[e]);
        b.values.push_back(a.values[e]);
      }
    }
    b.row_ptr[std::size_t(r) + 1] = std::int32_t(b.col_idx.size());
  }
  return b;
}

}  // namespace bcsr24::test
