// Pieces shared by the builders of the tile layouts (convert.cpp: aligned tiles in file order; condense.cpp:
// reordered and/or condensed bands): per-thread partial lists, the fp16 store, the thread fan-out.
#pragma once

#include <cmath>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

#include "bcsr24/bcsr24_matrix.hpp"
#include "format/fp16_rounding.hpp"
#include "format/tile_codec.hpp"

namespace bcsr24::detail {

/// One list's share of a chunk of tile rows; concatenated in chunk order afterwards.
struct ListPart {
  std::vector<std::int32_t> tiles_per_row;
  std::vector<std::int32_t> col_idx;
  std::vector<fp16_t> values;
  std::vector<std::uint32_t> metadata;
  std::vector<std::int32_t> b_rows;  ///< gathered layouts only: 32 per tile
  std::int64_t nnz = 0;
};

struct ChunkPart {
  ListPart sparse24, dense;
  std::int64_t subnormal = 0, flushed = 0;
};

/// a * 2^-exponent, exactly (barring results far below the fp16 range), then rounded once to fp16.
struct Fp16Store {
  std::int32_t exponent = 0;
  double factor = 1.0;
  bool factor_exact = true;  // 2^-exponent is a normal double, so one multiplication is an exact scaling

  explicit Fp16Store(std::int32_t e) : exponent(e), factor(std::ldexp(1.0, -e)), factor_exact(e >= -1000 && e <= 1000) {}
  fp16_t operator()(double v) const {
    return round_double_to_fp16(factor_exact ? v * factor : std::ldexp(v, -exponent));
  }
};

/// Classifies a filled tile by its occupancy and appends it to the 2:4 or the dense part.
/// Returns true when it went to the 2:4 list.
inline bool append_tile(const TileElements& tile, const TileOccupancy& occupancy, int nrows, int tile_nnz,
                        std::int32_t col, bool force_dense, ChunkPart& out, std::size_t band_in_chunk,
                        const std::int32_t* b_rows32) {
  bool dense = force_dense;
  for (int i = 0; i < nrows && !dense; ++i) dense = row_violates_24(occupancy[static_cast<std::size_t>(i)]);
  ListPart& list = dense ? out.dense : out.sparse24;
  list.tiles_per_row[band_in_chunk] += 1;
  list.col_idx.push_back(col);
  list.nnz += tile_nnz;
  if (b_rows32) list.b_rows.insert(list.b_rows.end(), b_rows32, b_rows32 + kTileCols);
  const std::size_t value_offset = list.values.size();
  if (dense) {
    list.values.resize(value_offset + kDenseTileValues);
    pack_dense_tile(tile, list.values.data() + value_offset);
  } else {
    const std::size_t meta_offset = list.metadata.size();
    list.values.resize(value_offset + kSparseTileValues);
    list.metadata.resize(meta_offset + kSparseTileMetaWords);
    pack_sparse24_tile(tile, occupancy, list.values.data() + value_offset, list.metadata.data() + meta_offset);
  }
  return !dense;
}

/// Runs fn(0..chunks-1), chunk 0 on the calling thread, and rethrows the first chunk's exception.
template <class Fn>
void run_chunks(int chunks, const Fn& fn) {
  if (chunks <= 1) {
    fn(0);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(chunks));
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(chunks - 1));
  for (int c = 1; c < chunks; ++c)
    workers.emplace_back([&, c] {
      try {
        fn(c);
      } catch (...) {
        errors[static_cast<std::size_t>(c)] = std::current_exception();
      }
    });
  try {
    fn(0);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& w : workers) w.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// Concatenates the chunks' parts of one list into a TileList with a global row_ptr (releases the parts).
TileList assemble_list(std::vector<ChunkPart>& parts, ListPart ChunkPart::*which, std::int32_t tile_rows,
                       bool with_metadata);
/// Both lists of `out` (tile_rows set) from the parts, plus the nonzero counts and the fp16 rounding counts.
void assemble_lists(std::vector<ChunkPart>& parts, Bcsr24Matrix& out);

}  // namespace bcsr24::detail
