// The narrow-vector tensor-core path (docs/KERNELS.md, "The narrow-vector path") against Eigen's float64 product:
// every band forced onto vectors and hybrid plans with vectors, on matrices of awkward sizes (rows and columns not
// multiples of 8/16/32, empty windows and bands, a dense row), a banded circuit-like matrix and an arrowhead; widths
// 1 to 256 (narrow, partial m16 tiles, several 64-column slices), fp16 and bf16, fp32 and fp16 C, alpha/beta
// (beta == 1 with empty bands), output addends, unaligned B; bit-identical repeats; the work schedule (a few warps
// walking many windows each, long windows split into parts at several bounds, both mixed with empty windows);
// what the path refuses; and the tuner's candidate.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24_experimental/plan_knobs.hpp"
#include "bcsr24_testkit/structure_classes.hpp"
#include "format/convert.hpp"
#include "gpu/gpu_harness.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using namespace bcsr24::test;

namespace {

/// Awkward sizes: scattered rows with whole windows and a whole band empty, one dense row, 437 x 389.
CsrMatrix scattered_with_holes(std::uint64_t seed) {
  const CsrMatrix base = scattered_csr(437, 389, 7, seed);
  CsrMatrix a;
  a.rows = base.rows;
  a.cols = base.cols;
  a.row_ptr.assign(std::size_t(a.rows) + 1, 0);
  for (std::int32_t r = 0; r < a.rows; ++r) {
    const bool empty = (r >= 24 && r < 32) || (r >= 96 && r < 112);  // a window; a whole band (file order)
    if (r == 50) {
      for (std::int32_t c = 0; c < a.cols; ++c) {
        a.col_idx.push_back(c);
        a.values.push_back(double((c * 7) % 13 - 6) / 8.0 + 0.0625);
      }
    } else if (!empty) {
      for (std::int32_t e = base.row_ptr[r]; e < base.row_ptr[r + 1]; ++e) {
        a.col_idx.push_back(base.col_idx[e]);
        a.values.push_back(base.values[e]);
      }
    }
    a.row_ptr[std::size_t(r) + 1] = std::int32_t(a.col_idx.size());
  }
  return a;
}

CsrMatrix structure(StructureClass kind, std::int32_t rows, std::uint64_t seed) {
  StructureSpec spec;
  spec.kind = kind;
  spec.rows = rows;
  spec.seed = seed;
  return generate_structure(spec);
}

/// The matrix on the device with every list the tests force, the narrow vectors of every band included.
DeviceMatrix upload_with_vectors(const Bcsr24Matrix& host) {
  DeviceMatrix dev = upload_all(host);
  dev.add_vectors_of_every_band(host);
  return dev;
}

/// Long and short windows mixed: every 97th row (from row 5) holds 100 + (13 r mod 2900) entries (windows of 7 to
/// 190 K-steps), the others 3 near the diagonal; rows 800..823 are empty (three whole windows). 2011 x 3001.
CsrMatrix long_and_short_windows(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  CsrMatrix a;
  a.rows = 2011;
  a.cols = 3001;
  a.row_ptr.assign(std::size_t(a.rows) + 1, 0);
  for (std::int32_t r = 0; r < a.rows; ++r) {
    if (r < 800 || r >= 824) {
      if (r % 97 == 5) {
        const std::int32_t length = 100 + (13 * r) % 2900, first = (7 * r) % (a.cols - length);
        for (std::int32_t c = first; c < first + length; ++c) {
          a.col_idx.push_back(c);
          a.values.push_back(value(rng));
        }
      } else {
        for (std::int32_t c = std::max(0, r - 1); c <= r + 1; ++c) {
          a.col_idx.push_back(c);
          a.values.push_back(value(rng));
        }
      }
    }
    a.row_ptr[std::size_t(r) + 1] = std::int32_t(a.col_idx.size());
  }
  return a;
}

PlanKnobs paths_knob(BandPaths paths) {
  PlanKnobs k;
  k.paths = paths;
  return k;
}

/// A test matrix and what it is.
struct Named {
  const char* name;
  CsrMatrix a;
};

}  // namespace

