// Reordered and condensed layouts (condense.cpp, pack24.cpp): the stored matrix is exactly the fp16 rounding of
// A whatever the layout, the CPU reference multiplies every layout like Eigen, condensing never adds a tile,
// and the 2:4-aware packing makes FEM tiles 2:4.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include <Eigen/Dense>

#include "format/convert.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "format/reference.hpp"
#include "format/pack24.hpp"
#include "format/tile_codec.hpp"
#include "test_eigen.hpp"
#include "test_support.hpp"

using namespace bcsr24;

namespace {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Every (layout, reordering) a user can ask for.
std::vector<std::pair<TileLayout, Reordering>> all_policies() {
  std::vector<std::pair<TileLayout, Reordering>> out;
  for (TileLayout l : {TileLayout::aligned, TileLayout::condensed, TileLayout::automatic})
    for (Reordering r : {Reordering::none, Reordering::rcm, Reordering::automatic}) out.emplace_back(l, r);
  return out;
}

Bcsr24Matrix convert_with(const CsrMatrix& a, TileLayout layout, Reordering reorder, LayoutReport* report = nullptr) {
  ConvertOptions options;
  options.layout = layout;
  options.reorder = reorder;
  return convert_to_bcsr24(a, options, report);
}

/// The decoded matrix holds exactly round_fp16(a * 2^-e) * 2^e at every nonzero of A and 0 elsewhere, e being
/// the exponent of a's row: ilogb(largest |a| of the row) - 14 by the row of A (whatever the stored order)
/// under the default per-row scaling.
void require_exact_decode(const CsrMatrix& a, const Bcsr24Matrix& m) {
  REQUIRE(m.scaling.per_row);
  REQUIRE(m.row_exponent.size() == std::size_t(a.rows));
  const std::vector<double> decoded = decode_to_dense(m);
  std::vector<double> want(static_cast<std::size_t>(a.rows) * static_cast<std::size_t>(a.cols), 0.0);
  for (std::int32_t r = 0; r < a.rows; ++r) {
    double row_max = 0.0;
    for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p)
      row_max = std::max(row_max, std::fabs(a.values[std::size_t(p)]));
    const int e = row_max > 0.0 ? std::ilogb(row_max) - 14 : 0;
    CAPTURE(r);
    REQUIRE(m.exponent_of_row(r) == e);
    for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p) {
      const double v = a.values[std::size_t(p)];
      want[std::size_t(r) * std::size_t(a.cols) + std::size_t(a.col_idx[std::size_t(p)])] =
          std::ldexp(double(fp16_to_float(double_to_fp16(std::ldexp(v, -e)))), e);
    }
  }
  std::int64_t mismatches = 0;
  for (std::size_t i = 0; i < want.size(); ++i) mismatches += decoded[i] != want[i];
  REQUIRE(mismatches == 0);
}

/// reference_spmm on the layout against Eigen's float64 product of the original A, within the fp16 bound.
void require_reference_matches(const CsrMatrix& a, const Bcsr24Matrix& m, std::int32_t n, double alpha, double beta,
                               std::uint64_t seed) {
  const std::vector<std::uint16_t> b = test::random_fp16(a.cols, n, seed);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> c0(static_cast<std::size_t>(a.rows) * static_cast<std::size_t>(n));
  for (float& x : c0) x = dist(rng);
  std::vector<float> c = c0;
  reference_spmm(m, n, b.data(), n, c.data(), n, alpha, beta);
  RowMajorMatrix bd(a.cols, n);
  for (std::int64_t k = 0; k < a.cols; ++k)
    for (std::int32_t j = 0; j < n; ++j) bd(k, j) = double(fp16_to_float(b[std::size_t(k * n + j)]));
  const RowMajorMatrix product = test::to_eigen(a) * bd;
  const std::vector<double> bound = test::spmm_error_bound(a, n, b, alpha, beta, c0, test::storage_rounding(m));
  std::int64_t violations = 0;
  for (std::int64_t i = 0; i < a.rows; ++i)
    for (std::int32_t j = 0; j < n; ++j) {
      const double want = alpha * product(i, j) + beta * double(c0[std::size_t(i * n + j)]);
      const double got = c[std::size_t(i * n + j)];
      violations += !(std::fabs(got - want) <= bound[std::size_t(i * n + j)]);
    }
  REQUIRE(violations == 0);
}

