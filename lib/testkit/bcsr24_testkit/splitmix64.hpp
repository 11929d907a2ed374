// splitmix64: the one seeded 64-bit generator of the library's internals (reordering hashes, random pattern
// values), the generators of bcsr24_testkit, the tests and the programs. Header-only and not installed: the
// library includes it privately, so it is no part of the public API.
#pragma once

#include <cstdint>
#include <limits>

namespace bcsr24 {

/// The stream's increment, 2^64 / golden ratio (odd, so the counter visits every 64-bit value).
inline constexpr std::uint64_t kSplitMix64Increment = 0x9E3779B97F4A7C15ULL;

/// splitmix64's output function: a bijection of 64-bit words in which every input bit reaches every output bit.
constexpr std::uint64_t splitmix64_mix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Output k (k = 0, 1, ...) of the stream started at `seed`, without running the stream: the generator is a
/// counter, so any element of a seeded sequence can be made alone (and by any thread) and equals the stream's.
constexpr std::uint64_t splitmix64_at(std::uint64_t seed, std::uint64_t k) noexcept {
  return splitmix64_mix(seed + (k + 1) * kSplitMix64Increment);
}

/// Uniform in [0, 1) on the grid of 2^-53 (the top 53 bits; exact in double).
constexpr double splitmix64_unit(std::uint64_t bits) noexcept { return double(bits >> 11) * 0x1p-53; }
/// Uniform in [-1, 1) on the grid of 2^-52 (exact in double).
constexpr double splitmix64_symmetric_unit(std::uint64_t bits) noexcept {
  return double(bits >> 11) * 0x1p-52 - 1.0;
}

/// The stream: next() returns splitmix64_at(seed, 0), splitmix64_at(seed, 1), ... The same sequence with every
/// compiler and standard library (std distributions are not).
struct SplitMix64 {
  std::uint64_t state = 0;

  std::uint64_t next() noexcept { return splitmix64_mix(state += kSplitMix64Increment); }
  /// Uniform in [0, bound), bound >= 1: rejects the incomplete last block of the 64-bit range, so no value is
  /// favoured.
  std::uint64_t below(std::uint64_t bound) noexcept {
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t limit = kMax - kMax % bound;
    for (;;) {
      const std::uint64_t x = next();
      if (x < limit) return x % bound;
    }
  }
  /// Uniform in [-1, 1).
  double symmetric_unit() noexcept { return splitmix64_symmetric_unit(next()); }
};

}  // namespace bcsr24
