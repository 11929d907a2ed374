// What a DeviceMatrix holds on the GPU (private: used by the upload and by plans).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device/device_matrix.hpp"
#include "device/device_buffer.hpp"
#include "format/band_csr.hpp"
#include "format/band_vectors.hpp"
#include "kernels/sm_limits.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24 {

struct DeviceTileList {
  detail::DeviceBuffer<std::int32_t> row_ptr;
  detail::DeviceBuffer<std::int32_t> col_idx;
  detail::DeviceBuffer<std::uint16_t> values;
  detail::DeviceBuffer<std::uint16_t> values_lo;  // split precision: the low parts
  detail::DeviceBuffer<std::uint32_t> metadata;
  detail::DeviceBuffer<std::int32_t> b_rows;  // gathered layouts: 32 B rows per tile
  std::int64_t tiles = 0;

  kernels::TileListView view() const {
    return {row_ptr.get(), col_idx.get(), values.get(), values_lo.get(), metadata.get(), b_rows.get()};
  }
  std::int64_t bytes() const {
    return std::int64_t(row_ptr.bytes() + col_idx.bytes() + values.bytes() + values_lo.bytes() + metadata.bytes() +
                        b_rows.bytes());
  }
};

/// CSR rows of some bands on the device (format/band_csr.hpp), with the host-side facts plans need.
struct DeviceBandCsr {
  detail::DeviceBuffer<std::int32_t> row_ptr;  // per slot, + 1
  detail::DeviceBuffer<std::int32_t> b_row;
  detail::DeviceBuffer<std::uint16_t> values;
  detail::DeviceBuffer<std::uint16_t> values_lo;  // split precision
  detail::DeviceBuffer<std::int32_t> out_row;  // per slot
  // Per slot, its C row's exponent (per-row scaling; empty otherwise): indexed like out_row, so the CSR kernel
  // loads both at once instead of the exponent after the row.
  detail::DeviceBuffer<std::int16_t> slot_exponent;
  std::vector<std::int32_t> first_slot;        // per band: its first slot, -1 without a copy
  std::vector<std::int32_t> row_nnz;           // per slot
  std::vector<std::int32_t> out_row_host;      // per slot (-1 = padding row: nothing to write)
  std::vector<std::int16_t> slot_exponent_host;  // per slot, as slot_exponent (empty without per-row scaling)
  // Per copy band (first_slot / 16): pairs of consecutive entries of a row, and those whose B rows lie in
  // different 32-row blocks. Their ratio says whether a row's B reads scatter (each its own sector) or cluster; at
  // n = 1 it chooses the short rows' tiles (plan_csr_part.cpp).
  std::vector<std::int32_t> entry_pairs, scattered_pairs;

  /// scattered_pairs / entry_pairs over the bands b with select[b] != 0 that have a copy; `if_none` without pairs.
  double scattered_share(const std::vector<std::uint8_t>& select, double if_none) const {
    std::int64_t pairs = 0, scattered = 0;
    for (std::size_t b = 0; b < select.size() && b < first_slot.size(); ++b) {
      if (!select[b] || first_slot[b] < 0) continue;
      const std::size_t position = std::size_t(first_slot[b] / kTileRows);
      pairs += entry_pairs[position];
      scattered += scattered_pairs[position];
    }
    return pairs > 0 ? double(scattered) / double(pairs) : if_none;
  }
  std::int32_t bands = 0;

  std::int64_t bytes() const {
    return std::int64_t(row_ptr.bytes() + b_row.bytes() + values.bytes() + values_lo.bytes() + out_row.bytes() +
                        slot_exponent.bytes());
  }
};

/// Narrow vectors of some bands on the device (format/band_vectors.hpp), with the host-side facts plans need.
struct DeviceBandVectors {
  detail::DeviceBuffer<std::int32_t> col;        // per vector
  detail::DeviceBuffer<std::uint16_t> values;    // 128 per group
  std::vector<std::int32_t> first_window;        // per band: position of its first window, -1 without a copy
  std::vector<std::int32_t> groups;              // per position: groups of 16 vectors
  std::vector<std::int32_t> group_begin;         // per position: its first group (the plan's schedule names groups)
  std::int32_t bands = 0;

  std::int64_t bytes() const {
    return std::int64_t(col.bytes() + values.bytes());
  }
};

struct DeviceMatrix::Impl {
  std::int32_t rows = 0, cols = 0, tile_rows = 0, tile_cols = 0;
  std::int32_t scale_exponent = 0;
  Precision precision = Precision::fp16;
  detail::DeviceBuffer<std::int16_t> row_exponent;  // per row of A and C (per-row scaling); empty = none
  // The same exponents per stored row (tile_rows * 16, padding rows 0): the tile epilogue reads a row's exponent
  // with the same index as its row-map entry, so the two loads are independent instead of one after the other.
  detail::DeviceBuffer<std::int16_t> stored_row_exponent;
  DeviceTileList sparse24;
  DeviceTileList dense;
  BRowIndex b_row_index = BRowIndex::implicit;    // how the tiles name their B rows
  detail::DeviceBuffer<std::int32_t> row_map;     // reordered layouts: C row of each stored row; empty = identity
  // The row map and stored-row exponents on the host too: the narrow-vector schedule's records name C rows and
  // exponents, built per plan (device/plan_vector_part.cpp) without reading the device copies back.
  std::vector<std::int32_t> row_map_host;
  std::vector<std::int16_t> stored_row_exponent_host;
  detail::DeviceBuffer<kernels::TileRowWork> row_work;  // tile rows, most work first
  std::vector<kernels::TileRowWork> row_work_host;      // the same on the host (plans take subsets)
  std::vector<detail::BandStats> band_stats;            // per band, for the cost model
  DeviceBandCsr csr;            // the bands automatic plans may put on CSR (UploadOptions::csr)
  // Every band's CSR rows, for csr_cuda_cores plans, made on first use when `csr` does not already hold every
  // band (bands == 0 until then). Kept apart so that plans made on `csr` stay valid.
  DeviceBandCsr csr_every_band;
  /// The CSR copy that holds every band, or null when none does yet.
  const DeviceBandCsr* csr_of_every_band() const {
    if (csr.bands == tile_rows) return &csr;
    return csr_every_band.bands == tile_rows ? &csr_every_band : nullptr;
  }
  // The bands plans may run as narrow vectors (UploadOptions::vectors; none for split precision), and every band's
  // vectors, made on first use by a plan that forces every band on vectors (kept apart like csr_every_band).
  DeviceBandVectors vectors;
  DeviceBandVectors vectors_every_band;
  /// The vector copy that holds every band, or null when none does yet.
  const DeviceBandVectors* vectors_of_every_band() const {
    if (vectors.bands == tile_rows) return &vectors;
    return vectors_every_band.bands == tile_rows ? &vectors_every_band : nullptr;
  }
  std::vector<detail::BandVectorCounts> vector_counts;  // per band, for the cost model
  std::int64_t l2_bytes = 0;                            // of the device it lives on (cost model)
  int multiprocessors = 0;                              // of that device (tile schedule)
  kernels::SmLimits sm{};                               // of that device (tile-kernel blocks per SM)
  std::string device_name;                              // of that device (what tuned choices are stored for)
  int device = 0;
};

}  // namespace bcsr24
