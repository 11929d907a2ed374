// XdYs generator: exact tile proportions, 2:4 and dense tile contents, reproducibility, name parsing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "format/convert.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "test_support.hpp"

using namespace bcsr24;

TEST_CASE("census of XdYs matrices matches the requested percentages", "[synthetic]") {
  const std::uint64_t seed = bcsr24::test::test_seed(17);
  INFO("seed " << seed);
  struct Case { std::int32_t rows, cols; double dense, sparse; };
  for (const Case& c : {Case{512, 1024, 10, 5}, Case{512, 512, 0, 10}, Case{256, 256, 100, 0}, Case{256, 512, 0, 100},
                        Case{1024, 512, 50, 50}, Case{160, 320, 2.5, 7.5}, Case{64, 64, 0, 0}}) {
    CAPTURE(c.rows, c.cols, c.dense, c.sparse);
    const CsrMatrix a = bcsr24::test::xdys_matrix(c.rows, c.cols, c.dense, c.sparse, seed);
    bcsr24::test::require_valid_generated(a);
    const Bcsr24Matrix b = convert_to_bcsr24(a);
    const TileCensus census = b.census();
    const std::int64_t tiles = std::int64_t(c.rows / 16) * (c.cols / 32);
    const std::int64_t want_dense = std::llround(c.dense / 100.0 * double(tiles));
    const std::int64_t want_sparse = std::llround(c.sparse / 100.0 * double(tiles));
    REQUIRE(census.dense_tiles == want_dense);
    REQUIRE(census.sparse24_tiles == want_sparse);
    REQUIRE(census.zero_tiles == tiles - want_dense - want_sparse);
    // Dense tiles are full; 2:4 tiles hold exactly 2 of every 4.
    REQUIRE(census.dense_nnz == want_dense * 512);
    REQUIRE(census.sparse24_nnz == want_sparse * 256);
    REQUIRE(census.nnz == a.nnz());
    REQUIRE(b.scaling.overflow_count == 0);
  }
}

TEST_CASE("XdYs edge tiles are cut at the border", "[synthetic]") {
  const std::uint64_t seed = bcsr24::test::test_seed(18);
  INFO("seed " << seed);
  for (const auto& [rows, cols] :
       std::vector<std::pair<int, int>>{{500, 700}, {17, 35}, {100, 67}, {17, 33}, {1, 1}, {100, 65}, {40, 34}}) {
    CAPTURE(rows, cols);
    const CsrMatrix a = bcsr24::test::xdys_matrix(rows, cols, 30, 40, seed);
    bcsr24::test::require_valid_generated(a);
    const TileCensus census = convert_to_bcsr24(a).census();
    const std::int64_t tiles = std::int64_t((rows + 15) / 16) * ((cols + 31) / 32);
    const std::int64_t dense = std::llround(0.3 * double(tiles));
    const std::int64_t requested = dense + std::min<std::int64_t>(std::llround(0.4 * double(tiles)), tiles - dense);
    // A cut dense tile keeps at least one full row piece, so it stays nonzero (possibly as 2:4). A cut 2:4 tile
    // stays nonzero when it keeps a whole group or 3 columns of one (2 kept of 4 cannot both be at position 3);
    // with only 1 or 2 columns left its kept positions may all lie beyond the border.
    const int last_width = cols % 32 == 0 ? 32 : cols % 32;
    if (last_width >= 3) {
      REQUIRE(census.stored_tiles() == requested);
    } else {
      REQUIRE(census.stored_tiles() <= requested);
      REQUIRE(census.stored_tiles() >= dense);
    }
  }
  // 500 x 700: the last tile row has 4 rows and the last tile column 28 columns (7 whole groups): kinds survive.
  const TileCensus c = convert_to_bcsr24(bcsr24::test::xdys_matrix(500, 700, 10, 20, seed)).census();
  const std::int64_t tiles = 32 * 22;
  CHECK(c.dense_tiles == std::llround(0.1 * tiles));
  CHECK(c.sparse24_tiles == std::llround(0.2 * tiles));
}

TEST_CASE("XdYs generation is reproducible from the seed", "[synthetic]") {
  const CsrMatrix a = bcsr24::test::xdys_matrix(200, 300, 10, 20, 42);
  const CsrMatrix b = bcsr24::test::xdys_matrix(200, 300, 10, 20, 42);
  const CsrMatrix c = bcsr24::test::xdys_matrix(200, 300, 10, 20, 43);
  CHECK(a.row_ptr == b.row_ptr);
  CHECK(a.col_idx == b.col_idx);
  CHECK(a.values == b.values);
  CHECK((a.col_idx != c.col_idx || a.values != c.values));
}

