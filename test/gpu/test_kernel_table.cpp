// Every tile-kernel entry of the kernel table (lib/src/kernels/kernel_table.hpp) run through a plan that chooses
// it, against Eigen's float64 product: each operand mode, output type, slice width, pipeline depth, B-row index and
// split-band variant that a plan may launch has run at least once. The plan's report must name the entry's depth,
// stages and band split, so a plan that picked another entry fails.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/half.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "device/device_matrix.hpp"
#include "format/convert.hpp"
#include "gpu/gpu_harness.hpp"
#include "kernels/kernel_table.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using kernels::OperandMode;

namespace {

/// 83 x 3205: band 0 holds 100 tiles (50 dense, 50 2:4), far more than twice kMinTilesPerPart, so plans that split
/// long bands split it; the other bands hold a few scattered entries each, and the last band is partial.
CsrMatrix long_band_matrix(std::uint64_t seed) {
  const std::int32_t rows = 16 * 5 + 3, cols = 32 * 100 + 5;
  test::RandomTriplets t(seed);
  for (std::int32_t r = 0; r < 16; ++r)
    for (std::int32_t c = 0; c < 32 * 100; ++c)
      if (c < 32 * 50 || c % 4 < 2) t.add(r, c);
  for (std::int32_t r = 16; r < rows; ++r)
    for (int q = 0; q < 7; ++q) t.add(r, static_cast<std::int32_t>(t.rng() % static_cast<std::uint64_t>(cols)));
  return t.csr(rows, cols);
}

Precision precision_of(OperandMode mode) {
  return mode == OperandMode::bf16 || mode == OperandMode::bf16_f32b ? Precision::bf16
         : mode == OperandMode::split_f32b                          ? Precision::split
                                                                      : Precision::fp16;
}

ElementType input_of(OperandMode mode) {
  return mode == OperandMode::f16 ? ElementType::f16 : mode == OperandMode::bf16 ? ElementType::bf16 : ElementType::f32;
}

/// fp32 C of a mode other than fp16-with-fp16-B: B random, C NaN (beta = 0), checked within the bound of the
/// mode's arithmetic (gpu_harness.hpp).
test::ModeCheck run_fp32_c(const CsrMatrix& a, const Bcsr24Matrix& host, const SpmmPlan& plan, std::int32_t n,
                           ElementType input, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> b(std::size_t(a.cols) * n);
  for (float& v : b) v = dist(rng);
  const bool f32 = input == ElementType::f32;  // otherwise bf16 B for a bf16 matrix
  const test::GivenB given = test::given_b(b, f32, host.precision);
  const std::vector<float> c0(std::size_t(a.rows) * n, std::nanf(""));
  return test::run_mode_product(a, host, plan, n, f32, b, given, c0, 1.0, 0.0,
                                test::mode_arithmetic(host.precision, input));
}

}  // namespace

TEST_CASE("every tile kernel of the kernel table runs and matches float64", "[gpu][kernel_table]") {
  const std::uint64_t seed = test::test_seed(3407);
  INFO("seed " << seed);
  const CsrMatrix a = long_band_matrix(seed);
  const kernels::KernelTable& table = kernels::kernel_table();
  std::size_t ran = 0;
  for (std::size_t part = 0; part < table.tile_part_count; ++part)
    for (std::size_t i = 0; i < table.tile_parts[part].count; ++i) {
      const kernels::TileKernel& entry = table.tile_parts[part].entries[i];
      const kernels::TileKernelKey& key = entry.key;
      INFO(kernels::describe(key));
      ConvertOptions convert = test::convert_policy(
          key.b_rows == BRowIndex::implicit ? TileLayout::aligned : TileLayout::condensed, Reordering::none);
      convert.precision = precision_of(key.mode);
      const Bcsr24Matrix host = convert_to_bcsr24(a, convert);
      REQUIRE(host.b_row_index() == key.b_rows);
      const DeviceMatrix dev(host, UploadOptions{CsrCopy::candidates});
      const std::int32_t n = key.slice_width - 3;  // a partial last slice: columns past n are never written
      PlanOptions options;
      options.input = input_of(key.mode);
      options.output = key.output;
      PlanKnobs knobs;
      knobs.tile_pipeline = key.pipeline;
      knobs.split_long_bands = key.split_bands;
      knobs.band_groups = BandGroups::off;
      const SpmmPlan plan = test::make_plan(dev, n, key.kind, options, knobs);
      // The plan launches this entry: its depth, stages and band split are the entry's.
      REQUIRE(plan.report().diagnostics.deep_tile_pipeline == (key.pipeline == TilePipeline::deep));
      REQUIRE(plan.report().diagnostics.tile_stages == entry.stages);
      REQUIRE((plan.report().diagnostics.split_bands > 0) == key.split_bands);
      if (key.mode == OperandMode::f16) {
        test::GpuCase cfg;  // fp16 A and B, fp32 or fp16 C: the harness's bound covers both
        cfg.n = n;
        cfg.output = key.output;
        cfg.seed = seed + i;
        cfg.split_long_bands = key.split_bands;
        cfg.band_groups = BandGroups::off;
        cfg.tile_pipeline = key.pipeline;
        test::require_pass(test::run_and_check(a, host, dev, key.kind, cfg));
      } else {
        const test::ModeCheck r = run_fp32_c(a, host, plan, n, options.input, seed + i);
        CHECK(r.checked > 0);
        CHECK(r.violations == 0);
        CHECK(r.output_norm > 0.0);
      }
      ++ran;
    }
  CHECK(ran == 108);  // every tile entry of the table (test_kernel_table.cpp counts them on the CPU)
}
