// How a program's distributed run starts: threads of this process (--gpus P) or MPI processes (--mpi), and which
// CUDA device each rank takes. Shared by spmm_run and bcsr24_solve; built only with NCCL (the launchers that use a
// session are in rank_group.hpp). No NCCL, MPI or CUDA types here.
#pragma once

#include <string>

namespace bcsr24::ranks {

/// How the ranks are started.
enum class Launch {
  threads,  ///< --gpus P: one process, one host thread per GPU (devices 0..P-1), ncclCommInitAll
  mpi,      ///< --mpi: one process per rank (mpirun -np P), ncclCommInitRank with an id broadcast over MPI
};

/// True when this program was built with the MPI launcher (BCSR24_HAS_MPI).
bool mpi_available() noexcept;

/// This host's name, or "?" (for reports and error messages).
std::string host_name();

/// This process's part in a distributed run. Made before the matrix is read, so that only the root process
/// (rank 0) prints and checks. In MPI mode the constructor calls MPI_Init (unless MPI is initialised already) and
/// the destructor MPI_Finalize. Either constructor sets NCCL_NVLS_ENABLE=0 unless the environment sets it: NVLink
/// multicast must stay off on our machines.
class Session {
 public:
  /// @param gpus the rank count for Launch::threads (>= 1); not used for Launch::mpi (the MPI world's size).
  /// @throw InvalidArgument for gpus < 1 with threads; NotSupported for Launch::mpi in a build without MPI.
  Session(Launch launch, int gpus);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Chooses this process's CUDA device(s) and checks them: threads: devices 0..P-1 must exist; MPI: the device
  /// local rank % device count, with at most one rank per device on each host (made current). Each must be sm_80
  /// or newer.
  /// @throw bcsr24::Error naming what is missing (e.g. "--gpus 2 needs 2 CUDA devices ...").
  void select_devices();

  Launch launch() const noexcept { return launch_; }
  /// Ranks in all (P, or the MPI world's size).
  int ranks() const noexcept { return ranks_; }
  /// This process's rank (0 in thread mode: the rank threads are numbered by the launcher).
  int process_rank() const noexcept { return process_rank_; }
  bool is_root() const noexcept { return process_rank_ == 0; }
  /// The CUDA device of this process's rank in MPI mode (after select_devices); 0 in thread mode.
  int device() const noexcept { return device_; }

  /// The root's exit status, on every process (so that mpirun reports what rank 0 decided).
  int agree_on_status(int status) const;
  /// After an error on this process: in MPI mode with more than one rank, aborts every process with `code`
  /// (MPI_Abort; a rank that stops alone would leave the others waiting in a collective); otherwise returns.
  void abort_all_if_mpi(int code) const;
  /// "rank r: " in MPI mode with more than one rank (to prefix this process's error messages); else "".
  const char* error_prefix() const noexcept { return error_prefix_; }

 private:
  Launch launch_;
  int ranks_ = 1;
  int process_rank_ = 0;
  int device_ = 0;
  bool mpi_initialised_ = false;
  char error_prefix_[32] = {};
};

}  // namespace bcsr24::ranks
