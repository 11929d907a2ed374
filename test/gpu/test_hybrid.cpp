// The CUDA-core CSR path and automatic (hybrid) plans against Eigen's float64 product: plans that really split
// the bands, long rows, empty rows with beta != 0, n past one 256-column pass, bit-identical repeats, and the
// CSR copy policies.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>

#include "format/convert.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "cuda_memory.hpp"
#include "gpu/gpu_harness.hpp"
#include "gpu/mixed_matrices.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using namespace bcsr24::test;

TEST_CASE("automatic plans split a mixed matrix between tiles and CSR and stay exact", "[gpu][hybrid]") {
  const std::uint64_t seed = test::test_seed(1101);
  INFO("seed " << seed);
  // 40,000 scattered rows: enough CSR work that the model pays for the second launch.
  const CsrMatrix a = blocks_over_graph(20000, 40000, 60011, 3, seed);
  const Bcsr24Matrix host = convert_to_bcsr24(a);
  const DeviceMatrix dev(host, UploadOptions{});
  REQUIRE(dev.csr_bands() > 0);
  REQUIRE(dev.csr_bands() < host.tile_rows);
  for (std::int32_t n : {8, 37, 128, 300}) {
    INFO("n = " << n);
    const SpmmPlan plan = test::make_plan(dev, n);
    const PlanReport& r = plan.report();
    INFO(r.reason);
    CHECK(r.kernel == KernelKind::automatic);
    if (n >= 128) {
      // Wide B: a scattered band's ~1.5 nonzeros per condensed column no longer pay for a tile's B block.
      // (At small n condensed tiles still win on such bands, and the plan may keep everything on tiles.)
      CHECK(r.tile_bands > 0);
      CHECK(r.csr_bands > 0);
    }
    CHECK(r.tile_bands + r.csr_bands == host.tile_rows);
    CHECK(r.sparse24_nnz + r.dense_nnz + r.csr_nnz == a.nnz());
    CHECK(r.predicted_us <= r.diagnostics.tiles_only_us);
    GpuCase cfg;
    cfg.n = n;
    cfg.beta = n == 37 ? 0.5 : 0.0;
    cfg.alpha = n == 128 ? -1.5 : 1.0;
    cfg.seed = seed + n;
    const auto first = run_and_check(a, host, dev, KernelKind::automatic, cfg);
    require_pass(first);
    const auto second = run_and_check(a, host, dev, KernelKind::automatic, cfg);
    CHECK(same_bits(first.c, second.c));  // deterministic: no atomics, fixed summation order
  }
}

