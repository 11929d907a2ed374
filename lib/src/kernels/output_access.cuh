// Reading and writing elements of C in its output type (fp32, or fp16 bits): one at a time, or 2, 4 or 8 in one
// access; and the per-row multiplier that undoes row scaling on the way out. Shared by the product kernels.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "device/plan_choices.hpp"
#include "kernels/output_addends.hpp"

namespace bcsr24::kernels {

/// The ElementType of a kernel's C++ output type (float or __half).
template <typename OutT>
constexpr ElementType output_type_of() {
  static_assert(std::is_same_v<OutT, float> || std::is_same_v<OutT, __half>, "C is fp32 or fp16");
  return std::is_same_v<OutT, __half> ? ElementType::f16 : ElementType::f32;
}

/// 2^e as a float, for -126 <= e <= 127 (built from the bits: exact, no libm call).
__device__ __forceinline__ float exp2_int(int e) { return __int_as_float((127 + e) << 23); }

/// x * 2^e: one multiplication when 2^e is a normal float (every row exponent of a matrix whose values lie within
/// fp32's range), ldexpf beyond.
__device__ __forceinline__ float scale_by_power_of_two(float x, int e) {
  return e >= -126 && e <= 127 ? x * exp2_int(e) : ldexpf(x, e);
}

/// The epilogue's multiplier of a row whose stored values are A * 2^-e: alpha * 2^e, so that undoing the row
/// scale costs nothing beyond the alpha multiplication every row makes anyway. When alpha * 2^e is exact (a
/// normal float, or alpha = 0), (alpha * 2^e) * sum is one rounding of the exact alpha * sum * 2^e. Otherwise the
/// result is NaN, and the epilogue takes the two-step path alpha * (sum * 2^e) for that row.
__device__ __forceinline__ float row_multiplier(float alpha, int e) {
  if (alpha == 0.0f) return 0.0f;
  const float m = scale_by_power_of_two(alpha, e);
  return fabsf(m) >= 1.17549435e-38f && fabsf(m) <= 3.40282347e+38f ? m : __int_as_float(0x7fc00000);
}

/// v[e] += scale_t D_t[row, col0 + e] for each addend t, e < kCount, col0 + e < n (the epilogue's extra terms,
/// after alpha and before beta C). Four values per 16-byte load where D's row allows it.
template <int kCount>
__device__ __forceinline__ void add_output_addends(const OutputAddends& a, std::int64_t row, int col0, int n,
                                                   float (&v)[kCount]) {
#pragma unroll
  for (int t = 0; t < kMaxOutputAddends; ++t) {
    if (t >= a.count) break;
    const float* d = a.values[t] + row * a.ld[t] + col0;
    const float s = a.scale[t];
    if (kCount % 4 == 0 && col0 + kCount <= n && reinterpret_cast<std::uintptr_t>(d) % 16 == 0) {
#pragma unroll
      for (int q = 0; q < kCount / 4; ++q) {
        const float4 x = reinterpret_cast<const float4*>(d)[q];
        v[4 * q] += s * x.x;
        v[4 * q + 1] += s * x.y;
        v[4 * q + 2] += s * x.z;
        v[4 * q + 3] += s * x.w;
      }
    } else {
#pragma unroll
      for (int e = 0; e < kCount; ++e)
        if (col0 + e < n) v[e] += s * d[e];
    }
  }
}

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


/// The register type of one access to 4, 8 or 16 bytes of fp16 outputs.
template <int kBytes>
struct HalfAccess;
template <>
struct HalfAccess<4> {
  using Bits = unsigned;
};
template <>
struct HalfAccess<8> {
  using Bits = uint2;
};
template <>
struct HalfAccess<16> {
  using Bits = uint4;
};

/// kCount consecutive outputs, p aligned to kCount elements (16 bytes for 8). One access for fp16 (4, 8 or 16
/// bytes) and for fp32 up to 4 outputs (8 or 16 bytes); fp32 at 8 outputs is two 16-byte accesses.
template <int kCount, typename OutT>
__device__ __forceinline__ void load_outputs(const OutT* p, float (&v)[kCount]) {
  static_assert(kCount == 2 || kCount == 4 || kCount == 8, "vector accesses of 2, 4 or 8 outputs");
  if constexpr (std::is_same_v<OutT, float> && kCount == 2) {
    const float2 q = *reinterpret_cast<const float2*>(p);
    v[0] = q.x;
    v[1] = q.y;
  } else if constexpr (std::is_same_v<OutT, float>) {
#pragma unroll
    for (int c = 0; c < kCount / 4; ++c) {
      const float4 q = reinterpret_cast<const float4*>(p)[c];
      v[4 * c] = q.x;
      v[4 * c + 1] = q.y;
      v[4 * c + 2] = q.z;
      v[4 * c + 3] = q.w;
    }
  } else {
    using Bits = typename HalfAccess<kCount * 2>::Bits;
    const Bits bits = *reinterpret_cast<const Bits*>(p);
    const __half2* h = reinterpret_cast<const __half2*>(&bits);
#pragma unroll
    for (int q = 0; q < kCount / 2; ++q) {
      const float2 f = __half22float2(h[q]);
      v[2 * q] = f.x;
      v[2 * q + 1] = f.y;
    }
  }
}
template <int kCount, typename OutT>
__device__ __forceinline__ void store_outputs(OutT* p, const float (&v)[kCount]) {
  static_assert(kCount == 2 || kCount == 4 || kCount == 8, "vector accesses of 2, 4 or 8 outputs");
  if constexpr (std::is_same_v<OutT, float> && kCount == 2) {
    *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
  } else if constexpr (std::is_same_v<OutT, float>) {
#pragma unroll
    for (int c = 0; c < kCount / 4; ++c)
      reinterpret_cast<float4*>(p)[c] = make_float4(v[4 * c], v[4 * c + 1], v[4 * c + 2], v[4 * c + 3]);
  } else {
    using Bits = typename HalfAccess<kCount * 2>::Bits;
    Bits bits;
    __half2* h = reinterpret_cast<__half2*>(&bits);
#pragma unroll
    for (int q = 0; q < kCount / 2; ++q) h[q] = __floats2half2_rn(v[2 * q], v[2 * q + 1]);
    *reinterpret_cast<Bits*>(p) = bits;
  }
}

}  // namespace bcsr24::kernels
