// SpmmPlan: fixes n, kernel, the split of the bands between tiles and CSR, and the launch geometry once;
// run() only validates pointers and enqueues.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/error.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "device/band_groups.hpp"
#include "device/cost_model.hpp"
#include "device/cuda_check.hpp"
#include "device/device_buffer.hpp"
#include "device/device_matrix_impl.hpp"
#include "device/plan_access.hpp"
#include "device/plan_draft.hpp"
#include "device/plan_tuner.hpp"
#include "device/tile_schedule.hpp"
#include "kernels/band_group_params.hpp"
#include "kernels/csr_params.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24 {

struct SpmmPlan::Impl {
  /// Fixes everything a run needs from the plan's decisions (device/plan_draft.hpp).
  void build(const DeviceMatrix& matrix, const detail::PlanDraft& draft);
  const DeviceMatrix::Impl* a = nullptr;
  const DeviceBandCsr* csr = nullptr;  // the CSR copy the plan's CSR part reads (the matrix's candidates or every band)
  std::int32_t n = 0;
  KernelKind kernel = KernelKind::automatic;
  KernelKind tile_kernel = KernelKind::split_pipelined;  // the rung that runs the tile bands
  PlanOptions options;
  int slice_width = 8;
  kernels::SpmmParams params;  // everything but b, ldb, c, ldc, alpha, beta
  kernels::CsrSpmmParams csr_params;
  kernels::CsrShape csr_shape;
  const kernels::TileKernel* tile = nullptr;  // the kernel-table entries the plan launches
  const kernels::CsrKernel* csr_kernel = nullptr;
  bool run_tiles = false, run_csr = false;
  bool needs_aligned_b = false;  // some part reads B in 16-byte pieces (the tiles; CSR unless n < 8)
  bool split_bands = false;      // the tile kernel's schedule has split bands: launch the instantiation for them
  kernels::OperandMode mode = kernels::OperandMode::f16;  // A's precision and B's element type
  TilePipeline tile_pipeline = TilePipeline::standard;     // resolved: standard or deep
  detail::DeviceBuffer<kernels::TileRowWork> tile_work;  // the tile kernel's work items, unless they are the
                                                         // matrix's own descriptors (every band, none split)
  detail::DeviceBuffer<kernels::SplitGroup> split_groups;  // split bands: their parts' partial sums and counters
  detail::DeviceBuffer<float> split_partials;
  detail::DeviceBuffer<unsigned> split_counters;
  detail::DeviceBuffer<kernels::CsrLongBlock> csr_long_blocks;
  detail::DeviceBuffer<std::int32_t> csr_medium_slots, csr_short_slots;
  // run() with beta == 1 leaves C's rows without entries as they are, so it launches only the work with entries:
  // these lists, where they differ from the full ones (a halo part of a distributed operator has entries in a few
  // per cent of its rows; reading and writing the rest of C cost it ~30% of a product).
  bool tiles_have_empty = false, csr_has_empty = false;
  detail::DeviceBuffer<kernels::TileRowWork> tile_work_with_entries;
  std::int32_t tile_items_with_entries = 0;
  detail::DeviceBuffer<std::int32_t> csr_short_slots_with_entries;
  std::int32_t csr_short_with_entries = 0;
  // Band groups (device/band_groups.hpp): the tile bands run on the band-group kernel instead.
  bool grouped = false;
  kernels::BandGroupParams group_params;  // everything but c, ldc, alpha, beta
  // B's TMA descriptor of the last run, re-encoded by run() when B changes: the one member run() writes, which is
  // why a plan's run() is called by one host thread at a time (docs/API.md, "Threads and streams"). The launch
  // copies the descriptor into the kernel's parameters, so re-encoding it never affects a product in flight.
  mutable kernels::BandGroupBMap group_b_map;
  detail::DeviceBuffer<kernels::BandGroup> groups;
  detail::DeviceBuffer<kernels::BandGroupStep> group_steps;
  detail::DeviceBuffer<std::int32_t> group_entry_ptr, group_entries, group_rows;
  detail::DeviceBuffer<std::uint16_t> staged_b;      // 16-bit B copied for alignment
  detail::DeviceBuffer<float> staged_b_f32;          // fp32 B copied for alignment
  std::int64_t staged_ld = 0;
  /// run() for 16-bit (std::uint16_t) or fp32 B: checks the arguments, stages unaligned B, then launch().
  template <typename BElement>
  void run(const BElement* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
           cudaStream_t s) const;
  /// Enqueues both parts with B (16-bit or fp32) already checked and, where needed, staged.
  /// `ldb_used`: B's leading dimension as the tile part reads it (the staged copy's where B was staged).
  void launch(kernels::SpmmParams k, std::int64_t ldb_used, const void* b_as_given, std::int64_t ldb_as_given,
              cudaStream_t s) const;
  PlanReport report;
};

