// fp16 and bf16 conversions: exhaustive round trips, ties to even, overflow, subnormals, NaN, and no double
// rounding. The checks common to both formats take the format's description (Format16).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>

#include "bcsr24/half.hpp"
#include "test_support.hpp"

using bcsr24::double_to_fp16;
using bcsr24::float_to_fp16;
using bcsr24::fp16_t;
using bcsr24::fp16_to_float;
using bcsr24::bf16_to_float;
using bcsr24::double_to_bf16;

namespace {

/// A 16-bit format under test: a sign bit, its exponent and fraction widths, and the library's conversions.
struct Format16 {
  int exponent_bits, fraction_bits;
  fp16_t (*from_double)(double);
  float (*to_float)(fp16_t);

  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  std::uint32_t exponent_mask() const { return ((1u << exponent_bits) - 1) << fraction_bits; }  // 0x7C00, 0x7F80
  std::uint32_t fraction_mask() const { return (1u << fraction_bits) - 1; }                     // 0x03FF, 0x007F
  std::uint32_t max_finite() const { return exponent_mask() - 1; }                                // 0x7BFF, 0x7F7F
  /// The midpoint between the largest finite value and 2^(bias + 1): from here on a value rounds to infinity.
  double overflow_tie() const { return std::ldexp(2.0 - std::ldexp(1.0, -fraction_bits - 1), bias()); }
  bool is_nan(fp16_t h) const { return (h & exponent_mask()) == exponent_mask() && (h & fraction_mask()) != 0; }
  /// Value of a finite bit pattern, from the IEEE definition (independent of to_float).
  double value(fp16_t h) const {
    const int exponent = int(h >> fraction_bits) & ((1 << exponent_bits) - 1);
    const int fraction = int(h & fraction_mask());
    const double magnitude = exponent == 0
                                 ? std::ldexp(fraction, 1 - bias() - fraction_bits)
                                 : std::ldexp((1 << fraction_bits) + fraction, exponent - bias() - fraction_bits);
    return (h & 0x8000u) ? -magnitude : magnitude;
  }
};

const Format16 kFp16{5, 10, double_to_fp16, fp16_to_float};
const Format16 kBf16{8, 7, double_to_bf16, bf16_to_float};

/// Every bit pattern: a NaN widens to a NaN and rounds back to a NaN of its sign; infinities widen to infinities;
/// every finite pattern widens to exactly its value with its sign (-0 stays -0); and every non-NaN rounds back
/// from double to itself.
void check_every_pattern(const Format16& f) {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto h = static_cast<fp16_t>(bits);
    CAPTURE(bits);
    const float wide = f.to_float(h);
    if (f.is_nan(h)) {
      REQUIRE(std::isnan(wide));
      REQUIRE(f.is_nan(f.from_double(static_cast<double>(wide))));
      REQUIRE((f.from_double(static_cast<double>(wide)) & 0x8000u) == (h & 0x8000u));
      continue;
    }
    if ((h & 0x7FFFu) == f.exponent_mask()) {
      REQUIRE(std::isinf(wide));
    } else {
      REQUIRE(static_cast<double>(wide) == f.value(h));
    }
    REQUIRE(std::signbit(wide) == ((h & 0x8000u) != 0));
    REQUIRE(f.from_double(static_cast<double>(wide)) == h);
  }
}

/// Every pair of consecutive finite magnitudes, both signs: the midpoint (exact in double) rounds to the even
/// one, and just off the midpoint the nearer one wins. `also(mid, even)` adds checks of each midpoint.
void check_midpoints(const Format16& f, const std::function<void(double, fp16_t)>& also = {}) {
  for (std::uint32_t bits = 0; bits < f.max_finite(); ++bits) {
    for (std::uint32_t sign : {0u, 0x8000u}) {
      const auto lo = static_cast<fp16_t>(bits | sign), hi = static_cast<fp16_t>((bits + 1) | sign);
      const double mid = (f.value(lo) + f.value(hi)) / 2;
      const fp16_t even = (bits & 1u) ? hi : lo;
      CAPTURE(bits, sign, mid);
      REQUIRE(f.from_double(mid) == even);
      REQUIRE(f.from_double(std::nextafter(mid, 0.0)) == lo);
      REQUIRE(f.from_double(std::nextafter(mid, sign ? -1e300 : 1e300)) == hi);
      if (also) also(mid, even);
    }
  }
}

