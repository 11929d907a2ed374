// The layout of a .b24 file (docs/FORMAT.md): its sizes and limits, the header's fields in file order for every
// version, and the bytes the header's counts imply. Internal to serialize.cpp, which writes and reads it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/serialize.hpp"
#include "format/tile_codec.hpp"

namespace bcsr24::detail::b24 {

inline constexpr char kMagic[8] = {'B', 'C', 'S', 'R', '2', '4', '\0', '\0'};
/// Fixed header size of version 1 (magic .. payload_bytes), see docs/FORMAT.md.
inline constexpr std::size_t kHeaderBytesV1 = 136;
/// Version 2: the version 1 header (bytes 12-15 now hold layout, reordering and a reserved u16) followed by
/// three i64 counts: row_order entries, 2:4 b_rows entries, dense b_rows entries.
inline constexpr std::size_t kHeaderBytesV2 = 160;
/// Version 3: the version 2 header followed by the precision fields (docs/FORMAT.md): precision (u8), per-row
/// flag (u8), reserved (u16), min and max row exponent (i32 each), reserved (u32), the three error fields of the
/// census (f64 each) and the row_exponent count (i64).
inline constexpr std::size_t kHeaderBytesV3 = 208;
inline constexpr std::size_t kVersionEnd = 12;   // magic + version
inline constexpr std::size_t kTrailerBytes = 4;  // CRC-32 of every byte after the magic and before the trailer
/// Scale exponents beyond this cannot come from a finite double input.
inline constexpr std::int32_t kMaxAbsExponent = 1100;
/// Smallest number of file bytes one stored tile occupies (col_idx + values (+ metadata)), without b_rows.
inline constexpr std::int64_t kMinSparseTileBytes = 4 + kSparseTileValues * 2 + kSparseTileMetaWords * 4;
inline constexpr std::int64_t kMinDenseTileBytes = 4 + kDenseTileValues * 2;
/// More tiles than any file holds, small enough that no size computed from counts up to it overflows: 2^40 tiles
/// in each list, at most 1,220 (2:4) + 2,180 (dense) bytes each with low parts and b_rows, stay below 2^52 bytes.
inline constexpr std::int64_t kMaxTiles = std::int64_t{1} << 40;

/// Bytes of the tuned-choice section's count (version 4), before its first choice.
inline constexpr std::size_t kChoiceCountBytes = 4;
/// Bytes of one tuned choice before its device name: n (i32), six codes (u8), the name's length (u16), the
/// measured median (f64).
inline constexpr std::size_t kChoiceFixedBytes = 4 + 6 + 2 + 8;
/// Offset of the name's length within a choice.
inline constexpr std::size_t kChoiceNameLengthOffset = 4 + 6;
inline constexpr std::size_t kMaxDeviceNameBytes = 255;

/// The header fields after magic and version, in file order.
struct Header {
  std::uint32_t version = 0;
  // Version 1: one reserved u32 at byte 12. Version 2: layout (u8), reordering (u8), reserved (u16).
  std::uint32_t reserved0 = 0;  // version 1 only
  std::uint8_t layout = 0, reordering = 0;
  std::uint16_t reserved2 = 0;
  std::int32_t rows = 0, cols = 0, tile_rows = 0, tile_cols = 0;
  std::int64_t nnz = 0, sparse24_nnz = 0, dense_nnz = 0;
  std::int64_t sparse24_tiles = 0, dense_tiles = 0;
  std::int32_t exponent = 0;
  std::uint32_t reserved1 = 0;
  double max_abs = 0.0, min_abs_nonzero = 0.0;
  std::int64_t overflow_count = 0, underflow_count = 0, subnormal_count = 0, flushed_count = 0;
  std::uint64_t payload_bytes = 0;
  // Version 2 on (0 for version 1).
  std::int64_t row_order_count = 0, sparse24_b_rows_count = 0, dense_b_rows_count = 0;
  // Version 3 on (fp16, no row exponents and zero errors for older versions).
  std::uint8_t precision = 0, per_row = 0;
  std::uint16_t reserved3 = 0;
  std::int32_t min_row_exponent = 0, max_row_exponent = 0;
  std::uint32_t reserved4 = 0;
  double max_flushed_relative = 0.0, max_relative_error = 0.0, frobenius_relative_error = 0.0;
  std::int64_t row_exponent_count = 0;
};

inline bool is_split(const Header& h) { return h.precision == static_cast<std::uint8_t>(Precision::split); }

/// Bytes of the arrays for the given sizes (row_order, row_exponent, both row_ptr arrays, col_idx, values,
/// values_lo, metadata, b_rows). Callers bound every count first (tile counts by kMaxTiles, the others to 0 or a
/// multiple of them), so this cannot overflow.
inline std::uint64_t payload_bytes_for(const Header& h) {
  const std::uint64_t row_ptrs = 2 * (static_cast<std::uint64_t>(h.tile_rows) + 1) * 4;
  const std::uint64_t sparse = static_cast<std::uint64_t>(h.sparse24_tiles) * kMinSparseTileBytes;
  const std::uint64_t dense = static_cast<std::uint64_t>(h.dense_tiles) * kMinDenseTileBytes;
  const std::uint64_t indices = 4 * (static_cast<std::uint64_t>(h.row_order_count) +
                                     static_cast<std::uint64_t>(h.sparse24_b_rows_count) +
                                     static_cast<std::uint64_t>(h.dense_b_rows_count));
  const std::uint64_t row_exponents = 2 * static_cast<std::uint64_t>(h.row_exponent_count);
  const std::uint64_t low_parts =
      is_split(h) ? 2 * (static_cast<std::uint64_t>(h.sparse24_tiles) * kSparseTileValues +
                         static_cast<std::uint64_t>(h.dense_tiles) * kDenseTileValues)
                  : 0;
  return row_ptrs + sparse + dense + indices + row_exponents + low_parts;
}

/// Calls field(member) for every header field after the version, in file order, for a file of `version`: the one
/// list the writer and the reader both follow, field by field (never the struct as a whole: no padding bytes reach
/// the file). Version 4's header is version 3's.
template <class H, class F>
void for_each_header_field(H& h, std::uint32_t version, F&& field) {
  if (version == 1) {
    field(h.reserved0);
  } else {
    field(h.layout);
    field(h.reordering);
    field(h.reserved2);
  }
  field(h.rows);
  field(h.cols);
  field(h.tile_rows);
  field(h.tile_cols);
  field(h.nnz);
  field(h.sparse24_nnz);
  field(h.dense_nnz);
  field(h.sparse24_tiles);
  field(h.dense_tiles);
  field(h.exponent);
  field(h.reserved1);
  field(h.max_abs);
  field(h.min_abs_nonzero);
  field(h.overflow_count);
  field(h.underflow_count);
  field(h.subnormal_count);
  field(h.flushed_count);
  field(h.payload_bytes);
  if (version >= 2) {
    field(h.row_order_count);
    field(h.sparse24_b_rows_count);
    field(h.dense_b_rows_count);
  }
  if (version >= 3) {
    field(h.precision);
    field(h.per_row);
    field(h.reserved3);
    field(h.min_row_exponent);
    field(h.max_row_exponent);
    field(h.reserved4);
    field(h.max_flushed_relative);
    field(h.max_relative_error);
    field(h.frobenius_relative_error);
    field(h.row_exponent_count);
  }
}

/// Calls field(matrix member, header member) for the values a matrix and its header hold alike (the sizes and
/// the scaling report): saving copies each pair one way, loading the other.
template <class M, class H, class F>
void for_each_shared_field(M& a, H& h, F&& field) {
  field(a.rows, h.rows);
  field(a.cols, h.cols);
  field(a.tile_rows, h.tile_rows);
  field(a.tile_cols, h.tile_cols);
  field(a.nnz, h.nnz);
  field(a.sparse24_nnz, h.sparse24_nnz);
  field(a.dense_nnz, h.dense_nnz);
  field(a.scaling.exponent, h.exponent);
  field(a.scaling.max_abs, h.max_abs);
  field(a.scaling.min_abs_nonzero, h.min_abs_nonzero);
  field(a.scaling.overflow_count, h.overflow_count);
  field(a.scaling.underflow_count, h.underflow_count);
  field(a.scaling.subnormal_count, h.subnormal_count);
  field(a.scaling.flushed_count, h.flushed_count);
  field(a.scaling.per_row, h.per_row);  // bool in the matrix, a u8 of 0 or 1 in the file
  field(a.scaling.min_row_exponent, h.min_row_exponent);
  field(a.scaling.max_row_exponent, h.max_row_exponent);
  field(a.scaling.max_flushed_relative, h.max_flushed_relative);
  field(a.scaling.max_relative_error, h.max_relative_error);
  field(a.scaling.frobenius_relative_error, h.frobenius_relative_error);
}

}  // namespace bcsr24::detail::b24
