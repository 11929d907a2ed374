// SpmmPlan: fixes n, kernel, the split of the bands between tiles and CSR, and the launch geometry once;
// run() only validates pointers and enqueues.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/device.hpp"
#include "bcsr24/error.hpp"
#include "device/cost_model.hpp"
#include "device/cuda_check.hpp"
#include "device/device_buffer.hpp"
#include "device/device_matrix_impl.hpp"
#include "device/tile_schedule.hpp"
#include "kernels/csr_params.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24 {

struct SpmmPlan::Impl {
  const DeviceMatrix::Impl* a = nullptr;
  std::int32_t n = 0;
  KernelKind kernel = KernelKind::automatic;
  KernelKind tile_kernel = KernelKind::split_pipelined;  // the rung that runs the tile bands
  PlanOptions options;
  int slice_width = 8;
  kernels::SpmmParams params;  // everything but b, ldb, c, ldc, alpha, beta
  kernels::CsrSpmmParams csr_params;
  kernels::CsrShape csr_shape;
  bool run_tiles = false, run_csr = false;
  bool needs_aligned_b = false;  // some part reads B in 16-byte pieces (the tiles; CSR unless n < 8)
  bool split_bands = false;      // the tile kernel's schedule has split bands: launch the instantiation for them
  detail::DeviceBuffer<kernels::TileRowWork> tile_work;  // the tile kernel's work items, unless they are the
                                                         // matrix's own descriptors (every band, none split)
  detail::DeviceBuffer<kernels::SplitGroup> split_groups;  // split bands: their parts' partial sums and counters
  detail::DeviceBuffer<float> split_partials;
  detail::DeviceBuffer<unsigned> split_counters;
  detail::DeviceBuffer<std::int32_t> csr_long_slots, csr_medium_slots, csr_short_slots;
  detail::DeviceBuffer<std::uint16_t> staged_b;
  std::int64_t staged_ld = 0;
  PlanReport report;
};

namespace {

/// Which bands go to CSR for `kernel` (1) and the report's reason and predictions.
std::vector<std::uint8_t> assign_bands(const DeviceMatrix::Impl& m, std::int32_t n, KernelKind kernel,
                                       std::int32_t tiles_per_part, PlanReport& report) {
  const std::size_t bands = m.band_stats.size();
  std::vector<std::uint8_t> has_csr(bands);
  for (std::size_t b = 0; b < bands; ++b) has_csr[b] = m.csr.first_slot[b] >= 0;
  const detail::CostContext ctx{n, m.b_row_index == BRowIndex::full, m.cols, m.l2_bytes, tiles_per_part};
  const detail::PathChoice choice = detail::choose_paths(m.band_stats, has_csr, ctx);
  report.tiles_only_us = choice.tiles_only_ns / 1e3;
  report.csr_only_us = choice.csr_only_ns < 0 ? -1.0 : choice.csr_only_ns / 1e3;
  switch (kernel) {
    case KernelKind::automatic:
      report.predicted_us = choice.chosen_ns / 1e3;
      report.reason = choice.reason;
      return choice.to_csr;
    case KernelKind::csr_cuda_cores:
      if (m.csr.bands != static_cast<std::int32_t>(bands))
        throw InvalidArgument("SpmmPlan: kernel csr_cuda_cores needs a CSR copy of every band (UploadOptions::csr = "
                              "all); this matrix has " + std::to_string(m.csr.bands) + " of " +
                              std::to_string(bands));
      report.predicted_us = report.csr_only_us;
      report.reason = "requested";
      return std::vector<std::uint8_t>(bands, 1);
    default:
      report.predicted_us = kernel == KernelKind::split_pipelined ? report.tiles_only_us : -1.0;
      report.reason = "requested";
      return std::vector<std::uint8_t>(bands, 0);
  }
}

}  // namespace

