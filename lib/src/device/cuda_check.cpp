// Turns a failed CUDA runtime call into a CudaError naming the call, file and line.
#include "device/cuda_check.hpp"

#include <string>

#include "bcsr24/error.hpp"

namespace bcsr24::detail {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  throw CudaError(std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ") in " + call +
                  " at " + file + ":" + std::to_string(line));
}

}  // namespace bcsr24::detail