namespace {

/// The operand mode of a matrix precision and a requested B type; refuses the combinations that do not exist.
kernels::OperandMode operand_mode(Precision precision, InputType input, OutputType output, InputType& resolved) {
  using kernels::OperandMode;
  resolved = input;
  if (input == InputType::automatic)
    resolved = precision == Precision::split ? InputType::f32
                                             : precision == Precision::bf16 ? InputType::bf16 : InputType::f16;
  OperandMode mode = OperandMode::f16;
  bool ok = true;
  switch (precision) {
    case Precision::fp16:
      ok = resolved != InputType::bf16;
      mode = resolved == InputType::f32 ? OperandMode::f16_f32b : OperandMode::f16;
      break;
    case Precision::bf16:
      ok = resolved != InputType::f16;
      mode = resolved == InputType::f32 ? OperandMode::bf16_f32b : OperandMode::bf16;
      break;
    case Precision::split:
      ok = resolved == InputType::f32;
      mode = OperandMode::split_f32b;
      break;
  }
  if (!ok)
    throw InvalidArgument(std::string("SpmmPlan: a ") + precision_name(precision) + " matrix does not take " +
                          input_type_name(resolved) + " B (" +
                          (precision == Precision::split ? "split precision needs fp32 B"
                                                         : std::string("use ") + precision_name(precision) +
                                                               " or fp32 B") +
                          ")");
  if (mode != OperandMode::f16 && output != OutputType::f32)
    throw InvalidArgument(std::string("SpmmPlan: ") + kernels::operand_mode_name(mode) +
                          " writes fp32 C only (fp16 output exists for fp16 A with fp16 B)");
  return mode;
}

/// A tile list's band pointers and tile columns, copied to the host (band groups are built from them).
detail::HostTileIndex host_tile_index(const DeviceTileList& list, std::int32_t tile_rows) {
  detail::HostTileIndex index;
  index.row_ptr.assign(std::size_t(tile_rows) + 1, 0);
  index.col_idx.resize(list.col_idx.size());
  if (list.row_ptr.size() == index.row_ptr.size())
    BCSR24_CUDA_CHECK(cudaMemcpy(index.row_ptr.data(), list.row_ptr.get(), list.row_ptr.bytes(), cudaMemcpyDeviceToHost));
  if (!index.col_idx.empty())
    BCSR24_CUDA_CHECK(cudaMemcpy(index.col_idx.data(), list.col_idx.get(), list.col_idx.bytes(), cudaMemcpyDeviceToHost));
  return index;
}

/// Why a plan cannot group its bands, or "" where it can.
std::string band_groups_obstacle(const DeviceMatrix::Impl& m, KernelKind kernel, kernels::OperandMode mode) {
  if (kernel != KernelKind::automatic && kernel != KernelKind::split_pipelined)
    return std::string("kernel ") + kernel_name(kernel) + " runs one band per block (band groups: auto or split_pipelined)";
  if (m.b_row_index != BRowIndex::implicit)
    return "this layout's tiles gather their B rows one by one; band groups share B blocks of aligned layouts only";
  if (!kernels::band_groups_supported(mode, m.device))
    return std::string("band groups need compute capability 9.0 and 16-bit A and B (this plan: ") +
           kernels::operand_mode_name(mode) + ")";
  return "";
}

/// The model's path split at `tiles_per_part`, from the cache where an earlier draft made it.
const detail::PathChoice& path_choice(const DeviceMatrix::Impl& m, const DeviceBandCsr& csr, std::int32_t n,
                                      std::int32_t tiles_per_part, detail::DraftCache& cache) {
  for (const auto& [parts, choice] : cache.paths)
    if (parts == tiles_per_part) return choice;
  const std::size_t bands = m.band_stats.size();
  std::vector<std::uint8_t> has_csr(bands);
  for (std::size_t b = 0; b < bands; ++b) has_csr[b] = csr.first_slot[b] >= 0;
  const detail::CostContext ctx{n, m.b_row_index == BRowIndex::full, m.cols, m.l2_bytes, tiles_per_part};
  cache.paths.emplace_back(tiles_per_part, detail::choose_paths(m.band_stats, has_csr, ctx));
  return cache.paths.back().second;
}

/// Which bands go to CSR for `kernel` (1) and the report's reason and predictions; `csr_part_ns` is the predicted
/// time of an automatic plan's CSR launch (0 without one), which a grouped tile part is added to. An automatic
/// plan takes the model's choice of paths unless `forced` names one.
std::vector<std::uint8_t> assign_bands(const DeviceMatrix::Impl& m, const DeviceBandCsr& csr, std::int32_t n,
                                       KernelKind kernel, std::int32_t tiles_per_part, BandPaths forced,
                                       detail::DraftCache& cache, PlanReport& report, double& csr_part_ns,
                                       BandPaths& paths) {
  const std::size_t bands = m.band_stats.size();
  const detail::PathChoice& choice = path_choice(m, csr, n, tiles_per_part, cache);
  report.tiles_only_us = choice.tiles_only_ns / 1e3;
  report.csr_only_us = choice.csr_only_ns < 0 ? -1.0 : choice.csr_only_ns / 1e3;
  csr_part_ns = 0.0;
  switch (kernel) {
    case KernelKind::automatic: {
      if (forced == BandPaths::automatic) {
        paths = choice.chosen;
        report.predicted_us = choice.chosen_ns / 1e3;
        csr_part_ns = choice.chosen_csr_ns;
        report.reason = choice.reason;
        return choice.to_csr;
      }
      paths = forced;
      char line[160];
      switch (forced) {
        case BandPaths::csr: {
          if (choice.csr_only_ns < 0) {
            const auto with_copy = std::count_if(csr.first_slot.begin(), csr.first_slot.end(),
                                                 [](std::int32_t slot) { return slot >= 0; });
            throw InvalidArgument("SpmmPlan: paths = csr, but " + std::to_string(with_copy) + " of " +
                                  std::to_string(bands) + " bands have a CSR copy on the device");
          }
          report.predicted_us = report.csr_only_us;
          csr_part_ns = choice.csr_only_ns;
          std::snprintf(line, sizeof line, "CSR only (forced): predicted %.1f us (tiles only %.1f us)",
                        report.predicted_us, report.tiles_only_us);
          report.reason = line;
          return std::vector<std::uint8_t>(bands, 1);
        }
        case BandPaths::hybrid:
          report.predicted_us = choice.hybrid_ns / 1e3;
          csr_part_ns = choice.hybrid_csr_ns;
          std::snprintf(line, sizeof line, "hybrid (forced): %zu bands on CSR, predicted %.1f us (tiles only %.1f us)",
                        choice.hybrid_bands_on_csr, report.predicted_us, report.tiles_only_us);
          report.reason = line;
          return choice.hybrid_to_csr;
        default:
          report.predicted_us = report.tiles_only_us;
          std::snprintf(line, sizeof line, "tiles only (forced): predicted %.1f us (model's choice: %s)",
                        report.predicted_us, choice.reason.c_str());
          report.reason = line;
          return std::vector<std::uint8_t>(bands, 0);
      }
    }
    case KernelKind::csr_cuda_cores:
      if (csr.bands != static_cast<std::int32_t>(bands))
        throw InvalidArgument("SpmmPlan: kernel csr_cuda_cores needs a CSR copy of every band "
                              "(DeviceMatrix::add_csr_of_every_band); this matrix has " + std::to_string(csr.bands) +
                              " of " + std::to_string(bands));
      paths = BandPaths::csr;
      report.predicted_us = report.csr_only_us;
      report.reason = "requested";
      return std::vector<std::uint8_t>(bands, 1);
    default:
      paths = BandPaths::tiles;
      report.predicted_us = kernel == KernelKind::split_pipelined ? report.tiles_only_us : -1.0;
      report.reason = "requested";
      return std::vector<std::uint8_t>(bands, 0);
  }
}

/// The band-group schedule of `tile_rows` (ascending), from the cache where an earlier draft made it.
std::shared_ptr<const detail::BandGroupSchedule> group_schedule(const DeviceMatrix::Impl& m,
                                                                const std::vector<std::int32_t>& tile_rows,
                                                                detail::DraftCache& cache) {
  for (const auto& [rows, schedule] : cache.groups)
    if (rows == tile_rows) return schedule;
  if (!cache.have_tile_index) {
    cache.sparse24 = host_tile_index(m.sparse24, m.tile_rows);
    cache.dense = host_tile_index(m.dense, m.tile_rows);
    cache.have_tile_index = true;
  }
  auto schedule =
      std::make_shared<const detail::BandGroupSchedule>(detail::build_band_groups(tile_rows, cache.sparse24, cache.dense));
  cache.groups.emplace_back(tile_rows, schedule);
  return schedule;
}

}  // namespace

