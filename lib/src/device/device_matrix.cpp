// Uploads a host BCSR-2:4 matrix once into RAII-owned device memory.
#include <algorithm>
#include <utility>

#include <cuda_runtime_api.h>

#include "format/convert.hpp"
#include "bcsr24/device.hpp"
#include "device/plan_access.hpp"
#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"
#include "device/cost_model.hpp"
#include "device/device_matrix_impl.hpp"
#include "format/band_csr.hpp"
#include "format/band_vectors.hpp"
#include "format/layout_check.hpp"

namespace bcsr24 {

namespace {

DeviceTileList upload(const TileList& list, std::int32_t tile_rows, BRowIndex index) {
  if (static_cast<std::int64_t>(list.row_ptr.size()) != std::int64_t(tile_rows) + 1)
    throw InvalidArgument("tile list has " + std::to_string(list.row_ptr.size()) + " row pointers, expected " +
                          std::to_string(std::int64_t(tile_rows) + 1));
  DeviceTileList d;
  d.row_ptr = detail::DeviceBuffer<std::int32_t>(list.row_ptr);
  d.col_idx = detail::DeviceBuffer<std::int32_t>(list.col_idx);
  d.values = detail::DeviceBuffer<std::uint16_t>(list.values);
  d.values_lo = detail::DeviceBuffer<std::uint16_t>(list.values_lo);
  d.metadata = detail::DeviceBuffer<std::uint32_t>(list.metadata);
  if (index == BRowIndex::full) d.b_rows = detail::DeviceBuffer<std::int32_t>(list.b_rows);

  d.tiles = list.tiles();
  return d;
}

/// One work descriptor per tile row, ordered by decreasing work (a 2:4 tile moves ~9/16 of a dense tile's
/// bytes), ties by index. The merged list has, per tile row, the tiles of both lists.
/// The per-row exponents by stored row (tile_rows * 16 entries, 0 on padding rows); empty without per-row scaling.
std::vector<std::int16_t> stored_row_exponents(const Bcsr24Matrix& host) {
  std::vector<std::int16_t> stored;
  if (host.row_exponent.empty()) return stored;
  stored.assign(std::size_t(host.tile_rows) * kTileRows, 0);
  for (std::size_t i = 0; i < stored.size(); ++i) {
    const std::int32_t row = host.original_row(std::int64_t(i));
    if (row >= 0) stored[i] = host.row_exponent[std::size_t(row)];
  }
  return stored;
}

std::vector<kernels::TileRowWork> longest_rows_first(const Bcsr24Matrix& host) {
  std::vector<kernels::TileRowWork> rows(static_cast<std::size_t>(host.tile_rows));
  std::int32_t merged = 0;
  for (std::int32_t r = 0; r < host.tile_rows; ++r) {
    kernels::TileRowWork& w = rows[r];
    w.tile_row = r;
    w.sparse24_begin = host.sparse24.row_ptr[r];
    w.sparse24_end = host.sparse24.row_ptr[r + 1];
    w.dense_begin = host.dense.row_ptr[r];
    w.dense_end = host.dense.row_ptr[r + 1];
    w.merged_begin = merged;
    merged += (w.sparse24_end - w.sparse24_begin) + (w.dense_end - w.dense_begin);
    w.merged_end = merged;
    w.split = kernels::kUnsplit;
  }
  auto work = [](const kernels::TileRowWork& w) {
    return 9 * std::int64_t(w.sparse24_end - w.sparse24_begin) + 16 * std::int64_t(w.dense_end - w.dense_begin);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) { return work(a) > work(b); });
  return rows;
}

/// Bands to keep as CSR rows under `copy`.
std::vector<std::int32_t> csr_bands_to_copy(CsrCopy copy, const std::vector<detail::BandStats>& stats, bool gathered,
                                            std::int32_t b_rows, std::int64_t l2_bytes) {
  std::vector<std::int32_t> bands;
  if (copy == CsrCopy::none) return bands;
  const std::vector<std::uint8_t> candidate =
      copy == CsrCopy::all ? std::vector<std::uint8_t>(stats.size(), 1)
                           : detail::csr_candidate_bands(stats, gathered, b_rows, l2_bytes);
  for (std::size_t b = 0; b < stats.size(); ++b)
    if (candidate[b]) bands.push_back(static_cast<std::int32_t>(b));
  return bands;
}

DeviceBandCsr upload_csr(const detail::BandCsr& csr, const std::vector<std::int16_t>& row_exponent,
                         std::int32_t tile_rows) {
  DeviceBandCsr d;
  d.row_ptr = detail::DeviceBuffer<std::int32_t>(csr.row_ptr);
  // The entry arrays padded to whole quads of entries: the one-column kernel loads 4 entries at a time from
  // aligned quads (csr_kernel.cuh, accumulate_quads).
  const auto quads = [](std::size_t entries) { return (entries + 3) / 4 * 4; };
  d.b_row = detail::DeviceBuffer<std::int32_t>(csr.b_row, quads(csr.b_row.size()));
  d.values = detail::DeviceBuffer<std::uint16_t>(csr.values, quads(csr.values.size()));
  d.values_lo = detail::DeviceBuffer<std::uint16_t>(csr.values_lo, quads(csr.values_lo.size()));
  d.out_row = detail::DeviceBuffer<std::int32_t>(csr.out_row);
  d.out_row_host = csr.out_row;
  if (!row_exponent.empty()) {
    std::vector<std::int16_t> slot_exponent(csr.out_row.size(), 0);  // padding slots: 0, never used
    for (std::size_t s = 0; s < csr.out_row.size(); ++s)
      if (csr.out_row[s] >= 0) slot_exponent[s] = row_exponent[static_cast<std::size_t>(csr.out_row[s])];
    d.slot_exponent = detail::DeviceBuffer<std::int16_t>(slot_exponent);
    d.slot_exponent_host = std::move(slot_exponent);
  }
  d.first_slot.assign(static_cast<std::size_t>(tile_rows), -1);
  for (std::size_t i = 0; i < csr.bands.size(); ++i)
    d.first_slot[static_cast<std::size_t>(csr.bands[i])] = static_cast<std::int32_t>(i * kTileRows);
  d.row_nnz.resize(static_cast<std::size_t>(csr.slots()));
  for (std::int64_t s = 0; s < csr.slots(); ++s)
    d.row_nnz[std::size_t(s)] = csr.row_ptr[std::size_t(s) + 1] - csr.row_ptr[std::size_t(s)];
  d.entry_pairs.assign(csr.bands.size(), 0);
  d.scattered_pairs.assign(csr.bands.size(), 0);
  for (std::int64_t s = 0; s < csr.slots(); ++s) {
    const std::size_t band = std::size_t(s / kTileRows);
    for (std::int32_t e = csr.row_ptr[std::size_t(s)] + 1; e < csr.row_ptr[std::size_t(s) + 1]; ++e) {
      ++d.entry_pairs[band];
      d.scattered_pairs[band] += csr.b_row[std::size_t(e)] / 32 != csr.b_row[std::size_t(e) - 1] / 32;
    }
  }
  d.bands = static_cast<std::int32_t>(csr.bands.size());
  return d;
}

/// Bands to keep as narrow vectors under `copy` (none for a split matrix).
std::vector<std::int32_t> vector_bands_to_copy(VectorCopy copy, const Bcsr24Matrix& host,
                                               const std::vector<detail::BandStats>& stats,
                                               const std::vector<detail::BandVectorCounts>& counts, bool gathered,
                                               std::int64_t l2_bytes) {
  std::vector<std::int32_t> bands;
  if (copy == VectorCopy::none || host.precision == Precision::split) return bands;
  const std::vector<std::uint8_t> candidate =
      copy == VectorCopy::all ? std::vector<std::uint8_t>(stats.size(), 1)
                              : detail::vector_candidate_bands(stats, counts, gathered, host.cols, l2_bytes);
  for (std::size_t b = 0; b < stats.size(); ++b)
    if (candidate[b]) bands.push_back(static_cast<std::int32_t>(b));
  return bands;
}

DeviceBandVectors upload_vectors(const detail::BandVectors& v, std::int32_t tile_rows) {
  DeviceBandVectors d;
  d.col = detail::DeviceBuffer<std::int32_t>(v.col);
  d.values = detail::DeviceBuffer<std::uint16_t>(v.values);
  d.first_window.assign(static_cast<std::size_t>(tile_rows), -1);
  for (std::size_t i = 0; i < v.bands.size(); ++i)
    d.first_window[static_cast<std::size_t>(v.bands[i])] = static_cast<std::int32_t>(i * detail::kWindowsPerBand);
  d.groups.resize(v.window.size());
  for (std::size_t w = 0; w < v.window.size(); ++w) d.groups[w] = v.group_ptr[w + 1] - v.group_ptr[w];
  if (!v.group_ptr.empty()) d.group_begin.assign(v.group_ptr.begin(), v.group_ptr.end() - 1);
  d.bands = static_cast<std::int32_t>(v.bands.size());
  return d;
}

/// 0 .. tile_rows - 1: every band of `host`.
std::vector<std::int32_t> every_band(const Bcsr24Matrix& host) {
  std::vector<std::int32_t> bands(static_cast<std::size_t>(host.tile_rows));
  for (std::int32_t b = 0; b < host.tile_rows; ++b) bands[static_cast<std::size_t>(b)] = b;
  return bands;
}

/// `upload(part)` once the device has room for it: `what` (and `purpose`, what needs it) name the part in the
/// memory check's refusal and, with its size, in an OutOfMemory from the upload itself.
template <class Part, class Upload>
auto upload_whole(const Part& part, const std::string& what, const char* purpose, const Upload& upload) {
  detail::check_device_memory(part.bytes(), what + " (" + purpose + ")");
  try {
    return upload(part);
  } catch (const OutOfMemory& e) {
    throw OutOfMemory("uploading " + what + " (" + detail::byte_size_text(part.bytes()) + "): " + e.what());
  }
}

}  // namespace

