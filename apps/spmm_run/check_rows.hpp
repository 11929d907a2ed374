// Which rows of C spmm_run's check compares: every row where the fp64 reference of the whole product is cheap,
// else a seeded uniform sample plus the rows most likely to go wrong (the longest, the first and the last), so
// that the check runs on every matrix the GPU can hold with bounded host memory and time.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bcsr24::spmm_run {

/// The full check when the reference of every row is small and quick: rows x n reference values (8 bytes each,
/// plus 4 for the fetched C) at most 2^24 (192 MiB), and nonzeros x n multiply-adds at most 2^24 (each feeds the
/// reference and three error sums: about a tenth of a second on one core, below the conversion's time).
inline constexpr std::int64_t kFullCheckElements = std::int64_t{1} << 24;
inline constexpr std::int64_t kFullCheckWork = std::int64_t{1} << 24;
/// Rows a sampled check adds besides the uniform draw: the longest rows (long rows are split over blocks or
/// take the CSR path's long-row kernels) and the first and last rows (edge bands, padded tiles).
inline constexpr int kLongestRows = 16;
inline constexpr int kEndRows = 8;
/// The check's host memory stays under this, whatever the matrix (docs/SPMM_RUN.md, "The check").
inline constexpr std::int64_t kCheckMemoryLimit = std::int64_t{1} << 30;
/// Stored entries decoded at a time for the check (~28 bytes each while stored_rows builds its CSR: 112 MiB).
inline constexpr std::int64_t kChunkEntries = std::int64_t{1} << 22;
/// A row with more nonzeros than this is left out of a sampled check (decoding it alone would take ~28 bytes per
/// nonzero, 224 MiB); the description says so when it happens.
inline constexpr std::int64_t kMaxCheckedRowNnz = std::int64_t{1} << 23;

struct CheckRows {
  std::vector<std::int32_t> rows;  ///< ascending, distinct
  bool full = false;               ///< every row of C
  std::int32_t uniform = 0;        ///< rows drawn uniformly (sampled check)
  std::int32_t longest = 0;        ///< the longest rows taken (0 when the row lengths are not known)
  std::int32_t ends = 0;           ///< first and last rows taken
  std::int32_t too_long = 0;       ///< rows left out for having more than kMaxCheckedRowNnz nonzeros
  std::uint64_t seed = 0;          ///< seed of the uniform draw
  std::string description;         ///< one line: how the rows were chosen
};

/// Chooses the rows for a product of a rows x cols matrix with nnz nonzeros by n columns.
/// @param row_ptr the matrix's rows + 1 row pointers, or null when the row lengths are unknown (a .b24 input):
///        then no longest rows are taken
/// @param uniform_rows rows to draw uniformly (--check-rows); at least `rows` means the full check
/// @param seed seed of the draw (mixed with a constant, so the rows do not follow B's values)
CheckRows choose_check_rows(std::int32_t rows, std::int32_t n, std::int64_t nnz, const std::int32_t* row_ptr,
                            std::int32_t uniform_rows, std::uint64_t seed);

/// The checked rows in chunks [first, last) of positions whose stored copies are decoded together: at most
/// kChunkEntries entries each (or one longer row), by the row pointers; 512 rows each where the lengths are not
/// known (row_ptr null).
std::vector<std::pair<std::size_t, std::size_t>> check_chunks(const std::vector<std::int32_t>& rows,
                                                              const std::int32_t* row_ptr);

/// Host bytes of a check on `checked_rows` rows of a `matrix_rows`-row matrix at width n whose largest decoded
/// chunk has `largest_chunk_entries` entries, with `threads` threads: the row list (4 bytes a row, and ~40 for the
/// uniform draw's hash set while it exists, and 4 for stored_rows' band list), the reference (8 bytes a value),
/// the C rows fetched to compare with it (4 bytes a value), the largest decoded chunk (its CSR and the triplets it
/// is built from, 28 bytes an entry), stored_rows' row bitmap (1 bit a row of A), the fp16 table (256 KiB) and the
/// threads' scratch (3 n doubles each). Not counted: what the product needs anyway (A's CSR as read, B and C0).
std::int64_t check_host_bytes(std::size_t checked_rows, std::int64_t largest_chunk_entries, std::int32_t n,
                              std::int32_t matrix_rows, unsigned threads);

/// `count` distinct integers of [0, population) drawn uniformly (Floyd's algorithm: count draws, no array of
/// the population), ascending. count <= population.
std::vector<std::int32_t> draw_distinct(std::int32_t population, std::int32_t count, std::uint64_t seed);

}  // namespace bcsr24::spmm_run