SpmmPlan::SpmmPlan(const DeviceMatrix& a, std::int32_t n, KernelKind kernel, const PlanOptions& options)
    : impl_(std::make_unique<Impl>()) {
  if (n < 1) throw InvalidArgument("SpmmPlan: n must be >= 1, got " + std::to_string(n));
  const DeviceMatrix::Impl& m = a.impl();
  const bool dense_kernel = kernel == KernelKind::dense_bt || kernel == KernelKind::dense_pipelined;
  if (dense_kernel && !m.has_merged_dense)
    throw InvalidArgument(std::string("SpmmPlan: kernel ") + kernel_name(kernel) +
                          " needs the matrix uploaded with with_merged_dense = true");
  Impl& p = *impl_;
  p.a = &m;
  p.n = n;
  p.kernel = kernel;
  p.tile_kernel = dense_kernel ? kernel : KernelKind::split_pipelined;
  p.options = options;
  p.slice_width = kernels::slice_width_for(n);
  const std::int64_t n_slices = (std::int64_t(n) + p.slice_width - 1) / p.slice_width;

  PlanReport& report = p.report;
  report.kernel = kernel;
  report.n = n;
  // Bands far longer than one block slot's fair share of the tiles are split over several blocks.
  const std::int32_t tiles_per_part =
      options.split_long_bands
          ? detail::split_tiles_per_part(m.band_stats,
                                         std::int64_t(m.multiprocessors) * kernels::tile_blocks_per_sm(p.slice_width))
          : 0;
  const std::vector<std::uint8_t> to_csr = assign_bands(m, n, kernel, tiles_per_part, report);

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
  const detail::TileSchedule schedule = detail::schedule_tile_bands(tile_work, tiles_per_part);
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
  p.run_tiles = !tile_work.empty();
  // The matrix's own descriptors serve when the plan runs every band as one item each.
  const bool own_descriptors = tile_work.size() == m.row_work_host.size() && schedule.groups.empty();

  kernels::SpmmParams& k = p.params;
  k.sparse24 = m.sparse24.view();
  k.dense = dense_kernel ? m.merged_dense.view() : m.dense.view();
  if (!own_descriptors && p.run_tiles) p.tile_work = detail::DeviceBuffer<kernels::TileRowWork>(schedule.items);
  k.row_work = own_descriptors ? m.row_work.get() : p.tile_work.get();
  k.row_map = m.row_map.get();
  if (std::int64_t(schedule.items.size()) * n_slices > INT32_MAX)
    throw SizeLimitError("SpmmPlan: " + std::to_string(schedule.items.size()) + " tile work items x " +
                         std::to_string(n_slices) + " column slices exceed the 2^31 - 1 blocks of one launch");
  k.tile_rows = static_cast<std::int32_t>(schedule.items.size());
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
    k.split_groups = p.split_groups.get();
    k.split_partials = p.split_partials.get();
    k.split_counters = p.split_counters.get();
  }

  p.split_bands = !schedule.groups.empty();
  if (p.run_tiles)
    kernels::configure_spmm_kernel(p.tile_kernel, p.slice_width, options.output, m.b_row_index, p.split_bands);

  // CSR part: the non-padding rows of the CSR bands; rows far longer than the rest get a block each.
  std::vector<std::int32_t> slots;
  std::int64_t row_entries = 0;
  for (std::size_t b = 0; b < to_csr.size(); ++b) {
    if (!to_csr[b]) continue;
    ++report.csr_bands;
    const detail::BandStats& s = m.band_stats[b];
    report.csr_nnz += s.nnz();
    for (int r = 0; r < kTileRows; ++r) {
      const std::int32_t slot = m.csr.first_slot[b] + r;
      if (m.csr.out_row_host[static_cast<std::size_t>(slot)] < 0) continue;
      slots.push_back(slot);
      row_entries += m.csr.row_nnz[static_cast<std::size_t>(slot)];
    }
  }
  p.run_csr = !slots.empty();
  if (p.run_csr) {
    const double mean_row_nnz = double(row_entries) / double(slots.size());
    p.csr_shape = kernels::csr_shape_for(n, mean_row_nnz);
    const kernels::CsrRowClasses classes = kernels::csr_row_classes(p.csr_shape, mean_row_nnz);
    std::vector<std::int32_t> long_slots, medium_slots, short_slots;
    for (const std::int32_t slot : slots) {
      const std::int32_t entries = m.csr.row_nnz[static_cast<std::size_t>(slot)];
      (entries > classes.medium_max ? long_slots : entries > classes.short_max ? medium_slots : short_slots)
          .push_back(slot);
    }
    // Longest first: they are the launch's critical path.
    std::stable_sort(long_slots.begin(), long_slots.end(), [&](std::int32_t x, std::int32_t y) {
      return m.csr.row_nnz[static_cast<std::size_t>(x)] > m.csr.row_nnz[static_cast<std::size_t>(y)];
    });
    p.csr_long_slots = detail::DeviceBuffer<std::int32_t>(long_slots);
    p.csr_medium_slots = detail::DeviceBuffer<std::int32_t>(medium_slots);
    p.csr_short_slots = detail::DeviceBuffer<std::int32_t>(short_slots);
    kernels::CsrSpmmParams& c = p.csr_params;
    c.row_ptr = m.csr.row_ptr.get();
    c.b_row = m.csr.b_row.get();
    c.values = m.csr.values.get();
    c.out_row = m.csr.out_row.get();
    c.long_slots = p.csr_long_slots.get();
    c.medium_slots = p.csr_medium_slots.get();
    c.short_slots = p.csr_short_slots.get();
    c.long_count = static_cast<std::int32_t>(long_slots.size());
    c.medium_count = static_cast<std::int32_t>(medium_slots.size());
    c.short_count = static_cast<std::int32_t>(short_slots.size());
    c.k = m.cols;
    c.n = n;
    report.csr_long_rows = c.long_count;
    report.csr_medium_rows = c.medium_count;
    report.csr_chunks = p.csr_shape.chunks;
    report.csr_nz_lanes = p.csr_shape.nz_lanes;
    report.csr_bytes = report.csr_nnz * 6 + std::int64_t(slots.size()) * 12;
  }
  p.needs_aligned_b = p.run_tiles || (p.run_csr && !p.csr_shape.scalar_b);
  if (options.allow_unaligned_b && p.needs_aligned_b) {
    p.staged_ld = (std::int64_t(n) + 7) / 8 * 8;
    p.staged_b = detail::DeviceBuffer<std::uint16_t>(static_cast<std::size_t>(std::int64_t(m.cols) * p.staged_ld));
  }
}