detail::PlanDraft detail::draft_plan(const DeviceMatrix& matrix, std::int32_t n, KernelKind kernel,
                                     const PlanOptions& options, const PlanKnobs& knobs, DraftCache* cache) {
  if (n < 1) throw InvalidArgument("SpmmPlan: n must be >= 1, got " + std::to_string(n));
  matrix.require_current_device("SparseOperator::make_plan");
  const DeviceMatrix::Impl& m = matrix.impl();
  const bool dense_kernel = kernel == KernelKind::dense_bt || kernel == KernelKind::dense_pipelined;
  if (dense_kernel && !m.has_merged_dense)
    throw InvalidArgument(std::string("SpmmPlan: kernel ") + kernel_name(kernel) +
                          " needs the all-dense tile list on the device (DeviceMatrix::add_merged_dense)");
  if (knobs.paths != BandPaths::automatic && kernel != KernelKind::automatic)
    throw InvalidArgument(std::string("SpmmPlan: paths = ") + experimental::band_paths_name(knobs.paths) +
                          " is a choice of automatic plans; kernel " + kernel_name(kernel) + " runs one path");
  DraftCache own_cache;
  DraftCache& shared = cache != nullptr ? *cache : own_cache;
  PlanDraft d;
  InputType input = InputType::f16;
  d.mode = operand_mode(m.precision, options.input, options.output, input);
  if (dense_kernel && d.mode != kernels::OperandMode::f16)
    throw InvalidArgument(std::string("SpmmPlan: kernel ") + kernel_name(kernel) +
                          " multiplies fp16 A with fp16 B only (this plan: " + kernels::operand_mode_name(d.mode) +
                          "); split_pipelined, csr_cuda_cores and automatic take every precision");
  d.kernel = kernel;
  d.n = n;
  d.options = options;
  d.options.input = input;
  d.knobs = knobs;
  d.slice_width = kernels::slice_width_for(n, d.mode);

  PlanReport& report = d.report;
  report.kernel = kernel;
  report.n = n;
  report.precision = m.precision;
  report.input = input;
  // The tile kernel's entries in the kernel table: their blocks per SM on this device decide the pipeline depth
  // (from the grid the tile kernel would run if every band with tiles went to it) and the long-band split.
  d.tile_key = kernels::TileKernelKey{dense_kernel ? kernel : KernelKind::split_pipelined, d.mode, d.slice_width,
                                      TilePipeline::standard, options.output, m.b_row_index, false};
  const detail::TileLaunch launch = detail::tile_launch_for(m.band_stats, n, d.tile_key, m.multiprocessors, m.sm,
                                                            knobs.tile_pipeline, knobs.split_long_bands);
  d.tile_pipeline = d.tile_key.pipeline = launch.pipeline;
  d.deep_pipeline_exists = launch.deep_exists;
  report.deep_tile_pipeline = d.tile_pipeline == TilePipeline::deep;
  d.tiles_per_part = launch.tiles_per_part;
  // csr_cuda_cores reads the copy of every band where the matrix has one; automatic plans the candidates' copy.
  // Only a csr_cuda_cores plan looks at the copy of every band: another thread may be adding it under the
  // operator's lock while this plan is drafted (the copy, once made, never changes). The tuner's candidates are
  // automatic plans, so they never read it either.
  const DeviceBandCsr* every_band = kernel == KernelKind::csr_cuda_cores ? m.csr_of_every_band() : nullptr;
  d.csr = every_band != nullptr ? every_band : &m.csr;
  d.to_csr = assign_bands(m, *d.csr, n, kernel, d.tiles_per_part, knobs.paths, shared, report, d.csr_part_ns, d.paths);

  // The tile bands (ascending), and whether the one-band schedule would split any of them.
  std::vector<std::int32_t> tile_rows;
  for (std::size_t b = 0; b < d.to_csr.size(); ++b) {
    if (d.to_csr[b]) {
      d.runs_csr = true;
      continue;
    }
    tile_rows.push_back(static_cast<std::int32_t>(b));
    d.splits_bands = d.splits_bands || detail::split_parts(m.band_stats[b].tiles(), d.tiles_per_part) > 1;
  }
  d.runs_tiles = !tile_rows.empty();
  // Band groups: asked for (on), or where an automatic plan's tile bands share enough B blocks.
  const std::string group_obstacle = band_groups_obstacle(m, kernel, d.mode);
  if (knobs.band_groups == BandGroups::on && !group_obstacle.empty())
    throw InvalidArgument("SpmmPlan: band_groups = on, but " + group_obstacle);
  const bool consider_groups =
      d.runs_tiles && group_obstacle.empty() &&
      (knobs.band_groups == BandGroups::on ||
       (knobs.band_groups == BandGroups::automatic && kernel == KernelKind::automatic &&
        n >= detail::kGroupMinColumns));
  if (consider_groups) {
    std::shared_ptr<const detail::BandGroupSchedule> groups = group_schedule(m, tile_rows, shared);
    if (knobs.band_groups == BandGroups::on || detail::band_groups_pay(*groups, n, m.multiprocessors)) {
      // A group runs its bands whole: the one-band schedule splits none.
      const std::int64_t group_slices = (std::int64_t(n) + kernels::kGroupSliceWidth - 1) / kernels::kGroupSliceWidth;
      if (std::int64_t(groups->groups.size()) * group_slices > INT32_MAX)
        throw SizeLimitError("SpmmPlan: " + std::to_string(groups->groups.size()) + " band groups x " +
                             std::to_string(group_slices) + " column slices exceed the blocks of one launch");
      d.splits_bands = false;
      report.band_groups = static_cast<std::int32_t>(groups->groups.size());
      report.band_group_steps = groups->steps_count();
      // The tile part runs on the band-group kernel: its own model replaces the one-band prediction.
      const double grouped_ns = detail::band_groups_ns(*groups, n, m.multiprocessors);
      if (report.predicted_us >= 0.0) report.predicted_us = (grouped_ns + d.csr_part_ns) / 1e3;
      char line[96];
      std::snprintf(line, sizeof line, "; %d band groups: tile part predicted %.1f us", report.band_groups,
                    grouped_ns / 1e3);
      report.reason += line;
      d.groups = std::move(groups);
    }
  }
  return d;
}