/// 200,000 random doubles with exponents in [low, high]: each rounds to a value at least as close as both
/// neighbours of the same sign (the even one on a tie), or to infinity from the overflow midpoint on. `also(x)`
/// adds checks of each x that does not overflow.
void check_random_rounding(const Format16& f, std::uint64_t seed, int low, int high,
                           const std::function<void(double)>& also = {}) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(low, high);
  for (int n = 0; n < 200000; ++n) {
    const double x = std::ldexp(mantissa(rng), exponent(rng));
    const fp16_t h = f.from_double(x);
    CAPTURE(x, h);
    if (std::fabs(x) >= f.overflow_tie()) {
      REQUIRE((h & 0x7FFFu) == f.exponent_mask());
      continue;
    }
    REQUIRE((h & f.exponent_mask()) != f.exponent_mask());
    const double err = std::fabs(x - f.value(h));
    const fp16_t magnitude = h & 0x7FFFu;
    if (magnitude < f.max_finite()) REQUIRE(err <= std::fabs(x - f.value(static_cast<fp16_t>(h + 1))));
    if (magnitude > 0u) {
      const double err_down = std::fabs(x - f.value(static_cast<fp16_t>(h - 1)));
      REQUIRE(err <= err_down);
      if (err == err_down) REQUIRE((h & 1u) == 0u);
    }
    if (also) also(x);
  }
}

}  // namespace

TEST_CASE("fp16: every pattern widens exactly and round-trips through double", "[half]") {
  check_every_pattern(kFp16);
  CHECK(fp16_to_float(0x7C00) == std::numeric_limits<float>::infinity());
  CHECK(fp16_to_float(0xFC00) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(fp16_to_float(0x7E00)));
  CHECK(std::isnan(fp16_to_float(0x7C01)));  // signalling NaN stays a NaN, not inf
}

TEST_CASE("all 65536 fp16 patterns round-trip through float", "[half]") {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto h = static_cast<fp16_t>(bits);
    CAPTURE(bits);
    const float f = fp16_to_float(h);
    if (kFp16.is_nan(h)) {
      // NaN stays NaN with its sign; quiet NaNs keep their payload exactly.
      REQUIRE(kFp16.is_nan(float_to_fp16(f)));
      REQUIRE((float_to_fp16(f) & 0x8000u) == (h & 0x8000u));
      if (h & 0x0200u) REQUIRE(float_to_fp16(f) == h);
    } else {
      REQUIRE(float_to_fp16(f) == h);
    }
  }
}

TEST_CASE("midpoints between neighbouring fp16 values round to the even one", "[half]") {
  check_midpoints(kFp16, [](double mid, fp16_t even) {
    // A float midpoint (exact in float for all but the smallest subnormals) rounds the same way.
    if (static_cast<double>(static_cast<float>(mid)) == mid) REQUIRE(float_to_fp16(static_cast<float>(mid)) == even);
  });
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
  CHECK(kFp16.is_nan(double_to_fp16(qnan)));
  CHECK(kFp16.is_nan(double_to_fp16(-qnan)));
  CHECK((double_to_fp16(-qnan) & 0x8000u) != 0);
  CHECK(kFp16.is_nan(float_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(kFp16.is_nan(float_to_fp16(std::numeric_limits<float>::signaling_NaN())));
  CHECK(kFp16.is_nan(double_to_fp16(std::numeric_limits<double>::signaling_NaN())));
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
  check_random_rounding(kFp16, seed, -30, 17, [](double x) {
    REQUIRE(float_to_fp16(static_cast<float>(x)) == double_to_fp16(static_cast<double>(static_cast<float>(x))));
  });
}

// ---- bfloat16 ------------------------------------------------------------------------------------------

TEST_CASE("bf16: every finite pattern widens exactly and round-trips", "[half][bf16]") {
  check_every_pattern(kBf16);
  CHECK(bf16_to_float(0x3F80) == 1.0f);
  CHECK(static_cast<double>(bf16_to_float(0x7F7F)) == bcsr24::kBf16Max);
  CHECK(static_cast<double>(bf16_to_float(0x0080)) == bcsr24::kBf16MinNormal);
  CHECK(static_cast<double>(bf16_to_float(0x0001)) == bcsr24::kBf16MinSubnormal);
}

TEST_CASE("bf16: midpoints between neighbouring values round to the even one", "[half][bf16]") {
  check_midpoints(kBf16);
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
  CHECK(kBf16.is_nan(double_to_bf16(qnan)));
  CHECK((double_to_bf16(-qnan) & 0x8000u) != 0);
  CHECK(kBf16.is_nan(double_to_bf16(std::numeric_limits<double>::signaling_NaN())));

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
  check_random_rounding(kBf16, seed, -140, 129);
}
