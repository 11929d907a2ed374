// A one-thread kernel that holds a stream until a word in device memory is set (by work on another stream) or a
// time limit passes, so that the host can queue a batch of short launches behind it and have them run back to
// back: timed without the host's launch gaps in them. The measured plans' tuner uses it (device/plan_tuner.cpp).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace bcsr24::kernels {

/// Enqueues the hold on `stream`: it ends once the word at `release` (device memory, set by work on another
/// stream) is nonzero, or `limit_ns` after it started, whichever comes first, so a release that never comes costs
/// a bounded wait, never a hang. Not for a round that launches a kernel for the first time in the process: loading
/// a kernel waits for the device's running work, the hold included.
/// @throw CudaError where the launch fails
void enqueue_stream_hold(const volatile std::uint32_t* release, std::uint64_t limit_ns, cudaStream_t stream);

}  // namespace bcsr24::kernels
