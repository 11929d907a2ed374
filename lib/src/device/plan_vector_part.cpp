// The narrow-vector part of a plan (SpmmPlan::Impl::build_vector_part): the windows of the bands that run as 8x1
// column vectors on tensor cores, longest first, the list without the empty ones (run() with beta == 1), and the
// report's counts.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "device/spmm_plan_impl.hpp"
#include "format/band_vectors.hpp"

namespace bcsr24 {

void SpmmPlan::Impl::build_vector_part(const DeviceMatrix::Impl& m, const std::vector<std::uint8_t>& to_vectors) {
  if (to_vectors.empty() || std::none_of(to_vectors.begin(), to_vectors.end(), [](std::uint8_t x) { return x != 0; }))
    return;
  if (vectors == nullptr || !kernels::vectors_supported(mode))
    throw InvalidArgument(std::string("SpmmPlan: narrow vectors take fp16 or bf16 A with B of the same type (this "
                                      "plan: ") + kernels::operand_mode_name(mode) + ")");
  const DeviceBandVectors& v = *vectors;
  std::vector<std::int32_t> items;
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
      items.push_back(position + h);
      // A window's column indices and values, and its index and group pointer.
      report.vector_bytes += std::int64_t(v.groups[std::size_t(position + h)]) * detail::kVectorGroup * (4 + 16) + 8;
    }
  }
  // Longest windows first: they are the launch's tail otherwise. Stable: the same plan every time.
  std::stable_sort(items.begin(), items.end(), [&](std::int32_t x, std::int32_t y) {
    return v.groups[std::size_t(x)] > v.groups[std::size_t(y)];
  });
  std::vector<std::int32_t> with_entries;
  for (const std::int32_t item : items)
    if (v.groups[std::size_t(item)] > 0) with_entries.push_back(item);
  run_vectors = true;
  vectors_have_empty = with_entries.size() < items.size();
  if (vectors_have_empty) {
    vector_items_with_entries_count = static_cast<std::int32_t>(with_entries.size());
    if (!with_entries.empty()) vector_items_with_entries = detail::DeviceBuffer<std::int32_t>(with_entries);
  }
  kernels::VectorSpmmParams& p = vector_params;
  p.items = detail::upload_to(vector_items, items);
  p.item_count = static_cast<std::int32_t>(items.size());
  p.window = v.window.get();
  p.group_ptr = v.group_ptr.get();
  p.col = v.col.get();
  p.values = v.values.get();
  p.row_map = m.row_map.get();
  p.stored_row_exponent = m.stored_row_exponent.get();
  p.rows = m.rows;
  p.n = n;
}

}  // namespace bcsr24
