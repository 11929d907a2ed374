// The plan cost model (lib/src/device/cost_model.hpp): host code, so its choices are tested without a GPU; and the
// width-dependent shapes plans take from n (tile slices, CSR chunks) at every width around their boundaries; and
// the DRAM bytes a plan's report says a product moves (bcsr24_testkit/metrics.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "format/convert.hpp"
#include "bcsr24_testkit/metrics.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "device/cost_model.hpp"
#include "device/tile_schedule.hpp"
#include "format/band_csr.hpp"
#include "kernels/csr_params.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/sm_limits.hpp"
#include "kernels/spmm_params.hpp"

using namespace bcsr24;

namespace {

detail::BandStats band(std::int32_t sparse24_tiles, std::int32_t dense_tiles, std::int64_t nnz) {
  detail::BandStats s;
  s.sparse24_tiles = sparse24_tiles;
  s.dense_tiles = dense_tiles;
  s.sparse24_nnz = sparse24_tiles ? nnz : 0;
  s.dense_nnz = sparse24_tiles ? 0 : nnz;
  s.rows = 16;
  s.max_row_nnz = std::int32_t(nnz / 16 + 1);
  return s;
}

detail::CostContext context(std::int32_t n, bool gathered) {
  return detail::CostContext{n, gathered, 100000, std::int64_t(50) << 20};
}

}  // namespace

TEST_CASE("cost model: full tiles stay on tensor cores, one nonzero per tile goes to CSR", "[cost_model]") {
  const detail::BandStats full = band(0, 8, 8 * 512);   // 512 nonzeros per tile: B rows reused 16 times
  const detail::BandStats lonely = band(20, 0, 20);     // 1 nonzero per tile: a B row load per nonzero
  for (std::int32_t n : {1, 8, 16, 32, 64, 128, 256, 300}) {
    INFO("n = " << n);
    CHECK(detail::tile_band_ns(full, context(n, false)) < detail::csr_band_ns(full, context(n, false)));
    CHECK(detail::csr_band_ns(lonely, context(n, true)) < detail::tile_band_ns(lonely, context(n, true)));
  }
  const std::vector<std::uint8_t> candidates = detail::csr_candidate_bands({full, lonely}, true, 100000, std::int64_t(50) << 20);
  CHECK(candidates == std::vector<std::uint8_t>{0, 1});
}

