// Every precision (fp16 with per-row scaling, bf16, split) and B type (16-bit, fp32) against Eigen's float64
// product of the ORIGINAL matrix and B, on a matrix whose values span 1e-8 .. 1e8 inside rows and across rows
// and a B whose columns differ in scale by 1e12. The bound of each output is derived from the arithmetic of the
// mode (below), never loosened to pass.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <Eigen/Dense>

#include "format/convert.hpp"
#include "bcsr24/device.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/precision.hpp"
#include "gpu/gpu_harness.hpp"
#include "test_skip.hpp"
#include "test_support.hpp"

using namespace bcsr24;

namespace {

/// A mix of tile kinds (a dense block column, 2:4-friendly rows, scattered rows, an empty row) of awkward size,
/// each value of magnitude 10^U(-8, 8) times a per-row factor 10^U(-6, 6): inside a row the magnitudes span
/// 2^53, more than fp16 holds even with a per-row scale, so some entries flush (within the bound).
CsrMatrix wide_range_matrix(std::int32_t rows, std::int32_t cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::int32_t> ri, ci;
  std::vector<double> vi;
  auto value = [&](double row_scale) {
    const double magnitude = std::pow(10.0, -8.0 + 16.0 * unit(rng)) * row_scale;
    return unit(rng) < 0.5 ? -magnitude : magnitude;
  };
  for (std::int32_t r = 0; r < rows; ++r) {
    if (r == 21) continue;  // an empty row: beta * C only
    const double row_scale = std::pow(10.0, -6.0 + 12.0 * unit(rng));
    if (r < 48)  // dense tiles: a full 48 x 40 block
      for (std::int32_t c = 0; c < 40 && c < cols; ++c) { ri.push_back(r); ci.push_back(c); vi.push_back(value(row_scale)); }
    if (r >= 48 && r < 112)  // 2:4 tiles: columns 64 + 4q and 64 + 4q + 2
      for (std::int32_t q = 0; q < 24 && 64 + 4 * q + 2 < cols; ++q)
        for (int o : {0, 2}) { ri.push_back(r); ci.push_back(64 + 4 * q + o); vi.push_back(value(row_scale)); }
    for (int q = 0; q < 9; ++q) {  // scattered entries everywhere (duplicates are summed by csr_from_triplets)
      ri.push_back(r);
      ci.push_back(static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(cols)));
      vi.push_back(value(row_scale));
    }
  }
  return csr_from_triplets(rows, cols, ri, ci, vi);
}

/// Runs `kernel` on `dev` with B given as fp32 (`b`) or as its 16-bit rounding, C poisoned, and compares with
/// the float64 product of the original `a` and the B the kernel was given. The plan's report goes to `report`.
test::ModeCheck run_mode(const CsrMatrix& a, const Bcsr24Matrix& host, const DeviceMatrix& dev, KernelKind kernel,
                         ElementType input, std::int32_t n, const std::vector<float>& b, double alpha, double beta,
                         std::uint64_t seed, TilePipeline pipeline, PlanReport& report,
                         BandGroups groups = BandGroups::automatic) {
  const bool f32 = input == ElementType::f32;
  // The B the kernel sees, exactly, in double: fp32 as given, or rounded to the matrix's 16-bit type.
  const test::GivenB given = test::given_b(b, f32, host.precision);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> c0(std::size_t(a.rows) * n);
  for (float& v : c0) v = beta == 0.0 ? std::nanf("") : dist(rng);

  PlanOptions options;
  options.input = input;
  PlanKnobs knobs;
  knobs.tile_pipeline = pipeline;
  knobs.band_groups = groups;
  SpmmPlan plan = test::make_plan(dev, n, kernel, options, knobs);
  report = plan.report();
  return test::run_mode_product(a, host, plan, n, f32, b, given, c0, alpha, beta,
                                test::mode_arithmetic(host.precision, input));
}

/// B with columns of very different scales (10^U(-decades, decades)) and a full fp32 significand.
std::vector<float> scaled_b(std::int32_t k, std::int32_t n, double decades, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> col_scale(static_cast<std::size_t>(n));
  for (double& s : col_scale) s = std::pow(10.0, decades * (2.0 * unit(rng) - 1.0));
  std::vector<float> b(std::size_t(k) * n);
  for (std::int32_t r = 0; r < k; ++r)
    for (std::int32_t j = 0; j < n; ++j)
      b[std::size_t(r) * n + j] = float((2.0 * unit(rng) - 1.0) * col_scale[std::size_t(j)]);
  return b;
}

/// Catch2 checks of a product of the matrix stored at `precision`: `outputs` compared, none outside its bound.
void check_within_bound(const test::ModeCheck& r, std::int64_t outputs, Precision precision) {
  CHECK(r.checked == outputs);
  CHECK(r.violations == 0);
  INFO("max error / bound " << r.max_ratio << ", relative error " << r.rel_error);
  // Split mode is the fp32-accurate one: its normwise error is near fp32's, far below fp16's.
  if (precision == Precision::split) CHECK(r.rel_error < 2e-6);
}