TEST_CASE("CSR path: long and medium rows, empty rows, fp16 output, unaligned B, widths past 256", "[gpu][hybrid]") {
  const std::uint64_t seed = test::test_seed(1102);
  INFO("seed " << seed);
  // 2999 rows, not a multiple of 16: the last band has padding rows. Power-law rows of up to hundreds of entries get
  // a warp or a block each; one full row of 3,001 entries takes more rounds than one block should take once the
  // columns share its lanes.
  const CsrMatrix a = with_full_row(test::power_law_graph(2999, 3001, 9, seed), 1234);
  const Bcsr24Matrix host = convert_to_bcsr24(a);
  const DeviceMatrix dev(host, UploadOptions{CsrCopy::all});
  REQUIRE(dev.csr_bands() == host.tile_rows);
  for (std::int32_t n : {1, 7, 16, 61, 256, 263}) {
    const SpmmPlan plan = test::make_plan(dev, n, KernelKind::csr_cuda_cores);
    CHECK(plan.report().csr_bands == host.tile_rows);
    CHECK(plan.report().diagnostics.csr_long_rows > 0);
    if (n <= 16)
      CHECK(plan.report().diagnostics.csr_medium_rows > 0);  // rows between a group's and a block's share: a warp each
    // The full row: 3,001 entries need more than 4 rounds of a block of 256 / chunks lanes from 2 chunks on
    // (512 entries at 8 chunks), and get several blocks on shares of the chunks.
    if (n >= 16) CHECK(plan.report().diagnostics.csr_long_blocks > plan.report().diagnostics.csr_long_rows);
    else CHECK(plan.report().diagnostics.csr_long_blocks == plan.report().diagnostics.csr_long_rows);
    CHECK(plan.report().csr_nnz == a.nnz());
    for (const ElementType out : {ElementType::f32, ElementType::f16}) {
      GpuCase cfg;
      cfg.n = n;
      cfg.output = out;
      cfg.beta = out == ElementType::f16 ? 0.25 : 0.0;
      cfg.ldb_pad = n % 2 ? 3 : 0;   // ldb % 8 != 0: the plan stages B
      cfg.b_offset = n == 16 ? 1 : 0;  // B not 16-byte aligned
      cfg.ldc_pad = 5;
      cfg.seed = seed + n;
      INFO("n = " << n << (out == ElementType::f16 ? " fp16 out" : " fp32 out"));
      require_pass(run_and_check(a, host, dev, KernelKind::csr_cuda_cores, cfg));
      require_pass(run_and_check(a, host, dev, KernelKind::automatic, cfg));
      // Output addends on every CSR row kind (long, medium, short), n from 1 to past 256.
      cfg.addends = n % 2 ? 1 : 2;
      require_pass(run_and_check(a, host, dev, KernelKind::csr_cuda_cores, cfg));
    }
  }
  SECTION("output addends the plan refuses") {
    const std::int32_t n = 16;
    const SpmmPlan plan = test::make_plan(dev, n, KernelKind::automatic);
    test::DeviceBytes b(std::size_t(a.cols) * n * 2), c(std::size_t(a.rows) * n * 4), d(std::size_t(a.rows) * n * 4);
    const auto* bb = static_cast<const fp16_t*>(b.ptr);
    const auto* dd = static_cast<const float*>(d.ptr);
    const OutputAddend three[3] = {{dd, n, 1.0f}, {dd, n, 1.0f}, {dd, n, 1.0f}};
    CHECK_THROWS_WITH(plan.run(bb, n, c.ptr, n, 1.0f, 0.0f, three, 3), Catch::Contains("at most 2"));
    const OutputAddend null_values[1] = {{nullptr, n, 1.0f}};
    CHECK_THROWS_WITH(plan.run(bb, n, c.ptr, n, 1.0f, 0.0f, null_values, 1), Catch::Contains("addend 0 is null"));
    const OutputAddend narrow[1] = {{dd, n - 1, 1.0f}};
    CHECK_THROWS_WITH(plan.run(bb, n, c.ptr, n, 1.0f, 0.0f, narrow, 1), Catch::Contains("ld 15 < n 16"));
    const OutputAddend shifted[1] = {{static_cast<const float*>(c.ptr) + 1, n, 1.0f}};
    CHECK_THROWS_WITH(plan.run(bb, n, c.ptr, n, 1.0f, 0.0f, shifted, 1), Catch::Contains("overlaps C"));
    const OutputAddend itself[1] = {{static_cast<const float*>(c.ptr), n, 1.0f}};
    CHECK_NOTHROW(plan.run(bb, n, c.ptr, n, 1.0f, 0.0f, itself, 1));
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
  }
}

