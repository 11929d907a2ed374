// Distributed operator, host side: row partitions (cover, contiguity, byte balance, empty ranks, int64 sums). The
// local/halo split and the send plans: test_distributed_split.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using bcsr24::detail::kMaxPartitionCost;
using bcsr24::detail::PartitionCost;
using bcsr24::detail::partition_rows_by_bytes;

namespace {

constexpr int kMaxRanks = 8;

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

std::int64_t row_bytes(const std::int32_t* row_ptr, std::int32_t i, const PartitionCost& cost) {
  return (std::int64_t{row_ptr[i + 1]} - row_ptr[i]) * cost.bytes_per_entry + cost.bytes_per_row;
}

/// Every rank's bytes are within one row's bytes (the largest row's) of the ideal total / ranks, up to the
/// rounding of the threshold to a whole byte.
void check_byte_balance(std::int32_t rows, const std::int32_t* row_ptr, const RowPartition& p,
                        const PartitionCost& cost) {
  std::int64_t total = 0, widest = 0;
  for (std::int32_t i = 0; i < rows; ++i) {
    total += row_bytes(row_ptr, i, cost);
    widest = std::max(widest, row_bytes(row_ptr, i, cost));
  }
  const double ideal = double(total) / p.ranks();
  int unbalanced = 0;
  double worst = 0.0;
  for (int r = 0; r < p.ranks(); ++r) {
    std::int64_t bytes = 0;
    for (std::int32_t i = p.begin(r); i < p.end(r); ++i) bytes += row_bytes(row_ptr, i, cost);
    const double off = std::abs(double(bytes) - ideal);
    worst = std::max(worst, off);
    if (off > double(widest) + 1.0) ++unbalanced;
  }
  CAPTURE(total, ideal, widest, worst);
  CHECK(unbalanced == 0);
}

}  // namespace

TEST_CASE("uniform_partition splits n into ranges differing by at most one, larger first", "[distributed]") {
  CHECK(uniform_partition(10, 3).offsets == std::vector<std::int32_t>{0, 4, 7, 10});
  CHECK(uniform_partition(0, 4).offsets == std::vector<std::int32_t>{0, 0, 0, 0, 0});
  CHECK(uniform_partition(3, 5).offsets == std::vector<std::int32_t>{0, 1, 2, 3, 3, 3});
  CHECK(uniform_partition(7, 1).offsets == std::vector<std::int32_t>{0, 7});
  for (int ranks = 1; ranks <= kMaxRanks; ++ranks)
    for (const std::int32_t n : {0, 1, 7, 8, 1000, 1001}) {
      CAPTURE(ranks, n);
      const RowPartition p = uniform_partition(n, ranks);
      REQUIRE(p.ranks() == ranks);
      CHECK_NOTHROW(validate_partition(p, n));
      for (int r = 0; r < ranks; ++r) CHECK((p.count(r) == n / ranks || p.count(r) == n / ranks + 1));
    }
}

TEST_CASE("RowPartition accessors and owner, with empty ranks", "[distributed]") {
  const RowPartition p{{0, 0, 3, 3, 3, 7, 8, 8}};  // ranks 0, 2, 3, 6 empty
  REQUIRE(p.ranks() == 7);
  CHECK(p.size() == 8);
  CHECK(p.begin(1) == 0);
  CHECK(p.end(1) == 3);
  CHECK(p.count(4) == 4);
  CHECK(p.count(6) == 0);
  const std::vector<int> expected{1, 1, 1, 4, 4, 4, 4, 5};
  for (std::int32_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(p.owner(i) == expected[at(i)]);
  }
  BCSR24_CHECK_INVALID(p.owner(8), "index 8 is outside");
  BCSR24_CHECK_INVALID(p.owner(-1), "index -1 is outside");
  BCSR24_CHECK_INVALID(p.begin(7), "rank 7 is outside");
  BCSR24_CHECK_INVALID(p.count(-1), "rank -1 is outside");
  CHECK(RowPartition{}.ranks() == 0);
  CHECK(RowPartition{{}}.ranks() == 0);
}