/// Distinct columns of each 16-row band of the stored order.
std::vector<std::int64_t> band_distinct_columns(const CsrMatrix& a, const Bcsr24Matrix& m) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(m.tile_rows), 0);
  for (std::int32_t band = 0; band < m.tile_rows; ++band) {
    std::set<std::int32_t> cols;
    for (int i = 0; i < kTileRows; ++i) {
      const std::int32_t r = m.original_row(std::int64_t{band} * kTileRows + i);
      if (r < 0) continue;
      for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p)
        if (a.values[std::size_t(p)] != 0.0) cols.insert(a.col_idx[std::size_t(p)]);
    }
    out[std::size_t(band)] = static_cast<std::int64_t>(cols.size());
  }
  return out;
}

std::int64_t tiles_in_band(const TileList& list, std::int32_t band) {
  return list.row_ptr[std::size_t(band) + 1] - list.row_ptr[std::size_t(band)];
}

}  // namespace

TEST_CASE("every layout and reordering stores A exactly and multiplies like Eigen", "[layout]") {
  const std::uint64_t seed = test::test_seed(8);
  INFO("seed " << seed);
  struct Shape { std::int32_t rows, cols; int per_row; };
  const Shape shapes[] = {{37, 45, 5}, {100, 77, 9}, {250, 333, 6}, {77, 300, 12}, {300, 41, 4}, {1, 1, 1},
                          {513, 513, 7}, {16, 32, 3}};
  for (const Shape& sh : shapes) {
    const CsrMatrix a = test::scattered_csr(sh.rows, sh.cols, sh.per_row, seed + std::uint64_t(sh.rows));
    for (const auto& [layout, reorder] : all_policies()) {
      CAPTURE(sh.rows, sh.cols, layout_name(layout), reordering_name(reorder));
      LayoutReport report;
      const Bcsr24Matrix m = convert_with(a, layout, reorder, &report);
      REQUIRE(m.layout != TileLayout::automatic);
      REQUIRE(m.reordering != Reordering::automatic);
      REQUIRE(report.layout == m.layout);
      if (layout != TileLayout::automatic) REQUIRE(m.layout == layout);
      if (reorder == Reordering::none) REQUIRE(m.row_order.empty());
      REQUIRE(m.sparse24_nnz + m.dense_nnz == m.nnz);
      require_exact_decode(a, m);
      for (std::int32_t n : {1, 7, 33}) require_reference_matches(a, m, n, n == 7 ? -0.75 : 1.0, n == 7 ? 0.5 : 0.0, seed + n);
    }
  }
}

TEST_CASE("row order is a permutation with -1 on padding rows, and B rows name real columns", "[layout]") {
  const CsrMatrix a = test::scattered_csr(203, 190, 6, 11);
  const Bcsr24Matrix m = convert_with(a, TileLayout::condensed, Reordering::rcm);
  REQUIRE(m.reordering == Reordering::rcm);
  REQUIRE(m.row_order.size() == std::size_t(m.tile_rows) * kTileRows);
  std::vector<int> seen(std::size_t(a.rows), 0);
  for (std::size_t i = 0; i < m.row_order.size(); ++i) {
    const std::int32_t r = m.row_order[i];
    if (i >= std::size_t(a.rows)) {
      REQUIRE(r == -1);
    } else {
      REQUIRE(r >= 0);
      REQUIRE(r < a.rows);
      ++seen[std::size_t(r)];
    }
  }
  REQUIRE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
  for (const TileList* list : {&m.sparse24, &m.dense}) {
    REQUIRE(list->b_rows.size() == std::size_t(list->tiles()) * kTileCols);
    for (std::int64_t t = 0; t < list->tiles(); ++t) {
      std::set<std::int32_t> distinct;
      for (int j = 0; j < kTileCols; ++j) {
        const std::int32_t k = list->b_rows[std::size_t(t * kTileCols + j)];
        REQUIRE(k >= -1);
        REQUIRE(k < a.cols);
        if (k >= 0) REQUIRE(distinct.insert(k).second);  // a column appears once per tile
      }
    }
  }
}

TEST_CASE("condensing stores ceil(distinct columns / 32) tiles per band, never more", "[layout]") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const CsrMatrix a = test::scattered_csr(400, 2000, 40, seed);
    for (Reordering reorder : {Reordering::none, Reordering::rcm}) {
      const Bcsr24Matrix m = convert_with(a, TileLayout::condensed, reorder);
      const std::vector<std::int64_t> distinct = band_distinct_columns(a, m);
      for (std::int32_t band = 0; band < m.tile_rows; ++band) {
        CAPTURE(seed, band, distinct[std::size_t(band)]);
        REQUIRE(tiles_in_band(m.sparse24, band) + tiles_in_band(m.dense, band) == (distinct[std::size_t(band)] + 31) / 32);
      }
    }
  }
}

