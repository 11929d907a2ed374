// CPU emulation of the tile kernel's arithmetic (tile_emulation.hpp).
#include "tile_emulation.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "format/stored_value.hpp"
#include "format/tile_codec.hpp"

namespace bcsr24::soak {

namespace {

constexpr int kWarps = 4;  // kernels::kTileKernelWarps

float round_to_fp16(float x) { return fp16_to_float(float_to_fp16(x)); }

/// b_block_exponent (spmm_kernel.cuh): puts the block's largest magnitude in [2^14, 2^15), clamped to +-126.
int block_exponent(float max_abs) {
  std::uint32_t bits;
  std::memcpy(&bits, &max_abs, sizeof bits);
  const int e = static_cast<int>((bits >> 23) & 0xFFu) - 127 - 14;
  return std::clamp(e, -126, 126);
}

/// One mma's contribution to an fp32 accumulator: the products are exact, their sum with d rounded once.
float mma_add(float d, const double* a, const double* b, int begin, int end) {
  double sum = d;
  for (int c = begin; c < end; ++c) sum += a[c] * b[c];
  return static_cast<float>(sum);
}

}  // namespace

std::vector<float> emulate_tile_product(const Bcsr24Matrix& a, std::int32_t n, bool f32_b, const std::vector<float>& b32,
                                        const std::vector<fp16_t>& b16, float alpha) {
  const bool split = a.precision == Precision::split;
  std::vector<float> c(static_cast<std::size_t>(a.rows) * static_cast<std::size_t>(n), 0.0f);
  detail::TileElements tile{}, tile_lo{};
  tile_lo.fill(0);
  const float scaled_alpha = std::ldexp(alpha, a.scaling.exponent);  // SpmmPlan::Impl::run's k.alpha
  for (std::int32_t tr = 0; tr < a.tile_rows; ++tr) {
    // acc[warp][row in band][column]
    std::vector<float> acc(static_cast<std::size_t>(kWarps) * kTileRows * static_cast<std::size_t>(n), 0.0f);
    const auto run_list = [&](const TileList& list, bool sparse24) {
      const std::int32_t begin = list.row_ptr[static_cast<std::size_t>(tr)];
      const std::int32_t end = list.row_ptr[static_cast<std::size_t>(tr) + 1];
      for (std::int32_t t = begin; t < end; ++t) {
        const int warp = (t - begin) % kWarps;
        detail::unpack_list_tile(list, sparse24, t, tile, tile_lo);
        for (std::int32_t j = 0; j < n; ++j) {
          // The B block of this tile and column, staged as the kernel stages it.
          double b_hi[kTileCols], b_lo[kTileCols];
          float x[kTileCols];
          float max_abs = 0.0f;
          for (int col = 0; col < kTileCols; ++col) {
            const std::int64_t k = list.b_row(t, col, a.cols);
            const std::size_t at = static_cast<std::size_t>(k) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j);
            x[col] = k < 0 ? 0.0f : (f32_b ? b32[at] : fp16_to_float(b16[at]));
            max_abs = std::max(max_abs, std::fabs(x[col]));
          }
          int e = 0;
          if (f32_b) {
            e = block_exponent(max_abs);
            const float down = std::ldexp(1.0f, -e);
            for (int col = 0; col < kTileCols; ++col) {
              const float x0 = x[col] * down;
              const float hi = round_to_fp16(x0);
              b_hi[col] = hi;
              b_lo[col] = split ? round_to_fp16((x0 - hi) * float(1 << kSplitLoShift)) : 0.0;
            }
          } else {
            for (int col = 0; col < kTileCols; ++col) b_hi[col] = x[col], b_lo[col] = 0.0;
          }
          const int step = sparse24 ? 32 : 16;  // tile columns per mma
          for (int r = 0; r < kTileRows; ++r) {
            double a_hi[kTileCols], a_lo[kTileCols];
            for (int col = 0; col < kTileCols; ++col) {
              a_hi[col] = detail::fp16_bits_to_double(tile[static_cast<std::size_t>(r * kTileCols + col)]);
              a_lo[col] = split ? detail::fp16_bits_to_double(tile_lo[static_cast<std::size_t>(r * kTileCols + col)]) : 0.0;
            }
            float& out = acc[(static_cast<std::size_t>(warp) * kTileRows + r) * static_cast<std::size_t>(n) +
                             static_cast<std::size_t>(j)];
            if (!f32_b) {
              for (int s = 0; s < kTileCols; s += step) out = mma_add(out, a_hi, b_hi, s, s + step);
              continue;
            }
            float tile_sum = 0.0f, low = 0.0f;
            for (int s = 0; s < kTileCols; s += step) tile_sum = mma_add(tile_sum, a_hi, b_hi, s, s + step);
            if (split) {
              for (int s = 0; s < kTileCols; s += step) low = mma_add(low, a_lo, b_hi, s, s + step);
              for (int s = 0; s < kTileCols; s += step) low = mma_add(low, a_hi, b_lo, s, s + step);
              tile_sum = std::fma(low, 1.0f / float(1 << kSplitLoShift), tile_sum);
            }
            out = std::fma(tile_sum, std::ldexp(1.0f, e), out);
          }
        }
      }
    };
    run_list(a.sparse24, true);
    run_list(a.dense, false);
    // Cross-warp reduction in warp order, then the row's multiplier.
    for (int r = 0; r < kTileRows; ++r) {
      const std::int32_t row = a.original_row(std::int64_t{tr} * kTileRows + r);
      if (row < 0) continue;
      const int row_e = a.row_exponent.empty() ? 0 : a.row_exponent[static_cast<std::size_t>(row)];
      const float multiplier = std::ldexp(scaled_alpha, row_e);
      const bool multiplier_normal = scaled_alpha == 0.0f || (std::fabs(multiplier) >= 1.17549435e-38f &&
                                                              std::fabs(multiplier) <= 3.40282347e+38f);
      for (std::int32_t j = 0; j < n; ++j) {
        float sum = 0.0f;
        for (int w = 0; w < kWarps; ++w)
          sum += acc[(static_cast<std::size_t>(w) * kTileRows + r) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)];
        c[static_cast<std::size_t>(row) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)] =
            multiplier_normal ? sum * multiplier : std::ldexp(sum, row_e) * scaled_alpha;
      }
    }
  }
  return c;
}

}  // namespace bcsr24::soak