DeviceMatrix::DeviceMatrix(const Bcsr24Matrix& host, const UploadOptions& options) : impl_(std::make_unique<Impl>()) {
  const DeviceInfo info = query_device();
  if (!info.available) throw NotSupported("cannot upload the matrix: " + info.reason);
  if (host.sparse24.values.size() != std::size_t(host.sparse24.tiles()) * kSparseTileValues ||
      host.sparse24.metadata.size() != std::size_t(host.sparse24.tiles()) * kSparseTileMetaWords ||
      host.dense.values.size() != std::size_t(host.dense.tiles()) * kDenseTileValues)
    throw InvalidArgument("host matrix tile lists are inconsistent (values or metadata size)");
  const bool split = host.precision == Precision::split;
  for (const TileList* list : {&host.sparse24, &host.dense})
    if (list->values_lo.size() != (split ? list->values.size() : 0))
      throw InvalidArgument(std::string("host matrix: ") + precision_name(host.precision) + " tiles with " +
                            std::to_string(list->values_lo.size()) + " low parts for " +
                            std::to_string(list->values.size()) + " values");
  if (!host.row_exponent.empty() && host.row_exponent.size() != std::size_t(host.rows))
    throw InvalidArgument("host matrix: " + std::to_string(host.row_exponent.size()) + " row exponents for " +
                          std::to_string(host.rows) + " rows");
  if (const std::string problem = detail::layout_problem(host); !problem.empty())
    throw InvalidArgument("DeviceMatrix: " + problem);
  const BRowIndex index = host.b_row_index();
  Impl& d = *impl_;
  BCSR24_CUDA_CHECK(cudaGetDevice(&d.device));
  // The CSR rows are extracted from the tiles on the host first: their size is then known exactly. A matrix that
  // cannot fit is refused before any of it is allocated.
  std::vector<detail::BandStats> stats = detail::band_stats(host);
  const detail::BandCsr csr =
      detail::extract_band_csr(host, csr_bands_to_copy(options.csr, stats, index == BRowIndex::full, host.cols, info.l2_bytes));
  std::vector<detail::BandVectorCounts> vector_counts;
  if (host.precision != Precision::split) vector_counts = detail::band_vector_counts(host);
  const std::vector<std::int32_t> vector_bands =
      vector_bands_to_copy(options.vectors, host, stats, vector_counts, index == BRowIndex::full, info.l2_bytes);
  // A split matrix copies no band (and has no vector form to extract). Where the CSR copy holds every vector band,
  // the vectors are regrouped from it rather than decoded from the tiles again.
  const bool from_csr = std::includes(csr.bands.begin(), csr.bands.end(), vector_bands.begin(), vector_bands.end());
  const detail::BandVectors vectors = vector_bands.empty() ? detail::BandVectors{}
                                      : from_csr           ? detail::band_vectors_from_csr(csr, vector_bands)
                                                           : detail::extract_band_vectors(host, vector_bands);
  const std::int64_t needed =
      host.census().total_bytes() + csr.bytes() + vectors.bytes() +
      (host.row_exponent.empty() ? 0 : std::int64_t(host.row_exponent.size()) * 2 + std::int64_t(host.tile_rows) * kTileRows * 2);
  detail::check_device_memory(needed, "the tile lists and CSR rows of the matrix");
  d.rows = host.rows;
  d.cols = host.cols;
  d.tile_rows = host.tile_rows;
  d.tile_cols = host.tile_cols;
  d.scale_exponent = host.scaling.exponent;
  d.precision = host.precision;
  d.row_exponent = detail::DeviceBuffer<std::int16_t>(host.row_exponent);
  d.stored_row_exponent_host = stored_row_exponents(host);
  d.stored_row_exponent = detail::DeviceBuffer<std::int16_t>(d.stored_row_exponent_host);
  d.b_row_index = index;
  d.row_map_host = host.row_order;
  d.row_map = detail::DeviceBuffer<std::int32_t>(d.row_map_host);
  d.sparse24 = upload(host.sparse24, host.tile_rows, index);
  d.dense = upload(host.dense, host.tile_rows, index);
  d.csr = upload_csr(csr, host.row_exponent, host.tile_rows);
  d.vectors = upload_vectors(vectors, host.tile_rows);
  d.vector_counts = std::move(vector_counts);
  d.l2_bytes = info.l2_bytes;
  d.multiprocessors = info.multiprocessors;
  d.sm = kernels::device_sm_limits(d.device);
  d.device_name = info.name;
  d.band_stats = std::move(stats);
  std::vector<kernels::TileRowWork> work = longest_rows_first(host);
  d.row_work = detail::DeviceBuffer<kernels::TileRowWork>(work);
  d.row_work_host = std::move(work);
}

