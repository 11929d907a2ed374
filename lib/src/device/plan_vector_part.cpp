// The narrow-vector part of a plan (SpmmPlan::Impl::build_vector_part): the windows of the bands that run as 8x1
// column vectors on tensor cores, longest first, their schedule over the warps the GPU keeps resident (with and
// without the empty windows: run() with beta == 1), the split windows' workspace, and the report's counts.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "device/spmm_plan_impl.hpp"
#include "device/vector_schedule.hpp"
#include "format/band_vectors.hpp"

namespace bcsr24 {

void SpmmPlan::Impl::build_vector_part(const DeviceMatrix::Impl& m, const std::vector<std::uint8_t>& to_vectors,
                                       const PlanKnobs& knobs) {
  if (to_vectors.empty() || std::none_of(to_vectors.begin(), to_vectors.end(), [](std::uint8_t x) { return x != 0; }))
    return;
  if (vectors == nullptr || !kernels::vectors_supported(mode))
    throw InvalidArgument(std::string("SpmmPlan: narrow vectors take fp16 or bf16 A with B of the same type (this "
                                      "plan: ") + kernels::operand_mode_name(mode) + ")");
  const DeviceBandVectors& v = *vectors;
  std::vector<detail::VectorWindowWork> windows;
  for (std::size_t b = 0; b < to_vectors.size(); ++b) {
    if (!to_vectors[b]) continue;
    const std::int32_t position = v.first_window[b];
    if (position < 0)
      throw InvalidArgument("SpmmPlan: band " + std::to_string(b) + " has no narrow-vector copy on the device");
    ++report.vector_bands;
    const std::int64_t nnz = m.band_stats[b].nnz();
    report.vector_nnz += nnz;
    if (nnz == 0) ++report.empty_bands;
    for (int h = 0; h < detail::kWindowsPerBand; ++h) {
      const std::size_t at = std::size_t(position + h);
      windows.push_back(detail::VectorWindowWork{std::int32_t(b) * detail::kWindowsPerBand + h, v.group_begin[at],
                                                 v.groups[at]});
      // A window's column indices and values, its schedule steps and its piece record (one per part if split).
      report.diagnostics.vector_bytes += std::int64_t(v.groups[at]) * (detail::kVectorGroup * (4 + 16) + 4) +
                             std::int64_t(sizeof(kernels::VectorPiece));
    }
  }
  // Longest windows first: they start first, so that the parts of split windows and the warps with few long
  // pieces run beside the many short ones instead of after them. Stable: the same plan every time.
  using Work = detail::VectorWindowWork;
  std::stable_sort(windows.begin(), windows.end(), [](const Work& x, const Work& y) { return x.groups > y.groups; });
  // As many warps per column slice as the GPU keeps resident at this width, over all slices (or the knob's).
  const std::int32_t slices = kernels::vector_slices(n);
  if (knobs.vector_warps < 0 || knobs.vector_piece_steps < 0)
    throw InvalidArgument("SpmmPlan: vector_warps and vector_piece_steps are 0 (automatic) or positive");
  std::int64_t warps = knobs.vector_warps;
  if (warps == 0) {
    const std::int64_t resident = kernels::vector_resident_warps(mode, options.output, n, m.multiprocessors);
    warps = std::max<std::int64_t>(1, (resident + slices - 1) / slices);
  }
  std::int64_t total_steps = 0;
  for (const detail::VectorWindowWork& w : windows) total_steps += w.groups;
  const std::int32_t piece_steps =
      knobs.vector_piece_steps > 0 ? knobs.vector_piece_steps : detail::vector_piece_steps(total_steps, warps);
  const detail::VectorSplit split =
      knobs.vector_piece_steps > 0 ? detail::VectorSplit::fixed : detail::VectorSplit::by_window;
  // The pieces' epilogue records name C rows and exponents: the matrix's host copies of its row map and exponents
  // (stored rows).
  const detail::VectorRowTargets targets{m.row_map_host.empty() ? nullptr : &m.row_map_host,
                                         m.stored_row_exponent_host.empty() ? nullptr : &m.stored_row_exponent_host,
                                         m.rows};
  const detail::VectorSchedule all = detail::make_vector_schedule(windows, targets, true, piece_steps, warps, split);
  run_vectors = true;
  store_vector_schedule(vector_all, all);
  vectors_have_empty = std::any_of(windows.begin(), windows.end(), [](const detail::VectorWindowWork& w) {
    return w.groups == 0;
  });
  // The same split (the same slots) without the empty windows: their parts are dealt the same way.
  if (vectors_have_empty)
    store_vector_schedule(vector_with_entries,
                          detail::make_vector_schedule(windows, targets, false, piece_steps, warps, split));
  kernels::VectorSpmmParams& p = vector_params;
  if (!all.slots.empty()) {
    storage.add(all.slots, [&p](kernels::VectorSlot* d) { p.slots = d; });
    storage.add_workspace<float>(all.slots.size() * std::size_t(slices) * kernels::kVectorSlotFloats,
                                 [&p](float* d) { p.partials = d; });
    // Zero to start; the part that finishes a window's sums resets its counter, so they stay zero between runs.
    storage.add_zeroed<unsigned>(all.slots.size() * std::size_t(slices), [&p](unsigned* d) { p.counters = d; });
  }
  p.col = v.col.get();
  p.values = v.values.get();
  p.n = n;
}

void SpmmPlan::Impl::store_vector_schedule(VectorScheduleLists& to, const detail::VectorSchedule& s) {
  storage.add(s.steps, [&to](std::int32_t* d) { to.steps = d; });
  storage.add(s.pieces, [&to](kernels::VectorPiece* d) { to.pieces = d; });
  storage.add(s.warp_steps, [&to](std::int32_t* d) { to.warp_steps = d; });
  storage.add(s.warp_pieces, [&to](std::int32_t* d) { to.warp_pieces = d; });
  to.warps = s.warps();
}

}  // namespace bcsr24
