// Band-by-band tile builder for reordered and condensed layouts (condense.hpp).
//
// A band is 16 consecutive rows of the reordered matrix. Its entries are gathered once, its distinct columns
// numbered locally (a per-thread column marker, reset after each band), and the columns assigned to tile slots:
// condensed bands by the 2:4-aware packer (pack24.hpp), aligned bands by (permuted) column / 32. Each tile
// then records, per slot, the row of B it multiplies, so the kernels gather B in the caller's order and write
// C rows through row_order: neither B nor C is ever permuted.
#include "format/condense.hpp"

#include <algorithm>
#include <limits>
#include <new>
#include <string>

#include "bcsr24/error.hpp"
#include "format/reorder.hpp"
#include "format/pack24.hpp"

namespace bcsr24::detail {

namespace {

std::int32_t ceil_div(std::int64_t n, std::int64_t d) { return static_cast<std::int32_t>((n + d - 1) / d); }

/// Original row at stored position i (or -1 past the last row).
struct RowMap {
  const std::vector<std::int32_t>* order;
  std::int32_t rows;
  std::int32_t operator()(std::int64_t i) const {
    if (i >= rows) return -1;
    return order && !order->empty() ? (*order)[static_cast<std::size_t>(i)] : static_cast<std::int32_t>(i);
  }
};

/// One nonzero of a band, by local column.
struct BandEntry {
  std::int32_t local;
  std::uint8_t row;
  StoredValue value;
};

/// Per-thread scratch, sized once.
struct BandScratch {
  std::vector<std::int32_t> local_of_column;  // cols entries, -1 outside the current band
  std::vector<std::int32_t> column_of_local;  // original column (condensed) or key (aligned)
  std::vector<std::uint16_t> masks;
  std::vector<BandEntry> entries;
  std::vector<std::int32_t> slots, slot_of_local, tile_start, by_tile, tile_keys, natural;
  BandPacker packer;

  explicit BandScratch(std::int32_t cols) : local_of_column(static_cast<std::size_t>(cols), -1) {}

