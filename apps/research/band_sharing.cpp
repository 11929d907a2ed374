// band_sharing: how many B-block loads a tile kernel would save if k consecutive 16-row bands shared one thread
// block (and so loaded each B block once for all of them) instead of one block per band.
//
// The tile kernels stage, per tile, the 32 rows of B it multiplies; a B block used by several bands is read from
// L2 once per band. At n >= 64 that traffic decides the time (docs/PERFORMANCE.md), which is why issue 9 asks
// whether several bands per block pay. This program answers it per matrix before any kernel is written:
//   aligned   - tiles on the matrix's own 32-column grid: a group loads the union of its bands' tile columns;
//   condensed - each band's distinct columns packed 32 at a time (the library's condensed layout): a group packs
//               the union of its bands' distinct columns.
// For k = 1 the counts equal the stored tiles of the two layouts (spmm_run's "before (aligned)" and condensed
// tile counts), which checks the counting. Grouping the aligned layout keeps its tiles; grouping the condensed
// one packs each band's columns among its neighbours', so its 16 x 32 tiles (the A bytes) grow: the last
// columns count them.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli.hpp"
#include "matrix_source.hpp"
#include "format/reorder.hpp"
#include "format/tile_layout.hpp"

namespace {

using bcsr24::CsrMatrix;

struct GroupCounts {
  std::int64_t aligned_b_blocks = 0;    ///< sum over groups of the distinct 32-column tile columns
  std::int64_t condensed_b_blocks = 0;  ///< sum over groups of ceil(distinct columns / 32)
  /// 16 x 32 tiles the grouped condensed layout stores: (band, 32-column block of the group's packing) pairs
  /// that hold an entry. Grouping packs a band's columns among its neighbours', so this grows with k.
  std::int64_t condensed_tiles = 0;
};

/// B-block loads with groups of `k` consecutive bands of A in row order `order` (new-to-old; empty = as
/// stored). A symmetric order renumbers the columns too (as the library's RCM does for square matrices).
GroupCounts count_b_blocks(const CsrMatrix& a, const std::vector<std::int32_t>& order, bool symmetric, int k) {
  std::vector<std::int32_t> inverse;
  if (symmetric) inverse = bcsr24::inverse_permutation(order);
  const std::int64_t bands = (std::int64_t(a.rows) + bcsr24::kTileRows - 1) / bcsr24::kTileRows;
  const std::int64_t group_rows = std::int64_t(k) * bcsr24::kTileRows;
  GroupCounts counts;
  std::vector<std::int32_t> columns, tile_columns;
  for (std::int64_t first = 0; first < bands * bcsr24::kTileRows; first += group_rows) {
    columns.clear();
    tile_columns.clear();
    for (std::int64_t r = first; r < std::min<std::int64_t>(a.rows, first + group_rows); ++r) {
      const std::int32_t row = order.empty() ? std::int32_t(r) : order[std::size_t(r)];
      for (std::int32_t e = a.row_ptr[std::size_t(row)]; e < a.row_ptr[std::size_t(row) + 1]; ++e) {
        const std::int32_t col = inverse.empty() ? a.col_idx[std::size_t(e)] : inverse[std::size_t(a.col_idx[std::size_t(e)])];
        columns.push_back(col);
        tile_columns.push_back(col / bcsr24::kTileCols);
      }
    }
    auto distinct = [](std::vector<std::int32_t>& v) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      return std::int64_t(v.size());
    };
    counts.aligned_b_blocks += distinct(tile_columns);
    counts.condensed_b_blocks += (distinct(columns) + bcsr24::kTileCols - 1) / bcsr24::kTileCols;
    // The group's columns in ascending order, 32 per block: each band stores the blocks its entries fall in.
    for (std::int64_t band0 = first; band0 < std::min<std::int64_t>(a.rows, first + group_rows); band0 += bcsr24::kTileRows) {
      tile_columns.clear();
      for (std::int64_t r = band0; r < std::min<std::int64_t>(a.rows, band0 + bcsr24::kTileRows); ++r) {
        const std::int32_t row = order.empty() ? std::int32_t(r) : order[std::size_t(r)];
        for (std::int32_t e = a.row_ptr[std::size_t(row)]; e < a.row_ptr[std::size_t(row) + 1]; ++e) {
          const std::int32_t col = inverse.empty() ? a.col_idx[std::size_t(e)] : inverse[std::size_t(a.col_idx[std::size_t(e)])];
          const auto at = std::lower_bound(columns.begin(), columns.end(), col) - columns.begin();
          tile_columns.push_back(std::int32_t(at / bcsr24::kTileCols));
        }
      }
      counts.condensed_tiles += distinct(tile_columns);
    }
  }
  return counts;
}

