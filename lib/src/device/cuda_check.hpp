// Checked CUDA calls: every runtime call goes through BCSR24_CUDA_CHECK, which throws CudaError with context.
#pragma once

#include <cuda_runtime_api.h>

namespace bcsr24::detail {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);

}  // namespace bcsr24::detail

/// A call of a C API that returns a status, `success` or an error that `thrower(status, text, file, line)` turns into
/// an exception; `text` is the call as written. The one form of BCSR24_CUDA_CHECK and BCSR24_NCCL_CHECK
/// (distributed/nccl_check.hpp).
#define BCSR24_CHECKED_CALL(Status, success, thrower, call, text)  \
  do {                                                            \
    const Status bcsr24_status_ = (call);                         \
    if (bcsr24_status_ != (success))                              \
      thrower(bcsr24_status_, text, __FILE__, __LINE__);          \
  } while (0)

#define BCSR24_CUDA_CHECK(call) \
  BCSR24_CHECKED_CALL(cudaError_t, cudaSuccess, ::bcsr24::detail::throw_cuda_error, call, #call)

/// After a kernel launch: reports launch-configuration errors without synchronising.
#define BCSR24_CUDA_CHECK_LAUNCH() BCSR24_CUDA_CHECK(cudaGetLastError())