TEST_CASE("narrow vectors: every band on vectors matches the float64 product", "[gpu][vectors]") {
  const std::uint64_t seed = test_seed(1301);
  INFO("seed " << seed);
  const Named matrices[] = {{"scattered with empty windows and bands, a dense row", scattered_with_holes(seed)},
                            {"banded circuit, 3 per row", structure(StructureClass::circuit, 1003, seed)},
                            {"arrowhead", structure(StructureClass::arrowhead, 517, seed)}};
  for (const Named& m : matrices)
    for (const TileLayout layout : {TileLayout::aligned, TileLayout::condensed}) {
      const Bcsr24Matrix host = convert_to_bcsr24(m.a, convert_policy(layout, Reordering::automatic));
      const DeviceMatrix dev = upload_with_vectors(host);
      for (const std::int32_t n : {1, 3, 8, 13, 16, 40, 64, 100, 128, 256}) {
        INFO(m.name << ", " << layout_name(host.layout) << "/" << reordering_name(host.reordering) << ", n = " << n);
        const SpmmPlan plan = make_plan(dev, n, KernelKind::automatic, {}, paths_knob(BandPaths::vectors));
        const PlanReport& r = plan.report();
        INFO(r.reason);
        CHECK(r.vector_bands == host.tile_rows);
        CHECK(r.tile_bands == 0);
        CHECK(r.csr_bands == 0);
        CHECK(r.vector_nnz == m.a.nnz());  // values in [-1, 1) never flush
        CHECK(r.diagnostics.vector_bytes > 0);
        GpuCase cfg = width_case(n, seed);
        cfg.paths = BandPaths::vectors;
        cfg.alpha = n % 2 ? -1.5 : 1.0;
        cfg.beta = n == 13 || n == 100 ? 0.5 : 0.0;
        cfg.ldb_pad = n == 40 ? 3 : 0;  // unaligned B: staged
        cfg.ldc_pad = n == 64 ? 5 : 0;  // C's rows not 16-byte aligned: element by element
        const GpuCheck first = run_and_check(m.a, host, dev, KernelKind::automatic, cfg);
        require_pass(first);
        const GpuCheck second = run_and_check(m.a, host, dev, KernelKind::automatic, cfg);
        CHECK(same_bits(first.c, second.c));  // no atomics, fixed summation order
      }
    }
}

