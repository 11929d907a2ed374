// Host side of the distributed operator (one rank per GPU): row partitions (contiguous ranges of the caller's
// numbering, or METIS parts renumbered so that each rank's rows are contiguous) and moving a rank's rows of a block
// in and out of the operator's numbering. No MPI or NCCL here. (The split of a rank's rows into local and halo parts
// and the halo exchange plans are the library's own: lib/src/distributed/halo_plan.hpp.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24 {

/// Contiguous ranges of indices, one per rank: rank r owns [offsets[r], offsets[r+1]). Used for the rows of A
/// and for the columns of A (= the rows of B, of every vector). Contiguous ranges make ownership a binary
/// search and make every peer's share of a sorted index list one slice of it.
struct RowPartition {
  std::vector<std::int32_t> offsets{0};  ///< ranks + 1 entries, offsets[0] = 0, nondecreasing; empty ranks allowed

  /// Number of ranks (offsets.size() - 1; 0 for an empty offsets vector, which validate_partition rejects).
  int ranks() const noexcept { return offsets.empty() ? 0 : static_cast<int>(offsets.size()) - 1; }
  /// Number of indices partitioned (offsets.back()).
  std::int32_t size() const noexcept { return offsets.empty() ? 0 : offsets.back(); }
  /// First index of rank r. @throw InvalidArgument if r is not in [0, ranks()).
  std::int32_t begin(int r) const;
  /// One past the last index of rank r. @throw InvalidArgument if r is not in [0, ranks()).
  std::int32_t end(int r) const;
  /// Number of indices of rank r (0 for an empty rank). @throw InvalidArgument if r is not in [0, ranks()).
  std::int32_t count(int r) const;
  /// The rank owning `index` (never an empty rank). O(log ranks).
  /// @throw InvalidArgument if index is not in [0, size()).
  int owner(std::int32_t index) const;
};

/// Checks the partition invariants: at least one rank, offsets[0] = 0, nondecreasing offsets, and
/// offsets.back() = size (the partition covers exactly 0 .. size-1).
/// @param what names the partition in the message ("row partition", "column partition").
/// @throw InvalidArgument naming the first broken invariant.
void validate_partition(const RowPartition& partition, std::int32_t size, const char* what = "partition");

namespace detail {
// The byte balance behind the contiguous split. Not part of the promised API: the public ways to choose a partition
// are partition_rows and DistributedOptions (whose `cost` field has this type).

/// What a row costs in bytes when balancing: nnz(row) * bytes_per_entry + bytes_per_row. The defaults are the
/// host CsrMatrix's own storage (8-byte value + 4-byte column per entry, one 4-byte row pointer per row); pass
/// the device format's sizes to balance device memory instead. The row term keeps long runs of empty rows from
/// all landing on one rank.
struct PartitionCost {
  std::int64_t bytes_per_entry = 12;
  std::int64_t bytes_per_row = 4;
};

/// Largest bytes_per_entry / bytes_per_row accepted: keeps the int64 byte sums of a 2^31-entry matrix exact.
constexpr std::int64_t kMaxPartitionCost = std::int64_t{1} << 24;

/// Splits rows so that every rank stores about the same bytes: the classic balanced contiguous partition.
/// With prefix(i) the bytes of rows [0, i) and T = prefix(rows), boundary r (0 < r < ranks) is the first row i
/// with prefix(i) * ranks >= r * T, so every rank's bytes are within one row's bytes of T / ranks. ranks may
/// exceed rows (some ranks then get no rows). When T = 0 (no rows, or no entries and bytes_per_row = 0) the
/// rows are split as uniform_partition does. Sums are int64.
/// @param row_ptr rows + 1 nondecreasing offsets (only the differences are used); may be null when rows = 0.
/// @throw InvalidArgument for rows < 0, ranks < 1, a null or decreasing row_ptr, or costs outside
///        [0, kMaxPartitionCost] or both zero.
RowPartition partition_rows_by_bytes(std::int32_t rows, const std::int32_t* row_ptr, int ranks,
                                     const PartitionCost& cost = {});
/// The same for the rows of `a` (row_ptr must have a.rows + 1 entries).
RowPartition partition_rows_by_bytes(const CsrMatrix& a, int ranks, const PartitionCost& cost = {});

}  // namespace detail

