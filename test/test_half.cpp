// fp16 and bf16 conversions: exhaustive round trips, ties to even, overflow, subnormals, NaN, and no double
// rounding.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "bcsr24/half.hpp"
#include "test_support.hpp"

using bcsr24::double_to_fp16;
using bcsr24::float_to_fp16;
using bcsr24::fp16_t;
using bcsr24::fp16_to_float;

namespace {

bool is_nan_bits(fp16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0; }

/// Value of a finite fp16 bit pattern, from the IEEE definition (independent of fp16_to_float).
double fp16_value(fp16_t h) {
  const int exponent = (h >> 10) & 0x1F;
  const int fraction = h & 0x3FF;
  const double magnitude = exponent == 0 ? std::ldexp(fraction, -24) : std::ldexp(1024 + fraction, exponent - 25);
  return (h & 0x8000u) ? -magnitude : magnitude;
}

}  // namespace

TEST_CASE("fp16_to_float matches the IEEE definition for every finite pattern", "[half]") {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto h = static_cast<fp16_t>(bits);
    if ((h & 0x7C00u) == 0x7C00u) continue;
    CAPTURE(bits);
    REQUIRE(static_cast<double>(fp16_to_float(h)) == fp16_value(h));
    REQUIRE(std::signbit(fp16_to_float(h)) == ((h & 0x8000u) != 0));  // -0 stays -0
  }
  CHECK(fp16_to_float(0x7C00) == std::numeric_limits<float>::infinity());
  CHECK(fp16_to_float(0xFC00) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(fp16_to_float(0x7E00)));
  CHECK(std::isnan(fp16_to_float(0x7C01)));  // signalling NaN stays a NaN, not inf
}

TEST_CASE("all 65536 fp16 patterns round-trip through float and double", "[half]") {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto h = static_cast<fp16_t>(bits);
    CAPTURE(bits);
    const float f = fp16_to_float(h);
    if (is_nan_bits(h)) {
      // NaN stays NaN with its sign; quiet NaNs keep their payload exactly.
      REQUIRE(is_nan_bits(float_to_fp16(f)));
      REQUIRE(is_nan_bits(double_to_fp16(static_cast<double>(f))));
      REQUIRE((float_to_fp16(f) & 0x8000u) == (h & 0x8000u));
      if (h & 0x0200u) REQUIRE(float_to_fp16(f) == h);
    } else {
      REQUIRE(float_to_fp16(f) == h);
      REQUIRE(double_to_fp16(static_cast<double>(f)) == h);
    }
  }
}

TEST_CASE("midpoints between neighbouring fp16 values round to the even one", "[half]") {
  // Every pair of consecutive finite magnitudes, both signs; the midpoint is exact in double.
  for (std::uint32_t bits = 0; bits < 0x7BFFu; ++bits) {
    for (std::uint32_t sign : {0u, 0x8000u}) {
      const auto lo = static_cast<fp16_t>(bits | sign), hi = static_cast<fp16_t>((bits + 1) | sign);
      const double mid = (fp16_value(lo) + fp16_value(hi)) / 2;
      const fp16_t even = (bits & 1u) ? hi : lo;
      CAPTURE(bits, sign, mid);
      REQUIRE(double_to_fp16(mid) == even);
      // Just off the midpoint the nearer one wins.
      const double toward_zero = std::nextafter(mid, 0.0), away = std::nextafter(mid, sign ? -1e9 : 1e9);
      REQUIRE(double_to_fp16(toward_zero) == lo);
      REQUIRE(double_to_fp16(away) == hi);
      // A float midpoint (exact in float for all but the smallest subnormals) rounds the same way.
      if (static_cast<double>(static_cast<float>(mid)) == mid) REQUIRE(float_to_fp16(static_cast<float>(mid)) == even);
    }
  }
}

