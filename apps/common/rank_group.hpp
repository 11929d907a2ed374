// How the programs' distributed modes start their ranks and line them up on the host: one thread per GPU of this
// process (communicators from ncclCommInitAll), or MPI processes. Shared by spmm_run and bcsr24_solve; built only
// with NCCL. The library itself makes no such calls: it takes the NCCL communicator these make.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include <nccl.h>

#include "bcsr24/distributed_partition.hpp"
#include "rank_session.hpp"

namespace bcsr24::ranks {

/// @throw CudaError naming the NCCL call and place.
void check_nccl(ncclResult_t status, const char* call, const char* file, int line);
#define RANKS_NCCL(call) ::bcsr24::ranks::check_nccl((call), #call, __FILE__, __LINE__)

/// What a rank needs from the other ranks besides NCCL: lining up before timed runs and gathering results on
/// rank 0. Every rank calls each member in the same order.
class HostGroup {
 public:
  virtual ~HostGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void barrier() = 0;
  /// Rank 0's value, on every rank.
  virtual bool broadcast(bool value) = 0;
  /// Every rank's `bytes` bytes (the same count on each), in rank order, into `all` on rank 0.
  virtual void gather(const void* mine, std::size_t bytes, std::vector<unsigned char>& all) = 0;
  /// Every rank's rows (rows partition.begin(r) .. end(r), row_bytes each, contiguous) into `global` on rank 0,
  /// which holds partition.size() rows; `global` is ignored on the other ranks.
  virtual void gather_row_bytes(const void* mine, std::size_t row_bytes, const RowPartition& partition,
                                void* global) = 0;
};

/// Every rank's rows of n values into the partition.size() x n `global` on rank 0 (NaN where a row did not arrive).
template <typename T>
void gather_rows(HostGroup& group, const std::vector<T>& mine, const RowPartition& partition, std::int32_t n,
                 std::vector<T>& global) {
  const std::size_t width = static_cast<std::size_t>(n);
  if (group.rank() == 0) global.assign(static_cast<std::size_t>(partition.size()) * width, std::numeric_limits<T>::quiet_NaN());
  group.gather_row_bytes(mine.data(), width * sizeof(T), partition, group.rank() == 0 ? global.data() : nullptr);
}

/// Thrown in a rank thread when another rank failed: it stops quietly, the first failure is the one reported.
struct RankAborted {};

/// Owns one rank's NCCL communicator; declare it before everything built on the communicator so it is destroyed
/// last: ncclCommDestroy after a clean run (every rank destroys its own at about the same time, as NCCL's teardown
/// expects), ncclCommAbort after an error (it does not wait for peers that may never come).
class CommunicatorGuard {
 public:
  explicit CommunicatorGuard(ncclComm_t comm) : comm_(comm) {}
  ~CommunicatorGuard();
  CommunicatorGuard(const CommunicatorGuard&) = delete;
  CommunicatorGuard& operator=(const CommunicatorGuard&) = delete;
  void finished_cleanly() { clean_ = true; }

 private:
  ncclComm_t comm_;
  bool clean_ = false;
};

/// One rank's work: its host group, its communicator (owned by the rank: wrap it in a CommunicatorGuard) and its
/// CUDA device.
using RankFunction = std::function<void(HostGroup& group, ncclComm_t comm, int device)>;

/// Runs `body` on `ranks` threads, rank r on CUDA device r, with communicators from one ncclCommInitAll. The first
/// failure is rethrown as Error("rank r: ...") after every thread ended; the others stop at their next barrier.
/// A rank left waiting inside an NCCL operation for the failed one never returns: after a grace period the
/// process exits with status `stuck_exit_status`, saying so on stderr under `program`'s name.
/// @throw CudaError if the communicators cannot be made; Error for a failed rank.
void run_rank_threads(int ranks, const RankFunction& body, const char* program, int stuck_exit_status);

#ifdef BCSR24_HAS_MPI
/// @throw Error with MPI's text for a status other than MPI_SUCCESS.
void check_mpi(int status, const char* call, const char* file, int line);
#define RANKS_MPI(call) ::bcsr24::ranks::check_mpi((call), #call, __FILE__, __LINE__)

/// The host group of MPI_COMM_WORLD (MPI must be initialised).
class MpiGroup final : public HostGroup {
 public:
  MpiGroup();
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override;
  bool broadcast(bool value) override;
  void gather(const void* mine, std::size_t bytes, std::vector<unsigned char>& all) override;
  void gather_row_bytes(const void* mine, std::size_t row_bytes, const RowPartition& partition,
                        void* global) override;

 private:
  int rank_ = 0, size_ = 1;
};

/// --mpi: runs `body` as this process's rank of `session` (Launch::mpi, after select_devices): rank 0 makes the
/// NCCL id and broadcasts it over MPI, every process joins with ncclCommInitRank on its session device. Collective:
/// every process calls it.
/// @throw CudaError if the communicator cannot be made; whatever `body` throws.
void run_mpi_rank(const Session& session, const RankFunction& body);
#endif

}  // namespace bcsr24::ranks