void DeviceMatrix::add_csr_of_every_band(const Bcsr24Matrix& host) {
  Impl& d = *impl_;
  if (d.csr_of_every_band() != nullptr) return;
  const std::string what = "the CSR rows of every band";
  require_current_device("SparseOperator::make_plan (" + what + ")");
  d.csr_every_band = upload_whole(detail::extract_band_csr(host, every_band(host)), what, "csr_cuda_cores",
                                  [&](const detail::BandCsr& csr) {
                                    return upload_csr(csr, host.row_exponent, host.tile_rows);
                                  });
}

void DeviceMatrix::add_vectors_of_every_band(const Bcsr24Matrix& host) {
  Impl& d = *impl_;
  if (d.vectors_of_every_band() != nullptr) return;
  const std::string what = "the narrow vectors of every band";
  require_current_device("SparseOperator::make_plan (" + what + ")");
  d.vectors_every_band = upload_whole(detail::extract_band_vectors(host, every_band(host)),  // refuses split precision
                                      what, "paths = vectors",
                                      [&](const detail::BandVectors& v) { return upload_vectors(v, host.tile_rows); });
}

int DeviceMatrix::device() const noexcept { return impl_->device; }

void DeviceMatrix::require_current_device(const std::string& who) const {
  int current = -1;
  BCSR24_CUDA_CHECK(cudaGetDevice(&current));
  if (current != impl_->device)
    throw InvalidArgument(who + ": the matrix lives on CUDA device " + std::to_string(impl_->device) + ", device " +
                          std::to_string(current) + " is current; call cudaSetDevice(" +
                          std::to_string(impl_->device) + ") first");
}

DeviceMatrix::~DeviceMatrix() = default;
DeviceMatrix::DeviceMatrix(DeviceMatrix&&) noexcept = default;
DeviceMatrix& DeviceMatrix::operator=(DeviceMatrix&&) noexcept = default;

std::int32_t DeviceMatrix::rows() const noexcept { return impl_->rows; }
std::int32_t DeviceMatrix::cols() const noexcept { return impl_->cols; }
Precision DeviceMatrix::precision() const noexcept { return impl_->precision; }
std::int32_t DeviceMatrix::csr_bands() const noexcept { return impl_->csr.bands; }
std::int64_t DeviceMatrix::device_bytes() const noexcept {
  return impl_->sparse24.bytes() + impl_->dense.bytes() + impl_->csr.bytes() +
         impl_->csr_every_band.bytes() + impl_->vectors.bytes() + impl_->vectors_every_band.bytes() +
         std::int64_t(impl_->row_work.bytes()) + std::int64_t(impl_->row_map.bytes()) +
         std::int64_t(impl_->row_exponent.bytes()) + std::int64_t(impl_->stored_row_exponent.bytes());
}

}  // namespace bcsr24