TEST_CASE("CSR path: rows too long for their blocks are split by entries; the last part to finish adds them",
          "[gpu][hybrid]") {
  // Two full rows of 50,001 entries: at n <= 8 a row has one chunk and so one block of 256 lanes (~49 rounds of
  // loads); from n = 16 on its chunks spread over blocks of one chunk each, and still need ~49 rounds. Either way
  // each block's share is split into one-round parts of ~1,024 entries (kernels::csr_long_row_parts), whose sums the
  // part that counts last on its row's counter adds in a fixed order. Two runs of a plan: the counters are back at
  // zero.
  const std::uint64_t seed = test::test_seed(1103);
  INFO("seed " << seed);
  const CsrMatrix a = with_full_row(with_full_row(test::power_law_graph(1999, 50001, 5, seed), 7), 1500);
  const Bcsr24Matrix host = convert_to_bcsr24(a);
  const DeviceMatrix dev(host, UploadOptions{CsrCopy::all});
  for (std::int32_t n : {1, 3, 8, 16, 64, 256, 263}) {
    const SpmmPlan plan = test::make_plan(dev, n, KernelKind::csr_cuda_cores);
    const PlanReport& r = plan.report();
    INFO("n = " << n << ": " << r.diagnostics.csr_long_rows << " long rows, " << r.diagnostics.csr_long_blocks
                << " blocks, " << r.diagnostics.csr_split_rows << " split by entries");
    CHECK(r.diagnostics.csr_split_rows == 2);
    CHECK(r.diagnostics.csr_long_blocks >= 2 * 12);  // at least 12 parts of each full row
    for (const ElementType out : {ElementType::f32, ElementType::f16}) {
      GpuCase cfg;
      cfg.n = n;
      cfg.output = out;
      cfg.beta = n % 2 ? 0.5 : 0.0;
      cfg.alpha = out == ElementType::f16 ? 0.25 : -1.5;
      cfg.ldc_pad = 3;
      cfg.seed = seed + n;
      cfg.addends = n == 8 ? 2 : (n == 263 ? 1 : 0);
      cfg.runs = 2;  // the part slots are written again: no state carried from one run to the next
      INFO((out == ElementType::f16 ? "fp16 out" : "fp32 out"));
      const auto first = run_and_check(a, host, dev, KernelKind::csr_cuda_cores, cfg);
      require_pass(first);
      const auto second = run_and_check(a, host, dev, KernelKind::csr_cuda_cores, cfg);
      CHECK(same_bits(first.c, second.c));  // parts added in a fixed order: the same bits every run
    }
  }
}

TEST_CASE("CSR path at n = 1: entries read in aligned quads over rows of every length and start", "[gpu][hybrid]") {
  // The one-column kernel loads a row's entries as aligned quads of 4 and masks the entries of other rows. Rows of
  // `base` .. base + 9 entries in turn start at every offset modulo 4, rows of 300 and 700 entries take the medium
  // (a warp) and long (a block) paths, and the copy's last quad is partial. Short rows of 0 .. 9 entries get 1 or 2
  // lanes a row, rows of 12 .. 21 entries 4: a lane's quads then start at every offset from the row's first.
  const std::uint64_t seed = test::test_seed(1110);
  INFO("seed " << seed);
  for (const std::int32_t base : {0, 12}) {
    INFO("short rows of " << base << " .. " << base + 9 << " entries");
    std::mt19937_64 rng(seed + std::uint64_t(base));
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    const std::int32_t rows = 1003, cols = 777;  // base 0: 8,447 entries, the last quad has 3; base 12: 20,447
    std::vector<std::int32_t> ri, ci;
    std::vector<double> vi;
    for (std::int32_t r = 0; r < rows; ++r) {
      const std::int32_t length = r % 250 == 17 ? 700 : r % 250 == 117 ? 300 : base + r % 10;
      for (std::int32_t e = 0; e < length; ++e) {
        ri.push_back(r);
        ci.push_back(static_cast<std::int32_t>((std::int64_t(r) * 131 + std::int64_t(e) * 5) % cols));  // distinct: 5 and 777 coprime
        vi.push_back(unit(rng));
      }
    }
    const CsrMatrix a = csr_from_triplets(rows, cols, ri, ci, vi);
    REQUIRE(a.col_idx.size() == ri.size());
    REQUIRE(a.col_idx.size() % 4 != 0);
    const Bcsr24Matrix host = convert_to_bcsr24(a);
    const DeviceMatrix dev(host, UploadOptions{CsrCopy::all});
    const SpmmPlan plan = test::make_plan(dev, 1, KernelKind::csr_cuda_cores);
    CHECK((plan.report().diagnostics.csr_nz_lanes <= 2) == (base == 0));
    CHECK(plan.report().diagnostics.csr_short_tiles ==
          0);  // entries 5 columns apart: B reads cluster, so groups (not tiles)
    CHECK(plan.report().diagnostics.csr_medium_rows > 0);
    CHECK(plan.report().diagnostics.csr_long_rows > 0);
    for (const double beta : {0.0, 1.0, -0.5}) {
      GpuCase cfg;
      cfg.n = 1;
      cfg.beta = beta;
      cfg.alpha = -1.25;
      cfg.ldb_pad = 2;
      cfg.ldc_pad = 3;
      cfg.seed = seed + 1;
      cfg.runs = 2;
      INFO("beta = " << beta);
      require_pass(run_and_check(a, host, dev, KernelKind::csr_cuda_cores, cfg));
    }
  }
}