TEST_CASE("narrow vectors: warps walk many windows, long windows split into parts, mixed", "[gpu][vectors]") {
  const std::uint64_t seed = test_seed(1305);
  INFO("seed " << seed);
  // Many short windows per warp (a circuit on 1 to 37 warps); windows longer than the split bound (a dense row,
  // bounds of 3 to 64 steps); both with empty windows between them.
  const Named matrices[] = {{"banded circuit, 3 per row", structure(StructureClass::circuit, 6007, seed)},
                            {"scattered with empty windows and bands, a dense row", scattered_with_holes(seed)},
                            {"long and short windows, empty windows", long_and_short_windows(seed)}};
  struct Schedule {
    std::int32_t warps, piece_steps;
  };
  const Schedule schedules[] = {{1, 0}, {3, 3}, {37, 8}, {0, 5}, {0, 64}, {0, 0}};
  for (const Named& m : matrices) {
    const Bcsr24Matrix host = convert_to_bcsr24(m.a, convert_policy(TileLayout::aligned, Reordering::automatic));
    const DeviceMatrix dev = upload_with_vectors(host);
    for (const Schedule& sched : schedules)
      for (const std::int32_t n : {1, 8, 13, 24, 64, 100, 256}) {  // stages of 2, 4 and 8 pieces a row
        INFO(m.name << ", " << reordering_name(host.reordering) << ", n = " << n << ", " << sched.warps
                    << " warps a slice (0: resident), pieces of at most " << sched.piece_steps << " steps (0: auto)");
        GpuCase cfg;
        cfg.n = n;
        cfg.seed = seed + std::uint64_t(n) * 7 + std::uint64_t(sched.warps);
        cfg.paths = BandPaths::vectors;
        cfg.vector_warps = sched.warps;
        cfg.vector_piece_steps = sched.piece_steps;
        cfg.alpha = n % 2 ? -1.5 : 1.0;
        cfg.beta = n == 13 ? 0.5 : n == 100 ? 1.0 : 0.0;  // beta == 1: the schedule without the empty windows
        cfg.output = n == 8 && sched.warps == 3 ? ElementType::f16 : ElementType::f32;
        cfg.addends = n == 64 && sched.warps == 37 ? 2 : 0;
        cfg.ldc_pad = n == 64 ? 5 : 0;
        cfg.runs = 2;  // the split windows' counters are reset for the next run
        const GpuCheck first = run_and_check(m.a, host, dev, KernelKind::automatic, cfg);
        require_pass(first);
        const GpuCheck second = run_and_check(m.a, host, dev, KernelKind::automatic, cfg);
        CHECK(same_bits(first.c, second.c));  // the parts are added in part order, whichever finishes last
      }
  }
  // The knobs are checked.
  const Bcsr24Matrix host =
      convert_to_bcsr24(scattered_with_holes(seed), convert_policy(TileLayout::aligned, Reordering::none));
  const DeviceMatrix dev = upload_with_vectors(host);
  PlanKnobs bad = paths_knob(BandPaths::vectors);
  bad.vector_warps = -1;
  CHECK_THROWS_AS(make_plan(dev, 8, KernelKind::automatic, {}, bad), InvalidArgument);
}

TEST_CASE("narrow vectors: fp16 C, beta == 1 with empty bands, output addends", "[gpu][vectors]") {
  const std::uint64_t seed = test_seed(1302);
  INFO("seed " << seed);
  const CsrMatrix a = scattered_with_holes(seed);
  const Bcsr24Matrix host = convert_to_bcsr24(a, convert_policy(TileLayout::aligned, Reordering::none));
  const DeviceMatrix dev = upload_with_vectors(host);
  for (const std::int32_t n : {8, 13, 40, 128})
    for (const BandPaths paths : {BandPaths::vectors, BandPaths::hybrid_vectors}) {
      INFO("n = " << n << ", paths " << experimental::band_paths_name(paths));
      const SpmmPlan plan = make_plan(dev, n, KernelKind::automatic, {}, paths_knob(paths));
      CHECK(plan.report().empty_bands > 0);  // the band of rows 96..111
      // fp16 C; beta == 1 (rows without entries keep C); two output addends with beta != 0.
      for (int variant = 0; variant < 3; ++variant) {
        INFO("variant " << variant);
        GpuCase cfg;
        cfg.n = n;
        cfg.seed = seed + std::uint64_t(n) + std::uint64_t(variant);
        cfg.paths = paths;
        if (variant == 0) {
          cfg.output = ElementType::f16;
          cfg.beta = -0.75;
        } else if (variant == 1) {
          cfg.beta = 1.0;
        } else {
          cfg.beta = 0.25;
          cfg.addends = 2;
        }
        const GpuCheck r = run_and_check(a, host, dev, KernelKind::automatic, cfg);
        require_pass(r);
        if (variant == 1)
          for (std::int32_t row = 96; row < 112; ++row)
            for (std::int32_t j = 0; j < n; ++j)
              CHECK(r.c[std::size_t(row) * n + j] == r.c_initial[std::size_t(row) * n + j]);
      }
    }
}