  void reset_columns() {
    for (const std::int32_t c : column_of_local) local_of_column[static_cast<std::size_t>(c)] = -1;
    column_of_local.clear();
    masks.clear();
  }
};

/// Local-column key: the column itself, or its permuted position for a symmetric reordering.
struct ColumnKey {
  const std::vector<std::int32_t>* inverse;  // old-to-new, or null
  std::int32_t operator()(std::int32_t c) const {
    return inverse ? (*inverse)[static_cast<std::size_t>(c)] : c;
  }
};

/// Gathers band `band`'s distinct column keys (and, with store, its entries, stored and tallied). Returns the
/// band's rows.
template <bool kWithEntries>
int gather_band(const CsrMatrix& a, const RowMap& row_of, std::int32_t band, const ColumnKey& key,
                const ValueStore* store, BandScratch& s, StoreTally* tally) {
  s.reset_columns();
  if constexpr (kWithEntries) s.entries.clear();
  int nrows = 0;
  for (int i = 0; i < kTileRows; ++i) {
    const std::int32_t r = row_of(std::int64_t{band} * kTileRows + i);
    if (r < 0) break;
    nrows = i + 1;
    // Scales by the original row r: row_exponent and the census follow A's rows, not the stored order.
    RowScale scale;
    RowSums sums;
    if constexpr (kWithEntries) scale = store->row(r);
    for (std::int32_t p = a.row_ptr[static_cast<std::size_t>(r)]; p < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++p) {
      const double v = a.values[static_cast<std::size_t>(p)];
      if (v == 0.0) continue;  // explicit zeros are not nonzeros
      const std::int32_t k = key(a.col_idx[static_cast<std::size_t>(p)]);
      std::int32_t& local = s.local_of_column[static_cast<std::size_t>(k)];
      if (local < 0) {
        local = static_cast<std::int32_t>(s.column_of_local.size());
        s.column_of_local.push_back(k);
        s.masks.push_back(0);
      }
      s.masks[static_cast<std::size_t>(local)] = static_cast<std::uint16_t>(s.masks[static_cast<std::size_t>(local)] | (1u << i));
      if constexpr (kWithEntries) s.entries.push_back({local, static_cast<std::uint8_t>(i), store->store(v, scale, sums, *tally)});
    }
    if constexpr (kWithEntries) store->finish_row(r, sums);
  }
  return nrows;
}

/// Slots of a band: slots[t * 32 + j] = local column in slot j of tile t, or -1; tile_keys[t] = col_idx of tile t.
/// Aligned: only the tile columns that hold a nonzero, ascending.
void assign_slots(TileLayout layout, std::uint16_t rows_mask, BandScratch& s) {
  const std::int32_t columns = static_cast<std::int32_t>(s.column_of_local.size());
  if (layout == TileLayout::condensed) {
    // The band's columns in the matrix's order: the packer keeps that arrangement where it is already better.
    s.natural.resize(static_cast<std::size_t>(columns));
    for (std::int32_t local = 0; local < columns; ++local) s.natural[static_cast<std::size_t>(local)] = local;
    std::sort(s.natural.begin(), s.natural.end(), [&](std::int32_t x, std::int32_t y) {
      return s.column_of_local[static_cast<std::size_t>(x)] < s.column_of_local[static_cast<std::size_t>(y)];
    });
    s.packer.pack(s.masks.data(), columns, rows_mask, s.slots, s.natural.data());
    const std::int32_t tiles = static_cast<std::int32_t>(s.slots.size() / kTileCols);
    s.tile_keys.resize(static_cast<std::size_t>(tiles));
    for (std::int32_t t = 0; t < tiles; ++t) s.tile_keys[static_cast<std::size_t>(t)] = t;
    return;
  }
  s.tile_keys.clear();
  for (const std::int32_t k : s.column_of_local) s.tile_keys.push_back(k / kTileCols);
  std::sort(s.tile_keys.begin(), s.tile_keys.end());
  s.tile_keys.erase(std::unique(s.tile_keys.begin(), s.tile_keys.end()), s.tile_keys.end());
  s.slots.assign(s.tile_keys.size() * kTileCols, -1);
  for (std::int32_t local = 0; local < columns; ++local) {
    const std::int32_t k = s.column_of_local[static_cast<std::size_t>(local)];
    const auto t = std::lower_bound(s.tile_keys.begin(), s.tile_keys.end(), k / kTileCols) - s.tile_keys.begin();
    s.slots[static_cast<std::size_t>(t) * kTileCols + static_cast<std::size_t>(k % kTileCols)] = local;
  }
}

struct BuildContext {
  const CsrMatrix& a;
  const BandLayoutRequest& request;
  RowMap row_of;
  ColumnKey key;
  const ValueStore& store;
  bool gathered;  // tiles carry b_rows
};

void build_bands(const BuildContext& ctx, std::int32_t band_begin, std::int32_t band_end, ChunkPart& out) {
  out.sparse24.tiles_per_row.assign(static_cast<std::size_t>(band_end - band_begin), 0);
  out.dense.tiles_per_row.assign(static_cast<std::size_t>(band_end - band_begin), 0);
  BandScratch s(ctx.a.cols);
  const bool split = ctx.store.precision() == Precision::split;
  TileElements tile, tile_lo;
  tile.fill(0);
  tile_lo.fill(0);
  TileOccupancy occupancy{};
  std::int32_t b_rows[kTileCols];
  const std::vector<std::int32_t>* order = ctx.request.order;
  const bool aligned_permuted = ctx.request.layout == TileLayout::aligned && ctx.key.inverse != nullptr;

  for (std::int32_t band = band_begin; band < band_end; ++band) {
    StoreTally band_tally;  // a local, so that the entries' updates do not chain through memory
    const int nrows = gather_band<true>(ctx.a, ctx.row_of, band, ctx.key, &ctx.store, s, &band_tally);
    out.tally.merge(band_tally);
    const std::uint16_t rows_mask = static_cast<std::uint16_t>((1u << nrows) - 1u);
    assign_slots(ctx.request.layout, rows_mask, s);
    const std::int32_t tiles = static_cast<std::int32_t>(s.tile_keys.size());
    const std::int32_t columns = static_cast<std::int32_t>(s.column_of_local.size());

    // Entries grouped by tile (counting sort), so each tile is filled from its own entries only.
    s.slot_of_local.assign(static_cast<std::size_t>(columns), -1);
    for (std::size_t q = 0; q < s.slots.size(); ++q)
      if (s.slots[q] >= 0) s.slot_of_local[static_cast<std::size_t>(s.slots[q])] = static_cast<std::int32_t>(q);
    s.tile_start.assign(static_cast<std::size_t>(tiles) + 1, 0);
    for (const BandEntry& e : s.entries) ++s.tile_start[static_cast<std::size_t>(s.slot_of_local[static_cast<std::size_t>(e.local)] / kTileCols) + 1];
    for (std::int32_t t = 0; t < tiles; ++t) s.tile_start[static_cast<std::size_t>(t) + 1] += s.tile_start[static_cast<std::size_t>(t)];
    s.by_tile.resize(s.entries.size());
    for (std::size_t q = 0; q < s.entries.size(); ++q) {
      const std::int32_t t = s.slot_of_local[static_cast<std::size_t>(s.entries[q].local)] / kTileCols;
      s.by_tile[static_cast<std::size_t>(s.tile_start[static_cast<std::size_t>(t)]++)] = static_cast<std::int32_t>(q);
    }
    std::int32_t begin = 0;
    for (std::int32_t t = 0; t < tiles; ++t) {
      const std::int32_t end = s.tile_start[static_cast<std::size_t>(t)];
      for (std::int32_t q = begin; q < end; ++q) {
        const BandEntry& e = s.entries[static_cast<std::size_t>(s.by_tile[static_cast<std::size_t>(q)])];
        const int slot = s.slot_of_local[static_cast<std::size_t>(e.local)] % kTileCols;
        tile[static_cast<std::size_t>(e.row) * kTileCols + static_cast<std::size_t>(slot)] = e.value.hi;
        if (split) tile_lo[static_cast<std::size_t>(e.row) * kTileCols + static_cast<std::size_t>(slot)] = e.value.lo;
        occupancy[e.row] |= 1u << slot;
      }
      const int tile_nnz = end - begin;
      if (ctx.gathered) {
        for (int j = 0; j < kTileCols; ++j) {
          if (aligned_permuted) {
            const std::int64_t permuted = std::int64_t{s.tile_keys[static_cast<std::size_t>(t)]} * kTileCols + j;
            b_rows[j] = permuted < ctx.a.cols ? (*order)[static_cast<std::size_t>(permuted)] : -1;
          } else {
            const std::int32_t local = s.slots[static_cast<std::size_t>(t) * kTileCols + static_cast<std::size_t>(j)];
            b_rows[j] = local >= 0 ? s.column_of_local[static_cast<std::size_t>(local)] : -1;
          }
        }
      }
      if (tile_nnz > 0)
        append_tile(tile, split ? &tile_lo : nullptr, occupancy, nrows, tile_nnz, s.tile_keys[static_cast<std::size_t>(t)],
                    ctx.request.force_dense, out, static_cast<std::size_t>(band - band_begin), ctx.gathered ? b_rows : nullptr);
      for (std::int32_t q = begin; q < end; ++q) {
        const BandEntry& e = s.entries[static_cast<std::size_t>(s.by_tile[static_cast<std::size_t>(q)])];
        const std::size_t element =
            static_cast<std::size_t>(e.row) * kTileCols + static_cast<std::size_t>(s.slot_of_local[static_cast<std::size_t>(e.local)] % kTileCols);
        tile[element] = 0;
        tile_lo[element] = 0;
      }
      occupancy.fill(0);
      begin = end;
    }
  }
}

/// Contiguous band ranges of about equal entry counts, one per thread.
std::vector<std::int32_t> split_bands(const CsrMatrix& a, const RowMap& row_of, std::int32_t bands, int chunks) {
  std::vector<std::int64_t> prefix(static_cast<std::size_t>(bands) + 1, 0);
  for (std::int32_t b = 0; b < bands; ++b) {
    std::int64_t n = 0;
    for (int i = 0; i < kTileRows; ++i) {
      const std::int32_t r = row_of(std::int64_t{b} * kTileRows + i);
      if (r < 0) break;
      n += a.row_ptr[static_cast<std::size_t>(r) + 1] - a.row_ptr[static_cast<std::size_t>(r)];
    }
    prefix[static_cast<std::size_t>(b) + 1] = prefix[static_cast<std::size_t>(b)] + n + 1;
  }
  std::vector<std::int32_t> bounds(static_cast<std::size_t>(chunks) + 1, bands);
  bounds[0] = 0;
  for (int c = 1; c < chunks; ++c) {
    const std::int64_t target = prefix.back() * c / chunks;
    bounds[static_cast<std::size_t>(c)] = static_cast<std::int32_t>(
        std::lower_bound(prefix.begin(), prefix.end(), target) - prefix.begin());
    bounds[static_cast<std::size_t>(c)] = std::clamp(bounds[static_cast<std::size_t>(c)], bounds[static_cast<std::size_t>(c) - 1], bands);
  }
  return bounds;
}

int thread_count(const CsrMatrix& a, const BandLayoutRequest& request, std::int32_t bands) {
  int chunks = request.threads > 0 ? request.threads : 1;
  return static_cast<int>(std::clamp<std::int64_t>(std::min<std::int64_t>(chunks, a.nnz() / 65536 + 1), 1,
                                                   std::max<std::int32_t>(bands, 1)));
}

}  // namespace

Bcsr24Matrix build_band_layout(const CsrMatrix& a, const BandLayoutRequest& request, const ValueStore& store) {
  if (request.layout == TileLayout::automatic) throw InvalidArgument("build_band_layout: layout must be chosen");
  const bool reordered = request.order && !request.order->empty();
  if (reordered && request.order->size() != static_cast<std::size_t>(a.rows))
    throw InvalidArgument("build_band_layout: row order has " + std::to_string(request.order->size()) +
                          " entries for " + std::to_string(a.rows) + " rows");
  if (request.permute_columns && (!reordered || a.rows != a.cols))
    throw InvalidArgument("build_band_layout: a column permutation needs a reordered square matrix");

  Bcsr24Matrix out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.tile_rows = ceil_div(a.rows, kTileRows);
  out.tile_cols = ceil_div(a.cols, kTileCols);
  out.layout = request.layout;
  out.reordering = reordered ? Reordering::rcm : Reordering::none;

  const std::vector<std::int32_t> inverse =
      request.permute_columns ? inverse_permutation(*request.order) : std::vector<std::int32_t>{};
  const BuildContext ctx{a, request, RowMap{request.order, a.rows}, ColumnKey{request.permute_columns ? &inverse : nullptr},
                         store, request.layout == TileLayout::condensed || request.permute_columns};
  const int chunks = thread_count(a, request, out.tile_rows);
  const std::vector<std::int32_t> bounds = split_bands(a, ctx.row_of, out.tile_rows, chunks);
  std::vector<ChunkPart> parts(static_cast<std::size_t>(chunks));
  try {
    run_chunks(chunks, [&](int c) {
      build_bands(ctx, bounds[static_cast<std::size_t>(c)], bounds[static_cast<std::size_t>(c) + 1], parts[static_cast<std::size_t>(c)]);
    });
  } catch (const std::bad_alloc&) {
    throw SizeLimitError("convert_to_bcsr24: out of host memory storing the " + std::string(layout_name(request.layout)) +
                         " tiles of a " + std::to_string(a.rows) + " x " + std::to_string(a.cols) + " matrix with " +
                         std::to_string(a.nnz()) + " entries");
  }
  assemble_lists(parts, out);
  if (reordered) {
    out.row_order.assign(static_cast<std::size_t>(out.tile_rows) * kTileRows, -1);
    std::copy(request.order->begin(), request.order->end(), out.row_order.begin());
  }
  return out;
}

std::int64_t count_band_tiles(const CsrMatrix& a, const BandLayoutRequest& request) {
  const bool reordered = request.order && !request.order->empty();
  const std::vector<std::int32_t> inverse =
      request.permute_columns && reordered ? inverse_permutation(*request.order) : std::vector<std::int32_t>{};
  const RowMap row_of{request.order, a.rows};
  const ColumnKey key{inverse.empty() ? nullptr : &inverse};
  const std::int32_t bands = ceil_div(a.rows, kTileRows);
  const int chunks = thread_count(a, request, bands);
  const std::vector<std::int32_t> bounds = split_bands(a, row_of, bands, chunks);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(chunks), 0);
  run_chunks(chunks, [&](int c) {
    BandScratch s(a.cols);
    std::int64_t tiles = 0;
    for (std::int32_t band = bounds[static_cast<std::size_t>(c)]; band < bounds[static_cast<std::size_t>(c) + 1]; ++band) {
      gather_band<false>(a, row_of, band, key, nullptr, s, nullptr);
      if (request.layout == TileLayout::condensed) {
        tiles += ceil_div(static_cast<std::int64_t>(s.column_of_local.size()), kTileCols);
      } else {
        s.tile_keys.clear();
        for (const std::int32_t k : s.column_of_local) s.tile_keys.push_back(k / kTileCols);
        std::sort(s.tile_keys.begin(), s.tile_keys.end());
        tiles += std::unique(s.tile_keys.begin(), s.tile_keys.end()) - s.tile_keys.begin();
      }
    }
    counts[static_cast<std::size_t>(c)] = tiles;
  });
  std::int64_t total = 0;
  for (const std::int64_t n : counts) total += n;
  return total;
}

}  // namespace bcsr24::detail
