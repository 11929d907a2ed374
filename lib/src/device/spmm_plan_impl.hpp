// SpmmPlan's state (internal): what a plan fixed when it was built (device/plan_build.cpp and the two parts'
// files) and what run() reads (device/spmm_plan.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/spmm_plan.hpp"
#include "device/device_buffer.hpp"
#include "device/device_matrix_impl.hpp"
#include "device/plan_draft.hpp"
#include "device/plan_storage.hpp"
#include "device/vector_schedule.hpp"
#include "kernels/band_group_params.hpp"
#include "kernels/csr_params.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/spmm_params.hpp"
#include "kernels/vector_params.hpp"

namespace bcsr24 {

namespace detail {
// The CSR part's rows by class, short-row tiles and long-row blocks, as build_csr_part finds them
// (device/plan_csr_part.cpp).
struct CsrRowSlots;
struct ShortTiles;
struct LongBlocks;
}  // namespace detail

struct SpmmPlan::Impl {
  /// Fixes everything a run needs from the plan's decisions (device/plan_draft.hpp): the tile part, then the
  /// CSR part, then B's staging buffer, all in the plan's storage, uploaded unless `place_later` (the tuner
  /// places its candidates' storage itself; device/plan_build.cpp).
  void build(const DeviceMatrix& matrix, const detail::PlanDraft& draft, bool place_later = false);
  /// Elements of B's staging buffer (cols x staged_ld), and staged_ld set, for a plan that needs one.
  std::size_t staging_elements();
  /// Gives a plan made without allow_unaligned_b the staging buffer that option needs (its own allocation), and the
  /// option. @throw OutOfMemory
  void allow_unaligned_b();
  /// Configures the kernels the plan launches and loads those not loaded yet: CUDA loads a kernel at its first use
  /// in a process, which takes milliseconds where it is the first of its translation unit. The last step of
  /// build(), on its own so that the tuner can tell it from the rest.
  void prepare_kernels() const;
  /// The tile bands' work lists, split-band workspace or band groups, and their kernel (device/plan_tile_part.cpp).
  void build_tile_part(const DeviceMatrix::Impl& m, const detail::PlanDraft& draft);
  /// The CSR bands' rows by length class and their kernel (device/plan_csr_part.cpp).
  void build_csr_part(const DeviceMatrix::Impl& m, const std::vector<std::uint8_t>& to_csr, const PlanKnobs& knobs);
  /// The CSR part's lists in the plan's storage and the CSR kernel's parameters (device/plan_csr_part.cpp).
  void add_csr_lists(const DeviceMatrix::Impl& m, const detail::CsrRowSlots& rows, const detail::ShortTiles& tiles,
                     const detail::LongBlocks& long_blocks, const kernels::CsrRowClasses& classes,
                     const PlanKnobs& knobs);
  /// The narrow-vector bands' windows, longest first, their schedule and workspace (device/plan_vector_part.cpp).
  void build_vector_part(const DeviceMatrix::Impl& m, const std::vector<std::uint8_t>& to_vectors,
                         const PlanKnobs& knobs);
  /// A narrow-vector schedule on the device (device/vector_schedule.hpp), in the plan's storage.
  struct VectorScheduleLists {
    const std::int32_t *steps = nullptr, *warp_steps = nullptr, *warp_pieces = nullptr;
    const kernels::VectorPiece* pieces = nullptr;
    std::int32_t warps = 0;
  };
  void store_vector_schedule(VectorScheduleLists& to, const detail::VectorSchedule& s);
  /// Every list and workspace below that the plan owns, in one device allocation made at the end of build().
  detail::PlanStorage storage;
  /// Host time of build()'s steps (apps/research/build_profile reads them): the tile, CSR and vector parts' lists,
  /// and the storage's allocation and copy.
  struct BuildTimes {
    double tile_ms = 0.0, csr_ms = 0.0, vector_ms = 0.0, upload_ms = 0.0;
  } build_times;
  const DeviceMatrix::Impl* a = nullptr;
  const DeviceBandCsr* csr = nullptr;  // the CSR copy the plan's CSR part reads (the matrix's candidates or every band)
  std::int32_t n = 0;
  KernelKind kernel = KernelKind::automatic;
  PlanOptions options;
  int slice_width = 8;
  kernels::SpmmParams params;  // everything but b, ldb, c, ldc, alpha, beta
  kernels::CsrSpmmParams csr_params;
  kernels::CsrShape csr_shape;
  const kernels::TileKernel* tile = nullptr;  // the kernel-table entries the plan launches
  const kernels::CsrKernel* csr_kernel = nullptr;
  bool run_tiles = false, run_csr = false, run_vectors = false;
  const DeviceBandVectors* vectors = nullptr;  // the vector copy the plan's vector part reads
  // Everything but the schedule, b, ldb, c, ldc, alpha, beta and addends.
  kernels::VectorSpmmParams vector_params;
  // Every window, and (where some are empty) only those with entries: run() with beta == 1 launches the second.
  // Both split the same windows into the same slots, so they share the partial sums and counters.
  VectorScheduleLists vector_all, vector_with_entries;
  bool vectors_have_empty = false;
  bool needs_aligned_b = false;  // some part reads B in 16-byte pieces (the tiles; CSR unless n < 8)
  bool split_bands = false;      // the tile kernel's schedule has split bands: launch the instantiation for them
  kernels::OperandMode mode = kernels::OperandMode::f16;  // A's precision and B's element type
  TilePipeline tile_pipeline = TilePipeline::standard;     // resolved: standard or deep
  // run() with beta == 1 leaves C's rows without entries as they are, so it launches only the work with entries:
  // these lists, where they differ from the full ones (a halo part of a distributed operator has entries in a few
  // per cent of its rows; reading and writing the rest of C cost it ~30% of a product).
  bool tiles_have_empty = false, csr_has_empty = false;
  const kernels::TileRowWork* tile_work_with_entries = nullptr;
  std::int32_t tile_items_with_entries = 0;
  const std::int32_t* csr_short_slots_with_entries = nullptr;
  bool csr_short_tiles = false;  // n = 1: the short rows in tiles of consecutive slots (CsrSpmmParams::short_tiles)
  bool csr_short_range = false;  // the short rows are slots 0 .. short_count - 1, without a list (CsrSpmmParams)
  std::int32_t csr_short_with_entries = 0;
  // Band groups (device/band_groups.hpp): the tile bands run on the band-group kernel instead.
  bool grouped = false;
  kernels::BandGroupParams group_params;  // everything but c, ldc, alpha, beta
  // B's TMA descriptor of the last run, re-encoded by run() when B changes: the one member run() writes, which is
  // why a plan's run() is called by one host thread at a time (docs/API.md, "Threads and streams"). The launch
  // copies the descriptor into the kernel's parameters, so re-encoding it never affects a product in flight.
  mutable kernels::BandGroupBMap group_b_map;
  // B copied for alignment (16-bit or fp32 elements): a workspace of the plan's storage, or staged_b_own where
  // allow_unaligned_b() added it after the build.
  void* staged_b = nullptr;
  detail::DeviceBuffer<unsigned char> staged_b_own;
  std::int64_t staged_ld = 0;
  /// run() for 16-bit (std::uint16_t) or fp32 B: checks the arguments, stages unaligned B, then launch().
  template <typename BElement>
  void run(const BElement* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
           const OutputAddend* addends, int count, cudaStream_t s) const;
  /// Enqueues both parts with B (16-bit or fp32) already checked and, where needed, staged.
  /// `ldb_used`: B's leading dimension as the tile part reads it (the staged copy's where B was staged).
  void launch(kernels::SpmmParams k, std::int64_t ldb_used, const void* b_as_given, std::int64_t ldb_as_given,
              cudaStream_t s) const;
  PlanReport report;
};

}  // namespace bcsr24