TEST_CASE("the census counts 128 index bytes per gathered tile and none for aligned file-order tiles", "[layout]") {
  const CsrMatrix a = test::scattered_csr(300, 20000, 6, 77);
  const Bcsr24Matrix aligned = convert_with(a, TileLayout::aligned, Reordering::none);
  const Bcsr24Matrix condensed = convert_with(a, TileLayout::condensed, Reordering::rcm);
  REQUIRE(aligned.b_row_index() == BRowIndex::implicit);
  REQUIRE(condensed.b_row_index() == BRowIndex::full);
  CHECK(aligned.census().index_bytes == 0);
  CHECK(condensed.census().index_bytes ==
        condensed.census().stored_tiles() * kFullIndexBytesPerTile + condensed.row_order_bytes());
  CHECK(condensed.census().total_bytes() == condensed.sparse24.tile_bytes() + condensed.dense.tile_bytes() +
                                                condensed.census().index_bytes);
}

TEST_CASE("a band whose column set exceeds 2^16 is condensed and multiplied correctly", "[layout]") {
  const CsrMatrix a = test::wide_band_csr();
  const Bcsr24Matrix m = convert_with(a, TileLayout::condensed, Reordering::none);
  REQUIRE(band_distinct_columns(a, m)[0] > 65536);
  REQUIRE(tiles_in_band(m.sparse24, 0) + tiles_in_band(m.dense, 0) == (band_distinct_columns(a, m)[0] + 31) / 32);
  require_exact_decode(a, m);
  require_reference_matches(a, m, 9, 1.0, 0.0, 5);
}

TEST_CASE("the packer never adds a tile and fills 2:4 groups when the masks allow it", "[layout][pack24]") {
  detail::BandPacker packer;
  std::vector<std::int32_t> slots;
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    const std::int32_t columns = 1 + std::int32_t(rng() % 200);
    const int rows = 1 + int(rng() % 16);
    const std::uint16_t rows_mask = std::uint16_t((1u << rows) - 1u);
    std::vector<std::uint16_t> masks(static_cast<std::size_t>(columns));
    const int density = int(rng() % 4);
    for (auto& m : masks) {
      std::uint16_t x = std::uint16_t(rng());
      for (int d = 0; d < density; ++d) x &= std::uint16_t(rng());
      m = std::uint16_t(x & rows_mask);
      if (m == 0) m = std::uint16_t(1u << (rng() % unsigned(rows)));
    }
    packer.pack(masks.data(), columns, rows_mask, slots);
    REQUIRE(slots.size() == std::size_t((columns + 31) / 32) * 32);
    std::vector<int> placed(std::size_t(columns), 0);
    for (std::int32_t s : slots)
      if (s >= 0) ++placed[std::size_t(s)];
    REQUIRE(std::all_of(placed.begin(), placed.end(), [](int p) { return p == 1; }));
  }
  // Columns with one nonzero each, 4 rows: 128 columns fit 4 tiles, all 2:4 (2 per row and group at most).
  std::vector<std::uint16_t> singles(128);
  for (std::size_t c = 0; c < singles.size(); ++c) singles[c] = std::uint16_t(1u << (c % 4));
  packer.pack(singles.data(), 128, 0xF, slots);
  REQUIRE(slots.size() == 128);
  for (std::size_t g = 0; g < 32; ++g) {
    int count[4] = {0, 0, 0, 0};
    for (int q = 0; q < 4; ++q)
      if (slots[g * 4 + q] >= 0)
        for (int r = 0; r < 4; ++r) count[r] += (singles[std::size_t(slots[g * 4 + q])] >> r) & 1;
    for (int r = 0; r < 4; ++r) REQUIRE(count[r] <= 2);
  }
}

