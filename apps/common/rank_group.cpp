// Rank launchers of the programs: host threads (a breakable barrier, rank-0 gathers through shared slots, a
// watchdog for ranks stuck in NCCL after a failure) and MPI processes.
#include "rank_group.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include <cuda_runtime_api.h>

#include "mpi_c_api.hpp"

#include "bcsr24/error.hpp"

namespace bcsr24::ranks {

void check_nccl(ncclResult_t status, const char* call, const char* file, int line) {
  if (status != ncclSuccess)
    throw CudaError(std::string(call) + " failed: " + ncclGetErrorString(status) + " (" + file + ":" +
                    std::to_string(line) + ")");
}

CommunicatorGuard::~CommunicatorGuard() {
  if (!comm_) return;
  if (clean_)
    ncclCommDestroy(comm_);
  else
    ncclCommAbort(comm_);
}

namespace {

/// After one rank thread fails, how long the others get to notice (at their next barrier) before the process
/// gives up on them: a rank waiting inside an NCCL operation for the failed one never returns by itself.
constexpr int kStuckRankGraceSeconds = 20;

/// A reusable barrier of the rank threads (a generation count), which a failing rank breaks so that the others
/// stop at their next barrier instead of waiting for it forever.
class ThreadBarrier {
 public:
  explicit ThreadBarrier(int count) : count_(count) {}

  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (broken_) throw RankAborted{};
    const std::uint64_t generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      released_.notify_all();
      return;
    }
    released_.wait(lock, [&] { return generation_ != generation || broken_; });
    if (generation_ == generation) throw RankAborted{};
  }

  void break_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    broken_ = true;
    released_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  const int count_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  bool broken_ = false;
};

/// What the rank threads share: the barrier, one slot per rank for gathers, and the failure and completion state
/// the launching thread watches.
struct ThreadShared {
  explicit ThreadShared(int ranks) : barrier(ranks), slots(static_cast<std::size_t>(ranks)) {}

  ThreadBarrier barrier;
  std::vector<std::vector<unsigned char>> slots;
  unsigned char* global_rows = nullptr;  // rank 0's gather target while gather_row_bytes runs
  bool flag = false;                     // rank 0's value while broadcast runs

  std::mutex mutex;
  std::condition_variable changed;
  int finished = 0;
  int failed_rank = -1;
  std::string failure;

  void fail(int rank, const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (failed_rank < 0) {
        failed_rank = rank;
        failure = what;
      }
    }
    barrier.break_all();
    changed.notify_all();
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mutex);
    ++finished;
    changed.notify_all();
  }
};

class ThreadGroup final : public HostGroup {
 public:
  ThreadGroup(ThreadShared& shared, int rank) : shared_(shared), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(shared_.slots.size()); }
  void barrier() override { shared_.barrier.arrive_and_wait(); }

  bool broadcast(bool value) override {
    if (rank_ == 0) shared_.flag = value;
    barrier();
    const bool result = shared_.flag;
    barrier();  // nobody reads the flag once it may change again
    return result;
  }

  void gather(const void* mine, std::size_t bytes, std::vector<unsigned char>& all) override {
    const auto* begin = static_cast<const unsigned char*>(mine);
    shared_.slots[static_cast<std::size_t>(rank_)].assign(begin, begin + bytes);
    barrier();
    if (rank_ == 0) {
      all.clear();
      for (const auto& slot : shared_.slots) {
        if (slot.size() != bytes) throw InvalidArgument("gather: the ranks sent different byte counts");
        all.insert(all.end(), slot.begin(), slot.end());
      }
    }
    barrier();  // the slots are rewritten by the next gather
  }

  void gather_row_bytes(const void* mine, std::size_t row_bytes, const RowPartition& partition,
                        void* global) override {
    if (rank_ == 0) shared_.global_rows = static_cast<unsigned char*>(global);
    barrier();
    // Disjoint rows of rank 0's buffer: no lock needed.
    const std::size_t bytes = static_cast<std::size_t>(partition.count(rank_)) * row_bytes;
    if (bytes > 0)
      std::memcpy(shared_.global_rows + static_cast<std::size_t>(partition.begin(rank_)) * row_bytes, mine, bytes);
    barrier();
  }

 private:
  ThreadShared& shared_;
  int rank_;
};

}  // namespace

