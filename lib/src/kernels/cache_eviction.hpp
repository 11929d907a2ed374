// A read of a buffer larger than L2, to evict what earlier work left there: the measured plans' tuner times each
// candidate after one, as bench_spmm times every product (device/plan_tuner.cpp).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

namespace bcsr24::kernels {

/// Enqueues a read of `bytes` (a multiple of 16) at `buffer` on `stream`; the values read are not used.
/// @throw CudaError where the launch fails
void enqueue_l2_eviction(const void* buffer, std::size_t bytes, cudaStream_t stream);

}  // namespace bcsr24::kernels
