// DistributedOperator: A spread over several GPUs (one rank per GPU, each owning a contiguous block of rows of A,
// B and C), with the halo of B exchanged over NCCL. Built only when the library was configured with NCCL
// (BCSR24_HAS_NCCL; target bcsr24::bcsr24_distributed). The library makes no MPI calls: the caller creates the
// NCCL communicator (after MPI_Init, or with ncclCommInitAll for one process and several GPUs) and passes it in.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bcsr24/communicator.hpp"
#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24/spmm_plan.hpp"

namespace bcsr24 {

/// Checks that `comm` is non-null, that its rank and size match the NCCL communicator, and that its device is
/// the current CUDA device. @throw InvalidArgument naming what differs; CudaError if NCCL cannot be queried.
void check_communicator(const NcclCommunicator& comm, const char* who);

/// Options of a distributed operator: the single-GPU options for both parts of every rank (precision, scaling,
/// tile layout and reordering apply to the local part and the halo part separately), and the partition.
struct DistributedOptions {
  OperatorOptions part;
  /// Row split: balanced by these per-entry and per-row bytes (the default: bcsr24's device bytes per stored
  /// entry at ~50% tile fill plus the row's share of the CSR fallback).
  detail::PartitionCost cost{8, 8};
  /// How from_global and from_file assign rows to ranks: METIS parts (renumbered, see row_order()) when the
  /// library has METIS and A is square, else contiguous ranges of the caller's numbering. from_rank_rows takes
  /// the caller's partition as it is.
  PartitionMethod partition = PartitionMethod::automatic;
};

class DistributedPlan;

namespace detail {
struct DistributedAccess;  // the library's own way in (the halo exchange, measuring stages)
}

/// This rank's share of C = alpha * A * B + beta * C. Rank r owns rows row_partition().begin(r) .. end(r) of A and
/// C, and rows col_partition().begin(r) .. end(r) of B (the same partition for a square A). Its rows are split into
/// the local part (columns it owns: multiplied by its own B rows) and the halo part (other ranks' columns,
/// renumbered compactly: multiplied by the B rows received from their owners before each product).
///
/// Construction is collective: every rank of the communicator builds its operator at the same time (it
/// exchanges the halo requests over NCCL). Thread safety as SparseOperator.
class DistributedOperator {
 public:
  /// Every rank passes its own rows, with global column indices (rows_of_rank.rows = row_partition.count(rank),
  /// rows_of_rank.cols = global columns). The partitions must be the same on every rank.
  /// @throw InvalidArgument for inconsistent sizes or partitions; CudaError for failed CUDA or NCCL calls.
  static DistributedOperator from_rank_rows(const CsrMatrix& rows_of_rank, const RowPartition& row_partition,
                                            const RowPartition& col_partition, const NcclCommunicator& comm,
                                            const DistributedOptions& options = {});
  /// Every rank holds the whole matrix (read by each, or received). Rows are assigned by options.partition: for
  /// METIS, rank 0 partitions and broadcasts the renumbering (so ranks agree even if their METIS builds differ),
  /// and the operator is P A P^T with each rank's rows contiguous in the new numbering (row_order()); for the
  /// contiguous method, ranges balanced by bytes. Columns use the same partition when A is square (else a uniform
  /// split of the columns). This rank keeps its rows.
  /// @throw as from_rank_rows; InvalidArgument / NotSupported for a METIS partition that cannot be made
  ///        (partition_rows), on every rank.
  static DistributedOperator from_global(const CsrMatrix& a, const NcclCommunicator& comm,
                                         const DistributedOptions& options = {});
  /// Every rank reads the Matrix Market file (or .b24 is refused: it holds no CSR) and keeps its rows.
  static DistributedOperator from_file(const std::string& path, const NcclCommunicator& comm,
                                       const DistributedOptions& options = {});

  DistributedOperator(DistributedOperator&&) noexcept;
  DistributedOperator& operator=(DistributedOperator&&) noexcept;
  DistributedOperator(const DistributedOperator&) = delete;
  DistributedOperator& operator=(const DistributedOperator&) = delete;
  ~DistributedOperator();

