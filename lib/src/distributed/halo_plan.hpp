// The split of one rank's rows of A into a local part (the columns it owns) and a halo part (other ranks' columns,
// renumbered compactly), and the send plans of the halo exchange: host code of libbcsr24, no MPI or NCCL. The
// library's own (DistributedOperator, the distributed solver's rank link) and the tests'; not installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/distributed_partition.hpp"

namespace bcsr24::detail {

/// One rank's rows of A split by the owner of their columns. The local part multiplies the B rows this rank
/// owns, the halo part the B rows received from peers, so y = local * B_owned + halo * B_halo and the local
/// product can run while the halo is in flight.
struct RankBlock {
  int rank = 0;
  std::int32_t row_begin = 0;  ///< first global row owned (rows are row_begin .. row_begin + local.rows)
  std::int32_t col_begin = 0;  ///< first global column (= B row) owned by this rank
  std::int32_t col_end = 0;    ///< one past the last global column owned
  CsrMatrix local;             ///< rows x (col_end - col_begin); column j = global column col_begin + j
  CsrMatrix halo;              ///< rows x halo_cols(); column h = global column halo_global[h]
  /// Halo index -> global column, strictly ascending. Owners are contiguous column ranges, so the columns of
  /// one peer form one slice: the receive buffer of B_halo is filled peer by peer without a scatter.
  std::vector<std::int32_t> halo_global;
  /// ranks + 1 entries: the halo indices received from peer q are [recv_offsets[q], recv_offsets[q+1]).
  /// The slice of this rank itself is always empty.
  std::vector<std::int32_t> recv_offsets;

  std::int32_t halo_cols() const noexcept { return static_cast<std::int32_t>(halo_global.size()); }
  /// Halo rows of B received from peer q. Precondition: 0 <= q < ranks.
  std::int32_t recv_count(int q) const {
    const auto i = static_cast<std::size_t>(q);
    return recv_offsets[i + 1] - recv_offsets[i];
  }
};

/// Rows [begin, end) of `a` as a matrix of end - begin rows with a's global columns: what rank 0 (or a test)
/// hands to split_rank_rows. Explicit zeros are kept. Only the sizes of `a` are checked (O(1)); the caller's
/// split_rank_rows validates the rows it receives.
/// @throw InvalidArgument if 0 <= begin <= end <= a.rows does not hold or a.row_ptr has the wrong size.
CsrMatrix extract_rows(const CsrMatrix& a, std::int32_t begin, std::int32_t end);

/// Splits this rank's rows into local and halo parts. Columns of both parts stay sorted and unique (each row's
/// local entries are one contiguous run of its sorted columns, and the halo renumbering is monotone); explicit
/// zeros are kept; values are copied unchanged. A rank with no rows gets 0-row matrices (row_ptr = {0}); a rank
/// with no halo gets a halo of 0 columns and all-zero receive counts.
/// @param rows_of_rank row_partition.count(rank) rows with global columns (cols = col_partition.size()), e.g.
///        the rows this rank read; validated with validate_csr.
/// @param col_partition owner of every global column (= B row); for a square A usually the row partition.
/// @throw InvalidArgument for invalid partitions, partitions of different rank counts, a rank out of range,
///        or rows_of_rank of the wrong shape or breaking the CSR invariants.
RankBlock split_rank_rows(const CsrMatrix& rows_of_rank, int rank, const RowPartition& row_partition,
                          const RowPartition& col_partition);

// One-host helpers: every rank's split and send plan computed in one place, for tests and for the scaling figures.
// A distributed program never needs them (each rank splits its own rows and learns its send plan from its peers).

/// split_rank_rows for every rank of a matrix held on one host (tests).
/// @throw InvalidArgument as split_rank_rows, or if the partitions do not cover a's rows and columns.
std::vector<RankBlock> split_matrix(const CsrMatrix& a, const RowPartition& row_partition,
                                    const RowPartition& col_partition);

/// What one rank sends before each product: to peer q, its owned B rows send_rows[send_offsets[q] ..
/// send_offsets[q+1]) (indices local to the rank's column range, ascending), packed in that order into the send
/// buffer, so that the slice sent to q lands in q's halo buffer in q's halo order.
struct HaloSendPlan {
  std::vector<std::int32_t> send_offsets{0};  ///< ranks + 1 entries; the slice to the rank itself is empty
  std::vector<std::int32_t> send_rows;        ///< local B row indices, grouped by peer

  /// B rows sent in all (the length of the packed send buffer in rows).
  std::int64_t total() const noexcept { return static_cast<std::int64_t>(send_rows.size()); }
  /// B rows sent to peer q. Precondition: 0 <= q < ranks.
  std::int32_t send_count(int q) const {
    const auto i = static_cast<std::size_t>(q);
    return send_offsets[i + 1] - send_offsets[i];
  }
};

/// The send side is the transpose of the peers' receive sides. Given, for rank `me`, the global columns every
/// peer q requests from it (peer q's halo_global restricted to me's column range, i.e. its receive slice from
/// me), builds me's send plan. The GPU layer obtains the requests through the communicator (counts, then the
/// lists); a test computes them on one host (build_all_send_plans).
/// @param requested_global_by_peer ranks lists; list q strictly ascending, inside me's column range, and empty
///        for q = me.
/// @throw InvalidArgument for an invalid partition, me out of range, a wrong number of lists, an unsorted or
///        repeated list, a column not owned by me, or a request from me to itself.
HaloSendPlan build_send_plan(int me, const RowPartition& col_partition,
                             const std::vector<std::vector<std::int32_t>>& requested_global_by_peer);

/// Send plans of all ranks from all ranks' blocks (one host, tests): plan q sends to every r the slice
/// blocks[r].halo_global[recv_offsets[q] .. recv_offsets[q+1]).
/// @throw InvalidArgument if blocks.size() differs from the rank count, block r is not rank r's block for this
///        column partition, or its halo lists are inconsistent (as build_send_plan).
std::vector<HaloSendPlan> build_all_send_plans(const std::vector<RankBlock>& blocks, const RowPartition& col_partition);

/// Bytes one product moves between ranks: the sum over ranks of halo rows * n * element_bytes (every halo row
/// of B is received once per product). For the scaling model in the docs.
/// @throw InvalidArgument for n < 0 or element_bytes < 1; SizeLimitError if the total overflows int64.
std::int64_t halo_exchange_bytes(const std::vector<RankBlock>& blocks, std::int32_t n, std::int32_t element_bytes);

}  // namespace bcsr24::detail
