// Owners of the CUDA streams and events the library makes for itself (the measured plans' tuner, the halo
// exchange): std::unique_ptr with the CUDA destroy call as its deleter, and the two ways the library creates them.
#pragma once

#include <memory>

#include <cuda_runtime_api.h>

#include "device/cuda_check.hpp"

namespace bcsr24::detail {

struct StreamDestroy {
  void operator()(cudaStream_t stream) const noexcept { cudaStreamDestroy(stream); }
};
struct EventDestroy {
  void operator()(cudaEvent_t event) const noexcept { cudaEventDestroy(event); }
};
using OwnedStream = std::unique_ptr<CUstream_st, StreamDestroy>;
using OwnedEvent = std::unique_ptr<CUevent_st, EventDestroy>;

/// A non-blocking stream (it neither waits for nor delays work on the legacy default stream); `highest_priority`:
/// the device's highest stream priority, else the default one.
/// @throw CudaError
inline OwnedStream make_stream(bool highest_priority = false) {
  int least = 0, greatest = 0;
  if (highest_priority) BCSR24_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t stream = nullptr;
  BCSR24_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
  return OwnedStream(stream);
}

/// An event that can time (`timing`), or one only for ordering work between streams (cudaEventDisableTiming).
/// @throw CudaError
inline OwnedEvent make_event(bool timing = true) {
  cudaEvent_t event = nullptr;
  BCSR24_CUDA_CHECK(cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
  return OwnedEvent(event);
}

}  // namespace bcsr24::detail