TEST_CASE("CSR path at n = 1: short rows in tiles cut at 1024 entries and 256 rows, empty rows, rows of 128 and 129",
          "[gpu][hybrid]") {
  // Columns far apart (B reads scatter: tiles, not groups). Rows 0 .. 999 have 0, 1 or 2 entries (tiles end at 256
  // rows); 1000 .. 1999 have 127 or 128 (tiles end at 1024 entries) and every tenth 129 (a medium row: a warp);
  // 2000 .. 2999 have 0 .. 39 (tiles of every length and start); 3000 .. 3999 have 64; the last row 700 (long: a
  // block). 4,001 rows: the last band has padding rows.
  const std::uint64_t seed = test::test_seed(1111);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const std::int32_t rows = 4001, cols = 200000;
  std::vector<std::int32_t> ri, ci;
  std::vector<double> vi;
  for (std::int32_t r = 0; r < rows; ++r) {
    const std::int32_t length = r < 1000   ? r % 3
                                : r < 2000 ? (r % 10 == 5 ? 129 : 127 + r % 2)
                                : r < 3000 ? r % 40
                                : r < 4000 ? 64
                                           : 700;
    for (std::int32_t e = 0; e < length; ++e) {
      ri.push_back(r);
      ci.push_back(static_cast<std::int32_t>((std::int64_t(r) * 7919 + std::int64_t(e) * 1543) % cols));  // distinct
      vi.push_back(unit(rng));
    }
  }
  const CsrMatrix a = csr_from_triplets(rows, cols, ri, ci, vi);
  REQUIRE(a.col_idx.size() == ri.size());
  const Bcsr24Matrix host = convert_to_bcsr24(a);
  const DeviceMatrix dev(host, UploadOptions{CsrCopy::all});
  const SpmmPlan plan = test::make_plan(dev, 1, KernelKind::csr_cuda_cores);
  const PlanReport& report = plan.report();
  INFO(report.diagnostics.csr_short_tiles << " tiles, " << report.diagnostics.csr_medium_rows << " medium rows, "
                                          << report.diagnostics.csr_long_rows << " long rows");
  CHECK(report.diagnostics.csr_medium_rows == 100);
  CHECK(report.diagnostics.csr_long_rows == 1);
  // At least: 1000 rows of <= 2 entries in tiles of <= 256 rows; a tile per run of 127..128-entry rows (a medium
  // row ends a run); 1000 rows of 64 sixteen to a tile.
  CHECK(report.diagnostics.csr_short_tiles >= 4 + 100 + 1000 / 16);
  for (const double beta : {0.0, 1.0, -0.5}) {
    for (const ElementType output : {ElementType::f32, ElementType::f16}) {
      GpuCase cfg;
      cfg.n = 1;
      cfg.beta = beta;
      cfg.alpha = 0.625;
      cfg.ldb_pad = 1;
      cfg.ldc_pad = 2;
      cfg.output = output;
      cfg.addends = beta < 0.0 ? 1 : 0;
      cfg.seed = seed + 2;
      cfg.runs = 2;
      INFO("beta = " << beta << ", fp16 output " << (output == ElementType::f16));
      const GpuCheck r = run_and_check(a, host, dev, KernelKind::csr_cuda_cores, cfg);
      require_pass(r);
      if (beta == 1.0) {
        // Empty rows keep C bit for bit (beta = 1, no addends: the tile leaves them alone).
        for (std::int32_t row = 0; row < 3000; ++row) {
          if (a.row_ptr[std::size_t(row) + 1] != a.row_ptr[std::size_t(row)]) continue;
          const std::size_t at = std::size_t(row) * std::size_t(cfg.n + cfg.ldc_pad);
          INFO("empty row " << row);
          REQUIRE(same_bits({r.c[at]}, {r.c_initial[at]}));
        }
      }
    }
  }
}