/// How rows are assigned to ranks (DistributedOptions::partition).
enum class PartitionMethod : std::uint8_t {
  automatic,   ///< metis when the library was built with METIS and A is square, contiguous otherwise
  contiguous,  ///< contiguous ranges of the caller's numbering, balanced by bytes (detail::partition_rows_by_bytes)
  /// METIS k-way parts of the symmetrised graph of A minimising the total communication volume (= the sum of the
  /// ranks' halo rows), vertices weighted by their bytes (detail::PartitionCost) so that ranks balance stored entries
  /// within METIS's default 3%; then renumbered so that each rank's rows are contiguous. Square A only.
  metis,
};
const char* partition_method_name(PartitionMethod method) noexcept;  ///< "automatic", "contiguous", "metis"
/// @throw InvalidArgument naming the accepted values.
PartitionMethod partition_method_from_name(const std::string& name);
/// Whether this build of the library has METIS (BCSR24_WITH_METIS); without it, PartitionMethod::metis throws.
bool metis_available() noexcept;

/// Assigns the rows of a square A to ranks and renumbers them so that each rank owns one contiguous range of the
/// new numbering (the returned partition). new_to_old receives a.rows entries: new row i is row new_to_old[i] of
/// `a`; a rank's rows keep their relative order, so the contiguous method gives the identity. Deterministic: METIS
/// runs with a fixed seed. With no more rows than ranks, metis gives way to the contiguous split (some ranks then
/// own no rows: there is nothing to choose), and `used` says so.
/// @param used receives the method that ran (automatic resolved), when not null.
/// @throw InvalidArgument for an invalid cost, ranks < 1, an invalid A or a rectangular A with metis;
///        NotSupported for metis without METIS in this build; Error if METIS fails.
RowPartition partition_rows(const CsrMatrix& a, int ranks, PartitionMethod method, const detail::PartitionCost& cost,
                            std::vector<std::int32_t>& new_to_old, PartitionMethod* used = nullptr);

/// The inverse of a permutation of 0 .. size-1 (old_to_new from new_to_old and back).
/// @throw InvalidArgument if `permutation` is not a permutation (an index out of range or repeated).
std::vector<std::int32_t> invert_permutation(const std::vector<std::int32_t>& permutation);

/// Rows [begin, end) of the symmetrically permuted matrix P A P^T: new row i is a's row new_to_old[i], its columns
/// renumbered by old_to_new and sorted (values follow). What a rank keeps of a renumbered A. O(entries of the
/// rows) besides the sort; the permutations are trusted to be inverses of each other (invert_permutation).
/// @throw InvalidArgument for a non-square a, permutations of the wrong size, or a range outside 0 .. a.rows.
CsrMatrix extract_permuted_rows(const CsrMatrix& a, const std::vector<std::int32_t>& new_to_old,
                                const std::vector<std::int32_t>& old_to_new, std::int32_t begin, std::int32_t end);

namespace detail {

/// f(j, row) for each of rank `rank`'s rows: j its place in the operator's order (0 .. count - 1), row its place in
/// the caller's numbering (new_to_old[begin + j]; begin + j for an empty new_to_old, the identity).
template <class F>
void for_each_rank_row(const RowPartition& partition, const std::vector<std::int32_t>& new_to_old, int rank, F&& f) {
  const std::int32_t begin = partition.begin(rank), count = partition.count(rank);
  for (std::int32_t j = 0; j < count; ++j)
    f(std::int64_t{j}, new_to_old.empty() ? std::int64_t{begin + j} : new_to_old[static_cast<std::size_t>(begin + j)]);
}

}  // namespace detail

/// Rank `rank`'s rows of a row-major block in the caller's numbering (x: rows x k, ld apart), in the operator's
/// order: mine row j = x row new_to_old[begin + j]. An empty new_to_old means the identity (no renumbering).
template <class T>
void take_rank_rows(const T* x, std::int64_t ld, std::int32_t k, const RowPartition& partition,
                    const std::vector<std::int32_t>& new_to_old, int rank, T* mine, std::int64_t ld_mine) {
  detail::for_each_rank_row(partition, new_to_old, rank, [&](std::int64_t j, std::int64_t row) {
    for (std::int32_t c = 0; c < k; ++c) mine[j * ld_mine + c] = x[row * ld + c];
  });
}

/// The inverse of take_rank_rows: writes rank `rank`'s rows (mine, in the operator's order) into their places of a
/// block in the caller's numbering.
template <class T>
void put_rank_rows(const T* mine, std::int64_t ld_mine, std::int32_t k, const RowPartition& partition,
                   const std::vector<std::int32_t>& new_to_old, int rank, T* x, std::int64_t ld) {
  detail::for_each_rank_row(partition, new_to_old, rank, [&](std::int64_t j, std::int64_t row) {
    for (std::int32_t c = 0; c < k; ++c) x[row * ld + c] = mine[j * ld_mine + c];
  });
}

/// n indices in `ranks` contiguous ranges whose sizes differ by at most one, the larger ones first. For the
/// column side of a rectangular A, and as the reference in tests.
/// @throw InvalidArgument for n < 0 or ranks < 1.
RowPartition uniform_partition(std::int32_t n, int ranks);

}  // namespace bcsr24