TEST_CASE("narrow vectors in hybrid plans: low-reuse bands on vectors, full bands on tiles", "[gpu][vectors]") {
  const std::uint64_t seed = test_seed(1303);
  INFO("seed " << seed);
  // Rows 0..255: dense 16 x 48 blocks (tiles); the rest a banded circuit (3 per row): low reuse.
  const CsrMatrix circuit = structure(StructureClass::circuit, 2037, seed);
  CsrMatrix a;
  a.rows = 256 + circuit.rows;
  a.cols = circuit.cols;
  a.row_ptr.assign(std::size_t(a.rows) + 1, 0);
  for (std::int32_t r = 0; r < 256; ++r) {
    for (std::int32_t c = r / 16 * 48; c < r / 16 * 48 + 48; ++c) {
      a.col_idx.push_back(c);
      a.values.push_back(double((r * 5 + c * 3) % 17 - 8) / 8.0 + 0.0625);
    }
    a.row_ptr[std::size_t(r) + 1] = std::int32_t(a.col_idx.size());
  }
  for (std::int32_t r = 0; r < circuit.rows; ++r) {
    for (std::int32_t e = circuit.row_ptr[r]; e < circuit.row_ptr[r + 1]; ++e) {
      a.col_idx.push_back(circuit.col_idx[e]);
      a.values.push_back(circuit.values[e]);
    }
    a.row_ptr[std::size_t(256 + r) + 1] = std::int32_t(a.col_idx.size());
  }
  const Bcsr24Matrix host = convert_to_bcsr24(a, convert_policy(TileLayout::aligned, Reordering::none));
  const DeviceMatrix dev = upload_with_vectors(host);
  for (const std::int32_t n : {16, 40, 128, 256}) {
    INFO("n = " << n);
    const SpmmPlan plan = make_plan(dev, n, KernelKind::automatic, {}, paths_knob(BandPaths::hybrid_vectors));
    const PlanReport& r = plan.report();
    INFO(r.reason);
    CHECK(r.vector_bands > 0);
    CHECK(r.tile_bands >= 16);  // the dense blocks
    CHECK(r.tile_bands + r.csr_bands + r.vector_bands == host.tile_rows);
    CHECK(r.sparse24_nnz + r.dense_nnz + r.csr_nnz + r.vector_nnz == a.nnz());
    CHECK(r.reason.find("vectors") != std::string::npos);
    GpuCase cfg = width_case(n, seed);
    cfg.paths = BandPaths::hybrid_vectors;
    cfg.beta = n == 40 ? 0.5 : 0.0;
    require_pass(run_and_check(a, host, dev, KernelKind::automatic, cfg));
  }
}

TEST_CASE("narrow vectors: bf16 matrices with bf16 B stay within the bound of their arithmetic", "[gpu][vectors]") {
  const std::uint64_t seed = test_seed(1304);
  INFO("seed " << seed);
  // The circuit's bands are low-reuse candidates the upload keeps vectors of, so the hybrid runs vectors too.
  for (const CsrMatrix& a : {scattered_with_holes(seed), structure(StructureClass::circuit, 1003, seed)})
  for (const Precision precision : {Precision::bf16, Precision::fp16}) {
    ConvertOptions options = convert_policy(TileLayout::condensed, Reordering::rcm);
    options.precision = precision;
    const Bcsr24Matrix host = convert_to_bcsr24(a, options);
    const DeviceMatrix dev = upload_with_vectors(host);
    for (const std::int32_t n : {5, 16, 72, 256})
      for (const BandPaths paths : {BandPaths::vectors, BandPaths::hybrid_vectors}) {
        INFO(a.rows << " rows, " << precision_name(precision) << ", n = " << n << ", paths "
                    << experimental::band_paths_name(paths));
        std::mt19937_64 rng(seed + std::uint64_t(n));
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        std::vector<float> b(std::size_t(a.cols) * n), c0(std::size_t(a.rows) * n);
        for (float& v : b) v = dist(rng);
        for (float& v : c0) v = dist(rng);
        const GivenB given = given_b(b, false, precision);
        const SpmmPlan plan = make_plan(dev, n, KernelKind::automatic, {}, paths_knob(paths));
        CHECK(plan.input() == (precision == Precision::bf16 ? ElementType::bf16 : ElementType::f16));
        if (paths == BandPaths::vectors) CHECK(plan.report().vector_bands == host.tile_rows);
        if (a.rows == 1003) CHECK(plan.report().vector_bands > 0);
        const ModeCheck r = run_mode_product(a, host, plan, n, false, b, given, c0, 1.25, -0.5,
                                             mode_arithmetic(precision, ElementType::automatic));
        CHECK(r.checked == std::int64_t(a.rows) * n);
        CHECK(r.violations == 0);
        CHECK(r.output_norm > 0.0);
      }
  }
}

