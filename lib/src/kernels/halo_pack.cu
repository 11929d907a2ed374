#include "kernels/halo_pack.hpp"

#include "device/cuda_check.hpp"

namespace bcsr24::kernels {

namespace {

constexpr int kThreads = 256;

/// One thread per element; consecutive threads take consecutive columns of a row, so both sides are coalesced.
template <typename T>
__global__ void pack_rows_kernel(const T* __restrict__ src, std::int64_t src_ld, const std::int32_t* __restrict__ rows,
                                 std::int64_t elements, std::int32_t n, T* __restrict__ dst, std::int64_t dst_ld) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < elements;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = e / n;
    const std::int32_t j = static_cast<std::int32_t>(e - i * n);
    dst[i * dst_ld + j] = src[std::int64_t(rows[i]) * src_ld + j];
  }
}

__global__ void scale_rows_kernel(float* c, std::int64_t ldc, std::int64_t elements, std::int32_t n, float beta) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < elements;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = e / n;
    float* out = c + i * ldc + (e - i * n);
    *out = beta == 0.0f ? 0.0f : beta * *out;
  }
}

int blocks_for(std::int64_t elements) {
  const std::int64_t blocks = (elements + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 ? blocks : 65535);  // grid-stride beyond
}

}  // namespace

void launch_pack_rows(const void* src, std::int64_t src_ld, const std::int32_t* rows, std::int32_t count,
                      std::int32_t n, void* dst, std::int64_t dst_ld, int element_bytes, cudaStream_t stream) {
  const std::int64_t elements = std::int64_t(count) * n;
  if (elements == 0) return;
  if (element_bytes == 8)
    pack_rows_kernel<<<blocks_for(elements), kThreads, 0, stream>>>(
        static_cast<const double*>(src), src_ld, rows, elements, n, static_cast<double*>(dst), dst_ld);
  else if (element_bytes == 4)
    pack_rows_kernel<<<blocks_for(elements), kThreads, 0, stream>>>(
        static_cast<const float*>(src), src_ld, rows, elements, n, static_cast<float*>(dst), dst_ld);
  else
    pack_rows_kernel<<<blocks_for(elements), kThreads, 0, stream>>>(
        static_cast<const std::uint16_t*>(src), src_ld, rows, elements, n, static_cast<std::uint16_t*>(dst), dst_ld);
  BCSR24_CUDA_CHECK_LAUNCH();
}

void launch_scale_rows(float* c, std::int64_t ldc, std::int32_t rows, std::int32_t n, float beta,
                       cudaStream_t stream) {
  const std::int64_t elements = std::int64_t(rows) * n;
  if (elements == 0) return;
  scale_rows_kernel<<<blocks_for(elements), kThreads, 0, stream>>>(c, ldc, elements, n, beta);
  BCSR24_CUDA_CHECK_LAUNCH();
}

}  // namespace bcsr24::kernels