TEST_CASE("CSR path at n = 1: tiles of a row-reordered matrix write their rows through out_row", "[gpu][hybrid]") {
  // RCM numbers the rows anew, so a tile's slots do not write consecutive rows of C (CsrShortTile::row_base -1): each
  // slot's row comes from out_row. The graph's columns stay scattered, so the plan still takes tiles.
  const std::uint64_t seed = test::test_seed(1112);
  INFO("seed " << seed);
  const CsrMatrix a = test::power_law_graph(30001, 0, 6, seed);
  const Bcsr24Matrix host = convert_to_bcsr24(a, test::convert_policy(TileLayout::aligned, Reordering::rcm));
  REQUIRE(host.reordering == Reordering::rcm);
  REQUIRE_FALSE(host.row_order.empty());
  const DeviceMatrix dev(host, UploadOptions{CsrCopy::all});
  const SpmmPlan plan = test::make_plan(dev, 1, KernelKind::csr_cuda_cores);
  INFO(plan.report().diagnostics.csr_short_tiles << " tiles");
  CHECK(plan.report().diagnostics.csr_short_tiles > 0);
  for (const double beta : {0.0, 1.0}) {
    GpuCase cfg;
    cfg.n = 1;
    cfg.beta = beta;
    cfg.alpha = -0.75;
    cfg.ldb_pad = 3;
    cfg.seed = seed + 1;
    cfg.runs = 2;
    INFO("beta = " << beta);
    require_pass(run_and_check(a, host, dev, KernelKind::csr_cuda_cores, cfg));
  }
}

TEST_CASE("CSR copy policies: none keeps automatic on tiles, csr_cuda_cores needs every band", "[gpu][hybrid]") {
  RandomGraphSpec spec;
  spec.rows = 5000;
  spec.degree = 4;
  const CsrMatrix a = generate_random_graph(spec);
  const Bcsr24Matrix host = convert_to_bcsr24(a);
  const DeviceMatrix none(host, UploadOptions{CsrCopy::none});
  CHECK(none.csr_bands() == 0);
  const SpmmPlan tiles_only = test::make_plan(none, 64);
  CHECK(tiles_only.report().csr_bands == 0);
  CHECK(tiles_only.report().tile_bands == host.tile_rows);
  CHECK_THROWS_AS(test::make_plan(none, 64, KernelKind::csr_cuda_cores), InvalidArgument);
  GpuCase cfg;
  cfg.n = 64;
  require_pass(run_and_check(a, host, none, KernelKind::automatic, cfg));

  // A scattered graph: every band is a candidate, and the plan puts (at least some of) it on CSR.
  spec.rows = 200000;
  const CsrMatrix big = generate_random_graph(spec);
  const Bcsr24Matrix big_host = convert_to_bcsr24(big);
  const DeviceMatrix candidates(big_host, UploadOptions{});
  CHECK(candidates.csr_bands() == big_host.tile_rows);
  const SpmmPlan plan = test::make_plan(candidates, 16);
  INFO(plan.report().reason);
  CHECK(plan.report().csr_bands > 0);
  cfg.n = 16;
  require_pass(run_and_check(big, big_host, candidates, KernelKind::automatic, cfg));
}

