// The CUDA-core CSR kernel's short-row units at n >= 8 against Eigen's float64 product: short rows two to a group,
// in runs of consecutive rows, and without a list (every slot of the copy in the plan), with the rows of other
// classes, padding and empty rows they must skip.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "format/convert.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24/csr_matrix.hpp"
#include "gpu/gpu_harness.hpp"
#include "gpu/mixed_matrices.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using namespace bcsr24::test;

namespace {

/// The product settings of the short-row cases at width n: alpha -1.25 and the given beta, padded C, a padded B at
/// n = 13, fp16 C at n = 40, addends at n = 128, two runs per call.
GpuCase short_rows_case(std::int32_t n, double beta, std::uint64_t seed) {
  GpuCase cfg;
  cfg.n = n;
  cfg.beta = beta;
  cfg.alpha = -1.25;
  cfg.ldc_pad = 3;
  cfg.ldb_pad = n == 13 ? 3 : 0;
  cfg.output = n == 40 ? ElementType::f16 : ElementType::f32;
  cfg.addends = n == 128 ? 2 : 0;
  cfg.seed = seed + std::uint64_t(n);
  cfg.runs = 2;
  return cfg;
}

/// The diagnostics of csr_cuda_cores plans with `knobs` where the short-row paths do not exist: fp32 B (n = 64)
/// and n < 8 (n = 5).
std::vector<experimental::PlanDiagnostics> without_short_row_paths(const DeviceMatrix& dev, const PlanKnobs& knobs) {
  PlanOptions f32b;
  f32b.input = ElementType::f32;
  return {test::make_plan(dev, 64, KernelKind::csr_cuda_cores, f32b, knobs).report().diagnostics,
          test::make_plan(dev, 5, KernelKind::csr_cuda_cores, {}, knobs).report().diagnostics};
}

}  // namespace

TEST_CASE("CSR path: short rows two to a group, with and without a list, odd counts, empty and skipped rows",
          "[gpu][hybrid]") {
  // Short rows in pairs (PlanKnobs::csr_short_pairs forced on: this matrix is too small for the automatic rule).
  // 2,999 rows (an odd count: the last group has one row), rows of 0 to 3 entries, a full row (long) and some of
  // 150 (medium): as a range over the copy's slots (csr_cuda_cores: a pair's rows of another class or empty with
  // beta = 1 are skipped, its partner is not) and as a list (automatic hybrid: the list holds this plan's slots).
  const std::uint64_t seed = test::test_seed(1111);
  INFO("seed " << seed);
  const CsrMatrix b = short_rows_among_classes(seed, 3);
  const Bcsr24Matrix host = convert_to_bcsr24(b);
  const DeviceMatrix dev(host, UploadOptions{CsrCopy::all});
  for (const KernelKind kernel : {KernelKind::csr_cuda_cores, KernelKind::automatic}) {
    for (std::int32_t n : {8, 13, 40, 128, 263}) {
      PlanKnobs pairs;
      pairs.csr_short_pairs = 1;
      const SpmmPlan plan = test::make_plan(dev, n, kernel, {}, pairs);
      INFO("n = " << n << (kernel == KernelKind::automatic ? " automatic" : " csr_cuda_cores") << ": "
                  << plan.report().csr_bands << " CSR bands");
      if (kernel == KernelKind::csr_cuda_cores || plan.report().csr_bands > 0)
        CHECK(plan.report().diagnostics.csr_short_pairs);
      for (const double beta : {0.0, 1.0, -0.5}) {
        GpuCase cfg = short_rows_case(n, beta, seed);
        cfg.csr_short_pairs = 1;
        INFO("beta = " << beta);
        const auto first = run_and_check(b, host, dev, kernel, cfg);
        require_pass(first);
        CHECK(same_bits(first.c, run_and_check(b, host, dev, kernel, cfg).c));
      }
    }
  }
  // Off where the path does not exist: fp32 B (the pair's sums would not fit the registers) and n < 8.
  PlanKnobs pairs;
  pairs.csr_short_pairs = 1;
  for (const experimental::PlanDiagnostics& d : without_short_row_paths(dev, pairs)) CHECK_FALSE(d.csr_short_pairs);
}

