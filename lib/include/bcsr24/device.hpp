// The CUDA device bcsr24 would run on: what it is, or why there is none. No CUDA headers needed.
#pragma once

#include <cstdint>
#include <string>

namespace bcsr24 {

/// Properties of the current CUDA device, or available == false when there is none usable.
struct DeviceInfo {
  bool available = false;
  std::string name;
  int compute_capability = 0;  ///< e.g. 90
  int multiprocessors = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t global_memory_bytes = 0;
  std::string reason;  ///< why not available
};

/// The device current on the calling thread. Never throws; a machine without a driver or device, or with a device
/// older than compute capability 8.0, reports available == false and says why.
DeviceInfo query_device();

}  // namespace bcsr24
