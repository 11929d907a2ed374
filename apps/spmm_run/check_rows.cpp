// Which rows of C spmm_run's check compares (check_rows.hpp).
#include "check_rows.hpp"

#include <algorithm>
#include <queue>
#include <unordered_set>
#include <utility>

#include "bcsr24_testkit/splitmix64.hpp"

namespace bcsr24::spmm_run {

namespace {

/// Bytes a checked row costs whatever its length: its reference (8 per column) and the fetched C (4 per column).
constexpr std::int64_t kBytesPerCheckedValue = 8 + 4;

/// The `count` longest rows (ties: the lower index first) with at most kMaxCheckedRowNnz nonzeros; `too_long`
/// counts the rows passed over for being longer.
std::vector<std::int32_t> longest_rows(std::int32_t rows, const std::int32_t* row_ptr, int count,
                                       std::int32_t& too_long) {
  // A min-heap of (length, -row) keeps the best `count` in one pass over the row pointers.
  using Entry = std::pair<std::int64_t, std::int64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> best;
  too_long = 0;
  for (std::int32_t row = 0; row < rows; ++row) {
    const std::int64_t length = std::int64_t{row_ptr[row + 1]} - row_ptr[row];
    if (length > kMaxCheckedRowNnz) {
      ++too_long;
      continue;
    }
    const Entry entry{length, -std::int64_t{row}};
    if (static_cast<int>(best.size()) < count) best.push(entry);
    else if (entry > best.top()) {
      best.pop();
      best.push(entry);
    }
  }
  std::vector<std::int32_t> out;
  for (; !best.empty(); best.pop()) out.push_back(static_cast<std::int32_t>(-best.top().second));
  return out;
}

std::string plural(std::int64_t count, const std::string& what) {
  return std::to_string(count) + " " + what + (count == 1 ? "" : "s");
}

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> check_chunks(const std::vector<std::int32_t>& rows,
                                                              const std::int32_t* row_ptr) {
  constexpr std::size_t kChunkRowsUnknownLength = 512;
  std::vector<std::pair<std::size_t, std::size_t>> chunks;
  std::size_t first = 0;
  std::int64_t entries = 0;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const std::int64_t length = row_ptr ? std::int64_t{row_ptr[rows[k] + 1]} - row_ptr[rows[k]] : 0;
    const bool full = row_ptr ? entries > 0 && entries + length > kChunkEntries : k - first >= kChunkRowsUnknownLength;
    if (full) {
      chunks.emplace_back(first, k);
      first = k;
      entries = 0;
    }
    entries += length;
  }
  if (first < rows.size()) chunks.emplace_back(first, rows.size());
  return chunks;
}

std::int64_t check_host_bytes(std::size_t checked_rows, std::int64_t largest_chunk_entries, std::int32_t n,
                              std::int32_t matrix_rows, unsigned threads) {
  constexpr std::int64_t kPerRow = 4 + 40 + 4, kPerEntry = 12 + 16, kFp16Table = std::int64_t{4} << 16;
  return static_cast<std::int64_t>(checked_rows) * (kPerRow + std::int64_t{n} * kBytesPerCheckedValue) +
         largest_chunk_entries * kPerEntry + matrix_rows / 8 + kFp16Table + std::int64_t{threads} * 3 * n * 8;
}

std::vector<std::int32_t> draw_distinct(std::int32_t population, std::int32_t count, std::uint64_t seed) {
  SplitMix64 random{seed};
  std::unordered_set<std::int32_t> taken;
  taken.reserve(static_cast<std::size_t>(count) * 2);
  // Floyd: for j = N - count .. N - 1 take a uniform t in [0, j]; if t is taken already, take j (which cannot be).
  // Every count-subset comes out with the same probability.
  for (std::int64_t j = std::int64_t{population} - count; j < population; ++j) {
    const auto t = static_cast<std::int32_t>(random.below(static_cast<std::uint64_t>(j) + 1));
    taken.insert(taken.count(t) ? static_cast<std::int32_t>(j) : t);
  }
  std::vector<std::int32_t> out(taken.begin(), taken.end());
  std::sort(out.begin(), out.end());
  return out;
}

CheckRows choose_check_rows(std::int32_t rows, std::int32_t n, std::int64_t nnz, const std::int32_t* row_ptr,
                            std::int32_t uniform_rows, std::uint64_t seed) {
  CheckRows chosen;
  chosen.seed = seed;
  const std::int64_t width = std::max<std::int32_t>(n, 1);
  if ((std::int64_t{rows} * width <= kFullCheckElements && nnz * width <= kFullCheckWork) || uniform_rows >= rows) {
    chosen.full = true;
    chosen.rows.resize(static_cast<std::size_t>(std::max(rows, 0)));
    for (std::int32_t i = 0; i < rows; ++i) chosen.rows[static_cast<std::size_t>(i)] = i;
    chosen.description = "all " + plural(rows, "row");
    return chosen;
  }
  // A quarter of the memory limit for the rows' reference and fetched C; the rest leaves room for a decoded chunk
  // (at most ~224 MiB) and the row bitmap of stored_rows (256 MiB for 2^31 rows).
  const std::int64_t affordable = kCheckMemoryLimit / 4 / (width * kBytesPerCheckedValue) - kLongestRows - 2 * kEndRows;
  const auto uniform = static_cast<std::int32_t>(std::max<std::int64_t>(1, std::min<std::int64_t>(uniform_rows, affordable)));
  // A constant mixed into the seed, so that the rows drawn do not follow the values of B (same --seed).
  std::vector<std::int32_t> all = draw_distinct(rows, uniform, seed ^ 0x5eed5a3b1eULL);
  chosen.uniform = uniform;
  if (row_ptr) {
    const std::vector<std::int32_t> longest = longest_rows(rows, row_ptr, kLongestRows, chosen.too_long);
    chosen.longest = static_cast<std::int32_t>(longest.size());
    all.insert(all.end(), longest.begin(), longest.end());
    if (chosen.too_long > 0) {
      // A uniformly drawn row may be one of them too: leave it out as well.
      all.erase(std::remove_if(all.begin(), all.end(),
                               [&](std::int32_t r) {
                                 return std::int64_t{row_ptr[r + 1]} - row_ptr[r] > kMaxCheckedRowNnz;
                               }),
                all.end());
    }
  }
  const std::int32_t ends = std::min(kEndRows, rows / 2);
  for (std::int32_t i = 0; i < ends; ++i) {
    all.push_back(i);
    all.push_back(rows - 1 - i);
  }
  chosen.ends = 2 * ends;
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  chosen.rows = std::move(all);

  chosen.description = plural(chosen.uniform, "row") + " drawn uniformly (seed " + std::to_string(seed) + ")";
  if (uniform < uniform_rows)
    chosen.description += " (cut from " + std::to_string(uniform_rows) + " to keep the check's memory bounded)";
  chosen.description += row_ptr ? ", the " + std::to_string(chosen.longest) + " longest rows" : std::string();
  chosen.description += " and the first and last " + plural(ends, "row") + ": " +
                        plural(static_cast<std::int64_t>(chosen.rows.size()), "distinct row") + " of " +
                        std::to_string(rows);
  if (!row_ptr) chosen.description += " (the longest rows are not known for a .b24 input)";
  if (chosen.too_long > 0)
    chosen.description += "; " + plural(chosen.too_long, "row") + " with more than " +
                          std::to_string(kMaxCheckedRowNnz) + " nonzeros left out";
  return chosen;
}

}  // namespace bcsr24::spmm_run
