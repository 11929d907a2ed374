// Device allocations: the one place bcsr24 asks CUDA for memory, so that running out is always the typed
// OutOfMemory error, checked up front where the size is known, and injectable by tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace bcsr24::detail {

/// cudaMalloc of `bytes` (> 0).
/// @throw OutOfMemory when the device (or a test hook) cannot give them; CudaError on other failures.
void* device_allocate(std::size_t bytes);
/// cudaFree; never throws.
void device_free(void* ptr) noexcept;

/// Refuses, before anything is allocated, work that needs more device memory than is free.
/// @param what names what the bytes are for, in the error message
/// @throw OutOfMemory naming `what`, the bytes needed and the bytes free.
void check_device_memory(std::int64_t bytes, const std::string& what);

/// Waits until the copies and memsets bcsr24 issued on the legacy default stream (cudaMemcpy from pageable host
/// memory, cudaMemset) have landed. Both may return before the device has the bytes, and a caller's stream
/// created with cudaStreamNonBlocking is not ordered after the legacy stream: without this wait a product on such
/// a stream could read a list or counter before it is written. Called once per buffer upload and per plan.
/// @throw CudaError if an earlier asynchronous operation failed.
void wait_for_device_writes();

/// "512 bytes", "12.0 KiB", "3.5 MiB", "1.25 GiB": sizes in error messages.
std::string byte_size_text(std::int64_t bytes);

/// Test hook: from now on, allocations fail with OutOfMemory once `bytes` more have been allocated in total (the
/// up-front checks count against it too); a negative value removes the limit (the default). Process-wide.
void set_device_allocation_budget(std::int64_t bytes) noexcept;
/// Test hook: the k-th device_allocate call from now on (k >= 1) fails with OutOfMemory, as if cudaMalloc had
/// failed, and nothing else does; k <= 0 removes a pending failure (the default). Process-wide; the up-front checks
/// are not affected, so every allocation of an upload or a plan can be made to fail in turn.
void fail_device_allocation_at(std::int64_t k) noexcept;
/// Test hooks: device_allocate calls so far (successful or not), and allocations made by device_allocate and
/// not yet given back to device_free (a leak check that does not depend on the driver's memory accounting).
std::int64_t device_allocation_calls() noexcept;
std::int64_t live_device_allocations() noexcept;

}  // namespace bcsr24::detail