TEST_CASE("cost model: the plan is tiles only, CSR only or hybrid, whichever is predicted fastest", "[cost_model]") {
  const detail::BandStats full = band(0, 8, 8 * 512), lonely = band(20, 0, 20);
  SECTION("block matrix: tiles only") {
    const std::vector<detail::BandStats> bands(1000, full);
    const detail::PathChoice c = detail::choose_paths(bands, std::vector<std::uint8_t>(bands.size(), 1), context(32, false));
    CHECK(c.chosen_ns == c.tiles_only_ns);
    CHECK(std::count(c.to_csr.begin(), c.to_csr.end(), 1) == 0);
  }
  SECTION("scattered matrix: CSR only") {
    const std::vector<detail::BandStats> bands(1000, lonely);
    const detail::PathChoice c = detail::choose_paths(bands, std::vector<std::uint8_t>(bands.size(), 1), context(32, true));
    CHECK(c.chosen_ns == c.csr_only_ns);
    CHECK(std::count(c.to_csr.begin(), c.to_csr.end(), 1) == 1000);
    CHECK(c.csr_only_ns < c.tiles_only_ns);
  }
  SECTION("both kinds, enough of each to pay for a second launch: hybrid") {
    std::vector<detail::BandStats> bands(5000, full);
    bands.insert(bands.end(), 5000, lonely);
    const detail::PathChoice c = detail::choose_paths(bands, std::vector<std::uint8_t>(bands.size(), 1), context(64, true));
    CHECK(c.chosen_ns == c.hybrid_ns);
    CHECK(c.hybrid_ns < c.tiles_only_ns);
    CHECK(c.hybrid_ns < c.csr_only_ns);
    for (std::size_t b = 0; b < bands.size(); ++b) REQUIRE(c.to_csr[b] == (b >= 5000 ? 1 : 0));
  }
  SECTION("bands without a CSR copy always stay on tiles") {
    const std::vector<detail::BandStats> bands(1000, lonely);
    std::vector<std::uint8_t> has(bands.size(), 1);
    has[7] = 0;
    const detail::PathChoice c = detail::choose_paths(bands, has, context(32, true));
    CHECK(c.csr_only_ns < 0);
    CHECK(c.to_csr[7] == 0);
    CHECK(c.chosen_ns == c.hybrid_ns);
  }
  SECTION("one band far longer than the rest leaves the tiles when it is the critical path") {
    // 300 tiles of one row each (a dense row): alone ~75 rounds of one block; as a CSR row one block-wide row.
    detail::BandStats skewed = band(300, 0, 300 * 16);
    skewed.max_row_nnz = 300 * 16;
    std::vector<detail::BandStats> bands(400, full);
    bands.push_back(skewed);
    const detail::PathChoice c = detail::choose_paths(bands, std::vector<std::uint8_t>(bands.size(), 1), context(32, true));
    CHECK(c.to_csr.back() == 1);
    // While its long row keeps the CSR launch busy, other bands may follow it there at no cost, but most stay.
    CHECK(std::count(c.to_csr.begin(), c.to_csr.end(), 1) < 200);
    CHECK(c.chosen_ns == c.hybrid_ns);
    CHECK(c.hybrid_ns < c.tiles_only_ns);
    CHECK(detail::tile_band_latency_ns(skewed, context(32, true)) > c.hybrid_ns);
  }
  SECTION("fewer than 8 columns: the tile plans pay for the padded copy of B, CSR reads B as it is") {
    // Same bands, same tile slice (8 columns) at n = 1 and n = 8: only the staging of a 1-column B differs.
    const std::vector<detail::BandStats> bands(20, full);
    const std::vector<std::uint8_t> has(bands.size(), 1);
    const detail::PathChoice one = detail::choose_paths(bands, has, context(1, false));
    const detail::PathChoice eight = detail::choose_paths(bands, has, context(8, false));
    CHECK(one.tiles_only_ns > eight.tiles_only_ns + 4000.0);
    CHECK(one.csr_only_ns <= eight.csr_only_ns);
  }
  SECTION("a row too long for one block's lanes at wide n runs a block per 8 columns") {
    // 6,833 entries (rajat01's longest row): at n = 256 a block has 8 lanes per chunk (~210 rounds of loads);
    // on 32 blocks of one chunk each it has 256 (7 rounds), as at n = 8.
    detail::BandStats skewed = band(0, 200, 6833 + 15 * 4);
    skewed.max_row_nnz = 6833;
    CHECK(detail::csr_band_latency_ns(skewed, context(256, true)) == detail::csr_band_latency_ns(skewed, context(8, true)));
    // A row that fits 4 rounds of a block keeps its block: the latency grows with the columns' share of lanes.
    skewed.max_row_nnz = 100;
    CHECK(detail::csr_band_latency_ns(skewed, context(256, true)) > detail::csr_band_latency_ns(skewed, context(8, true)));
  }
  SECTION("a tiny matrix does not pay a second launch for a small gain") {
    const std::vector<detail::BandStats> bands = {full, lonely};
    const detail::PathChoice c = detail::choose_paths(bands, {1, 1}, context(8, true));
    CHECK(c.hybrid_ns > c.tiles_only_ns);
    CHECK(c.chosen_ns == std::min(c.tiles_only_ns, c.csr_only_ns));
  }
}

