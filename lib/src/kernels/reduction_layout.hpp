// The layout of the tile kernel's cross-warp reduction buffer, shared by the kernel and its CPU test: each warp's
// 16 x slice fp32 sums, row-major, with the columns of row r XOR-ed by reduction_swizzle(r).
#pragma once

#include "kernels/host_device.hpp"

namespace bcsr24::kernels {

/// Why a swizzle: a warp stores its accumulators as float2 at (row g or g + 8, column 8j + 2t) for lanes 4g + t.
/// Unswizzled, every g of a half-warp hits the same banks when a row is a multiple of 32 words long (8-way
/// conflicts with scalar stores: 2048 shared-memory wavefronts per block at 64 columns, about as many as the whole
/// main loop of a mesh band). XOR-ing the column by a multiple of 8 (so float2 and float4 groups stay whole) puts
/// the 4 rows of a half-warp into 4 different 8-bank groups: one 32-bank line holds 1, 2 or 4 rows at 32+, 16 or
/// 8 columns. The epilogue's float4 reads of 8 consecutive quads still cover 32 distinct banks.
/// test/test_reduction_layout.cpp checks both claims for every slice width.
template <int kSliceWidth>
BCSR24_HOST_DEVICE constexpr int reduction_swizzle(int row) {
  if constexpr (kSliceWidth >= 32) {
    return 8 * (row & 3);
  } else if constexpr (kSliceWidth == 16) {
    return 8 * ((row >> 1) & 1);
  } else {
    return 0;
  }
}

/// Word offset, inside one warp's buffer, of element (row, col) of the slice.
template <int kSliceWidth>
BCSR24_HOST_DEVICE constexpr int reduction_offset(int row, int col) {
  return row * kSliceWidth + (col ^ reduction_swizzle<kSliceWidth>(row));
}

}  // namespace bcsr24::kernels
