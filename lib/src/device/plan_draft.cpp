// The plan's host-side decisions (device/plan_draft.hpp): the operand mode, which bands go to CSR and why, the
// tile pipeline and long-band split, and whether the tile bands run in band groups, with the model's predictions.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/error.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "device/band_groups.hpp"
#include "device/cost_model.hpp"
#include "device/cuda_check.hpp"
#include "device/device_matrix_impl.hpp"
#include "device/plan_draft.hpp"
#include "device/tile_schedule.hpp"
#include "kernels/band_group_params.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/spmm_params.hpp"
#include "kernels/vector_params.hpp"

namespace bcsr24 {

namespace {

/// The operand mode of a matrix precision and a requested B type; refuses the combinations that do not exist.
kernels::OperandMode operand_mode(Precision precision, ElementType input, ElementType output, ElementType& resolved) {
  using kernels::OperandMode;
  if (output != ElementType::f32 && output != ElementType::f16)
    throw InvalidArgument(std::string("SpmmPlan: output type ") + element_type_name(output) +
                          " is not an output type (expected fp32 or fp16)");
  resolved = input;
  if (input == ElementType::automatic)
    resolved = precision == Precision::split  ? ElementType::f32
               : precision == Precision::bf16 ? ElementType::bf16
                                              : ElementType::f16;
  OperandMode mode = OperandMode::f16;
  bool ok = true;
  switch (precision) {
    case Precision::fp16:
      ok = resolved != ElementType::bf16;
      mode = resolved == ElementType::f32 ? OperandMode::f16_f32b : OperandMode::f16;
      break;
    case Precision::bf16:
      ok = resolved != ElementType::f16;
      mode = resolved == ElementType::f32 ? OperandMode::bf16_f32b : OperandMode::bf16;
      break;
    case Precision::split:
      ok = resolved == ElementType::f32;
      mode = OperandMode::split_f32b;
      break;
  }
  if (!ok)
    throw InvalidArgument(std::string("SpmmPlan: a ") + precision_name(precision) + " matrix does not take " +
                          element_type_name(resolved) + " B (" +
                          (precision == Precision::split ? "split precision needs fp32 B"
                                                         : std::string("use ") + precision_name(precision) +
                                                               " or fp32 B") +
                          ")");
  if (mode != OperandMode::f16 && output != ElementType::f32)
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
std::string band_groups_obstacle(const DeviceMatrix::Impl& m, KernelKind kernel, kernels::OperandMode mode,
                                 std::int32_t n) {
  // Widths with a partial last column slice gave wrong, run-to-run different outputs on the H100 (n = 127: a few
  // hundred of 127,000 outputs on matrices with several steps per tile column; n = 64, 128, 256 right in every run;
  // cause not found): band groups run whole slices only until it is.
  if (n % kernels::kGroupSliceWidth != 0)
    return "n = " + std::to_string(n) + " is not a multiple of " + std::to_string(kernels::kGroupSliceWidth) +
           " (band groups run whole column slices only; docs/KERNELS.md, \"Band groups\")";
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
  detail::CostContext ctx{n, m.b_row_index == BRowIndex::full, m.cols, m.l2_bytes, tiles_per_part};
  ctx.scattered_share = csr.scattered_share(has_csr, 1.0);
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
  report.diagnostics.tiles_only_us = choice.tiles_only_ns / 1e3;
  report.diagnostics.csr_only_us = choice.csr_only_ns < 0 ? -1.0 : choice.csr_only_ns / 1e3;
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
          report.predicted_us = report.diagnostics.csr_only_us;
          csr_part_ns = choice.csr_only_ns;
          std::snprintf(line, sizeof line, "CSR only (forced): predicted %.1f us (tiles only %.1f us)",
                        report.predicted_us, report.diagnostics.tiles_only_us);
          report.reason = line;
          return std::vector<std::uint8_t>(bands, 1);
        }
        case BandPaths::hybrid:
          report.predicted_us = choice.hybrid_ns / 1e3;
          csr_part_ns = choice.hybrid_csr_ns;
          std::snprintf(line, sizeof line, "hybrid (forced): %zu bands on CSR, predicted %.1f us (tiles only %.1f us)",
                        choice.hybrid_bands_on_csr, report.predicted_us, report.diagnostics.tiles_only_us);
          report.reason = line;
          return choice.hybrid_to_csr;
        default:
          report.predicted_us = report.diagnostics.tiles_only_us;
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
      report.predicted_us = report.diagnostics.csr_only_us;
      report.reason = "requested";
      return std::vector<std::uint8_t>(bands, 1);
    default:
      paths = BandPaths::tiles;
      report.predicted_us = kernel == KernelKind::split_pipelined ? report.diagnostics.tiles_only_us : -1.0;
      report.reason = "requested";
      return std::vector<std::uint8_t>(bands, 0);
  }
}

bool vector_paths(BandPaths paths) { return paths == BandPaths::vectors || paths == BandPaths::hybrid_vectors; }

/// Which bands go to narrow vectors and which to CSR for a plan forced onto a vector path (`paths`: vectors or
/// hybrid_vectors), with the report's reason and predictions (the vector part's from its schedule: a forced split
/// bound `piece_steps`, or 0 for the automatic one).
void assign_vector_bands(const DeviceMatrix::Impl& m, detail::PlanDraft& d, BandPaths forced, std::int32_t piece_steps,
                         detail::DraftCache& cache) {
  if (!kernels::vectors_supported(d.mode))
    throw InvalidArgument(std::string("SpmmPlan: paths = ") + experimental::band_paths_name(forced) +
                          " runs narrow vectors, which take fp16 or bf16 A with B of the same type (this plan: " +
                          kernels::operand_mode_name(d.mode) + "; split precision and fp32 B have no vector path)");
  const std::size_t bands = m.band_stats.size();
  // The hybrid reads the upload's candidate copy only: the copy of every band may be being added by another thread
  // (under the operator's lock) while this plan is drafted, as the CSR copy of every band may; a vectors plan reads
  // it after its own make_plan added it, and a stored vectors choice exists only where the candidates are every band.
  if (forced == BandPaths::vectors) {
    d.vectors = m.vectors_of_every_band();
    if (d.vectors == nullptr)
      throw InvalidArgument("SpmmPlan: paths = vectors needs the narrow vectors of every band on the device "
                            "(experimental::make_plan uploads them; this matrix has " +
                            std::to_string(m.vectors.bands) + " of " + std::to_string(bands) + ")");
  } else {
    d.vectors = &m.vectors;
  }
  const detail::PathChoice& paths = path_choice(m, *d.csr, d.n, d.tiles_per_part, cache);
  PlanReport& report = d.report;
  report.diagnostics.tiles_only_us = paths.tiles_only_ns / 1e3;
  report.diagnostics.csr_only_us = paths.csr_only_ns < 0 ? -1.0 : paths.csr_only_ns / 1e3;
  std::vector<std::uint8_t> has_vectors(bands);
  for (std::size_t b = 0; b < bands; ++b) has_vectors[b] = d.vectors->first_window[b] >= 0;
  detail::CostContext ctx{d.n, m.b_row_index == BRowIndex::full, m.cols, m.l2_bytes, d.tiles_per_part};
  if (m.multiprocessors > 0) ctx.multiprocessors = m.multiprocessors;
  const detail::VectorPathChoice choice = detail::choose_vector_paths(m.band_stats, m.vector_counts,
                                                                      paths.hybrid_to_csr, has_vectors, ctx,
                                                                      std::max(piece_steps, 0));
  d.paths = forced;
  char line[200];
  if (forced == BandPaths::vectors) {
    d.to_csr.assign(bands, 0);
    d.to_vectors.assign(bands, 1);
    report.predicted_us = choice.vectors_only_ns / 1e3;
    d.csr_part_ns = choice.vectors_only_ns;
    std::snprintf(line, sizeof line,
                  "narrow vectors only (forced): predicted %.1f us (tiles only %.1f us)",
                  report.predicted_us, report.diagnostics.tiles_only_us);
  } else {
    d.to_csr = choice.to_csr;
    d.to_vectors = choice.to_vectors;
    report.predicted_us = choice.hybrid_ns / 1e3;
    d.csr_part_ns = choice.hybrid_csr_ns + choice.hybrid_vector_ns;
    std::snprintf(line, sizeof line,
                  "hybrid with vectors (forced): %zu bands on vectors, %zu on CSR, predicted %.1f us "
                  "(tiles only %.1f us)",
                  choice.bands_on_vectors, choice.bands_on_csr, report.predicted_us, report.diagnostics.tiles_only_us);
  }
  report.reason = line;
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
  if (knobs.paths != BandPaths::automatic && kernel != KernelKind::automatic)
    throw InvalidArgument(std::string("SpmmPlan: paths = ") + experimental::band_paths_name(knobs.paths) +
                          " is a choice of automatic plans; kernel " + kernel_name(kernel) + " runs one path");
  DraftCache own_cache;
  DraftCache& shared = cache != nullptr ? *cache : own_cache;
  PlanDraft d;
  ElementType input = ElementType::f16;
  d.mode = operand_mode(m.precision, options.input, options.output, input);
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
  d.tile_key = kernels::TileKernelKey{KernelKind::split_pipelined, d.mode, d.slice_width,
                                      TilePipeline::standard, options.output, m.b_row_index, false};
  const detail::TileLaunch launch = detail::tile_launch_for(m.band_stats, n, d.tile_key, m.multiprocessors, m.sm,
                                                            knobs.tile_pipeline, knobs.split_long_bands);
  d.tile_pipeline = d.tile_key.pipeline = launch.pipeline;
  d.deep_pipeline_exists = launch.deep_exists;
  report.diagnostics.deep_tile_pipeline = d.tile_pipeline == TilePipeline::deep;
  d.tiles_per_part = launch.tiles_per_part;
  // csr_cuda_cores reads the copy of every band where the matrix has one, and so do automatic plans of a single
  // vector (single_vector_reads_every_band); other automatic plans read the candidates' copy. Only those plans look
  // at the copy of every band: another thread may be adding it under the operator's lock while this plan is
  // drafted, and SparseOperator::make_plan adds it (or finds it) under that lock before drafting such a plan (the
  // copy, once made, never changes). The tuner's candidates at n = 1 are plans of such a plan's operator.
  const bool reads_every_band = kernel == KernelKind::csr_cuda_cores ||
                                (kernel == KernelKind::automatic && single_vector_reads_every_band(n));
  const DeviceBandCsr* every_band = reads_every_band ? m.csr_of_every_band() : nullptr;
  d.csr = every_band != nullptr ? every_band : &m.csr;
  if (vector_paths(knobs.paths)) {
    assign_vector_bands(m, d, knobs.paths, knobs.vector_piece_steps, shared);
  } else {
    d.to_csr = assign_bands(m, *d.csr, n, kernel, d.tiles_per_part, knobs.paths, shared, report, d.csr_part_ns, d.paths);
    d.to_vectors.assign(d.to_csr.size(), 0);
  }

  // The tile bands (ascending), and whether the one-band schedule would split any of them.
  std::vector<std::int32_t> tile_rows;
  for (std::size_t b = 0; b < d.to_csr.size(); ++b) {
    if (d.to_csr[b]) {
      d.runs_csr = true;
      continue;
    }
    if (d.to_vectors[b]) {
      d.runs_vectors = true;
      continue;
    }
    tile_rows.push_back(static_cast<std::int32_t>(b));
    d.splits_bands = d.splits_bands || detail::split_parts(m.band_stats[b].tiles(), d.tiles_per_part) > 1;
  }
  d.runs_tiles = !tile_rows.empty();
  // Band groups: asked for (on), or where an automatic plan's tile bands share enough B blocks.
  const std::string group_obstacle = band_groups_obstacle(m, kernel, d.mode, n);
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
      report.diagnostics.band_groups = static_cast<std::int32_t>(groups->groups.size());
      report.diagnostics.band_group_steps = groups->steps_count();
      // The tile part runs on the band-group kernel: its own model replaces the one-band prediction.
      const double grouped_ns = detail::band_groups_ns(*groups, n, m.multiprocessors);
      if (report.predicted_us >= 0.0) report.predicted_us = (grouped_ns + d.csr_part_ns) / 1e3;
      char line[96];
      std::snprintf(line, sizeof line, "; %d band groups: tile part predicted %.1f us", report.diagnostics.band_groups,
                    grouped_ns / 1e3);
      report.reason += line;
      d.groups = std::move(groups);
    }
  }
  return d;
}

}  // namespace bcsr24