TEST_CASE("beta = 1 skips the bands and rows without entries and leaves their C untouched; output addends reach "
          "every row", "[gpu][hybrid]") {
  const std::uint64_t seed = test::test_seed(1107);
  INFO("seed " << seed);
  // 6,000 rows, entries in three stretches only (a halo part looks like this): dense 16 x 64 blocks (tiles), a
  // scattered stretch with some empty rows (CSR for wide B), and one long row; every other band is empty.
  const CsrMatrix blocks = blocks_over_graph(160, 300, 4001, 3, seed);
  CsrMatrix a;
  a.rows = 6000;
  a.cols = blocks.cols;
  a.row_ptr.assign(std::size_t(a.rows) + 1, 0);
  auto copy_row = [&](std::int32_t from) {
    for (std::int32_t e = blocks.row_ptr[from]; e < blocks.row_ptr[from + 1]; ++e) {
      a.col_idx.push_back(blocks.col_idx[e]);
      a.values.push_back(blocks.values[e]);
    }
  };
  for (std::int32_t r = 0; r < a.rows; ++r) {
    if (r >= 1000 && r < 1160) copy_row(r - 1000);              // the dense blocks
    else if (r >= 3000 && r < 3300) copy_row(160 + (r - 3000));  // the scattered stretch
    else if (r == 5001)
      for (std::int32_t c = 0; c < a.cols; c += 3) {                // one long row
        a.col_idx.push_back(c);
        a.values.push_back(double(c % 11) / 8.0 - 0.5);
      }
    a.row_ptr[std::size_t(r) + 1] = std::int32_t(a.col_idx.size());
  }
  const Bcsr24Matrix host = convert_to_bcsr24(a);
  UploadOptions upload;
  upload.csr = CsrCopy::all;  // csr_cuda_cores
  const DeviceMatrix dev(host, upload);
  for (const KernelKind kernel : {KernelKind::automatic, KernelKind::split_pipelined, KernelKind::csr_cuda_cores}) {
    for (const std::int32_t n : {8, 37, 200}) {
      INFO(kernel_name(kernel) << ", n = " << n);
      for (const double beta : {1.0, 0.5}) {
        INFO("beta = " << beta);
        GpuCase cfg;
        cfg.n = n;
        cfg.alpha = 0.75;
        cfg.beta = beta;
        cfg.ldc_pad = 3;
        cfg.seed = seed + std::uint64_t(n);
        const test::GpuCheck r = run_and_check(a, host, dev, kernel, cfg);
        require_pass(r);
        // Rows without entries: beta = 1 keeps C bit for bit (nothing ran there), beta = 0.5 halves it.
        const std::int64_t ldc = n + cfg.ldc_pad;
        std::int64_t empty_rows = 0, kept = 0;
        for (std::int32_t i = 0; i < a.rows; ++i) {
          if (a.row_ptr[std::size_t(i) + 1] > a.row_ptr[std::size_t(i)]) continue;
          ++empty_rows;
          for (std::int32_t j = 0; j < n; ++j) {
            const float before = r.c_initial[std::size_t(i * ldc + j)];
            const float after = r.c[std::size_t(i * ldc + j)];
            if (beta == 1.0 ? after == before : after == float(0.5 * before)) ++kept;
          }
        }
        CHECK(empty_rows > 5000);
        CHECK(kept == empty_rows * n);
        // With addends every row gets them, the rows without entries too (beta = 1 then skips nothing).
        for (const int addends : {1, 2}) {
          INFO(addends << " addends");
          cfg.addends = addends;
          require_pass(run_and_check(a, host, dev, kernel, cfg));
        }
      }
      // Every band without tiles (in the layout's row order) is reported, and skipped at beta = 1.
      std::int32_t bands_without_tiles = 0;
      for (std::int32_t t = 0; t < host.tile_rows; ++t)
        if (host.sparse24.row_ptr[std::size_t(t) + 1] == host.sparse24.row_ptr[std::size_t(t)] &&
            host.dense.row_ptr[std::size_t(t) + 1] == host.dense.row_ptr[std::size_t(t)])
          ++bands_without_tiles;
      CHECK(bands_without_tiles > 300);  // 375 bands, ~32 with entries
      const SpmmPlan plan = test::make_plan(dev, n, kernel);
      CHECK(plan.report().empty_bands == bands_without_tiles);
    }
  }
}