TEST_CASE("values around the top of the fp16 range", "[half]") {
  CHECK(double_to_fp16(65504.0) == 0x7BFF);
  CHECK(double_to_fp16(-65504.0) == 0xFBFF);
  CHECK(double_to_fp16(65505.0) == 0x7BFF);
  CHECK(double_to_fp16(65519.0) == 0x7BFF);
  CHECK(double_to_fp16(std::nextafter(65520.0, 0.0)) == 0x7BFF);
  // 65520 is the midpoint between 65504 and 2^16; the even significand is 2^16, which overflows.
  CHECK(double_to_fp16(65520.0) == 0x7C00);
  CHECK(double_to_fp16(-65520.0) == 0xFC00);
  CHECK(double_to_fp16(65536.0) == 0x7C00);
  CHECK(double_to_fp16(1e300) == 0x7C00);
  CHECK(double_to_fp16(std::numeric_limits<double>::infinity()) == 0x7C00);
  CHECK(double_to_fp16(-std::numeric_limits<double>::infinity()) == 0xFC00);
  CHECK(float_to_fp16(65520.0f) == 0x7C00);
  CHECK(float_to_fp16(std::numeric_limits<float>::max()) == 0x7C00);
  CHECK(double_to_fp16(32768.0) == 0x7800);
  CHECK(double_to_fp16(2047.5) == 0x6800);  // 2047.5 ties to 2048 (even significand)
}

