// Every kernel on every tile layout and row reordering against Eigen's float64 product: gathered B rows and
// C rows written through the row map, on rectangular matrices, empty rows and columns, a band of more than 2^16
// columns, n = 1 .. 256, alpha/beta, fp16 output and randomly numbered meshes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "format/convert.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "gpu/gpu_harness.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using namespace bcsr24::test;

namespace {


std::vector<ConvertOptions> all_policies() {
  std::vector<ConvertOptions> out;
  for (TileLayout l : {TileLayout::aligned, TileLayout::condensed, TileLayout::automatic})
    for (Reordering r : {Reordering::none, Reordering::rcm, Reordering::automatic}) out.push_back(test::convert_policy(l, r));
  return out;
}


std::string describe(const Bcsr24Matrix& host) {
  const TileCensus c = host.census();
  return std::string(layout_name(host.layout)) + "/" + reordering_name(host.reordering) + " (" +
         std::to_string(c.sparse24_tiles) + " 2:4 + " + std::to_string(c.dense_tiles) + " dense tiles)";
}

}  // namespace

TEST_CASE("every layout and reordering, every kernel, awkward shapes and widths", "[gpu][layout]") {
  const std::uint64_t seed = test::test_seed(808);
  INFO("seed " << seed);
  struct Shape { std::int32_t m, k; int per_row; };
  const Shape shapes[] = {{37, 45, 6}, {250, 333, 9}, {77, 1000, 40}, {1000, 99, 5}, {513, 513, 12}};
  const std::int32_t widths[] = {1, 9, 33, 130, 256};
  for (const Shape& sh : shapes) {
    const CsrMatrix a = test::scattered_csr(sh.m, sh.k, sh.per_row, seed + std::uint64_t(sh.m));
    for (const ConvertOptions& options : all_policies()) {
      const Bcsr24Matrix host = convert_to_bcsr24(a, options);
      const DeviceMatrix dev = test::upload_all(host);
      for (KernelKind kernel : all_kernels())
        for (std::int32_t n : widths) {
          GpuCase cfg;
          cfg.n = n;
          cfg.beta = n == 9 ? 0.5 : 0.0;
          cfg.seed = seed + n;
          INFO(sh.m << "x" << sh.k << " asked " << layout_name(options.layout) << "/" << reordering_name(options.reorder)
                    << " got " << describe(host) << " " << kernel_name(kernel) << " n=" << n);
          require_pass(run_and_check(a, host, dev, kernel, cfg));
        }
    }
  }
}

TEST_CASE("gathered layouts: alpha, beta, leading dimensions, unaligned B, fp16 output", "[gpu][layout]") {
  const std::uint64_t seed = test::test_seed(809);
  INFO("seed " << seed);
  // Square, so that aligned + rcm permutes the columns too and gathers B rows.
  const CsrMatrix a = test::scattered_csr(419, 419, 14, seed);
  for (const ConvertOptions& options : {test::convert_policy(TileLayout::condensed, Reordering::rcm), test::convert_policy(TileLayout::aligned, Reordering::rcm)}) {
    const Bcsr24Matrix host = convert_to_bcsr24(a, options);
    REQUIRE(host.gathered());
    REQUIRE_FALSE(host.row_order.empty());
    const DeviceMatrix dev = test::upload_all(host);
    for (KernelKind kernel : all_kernels())
      for (ElementType out : {ElementType::f32, ElementType::f16})
        for (std::int32_t n : {5, 24, 40}) {
          GpuCase cfg;
          cfg.n = n;
          cfg.alpha = n == 5 ? -0.75 : 2.5;
          cfg.beta = n == 40 ? -2.0 : 0.5;
          cfg.output = out;
          cfg.ldb_pad = n % 2 ? 3 : 8;
          cfg.ldc_pad = 5;
          cfg.b_offset = n == 24 ? 1 : 0;
          cfg.seed = seed + n;
          INFO(describe(host) << " " << kernel_name(kernel) << " n=" << n
                              << (out == ElementType::f16 ? " fp16" : " fp32"));
          require_pass(run_and_check(a, host, dev, kernel, cfg));
        }
  }
}

TEST_CASE("tiles whose B rows lie far apart (more than 2^16 columns) and close together", "[gpu][layout]") {
  for (const std::int32_t cols : {140000, 20000}) {
    const CsrMatrix a = test::scattered_csr(300, cols, 6, 77);
    const Bcsr24Matrix host = convert_to_bcsr24(a, test::convert_policy(TileLayout::condensed, Reordering::rcm));
    REQUIRE(host.b_row_index() == BRowIndex::full);
    const DeviceMatrix dev = test::upload_all(host);
    for (KernelKind kernel : all_kernels())
      for (std::int32_t n : {3, 8, 40, 128}) {
        GpuCase cfg;
        cfg.n = n;
        cfg.beta = n == 40 ? -1.5 : 0.0;
        cfg.seed = 5 + n;
        INFO(cols << " columns, " << describe(host) << " " << kernel_name(kernel) << " n=" << n);
        require_pass(run_and_check(a, host, dev, kernel, cfg));
      }
  }
}

TEST_CASE("a band with more than 2^16 distinct columns", "[gpu][layout]") {
  const CsrMatrix a = test::wide_band_csr();
  const Bcsr24Matrix host = convert_to_bcsr24(a, test::convert_policy(TileLayout::condensed, Reordering::none));
  REQUIRE(host.census().stored_tiles() > 65536 / 32);
  const DeviceMatrix dev = test::upload_all(host);
  for (KernelKind kernel : all_kernels())
    for (std::int32_t n : {8, 64}) {
      GpuCase cfg;
      cfg.n = n;
      INFO(kernel_name(kernel) << " n=" << n);
      require_pass(run_and_check(a, host, dev, kernel, cfg));
    }
}

TEST_CASE("randomly numbered 3-D mesh: the default policy restores tiles and multiplies correctly", "[gpu][layout][mesh]") {
  const CsrMatrix a = generate_mesh_matrix(test::randomly_numbered_mesh(14, 13, 11, 3));
  const Bcsr24Matrix host = convert_to_bcsr24(a);
  INFO(describe(host));
  REQUIRE(host.reordering == Reordering::rcm);
  const DeviceMatrix dev = test::upload_all(host);
  for (KernelKind kernel : all_kernels())
    for (std::int32_t n : {8, 32, 128}) {
      GpuCase cfg;
      cfg.n = n;
      cfg.seed = 17 + n;
      INFO(kernel_name(kernel) << " n=" << n);
      require_pass(run_and_check(a, host, dev, kernel, cfg));
    }
}