SpmmPlan detail::PlanAccess::build(const DeviceMatrix& a, const PlanDraft& draft) {
  auto impl = std::make_unique<SpmmPlan::Impl>();
  // A failure part way leaves nothing allocated: the buffers made so far belong to impl, freed as it goes.
  try {
    impl->build(a, draft);
  } catch (const OutOfMemory& e) {
    throw OutOfMemory("SparseOperator::make_plan (n = " + std::to_string(draft.n) + ", kernel " +
                      kernel_name(draft.kernel) + ", its work lists and workspace): " + e.what());
  }
  return SpmmPlan(std::move(impl));
}

SpmmPlan detail::PlanAccess::make(const DeviceMatrix& a, std::int32_t n, KernelKind kernel,
                                   const PlanOptions& options, const PlanKnobs& knobs, TunedChoices* store) {
  const bool measure = options.tuning == Tuning::measure;
  if (measure && kernel == KernelKind::automatic && experimental::default_knobs(knobs))
    return tune_plan(a, n, options, store);
  SpmmPlan plan = build(a, draft_plan(a, n, kernel, options, knobs));
  if (measure)
    plan.impl_->report.tuning_reason = kernel != KernelKind::automatic
                                           ? std::string("kernel ") + kernel_name(kernel) + " requested: nothing to measure"
                                           : std::string("plan knobs forced: the cost model decides the rest");
  return plan;
}