void report(const std::string& name, const char* order_name, const CsrMatrix& a, const std::vector<std::int32_t>& order,
            bool symmetric, const std::vector<int>& groups) {
  GroupCounts one;
  for (const int k : groups) {
    const GroupCounts c = count_b_blocks(a, order, symmetric, k);
    if (k == groups.front()) one = c;
    std::printf("%-28s %-5s %3d %12lld %7.3f %12lld %7.3f %12lld %7.3f\n", name.c_str(), order_name, k,
                static_cast<long long>(c.aligned_b_blocks), double(c.aligned_b_blocks) / double(one.aligned_b_blocks),
                static_cast<long long>(c.condensed_b_blocks),
                double(c.condensed_b_blocks) / double(one.condensed_b_blocks), static_cast<long long>(c.condensed_tiles),
                double(c.condensed_tiles) / double(one.condensed_tiles));
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"B-block loads of the tile kernels with k consecutive 16-row bands per thread block, against one band "
               "per block, for the aligned and the condensed tile layout, in file order and after RCM.",
               "band_sharing"};
  std::vector<std::string> files, meshes, xdys, graphs;
  std::int32_t size = 16384;
  std::vector<int> groups{1, 2, 4, 8};
  return bcsr24::apps::run_main(
      app, argc, argv,
      [&](CLI::App& a) {
        a.add_option("--matrix", files, "Matrix Market file (repeatable)");
        a.add_option("--mesh", meshes, "3-D mesh spec, as spmm_run --mesh (repeatable)");
        a.add_option("--xdys", xdys, "XdYs synthetic name, as spmm_run --xdys (repeatable)");
        a.add_option("--size", size, "rows = columns of the --xdys matrices")->check(CLI::PositiveNumber);
        a.add_option("--graph", graphs, "random graph spec, as spmm_run --graph (repeatable)");
        a.add_option("--groups", groups, "bands per block to compare; the first is the reference (default 1 2 4 8)")
            ->check(CLI::PositiveNumber);
      },
      [&] {
        // One source per matrix named on the command line, each read or generated as the other programs do.
        std::vector<bcsr24::apps::MatrixSource> sources;
        const auto add = [&](const std::vector<std::string>& items, std::string bcsr24::apps::MatrixSource::*field) {
          for (const std::string& item : items) {
            bcsr24::apps::MatrixSource source;
            source.*field = item;
            source.size = size;
            source.validate();
            sources.push_back(source);
          }
        };
        add(files, &bcsr24::apps::MatrixSource::path);
        add(meshes, &bcsr24::apps::MatrixSource::mesh);
        add(xdys, &bcsr24::apps::MatrixSource::xdys);
        add(graphs, &bcsr24::apps::MatrixSource::graph);
        if (sources.empty()) throw bcsr24::apps::UsageError("give at least one --matrix, --mesh, --xdys or --graph");
        std::printf("%-28s %-5s %3s %12s %7s %12s %7s %12s %7s\n", "matrix", "order", "k", "aligned B", "ratio",
                    "condensed B", "ratio", "cond. tiles", "ratio");
        for (const bcsr24::apps::MatrixSource& source : sources) {
          const CsrMatrix a = source.load();
          report(source.name(), "file", a, {}, false, groups);
          const bcsr24::RowOrdering rcm = bcsr24::reverse_cuthill_mckee(a);
          report(source.name(), "rcm", a, rcm.order, rcm.symmetric, groups);
        }
        return 0;
      });
}
