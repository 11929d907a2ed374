// Extra terms of an epilogue: C = alpha A B + sum_t scale_t D_t + beta C, each D_t row-major fp32 of C's shape
// with its own leading dimension, read at the C row and column being written (SpmmPlan::run's OutputAddend).
// Host and device see the same struct; the kernels' parameter blocks carry it by value.
#pragma once

#include <cstdint>

namespace bcsr24::kernels {

inline constexpr int kMaxOutputAddends = 2;

struct OutputAddends {
  const float* values[kMaxOutputAddends] = {};
  std::int64_t ld[kMaxOutputAddends] = {};
  float scale[kMaxOutputAddends] = {};
  int count = 0;
};

}  // namespace bcsr24::kernels