PlanReport& detail::PlanAccess::report(SpmmPlan& plan) noexcept { return plan.impl_->report; }

SpmmPlan::SpmmPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

void SpmmPlan::Impl::build(const DeviceMatrix& matrix, const detail::PlanDraft& draft) {
  const DeviceMatrix::Impl& m = matrix.impl();
  Impl& p = *this;
  const std::int32_t n = draft.n;
  const KernelKind kernel = draft.kernel;
  const PlanOptions& options = draft.options;
  const bool dense_kernel = kernel == KernelKind::dense_bt || kernel == KernelKind::dense_pipelined;
  p.a = &m;
  p.n = n;
  p.kernel = kernel;
  p.tile_kernel = dense_kernel ? kernel : KernelKind::split_pipelined;
  p.options = options;
  p.mode = draft.mode;
  p.slice_width = draft.slice_width;
  p.tile_pipeline = draft.tile_pipeline;
  p.csr = draft.csr;
  const InputType input = options.input;
  const std::int64_t n_slices = (std::int64_t(n) + p.slice_width - 1) / p.slice_width;
  const DeviceBandCsr& csr = *p.csr;
  const std::vector<std::uint8_t>& to_csr = draft.to_csr;
  const std::int32_t tiles_per_part = draft.tiles_per_part;
  PlanReport& report = p.report;
  report = draft.report;

  // Tile part: the descriptors of the tile bands, in the matrix's longest-first order.
  std::vector<kernels::TileRowWork> tile_work;
  for (const kernels::TileRowWork& w : m.row_work_host) {
    if (to_csr[static_cast<std::size_t>(w.tile_row)]) continue;
    tile_work.push_back(w);
    const detail::BandStats& s = m.band_stats[static_cast<std::size_t>(w.tile_row)];
    report.sparse24_tiles += s.sparse24_tiles;
    report.dense_tiles += s.dense_tiles;
    report.sparse24_nnz += s.sparse24_nnz;
    report.dense_nnz += s.dense_nnz;
  }
  report.tile_bands = static_cast<std::int32_t>(tile_work.size());
  p.run_tiles = !tile_work.empty();
  p.grouped = p.run_tiles && draft.groups != nullptr;
  if (p.grouped) {
    const detail::BandGroupSchedule& groups = *draft.groups;
    p.groups = detail::DeviceBuffer<kernels::BandGroup>(groups.groups);
    p.group_steps = detail::DeviceBuffer<kernels::BandGroupStep>(groups.steps);
    p.group_entry_ptr = detail::DeviceBuffer<std::int32_t>(groups.entry_ptr);
    p.group_entries = detail::DeviceBuffer<std::int32_t>(groups.entries);
    p.group_rows = detail::DeviceBuffer<std::int32_t>(groups.group_rows);
    kernels::BandGroupParams& g = p.group_params;
    g.sparse24 = m.sparse24.view();
    g.dense = m.dense.view();
    g.groups = p.groups.get();
    g.steps = p.group_steps.get();
    g.entry_ptr = p.group_entry_ptr.get();
    g.entries = p.group_entries.get();
    g.group_rows = p.group_rows.get();
    g.n_groups = static_cast<std::int32_t>(groups.groups.size());
    g.n_slices = static_cast<std::int32_t>((std::int64_t(n) + kernels::kGroupSliceWidth - 1) / kernels::kGroupSliceWidth);
    g.rows = m.rows;
    g.n = n;
    g.row_map = m.row_map.get();
    g.stored_row_exponent = m.stored_row_exponent.get();
  }
  const detail::TileSchedule schedule = detail::schedule_tile_bands(tile_work, p.grouped ? 0 : tiles_per_part);
  report.split_bands = static_cast<std::int32_t>(schedule.groups.size());
  report.split_parts = schedule.partials;
  const std::int64_t index_bytes = m.b_row_index == BRowIndex::full ? kFullIndexBytesPerTile : 0;
  if (dense_kernel) {
    report.dense_tiles += report.sparse24_tiles;
    report.dense_nnz += report.sparse24_nnz;
    report.sparse24_tiles = report.sparse24_nnz = 0;
  }
  report.sparse24_bytes = report.sparse24_tiles * (kSparseTileValues * 2 + kSparseTileMetaWords * 4 + 4 + index_bytes);
  report.dense_bytes = report.dense_tiles * (kDenseTileValues * 2 + 4 + index_bytes);
  // The matrix's own descriptors serve when the plan runs every band as one item each.
  const bool own_descriptors = tile_work.size() == m.row_work_host.size() && schedule.groups.empty();

  kernels::SpmmParams& k = p.params;
  k.sparse24 = m.sparse24.view();
  k.dense = dense_kernel ? m.merged_dense.view() : m.dense.view();
  if (!own_descriptors && p.run_tiles && !p.grouped)
    p.tile_work = detail::DeviceBuffer<kernels::TileRowWork>(schedule.items);
  k.row_work = own_descriptors ? m.row_work.get() : p.tile_work.get();
  k.row_map = m.row_map.get();
  k.stored_row_exponent = m.stored_row_exponent.get();
  if (std::int64_t(schedule.items.size()) * n_slices > INT32_MAX)
    throw SizeLimitError("SpmmPlan: " + std::to_string(schedule.items.size()) + " tile work items x " +
                         std::to_string(n_slices) + " column slices exceed the 2^31 - 1 blocks of one launch");
  k.tile_rows = static_cast<std::int32_t>(schedule.items.size());
  {
    // Split parts always hold tiles (a band is split only when long); keep every part of a group regardless, so
    // that the group's counter still sees all of them.
    std::vector<kernels::TileRowWork> with_entries;
    for (const kernels::TileRowWork& w : schedule.items)
      if (w.split != kernels::kUnsplit || w.sparse24_end > w.sparse24_begin || w.dense_end > w.dense_begin ||
          w.merged_end > w.merged_begin)
        with_entries.push_back(w);
    report.empty_bands += static_cast<std::int32_t>(schedule.items.size() - with_entries.size());
    // A grouped plan runs every band of its groups (the kernel's grid is the groups): no list without the empty ones.
    p.tiles_have_empty = !p.grouped && with_entries.size() < schedule.items.size();
    if (p.tiles_have_empty) {
      p.tile_items_with_entries = static_cast<std::int32_t>(with_entries.size());
      if (!with_entries.empty())
        p.tile_work_with_entries = detail::DeviceBuffer<kernels::TileRowWork>(with_entries);
    }
  }
  k.rows = m.rows;
  k.k = m.cols;
  k.n = n;
  k.n_slices = static_cast<std::int32_t>(n_slices);
  if (!schedule.groups.empty()) {
    p.split_groups = detail::DeviceBuffer<kernels::SplitGroup>(schedule.groups);
    p.split_partials = detail::DeviceBuffer<float>(std::size_t(schedule.partials) * std::size_t(n_slices) *
                                                   kTileRows * std::size_t(p.slice_width));
    p.split_counters = detail::DeviceBuffer<unsigned>(schedule.groups.size() * std::size_t(n_slices));
    // The counters start at zero; the last part of each group resets its counter, so they stay zero between runs.
    BCSR24_CUDA_CHECK(cudaMemset(p.split_counters.get(), 0, p.split_counters.bytes()));
    detail::wait_for_device_writes();  // the first run may be on a stream not ordered after the legacy one
    k.split_groups = p.split_groups.get();
    k.split_partials = p.split_partials.get();
    k.split_counters = p.split_counters.get();
  }

  p.split_bands = !schedule.groups.empty();
  if (p.grouped) {
    kernels::configure_band_group_kernel(p.mode, options.output);
    report.tile_stages = kernels::kGroupStages;
  } else if (p.run_tiles) {
    kernels::TileKernelKey tile_key = draft.tile_key;
    tile_key.split_bands = p.split_bands;
    p.tile = &kernels::tile_kernel(tile_key);
    kernels::configure_tile_kernel(*p.tile);
    report.tile_stages = p.tile->stages;
  }

  // CSR part: the non-padding rows of the CSR bands; rows far longer than the rest get a block each.
  std::vector<std::int32_t> slots;
  std::int64_t row_entries = 0;
  for (std::size_t b = 0; b < to_csr.size(); ++b) {
    if (!to_csr[b]) continue;
    ++report.csr_bands;
    const detail::BandStats& s = m.band_stats[b];
    report.csr_nnz += s.nnz();
    if (s.nnz() == 0) ++report.empty_bands;
    for (int r = 0; r < kTileRows; ++r) {
      const std::int32_t slot = csr.first_slot[b] + r;
      if (csr.out_row_host[static_cast<std::size_t>(slot)] < 0) continue;
      slots.push_back(slot);
      row_entries += csr.row_nnz[static_cast<std::size_t>(slot)];
    }
  }
  p.run_csr = !slots.empty();
  if (p.run_csr) {
    const double mean_row_nnz = double(row_entries) / double(slots.size());
    p.csr_shape = kernels::csr_shape_for(n, mean_row_nnz);
    p.csr_kernel = &kernels::csr_kernel({p.mode, options.output, p.csr_shape});
    const kernels::CsrRowClasses classes = kernels::csr_row_classes(p.csr_shape, mean_row_nnz);
    std::vector<std::int32_t> long_slots, medium_slots, short_slots;
    for (const std::int32_t slot : slots) {
      const std::int32_t entries = csr.row_nnz[static_cast<std::size_t>(slot)];
      (entries > classes.medium_max ? long_slots : entries > classes.short_max ? medium_slots : short_slots)
          .push_back(slot);
    }
    // Longest first: they are the launch's critical path. A row far longer than one block's lanes cover gets
    // several blocks, each on its share of the column chunks.
    std::stable_sort(long_slots.begin(), long_slots.end(), [&](std::int32_t x, std::int32_t y) {
      return csr.row_nnz[static_cast<std::size_t>(x)] > csr.row_nnz[static_cast<std::size_t>(y)];
    });
    std::vector<kernels::CsrLongBlock> long_blocks;
    for (const std::int32_t slot : long_slots) {
      const int blocks = kernels::csr_long_row_blocks(p.csr_shape.chunks, csr.row_nnz[static_cast<std::size_t>(slot)]);
      const int chunks = p.csr_shape.chunks / blocks;
      for (int b = 0; b < blocks; ++b)
        long_blocks.push_back({slot, static_cast<std::int16_t>(b * chunks), static_cast<std::int16_t>(chunks)});
    }
    p.csr_long_blocks = detail::DeviceBuffer<kernels::CsrLongBlock>(long_blocks);
    p.csr_medium_slots = detail::DeviceBuffer<std::int32_t>(medium_slots);
    p.csr_short_slots = detail::DeviceBuffer<std::int32_t>(short_slots);
    std::vector<std::int32_t> short_with_entries;
    for (const std::int32_t slot : short_slots)
      if (csr.row_nnz[static_cast<std::size_t>(slot)] > 0) short_with_entries.push_back(slot);
    p.csr_has_empty = short_with_entries.size() < short_slots.size();
    if (p.csr_has_empty) {
      p.csr_short_with_entries = static_cast<std::int32_t>(short_with_entries.size());
      if (!short_with_entries.empty())
        p.csr_short_slots_with_entries = detail::DeviceBuffer<std::int32_t>(short_with_entries);
    }
    kernels::CsrSpmmParams& c = p.csr_params;
    c.row_ptr = csr.row_ptr.get();
    c.b_row = csr.b_row.get();
    c.values = csr.values.get();
    c.values_lo = csr.values_lo.get();
    c.slot_exponent = csr.slot_exponent.get();
    c.out_row = csr.out_row.get();
    c.long_blocks = p.csr_long_blocks.get();
    c.medium_slots = p.csr_medium_slots.get();
    c.short_slots = p.csr_short_slots.get();
    c.long_count = static_cast<std::int32_t>(long_blocks.size());
    c.medium_count = static_cast<std::int32_t>(medium_slots.size());
    c.short_count = static_cast<std::int32_t>(short_slots.size());
    c.k = m.cols;
    c.n = n;
    report.csr_long_rows = static_cast<std::int32_t>(long_slots.size());
    report.csr_long_blocks = c.long_count;
    report.csr_medium_rows = c.medium_count;
    report.csr_chunks = p.csr_shape.chunks;
    report.csr_nz_lanes = p.csr_shape.nz_lanes;
    const std::int64_t value_bytes = m.precision == Precision::split ? 4 : 2;
    report.csr_bytes = report.csr_nnz * (4 + value_bytes) + std::int64_t(slots.size()) * 12;
  }
  if (m.precision == Precision::split) {  // the low parts double the value bytes of the tiles
    report.sparse24_bytes += report.sparse24_tiles * kSparseTileValues * 2;
    report.dense_bytes += report.dense_tiles * kDenseTileValues * 2;
  }
  p.needs_aligned_b = p.run_tiles || (p.run_csr && !p.csr_shape.scalar_b);
  if (options.allow_unaligned_b && p.needs_aligned_b) {
    const bool f32 = input == InputType::f32;
    const int per_chunk = f32 ? 4 : 8;  // values per 16-byte load
    p.staged_ld = (std::int64_t(n) + per_chunk - 1) / per_chunk * per_chunk;
    const auto count = static_cast<std::size_t>(std::int64_t(m.cols) * p.staged_ld);
    if (f32)
      p.staged_b_f32 = detail::DeviceBuffer<float>(count);
    else
      p.staged_b = detail::DeviceBuffer<std::uint16_t>(count);
  }
}

