// Contiguous partitions of rows (and columns) over ranks: the checks, the uniform split and the byte-balanced
// prefix split.
#include "bcsr24/distributed_partition.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"

namespace bcsr24 {

namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

void check_rank(const RowPartition& p, int r, const char* function) {
  if (r < 0 || r >= p.ranks())
    throw InvalidArgument(std::string("RowPartition::") + function + ": rank " + std::to_string(r) +
                          " is outside 0 .. " + std::to_string(p.ranks() - 1));
}

void check_ranks(int ranks, const char* function) {
  if (ranks < 1)
    throw InvalidArgument(std::string(function) + ": ranks is " + std::to_string(ranks) + ", needs at least 1");
}

void check_cost(const detail::PartitionCost& cost) {
  const auto check = [](std::int64_t bytes, const char* name) {
    if (bytes < 0 || bytes > detail::kMaxPartitionCost)
      throw InvalidArgument(std::string("partition_rows_by_bytes: ") + name + " is " + std::to_string(bytes) +
                            ", outside 0 .. " + std::to_string(detail::kMaxPartitionCost));
  };
  check(cost.bytes_per_entry, "bytes_per_entry");
  check(cost.bytes_per_row, "bytes_per_row");
  if (cost.bytes_per_entry == 0 && cost.bytes_per_row == 0)
    throw InvalidArgument("partition_rows_by_bytes: bytes_per_entry and bytes_per_row are both 0: every row is free");
}

}  // namespace

std::int32_t RowPartition::begin(int r) const {
  check_rank(*this, r, "begin");
  return offsets[at(r)];
}

std::int32_t RowPartition::end(int r) const {
  check_rank(*this, r, "end");
  return offsets[at(r) + 1];
}

std::int32_t RowPartition::count(int r) const {
  check_rank(*this, r, "count");
  return offsets[at(r) + 1] - offsets[at(r)];
}

int RowPartition::owner(std::int32_t index) const {
  if (index < 0 || index >= size())
    throw InvalidArgument("RowPartition::owner: index " + std::to_string(index) + " is outside 0 .. " +
                          std::to_string(size()) + " - 1");
  // The last offset <= index starts the owner's range; empty ranks before it share that offset and are skipped.
  const auto next = std::upper_bound(offsets.begin(), offsets.end(), index);
  return static_cast<int>(next - offsets.begin()) - 1;
}

void validate_partition(const RowPartition& partition, std::int32_t size, const char* what) {
  const std::vector<std::int32_t>& o = partition.offsets;
  if (o.size() < 2)
    throw InvalidArgument(std::string(what) + ": " + std::to_string(o.size()) +
                          " offsets, needs ranks + 1 with at least 1 rank");
  if (o.size() - 1 > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw InvalidArgument(std::string(what) + ": " + std::to_string(o.size() - 1) + " ranks do not fit an int");
  if (o[0] != 0) throw InvalidArgument(std::string(what) + ": offsets[0] is " + std::to_string(o[0]) + ", expected 0");
  for (std::size_t r = 0; r + 1 < o.size(); ++r)
    if (o[r + 1] < o[r])
      throw InvalidArgument(std::string(what) + ": offsets decrease at rank " + std::to_string(r) + " (" +
                            std::to_string(o[r]) + " then " + std::to_string(o[r + 1]) + ")");
  if (o.back() != size)
    throw InvalidArgument(std::string(what) + " covers " + std::to_string(o.back()) + " indices, expected " +
                          std::to_string(size));
}

RowPartition uniform_partition(std::int32_t n, int ranks) {
  check_ranks(ranks, "uniform_partition");
  if (n < 0) throw InvalidArgument("uniform_partition: n is " + std::to_string(n) + ", negative");
  const std::int64_t base = n / ranks;
  const std::int64_t extra = n % ranks;
  RowPartition p;
  p.offsets.resize(at(ranks) + 1);
  for (std::int64_t r = 0; r <= ranks; ++r) p.offsets[at(r)] = static_cast<std::int32_t>(r * base + std::min(r, extra));
  return p;
}

namespace detail {

RowPartition partition_rows_by_bytes(std::int32_t rows, const std::int32_t* row_ptr, int ranks,
                                     const PartitionCost& cost) {
  check_ranks(ranks, "partition_rows_by_bytes");
  if (rows < 0) throw InvalidArgument("partition_rows_by_bytes: rows is " + std::to_string(rows) + ", negative");
  check_cost(cost);
  if (rows == 0) return uniform_partition(0, ranks);
  if (row_ptr == nullptr)
    throw InvalidArgument("partition_rows_by_bytes: row_ptr is null for " + std::to_string(rows) + " rows");
  for (std::int32_t i = 0; i < rows; ++i)
    if (row_ptr[i + 1] < row_ptr[i])
      throw InvalidArgument("partition_rows_by_bytes: row_ptr decreases at row " + std::to_string(i) + " (" +
                            std::to_string(row_ptr[i]) + " then " + std::to_string(row_ptr[i + 1]) + ")");

  // At most 2^32 entries and 2^31 rows, each costing at most 2^24 bytes: the sums stay below 2^57.
  const auto row_bytes = [&](std::int32_t i) {
    return (std::int64_t{row_ptr[i + 1]} - row_ptr[i]) * cost.bytes_per_entry + cost.bytes_per_row;
  };
  const std::int64_t total =
      (std::int64_t{row_ptr[rows]} - row_ptr[0]) * cost.bytes_per_entry + std::int64_t{rows} * cost.bytes_per_row;
  if (total == 0) return uniform_partition(rows, ranks);

  // Boundary r is the first row i with prefix(i) * ranks >= r * total. r * total can pass 2^63, so the
  // threshold ceil(r * total / ranks) is formed from total = q * ranks + m as r * q + ceil(r * m / ranks),
  // where r * m < ranks^2 < 2^62.
  const std::int64_t q = total / ranks;
  const std::int64_t m = total % ranks;
  RowPartition p;
  p.offsets.resize(at(ranks) + 1);
  p.offsets[0] = 0;
  std::int32_t i = 0;
  std::int64_t prefix = 0;  // bytes of rows [0, i)
  for (std::int64_t r = 1; r < ranks; ++r) {
    const std::int64_t threshold = r * q + (r * m + ranks - 1) / ranks;
    while (i < rows && prefix < threshold) prefix += row_bytes(i++);
    p.offsets[at(r)] = i;
  }
  p.offsets[at(ranks)] = rows;
  return p;
}

RowPartition partition_rows_by_bytes(const CsrMatrix& a, int ranks, const PartitionCost& cost) {
  if (a.rows < 0 || a.row_ptr.size() != static_cast<std::size_t>(a.rows) + 1)
    throw InvalidArgument("partition_rows_by_bytes: row_ptr has " + std::to_string(a.row_ptr.size()) + " entries for " +
                          std::to_string(a.rows) + " rows");
  return partition_rows_by_bytes(a.rows, a.row_ptr.data(), ranks, cost);
}

}  // namespace detail

}  // namespace bcsr24
