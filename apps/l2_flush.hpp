// L2 eviction between benchmark runs (see l2_flush.cu).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

namespace bcsr24::bench {

/// Reads `bytes` of `buffer` (a device allocation, 16-byte aligned) on `stream`; `sink` is a device word.
void flush_l2(const void* buffer, std::size_t bytes, unsigned* sink, cudaStream_t stream);

}  // namespace bcsr24::bench