void run_rank_threads(int ranks, const RankFunction& body, const char* program, int stuck_exit_status) {
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(ranks), nullptr);
  std::vector<int> devices(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) devices[static_cast<std::size_t>(r)] = r;
  RANKS_NCCL(ncclCommInitAll(comms.data(), ranks, devices.data()));

  ThreadShared shared(ranks);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(ranks));
  int started = 0;
  for (int r = 0; r < ranks; ++r) {
    try {
      threads.emplace_back([&, r] {
        ThreadGroup group(shared, r);
        try {
          body(group, comms[static_cast<std::size_t>(r)], r);
        } catch (const RankAborted&) {
          // another rank failed first and is the one reported
        } catch (const std::exception& error) {
          shared.fail(r, error.what());
        } catch (...) {
          shared.fail(r, "unknown exception");
        }
        shared.finish();
      });
      ++started;
    } catch (const std::system_error& error) {
      shared.fail(r, std::string("could not start the rank's thread: ") + error.what());
      for (int q = r; q < ranks; ++q) ncclCommAbort(comms[static_cast<std::size_t>(q)]);
      break;
    }
  }

  {
    std::unique_lock<std::mutex> lock(shared.mutex);
    shared.changed.wait(lock, [&] { return shared.finished == started || shared.failed_rank >= 0; });
    // After a failure the other ranks stop at their next barrier; one waiting inside NCCL for the failed rank
    // never does, and joining it would hang the program.
    if (!shared.changed.wait_for(lock, std::chrono::seconds(kStuckRankGraceSeconds),
                                 [&] { return shared.finished == started; })) {
      std::fprintf(stderr, "%s: error: rank %d: %s (%d of %d ranks still waiting in a collective after %d s; exiting)\n",
                   program, shared.failed_rank, shared.failure.c_str(), started - shared.finished, ranks,
                   kStuckRankGraceSeconds);
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(stuck_exit_status);
    }
  }
  for (std::thread& thread : threads) thread.join();
  if (shared.failed_rank >= 0) throw Error("rank " + std::to_string(shared.failed_rank) + ": " + shared.failure);
}

#ifdef BCSR24_HAS_MPI
void check_mpi(int status, const char* call, const char* file, int line) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw Error(std::string(call) + " failed: " + text + " (" + file + ":" + std::to_string(line) + ")");
}

MpiGroup::MpiGroup() {
  RANKS_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  RANKS_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
}

void MpiGroup::barrier() { RANKS_MPI(MPI_Barrier(MPI_COMM_WORLD)); }

bool MpiGroup::broadcast(bool value) {
  int flag = value ? 1 : 0;
  RANKS_MPI(MPI_Bcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD));
  return flag != 0;
}

void MpiGroup::gather(const void* mine, std::size_t bytes, std::vector<unsigned char>& all) {
  if (bytes > std::size_t(std::numeric_limits<int>::max()))
    throw SizeLimitError("gather: " + std::to_string(bytes) + " bytes per rank is beyond one MPI message");
  if (rank_ == 0) all.resize(bytes * static_cast<std::size_t>(size_));
  RANKS_MPI(MPI_Gather(mine, static_cast<int>(bytes), MPI_BYTE, rank_ == 0 ? all.data() : nullptr,
                       static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD));
}

void MpiGroup::gather_row_bytes(const void* mine, std::size_t row_bytes, const RowPartition& partition,
                                void* global) {
  if (row_bytes > std::size_t(std::numeric_limits<int>::max()))
    throw SizeLimitError("gather: rows of " + std::to_string(row_bytes) + " bytes are beyond one MPI datatype");
  // One row as the unit, so that the counts stay within int for any matrix of int32 rows.
  MPI_Datatype row_type;
  RANKS_MPI(MPI_Type_contiguous(static_cast<int>(row_bytes), MPI_BYTE, &row_type));
  RANKS_MPI(MPI_Type_commit(&row_type));
  std::vector<int> counts(static_cast<std::size_t>(size_)), displacements(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    counts[static_cast<std::size_t>(r)] = partition.count(r);
    displacements[static_cast<std::size_t>(r)] = partition.begin(r);
  }
  const int status = MPI_Gatherv(mine, partition.count(rank_), row_type, rank_ == 0 ? global : nullptr,
                                 counts.data(), displacements.data(), row_type, 0, MPI_COMM_WORLD);
  MPI_Type_free(&row_type);
  RANKS_MPI(status);
}

void run_mpi_rank(const Session& session, const RankFunction& body) {
  if (session.launch() != Launch::mpi) throw InvalidArgument("run_mpi_rank: the session is not an MPI session");
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (session.is_root()) RANKS_NCCL(ncclGetUniqueId(&id));
  RANKS_MPI(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, MPI_COMM_WORLD));
  const cudaError_t status = cudaSetDevice(session.device());
  if (status != cudaSuccess)
    throw CudaError("cudaSetDevice(" + std::to_string(session.device()) + ") failed: " + cudaGetErrorString(status));
  ncclComm_t comm = nullptr;
  RANKS_NCCL(ncclCommInitRank(&comm, session.ranks(), id, session.process_rank()));
  MpiGroup group;
  body(group, comm, session.device());
}
#endif

}  // namespace bcsr24::ranks
