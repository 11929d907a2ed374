// Bands split over several blocks (device/tile_schedule.hpp) against Eigen's float64 product: a matrix with two
// bands far longer than the GPU's fair share among thousands of short ones, on every tile kernel, several column
// slices, alpha/beta, fp16 output, repeated runs of one plan (the counters reset themselves) and bit-identical
// results.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "format/convert.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "gpu/gpu_harness.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using namespace bcsr24::test;

namespace {

/// Band 0: 16 rows with a nonzero in two of every three columns over all `cols` columns (2:4 and dense tiles
/// mixed); band 1: 16 dense rows over the first half of the columns; then `graph_rows` rows of a random graph
/// of degree 5 (short bands).
CsrMatrix two_long_bands(std::int32_t cols, std::int32_t graph_rows, std::uint64_t seed) {
  CsrMatrix a;
  a.rows = 32;
  a.cols = cols;
  a.row_ptr.assign(33, 0);
  for (std::int32_t r = 0; r < 32; ++r) {
    for (std::int32_t c = 0; c < (r < 16 ? cols : cols / 2); ++c) {
      if (r < 16 && (c + r) % 3 == 0) continue;
      a.col_idx.push_back(c);
      a.values.push_back(double((r * 5 + c * 7) % 19 - 9) / 8.0 + 0.03125);
    }
    a.row_ptr[std::size_t(r) + 1] = std::int32_t(a.col_idx.size());
  }
  append_rows(a, generate_random_graph(RandomGraphSpec{graph_rows, cols, /*degree=*/5, /*power_law=*/false, seed}));
  return a;
}

}  // namespace

TEST_CASE("long bands split over several blocks: every tile kernel, exact and bit-identical", "[gpu][split_bands]") {
  const std::uint64_t seed = test::test_seed(1201);
  INFO("seed " << seed);
  const CsrMatrix a = two_long_bands(40007, 3001, seed);  // not multiples of 32 / 16: padded last tile and band
  const Bcsr24Matrix host = convert_to_bcsr24(a);
  const DeviceMatrix dev(host, UploadOptions{CsrCopy::candidates});
  for (const KernelKind kernel : {KernelKind::split_pipelined}) {
    for (const std::int32_t n : {8, 37, 130}) {
      INFO(kernel_name(kernel) << ", n = " << n);
      PlanOptions split_options;
      const SpmmPlan split = test::make_plan(dev, n, kernel, split_options);
      PlanKnobs whole_knobs;
      whole_knobs.split_long_bands = false;
      const SpmmPlan whole = test::make_plan(dev, n, kernel, {}, whole_knobs);
      CHECK(split.report().diagnostics.split_bands >= 2);  // both long bands, whatever the GPU's size
      CHECK(split.report().diagnostics.split_parts > 2 * split.report().diagnostics.split_bands);
      CHECK(whole.report().diagnostics.split_bands == 0);
      CHECK(split.workspace_bytes() > whole.workspace_bytes());

      GpuCase cfg;
      cfg.n = n;
      cfg.seed = seed + n;
      cfg.beta = n == 37 ? 0.5 : 0.0;
      cfg.alpha = n == 130 ? -0.75 : 1.0;
      cfg.ldc_pad = n == 37 ? 3 : 0;
      cfg.runs = 3;  // the last of three runs of one plan is checked
      const auto first = run_and_check(a, host, dev, kernel, cfg);
      require_pass(first);
      const auto second = run_and_check(a, host, dev, kernel, cfg);
      CHECK(same_bits(first.c, second.c));  // the last part adds the parts in part order, whichever it is
      cfg.split_long_bands = false;
      require_pass(run_and_check(a, host, dev, kernel, cfg));
      // The last part adds the output addends, once.
      cfg.split_long_bands = true;
      cfg.addends = 2;
      require_pass(run_and_check(a, host, dev, kernel, cfg));
    }
  }
  SECTION("fp16 output and automatic plans") {
    GpuCase cfg;
    cfg.n = 24;
    cfg.output = ElementType::f16;
    cfg.beta = -1.0;
    cfg.runs = 2;
    cfg.seed = seed + 1;
    require_pass(run_and_check(a, host, dev, KernelKind::split_pipelined, cfg));
    cfg.output = ElementType::f32;
    for (const std::int32_t n : {8, 64}) {
      cfg.n = n;
      INFO("auto, n = " << n << ": " << test::make_plan(dev, n).report().reason);
      require_pass(run_and_check(a, host, dev, KernelKind::automatic, cfg));
    }
  }
}