TEST_CASE("cost model on generated matrices: a random graph is a CSR candidate, a block matrix is not", "[cost_model]") {
  RandomGraphSpec graph;
  graph.rows = 4000;
  graph.degree = 6;
  const Bcsr24Matrix scattered = convert_to_bcsr24(generate_random_graph(graph));
  const std::vector<detail::BandStats> scattered_stats = detail::band_stats(scattered);
  const auto scattered_candidates = detail::csr_candidate_bands(scattered_stats, scattered.gathered(), scattered.cols, std::int64_t(50) << 20);
  CHECK(std::count(scattered_candidates.begin(), scattered_candidates.end(), 1) == scattered.tile_rows);

  XdYsSpec spec;
  spec.rows = spec.cols = 2048;
  spec.dense_percent = 10;
  const Bcsr24Matrix blocks = convert_to_bcsr24(generate_xdys(spec));
  const auto block_candidates = detail::csr_candidate_bands(detail::band_stats(blocks), blocks.gathered(), blocks.cols, std::int64_t(50) << 20);
  CHECK(std::count(block_candidates.begin(), block_candidates.end(), 1) == 0);
}

TEST_CASE("every width in n = 1..9, 127..130, 255, 256: slices, CSR shapes and path choices agree", "[cost_model][widths]") {
  // Mixed bands: full blocks (tiles), scattered ones (CSR) and a long one, so every path is possible.
  const detail::BandStats full = band(0, 8, 8 * 512), lonely = band(20, 0, 20);
  detail::BandStats skewed = band(300, 0, 300 * 16);
  skewed.max_row_nnz = 300 * 16;
  std::vector<detail::BandStats> bands(2000, full);
  bands.insert(bands.end(), 3000, lonely);
  bands.push_back(skewed);
  const std::vector<std::uint8_t> has(bands.size(), 1);
  std::vector<std::int32_t> widths = {127, 128, 129, 130, 255, 256};
  for (std::int32_t n = 1; n <= 9; ++n) widths.push_back(n);
  std::sort(widths.begin(), widths.end());
  double previous_csr = 0.0;
  const double tiles_at_8 = detail::choose_paths(bands, has, context(8, true)).tiles_only_ns;
  for (const std::int32_t n : widths) {
    INFO("n = " << n);
    for (const kernels::OperandMode mode : {kernels::OperandMode::f16, kernels::OperandMode::bf16,
                                            kernels::OperandMode::f16_f32b, kernels::OperandMode::bf16_f32b,
                                            kernels::OperandMode::split_f32b}) {
      INFO("mode " << kernels::operand_mode_name(mode));
      // The smallest slice that covers n (up to the mode's widest), and the slices cover n exactly.
      const int w = kernels::slice_width_for(n, mode);
      const int widest = mode == kernels::OperandMode::split_f32b ? 32 : 64;
      CHECK((w == 8 || w == 16 || w == 32 || w == 64));
      CHECK(w <= widest);
      CHECK((w == 8 || w / 2 < std::min(n, widest)));
      const std::int32_t slices = (n + w - 1) / w;
      CHECK(std::int64_t(slices) * w >= n);
      CHECK(std::int64_t(slices - 1) * w < n);
      // The kernel-table entry an automatic plan looks up, on an assumed H100 (132 SMs of sm_90; no device here):
      // it exists and an SM holds it; a forced deep pipeline is standard where the table has no deep entry.
      const kernels::TileKernelKey key{KernelKind::split_pipelined, mode, w, TilePipeline::standard, ElementType::f32,
                                       BRowIndex::implicit, false};
      CHECK(kernels::tile_blocks_per_sm(kernels::tile_kernel(key), kernels::sm_limits(90)) >= 1);
      const detail::TileLaunch deep =
          detail::tile_launch_for(bands, n, key, 132, kernels::sm_limits(90), TilePipeline::deep, true);
      CHECK(deep.pipeline == (deep.deep_exists ? TilePipeline::deep : TilePipeline::standard));
      CHECK(deep.block_slots >= 132);
      CHECK(deep.tiles_per_part >= detail::kMinTilesPerPart);
    }
    // CSR: 8-column chunks covering the pass, scalar B below 8 columns, one accumulator at n = 1.
    for (const double mean : {1.0, 3.0, 40.0}) {  // 100,000 rows on 132 SMs
      const kernels::CsrShape shape = kernels::csr_shape_for(n, mean, 100000, 132);
      CHECK(shape.chunks == kernels::csr_column_shape(n).chunks);
      CHECK((shape.chunks & (shape.chunks - 1)) == 0);
      CHECK(shape.chunks * 8 >= std::min(n, 256));
      CHECK(shape.chunks * shape.nz_lanes <= 32);
      CHECK(shape.scalar_b == (n < 8));
      CHECK(shape.one_column == (n == 1));
      const kernels::CsrRowClasses classes = kernels::csr_row_classes(shape, mean);
      CHECK(classes.short_max <= classes.medium_max);
      const int blocks = kernels::csr_long_row_blocks(shape.chunks, 100000);
      CHECK(shape.chunks % blocks == 0);
    }
    // The path split: consistent with its own description, the hybrid's split kept beside the choice.
    const detail::PathChoice c = detail::choose_paths(bands, has, context(n, true));
    REQUIRE(c.to_csr.size() == bands.size());
    REQUIRE(c.hybrid_to_csr.size() == bands.size());
    const auto on_csr = std::size_t(std::count(c.to_csr.begin(), c.to_csr.end(), 1));
    CHECK(std::size_t(std::count(c.hybrid_to_csr.begin(), c.hybrid_to_csr.end(), 1)) == c.hybrid_bands_on_csr);
    switch (c.chosen) {
      case BandPaths::tiles: CHECK(on_csr == 0); CHECK(c.chosen_ns == c.tiles_only_ns); break;
      case BandPaths::csr: CHECK(on_csr == bands.size()); CHECK(c.chosen_ns == c.csr_only_ns); break;
      case BandPaths::hybrid:
        CHECK(c.to_csr == c.hybrid_to_csr);
        CHECK(c.chosen_ns == c.hybrid_ns);
        CHECK(c.chosen_csr_ns == c.hybrid_csr_ns);
        break;
      default: FAIL("automatic is not a choice");
    }
    CHECK(c.chosen_ns <= c.tiles_only_ns);
    CHECK(c.chosen_ns <= c.csr_only_ns);
    CHECK(std::isfinite(c.hybrid_ns));
    CHECK(c.hybrid_ns > 0.0);
    // Narrow B: the tile plans pay for staging B to 8 columns, on top of what 8 columns cost.
    if (n < 8) CHECK(c.tiles_only_ns > tiles_at_8);
    // CSR work grows with the columns it reads (up to one 256-column pass).
    CHECK(c.csr_only_ns >= previous_csr);
    previous_csr = c.csr_only_ns;
  }
}

