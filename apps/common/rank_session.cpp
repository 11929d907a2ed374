// The distributed session of a program: MPI initialisation and finalisation, one CUDA device per rank, and how
// the processes agree on an exit status or abort together.
#include "rank_session.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <cuda_runtime_api.h>

#include "cuda_resources.hpp"
#include "mpi_c_api.hpp"
#include "rank_group.hpp"
#include "bcsr24/error.hpp"

namespace bcsr24::ranks {

#define SESSION_CUDA(call) bench::check_cuda((call), #call, __FILE__, __LINE__)

bool mpi_available() noexcept {
#ifdef BCSR24_HAS_MPI
  return true;
#else
  return false;
#endif
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

Session::Session(Launch launch, int gpus) : launch_(launch) {
  // NVLink multicast (NVLS) must stay off on our machines; an explicit setting in the environment wins.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  if (launch == Launch::threads) {
    if (gpus < 1) throw InvalidArgument("--gpus " + std::to_string(gpus) + ": needs at least one rank");
    ranks_ = gpus;
    return;
  }
#ifdef BCSR24_HAS_MPI
  int initialised = 0;
  RANKS_MPI(MPI_Initialized(&initialised));
  if (!initialised) {
    RANKS_MPI(MPI_Init(nullptr, nullptr));
    mpi_initialised_ = true;
  }
  RANKS_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &process_rank_));
  RANKS_MPI(MPI_Comm_size(MPI_COMM_WORLD, &ranks_));
  if (ranks_ > 1) std::snprintf(error_prefix_, sizeof error_prefix_, "rank %d: ", process_rank_);
#else
  throw NotSupported("built without MPI: --mpi needs a build where CMake found MPI (e.g. Debian's libopenmpi-dev)");
#endif
}

Session::~Session() {
#ifdef BCSR24_HAS_MPI
  if (mpi_initialised_) MPI_Finalize();
#endif
}

void Session::select_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  const std::string why = status == cudaSuccess ? std::string() : std::string(" (") + cudaGetErrorString(status) + ")";
  if (status != cudaSuccess) count = 0;
  auto require_sm80 = [](int device) {
    cudaDeviceProp properties{};
    SESSION_CUDA(cudaGetDeviceProperties(&properties, device));
    const int capability = properties.major * 10 + properties.minor;
    if (capability < 80)
      throw NotSupported("CUDA device " + std::to_string(device) + " (" + properties.name + ") is sm_" +
                         std::to_string(capability) + "; mma.sp and cp.async need sm_80 or newer");
  };
  if (launch_ == Launch::threads) {
    if (count < ranks_)
      throw Error("--gpus " + std::to_string(ranks_) + " needs " +
                  (ranks_ == 1 ? std::string("a CUDA device (device 0)")
                               : std::to_string(ranks_) + " CUDA devices (0 to " + std::to_string(ranks_ - 1) + ")") +
                  "; this machine has " + std::to_string(count) + why);
    for (int device = 0; device < ranks_; ++device) require_sm80(device);
    device_ = 0;
    return;
  }
#ifdef BCSR24_HAS_MPI
  // The ranks on this host, numbered 0.. in world-rank order: each takes device local rank % count.
  MPI_Comm local = MPI_COMM_NULL;
  RANKS_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, process_rank_, MPI_INFO_NULL, &local));
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  if (count == 0)
    throw Error("--mpi: no CUDA device on host " + host_name() + why);
  if (local_size > count)
    throw Error("--mpi: " + std::to_string(local_size) + " ranks on " + host_name() + " but only " +
                std::to_string(count) + " CUDA device(s); NCCL needs one GPU per rank (start at most " +
                std::to_string(count) + " rank(s) per host)");
  device_ = local_rank % count;
  require_sm80(device_);
  SESSION_CUDA(cudaSetDevice(device_));
#endif
}

int Session::agree_on_status(int status) const {
#ifdef BCSR24_HAS_MPI
  if (launch_ == Launch::mpi) RANKS_MPI(MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD));
#endif
  return status;
}

void Session::abort_all_if_mpi(int code) const {
#ifdef BCSR24_HAS_MPI
  // A world of one has nobody waiting: return, and let the destructor finalise MPI.
  if (launch_ == Launch::mpi && ranks_ > 1) {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
#else
  (void)code;
#endif
}

}  // namespace bcsr24::ranks
