// A CPU emulation of the tile kernel's arithmetic (kernels/spmm_kernel.cuh: compute_tile, the cross-warp
// reduction and the epilogue) on the host tile lists, for the soak's diagnosis of results outside their bounds:
// where the emulation stays inside the bound and the GPU does not, the GPU departs from the arithmetic the bound
// models; where the emulation is outside too, the algorithm is.
//
// Modelled: the split kernel's order (the 2:4 list, then the dense list, each shared over the warps tile by tile,
// warps' partial sums added in warp order); fp32 B staged per 32-row block and column with the power-of-two scale
// that puts the block's largest magnitude in [2^14, 2^15) (fp16 mode: one fp16 value; split: hi + 2^-11 lo); the
// per-tile sum scaled back with an fma; one mma per 16 (dense) or 32 (2:4) tile columns whose products are exact
// and whose sum with the accumulator is rounded once to fp32, to nearest; the row's multiplier alpha 2^e in fp32.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/half.hpp"
#include "format/bcsr24_matrix.hpp"

namespace bcsr24::soak {

/// alpha * A * B (no beta) as the tile kernel would compute it, rows x n in the caller's row order, ld n.
/// b32: fp32 B (used when f32_b), b16: 16-bit B as given (otherwise); both cols x n, ld n. fp16 and split only.
std::vector<float> emulate_tile_product(const Bcsr24Matrix& a, std::int32_t n, bool f32_b, const std::vector<float>& b32,
                                        const std::vector<fp16_t>& b16, float alpha);

}  // namespace bcsr24::soak