TEST_CASE("cost model: the narrow-vector part follows its schedule", "[cost_model][vectors]") {
  // A full band: every column in both windows, 32 groups (16 a window); a banded circuit row block (3 per row): one
  // group per window; a band of lonely nonzeros, 20 columns.
  const detail::BandStats full = band(0, 8, 8 * 512), circuit = band(2, 0, 48), lonely = band(20, 0, 20);
  const detail::BandVectorCounts full_vectors{512, 32, 16}, circuit_vectors{20, 2, 1}, lonely_vectors{20, 2, 1};
  auto part = [](std::int32_t n, const std::vector<std::int32_t>& windows, std::int32_t fixed = 0) {
    return detail::vector_part_ns(windows, context(n, true), fixed);
  };
  const std::vector<std::int32_t> short_windows(2000, 2);
  for (const std::int32_t n : {1, 8, 16, 32, 64, 128, 256}) {
    INFO("n = " << n);
    CHECK(part(n, {}) == 0.0);
    // Few short windows: a launch and one warp's short chain, whatever their count (well under the resident warps).
    CHECK(part(n, {1}) == part(n, std::vector<std::int32_t>(100, 1)));
    // More steps never cost less; a long window costs more than many short ones of the same total, and less when
    // the automatic split cuts it than when it is one piece.
    std::vector<std::int32_t> with_long = short_windows;
    with_long.push_back(400);
    CHECK(part(n, with_long) > part(n, short_windows));
    CHECK(part(n, with_long) < part(n, with_long, 400));
    // Windows far beyond the resident warps: the GPU's throughput, linear in the steps.
    const std::vector<std::int32_t> many(400000, 4), twice(400000, 8);
    CHECK(part(n, twice) > 1.5 * (part(n, many) - part(n, {1})));
  }
  // Wider slices and more of them cost more per step; B narrower than 8 columns adds its rows.
  const std::vector<std::int32_t> many(400000, 4);
  CHECK(part(16, many) < part(32, many));
  CHECK(part(32, many) < part(64, many));
  CHECK(part(64, many) < part(128, many));
  CHECK(part(1, many) > part(8, many));
  // The split bound of the measured arrowhead: one window of ~2,900 steps among short ones ends soonest cut into
  // parts of about 16-23 steps (parts of 2, 4, 8, 16: 131.5, 74.9, 45.5, 36.1 us measured at n = 8, H200, run 41);
  // the automatic split is within 10% of the best forced bound, and parts of 2 the worst.
  std::vector<std::int32_t> arrow(5800, 1);
  arrow.push_back(2900);
  double best_forced = part(8, arrow, 2);
  for (const std::int32_t bound : {4, 8, 16, 32}) {
    CHECK(part(8, arrow, bound) < part(8, arrow, 2));
    best_forced = std::min(best_forced, part(8, arrow, bound));
  }
  CHECK(part(8, arrow) <= 1.1 * best_forced);
  // Candidates: the low-reuse bands whose vectors take at most 2.5x their CSR bytes (a random graph's band of
  // 128 nonzeros in 128 columns would take 8 groups, ~2.7x: not kept).
  const detail::BandStats graph = band(8, 0, 128);
  const detail::BandVectorCounts graph_vectors{128, 8, 4};
  CHECK(detail::vector_candidate_bands({full, circuit, graph}, {full_vectors, circuit_vectors, graph_vectors}, true,
                                       100000, std::int64_t(50) << 20) == std::vector<std::uint8_t>{0, 1, 0});

  // The hybrid with vectors: the CSR hybrid's low-reuse bands on vectors where they have a copy, else on CSR; full
  // bands on tiles.
  // (Two full bands: with one, the hybrid's critical-path step would move it to CSR, the tile part being its
  // latency alone.)
  const std::vector<detail::BandStats> bands{full, full, circuit, lonely, circuit};
  const std::vector<detail::BandVectorCounts> counts{full_vectors, full_vectors, circuit_vectors, lonely_vectors,
                                                     circuit_vectors};
  const std::vector<std::uint8_t> every(5, 1), some{1, 1, 1, 0, 1};
  const std::vector<std::uint8_t> hybrid = detail::choose_paths(bands, every, context(32, true)).hybrid_to_csr;
  REQUIRE(hybrid == std::vector<std::uint8_t>{0, 0, 1, 1, 1});
  const detail::VectorPathChoice c = detail::choose_vector_paths(bands, counts, hybrid, some, context(32, true));
  CHECK(c.to_vectors == std::vector<std::uint8_t>{0, 0, 1, 0, 1});
  CHECK(c.to_csr == std::vector<std::uint8_t>{0, 0, 0, 1, 0});
  CHECK(c.bands_on_vectors == 2u);
  CHECK(c.bands_on_csr == 1u);
  CHECK(c.vectors_only_ns < 0.0);  // band 3 has no vector copy
  CHECK(c.hybrid_ns > c.hybrid_csr_ns + c.hybrid_vector_ns);  // the tile part's launch and work on top
  const detail::VectorPathChoice all = detail::choose_vector_paths(bands, counts, hybrid, every, context(32, true));
  CHECK(all.vectors_only_ns > 0.0);
  CHECK(all.to_vectors == std::vector<std::uint8_t>{0, 0, 1, 1, 1});
}

