// The cost model behind KernelKind::automatic: predicted time of each band on the tile kernel and on the
// CUDA-core CSR kernel at a plan's n, and the per-band choice that minimises the whole multiply.
//
// Times are in nanoseconds of a fully busy GPU: a unit of work (a tile, a nonzero, a band's epilogue) adds
// its cost to the total when there is enough work to fill the device; each launch adds a fixed latency. The
// constants were measured on an H100 (cost_model.cpp says how); the model is host code only, so plans are
// deterministic and can be inspected and tested without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/band_csr.hpp"

namespace bcsr24::detail {

/// Predicted time of one band on the tile kernel (all its column slices), without the launch.
double tile_band_ns(const BandStats& band, std::int32_t n, bool gathered);
/// Predicted time of one band's rows on the CSR kernel (all column passes), without the launch.
double csr_band_ns(const BandStats& band, std::int32_t n);
/// Fixed cost of one kernel launch in a stream (launch latency, ramp-up and tail).
double launch_ns();

/// Bands for which the CSR path wins at some n in 1 .. 256: the ones worth a CSR copy on the device.
std::vector<std::uint8_t> csr_candidate_bands(const std::vector<BandStats>& bands, bool gathered);

/// A plan's split of the bands between the two paths.
struct PathChoice {
  std::vector<std::uint8_t> to_csr;  ///< per band: 1 = CSR kernel, 0 = tile kernel
  double tiles_only_ns = 0.0;        ///< predicted time with every band on tiles
  double csr_only_ns = -1.0;         ///< every band on CSR (-1 when some band has no CSR copy)
  double hybrid_ns = 0.0;            ///< each band on its cheaper path, both launches
  double chosen_ns = 0.0;
  std::string reason;                ///< one line: which of the three and why
};

/// Chooses, for n columns, between all tiles, all CSR (only if every band has a CSR copy) and the per-band
/// hybrid, whichever is predicted fastest. `has_csr[b]` says whether band b has a CSR copy.
PathChoice choose_paths(const std::vector<BandStats>& bands, const std::vector<std::uint8_t>& has_csr,
                        std::int32_t n, bool gathered);

}  // namespace bcsr24::detail