/// `a` stored at `precision` in `layout`, in file order; its wide range of values needs per-row scaling.
Bcsr24Matrix stored_per_row(const CsrMatrix& a, TileLayout layout, Precision precision) {
  ConvertOptions options = test::convert_policy(layout, Reordering::none);
  options.precision = precision;
  Bcsr24Matrix host = convert_to_bcsr24(a, options);
  REQUIRE(host.scaling.per_row);
  return host;
}

/// `host` on the device with CSR rows of every band (the CSR kernel runs on any of them).
DeviceMatrix with_csr_of_every_band(const Bcsr24Matrix& host) {
  UploadOptions upload;
  upload.csr = CsrCopy::all;
  return DeviceMatrix(host, upload);
}

/// The B types a plan of `precision` takes: fp32, and (not in split precision) the matrix's own 16-bit type.
std::vector<ElementType> b_types(Precision precision) {
  std::vector<ElementType> inputs{ElementType::f32};
  if (precision != Precision::split) inputs.push_back(ElementType::automatic);
  return inputs;
}

}  // namespace

TEST_CASE("every precision and B type stays within the bound of its arithmetic", "[gpu][precision]") {
  const std::uint64_t seed = test::test_seed(1011);
  INFO("seed " << seed);
  const CsrMatrix a = wide_range_matrix(333, 517, seed);
  const TilePipeline kPipelines[] = {TilePipeline::automatic, TilePipeline::standard, TilePipeline::deep};
  for (const Precision precision : {Precision::fp16, Precision::bf16, Precision::split}) {
    for (const TileLayout layout : {TileLayout::aligned, TileLayout::condensed}) {
      const Bcsr24Matrix host = stored_per_row(a, layout, precision);
      const DeviceMatrix dev = with_csr_of_every_band(host);
      for (const ElementType input : b_types(precision))
        for (const KernelKind kernel : {KernelKind::split_pipelined, KernelKind::csr_cuda_cores, KernelKind::automatic})
          // Slices of 8, 16, 32 and 64. 12 and 44: ldb = n is a multiple of 4, so fp32 B is read in place, and
          // its last 8-column chunk has 4 columns: B's last row ends inside it (the CSR kernel once read past it;
          // the sanitize step's memcheck sees such a read, as B is allocated to its last element).
          // n = 1: the one-column kernels (A's entries read in quads).
          for (const std::int32_t n : {1, 3, 12, 13, 29, 40, 44, 72})
            for (const double beta : {0.0, -0.5})
              for (const TilePipeline pipeline : kPipelines) {
                // Forcing the depth matters for the tile kernel only: the other kernels run it once (automatic).
                if (kernel != KernelKind::split_pipelined && pipeline != TilePipeline::automatic) continue;
                INFO(precision_name(precision) << " " << layout_name(layout) << " B " << element_type_name(input) << " "
                                               << kernel_name(kernel) << " n " << n << " beta " << beta << " pipeline "
                                               << experimental::tile_pipeline_name(pipeline));
                // fp16 B as given must fit fp16 (the caller's job); fp32 B may span 1e12 between columns.
                const double decades = input == ElementType::automatic && precision == Precision::fp16 ? 2.0 : 6.0;
                const std::vector<float> b = scaled_b(a.cols, n, decades, seed + std::uint64_t(n));
                PlanReport report;
                const test::ModeCheck r =
                    run_mode(a, host, dev, kernel, input, n, b, 1.5, beta, seed + 7, pipeline, report);
                // fp32 B with fp16 or bf16 A at 32+ columns has two depths; this matrix's 21 bands fit in one
                // wave of the deep pipeline, so automatic takes it. Everywhere else there is one (standard).
                const bool two_depths = input == ElementType::f32 && precision != Precision::split && n > 16;
                if (kernel == KernelKind::split_pipelined) {
                  const bool deep = two_depths && pipeline != TilePipeline::standard;
                  CHECK(report.diagnostics.deep_tile_pipeline == deep);
                  if (two_depths) CHECK(report.diagnostics.tile_stages == (deep ? 2 : 1));
                }
                check_within_bound(r, std::int64_t(a.rows) * n, precision);
              }
    }
  }
}