TEST_CASE("the packer is never worse than the matrix's own arrangement or first fit alone", "[layout][pack24]") {
  // Bands of tiles that are 2:4 by construction in their own order (every row keeps 2 random positions of each
  // group of 4, as in the synthetic 0d10s matrices), some columns thinned out and some made dense, so neither
  // arrangement always wins.
  std::mt19937_64 rng(12);
  const unsigned pairs[6] = {0x3, 0x5, 0x6, 0x9, 0xA, 0xC};
  detail::BandPacker packer;
  std::vector<std::int32_t> slots, natural_slots;
  for (int trial = 0; trial < 200; ++trial) {
    const int columns = 32 * (1 + int(rng() % 60));
    std::vector<std::uint16_t> masks(static_cast<std::size_t>(columns), 0);
    for (int r = 0; r < 16; ++r)
      for (int g = 0; g < columns / 4; ++g) {
        const unsigned keep = pairs[rng() % 6];
        for (int q = 0; q < 4; ++q)
          if (keep & (1u << q)) masks[std::size_t(g * 4 + q)] = std::uint16_t(masks[std::size_t(g * 4 + q)] | (1u << r));
      }
    for (auto& m : masks) {
      if (rng() % 16 == 0) m = 0xFFFF;
      if (rng() % 4 == 0) m = std::uint16_t(m & rng());
      if (m == 0) m = 1;
    }
    std::vector<std::int32_t> natural(static_cast<std::size_t>(columns));
    for (int c = 0; c < columns; ++c) natural[std::size_t(c)] = c;
    natural_slots.assign(natural.begin(), natural.end());
    packer.pack(masks.data(), columns, 0xFFFF, slots);
    const std::int32_t first_fit = detail::BandPacker::compliant_tiles(masks.data(), slots);
    const std::int32_t own = detail::BandPacker::compliant_tiles(masks.data(), natural_slots);
    packer.pack(masks.data(), columns, 0xFFFF, slots, natural.data());
    CAPTURE(trial, columns, first_fit, own);
    REQUIRE(slots.size() == std::size_t(columns));
    REQUIRE(detail::BandPacker::compliant_tiles(masks.data(), slots) >= std::max(first_fit, own));
  }
}

TEST_CASE("2:4-aware packing: a lexicographic 3-D mesh is almost all 2:4 and random order is restored", "[layout][mesh]") {
  MeshSpec spec;
  spec.nx = spec.ny = spec.nz = 12;
  spec.dofs_per_node = 3;
  spec.stencil = 27;
  const CsrMatrix lex = generate_mesh_matrix(spec);
  spec.order = NodeOrder::random;
  const CsrMatrix random = generate_mesh_matrix(spec);

  const Bcsr24Matrix aligned = convert_with(lex, TileLayout::aligned, Reordering::none);
  const Bcsr24Matrix condensed = convert_with(lex, TileLayout::condensed, Reordering::none);
  const TileCensus ca = aligned.census(), cc = condensed.census();
  INFO("aligned " << ca.stored_tiles() << " tiles, " << ca.sparse24_share() << " 2:4; condensed " << cc.stored_tiles()
                  << " tiles, " << cc.sparse24_share() << " 2:4");
  REQUIRE(cc.stored_tiles() < ca.stored_tiles());
  REQUIRE(cc.sparse24_share() >= 0.8);

  LayoutReport report;
  const Bcsr24Matrix restored = convert_with(random, TileLayout::automatic, Reordering::automatic, &report);
  const Bcsr24Matrix random_aligned = convert_with(random, TileLayout::aligned, Reordering::none);
  INFO("random order: aligned " << random_aligned.census().stored_tiles() << " tiles; auto (" << report.reason << ") "
                                << restored.census().stored_tiles() << " tiles");
  REQUIRE(restored.reordering == Reordering::rcm);
  REQUIRE(restored.layout == TileLayout::condensed);
  REQUIRE(restored.census().stored_tiles() * 4 < random_aligned.census().stored_tiles());
  REQUIRE(double(restored.census().stored_tiles()) <= 1.15 * double(cc.stored_tiles()));
  require_reference_matches(random, restored, 16, 1.0, 0.0, 9);
}

TEST_CASE("automatic keeps the aligned layout where it already stores the fewest bytes", "[layout]") {
  // Fully dense 16x32 blocks on the block grid: condensing cannot remove a tile and would add B-row indices.
  std::vector<std::int32_t> ri, ci;
  std::vector<double> vi;
  for (std::int32_t r = 0; r < 64; ++r)
    for (std::int32_t c = 0; c < 128; ++c)
      if ((r / 16 + c / 32) % 2 == 0) {
        ri.push_back(r);
        ci.push_back(c);
        vi.push_back(1.0 + r + c);
      }
  const CsrMatrix a = csr_from_triplets(64, 128, ri, ci, vi);
  LayoutReport report;
  const Bcsr24Matrix m = convert_with(a, TileLayout::automatic, Reordering::automatic, &report);
  INFO(report.reason);
  REQUIRE(m.layout == TileLayout::aligned);
  REQUIRE(m.row_order.empty());
  REQUIRE(m.sparse24.b_rows.empty());
  REQUIRE(m.dense.b_rows.empty());
  REQUIRE(report.baseline_stored_tiles == m.census().stored_tiles());
}
