// Constants and decisions of the plan cost model (cost_model.hpp).
//
// How the constants were obtained (NVIDIA H100 80GB HBM3, CUDA 13.0, bench_spmm medians with L2 flushed):
// - tile costs per tile and column slice: the aligned synthetics 10d0s/20d0s (dense tiles only) and 0d10s/0d20s
//   (2:4 only), 16384^2, where time grows linearly with the tile count; the extra cost of gathered B rows from
//   the condensed 3-D mesh matrices (mesh40x40x40, lex and random node order);
// - the per-band cost from Andrews (3,750 bands of ~5 tiles), after the tile costs are taken out;
// - CSR costs per nonzero and per row from the CSR kernel alone (bench_spmm --methods csr_cuda_cores) on the
//   random-graph and mesh generators and Andrews, at n = 8 .. 256.
// docs/PERFORMANCE.md ("Cost model") lists the runs. Other GPUs use the same constants: what matters for the
// choice is the ratio of the two paths, which depends on bytes moved per unit of work far more than on the
// device.
#include "device/cost_model.hpp"

#include <algorithm>
#include <cstdio>

#include "kernels/spmm_params.hpp"

namespace bcsr24::detail {

namespace {

constexpr double kLaunchNs = 3000.0;

/// Index of a tile-kernel slice width (8, 16, 32, 64) in the tables below.
int slice_index(int slice_width) { return slice_width <= 8 ? 0 : slice_width <= 16 ? 1 : slice_width <= 32 ? 2 : 3; }

// Per tile and column slice, aligned tiles (B rows implicit, consecutive).
constexpr double kSparse24TileNs[4] = {0.27, 0.30, 0.44, 0.75};
constexpr double kDenseTileNs[4] = {0.37, 0.40, 0.44, 0.70};
// Added per tile when its B rows are gathered by index (scattered rows of B, the index itself).
constexpr double kGatherTileNs[4] = {0.23, 0.25, 0.36, 0.70};
// Per band and column slice: descriptor, pipeline ramp, cross-warp reduction and the 16-row epilogue.
constexpr double kBandNs[4] = {0.9, 1.0, 1.3, 2.0};

// CSR, per column pass of up to 256 columns: per nonzero (index, value and a B-row piece of 2 * width
// bytes) and per row (pointers, row map and the C row written).
constexpr double kCsrNnzBaseNs = 0.035;
constexpr double kCsrNnzPerColumnNs = 0.00025;
constexpr double kCsrRowBaseNs = 0.02;
constexpr double kCsrRowPerColumnNs = 0.0013;
constexpr int kCsrPass = 256;

/// The widths at which candidate bands are tested: one per tile-kernel slice class and CSR chunk count.
constexpr std::int32_t kProbeWidths[] = {1, 8, 16, 32, 64, 128, 256};

}  // namespace

double launch_ns() { return kLaunchNs; }

double tile_band_ns(const BandStats& band, std::int32_t n, bool gathered) {
  const int width = kernels::slice_width_for(n);
  const int s = slice_index(width);
  const double slices = double((n + width - 1) / width);
  const double per_tile_gather = gathered ? kGatherTileNs[s] : 0.0;
  return slices * (kBandNs[s] + band.sparse24_tiles * (kSparse24TileNs[s] + per_tile_gather) +
                   band.dense_tiles * (kDenseTileNs[s] + per_tile_gather));
}

double csr_band_ns(const BandStats& band, std::int32_t n) {
  double total = 0.0;
  for (std::int32_t col0 = 0; col0 < n; col0 += kCsrPass) {
    // A pass reads B in 8-column pieces: its width counts in multiples of 8.
    const double width = double((std::min(n - col0, kCsrPass) + 7) / 8 * 8);
    total += double(band.nnz()) * (kCsrNnzBaseNs + kCsrNnzPerColumnNs * width) +
             double(band.rows) * (kCsrRowBaseNs + kCsrRowPerColumnNs * width);
  }
  return total;
}

std::vector<std::uint8_t> csr_candidate_bands(const std::vector<BandStats>& bands, bool gathered) {
  std::vector<std::uint8_t> candidate(bands.size(), 0);
  for (std::size_t b = 0; b < bands.size(); ++b)
    for (const std::int32_t n : kProbeWidths)
      if (csr_band_ns(bands[b], n) < tile_band_ns(bands[b], n, gathered)) {
        candidate[b] = 1;
        break;
      }
  return candidate;
}

PathChoice choose_paths(const std::vector<BandStats>& bands, const std::vector<std::uint8_t>& has_csr,
                        std::int32_t n, bool gathered) {
  PathChoice choice;
  choice.to_csr.assign(bands.size(), 0);
  double tiles_sum = 0.0, csr_sum = 0.0, hybrid_tiles = 0.0, hybrid_csr = 0.0;
  bool all_have_csr = true;
  std::int64_t hybrid_csr_bands = 0;
  for (std::size_t b = 0; b < bands.size(); ++b) {
    const double tile = tile_band_ns(bands[b], n, gathered);
    tiles_sum += tile;
    if (!has_csr[b]) {
      all_have_csr = false;
      hybrid_tiles += tile;
      continue;
    }
    const double csr = csr_band_ns(bands[b], n);
    csr_sum += csr;
    if (csr < tile) {
      choice.to_csr[b] = 1;
      hybrid_csr += csr;
      ++hybrid_csr_bands;
    } else {
      hybrid_tiles += tile;
    }
  }
  const std::int64_t hybrid_tile_bands = std::int64_t(bands.size()) - hybrid_csr_bands;
  choice.tiles_only_ns = kLaunchNs + tiles_sum;
  choice.csr_only_ns = all_have_csr ? kLaunchNs + csr_sum : -1.0;
  choice.hybrid_ns = (hybrid_tile_bands ? kLaunchNs : 0.0) + (hybrid_csr_bands ? kLaunchNs : 0.0) + hybrid_tiles +
                     hybrid_csr;
  // The hybrid is the per-band optimum plus one more launch; a pure plan wins when that launch costs more than
  // the bands it would move gain.
  char line[200];
  if (hybrid_csr_bands == 0 || choice.tiles_only_ns <= choice.hybrid_ns) {
    std::fill(choice.to_csr.begin(), choice.to_csr.end(), 0);
    choice.chosen_ns = choice.tiles_only_ns;
    std::snprintf(line, sizeof line, "tiles only: predicted %.1f us (CSR for the low-reuse bands: %.1f us)",
                  choice.tiles_only_ns / 1e3, choice.hybrid_ns / 1e3);
  } else if (all_have_csr && choice.csr_only_ns <= choice.hybrid_ns) {
    std::fill(choice.to_csr.begin(), choice.to_csr.end(), 1);
    choice.chosen_ns = choice.csr_only_ns;
    std::snprintf(line, sizeof line, "CSR only: predicted %.1f us (tiles only %.1f us)", choice.csr_only_ns / 1e3,
                  choice.tiles_only_ns / 1e3);
  } else {
    choice.chosen_ns = choice.hybrid_ns;
    std::snprintf(line, sizeof line, "hybrid: predicted %.1f us (tiles only %.1f us)", choice.hybrid_ns / 1e3,
                  choice.tiles_only_ns / 1e3);
  }
  choice.reason = line;
  return choice;
}

}  // namespace bcsr24::detail