TEST_CASE("n = 1 short-row tiles keep every precision and B type within its bound", "[gpu][precision]") {
  // Entries scattered over 20,000 columns: at n = 1 the CSR kernel's short rows go in tiles (their B reads are a
  // sector each), which the matrix above (entries mostly clustered) does not reach.
  const std::uint64_t seed = test::test_seed(1013);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::int32_t rows = 333, cols = 20000;
  std::vector<std::int32_t> ri, ci;
  std::vector<double> vi;
  for (std::int32_t r = 0; r < rows; ++r) {
    if (r == 21) continue;  // an empty row: beta * C only
    const double row_scale = std::pow(10.0, -6.0 + 12.0 * unit(rng));
    const int length = r == 100 ? 300 : 1 + static_cast<int>(rng() % 40);  // one medium row
    for (int e = 0; e < length; ++e) {
      const double magnitude = std::pow(10.0, -8.0 + 16.0 * unit(rng)) * row_scale;
      ri.push_back(r);
      ci.push_back(static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(cols)));
      vi.push_back(unit(rng) < 0.5 ? -magnitude : magnitude);
    }
  }
  const CsrMatrix a = csr_from_triplets(rows, cols, ri, ci, vi);
  for (const Precision precision : {Precision::fp16, Precision::bf16, Precision::split}) {
    const Bcsr24Matrix host = stored_per_row(a, TileLayout::automatic, precision);
    const DeviceMatrix dev = with_csr_of_every_band(host);
    for (const ElementType input : b_types(precision))
      for (const double beta : {0.0, -0.5}) {
        INFO(precision_name(precision) << " B " << element_type_name(input) << " beta " << beta);
        const double decades = input == ElementType::automatic && precision == Precision::fp16 ? 2.0 : 6.0;
        const std::vector<float> b = scaled_b(a.cols, 1, decades, seed + 3);
        PlanReport report;
        const test::ModeCheck r = run_mode(a, host, dev, KernelKind::csr_cuda_cores, input, 1, b, 1.5, beta, seed + 7,
                                           TilePipeline::automatic, report);
        CHECK(report.diagnostics.csr_short_tiles > 0);
        CHECK(report.diagnostics.csr_medium_rows == 1);
        check_within_bound(r, a.rows, precision);
      }
  }
}

TEST_CASE("band groups keep every 16-bit precision within its bound", "[gpu][precision][band_groups][.needs_sm90]") {
  const std::uint64_t seed = test::test_seed(1013);
  INFO("seed " << seed);
  if (query_device().compute_capability < 90) BCSR24_SKIP("band groups need compute capability 9.0");
  const CsrMatrix a = wide_range_matrix(333, 517, seed);  // wide per-row scales: row exponents in the epilogue
  for (const Precision precision : {Precision::fp16, Precision::bf16}) {
    ConvertOptions options = test::convert_policy(TileLayout::aligned, Reordering::none);
    options.precision = precision;
    const Bcsr24Matrix host = convert_to_bcsr24(a, options);
    REQUIRE(host.scaling.per_row);
    const DeviceMatrix dev = test::upload_all(host);
    for (const std::int32_t n : {64, 128, 192})  // one, two and three column slices (whole slices only)
      for (const double beta : {0.0, -0.5}) {
        INFO(precision_name(precision) << " n " << n << " beta " << beta);
        const std::vector<float> b = scaled_b(a.cols, n, precision == Precision::fp16 ? 2.0 : 6.0, seed + std::uint64_t(n));
        PlanReport report;
        const test::ModeCheck r = run_mode(a, host, dev, KernelKind::split_pipelined, ElementType::automatic, n, b,
                                           1.5, beta, seed + 9, TilePipeline::automatic, report, BandGroups::on);
        CHECK(report.diagnostics.band_groups == 2);  // 21 bands: 16 + 5
        CHECK(report.diagnostics.band_group_steps > 0);
        check_within_bound(r, std::int64_t(a.rows) * n, precision);
        CHECK(r.output_norm > 0.0);
      }
  }
}

TEST_CASE("plans refuse a B type or kernel the matrix's precision does not take", "[gpu][precision]") {
  const CsrMatrix a = wide_range_matrix(64, 200, 5);
  ConvertOptions bf16_options;
  bf16_options.precision = Precision::bf16;
  const DeviceMatrix bf16_dev = test::upload_all(convert_to_bcsr24(a, bf16_options));
  PlanOptions f16_b;
  f16_b.input = ElementType::f16;
  CHECK_THROWS_AS(test::make_plan(bf16_dev, 8, KernelKind::automatic, f16_b), InvalidArgument);

  ConvertOptions split_options;
  split_options.precision = Precision::split;
  const DeviceMatrix split_dev(convert_to_bcsr24(a, split_options), UploadOptions{});
  PlanOptions half_b;
  half_b.input = ElementType::f16;
  CHECK_THROWS_AS(test::make_plan(split_dev, 8, KernelKind::automatic, half_b), InvalidArgument);
  PlanOptions half_out;
  half_out.output = ElementType::f16;
  CHECK_THROWS_AS(test::make_plan(split_dev, 8, KernelKind::automatic, half_out), InvalidArgument);
  for (const ElementType not_output : {ElementType::automatic, ElementType::bf16}) {  // B types only
    PlanOptions bad_out;
    bad_out.output = not_output;
    CHECK_THROWS_WITH(test::make_plan(bf16_dev, 8, KernelKind::automatic, bad_out),
                      Catch::Contains("is not an output type (expected fp32 or fp16)"));
  }
  const SpmmPlan plan = test::make_plan(split_dev, 8);  // automatic input: fp32 for split
  CHECK(plan.input() == ElementType::f32);
  float* c = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&c), 64 * 8 * 4) == cudaSuccess);
  fp16_t* b16 = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&b16), 96 * 8 * 2) == cudaSuccess);
  CHECK_THROWS_AS(plan.run(b16, 8, c, 8, 1.0f, 0.0f), InvalidArgument);  // a 16-bit B to an fp32-B plan
  cudaFree(b16);
  cudaFree(c);
}