TEST_CASE("CSR rows split by entries: one-round parts, at most 64 of them, longer parts beyond", "[cost_model]") {
  using kernels::csr_long_row_parts;
  for (const int block_chunks : {1, 2, 4, 8, 16, 32}) {
    // What one block sums in one round of 4 loads per lane (256 / block_chunks lanes per chunk).
    const std::int64_t round = 4 * (256 / block_chunks);
    INFO("block chunks " << block_chunks << ", " << round << " entries per round");
    // Up to 4 times a block's 4 rounds: one block, as before rows were split (rajat01's 6,833 entries at n = 256).
    CHECK(csr_long_row_parts(block_chunks, 1) == 1);
    CHECK(csr_long_row_parts(block_chunks, 16 * round) == 1);
    for (const std::int64_t entries : {16 * round + 1, std::int64_t(46500), std::int64_t(200000), std::int64_t(1) << 22,
                                       std::int64_t(1) << 28}) {
      if (entries <= 16 * round) continue;
      INFO(entries << " entries");
      const int parts = csr_long_row_parts(block_chunks, entries);
      const std::int64_t one_round = (entries + round - 1) / round, four_rounds = (entries + 4 * round - 1) / (4 * round);
      CHECK(parts > 1);
      CHECK(parts <= kernels::kCsrMaxRowParts);
      // One round each while that takes at most 64 parts; beyond, as many parts as 4 rounds each need (or 64).
      const std::int64_t expected =
          std::min<std::int64_t>(kernels::kCsrMaxRowParts, std::min(one_round, std::max<std::int64_t>(64, four_rounds)));
      CHECK(parts == expected);
      if (parts < kernels::kCsrMaxRowParts) CHECK((entries + parts - 1) / parts <= 4 * round);
    }
  }
  // The arrowhead's full row at n = 1 (one chunk): 46 one-round parts; dense_rows:200000's rows: 64 parts.
  CHECK(csr_long_row_parts(1, 46500) == 46);
  CHECK(csr_long_row_parts(1, 200000) == 64);
}