SpmmPlan::~SpmmPlan() = default;
SpmmPlan::SpmmPlan(SpmmPlan&&) noexcept = default;
SpmmPlan& SpmmPlan::operator=(SpmmPlan&&) noexcept = default;

std::int32_t SpmmPlan::n() const noexcept { return impl_->n; }
KernelKind SpmmPlan::kernel() const noexcept { return impl_->kernel; }
OutputType SpmmPlan::output() const noexcept { return impl_->options.output; }
InputType SpmmPlan::input() const noexcept { return impl_->options.input; }
std::int64_t SpmmPlan::workspace_bytes() const noexcept {
  const Impl& p = *impl_;
  return std::int64_t(p.staged_b.bytes() + p.staged_b_f32.bytes() + p.tile_work.bytes() +
                      p.tile_work_with_entries.bytes() + p.csr_short_slots_with_entries.bytes() +
                      p.split_groups.bytes() + p.split_partials.bytes() + p.split_counters.bytes() +
                      p.csr_long_blocks.bytes() + p.csr_medium_slots.bytes() +
                      p.csr_short_slots.bytes() + p.groups.bytes() + p.group_steps.bytes() +
                      p.group_entry_ptr.bytes() + p.group_entries.bytes() + p.group_rows.bytes());
}
const PlanReport& SpmmPlan::report() const noexcept { return impl_->report; }