TEST_CASE("partition_rows_by_bytes: hand-checked boundaries", "[distributed]") {
  // Rows of 4, 0, 0, 4 entries at 1 byte each and nothing per row: 8 bytes, half reached after row 0.
  const std::vector<std::int32_t> row_ptr{0, 4, 4, 4, 8};
  const PartitionCost entries_only{1, 0};
  CHECK(partition_rows_by_bytes(4, row_ptr.data(), 2, entries_only).offsets == std::vector<std::int32_t>{0, 1, 4});
  // With 4 bytes per row as well: rows cost 8, 4, 4, 8 of 24; 12 is reached after row 1.
  CHECK(partition_rows_by_bytes(4, row_ptr.data(), 2, {1, 4}).offsets == std::vector<std::int32_t>{0, 2, 4});
  // Rows only: an even split of the rows.
  CHECK(partition_rows_by_bytes(4, row_ptr.data(), 4, {0, 1}).offsets == std::vector<std::int32_t>{0, 1, 2, 3, 4});
  // No bytes at all (no entries, zero per-row cost): uniform.
  const std::vector<std::int32_t> empty_rows{0, 0, 0, 0, 0, 0};
  CHECK(partition_rows_by_bytes(5, empty_rows.data(), 2, entries_only).offsets == std::vector<std::int32_t>{0, 3, 5});
  // No rows: every rank empty; a null row_ptr is fine then.
  CHECK(partition_rows_by_bytes(0, nullptr, 3).offsets == std::vector<std::int32_t>{0, 0, 0, 0});
  // One heavy row: it goes to one rank, whose neighbours are empty.
  const std::vector<std::int32_t> heavy{0, 1, 101, 102};
  const RowPartition h = partition_rows_by_bytes(3, heavy.data(), 4, entries_only);
  CHECK(h.offsets == std::vector<std::int32_t>{0, 2, 2, 2, 3});
  check_byte_balance(3, heavy.data(), h, entries_only);
}

TEST_CASE("partition_rows_by_bytes covers the rows contiguously and balances bytes for P = 1..8", "[distributed]") {
  const std::uint64_t seed = test::test_seed(4242);
  CAPTURE(seed);
  const RandomGraphSpec power{/*rows=*/997, /*cols=*/0, /*degree=*/6, /*power_law=*/true, seed};  // cols 0: square
  CsrMatrix mostly_empty;  // 500 rows, only 5 of them non-empty
  {
    std::vector<std::int32_t> row, col;
    for (const std::int32_t r : {3, 100, 101, 250, 499})
      for (std::int32_t c = 0; c < 20 + r % 7; ++c) {
        row.push_back(r);
        col.push_back(c);
      }
    mostly_empty = csr_from_triplets(500, 40, row, col, std::vector<double>(row.size(), 1.0));
  }
  const std::vector<std::pair<const char*, CsrMatrix>> matrices{
      {"scattered with empty rows", test::scattered_csr(1000, 1000, 8, seed)},
      {"power-law rows", generate_random_graph(power)},
      {"mostly empty rows", mostly_empty},
      {"3 rows (ranks > rows)", test::scattered_csr(3, 9, 2, seed + 1)},
      {"0 rows", CsrMatrix{}}};
  const std::vector<PartitionCost> costs{{}, {1, 0}, {0, 1}, {2, 40}};
  for (const auto& [name, a] : matrices)
    for (const PartitionCost& cost : costs)
      for (int ranks = 1; ranks <= kMaxRanks; ++ranks) {
        CAPTURE(name, cost.bytes_per_entry, cost.bytes_per_row, ranks);
        const RowPartition p = partition_rows_by_bytes(a, ranks, cost);
        REQUIRE(p.ranks() == ranks);
        REQUIRE_NOTHROW(validate_partition(p, a.rows));  // offsets[0] = 0, nondecreasing, ends at rows
        check_byte_balance(a.rows, a.row_ptr.data(), p, cost);
        if (a.rows < ranks) {
          int empty = 0;
          for (int r = 0; r < ranks; ++r) empty += p.count(r) == 0;
          CHECK(empty >= ranks - a.rows);
        }
      }
}

TEST_CASE("partition_rows_by_bytes sums in int64: 2^31 entries and a million ranks", "[distributed]") {
  // Row 0 holds 2^31 - 2 entries at 2^24 bytes each (2^55 bytes): int32 sums would wrap long before.
  const std::vector<std::int32_t> huge{0, 2147483646, 2147483646, 2147483647};
  const PartitionCost cost{kMaxPartitionCost, kMaxPartitionCost};
  const RowPartition p = partition_rows_by_bytes(3, huge.data(), 8, cost);
  CHECK(p.offsets == std::vector<std::int32_t>{0, 1, 1, 1, 1, 1, 1, 1, 3});
  check_byte_balance(3, huge.data(), p, cost);

  // r * total reaches 2^75 here: the thresholds must be formed without that product.
  const std::int32_t rows = 5000;
  std::vector<std::int32_t> row_ptr(at(rows) + 1);
  for (std::int32_t i = 0; i <= rows; ++i) row_ptr[at(i)] = i * 400000 + (i % 3 == 0 ? 0 : 7 * i);
  const int ranks = 1 << 20;
  const RowPartition many = partition_rows_by_bytes(rows, row_ptr.data(), ranks, cost);
  REQUIRE(many.ranks() == ranks);
  REQUIRE_NOTHROW(validate_partition(many, rows));
  std::int64_t total = 0;
  for (std::int32_t i = 0; i < rows; ++i) total += row_bytes(row_ptr.data(), i, cost);
  REQUIRE(total > (std::int64_t{1} << 54));
  check_byte_balance(rows, row_ptr.data(), many, cost);
  // Every row costs far more than total / ranks, so no rank can hold two rows: the prefix would have crossed
  // the next threshold inside the first of them.
  int shared = 0;
  for (int r = 0; r < ranks; ++r) shared += many.count(r) > 1;
  CHECK(shared == 0);
}
