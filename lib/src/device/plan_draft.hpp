// A plan's host-side decisions (internal): which bands run on CSR, the tile pipeline's depth, which long bands are
// split, whether the tile bands run in band groups, and the cost model's prediction of the result. SpmmPlan is
// built from a draft; the tuner drafts every combination of forced choices, keeps the distinct ones and builds only
// the few it measures (device/plan_tuner.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "bcsr24/spmm_plan.hpp"
#include "device/band_groups.hpp"
#include "device/cost_model.hpp"
#include "device/device_matrix.hpp"
#include "device/plan_choices.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24 {

struct DeviceBandCsr;      // device/device_matrix_impl.hpp
struct DeviceBandVectors;  // device/device_matrix_impl.hpp

namespace detail {

/// What several drafts of one matrix at one n share, computed once: the host copies of the tile indices (band
/// groups are built from them), the model's path split per tiles-per-part of the long-band split, and the
/// band-group schedule per set of tile bands.
struct DraftCache {
  bool have_tile_index = false;
  HostTileIndex sparse24, dense;
  std::vector<std::pair<std::int32_t, PathChoice>> paths;
  std::vector<std::pair<std::vector<std::int32_t>, std::shared_ptr<const BandGroupSchedule>>> groups;
};

struct PlanDraft {
  KernelKind kernel = KernelKind::automatic;
  std::int32_t n = 0;
  PlanOptions options;  ///< input resolved (never automatic)
  PlanKnobs knobs;      ///< as asked
  kernels::OperandMode mode = kernels::OperandMode::f16;
  int slice_width = 8;
  TilePipeline tile_pipeline = TilePipeline::standard;  ///< resolved
  /// The tile kernel's kernel-table key at the resolved pipeline, without split bands (the build sets those from its
  /// schedule); its blocks per SM on the matrix's device decided the pipeline and the long-band split.
  kernels::TileKernelKey tile_key;
  bool deep_pipeline_exists = false;                    ///< the table has a deep entry: the depth is a choice
  std::int32_t tiles_per_part = 0;                      ///< the long-band split's part size (0: none)
  BandPaths paths = BandPaths::tiles;                   ///< resolved: tiles, csr or hybrid
  std::vector<std::uint8_t> to_csr;                     ///< per band: 1 = CSR kernel
  const DeviceBandCsr* csr = nullptr;                   ///< the CSR copy the CSR part reads
  /// Per band: 1 = narrow-vector kernel (never with to_csr); all 0 unless paths is vectors or hybrid_vectors.
  std::vector<std::uint8_t> to_vectors;
  const DeviceBandVectors* vectors = nullptr;           ///< the vector copy the vector part reads
  std::shared_ptr<const BandGroupSchedule> groups;      ///< set: the tile bands run grouped
  /// Predicted CSR (and vector) launches and work of an automatic plan (0 without such parts): what a grouped tile
  /// part's prediction is added to.
  double csr_part_ns = 0.0;
  bool runs_tiles = false, runs_csr = false;  ///< whether each part has bands (runs_csr: bands, maybe empty)
  bool runs_vectors = false;
  bool splits_bands = false;                  ///< some tile band is split over several blocks
  PlanReport report;  ///< kernel, n, precision, input, pipeline, band groups, predictions and reason
};

/// Whether an automatic plan of width n reads the CSR rows of every band where the matrix has them, rather than the
/// candidate bands' copy only: a single vector (n = 1), whatever its knobs, so that every draft of one tuning reads
/// the same copy (drafts share their path choices, DraftCache). SparseOperator adds that copy (under its lock)
/// before such a plan is drafted, so the draft never reads it while it is being made.
inline bool single_vector_reads_every_band(std::int32_t n) { return n == 1; }

/// The decisions of a plan on `matrix` (the checks and choices of SparseOperator::make_plan with Tuning::model).
/// `cache`, where given, must come from drafts of the same matrix and n.
/// @throw as SparseOperator::make_plan (InvalidArgument where a forced choice cannot run).
PlanDraft draft_plan(const DeviceMatrix& matrix, std::int32_t n, KernelKind kernel, const PlanOptions& options,
                     const PlanKnobs& knobs, DraftCache* cache = nullptr);

}  // namespace detail
}  // namespace bcsr24
