// BCSR24_NCCL_CHECK: every NCCL call of the distributed layer, turned into a CudaError with the call, file, line
// and NCCL's reason (the NCCL counterpart of BCSR24_CUDA_CHECK).
#pragma once

#include <nccl.h>

#include <string>

#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"

namespace bcsr24::distributed {

[[noreturn]] inline void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed (" + file + ":" + std::to_string(line) +
                  "): " + ncclGetErrorString(status));
}

}  // namespace bcsr24::distributed

#define BCSR24_NCCL_CHECK(call) \
  BCSR24_CHECKED_CALL(ncclResult_t, ncclSuccess, ::bcsr24::distributed::throw_nccl_error, call, #call)