namespace {

/// Null pointers, short leading dimensions and the plan's B type, for either run().
void check_run_arguments(const DeviceMatrix::Impl& a, std::int32_t n, InputType plan_input, bool f32_b, const void* b,
                         std::int64_t ldb, const void* c, std::int64_t ldc) {
  if (f32_b != (plan_input == InputType::f32))
    throw InvalidArgument(std::string("SpmmPlan::run: the plan takes ") + input_type_name(plan_input) + " B, not " +
                          (f32_b ? "fp32" : "16-bit") + " (PlanOptions::input)");
  if (c == nullptr && a.rows > 0) throw InvalidArgument("SpmmPlan::run: C is null");
  if (b == nullptr && a.cols > 0) throw InvalidArgument("SpmmPlan::run: B is null");
  if (ldb < n) throw InvalidArgument("SpmmPlan::run: ldb " + std::to_string(ldb) + " < n " + std::to_string(n));
  if (ldc < n) throw InvalidArgument("SpmmPlan::run: ldc " + std::to_string(ldc) + " < n " + std::to_string(n));
}

}  // namespace

void SpmmPlan::run(const fp16_t* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
                   Stream stream) const {
  impl_->run(b, ldb, c, ldc, alpha, beta, reinterpret_cast<cudaStream_t>(stream));
}