TEST_CASE("CSR lanes per row at n >= 8: the fewest that fill the device, at most one per entry; n = 1 streams",
          "[cost_model]") {
  // Rows that fill the device many times over get one lane each (Andrews: 60,000 rows of 12.7 entries at n = 128);
  // rows of many entries get lanes until the launch has ~62 threads per SM and mean entry (a 27-point mesh with 3
  // dofs, 192,000 rows of 81, on 132 SMs: 4 lanes at n = 8, 2 at n = 16, 1 from n = 32 on); a small matrix gets as
  // many lanes as its rows have entries, up to the warp.
  CHECK(kernels::csr_shape_for(128, 12.7, 60000, 132).nz_lanes == 1);
  CHECK(kernels::csr_shape_for(32, 12.7, 60000, 132).nz_lanes == 1);
  CHECK(kernels::csr_shape_for(8, 12.7, 60000, 132).nz_lanes == 2);
  CHECK(kernels::csr_shape_for(8, 81.0, 192000, 132).nz_lanes == 4);
  CHECK(kernels::csr_shape_for(16, 81.0, 192000, 132).nz_lanes == 2);
  CHECK(kernels::csr_shape_for(32, 81.0, 192000, 132).nz_lanes == 1);
  CHECK(kernels::csr_shape_for(8, 41.9, 2003, 132).nz_lanes == 32);
  CHECK(kernels::csr_shape_for(64, 41.9, 2003, 132).nz_lanes == 4);  // 32 / 8 chunks
  CHECK(kernels::csr_shape_for(8, 3.0, 10, 132).nz_lanes == 2);
  CHECK(kernels::csr_shape_for(8, 0.0, 10, 132).nz_lanes == 1);
  // A device of a quarter of the SMs needs a quarter of the threads.
  CHECK(kernels::csr_shape_for(8, 81.0, 192000, 33).nz_lanes == 1);
  // Below 8 columns (B read element by element) and at n = 1: about 4 entries per lane, as before.
  CHECK(kernels::csr_shape_for(1, 12.7, 60000, 132).nz_lanes == 2);
  CHECK(kernels::csr_shape_for(4, 40.0, 60000, 132).nz_lanes == 8);
  CHECK(kernels::csr_shape_for(1, 59.4, 4884, 132).nz_lanes == 8);  // bcsstk16: 290,000 entries
  // n = 1 past 8 entries per resident thread (132 SMs x 2,048): at least 8 entries per lane, at most 8 lanes unless
  // a lane would take more than 64 entries.
  CHECK(kernels::csr_shape_for(1, 512.0, 20000, 132).nz_lanes == 8);    // long_rows:20000 (32 before)
  CHECK(kernels::csr_shape_for(1, 32.0, 262144, 132).nz_lanes == 4);    // block_diagonal:262144 (8 before)
  CHECK(kernels::csr_shape_for(1, 77.0, 192000, 132).nz_lanes == 8);    // the 40x40x40 27-point mesh (16 before)
  CHECK(kernels::csr_shape_for(1, 3.0, 1600000, 132).nz_lanes == 1);    // circuit:1600000
  CHECK(kernels::csr_shape_for(4, 512.0, 20000, 132).nz_lanes == 32);   // n = 4 keeps the rule above
  CHECK(kernels::csr_shape_for(1, 77.0, 3000, 132).nz_lanes == 16);     // 231,000 entries: the rule above
  CHECK(kernels::csr_shape_for(1, 1638.0, 16384, 132).nz_lanes == 32);  // 10d0s: lanes of at most 64 entries
  CHECK(kernels::csr_shape_for(1, 600.0, 16384, 132).nz_lanes == 16);
}

