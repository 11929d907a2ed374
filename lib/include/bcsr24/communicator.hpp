// NcclCommunicator: the caller's NCCL communicator and its place in it, as the distributed operator
// (distributed_operator.hpp) and the solver on several GPUs (solvers.hpp) take it. A plain struct: this header needs
// neither nccl.h nor a library built with NCCL.
#pragma once

struct ncclComm;  // = ncclComm_t without including nccl.h

namespace bcsr24 {

/// A communicator the caller created: an NCCL communicator and this process's (or thread's) place in it. The
/// CUDA device current when an object is built on it must be the communicator's device.
struct NcclCommunicator {
  ncclComm* comm = nullptr;  ///< ncclComm_t
  int rank = 0;
  int size = 1;
};

}  // namespace bcsr24