void SpmmPlan::run(const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
                   Stream stream) const {
  impl_->run(b, ldb, c, ldc, alpha, beta, reinterpret_cast<cudaStream_t>(stream));
}

template <typename BElement>
void SpmmPlan::Impl::run(const BElement* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
                         cudaStream_t s) const {
  constexpr bool kF32 = std::is_same_v<BElement, float>;
  constexpr int kPerChunk = kF32 ? 4 : 8;  // B values per 16-byte load
  check_run_arguments(*a, n, options.input, kF32, b, ldb, c, ldc);
  int current = -1;
  BCSR24_CUDA_CHECK(cudaGetDevice(&current));
  if (current != a->device)
    throw InvalidArgument("SpmmPlan::run: the plan lives on CUDA device " + std::to_string(a->device) + ", device " +
                          std::to_string(current) + " is current; call cudaSetDevice(" + std::to_string(a->device) +
                          ") first");
  if (a->rows == 0) return;

  kernels::SpmmParams k = params;
  const BElement* b_used = b;
  std::int64_t ldb_used = ldb;
  const bool b_aligned = reinterpret_cast<std::uintptr_t>(b) % 16 == 0 && ldb % kPerChunk == 0;
  // The tile kernel steps from one B row to the next by a 32-bit byte pitch; B with rows 4 GiB or more apart is
  // staged like unaligned B.
  const bool b_pitch_fits = ldb <= std::int64_t(UINT32_MAX / sizeof(BElement));
  if ((!b_aligned || !b_pitch_fits) && a->cols != 0 && needs_aligned_b) {
    if (!options.allow_unaligned_b && !b_aligned)
      throw InvalidArgument(std::string("SpmmPlan::run: ") + (kF32 ? "fp32 " : "") +
                            "B must be 16-byte aligned with ldb % " + std::to_string(kPerChunk) + " == 0 (ldb = " +
                            std::to_string(ldb) + "), or make the plan with allow_unaligned_b");
    if (!options.allow_unaligned_b)
      throw SizeLimitError("SpmmPlan::run: ldb " + std::to_string(ldb) + " puts B's rows 4 GiB or more apart; the " +
                           "tile kernels need a smaller pitch, or make the plan with allow_unaligned_b (B is copied)");
    BElement* staged;
    if constexpr (kF32) staged = staged_b_f32.get(); else staged = staged_b.get();
    kernels::launch_stage_b(b, ldb, a->cols, n, staged, staged_ld, s);
    b_used = staged;
    ldb_used = staged_ld;
  }
  if constexpr (kF32) k.b_f32 = b_used; else k.b = b_used;
  k.b_pitch = static_cast<std::uint32_t>(ldb_used * std::int64_t(sizeof(BElement)));
  k.c = c;
  k.ldc = ldc;
  // Stored values are A * 2^-e: undo the scale in alpha (a power of two, so exact unless it over/underflows).
  k.alpha = std::ldexp(alpha, a->scale_exponent);
  k.beta = beta;
  launch(k, ldb_used, b, ldb, s);
}

void SpmmPlan::Impl::launch(kernels::SpmmParams k, std::int64_t ldb_used, const void* b_as_given,
                            std::int64_t ldb_as_given, cudaStream_t s) const {
  // The two parts write disjoint rows of C (a band is on one path), so their order does not matter.
  const bool accumulate = k.beta == 1.0f;  // rows without entries keep C: only the work with entries runs
  if (run_tiles && accumulate && tiles_have_empty) {
    k.row_work = tile_work_with_entries.get();
    k.tile_rows = tile_items_with_entries;
  }
  if (run_tiles && grouped) {
    kernels::BandGroupParams g = group_params;
    g.c = k.c;
    g.ldc = k.ldc;
    g.alpha = k.alpha;
    g.beta = k.beta;
    kernels::launch_band_group_kernel(mode, options.output, g, k.b, k.k, k.b_pitch, group_b_map, s);
  } else if (run_tiles && k.tile_rows > 0)
    kernels::launch_tile_kernel(*tile, k, s);
  if (run_csr) {
    kernels::CsrSpmmParams c = csr_params;
    if (accumulate && csr_has_empty) {
      c.short_slots = csr_short_slots_with_entries.get();
      c.short_count = csr_short_with_entries;
    }
    // A narrow B is read as it is; otherwise the (possibly staged) B of the tile part.
    const bool as_given = csr_shape.scalar_b;
    c.b = as_given ? static_cast<const std::uint16_t*>(b_as_given) : k.b;
    c.b_f32 = as_given ? static_cast<const float*>(b_as_given) : k.b_f32;
    if (options.input == InputType::f32) c.b = nullptr; else c.b_f32 = nullptr;
    c.ldb = as_given ? ldb_as_given : ldb_used;
    c.c = k.c;
    c.ldc = k.ldc;
    c.alpha = k.alpha;
    c.beta = k.beta;
    kernels::launch_csr_kernel(*csr_kernel, c, s);
  }
}

}  // namespace bcsr24
