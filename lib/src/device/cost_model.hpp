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

#include "device/plan_choices.hpp"
#include "format/band_csr.hpp"
#include "format/band_vectors.hpp"

namespace bcsr24::detail {

struct BandGroupSchedule;  // device/band_groups.hpp

/// What, besides a band's own counts, its costs depend on.
struct CostContext {
  std::int32_t n = 8;               ///< columns of B and C
  bool gathered = false;            ///< tiles gather their B rows by index (condensed or reordered layouts)
  std::int32_t b_rows = 0;          ///< rows of B (columns of A)
  std::int64_t l2_bytes = 50 << 20; ///< the device's L2: B rows read at random come from L2 while B fits
  /// Tiles per part of a band split over several blocks (device/tile_schedule.hpp); 0 = bands are not split.
  std::int32_t tiles_per_part = 0;
  /// n = 1: the share of consecutive entries of a CSR row whose B rows lie in different 32-row blocks
  /// (DeviceBandCsr::scattered_pairs). 1: every B read is a sector of its own; less: reads share sectors in L1.
  double scattered_share = 1.0;
  /// The device's multiprocessors (the narrow-vector kernel's resident warps; the tile constants are the H100's and
  /// H200's 132).
  int multiprocessors = 132;
};

/// Predicted throughput cost of one band on the tile kernel (all its column slices), without the launch.
double tile_band_ns(const BandStats& band, const CostContext& ctx);
/// Time one band takes on the tile kernel by itself: its tiles split over one block's warps, or over the
/// blocks of its parts when it is split. A band far longer than the others ends the launch this late however
/// idle the rest of the GPU is.
double tile_band_latency_ns(const BandStats& band, const CostContext& ctx);
/// Predicted throughput cost of one band's rows on the CSR kernel (all column passes), without the launch.
double csr_band_ns(const BandStats& band, const CostContext& ctx);
/// Time the band's longest row takes on the CSR kernel by itself (a row that long gets a block of its own).
double csr_band_latency_ns(const BandStats& band, const CostContext& ctx);
/// Fixed cost of a launch of the tile kernel and of the CSR kernel in a stream (latency, ramp-up, tail).
double tile_launch_ns();
double csr_launch_ns();

/// Bands for which the CSR path wins at some n in 1 .. 256: the ones worth a CSR copy on the device.
std::vector<std::uint8_t> csr_candidate_bands(const std::vector<BandStats>& bands, bool gathered,
                                              std::int32_t b_rows, std::int64_t l2_bytes);

/// Narrow vectors (docs/KERNELS.md, "The narrow-vector path"): the predicted time of one launch of the vector
/// kernel (launch included, B staging not) over windows of `window_groups` K-steps each (0: an empty window), cut
/// and dealt to warps as the plan's schedule does (device/vector_schedule.hpp): with the bound `fixed_piece_steps`
/// for every window (PlanKnobs::vector_piece_steps), or 0 for the automatic split. Fitted to measured plans
/// (cost_model.cpp says which). The model's own choice (BandPaths::automatic) never picks vectors: forced plans and
/// the tuner's measured candidates do.
double vector_part_ns(const std::vector<std::int32_t>& window_groups, const CostContext& ctx,
                      std::int32_t fixed_piece_steps = 0);
/// Bands worth a vector copy: the CSR candidates (csr_candidate_bands: the low-reuse bands) whose vectors take at
/// most 2.5 times their CSR bytes.
std::vector<std::uint8_t> vector_candidate_bands(const std::vector<BandStats>& bands,
                                                 const std::vector<BandVectorCounts>& vectors, bool gathered,
                                                 std::int32_t b_rows, std::int64_t l2_bytes);

/// The split of a plan with vectors: every band on vectors, or the hybrid with vectors.
struct VectorPathChoice {
  std::vector<std::uint8_t> to_csr, to_vectors;  ///< per band of the hybrid with vectors (the rest on tiles)
  double vectors_only_ns = -1.0;  ///< every band on vectors (-1 when some band has no vector copy)
  double hybrid_ns = 0.0;         ///< the hybrid with vectors: each part's launch and work
  double hybrid_csr_ns = 0.0;     ///< its CSR part's launch and work (0 without one)
  double hybrid_vector_ns = 0.0;  ///< its vector part's launch and work (0 without one)
  std::size_t bands_on_vectors = 0, bands_on_csr = 0;
};
/// The hybrid with vectors: the CSR hybrid's split (`hybrid_to_csr`, PathChoice::hybrid_to_csr: the low-reuse bands)
/// with its CSR bands on vectors where they have a copy (`has_vectors`), and the plan's prediction: the sum of its
/// parts, each its launch plus the larger of its work and its longest band (vector_part_ns for the vector part).
/// (Vectors replace CSR here rather than compete with it by the model: the tuner times this plan against the CSR
/// hybrid where its prediction is within reach.)
VectorPathChoice choose_vector_paths(const std::vector<BandStats>& bands, const std::vector<BandVectorCounts>& vectors,
                                     const std::vector<std::uint8_t>& hybrid_to_csr,
                                     const std::vector<std::uint8_t>& has_vectors, const CostContext& ctx,
                                     std::int32_t fixed_piece_steps = 0);

/// A plan's split of the bands between the two paths.
struct PathChoice {
  std::vector<std::uint8_t> to_csr;  ///< per band: 1 = CSR kernel, 0 = tile kernel
  BandPaths chosen = BandPaths::tiles;  ///< which of the three to_csr is (never automatic)
  double tiles_only_ns = 0.0;        ///< predicted time with every band on tiles
  double csr_only_ns = -1.0;         ///< every band on CSR (-1 when some band has no CSR copy)
  double hybrid_ns = 0.0;            ///< each band on its cheaper path, both launches
  double chosen_ns = 0.0;
  double chosen_csr_ns = 0.0;        ///< the chosen plan's CSR launch and work (0 without a CSR part)
  /// The hybrid split whichever plan was chosen (a forced hybrid plan, and the tuner's candidate, run it), and
  /// its CSR part's launch and work; bands_on_csr counts its CSR bands (0 or all: the hybrid is a pure plan).
  std::vector<std::uint8_t> hybrid_to_csr;
  double hybrid_csr_ns = 0.0;
  std::size_t hybrid_bands_on_csr = 0;
  std::string reason;                ///< one line: which of the three and why
};

/// Chooses between all tiles, all CSR (only if every band has a CSR copy) and the per-band hybrid, whichever
/// is predicted fastest. A part's time is its launch plus the larger of its summed throughput cost and its
/// longest band's latency; the hybrid also moves the bands whose tile latency would be the critical path to CSR
/// when that shortens it. `has_csr[b]` says whether band b has a CSR copy.
PathChoice choose_paths(const std::vector<BandStats>& bands, const std::vector<std::uint8_t>& has_csr,
                        const CostContext& ctx);

/// Predicted time of one launch of the band-group kernel at n columns (device/band_groups.hpp): a block per group
/// and 64-column slice, one block per SM at a time, blocks started in launch order as SMs free up. A block costs
/// its steps (one B-block copy and hand-over each) and the A-tile copies they carry.
double band_groups_ns(const BandGroupSchedule& schedule, std::int32_t n, int multiprocessors);

}  // namespace bcsr24::detail