TEST_CASE("XdYs rejects bad specifications", "[synthetic]") {
  CHECK_THROWS_AS(bcsr24::test::xdys_matrix(-1, 10, 10, 10, 1), InvalidArgument);
  CHECK_THROWS_AS(bcsr24::test::xdys_matrix(10, -1, 10, 10, 1), InvalidArgument);
  CHECK_THROWS_AS(bcsr24::test::xdys_matrix(10, 10, 60, 50, 1), InvalidArgument);
  CHECK_THROWS_AS(bcsr24::test::xdys_matrix(10, 10, -1, 50, 1), InvalidArgument);
  CHECK_THROWS_AS(bcsr24::test::xdys_matrix(10, 10, 101, 0, 1), InvalidArgument);
  CHECK_THROWS_AS(bcsr24::test::xdys_matrix(10, 10, std::nan(""), 0, 1), InvalidArgument);
  CHECK(bcsr24::test::xdys_matrix(0, 0, 10, 10, 1).nnz() == 0);
}

TEST_CASE("parse_xdys_name", "[synthetic]") {
  double d = -1, s = -1;
  parse_xdys_name("10d5s", d, s);
  CHECK(d == 10.0);
  CHECK(s == 5.0);
  parse_xdys_name("0d10s", d, s);
  CHECK(d == 0.0);
  CHECK(s == 10.0);
  parse_xdys_name("2.5d0.5s", d, s);
  CHECK(d == 2.5);
  CHECK(s == 0.5);
  parse_xdys_name("100d0s", d, s);
  CHECK(d == 100.0);
  parse_xdys_name("50d50s", d, s);
  CHECK(s == 50.0);
  for (const char* bad : {"", "10d", "d5s", "10d5", "10x5s", "10d5s ", " 10d5s", "10d5sx", "60d50s", "1e2d0s", "-1d0s",
                          "inf d0s", ".d5s", "1..5d0s", "10D5S", "101d0s"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_xdys_name(bad, d, s), InvalidArgument);
  }
}

TEST_CASE("random graphs: row lengths, distinct sorted columns, reproducible", "[synthetic]") {
  RandomGraphSpec spec;
  spec.rows = 3000;
  spec.cols = 2500;
  spec.degree = 7;
  const CsrMatrix a = generate_random_graph(spec);
  REQUIRE_NOTHROW(validate_csr(a));  // sorted, distinct, in range
  CHECK(a.rows == 3000);
  CHECK(a.cols == 2500);
  for (std::int32_t r = 0; r < a.rows; ++r) REQUIRE(a.row_ptr[r + 1] - a.row_ptr[r] == 7);
  for (double v : a.values) REQUIRE((v != 0.0 && v >= -1.0 && v < 1.0));
  const CsrMatrix again = generate_random_graph(spec);
  CHECK(again.col_idx == a.col_idx);
  CHECK(again.values == a.values);

  spec.power_law = true;
  spec.cols = 0;
  const CsrMatrix skewed = generate_random_graph(spec);
  REQUIRE_NOTHROW(validate_csr(skewed));
  CHECK(skewed.cols == 3000);
  std::int32_t longest = 0;
  for (std::int32_t r = 0; r < skewed.rows; ++r) longest = std::max(longest, skewed.row_ptr[r + 1] - skewed.row_ptr[r]);
  CHECK(longest > 20 * spec.degree);  // Pareto tail: some rows far above the mean
  const double mean = double(skewed.nnz()) / skewed.rows;
  CHECK(mean > 0.5 * spec.degree);
  CHECK(mean < 2.0 * spec.degree);
}

TEST_CASE("random graph specifications", "[synthetic]") {
  const RandomGraphSpec s = parse_random_graph_spec("100000,degree=12,power,seed=5");
  CHECK(s.rows == 100000);
  CHECK(s.cols == 0);
  CHECK(s.degree == 12);
  CHECK(s.power_law);
  CHECK(s.seed == 5);
  CHECK(random_graph_name(s) == "graph100000_d12_power");
  CHECK(random_graph_name(parse_random_graph_spec("50,cols=70")) == "graph50x70_d8");
  for (const char* bad : {"", "0", "x", "10,degree=0", "10,deg=3", "10,cols=-1", "10,power=1"})
    CHECK_THROWS_AS(parse_random_graph_spec(bad), InvalidArgument);
  RandomGraphSpec too_dense;
  too_dense.rows = 10;
  too_dense.degree = 11;
  CHECK_THROWS_AS(generate_random_graph(too_dense), InvalidArgument);
}