SpmmPlan::~SpmmPlan() = default;
SpmmPlan::SpmmPlan(SpmmPlan&&) noexcept = default;
SpmmPlan& SpmmPlan::operator=(SpmmPlan&&) noexcept = default;

std::int32_t SpmmPlan::n() const noexcept { return impl_->n; }
KernelKind SpmmPlan::kernel() const noexcept { return impl_->kernel; }
OutputType SpmmPlan::output() const noexcept { return impl_->options.output; }
std::int64_t SpmmPlan::workspace_bytes() const noexcept {
  const Impl& p = *impl_;
  return std::int64_t(p.staged_b.bytes() + p.tile_work.bytes() + p.split_groups.bytes() + p.split_partials.bytes() +
                      p.split_counters.bytes() + p.csr_long_slots.bytes() + p.csr_medium_slots.bytes() +
                      p.csr_short_slots.bytes());
}
const PlanReport& SpmmPlan::report() const noexcept { return impl_->report; }

void SpmmPlan::run(const fp16_t* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
                   Stream stream) const {
  const Impl& p = *impl_;
  if (c == nullptr && p.a->rows > 0) throw InvalidArgument("SpmmPlan::run: C is null");
  if (b == nullptr && p.a->cols > 0) throw InvalidArgument("SpmmPlan::run: B is null");
  if (ldb < p.n) throw InvalidArgument("SpmmPlan::run: ldb " + std::to_string(ldb) + " < n " + std::to_string(p.n));
  if (ldc < p.n) throw InvalidArgument("SpmmPlan::run: ldc " + std::to_string(ldc) + " < n " + std::to_string(p.n));
  if (p.a->rows == 0) return;

  kernels::SpmmParams k = p.params;
  const bool b_aligned = reinterpret_cast<std::uintptr_t>(b) % 16 == 0 && ldb % 8 == 0;
  auto* s = reinterpret_cast<cudaStream_t>(stream);
  if (b_aligned || p.a->cols == 0 || !p.needs_aligned_b) {
    k.b = b;
    k.ldb = ldb;
  } else {
    if (!p.options.allow_unaligned_b)
      throw InvalidArgument("SpmmPlan::run: B must be 16-byte aligned with ldb % 8 == 0 (ldb = " +
                            std::to_string(ldb) + "), or make the plan with allow_unaligned_b");
    kernels::launch_stage_b(b, ldb, p.a->cols, p.n, p.staged_b.get(), p.staged_ld, s);
    k.b = p.staged_b.get();
    k.ldb = p.staged_ld;
  }
  k.c = c;
  k.ldc = ldc;
  // Stored values are A * 2^-e: undo the scale in alpha (a power of two, so exact unless it over/underflows).
  k.alpha = std::ldexp(alpha, p.a->scale_exponent);
  k.beta = beta;
  // The two parts write disjoint rows of C (a band is on one path), so their order does not matter.
  if (p.run_tiles) {
    kernels::launch_spmm_kernel(p.tile_kernel, p.slice_width, p.options.output, p.a->b_row_index, p.split_bands, k,
                                s);
  }
  if (p.run_csr) {
    kernels::CsrSpmmParams c = p.csr_params;
    c.b = p.csr_shape.scalar_b ? b : k.b;  // a narrow B is read as it is
    c.ldb = p.csr_shape.scalar_b ? ldb : k.ldb;
    c.c = k.c;
    c.ldc = k.ldc;
    c.alpha = k.alpha;
    c.beta = k.beta;
    kernels::launch_csr_spmm(p.csr_shape, p.options.output, c, s);
  }
}

}  // namespace bcsr24
