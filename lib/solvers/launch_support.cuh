// Launch helpers of the solver's kernel files (block_kernels.cu, block_space_kernels.cu): the thread-block size,
// the grid of a grid-stride loop, and the error check after each launch.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "bcsr24/error.hpp"

namespace bcsr24::solver::launch {

inline constexpr int kThreads = 256;

/// Throws CudaError naming the kernel when its launch failed.
inline void check_launch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw CudaError(std::string("launch of ") + kernel + " failed: " + cudaGetErrorString(status));
}

/// Grid for a grid-stride loop over `count` elements (enough blocks to fill an H100 several times).
inline unsigned grid_for(std::int64_t count) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((count + kThreads - 1) / kThreads, 1, 4096));
}

}  // namespace bcsr24::solver::launch
