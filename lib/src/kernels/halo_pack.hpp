// Kernels of the distributed operator's halo exchange: gather the B rows a peer needs into a contiguous send
// buffer, and C = beta * C for a rank whose local part has no entries.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace bcsr24::kernels {

/// dst row i = src row rows[i] (i < count), columns 0 .. n-1; element_bytes is 2, 4 or 8. dst's padding columns
/// (n .. dst_ld-1) are left as they are. Enqueued on `stream`; nothing for count == 0 or n == 0.
void launch_pack_rows(const void* src, std::int64_t src_ld, const std::int32_t* rows, std::int32_t count,
                      std::int32_t n, void* dst, std::int64_t dst_ld, int element_bytes, cudaStream_t stream);

/// C = beta * C over rows x n (beta == 0 writes zeros without reading C, which may hold NaN).
void launch_scale_rows(float* c, std::int64_t ldc, std::int32_t rows, std::int32_t n, float beta,
                       cudaStream_t stream);

}  // namespace bcsr24::kernels
