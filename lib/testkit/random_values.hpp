// Seeded random numbers whose sequence does not depend on the standard library (shared by the generators).
#pragma once

#include <cstdint>
#include <random>

namespace bcsr24::detail {

/// Uniform integer in [0, bound), bound >= 1. Written out (rejection on the engine's raw 64-bit output)
/// instead of std::uniform_int_distribution, whose algorithm the standard leaves open: a given seed then
/// produces the same matrix with every standard library.
inline std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t bound) {
  const std::uint64_t reject_below = (0 - bound) % bound;  // 2^64 mod bound: the biased low tail
  for (;;) {
    const std::uint64_t r = rng();
    if (r >= reject_below) return r % bound;
  }
}

/// Uniform in [-1, 1) on the grid of 2^-52, never exactly 0 (a zero would not be a nonzero of the tile).
inline double uniform_nonzero(std::mt19937_64& rng) {
  for (;;) {
    const double v = static_cast<double>(rng() >> 11) * 0x1p-52 - 1.0;  // exact: 53-bit integer times 2^-52
    if (v != 0.0) return v;
  }
}

}  // namespace bcsr24::detail