  int rank() const noexcept;
  int size() const noexcept;
  std::int32_t global_rows() const noexcept;
  std::int32_t global_cols() const noexcept;
  const RowPartition& row_partition() const noexcept;
  const RowPartition& col_partition() const noexcept;
  std::int32_t local_rows() const noexcept;  ///< rows of A and C on this rank
  std::int32_t owned_cols() const noexcept;  ///< rows of B on this rank
  std::int64_t local_nnz() const noexcept;   ///< stored entries of the local part
  std::int64_t halo_nnz() const noexcept;    ///< stored entries of the halo part
  std::int32_t halo_rows() const noexcept;   ///< B rows this rank receives per product
  std::int32_t send_rows() const noexcept;   ///< B rows this rank sends per product (to all peers together)
  /// The method that assigned the rows (automatic resolved; contiguous for from_rank_rows).
  PartitionMethod partition_method() const noexcept;
  /// The operator's numbering of rows and columns: operator row i is the caller's row row_order()[i], so this
  /// rank's B, C and vector rows are the caller's rows row_order()[row_partition().begin(rank()) ..
  /// end(rank())). Empty when the operator keeps the caller's numbering (contiguous). Move blocks in and out
  /// with take_rank_rows / put_rank_rows (distributed_partition.hpp), once per solve rather than per product.
  const std::vector<std::int32_t>& row_order() const noexcept;
  /// Stored entries (local + halo parts) and halo rows of rank r, learnt from every rank at construction: the
  /// balance (max / mean entries) and the communication (sum of halo rows x n x element bytes per product).
  /// @throw InvalidArgument if r is not in [0, size()).
  std::int64_t rank_nnz(int r) const;
  std::int32_t rank_halo_rows(int r) const;
  /// The parts (null when a part has no entries).
  const SparseOperator* local_part() const noexcept;
  const SparseOperator* halo_part() const noexcept;
  /// Device bytes of both parts and the send-row index (plans add their buffers).
  std::int64_t device_bytes() const;
  const NcclCommunicator& communicator() const noexcept;

  /// A plan for n columns of B; collective only in that every rank must make one before running it.
  DistributedPlan make_plan(std::int32_t n, const PlanOptions& options = {}) const;

 private:
  struct State;
  explicit DistributedOperator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  friend class DistributedPlan;
  friend struct detail::DistributedAccess;
};

/// The buffers and plans of one distributed product width. run() is collective: every rank calls it with its own
/// B rows and C rows, in the same order relative to its other NCCL calls. It enqueues work on `stream` (and on
/// the plan's own communication stream, ordered by events) and never synchronises the host.
class DistributedPlan {
 public:
  DistributedPlan(DistributedPlan&&) noexcept;
  DistributedPlan& operator=(DistributedPlan&&) noexcept;
  DistributedPlan(const DistributedPlan&) = delete;
  DistributedPlan& operator=(const DistributedPlan&) = delete;
  ~DistributedPlan();

  /// C_rank = alpha * A_rank * B + beta * C_rank. b: this rank's owned_cols() x n rows of B, row-major, ldb >= n,
  /// 16-bit (the parts' type: fp16 or bf16 bits). c: local_rows() x n floats, ldc >= n. beta == 0 does not read C.
  void run(const fp16_t* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
           Stream stream = nullptr) const;
  /// The same with fp32 B (a plan made with input ElementType::f32, or any plan of a split operator).
  void run(const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
           Stream stream = nullptr) const;
  /// C_rank = alpha * A_rank * B + sum_t addends[t].scale * D_t + beta * C_rank (SpmmPlan::run's addends, D_t this
  /// rank's rows): the addends ride in the local part's pass (or, on a rank without local entries, in the halo
  /// part's after C is scaled by beta), so the update costs no pass of its own.
  /// @throw InvalidArgument as run() and SpmmPlan::run with addends, or for addends on a rank without entries.
  void run(const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
           const OutputAddend* addends, int count, Stream stream = nullptr) const;

  std::int32_t n() const noexcept;
  ElementType input() const noexcept;
  /// Bytes this rank sends and receives per product.
  std::int64_t bytes_sent() const noexcept;
  std::int64_t bytes_received() const noexcept;
  /// Device bytes of the plan: both parts' plans, the send buffer and the halo rows of B.
  std::int64_t device_bytes() const noexcept;
  /// The local part's and the halo part's plan reports (null for a part without entries).
  const PlanReport* local_report() const noexcept;
  const PlanReport* halo_report() const noexcept;

 private:
  struct Impl;
  explicit DistributedPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class DistributedOperator;
  friend struct detail::DistributedAccess;
};

}  // namespace bcsr24
