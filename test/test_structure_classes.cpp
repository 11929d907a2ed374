// Structure-class generators (lib/testkit/structure_classes.hpp): each class has the shape it names, valid CSR,
// reproducible from its seed; specs parse and name round trip; bad specs are refused with the reason.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "bcsr24_testkit/structure_classes.hpp"
#include "test_support.hpp"

using namespace bcsr24;

namespace {

std::int32_t row_length(const CsrMatrix& a, std::int32_t r) {
  return a.row_ptr[std::size_t(r) + 1] - a.row_ptr[std::size_t(r)];
}

bool has(const CsrMatrix& a, std::int32_t r, std::int32_t c) {
  const auto begin = a.col_idx.begin() + a.row_ptr[std::size_t(r)];
  const auto end = a.col_idx.begin() + a.row_ptr[std::size_t(r) + 1];
  return std::binary_search(begin, end, c);
}

CsrMatrix make(const std::string& text) { return generate_structure(parse_structure_spec(text)); }

}  // namespace

TEST_CASE("structure classes: each has the shape it names", "[testkit][structure]") {
  SECTION("arrowhead: row 0 and column 0 full, the diagonal") {
    const CsrMatrix a = make("arrowhead:1001");
    bcsr24::test::require_valid_generated(a);
    CHECK(row_length(a, 0) == 1001);
    for (std::int32_t r = 1; r < a.rows; ++r) {
      REQUIRE(row_length(a, r) == 2);
      REQUIRE(has(a, r, 0));
      REQUIRE(has(a, r, r));
    }
    CHECK(a.nnz() == 1001 + 2 * 1000);
  }
  SECTION("dense rows and dense columns, spread over the matrix") {
    const CsrMatrix rows = make("dense_rows:4000,count=3,degree=5");
    bcsr24::test::require_valid_generated(rows);
    std::vector<std::int32_t> full;
    for (std::int32_t r = 0; r < rows.rows; ++r)
      if (row_length(rows, r) == rows.cols) full.push_back(r);
      else REQUIRE(row_length(rows, r) == 5);
    CHECK(full == std::vector<std::int32_t>{666, 2000, 3333});
    const CsrMatrix cols = make("dense_cols:4000,count=2,degree=5");
    bcsr24::test::require_valid_generated(cols);
    for (std::int32_t r = 0; r < cols.rows; ++r) {
      REQUIRE(has(cols, r, 1000));
      REQUIRE(has(cols, r, 3000));
      REQUIRE(row_length(cols, r) >= 5);
      REQUIRE(row_length(cols, r) <= 7);
    }
  }
  SECTION("block-diagonal: every entry inside its row's block, the last block cut") {
    const CsrMatrix a = make("block_diagonal:1000,block=64,degree=20");
    bcsr24::test::require_valid_generated(a);
    for (std::int32_t r = 0; r < a.rows; ++r) {
      const std::int32_t lo = r / 64 * 64, hi = std::min(1000, lo + 64);
      REQUIRE(row_length(a, r) == std::min(20, hi - lo));
      for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p) {
        REQUIRE(a.col_idx[std::size_t(p)] >= lo);
        REQUIRE(a.col_idx[std::size_t(p)] < hi);
      }
    }
  }
  SECTION("short, long and least-squares rows; power-law row lengths") {
    const CsrMatrix short_rows = make("short_rows:5000");
    bcsr24::test::require_valid_generated(short_rows);
    std::int32_t ones = 0;
    for (std::int32_t r = 0; r < short_rows.rows; ++r) {
      REQUIRE(row_length(short_rows, r) >= 1);
      REQUIRE(row_length(short_rows, r) <= 2);
      ones += row_length(short_rows, r) == 1;
    }
    CHECK(ones > 2000);
    CHECK(ones < 3000);
    const CsrMatrix long_rows = make("long_rows:300,cols=5000,degree=700");
    bcsr24::test::require_valid_generated(long_rows);
    CHECK(long_rows.nnz() == 300 * 700);
    const CsrMatrix ls = make("least_squares:7200");
    bcsr24::test::require_valid_generated(ls);
    CHECK(ls.cols == 7200 / 27);
    CHECK(ls.nnz() == 7200 * 4);
    const CsrMatrix power = make("power_law:20000,degree=8");
    bcsr24::test::require_valid_generated(power);
    std::int32_t longest = 0;
    for (std::int32_t r = 0; r < power.rows; ++r) longest = std::max(longest, row_length(power, r));
    CHECK(longest > 100);  // a Pareto tail: a few rows far longer than the mean
  }
  SECTION("circuit: the diagonal and two more entries within the band") {
    const CsrMatrix a = make("circuit:3000,width=8");
    bcsr24::test::require_valid_generated(a);
    for (std::int32_t r = 0; r < a.rows; ++r) {
      REQUIRE(row_length(a, r) == 3);
      REQUIRE(has(a, r, r));
      for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p)
        REQUIRE(std::abs(a.col_idx[std::size_t(p)] - r) <= 8);
    }
  }
}

TEST_CASE("structure classes: reproducible, named, parsed; bad specs refused", "[testkit][structure]") {
  for (const StructureClass kind : all_structure_classes()) {
    INFO(structure_class_name(kind));
    CHECK(structure_class_from_name(structure_class_name(kind)) == kind);
    StructureSpec spec;
    spec.kind = kind;
    spec.rows = 640;
    spec.seed = 7;
    const CsrMatrix x = generate_structure(spec), y = generate_structure(spec);
    bcsr24::test::require_valid_generated(x);
    CHECK(x.col_idx == y.col_idx);
    CHECK(x.values == y.values);
    spec.seed = 8;
    CHECK(generate_structure(spec).values != x.values);
  }
  CHECK(structure_name(parse_structure_spec("arrowhead:46500")) == "arrowhead46500");
  CHECK(structure_name(parse_structure_spec("least_squares:72000,cols=2700")) == "least_squares72000x2700");
  CHECK(structure_name(parse_structure_spec("circuit:1600000,width=4,seed=3")) == "circuit1600000_w4");
  CHECK(structure_name(parse_structure_spec("dense_rows:1000,count=2,degree=9")) == "dense_rows1000_d9_k2");
  CHECK_THROWS_AS(parse_structure_spec("arrowheads:10"), InvalidArgument);
  CHECK_THROWS_AS(parse_structure_spec("arrowhead"), InvalidArgument);
  CHECK_THROWS_AS(parse_structure_spec("arrowhead:0"), InvalidArgument);
  CHECK_THROWS_AS(parse_structure_spec("circuit:100,size=3"), InvalidArgument);
  CHECK_THROWS_AS(parse_structure_spec("circuit:100,width=x"), InvalidArgument);
  CHECK_THROWS_AS(make("arrowhead:100,cols=50"), InvalidArgument);
  CHECK_THROWS_AS(make("long_rows:10,cols=100,degree=101"), InvalidArgument);
  CHECK_THROWS_AS(make("circuit:100,width=1"), InvalidArgument);
  CHECK_THROWS_AS(make("dense_rows:10,count=11"), InvalidArgument);
}