TEST_CASE("subnormal boundaries", "[half]") {
  const double unit = std::ldexp(1.0, -24);  // smallest subnormal
  CHECK(double_to_fp16(unit) == 0x0001);
  CHECK(double_to_fp16(-unit) == 0x8001);
  CHECK(double_to_fp16(unit / 2) == 0x0000);  // exactly half a unit: ties to even zero
  CHECK(double_to_fp16(-unit / 2) == 0x8000);
  CHECK(double_to_fp16(std::nextafter(unit / 2, 1.0)) == 0x0001);
  CHECK(double_to_fp16(std::nextafter(unit / 2, 0.0)) == 0x0000);
  CHECK(double_to_fp16(1.5 * unit) == 0x0002);   // tie between 1 and 2 units goes to 2
  CHECK(double_to_fp16(2.5 * unit) == 0x0002);   // tie between 2 and 3 units goes to 2
  CHECK(double_to_fp16(1023 * unit) == 0x03FF);  // largest subnormal
  CHECK(double_to_fp16(1023.5 * unit) == 0x0400);  // rounds up into the smallest normal
  CHECK(double_to_fp16(std::ldexp(1.0, -14)) == 0x0400);
  CHECK(double_to_fp16(bcsr24::kFp16MinNormal) == 0x0400);
  CHECK(double_to_fp16(bcsr24::kFp16MinSubnormal) == 0x0001);
  CHECK(double_to_fp16(1e-300) == 0x0000);
  CHECK(double_to_fp16(-1e-300) == 0x8000);
  CHECK(double_to_fp16(std::numeric_limits<double>::denorm_min()) == 0x0000);
  CHECK(double_to_fp16(0.0) == 0x0000);
  CHECK(double_to_fp16(-0.0) == 0x8000);
  CHECK(float_to_fp16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(float_to_fp16(static_cast<float>(unit)) == 0x0001);
}

TEST_CASE("NaN stays NaN", "[half]") {
  const double qnan = std::numeric_limits<double>::quiet_NaN();
  CHECK(is_nan_bits(double_to_fp16(qnan)));
  CHECK(is_nan_bits(double_to_fp16(-qnan)));
  CHECK((double_to_fp16(-qnan) & 0x8000u) != 0);
  CHECK(is_nan_bits(float_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(is_nan_bits(float_to_fp16(std::numeric_limits<float>::signaling_NaN())));
  CHECK(is_nan_bits(double_to_fp16(std::numeric_limits<double>::signaling_NaN())));
}

TEST_CASE("double rounds to fp16 directly, not through float", "[half]") {
  // 1 + 2^-11 + 2^-40 lies just above the midpoint of 1 and 1 + 2^-10. Through float the 2^-40 is lost, the
  // value becomes the exact midpoint, and ties-to-even would give 1.0: a double rounding error.
  const double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  REQUIRE(float_to_fp16(static_cast<float>(x)) == 0x3C00);
  CHECK(double_to_fp16(x) == 0x3C01);
  CHECK(double_to_fp16(-x) == 0xBC01);
  // The same trap in the subnormal range: 0.5 units + a hair.
  const double y = std::ldexp(1.0, -25) + std::ldexp(1.0, -60);
  CHECK(double_to_fp16(y) == 0x0001);
}

TEST_CASE("random doubles round to the nearest fp16, ties to even", "[half]") {
  const std::uint64_t seed = bcsr24::test::test_seed(20240601);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 17);
  for (int n = 0; n < 200000; ++n) {
    const double x = std::ldexp(mantissa(rng), exponent(rng));
    const fp16_t h = double_to_fp16(x);
    CAPTURE(x, h);
    if (std::fabs(x) >= 65520.0) {
      REQUIRE((h & 0x7FFFu) == 0x7C00u);
      continue;
    }
    REQUIRE((h & 0x7C00u) != 0x7C00u);
    // The chosen value is at least as close as both neighbours of the same sign.
    const double err = std::fabs(x - fp16_value(h));
    const fp16_t magnitude = h & 0x7FFFu;
    if (magnitude < 0x7BFFu) REQUIRE(err <= std::fabs(x - fp16_value(static_cast<fp16_t>(h + 1))));
    if (magnitude > 0u) {
      const double err_down = std::fabs(x - fp16_value(static_cast<fp16_t>(h - 1)));
      REQUIRE(err <= err_down);
      if (err == err_down) REQUIRE((h & 1u) == 0u);
    }
    REQUIRE(float_to_fp16(static_cast<float>(x)) == double_to_fp16(static_cast<double>(static_cast<float>(x))));
  }
}

// ---- bfloat16 ------------------------------------------------------------------------------------------

namespace {

using bcsr24::bf16_to_float;
using bcsr24::double_to_bf16;

bool is_bf16_nan_bits(fp16_t h) { return (h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0; }

/// Value of a finite bf16 bit pattern, from its definition (8 exponent bits, bias 127, 7 fraction bits).
double bf16_value(fp16_t h) {
  const int exponent = (h >> 7) & 0xFF;
  const int fraction = h & 0x7F;
  const double magnitude = exponent == 0 ? std::ldexp(fraction, -133) : std::ldexp(128 + fraction, exponent - 134);
  return (h & 0x8000u) ? -magnitude : magnitude;
}

}  // namespace

TEST_CASE("bf16: every finite pattern widens exactly and round-trips", "[half][bf16]") {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto h = static_cast<fp16_t>(bits);
    CAPTURE(bits);
    const float f = bf16_to_float(h);
    if (is_bf16_nan_bits(h)) {
      REQUIRE(std::isnan(f));
      REQUIRE(is_bf16_nan_bits(double_to_bf16(static_cast<double>(f))));
      REQUIRE((double_to_bf16(static_cast<double>(f)) & 0x8000u) == (h & 0x8000u));
      continue;
    }
    if ((h & 0x7FFFu) == 0x7F80u) {
      REQUIRE(std::isinf(f));
    } else {
      REQUIRE(static_cast<double>(f) == bf16_value(h));
    }
    REQUIRE(std::signbit(f) == ((h & 0x8000u) != 0));
    REQUIRE(double_to_bf16(static_cast<double>(f)) == h);
  }
  CHECK(bf16_to_float(0x3F80) == 1.0f);
  CHECK(static_cast<double>(bf16_to_float(0x7F7F)) == bcsr24::kBf16Max);
  CHECK(static_cast<double>(bf16_to_float(0x0080)) == bcsr24::kBf16MinNormal);
  CHECK(static_cast<double>(bf16_to_float(0x0001)) == bcsr24::kBf16MinSubnormal);
}

TEST_CASE("bf16: midpoints between neighbouring values round to the even one", "[half][bf16]") {
  for (std::uint32_t bits = 0; bits < 0x7F7Fu; ++bits) {
    for (std::uint32_t sign : {0u, 0x8000u}) {
      const auto lo = static_cast<fp16_t>(bits | sign), hi = static_cast<fp16_t>((bits + 1) | sign);
      const double mid = (bf16_value(lo) + bf16_value(hi)) / 2;
      const fp16_t even = (bits & 1u) ? hi : lo;
      CAPTURE(bits, sign, mid);
      REQUIRE(double_to_bf16(mid) == even);
      REQUIRE(double_to_bf16(std::nextafter(mid, 0.0)) == lo);
      REQUIRE(double_to_bf16(std::nextafter(mid, sign ? -1e300 : 1e300)) == hi);
    }
  }
}

TEST_CASE("bf16: overflow, subnormals, NaN and a single rounding", "[half][bf16]") {
  const double max = bcsr24::kBf16Max;
  const double overflow_tie = std::ldexp(2.0 - std::ldexp(1.0, -8), 127);  // midpoint of max and 2^128
  CHECK(double_to_bf16(max) == 0x7F7F);
  CHECK(double_to_bf16(-max) == 0xFF7F);
  CHECK(double_to_bf16(std::nextafter(overflow_tie, 0.0)) == 0x7F7F);
  CHECK(double_to_bf16(overflow_tie) == 0x7F80);  // the even neighbour is 2^128: infinity
  CHECK(double_to_bf16(-overflow_tie) == 0xFF80);
  CHECK(double_to_bf16(1e39) == 0x7F80);
  CHECK(double_to_bf16(1e300) == 0x7F80);
  CHECK(double_to_bf16(std::numeric_limits<double>::infinity()) == 0x7F80);
  CHECK(double_to_bf16(-std::numeric_limits<double>::infinity()) == 0xFF80);
  CHECK(double_to_bf16(255.5) == 0x4380);  // 255.5 ties to 256 (even significand), carrying into the exponent

  const double unit = std::ldexp(1.0, -133);  // smallest subnormal
  CHECK(double_to_bf16(unit) == 0x0001);
  CHECK(double_to_bf16(-unit) == 0x8001);
  CHECK(double_to_bf16(unit / 2) == 0x0000);  // half a unit ties to zero
  CHECK(double_to_bf16(-unit / 2) == 0x8000);
  CHECK(double_to_bf16(std::nextafter(unit / 2, 1.0)) == 0x0001);
  CHECK(double_to_bf16(1.5 * unit) == 0x0002);
  CHECK(double_to_bf16(2.5 * unit) == 0x0002);
  CHECK(double_to_bf16(127 * unit) == 0x007F);    // largest subnormal
  CHECK(double_to_bf16(127.5 * unit) == 0x0080);  // rounds up into the smallest normal
  CHECK(double_to_bf16(bcsr24::kBf16MinNormal) == 0x0080);
  CHECK(double_to_bf16(1e-300) == 0x0000);
  CHECK(double_to_bf16(std::numeric_limits<double>::denorm_min()) == 0x0000);
  CHECK(double_to_bf16(-0.0) == 0x8000);

  const double qnan = std::numeric_limits<double>::quiet_NaN();
  CHECK(is_bf16_nan_bits(double_to_bf16(qnan)));
  CHECK((double_to_bf16(-qnan) & 0x8000u) != 0);
  CHECK(is_bf16_nan_bits(double_to_bf16(std::numeric_limits<double>::signaling_NaN())));

  // 1 + 2^-8 + 2^-30 lies just above the midpoint of 1 and 1 + 2^-7. Through float the 2^-30 is lost and the
  // tie would go to 1.0.
  const double x = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  REQUIRE(static_cast<double>(static_cast<float>(x)) == 1.0 + std::ldexp(1.0, -8));
  CHECK(double_to_bf16(x) == 0x3F81);
  CHECK(double_to_bf16(-x) == 0xBF81);
}

TEST_CASE("bf16: random doubles round to the nearest value, ties to even", "[half][bf16]") {
  const std::uint64_t seed = bcsr24::test::test_seed(20240602);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-140, 129);
  for (int n = 0; n < 200000; ++n) {
    const double x = std::ldexp(mantissa(rng), exponent(rng));
    const fp16_t h = double_to_bf16(x);
    CAPTURE(x, h);
    if (std::fabs(x) >= std::ldexp(2.0 - std::ldexp(1.0, -8), 127)) {
      REQUIRE((h & 0x7FFFu) == 0x7F80u);
      continue;
    }
    REQUIRE((h & 0x7F80u) != 0x7F80u);
    const double err = std::fabs(x - bf16_value(h));
    const fp16_t magnitude = h & 0x7FFFu;
    if (magnitude < 0x7F7Fu) REQUIRE(err <= std::fabs(x - bf16_value(static_cast<fp16_t>(h + 1))));
    if (magnitude > 0u) {
      const double err_down = std::fabs(x - bf16_value(static_cast<fp16_t>(h - 1)));
      REQUIRE(err <= err_down);
      if (err == err_down) REQUIRE((h & 1u) == 0u);
    }
  }
}