TEST_CASE("narrow vectors refuse split precision, fp32 B and other kernels", "[gpu][vectors]") {
  const CsrMatrix a = scattered_csr(123, 77, 5, 3);
  ConvertOptions split = convert_policy(TileLayout::aligned, Reordering::none);
  split.precision = Precision::split;
  const Bcsr24Matrix split_host = convert_to_bcsr24(a, split);
  DeviceMatrix split_dev = upload_all(split_host);
  CHECK_THROWS_AS(split_dev.add_vectors_of_every_band(split_host), InvalidArgument);
  CHECK_THROWS_AS(make_plan(split_dev, 8, KernelKind::automatic, {}, paths_knob(BandPaths::hybrid_vectors)),
                  InvalidArgument);
  const Bcsr24Matrix host = convert_to_bcsr24(a, convert_policy(TileLayout::aligned, Reordering::none));
  const DeviceMatrix without(host, UploadOptions{CsrCopy::all, VectorCopy::none});
  CHECK_THROWS_AS(make_plan(without, 8, KernelKind::automatic, {}, paths_knob(BandPaths::vectors)), InvalidArgument);
  const DeviceMatrix dev = upload_with_vectors(host);
  PlanOptions f32_b;
  f32_b.input = ElementType::f32;
  CHECK_THROWS_AS(make_plan(dev, 8, KernelKind::automatic, f32_b, paths_knob(BandPaths::vectors)), InvalidArgument);
  CHECK_THROWS_AS(make_plan(dev, 8, KernelKind::split_pipelined, {}, paths_knob(BandPaths::vectors)), InvalidArgument);
  // Through the operator, paths = vectors uploads what it needs; split precision is refused by name.
  const SparseOperator op = SparseOperator::from_csr(a);
  CHECK(experimental::make_plan(op, 8, KernelKind::automatic, {}, paths_knob(BandPaths::vectors)).report().vector_bands > 0);
  OperatorOptions split_options;
  split_options.precision = Precision::split;
  const SparseOperator split_op = SparseOperator::from_csr(a, split_options);
  CHECK_THROWS_WITH(experimental::make_plan(split_op, 8, KernelKind::automatic, {}, paths_knob(BandPaths::vectors)),
                    Catch::Contains("split"));
}

TEST_CASE("measured plans time the hybrid with vectors on a banded circuit", "[gpu][vectors][tuner]") {
  const CsrMatrix a = structure(StructureClass::circuit, 60000, 11);
  const SparseOperator op = SparseOperator::from_csr(a);
  for (const std::int32_t n : {32, 128}) {
    PlanOptions options;
    options.tuning = Tuning::measure;
    options.tuning_budget_ms = 200.0;  // room for every candidate
    const SpmmPlan plan = op.make_plan(n, KernelKind::automatic, options);
    const PlanReport& r = plan.report();
    INFO("n = " << n << ": " << r.tuning_reason);
    bool listed = false;
    for (const experimental::PlanCandidate& c : r.diagnostics.candidates) {
      INFO(c.description << ": predicted " << c.predicted_us << " us, measured " << c.measured_us << " us " << c.note);
      listed = listed || c.description.find("vectors") != std::string::npos;
    }
    CHECK(listed);
    CHECK(r.tile_bands + r.csr_bands + r.vector_bands == detail::OperatorAccess::host(op).tile_rows);
  }
}
