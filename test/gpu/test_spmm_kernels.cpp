// Every kernel of the ladder against Eigen's float64 product, on awkward shapes, widths and scalars.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "format/convert.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24/matrix_market.hpp"
#include "gpu/gpu_harness.hpp"
#include "test_skip.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using namespace bcsr24::test;

namespace {

struct Prepared {
  CsrMatrix csr;
  Bcsr24Matrix host;
  DeviceMatrix dev;
};

/// The tests of this file were written for the aligned file-order layout (they count tiles of each kind on the
/// tile grid); test_layouts.cpp runs the same kernels on every layout and reordering.
ConvertOptions aligned_file_order() {
  ConvertOptions options;
  options.layout = TileLayout::aligned;
  options.reorder = Reordering::none;
  return options;
}

Prepared prepare(CsrMatrix csr, const ConvertOptions& options = aligned_file_order()) {
  Bcsr24Matrix host = convert_to_bcsr24(csr, options);
  DeviceMatrix dev = test::upload_all(host);
  return Prepared{std::move(csr), std::move(host), std::move(dev)};
}

}  // namespace

TEST_CASE("kernels match float64 on XdYs matrices of awkward sizes and every width", "[gpu][xdys]") {
  const std::uint64_t seed = test::test_seed(20261122);
  INFO("seed " << seed);
  struct Shape { std::int32_t m, k; double d, s; };
  const Shape shapes[] = {{37, 45, 20, 20}, {100, 77, 10, 30}, {250, 333, 15, 15}, {1000, 999, 5, 10},
                          {16, 32, 50, 50}, {1, 1, 100, 0},   {513, 2049, 3, 3}};
  const std::int32_t widths[] = {1, 7, 8, 9, 16, 33, 64, 128, 256};
  for (const Shape& sh : shapes) {
    Prepared p = prepare(test::xdys_matrix(sh.m, sh.k, sh.d, sh.s, seed + sh.m));
    for (KernelKind kernel : all_kernels())
      for (std::int32_t n : widths) {
        GpuCase cfg;
        cfg.n = n;
        cfg.seed = seed + n;
        INFO(kernel_name(kernel) << " " << sh.m << "x" << sh.k << " " << sh.d << "d" << sh.s << "s n=" << n);
        require_pass(run_and_check(p.csr, p.host, p.dev, kernel, cfg));
      }
  }
}

TEST_CASE("alpha, beta, leading dimensions, unaligned B and fp16 output", "[gpu][scalars]") {
  const std::uint64_t seed = test::test_seed(77);
  INFO("seed " << seed);
  Prepared p = prepare(test::xdys_matrix(123, 211, 10, 10, seed));
  REQUIRE(p.host.sparse24.tiles() > 0);
  REQUIRE(p.host.dense.tiles() > 0);
  struct Scalars { double alpha, beta; };
  const Scalars scalars[] = {{1, 0}, {2.5, 0}, {-0.75, 0.5}, {1, 1}, {0.5, -2}};
  for (KernelKind kernel : all_kernels())
    for (const Scalars& sc : scalars)
      for (ElementType out : {ElementType::f32, ElementType::f16})
        for (std::int32_t n : {5, 24, 40}) {
          GpuCase cfg;
          cfg.n = n;
          cfg.alpha = sc.alpha;
          cfg.beta = sc.beta;
          cfg.output = out;
          cfg.ldb_pad = n % 2 ? 3 : 8;  // odd ldb forces the staging copy, 8 keeps the direct path
          // ldc = n + 5 (not a multiple of 4: the epilogue's element-wise stores) except at n = 24, where
          // ldc = 32 takes its four-column stores (and loads of C, with beta) with padding left after them.
          cfg.ldc_pad = n == 24 ? 8 : 5;
          cfg.b_offset = n == 24 ? 1 : 0;  // misaligned pointer
          cfg.seed = seed + n;
          INFO(kernel_name(kernel) << " alpha " << sc.alpha << " beta " << sc.beta << " n " << n
                                   << (out == ElementType::f16 ? " fp16 out" : " fp32 out"));
          require_pass(run_and_check(p.csr, p.host, p.dev, kernel, cfg));
        }
}

TEST_CASE("split kernel runs both loops: all-2:4, all-dense and mixed lists", "[gpu][split]") {
  const std::uint64_t seed = test::test_seed(5);
  INFO("seed " << seed);
  // If the 2:4 loop were skipped, the all-2:4 case would give zero output; if the dense loop were skipped,
  // the all-dense case would; the mixed case needs both summed into the same accumulators.
  struct Mix { double d, s; bool want_sparse, want_dense; };
  for (const Mix& mix : {Mix{0, 40, true, false}, Mix{40, 0, false, true}, Mix{20, 20, true, true}}) {
    Prepared p = prepare(test::xdys_matrix(301, 419, mix.d, mix.s, seed));
    CHECK((p.host.sparse24.tiles() > 0) == mix.want_sparse);
    CHECK((p.host.dense.tiles() > 0) == mix.want_dense);
    for (KernelKind kernel : all_kernels())
      for (std::int32_t n : {8, 33}) {
        GpuCase cfg;
        cfg.n = n;
        cfg.seed = seed + n;
        INFO(kernel_name(kernel) << " " << mix.d << "d" << mix.s << "s n=" << n);
        require_pass(run_and_check(p.csr, p.host, p.dev, kernel, cfg));
      }
  }
}

