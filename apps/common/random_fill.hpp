// The programs' random inputs (B, C0): fp16 values from the shared splitmix64 generator, so that element i of a
// seeded array can also be made alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bcsr24/half.hpp"
#include "bcsr24_testkit/splitmix64.hpp"

namespace bcsr24::apps {

/// Element i of random_fp16(count, seed): uniform in [-1, 1), rounded to fp16 (what the GPU reads, exactly).
inline fp16_t random_fp16_at(std::uint64_t seed, std::uint64_t i) {
  return double_to_fp16(splitmix64_symmetric_unit(splitmix64_at(seed, i)));
}

/// `count` such values (a row-major matrix of count / ld rows).
inline std::vector<fp16_t> random_fp16(std::int64_t count, std::uint64_t seed) {
  std::vector<fp16_t> values(static_cast<std::size_t>(count));
  SplitMix64 random{seed};
  for (fp16_t& value : values) value = double_to_fp16(random.symmetric_unit());
  return values;
}

}  // namespace bcsr24::apps
