// Constants and decisions of the plan cost model (cost_model.hpp).
//
// How the constants were obtained (NVIDIA H100 80GB HBM3, CUDA 13.0, bench_spmm medians with L2 flushed):
// - tile costs per tile and column slice: the aligned synthetics 10d0s/20d0s (dense tiles only) and 0d10s/0d20s
//   (2:4 only), 16384^2, where time grows linearly with the tile count; the extra cost of gathered B rows from
//   the condensed 3-D mesh matrices (mesh40x40x40, lex and random node order);
// - the per-band cost from Andrews (3,750 bands of ~5 tiles), after the tile costs are taken out;
// - CSR costs per nonzero and per row from the CSR kernel alone (bench_spmm --methods csr_cuda_cores) on the
//   random-graph and mesh generators and Andrews, at n = 8 .. 256, with B in L2 (mesh, Andrews) and not
//   (random graphs of 10^6 rows at n >= 32);
// - the latencies from rajat01, whose one 6,833-entry row makes a band of ~200 tiles that alone takes ~25 us
//   on the tile kernel at n = 32 (one block), and ~10 us as one CSR row.
// docs/PERFORMANCE.md ("Cost model") lists the runs. Other GPUs use the same constants: what matters for the
// choice is the ratio of the two paths, which depends on bytes moved per unit of work far more than on the
// device.
#include "device/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <queue>

#include "device/band_groups.hpp"
#include "device/tile_schedule.hpp"
#include "device/vector_schedule.hpp"
#include "kernels/csr_params.hpp"
#include "kernels/spmm_params.hpp"
#include "kernels/vector_params.hpp"

