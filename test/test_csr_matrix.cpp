// Tests of csr_from_triplets (sorting, duplicate summing, explicit zeros, index checks) and validate_csr.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"

using bcsr24::CsrMatrix;
using bcsr24::csr_from_triplets;
using bcsr24::validate_csr;

TEST_CASE("csr_from_triplets sorts unsorted triplets into rows with ascending columns", "[csr]") {
  // 3 x 4, given in scrambled order.
  const CsrMatrix a = csr_from_triplets(3, 4, {2, 0, 1, 0, 2}, {3, 2, 0, 0, 1}, {5.0, 2.0, 3.0, 1.0, 4.0});
  CHECK(a.rows == 3);
  CHECK(a.cols == 4);
  CHECK(a.row_ptr == std::vector<std::int32_t>{0, 2, 3, 5});
  CHECK(a.col_idx == std::vector<std::int32_t>{0, 2, 0, 1, 3});
  CHECK(a.values == std::vector<double>{1.0, 2.0, 3.0, 4.0, 5.0});
  CHECK(a.nnz() == 5);
  CHECK_NOTHROW(validate_csr(a));
}

TEST_CASE("csr_from_triplets sums duplicates and keeps explicit zeros", "[csr]") {
  const CsrMatrix a = csr_from_triplets(2, 2, {0, 0, 1, 0, 1}, {1, 1, 0, 1, 1}, {1.5, 2.0, 0.0, 0.25, -3.0});
  CHECK(a.row_ptr == std::vector<std::int32_t>{0, 1, 3});
  CHECK(a.col_idx == std::vector<std::int32_t>{1, 0, 1});
  CHECK(a.values == std::vector<double>{3.75, 0.0, -3.0});  // (1,0) = 0 is an explicit zero: kept

  // Duplicates that cancel leave an explicit zero too: the reader never drops stored entries.
  const CsrMatrix b = csr_from_triplets(1, 1, {0, 0}, {0, 0}, {2.0, -2.0});
  CHECK(b.nnz() == 1);
  CHECK(b.values[0] == 0.0);
}

TEST_CASE("csr_from_triplets sorts long rows (std::sort path) and sums their duplicates in input order", "[csr]") {
  // One row of 200 entries in descending column order, every column listed twice.
  std::vector<std::int32_t> row, col;
  std::vector<double> value;
  for (int rep = 0; rep < 2; ++rep)
    for (int c = 99; c >= 0; --c) {
      row.push_back(0);
      col.push_back(c);
      value.push_back(rep == 0 ? c : 1000.0 * c);
    }
  const CsrMatrix a = csr_from_triplets(1, 100, row, col, value);
  REQUIRE(a.nnz() == 100);
  for (int c = 0; c < 100; ++c) {
    CHECK(a.col_idx[static_cast<std::size_t>(c)] == c);
    CHECK(a.values[static_cast<std::size_t>(c)] == 1001.0 * c);
  }
  CHECK_NOTHROW(validate_csr(a));
}

TEST_CASE("csr_from_triplets handles empty inputs and empty rows", "[csr]") {
  const CsrMatrix empty = csr_from_triplets(0, 0, {}, {}, {});
  CHECK(empty.rows == 0);
  CHECK(empty.row_ptr == std::vector<std::int32_t>{0});
  CHECK(empty.nnz() == 0);
  CHECK_NOTHROW(validate_csr(empty));

  const CsrMatrix holes = csr_from_triplets(5, 3, {4, 1}, {2, 0}, {7.0, 8.0});
  CHECK(holes.row_ptr == std::vector<std::int32_t>{0, 0, 1, 1, 1, 2});
  CHECK_NOTHROW(validate_csr(holes));
}

TEST_CASE("csr_from_triplets rejects bad indices and mismatched arrays", "[csr]") {
  using bcsr24::InvalidArgument;
  CHECK_THROWS_AS(csr_from_triplets(2, 2, {2}, {0}, {1.0}), InvalidArgument);
  CHECK_THROWS_AS(csr_from_triplets(2, 2, {0}, {2}, {1.0}), InvalidArgument);
  CHECK_THROWS_AS(csr_from_triplets(2, 2, {-1}, {0}, {1.0}), InvalidArgument);
  CHECK_THROWS_AS(csr_from_triplets(2, 2, {0}, {-1}, {1.0}), InvalidArgument);
  CHECK_THROWS_AS(csr_from_triplets(2, 2, {0, 1}, {0}, {1.0, 2.0}), InvalidArgument);
  CHECK_THROWS_AS(csr_from_triplets(2, 2, {0}, {0}, {1.0, 2.0}), InvalidArgument);
  CHECK_THROWS_AS(csr_from_triplets(-1, 2, {}, {}, {}), InvalidArgument);
  CHECK_THROWS_WITH(csr_from_triplets(2, 3, {0, 5}, {0, 0}, {1.0, 1.0}),
                    Catch::Contains("triplet 1 (5, 0)") && Catch::Contains("2 x 3"));
}

TEST_CASE("validate_csr names the broken invariant", "[csr]") {
  using bcsr24::InvalidArgument;
  const CsrMatrix good = csr_from_triplets(2, 3, {0, 0, 1}, {0, 2, 1}, {1.0, 2.0, 3.0});
  REQUIRE_NOTHROW(validate_csr(good));

  CsrMatrix a = good;
  a.row_ptr.pop_back();
  CHECK_THROWS_WITH(validate_csr(a), Catch::Contains("row_ptr has 2 entries"));

  a = good;
  a.row_ptr[0] = 1;
  CHECK_THROWS_WITH(validate_csr(a), Catch::Contains("row_ptr[0]"));

  a = good;
  a.row_ptr = {0, 3, 2};
  CHECK_THROWS_AS(validate_csr(a), InvalidArgument);

  a = good;
  a.col_idx[1] = 0;  // row 0 becomes {0, 0}: not unique
  CHECK_THROWS_WITH(validate_csr(a), Catch::Contains("not sorted and unique"));

  a = good;
  a.col_idx[2] = 3;
  CHECK_THROWS_WITH(validate_csr(a), Catch::Contains("outside 2 x 3"));

  a = good;
  a.values.pop_back();
  CHECK_THROWS_WITH(validate_csr(a), Catch::Contains("values has 2"));

  a = good;
  a.col_idx.push_back(0);
  a.values.push_back(0.0);
  CHECK_THROWS_WITH(validate_csr(a), Catch::Contains("row_ptr[rows] is 3"));
}
