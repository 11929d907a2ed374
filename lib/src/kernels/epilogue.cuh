// The epilogue every product kernel ends with (tiles, band groups, CSR, vectors), for a run of kCount consecutive
// outputs of one row of C: undo the row's scale and apply alpha, add the output addends, add beta C (never reading C
// when beta == 0: it may hold NaN or garbage), and store in C's type. One component, so that the kernels cannot come
// to disagree on what C = alpha A B (+ addends) + beta C means.
#pragma once

#include <cstdint>

#include "kernels/output_access.cuh"
#include "kernels/output_addends.hpp"

namespace bcsr24::kernels {

/// Where and how a run of outputs goes: `out` is &C[row, col0]; `vector_access` says the run may use one wide access
/// (out aligned to kCount elements, 16 bytes for 8), which it does when all kCount columns lie inside n.
/// `multiplier` is row_multiplier(alpha, exponent) for a row stored as A * 2^-exponent (exponent 0 without row
/// scaling): one multiplication per value, or, where it is NaN (alpha * 2^e is not a normal float), alpha * (v * 2^e).
struct OutputRun {
  std::int64_t row = 0;
  int col0 = 0;
  float multiplier = 1.0f;
  int exponent = 0;
  bool vector_access = false;
};

/// The scale step alone: v *= run.multiplier, or alpha * (v * 2^exponent) where the multiplier is NaN.
template <int kCount>
__device__ __forceinline__ void scale_output_run(const OutputRun& run, float alpha, float (&v)[kCount]) {
  if (run.multiplier == run.multiplier) {
#pragma unroll
    for (int e = 0; e < kCount; ++e) v[e] *= run.multiplier;
  } else {
#pragma unroll
    for (int e = 0; e < kCount; ++e) v[e] = alpha * scale_by_power_of_two(v[e], run.exponent);
  }
}

/// The rest, for values already scaled (alpha A B): add the output addends, add beta C (C never read when
/// beta == 0) and store, with one wide access where run.vector_access allows it. run.multiplier is not used.
template <int kCount, typename OutT>
__device__ __forceinline__ void store_output_run(OutT* out, const OutputRun& run, int n, float beta,
                                                 const OutputAddends& addends, float (&v)[kCount]) {
  add_output_addends<kCount>(addends, run.row, run.col0, n, v);
  if constexpr (kCount > 1) {
    if (run.vector_access && run.col0 + kCount <= n) {
      if (beta != 0.0f) {
        float old[kCount];
        load_outputs<kCount, OutT>(out, old);
#pragma unroll
        for (int e = 0; e < kCount; ++e) v[e] += beta * old[e];
      }
      store_outputs<kCount, OutT>(out, v);
      return;
    }
  }
#pragma unroll
  for (int e = 0; e < kCount; ++e) {
    if (run.col0 + e >= n) break;
    store_output<OutT>(out + e, beta == 0.0f ? v[e] : v[e] + beta * load_output<OutT>(out + e));
  }
}

/// The whole epilogue: scale_output_run, then store_output_run.
template <int kCount, typename OutT>
__device__ __forceinline__ void write_output_run(OutT* out, const OutputRun& run, int n, float alpha, float beta,
                                                 const OutputAddends& addends, float (&v)[kCount]) {
  scale_output_run<kCount>(run, alpha, v);
  store_output_run<kCount, OutT>(out, run, n, beta, addends, v);
}

}  // namespace bcsr24::kernels
