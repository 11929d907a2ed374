// Checked CUDA calls: every runtime call goes through BCSR24_CUDA_CHECK, which throws CudaError with context.
#pragma once

#include <cuda_runtime_api.h>

namespace bcsr24::detail {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);

}  // namespace bcsr24::detail

#define BCSR24_CUDA_CHECK(call)                                                  \
  do {                                                                           \
    const cudaError_t bcsr24_status_ = (call);                                   \
    if (bcsr24_status_ != cudaSuccess)                                           \
      ::bcsr24::detail::throw_cuda_error(bcsr24_status_, #call, __FILE__, __LINE__); \
  } while (0)

/// After a kernel launch: reports launch-configuration errors without synchronising.
#define BCSR24_CUDA_CHECK_LAUNCH() BCSR24_CUDA_CHECK(cudaGetLastError())