TEST_CASE("tile rows of very different lengths and empty tile rows", "[gpu][imbalance]") {
  const std::uint64_t seed = test::test_seed(11);
  INFO("seed " << seed);
  // Row block 0: every column (2:4 and dense tiles alternating); row block 3: one entry; others empty;
  // the last (partial) row block: a long dense run.
  const std::int32_t m = 16 * 6 + 5, k = 32 * 70 + 7;
  test::RandomTriplets t(seed);
  for (std::int32_t r = 0; r < 16; ++r)
    for (std::int32_t c = 0; c < k; ++c)
      if ((c / 32) % 2 == 0 ? (c % 4) < 2 : true) t.add(r, c);  // even tile columns 2:4, odd dense
  t.add(3 * 16 + 7, 1000);
  for (std::int32_t r = 16 * 6; r < m; ++r)
    for (std::int32_t c = 0; c < k / 2; ++c) t.add(r, c);
  Prepared p = prepare(t.csr(m, k));
  const TileCensus census = p.host.census();
  CHECK(census.empty_tile_rows >= 3);
  CHECK(census.max_tiles_per_tile_row >= 70);
  for (KernelKind kernel : all_kernels())
    for (std::int32_t n : {8, 64, 100}) {
      GpuCase cfg;
      cfg.n = n;
      cfg.beta = 0.25;  // empty tile rows must still compute beta * C
      cfg.seed = seed + n;
      INFO(kernel_name(kernel) << " n=" << n);
      require_pass(run_and_check(p.csr, p.host, p.dev, kernel, cfg));
    }
}

TEST_CASE("results are bit-identical across runs (deterministic reduction)", "[gpu][determinism]") {
  Prepared p = prepare(test::xdys_matrix(700, 900, 10, 10, 3));
  GpuCase cfg;
  cfg.n = 32;
  for (KernelKind kernel : all_kernels()) {
    const test::GpuCheck a = run_and_check(p.csr, p.host, p.dev, kernel, cfg);
    const test::GpuCheck b = run_and_check(p.csr, p.host, p.dev, kernel, cfg);
    require_pass(a);
    REQUIRE(a.c == b.c);
  }
}

TEST_CASE("values beyond fp16 range are scaled, not turned into inf", "[gpu][scaling]") {
  CsrMatrix a = test::xdys_matrix(90, 130, 20, 20, 9);
  for (double& v : a.values) v *= 1.0e6;  // far beyond fp16's 65504
  // Both policies: one exponent per row (the default) and one for the whole matrix.
  for (const ScalingPolicy policy : {ScalingPolicy::per_row, ScalingPolicy::automatic}) {
    ConvertOptions options = aligned_file_order();
    options.scaling = policy;
    Prepared p = prepare(a, options);
    if (policy == ScalingPolicy::per_row)
      REQUIRE(p.host.scaling.min_row_exponent > 0);
    else
      REQUIRE(p.host.scaling.exponent > 0);
    GpuCase cfg;
    cfg.n = 16;
    for (KernelKind kernel : all_kernels()) {
      INFO(kernel_name(kernel));
      require_pass(run_and_check(p.csr, p.host, p.dev, kernel, cfg));
    }
  }
}

TEST_CASE("real SuiteSparse matrices", "[gpu][suitesparse][.needs_data]") {
  const auto dir = test::shared_data_dir();
  if (!dir) BCSR24_SKIP("shared data not found (../shared/data or $BCSR24_SHARED_DATA): no SuiteSparse matrices");
  // Real or integer matrices of modest size (the float64 reference runs on the CPU).
  const char* names[] = {"bcsstk16", "Andrews", "memplus", "494_bus", "Trefethen_300", "Harvard500", "G51"};
  int ran = 0;
  for (const char* name : names) {
    const std::string path = *dir + "/suitesparse/" + name + ".mtx";
    if (!std::filesystem::exists(path)) {
      WARN("missing " << path);
      continue;
    }
    // The thesis layout and whatever the default (automatic) policy picks for the matrix.
    for (const ConvertOptions& options : {aligned_file_order(), ConvertOptions{}}) {
      Prepared p = prepare(read_matrix_market(path), options);
      for (KernelKind kernel : all_kernels())
        for (std::int32_t n : {8, 33}) {
          GpuCase cfg;
          cfg.n = n;
          cfg.seed = 1000 + n;
          INFO(name << " " << layout_name(p.host.layout) << "/" << reordering_name(p.host.reordering) << " "
                    << kernel_name(kernel) << " n=" << n);
          require_pass(run_and_check(p.csr, p.host, p.dev, kernel, cfg));
        }
    }
    ++ran;
  }
  REQUIRE(ran > 0);
}
