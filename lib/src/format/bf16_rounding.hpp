// double -> bf16 rounding (nearest, ties to even) as an inline function for the converter's hot loop: the 16-bit
// rounding of fp16_rounding.hpp with bf16's 8 exponent and 7 fraction bits. half.cpp's double_to_bf16 is this
// same function.
#pragma once

#include "bcsr24/half.hpp"
#include "format/fp16_rounding.hpp"

namespace bcsr24::detail {

inline fp16_t round_double_to_bf16(double value) noexcept { return round_double_to_16bit<8, 7>(value); }

}  // namespace bcsr24::detail