TEST_CASE("CSR path: short rows in runs, with and without a list, the same bits as one row a group; odd counts, "
          "empty and skipped rows", "[gpu][hybrid]") {
  // Short rows in runs (PlanKnobs::csr_short_run_rows forced: this matrix is too small for the automatic rule) on
  // rows of 0 to 11 entries (several rounds a lane where a row has 1 lane): as a range over the copy's slots
  // (csr_cuda_cores: rows of another class, padding and, with beta = 1, empty rows are skipped inside a run) and as
  // a list (automatic hybrid: with beta = 1 the list of rows with entries). A run sums each row in the order one
  // group would, so the bits must equal those of runs off. Runs of 2, 3 and 8 rows (the last run is short).
  const std::uint64_t seed = test::test_seed(1113);
  INFO("seed " << seed);
  const CsrMatrix b = short_rows_among_classes(seed, 11);
  const Bcsr24Matrix host = convert_to_bcsr24(b);
  const DeviceMatrix dev(host, UploadOptions{CsrCopy::all});
  for (const KernelKind kernel : {KernelKind::csr_cuda_cores, KernelKind::automatic}) {
    for (std::int32_t n : {8, 13, 40, 128, 263}) {
      PlanKnobs off;
      off.csr_short_run_rows = 0;
      const PlanReport plain = test::make_plan(dev, n, kernel, {}, off).report();
      const int group_lanes = plain.diagnostics.csr_chunks * plain.diagnostics.csr_nz_lanes;
      for (const std::int32_t run : {2, 3, 8}) {
        PlanKnobs runs;
        runs.csr_short_run_rows = run;
        const SpmmPlan plan = test::make_plan(dev, n, kernel, {}, runs);
        const std::int32_t expected = plan.report().csr_bands > 0 ? std::min(run, std::min(8, group_lanes)) : 0;
        INFO("n = " << n << (kernel == KernelKind::automatic ? " automatic, " : " csr_cuda_cores, ")
                    << plan.report().csr_bands << " CSR bands: runs of " << run << " asked, "
                    << plan.report().diagnostics.csr_short_run_rows << " made (group of " << group_lanes << " lanes)");
        CHECK(plan.report().diagnostics.csr_short_run_rows == (expected >= 2 ? expected : 0));
        CHECK_FALSE(plan.report().diagnostics.csr_short_pairs);
        for (const double beta : {0.0, 1.0, -0.5}) {
          GpuCase cfg = short_rows_case(n, beta, seed);
          INFO("beta = " << beta);
          cfg.csr_short_run_rows = 0;
          const auto one = run_and_check(b, host, dev, kernel, cfg);
          require_pass(one);
          cfg.csr_short_run_rows = run;
          const auto in_runs = run_and_check(b, host, dev, kernel, cfg);
          require_pass(in_runs);
          CHECK(same_bits(one.c, in_runs.c));
        }
      }
    }
  }
  // Off where the path does not exist: fp32 B and n < 8.
  PlanKnobs runs;
  runs.csr_short_run_rows = 4;
  for (const experimental::PlanDiagnostics& d : without_short_row_paths(dev, runs)) CHECK(d.csr_short_run_rows == 0);
}

TEST_CASE("CSR path without a short-row list: padding, empty, short, medium and long rows; beta = 1 keeps empty "
          "rows", "[gpu][hybrid]") {
  // Every band on CSR (csr_cuda_cores): the short rows' groups take their slots directly and skip the padding rows
  // of the last band (1,999 rows), the rows of the medium and long classes and, with beta = 1, the empty rows.
  const std::uint64_t seed = test::test_seed(1109);
  INFO("seed " << seed);
  const CsrMatrix a = with_full_row(blocks_over_graph(0, 1999, 3001, 6, seed), 1000);
  // Some medium rows: 200 entries each, past the short rows' limit (32 at n < 8, 128 at n = 8 and 13, where small
  // matrices get 8 lanes a row) and within a warp's (256 or more). At n = 33 (8 chunks of 4 lanes) a group's limit
  // and a warp's are both 64: there they are long rows.
  CsrMatrix b;
  b.rows = a.rows;
  b.cols = a.cols;
  b.row_ptr.assign(std::size_t(a.rows) + 1, 0);
  for (std::int32_t r = 0; r < a.rows; ++r) {
    if (r % 97 == 11) {
      for (std::int32_t c = r % 50; c < a.cols && c < r % 50 + 200 * 7; c += 7) {
        b.col_idx.push_back(c);
        b.values.push_back(double((r + c) % 13 - 6) / 4.0 + 0.125);
      }
    } else {
      for (std::int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
        b.col_idx.push_back(a.col_idx[e]);
        b.values.push_back(a.values[e]);
      }
    }
    b.row_ptr[std::size_t(r) + 1] = std::int32_t(b.col_idx.size());
  }
  const Bcsr24Matrix host = convert_to_bcsr24(b);
  const DeviceMatrix dev(host, UploadOptions{CsrCopy::all});
  for (std::int32_t n : {1, 5, 8, 13, 33}) {
    const SpmmPlan plan = test::make_plan(dev, n, KernelKind::csr_cuda_cores);
    INFO("n = " << n << ": " << plan.report().diagnostics.csr_medium_rows << " medium rows, "
                << plan.report().diagnostics.csr_long_rows << " long rows");
    if (n <= 16) CHECK(plan.report().diagnostics.csr_medium_rows > 0);
    else CHECK(plan.report().diagnostics.csr_long_rows > 1);
    CHECK(plan.report().diagnostics.csr_long_rows >= 1);
    for (const double beta : {0.0, 1.0, -0.5}) {
      GpuCase cfg;
      cfg.n = n;
      cfg.beta = beta;
      cfg.alpha = 0.75;
      cfg.ldc_pad = 1;
      cfg.seed = seed + std::uint64_t(n);
      cfg.runs = 2;
      INFO("beta = " << beta);
      require_pass(run_and_check(b, host, dev, KernelKind::csr_cuda_cores, cfg));
    }
  }
}

