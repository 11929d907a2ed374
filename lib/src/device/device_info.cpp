// query_device: what the current CUDA device is, or why there is none. Never throws.
#include <cuda_runtime_api.h>

#include "bcsr24/device.hpp"

namespace bcsr24 {

DeviceInfo query_device() {
  DeviceInfo info;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    info.reason = status != cudaSuccess ? std::string("no CUDA device (") + cudaGetErrorString(status) + ")"
                                        : std::string("no CUDA device");
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return info;
  }
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    info.reason = "cannot query the CUDA device";
    cudaGetLastError();
    return info;
  }
  info.name = prop.name;
  info.compute_capability = prop.major * 10 + prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.l2_bytes = prop.l2CacheSize;
  info.global_memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  if (info.compute_capability < 80) {
    info.reason = "device " + info.name + " is sm_" + std::to_string(info.compute_capability) +
                  "; bcsr24 needs sm_80 or newer";
    return info;
  }
  info.available = true;
  return info;
}

}  // namespace bcsr24
