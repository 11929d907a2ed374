// Device allocations: the one place bcsr24 asks CUDA for memory, so that running out is always the typed
// OutOfMemory error, checked up front where the size is known, and injectable by tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace bcsr24::detail {

/// cudaMalloc of `bytes` (> 0).
/// @throw OutOfMemory when the device (or the test budget) cannot give them; CudaError on other failures.
void* device_allocate(std::size_t bytes);
/// cudaFree; never throws.
void device_free(void* ptr) noexcept;

/// Refuses, before anything is allocated, work that needs more device memory than is free.
/// @param what names what the bytes are for, in the error message
/// @throw OutOfMemory naming `what`, the bytes needed and the bytes free.
void check_device_memory(std::int64_t bytes, const std::string& what);

/// Test hook: from now on, allocations fail with OutOfMemory once `bytes` more have been allocated in total (the
/// up-front checks count against it too); a negative value removes the limit (the default). Process-wide.
void set_device_allocation_budget(std::int64_t bytes) noexcept;

}  // namespace bcsr24::detail
