// HaloExchange: the per-product movement of B rows between ranks that a row-distributed sparse product needs,
// over NCCL, for any element type. DistributedOperator uses it for its 16-bit or fp32 B; the distributed solver's
// rank link uses the same pattern for its fp64 vectors (the true residual, a CSR reference product), so every
// product of a distributed code moves exactly the rows its matrix needs. Built only with NCCL (BCSR24_HAS_NCCL);
// the library's own, not installed (the solvers library and the tests reach it through the build tree).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bcsr24/communicator.hpp"
#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "distributed/halo_plan.hpp"

namespace bcsr24 {

class DistributedOperator;
class DistributedPlan;

namespace experimental {
enum class DistributedStages;
}

namespace detail {

/// Element types a halo exchange moves.
enum class HaloElement { f16, bf16, f32, f64 };
int halo_element_bytes(HaloElement element) noexcept;
const char* halo_element_name(HaloElement element) noexcept;

class HaloExchangePlan;

/// Who sends which B rows to whom before each product, for one rank: the receive side is the rank's RankBlock
/// (halo rows grouped by owner), the send side is learnt from the peers at construction.
///
/// Construction is collective: every rank of the communicator builds its exchange at the same time (each tells
/// every peer which of the peer's rows it needs: counts, then the lists, as grouped NCCL send/recv).
class HaloExchange {
 public:
  /// @param block this rank's split rows (split_rank_rows with the same partitions on every rank)
  /// @throw InvalidArgument for a block of another rank or inconsistent requests; CudaError (CUDA or NCCL).
  HaloExchange(const RankBlock& block, const RowPartition& col_partition, const NcclCommunicator& comm);
  HaloExchange(HaloExchange&&) noexcept;
  HaloExchange& operator=(HaloExchange&&) noexcept;
  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;
  ~HaloExchange();

  const NcclCommunicator& communicator() const noexcept;
  std::int32_t halo_rows() const noexcept;  ///< B rows this rank receives per exchange
  std::int32_t send_rows() const noexcept;  ///< B rows this rank sends per exchange (to all peers together)
  const HaloSendPlan& send_plan() const noexcept;
  const std::vector<std::int32_t>& recv_offsets() const noexcept;  ///< ranks + 1: halo rows from peer q
  /// Whether this rank sends or receives anything (false for one rank, or a matrix without halo).
  bool moves_data() const noexcept;
  std::int64_t device_bytes() const noexcept;  ///< the send-row index on the device

  /// Buffers for exchanging n columns of `element`. The exchange must outlive its plans.
  /// @throw InvalidArgument for n < 1.
  HaloExchangePlan make_plan(std::int32_t n, HaloElement element) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  friend class HaloExchangePlan;
};

/// The send buffer and the received halo rows for one width and element type, and a communication stream.
/// The halo rows are stored halo index by halo index (the RankBlock's halo numbering), ld() elements apart.
class HaloExchangePlan {
 public:
  HaloExchangePlan(HaloExchangePlan&&) noexcept;
  HaloExchangePlan& operator=(HaloExchangePlan&&) noexcept;
  HaloExchangePlan(const HaloExchangePlan&) = delete;
  HaloExchangePlan& operator=(const HaloExchangePlan&) = delete;
  ~HaloExchangePlan();

  /// Starts the exchange of the rows peers need of b (this rank's owned rows, row-major, ldb >= n elements):
  /// the plan's communication stream first waits for the work `stream` has enqueued so far (b written), then
  /// packs the rows and runs one grouped NCCL send/recv. Collective: every rank calls it, in the same order
  /// relative to its other NCCL calls. Returns at once; nothing happens when moves_data() is false.
  /// @throw InvalidArgument for ldb < n or a null b on a rank that sends; CudaError (CUDA or NCCL).
  void start(const void* b, std::int64_t ldb, Stream stream) const;
  /// Makes `stream` wait (on the device) until the halo rows of the last start() have arrived.
  void wait(Stream stream) const;

  /// The received rows: halo_rows() x n elements, ld() apart (null when nothing is received).
  const void* halo() const noexcept;
  std::int64_t ld() const noexcept;  ///< n rounded up to 8 elements: aligned rows for the tile kernels
  std::int32_t n() const noexcept;
  HaloElement element() const noexcept;
  std::int64_t bytes_sent() const noexcept;      ///< per exchange, padding columns included
  std::int64_t bytes_received() const noexcept;  ///< per exchange, padding columns included
  std::int64_t device_bytes() const noexcept;    ///< the two buffers

 private:
  struct Impl;
  explicit HaloExchangePlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class HaloExchange;
};

/// The library's way into a distributed operator and its plans beyond the public API: the halo exchange of an
/// operator (for objects that move vectors distributed like B), and a plan's run with only some of its stages
/// (experimental::run_stages, for measuring).
struct DistributedAccess {
  /// The exchange of `op`'s halo rows of B, valid while `op` lives; plans made on it may move other element types
  /// (e.g. fp64 vectors of a solver whose rows are distributed like B).
  static const HaloExchange& halo_exchange(const DistributedOperator& op) noexcept;
  /// DistributedPlan::run limited to `stages` (b: fp32 when f32_b, else 16-bit bits).
  static void run_stages(const DistributedPlan& plan, experimental::DistributedStages stages, const void* b,
                         bool f32_b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
                         Stream stream);
};

}  // namespace detail

}  // namespace bcsr24