namespace bcsr24::detail {

namespace {

constexpr double kTileLaunchNs = 3000.0;
constexpr double kCsrLaunchNs = 5000.0;
// B of fewer than 8 columns: the CSR kernel reads it as it is, the tile kernel needs a copy padded to 8
// columns first (SpmmPlan::run stages it): one more launch in the stream, and B read and written once. Measured
// at n = 1 on memplus and rajat01: the tile plan took ~4.5 us more than the model without this term predicted.
constexpr double kStageBLaunchNs = 4000.0;
constexpr double kStageBBytesPerNs = 2000.0;

/// Index of a tile-kernel slice width (8, 16, 32, 64) in the tables below.
int slice_index(int slice_width) { return slice_width <= 8 ? 0 : slice_width <= 16 ? 1 : slice_width <= 32 ? 2 : 3; }

// Per tile and column slice, aligned tiles (B rows implicit, consecutive).
constexpr double kSparse24TileNs[4] = {0.27, 0.30, 0.44, 0.75};
constexpr double kDenseTileNs[4] = {0.37, 0.40, 0.44, 0.70};
// Added per tile when its B rows are gathered by index (scattered rows of B, the index itself).
constexpr double kGatherTileNs[4] = {0.23, 0.25, 0.36, 0.70};
// Per band and column slice: descriptor, pipeline ramp, cross-warp reduction and the 16-row epilogue.
constexpr double kBandNs[4] = {0.9, 1.0, 1.3, 2.0};
// A band-slice block never costs less than its latency over the blocks the GPU holds at once (132 SMs x 9
// blocks up to 32 columns, x 5 at 64): bands of one or two tiles are latency-bound (random graphs, n = 64).
constexpr double kBandMinNs[4] = {2.1, 2.5, 2.9, 7.6};
// Latency of one band alone: a fixed part and one pipeline round per tile of each of the block's warps.
constexpr double kBandLatencyNs = 2000.0;
constexpr double kTileRoundNs[4] = {200.0, 250.0, 400.0, 450.0};
// A split band: each part writes its partial sums and the last one reads them all back (per part and slice),
// and the band's latency gains the last part's extra pass (counter, fences, reading the partials).
constexpr double kSplitPartNs[4] = {0.9, 1.0, 1.3, 2.0};
constexpr double kSplitLatencyNs = 1000.0;

// CSR, per column pass of up to 256 columns: per nonzero (index and value, and a B-row piece of 2 * width
// bytes, from L2 while B fits there, else mostly from DRAM) and per row (pointers, row map and the C row).
constexpr double kCsrNnzBaseNs = 0.006;
constexpr double kCsrNnzPerColumnL2Ns = 0.0003;
constexpr double kCsrNnzPerColumnDramNs = 0.0007;
constexpr double kCsrRowBaseNs = 0.03;
constexpr double kCsrRowPerColumnNs = 0.0008;
/// n = 1: the share of an entry's cost left where its B read shares a sector with the entry before it (the 32-row
/// block of B is in L1). Fitted on run 81's CSR-only plans at n = 1: block_diagonal:262144 (3% of its entries read
/// a new block) took 28.8 us against 65.9 predicted with every read a sector of its own, of which rows and launch
/// are 13 us; power_law:1000000 (100% new) 143.3 against 133.8.
constexpr double kCsrClusteredEntryShare = 0.3;
constexpr int kCsrPass = 256;
// Latency of a band's longest row: a fixed part and one round of 4 loads per thread.
constexpr double kCsrRowLatencyNs = 1500.0;
constexpr double kCsrRoundNs = 350.0;
// B counts as L2-resident up to this share of the L2 (the rest holds A, C and other traffic).
constexpr double kL2UsableShare = 0.75;

// Band-group kernel (one block per SM, each a long chain of steps): per step its B-block tensor copy, barrier
// hand-over and progress counter; per A tile in it its bulk copies (a 2:4 tile two, values and metadata; a
// dense tile one); per launch the launch, the filling of the stages and the tail. A least-squares fit of this
// model (its critical chain of blocks, on schedules built like those of the grids) to the grouped times of
// gpu_check's groups step: six XdYs grids from 8192^2 to 32768^2 at n = 64, 128 and 256, 18 times, the
// largest error 6.7% (docs/PERFORMANCE.md).
constexpr double kGroupLaunchNs = 6500.0;
constexpr double kGroupStepNs = 68.6;
constexpr double kGroupSparse24TileNs = 24.0;
constexpr double kGroupDenseTileNs = 16.5;

// Narrow vectors (vector_part_ns), fitted to 355 timed vectors-only plans on one H200 (2026-11-29: 22 shared and
// generated matrices at n = 1 .. 256, session 57's run 38, and session 58's run 41: three classes of 1.6M to 2M rows,
// 12 matrices with the split bound forced to 2, 4, 8 and 16 steps; scripts/fit_vector_model.py): root mean square
// of log(predicted / measured) 0.12, 96% within 0.8-1.25x, all but 3 within 0.67-1.5x. A warp's K-steps follow one
// another at about a memory round trip over the pipeline's depth, so a launch ends after its longest warp's chain
// (kVectorChainStepNs a step by slice width; a split window's chain adds kVectorSplitNs and the reading of its
// parts' partial sums, kVectorPartReadNs a part), or after the GPU's throughput over all steps and windows,
// whichever is later.
constexpr double kVectorFixedNs = 7400.0;  // launch, the first steps' dependent loads, the epilogue
constexpr double kVectorChainStepNs[3] = {620.0, 850.0, 1270.0};  // slice width up to 16, 32, 64 columns
constexpr double kVectorPartReadNs[3] = {95.0, 175.0, 225.0};
constexpr double kVectorSplitNs = 1400.0;
constexpr double kVectorStepNs[3] = {0.34, 0.52, 0.92};  // GPU-wide, per K-step and column slice
constexpr double kVectorWindowNs = 0.35;
// n < 8, beyond staging B (which the tiles pay too): per row of B. The vector kernel still computes 16 columns.
constexpr double kVectorNarrowBRowNs = 0.127;
// The vector copy's device memory is bounded by 2.5x the CSR bytes of the bands it holds: the circuit (1.5x)
// and least-squares (2.25x, one nonzero per vector) matrices keep theirs, random and power-law graphs (~3x) do not.
constexpr double kVectorCopyMaxBytesRatio = 2.5;
/// The vector kernel's slice width class: up to 16, 32 or 64 columns.
int vector_slice_class(std::int32_t n) { return n <= 16 ? 0 : n <= 32 ? 1 : 2; }

/// The widths at which candidate bands are tested: one per tile-kernel slice class and CSR chunk count.
constexpr std::int32_t kProbeWidths[] = {1, 8, 16, 32, 64, 128, 256};

/// Columns of a CSR pass as the kernel reads them: 8-column pieces, or the n columns one by one when n < 8.
double pass_width(std::int32_t n, std::int32_t col0) {
  return n < 8 ? double(n) : double((std::min(n - col0, kCsrPass) + 7) / 8 * 8);
}

/// A plan part's time: its launch, then whichever is longer, the work spread over the GPU or its longest band.
double part_ns(double launch, double sum, double latency, bool present) {
  return present ? launch + std::max(sum, latency) : 0.0;
}

}  // namespace

double tile_launch_ns() { return kTileLaunchNs; }
double csr_launch_ns() { return kCsrLaunchNs; }

double tile_band_ns(const BandStats& band, const CostContext& ctx) {
  const int width = kernels::slice_width_for(ctx.n);
  const int s = slice_index(width);
  const double slices = double((ctx.n + width - 1) / width);
  const double per_tile_gather = ctx.gathered ? kGatherTileNs[s] : 0.0;
  const double parts = split_parts(band.tiles(), ctx.tiles_per_part);
  const double blocks = parts * kBandNs[s] + (parts > 1 ? parts * kSplitPartNs[s] : 0.0) +
                        band.sparse24_tiles * (kSparse24TileNs[s] + per_tile_gather) +
                        band.dense_tiles * (kDenseTileNs[s] + per_tile_gather);
  return slices * std::max(blocks, parts * kBandMinNs[s]);
}

double tile_band_latency_ns(const BandStats& band, const CostContext& ctx) {
  const int s = slice_index(kernels::slice_width_for(ctx.n));
  // Slices (and the parts of a split band) run as separate blocks, side by side: they do not add up.
  const std::int32_t parts = split_parts(band.tiles(), ctx.tiles_per_part);
  const std::int64_t warps = std::int64_t(parts) * kernels::kTileKernelWarps;
  const std::int64_t tiles_per_warp = (band.tiles() + warps - 1) / warps;
  return kBandLatencyNs + (parts > 1 ? kSplitLatencyNs : 0.0) + double(tiles_per_warp) * kTileRoundNs[s];
}

double csr_band_ns(const BandStats& band, const CostContext& ctx) {
  // At n = 1 an entry's cost is mostly its B read: a sector of its own where the rows' B reads scatter, an L1 hit
  // where consecutive entries read the same 32-row block of B (bands, stencils in RCM order, diagonal blocks).
  const double entry_share =
      ctx.n == 1 ? kCsrClusteredEntryShare + (1.0 - kCsrClusteredEntryShare) * ctx.scattered_share : 1.0;
  double total = 0.0;
  for (std::int32_t col0 = 0; col0 < ctx.n; col0 += kCsrPass) {
    const double width = pass_width(ctx.n, col0);
    const bool b_in_l2 = double(ctx.b_rows) * width * 2.0 <= kL2UsableShare * double(ctx.l2_bytes);
    total += double(band.nnz()) * entry_share *
                 (kCsrNnzBaseNs + width * (b_in_l2 ? kCsrNnzPerColumnL2Ns : kCsrNnzPerColumnDramNs)) +
             double(band.rows) * (kCsrRowBaseNs + kCsrRowPerColumnNs * width);
  }
  return total;
}

double csr_band_latency_ns(const BandStats& band, const CostContext& ctx) {
  // The kernel gives a row the smallest unit that finishes it in a few rounds of 4 loads per thread
  // (kernels::csr_row_classes): a group or a warp of 32 / chunks lanes up to 4 rounds, beyond that a block
  // of 256 / chunks lanes, or several blocks on shares of the chunks (kernels::csr_long_row_blocks).
  const int chunks = kernels::csr_column_shape(ctx.n).chunks;  // of the first pass (row lengths do not matter)
  const double warp_rounds = std::min(4.0, std::ceil(double(band.max_row_nnz) / (32.0 / chunks * 4.0)));
  // A row still too long for those is split by entries (kernels::csr_long_row_parts): its latency is one part's
  // rounds and one more for the part that adds them up.
  const int blocks = kernels::csr_long_row_blocks(chunks, band.max_row_nnz);
  const int parts = kernels::csr_long_row_parts(chunks / blocks, band.max_row_nnz);
  const double block_rounds = std::ceil(double(band.max_row_nnz) / parts / (256.0 * blocks / chunks * 4.0)) +
                              (parts > 1 ? 1.0 : 0.0);
  return kCsrRowLatencyNs + std::max(warp_rounds, block_rounds) * kCsrRoundNs;
}

double vector_part_ns(const std::vector<std::int32_t>& window_groups, const CostContext& ctx,
                      std::int32_t fixed_piece_steps) {
  if (window_groups.empty() || ctx.n < 1) return 0.0;
  const int s = vector_slice_class(ctx.n);
  const std::int64_t slices = kernels::vector_slices(ctx.n);
  const std::int64_t resident =
      std::int64_t(kernels::kVectorMinBlocksPerSm) * kernels::kVectorWarps * std::max(ctx.multiprocessors, 1);
  const std::int64_t warps = std::max<std::int64_t>(1, (resident + slices - 1) / slices);
  // The schedule as make_vector_schedule builds it: each window cut into parts, the pieces dealt to warps in runs
  // of about equal steps (an empty window is one step without copies).
  std::int64_t groups = 0;
  for (const std::int32_t g : window_groups) groups += g;
  const VectorSplit split = fixed_piece_steps > 0 ? VectorSplit::fixed : VectorSplit::by_window;
  const std::int32_t base = fixed_piece_steps > 0 ? fixed_piece_steps : vector_piece_steps(groups, warps);
  std::int64_t pieces = 0, steps = 0;
  double longest_window_ns = 0.0;  // the slowest window's chain: its longest piece, and its parts' sums if split
  for (const std::int32_t g : window_groups) {
    if (g <= 0) {
      ++pieces;
      ++steps;
      continue;
    }
    const std::int32_t bound = vector_piece_bound(g, base, split);
    const std::int64_t parts = (std::int64_t(g) + bound - 1) / bound;
    pieces += parts;
    steps += g;
    const double piece_ns = double((std::int64_t(g) + parts - 1) / parts) * kVectorChainStepNs[s];
    longest_window_ns = std::max(
        longest_window_ns, piece_ns + (parts > 1 ? kVectorSplitNs + double(parts) * kVectorPartReadNs[s] : 0.0));
  }
  const std::int64_t dealt = std::min(warps, pieces);
  const double chain_ns = std::max(double((steps + dealt - 1) / dealt) * kVectorChainStepNs[s], longest_window_ns);
  const double throughput_ns =
      double(slices) * (double(groups) * kVectorStepNs[s] + double(window_groups.size()) * kVectorWindowNs);
  const double narrow_b_ns = ctx.n < 8 ? double(ctx.b_rows) * kVectorNarrowBRowNs : 0.0;
  return kVectorFixedNs + std::max(chain_ns, throughput_ns) + narrow_b_ns;
}

std::vector<std::uint8_t> vector_candidate_bands(const std::vector<BandStats>& bands,
                                                 const std::vector<BandVectorCounts>& vectors, bool gathered,
                                                 std::int32_t b_rows, std::int64_t l2_bytes) {
  std::vector<std::uint8_t> candidate = csr_candidate_bands(bands, gathered, b_rows, l2_bytes);
  for (std::size_t b = 0; b < bands.size(); ++b) {
    // Kept only where the vectors take not many more bytes than the CSR rows (kVectorCopyMaxBytesRatio): a random
    // graph's bands would take ~3x their CSR bytes of device memory in every upload.
    const double vector_bytes = double(vectors[b].groups) * 16.0 * 20.0 + 2.0 * 8.0;
    const double csr_bytes = double(bands[b].nnz()) * 6.0 + double(kTileRows) * 12.0;
    if (vectors[b].groups == 0 || vector_bytes > kVectorCopyMaxBytesRatio * csr_bytes) candidate[b] = 0;
  }
  return candidate;
}

VectorPathChoice choose_vector_paths(const std::vector<BandStats>& bands, const std::vector<BandVectorCounts>& vectors,
                                     const std::vector<std::uint8_t>& hybrid_to_csr,
                                     const std::vector<std::uint8_t>& has_vectors, const CostContext& ctx,
                                     std::int32_t fixed_piece_steps) {
  const std::size_t count = bands.size();
  VectorPathChoice choice;
  choice.to_csr.assign(count, 0);
  choice.to_vectors.assign(count, 0);
  // Narrow B is staged for the tiles and the vectors alike (both read it in 16-byte pieces).
  const bool stage_b = kernels::csr_column_shape(ctx.n).scalar_b;
  const double stage_ns = stage_b ? kStageBLaunchNs + double(ctx.b_rows) * 8.0 * 2.0 * 2.0 / kStageBBytesPerNs : 0.0;
  double tiles_sum = 0.0, tiles_latency = 0.0, csr_sum = 0.0, csr_latency = 0.0;
  // The windows' K-steps (two windows a band) of the hybrid's vector bands and of every band.
  std::vector<std::int32_t> hybrid_windows, all_windows;
  bool all_have_vectors = count > 0;
  auto add_windows = [&](std::vector<std::int32_t>& to, const BandVectorCounts& v) {
    to.push_back(v.longest_window_groups);
    to.push_back(v.groups - v.longest_window_groups);
  };
  for (std::size_t b = 0; b < count; ++b) {
    if (has_vectors[b])
      add_windows(all_windows, vectors[b]);
    else
      all_have_vectors = false;
    // The low-reuse bands are those the CSR hybrid takes off the tiles; vectors replace CSR where they can.
    if (hybrid_to_csr[b] && has_vectors[b]) {
      choice.to_vectors[b] = 1;
      ++choice.bands_on_vectors;
      add_windows(hybrid_windows, vectors[b]);
    } else if (hybrid_to_csr[b]) {
      choice.to_csr[b] = 1;
      ++choice.bands_on_csr;
      csr_sum += csr_band_ns(bands[b], ctx);
      csr_latency = std::max(csr_latency, csr_band_latency_ns(bands[b], ctx));
    } else {
      tiles_sum += tile_band_ns(bands[b], ctx);
      tiles_latency = std::max(tiles_latency, tile_band_latency_ns(bands[b], ctx));
    }
  }
  const std::size_t on_tiles = count - choice.bands_on_vectors - choice.bands_on_csr;
  choice.hybrid_csr_ns = part_ns(kCsrLaunchNs, csr_sum, csr_latency, choice.bands_on_csr > 0);
  choice.hybrid_vector_ns = vector_part_ns(hybrid_windows, ctx, fixed_piece_steps);
  choice.hybrid_ns = part_ns(kTileLaunchNs, tiles_sum, tiles_latency, on_tiles > 0) + choice.hybrid_csr_ns +
                     choice.hybrid_vector_ns + (on_tiles > 0 || choice.bands_on_vectors > 0 ? stage_ns : 0.0);
  if (all_have_vectors) choice.vectors_only_ns = vector_part_ns(all_windows, ctx, fixed_piece_steps) + stage_ns;
  return choice;
}

std::vector<std::uint8_t> csr_candidate_bands(const std::vector<BandStats>& bands, bool gathered,
                                              std::int32_t b_rows, std::int64_t l2_bytes) {
  std::vector<std::uint8_t> candidate(bands.size(), 0);
  for (std::size_t b = 0; b < bands.size(); ++b)
    for (const std::int32_t n : kProbeWidths) {
      const CostContext ctx{n, gathered, b_rows, l2_bytes};
      // Cheaper in throughput, or so long on tiles that it may be a plan's critical path.
      if (csr_band_ns(bands[b], ctx) < tile_band_ns(bands[b], ctx) ||
          csr_band_latency_ns(bands[b], ctx) < tile_band_latency_ns(bands[b], ctx) - kBandLatencyNs) {
        candidate[b] = 1;
        break;
      }
    }
  return candidate;
}

PathChoice choose_paths(const std::vector<BandStats>& bands, const std::vector<std::uint8_t>& has_csr,
                        const CostContext& ctx) {
  const std::size_t count = bands.size();
  PathChoice choice;
  choice.to_csr.assign(count, 0);
  std::vector<double> tile(count), tile_latency(count), csr(count, 0.0), csr_latency(count, 0.0);
  double tiles_sum = 0.0, tiles_latency = 0.0, csr_sum = 0.0, csr_max_latency = 0.0;
  bool all_have_csr = count > 0;
  for (std::size_t b = 0; b < count; ++b) {
    tile[b] = tile_band_ns(bands[b], ctx);
    tile_latency[b] = tile_band_latency_ns(bands[b], ctx);
    tiles_sum += tile[b];
    tiles_latency = std::max(tiles_latency, tile_latency[b]);
    if (!has_csr[b]) {
      all_have_csr = false;
      continue;
    }
    csr[b] = csr_band_ns(bands[b], ctx);
    csr_latency[b] = csr_band_latency_ns(bands[b], ctx);
    csr_sum += csr[b];
    csr_max_latency = std::max(csr_max_latency, csr_latency[b]);
  }
  // B the CSR kernel reads as given (narrow) is staged for the tiles: 8 columns of 2 bytes written and read.
  const bool tiles_stage_b = kernels::csr_column_shape(ctx.n).scalar_b;
  const double tile_launch =
      kTileLaunchNs + (tiles_stage_b ? kStageBLaunchNs + double(ctx.b_rows) * 8.0 * 2.0 * 2.0 / kStageBBytesPerNs : 0.0);
  choice.tiles_only_ns = part_ns(tile_launch, tiles_sum, tiles_latency, count > 0);
  choice.csr_only_ns = all_have_csr ? part_ns(kCsrLaunchNs, csr_sum, csr_max_latency, true) : -1.0;

  // Hybrid: each band on its cheaper path by throughput ...
  double hybrid_tiles = 0.0, hybrid_csr = 0.0, hybrid_csr_latency = 0.0;
  std::size_t on_csr = 0;
  std::vector<std::size_t> tile_bands;
  for (std::size_t b = 0; b < count; ++b) {
    if (has_csr[b] && csr[b] < tile[b]) {
      choice.to_csr[b] = 1;
      hybrid_csr += csr[b];
      hybrid_csr_latency = std::max(hybrid_csr_latency, csr_latency[b]);
      ++on_csr;
    } else {
      hybrid_tiles += tile[b];
      tile_bands.push_back(b);
    }
  }
  // ... then, longest tile band first, move bands to CSR while that shortens the plan (the tile part's
  // critical path falls to the next band).
  std::stable_sort(tile_bands.begin(), tile_bands.end(),
                   [&](std::size_t x, std::size_t y) { return tile_latency[x] > tile_latency[y]; });
  auto hybrid_ns = [&](double t_sum, double t_latency, std::size_t t_count, double c_sum, double c_latency,
                       std::size_t c_count) {
    return part_ns(tile_launch, t_sum, t_latency, t_count > 0) + part_ns(kCsrLaunchNs, c_sum, c_latency, c_count > 0);
  };
  std::size_t first = 0;
  for (; first < tile_bands.size(); ++first) {
    const std::size_t b = tile_bands[first];
    if (!has_csr[b]) break;  // the critical path cannot leave the tiles
    const double next_latency = first + 1 < tile_bands.size() ? tile_latency[tile_bands[first + 1]] : 0.0;
    const std::size_t tile_count = tile_bands.size() - first;
    const double now = hybrid_ns(hybrid_tiles, tile_latency[b], tile_count, hybrid_csr, hybrid_csr_latency, on_csr);
    const double moved = hybrid_ns(hybrid_tiles - tile[b], next_latency, tile_count - 1, hybrid_csr + csr[b],
                                   std::max(hybrid_csr_latency, csr_latency[b]), on_csr + 1);
    if (moved >= now) break;
    choice.to_csr[b] = 1;
    hybrid_tiles -= tile[b];
    hybrid_csr += csr[b];
    hybrid_csr_latency = std::max(hybrid_csr_latency, csr_latency[b]);
    ++on_csr;
  }
  const double remaining_latency = first < tile_bands.size() ? tile_latency[tile_bands[first]] : 0.0;
  choice.hybrid_ns =
      hybrid_ns(hybrid_tiles, remaining_latency, tile_bands.size() - first, hybrid_csr, hybrid_csr_latency, on_csr);
  if (on_csr == count) choice.hybrid_ns = choice.csr_only_ns;
  if (on_csr == 0) choice.hybrid_ns = choice.tiles_only_ns;
  choice.hybrid_to_csr = choice.to_csr;
  choice.hybrid_csr_ns = on_csr > 0 ? part_ns(kCsrLaunchNs, hybrid_csr, hybrid_csr_latency, true) : 0.0;
  choice.hybrid_bands_on_csr = on_csr;

  // The fastest of the three; a hybrid with every band on one side is that pure plan.
  const bool hybrid_mixed = on_csr > 0 && on_csr < count;
  char line[200];
  if (all_have_csr && choice.csr_only_ns < choice.tiles_only_ns &&
      (!hybrid_mixed || choice.csr_only_ns <= choice.hybrid_ns)) {
    std::fill(choice.to_csr.begin(), choice.to_csr.end(), 1);
    choice.chosen = BandPaths::csr;
    choice.chosen_ns = choice.csr_only_ns;
    choice.chosen_csr_ns = choice.csr_only_ns;
    std::snprintf(line, sizeof line, "CSR only: predicted %.1f us (tiles only %.1f us)", choice.csr_only_ns / 1e3,
                  choice.tiles_only_ns / 1e3);
  } else if (hybrid_mixed && choice.hybrid_ns < choice.tiles_only_ns) {
    choice.chosen = BandPaths::hybrid;
    choice.chosen_ns = choice.hybrid_ns;
    choice.chosen_csr_ns = choice.hybrid_csr_ns;
    std::snprintf(line, sizeof line, "hybrid: predicted %.1f us (tiles only %.1f us)", choice.hybrid_ns / 1e3,
                  choice.tiles_only_ns / 1e3);
  } else {
    std::fill(choice.to_csr.begin(), choice.to_csr.end(), 0);
    choice.chosen = BandPaths::tiles;
    choice.chosen_ns = choice.tiles_only_ns;
    if (choice.csr_only_ns >= 0)
      std::snprintf(line, sizeof line, "tiles only: predicted %.1f us (CSR only %.1f us)", choice.tiles_only_ns / 1e3,
                    choice.csr_only_ns / 1e3);
    else
      std::snprintf(line, sizeof line, "tiles only: predicted %.1f us (hybrid %.1f us)", choice.tiles_only_ns / 1e3,
                    choice.hybrid_ns / 1e3);
  }
  choice.reason = line;
  return choice;
}

double band_groups_ns(const BandGroupSchedule& schedule, std::int32_t n, int multiprocessors) {
  const std::int32_t slices = (n + kernels::kGroupSliceWidth - 1) / kernels::kGroupSliceWidth;
  // When each SM is free again; a block starts on the first free one.
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  for (int sm = 0; sm < std::max(1, multiprocessors); ++sm) free_at.push(0.0);
  double end = 0.0;
  for (const kernels::BandGroup& group : schedule.groups) {
    std::int64_t sparse24_tiles = 0, dense_tiles = 0;
    for (std::int32_t st = group.step_begin; st < group.step_end; ++st)
      (st < group.dense_begin ? sparse24_tiles : dense_tiles) += schedule.steps[std::size_t(st)].count;
    const double block = double(group.step_end - group.step_begin) * kGroupStepNs +
                         double(sparse24_tiles) * kGroupSparse24TileNs + double(dense_tiles) * kGroupDenseTileNs;
    for (std::int32_t slice = 0; slice < slices; ++slice) {
      const double done = free_at.top() + block;
      free_at.pop();
      free_at.push(done);
      end = std::max(end, done);
    }
  }
  return kGroupLaunchNs + end;
}

}  // namespace bcsr24::detail
