// Reading and writing one element of C in its output type (fp32, or fp16 bits), shared by the tile and CSR kernels.
#pragma once

#include <cuda_fp16.h>

namespace bcsr24::kernels {

template <typename OutT>
__device__ __forceinline__ float load_output(const OutT* p);
template <>
__device__ __forceinline__ float load_output<float>(const float* p) { return *p; }
template <>
__device__ __forceinline__ float load_output<__half>(const __half* p) { return __half2float(*p); }
template <typename OutT>
__device__ __forceinline__ void store_output(OutT* p, float v);
template <>
__device__ __forceinline__ void store_output<float>(float* p, float v) { *p = v; }
template <>
__device__ __forceinline__ void store_output<__half>(__half* p, float v) { *p = __float2half_rn(v); }

}  // namespace bcsr24::kernels