TEST_CASE("a plan's DRAM bytes: the bytes of A its report counts, B once, C once", "[cost][metrics]") {
  PlanReport plan;
  plan.n = 8;
  plan.input = ElementType::f16;
  plan.diagnostics.sparse24_bytes = 1000;
  plan.diagnostics.dense_bytes = 200;
  plan.diagnostics.csr_bytes = 30;
  plan.diagnostics.vector_bytes = 4;
  // A 100 x 50 matrix: B = 50 x 8 fp16 (800 bytes), C = 100 x 8 fp32 (3,200 bytes).
  CHECK(plan_dram_bytes(plan, 100, 50) == 1234.0 + 800.0 + 3200.0);
  CHECK(plan_dram_bytes(plan, 100, 50, 2) == 1234.0 + 800.0 + 1600.0);      // fp16 C
  CHECK(plan_dram_bytes(plan, 100, 50, 4, true) == 1234.0 + 800.0 + 6400.0);  // beta != 0: C read too
  plan.input = ElementType::f32;
  CHECK(plan_dram_bytes(plan, 100, 50) == 1234.0 + 1600.0 + 3200.0);
  // The operands' part is the one spmm_cost counts (fp16 B): a plan of every stored tile moves what min_bytes says.
  TileCensus census;
  census.sparse24_bytes = 1000;
  census.dense_bytes = 200;
  census.row_order_bytes = 34;
  plan.input = ElementType::f16;
  CHECK(spmm_cost(census, 100, 50, 8).min_bytes == plan_dram_bytes(plan, 100, 50));
  CHECK(operand_bytes(100, 50, 8, 2, 4, false) == 4000.0);
}
