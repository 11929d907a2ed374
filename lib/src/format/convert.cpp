// CSR -> BCSR-2:4: tiles 16 CSR rows at a time, classifies each tile by occupancy masks, packs it in
// fragment order, and maps values into the stored format's range with exact power-of-two scales (per row, or
// one for the whole matrix).
#include "format/convert.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <new>
#include <sstream>
#include <string>
#include <thread>

#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "format/reorder.hpp"
#include "format/condense.hpp"
#include "format/storage_range.hpp"
#include "format/stored_value.hpp"
#include "format/tile_build.hpp"
#include "format/tile_codec.hpp"
#include "format/value_store.hpp"

namespace bcsr24 {

namespace {

using detail::ChunkPart;
using detail::ListPart;
using detail::run_chunks;
using detail::StoredValue;
using detail::TileElements;
using detail::TileOccupancy;
using detail::ValueStore;

std::int32_t ceil_div(std::int32_t n, std::int32_t d) { return static_cast<std::int32_t>((std::int64_t{n} + d - 1) / d); }

/// Splits the tile rows into `chunks` contiguous ranges holding about the same number of CSR entries, so the
/// threads get equal work even when the nonzeros are concentrated in a few tile rows.
std::vector<std::int32_t> split_tile_rows(const CsrMatrix& a, std::int32_t tile_rows, int chunks) {
  std::vector<std::int32_t> bounds(static_cast<std::size_t>(chunks) + 1, tile_rows);
  bounds[0] = 0;
  const auto entries_before = [&](std::int32_t tile_row) {
    return std::int64_t{a.row_ptr[static_cast<std::size_t>(std::min<std::int64_t>(a.rows, std::int64_t{tile_row} * kTileRows))]};
  };
  for (int c = 1; c < chunks; ++c) {
    const std::int64_t target = a.nnz() * c / chunks;
    std::int32_t lo = bounds[static_cast<std::size_t>(c) - 1], hi = tile_rows;
    while (lo < hi) {  // first tile row that starts at or after `target`
      const std::int32_t mid = lo + (hi - lo) / 2;
      if (entries_before(mid) < target) lo = mid + 1; else hi = mid;
    }
    bounds[static_cast<std::size_t>(c)] = lo;
  }
  return bounds;
}

/// Light CSR checks the tiling relies on (sizes, monotone row pointers); columns are checked while scanning.
void check_csr_shape(const CsrMatrix& a) {
  if (a.rows < 0 || a.cols < 0) throw InvalidArgument("convert_to_bcsr24: negative matrix dimensions");
  if (a.row_ptr.size() != static_cast<std::size_t>(a.rows) + 1)
    throw InvalidArgument("convert_to_bcsr24: row_ptr has " + std::to_string(a.row_ptr.size()) +
                          " entries, expected rows + 1 = " + std::to_string(std::int64_t{a.rows} + 1));
  if (a.values.size() != a.col_idx.size())
    throw InvalidArgument("convert_to_bcsr24: col_idx and values differ in length");
  if (a.row_ptr[0] != 0 || a.row_ptr.back() != static_cast<std::int64_t>(a.col_idx.size()))
    throw InvalidArgument("convert_to_bcsr24: row_ptr must start at 0 and end at nnz");
  for (std::int32_t r = 0; r < a.rows; ++r)
    if (a.row_ptr[static_cast<std::size_t>(r) + 1] < a.row_ptr[static_cast<std::size_t>(r)])
      throw InvalidArgument("convert_to_bcsr24: row_ptr decreases at row " + std::to_string(r));
}

/// Magnitude statistics of the CSR rows of some tile rows, plus the column checks the packer relies on.
struct RangeScan {
  double max_abs = 0.0;
  double min_abs_nonzero = std::numeric_limits<double>::infinity();
  std::int64_t nonzeros = 0, overflow = 0, underflow = 0;
  std::int32_t min_row_exponent = std::numeric_limits<std::int32_t>::max();
  std::int32_t max_row_exponent = std::numeric_limits<std::int32_t>::min();
};

/// Scans rows [row_begin, row_end): fills row_max for them and, when row_exponent is not empty (per-row
/// scaling), their exponents; overflow and underflow are counted against `range`.
RangeScan scan_range(const CsrMatrix& a, std::int32_t row_begin, std::int32_t row_end, const detail::StorageRange& range,
                     std::vector<double>& row_max, std::vector<std::int16_t>& row_exponent) {
  RangeScan s;
  for (std::int32_t r = row_begin; r < row_end; ++r) {
    double row_largest = 0.0;
    std::int32_t previous_col = -1;
    for (std::int32_t p = a.row_ptr[static_cast<std::size_t>(r)]; p < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++p) {
      const std::int32_t c = a.col_idx[static_cast<std::size_t>(p)];
      if (c <= previous_col || c >= a.cols)
        throw InvalidArgument("convert_to_bcsr24: row " + std::to_string(r) + " has column " + std::to_string(c) +
                              (c >= a.cols ? " out of range" : " out of order (columns must be sorted and unique)"));
      previous_col = c;
      const double v = std::fabs(a.values[static_cast<std::size_t>(p)]);
      if (!std::isfinite(v)) {
        std::ostringstream msg;
        msg << "convert_to_bcsr24: entry (row " << r << ", column " << c << ", 0-based) is "
            << a.values[static_cast<std::size_t>(p)] << "; fp16 conversion needs finite values";
        throw RangeError(msg.str());
      }
      if (v == 0.0) continue;  // explicit zero: not a nonzero
      ++s.nonzeros;
      row_largest = std::max(row_largest, v);
      s.min_abs_nonzero = std::min(s.min_abs_nonzero, v);
      s.overflow += v >= range.overflow_threshold;
      s.underflow += v <= range.underflow_threshold;
    }
    row_max[static_cast<std::size_t>(r)] = row_largest;
    s.max_abs = std::max(s.max_abs, row_largest);
    if (row_exponent.empty() || row_largest == 0.0) continue;  // a row without nonzeros keeps exponent 0
    // ilogb of a finite nonzero double lies in [-1074, 1023], so the exponent fits an int16 easily.
    const std::int32_t e = detail::per_row_exponent(row_largest);
    row_exponent[static_cast<std::size_t>(r)] = static_cast<std::int16_t>(e);
    s.min_row_exponent = std::min(s.min_row_exponent, e);
    s.max_row_exponent = std::max(s.max_row_exponent, e);
  }
  return s;
}

/// Aligned tiles of file-order tile rows [tr_begin, tr_end). count_only: classify and count the tiles
/// (tiles_per_row, nnz) without storing them, for the layout choice's baseline.
void convert_tile_rows(const CsrMatrix& a, std::int32_t tr_begin, std::int32_t tr_end, const ValueStore& store,
                       bool force_dense, bool count_only, ChunkPart& out) {
  out.sparse24.tiles_per_row.assign(static_cast<std::size_t>(tr_end - tr_begin), 0);
  out.dense.tiles_per_row.assign(static_cast<std::size_t>(tr_end - tr_begin), 0);
  const bool split = store.precision() == Precision::split;
  TileElements tile, tile_lo;
  tile.fill(0);
  tile_lo.fill(0);
  TileOccupancy occupancy{};
  std::int32_t cursor[kTileRows], row_end[kTileRows];
  detail::RowScale scales[kTileRows];
  detail::RowSums sums[kTileRows];
  // Tallied in locals and stored once: accumulating through `out` or `sums` in memory would chain every entry's
  // update to the previous one's store.
  detail::StoreTally tally;
  const std::int32_t* col_idx = a.col_idx.data();
  const double* values = a.values.data();

  for (std::int32_t tr = tr_begin; tr < tr_end; ++tr) {
    const std::int32_t r0 = tr * kTileRows;
    const int nrows = static_cast<int>(std::min<std::int64_t>(kTileRows, std::int64_t{a.rows} - r0));
    for (int i = 0; i < nrows; ++i) {
      cursor[i] = a.row_ptr[static_cast<std::size_t>(r0 + i)];
      row_end[i] = a.row_ptr[static_cast<std::size_t>(r0 + i) + 1];
      if (count_only) continue;
      scales[i] = store.row(r0 + i);
      sums[i] = {};
    }
    // Rows are sorted, so the tiles of this tile row come out in ascending column order by always taking
    // the smallest tile column among the 16 row cursors: a 16-way merge, no sort and no scratch per column.
    for (;;) {
      std::int32_t tc = std::numeric_limits<std::int32_t>::max();
      for (int i = 0; i < nrows; ++i)
        if (cursor[i] < row_end[i]) tc = std::min(tc, col_idx[cursor[i]] / kTileCols);
      if (tc == std::numeric_limits<std::int32_t>::max()) break;
      const std::int64_t col_end = (std::int64_t{tc} + 1) * kTileCols;

      int tile_nnz = 0;
      for (int i = 0; i < nrows; ++i) {
        std::int32_t p = cursor[i];
        std::uint32_t mask = 0;
        detail::RowSums row_sums = sums[i];
        for (; p < row_end[i] && col_idx[p] < col_end; ++p) {
          const double v = values[p];
          if (v == 0.0) continue;  // explicit zeros do not count as nonzeros
          const int c = col_idx[p] % kTileCols;
          mask |= 1u << c;
          if (count_only) continue;  // the classification needs the masks only
          // Rows are visited column by column, tile after tile: each row's census sums add up in column
          // order, as in the band builder, so both give the same census.
          const StoredValue stored = store.store(v, scales[i], row_sums, tally);
          tile[static_cast<std::size_t>(i * kTileCols + c)] = stored.hi;
          if (split) tile_lo[static_cast<std::size_t>(i * kTileCols + c)] = stored.lo;
        }
        sums[i] = row_sums;
        cursor[i] = p;
        occupancy[static_cast<std::size_t>(i)] = mask;
        tile_nnz += __builtin_popcount(mask);
      }
      if (tile_nnz == 0) continue;  // only explicit zeros: a zero tile

      if (count_only) {
        bool dense = force_dense;
        for (int i = 0; i < nrows && !dense; ++i) dense = detail::row_violates_24(occupancy[static_cast<std::size_t>(i)]);
        ListPart& list = dense ? out.dense : out.sparse24;
        list.tiles_per_row[static_cast<std::size_t>(tr - tr_begin)] += 1;
        list.nnz += tile_nnz;
      } else {
        detail::append_tile(tile, split ? &tile_lo : nullptr, occupancy, nrows, tile_nnz, tc, force_dense, out,
                            static_cast<std::size_t>(tr - tr_begin), nullptr);
      }

      // Reset the scratch: wholesale for busy tiles, element by element for sparse ones.
      if (tile_nnz > kDenseTileValues / 8) {
        tile.fill(0);
        if (split) tile_lo.fill(0);
      } else {
        for (int i = 0; i < nrows; ++i)
          for (std::uint32_t m = occupancy[static_cast<std::size_t>(i)]; m != 0; m &= m - 1) {
            tile[static_cast<std::size_t>(i * kTileCols + __builtin_ctz(m))] = 0;
            if (split) tile_lo[static_cast<std::size_t>(i * kTileCols + __builtin_ctz(m))] = 0;
          }
      }
      for (int i = 0; i < nrows; ++i) occupancy[static_cast<std::size_t>(i)] = 0;
    }
    if (!count_only)
      for (int i = 0; i < nrows; ++i) store.finish_row(r0 + i, sums[i]);
  }
  out.tally.merge(tally);
}

}  // namespace

TileKind classify_tile(const double* tile_row_major) {
  bool any = false;
  for (int r = 0; r < kTileRows; ++r) {
    for (int grp = 0; grp < kTileCols / kGroupCols; ++grp) {
      int count = 0;
      for (int q = 0; q < kGroupCols; ++q) count += tile_row_major[r * kTileCols + grp * kGroupCols + q] != 0.0;
      if (count > 2) return TileKind::dense;
      any = any || count > 0;
    }
  }
  return any ? TileKind::sparse24 : TileKind::zero;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// Bytes of an aligned file-order matrix with these tile counts (row pointers of both lists, column indices,
/// values (twice for split: high and low parts), metadata), as TileList::tile_bytes() would count them.
std::int64_t aligned_bytes(std::int32_t tile_rows, std::int64_t sparse24_tiles, std::int64_t dense_tiles,
                           Precision precision) {
  const std::int64_t value_bytes = precision == Precision::split ? 4 : 2;
  return 2 * (std::int64_t{tile_rows} + 1) * 4 +
         sparse24_tiles * (4 + kSparseTileValues * value_bytes + kSparseTileMetaWords * 4) +
         dense_tiles * (4 + kDenseTileValues * value_bytes);
}

std::int64_t stored_bytes(const Bcsr24Matrix& m) { return m.census().total_bytes(); }

/// The file-order aligned tiles of `a` (the thesis's BCSR), split over `bounds`. count_only: only counts.
Bcsr24Matrix convert_aligned(const CsrMatrix& a, const std::vector<std::int32_t>& bounds, const ValueStore& store,
                             bool force_dense, bool count_only) {
  Bcsr24Matrix out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.tile_rows = ceil_div(a.rows, kTileRows);
  out.tile_cols = ceil_div(a.cols, kTileCols);
  const int chunks = static_cast<int>(bounds.size()) - 1;
  // Each stored tile holds 512 (dense) or 256 (2:4) fp16 values however few nonzeros it has, so a scattered
  // matrix can need far more memory than its CSR form: refuse with a message, not bad_alloc.
  std::vector<ChunkPart> parts(static_cast<std::size_t>(chunks));
  try {
    run_chunks(chunks, [&](int c) {
      convert_tile_rows(a, bounds[static_cast<std::size_t>(c)], bounds[static_cast<std::size_t>(c) + 1], store,
                        force_dense, count_only, parts[static_cast<std::size_t>(c)]);
    });
  } catch (const std::bad_alloc&) {
    throw SizeLimitError("convert_to_bcsr24: out of host memory storing the tiles of a " + std::to_string(a.rows) +
                         " x " + std::to_string(a.cols) + " matrix with " + std::to_string(a.nnz()) +
                         " entries (each stored 16x32 tile takes up to 1 KiB)");
  }
  detail::assemble_lists(parts, out);
  return out;
}

/// Pass 1 of a conversion: the magnitudes, per row and overall, and the scales they set (which must be known before
/// any value is rounded).
struct RangePass {
  Fp16Scaling scaling;
  std::int64_t nonzeros = 0;
  std::vector<double> row_max;
  std::vector<std::int16_t> row_exponent;  ///< per-row scaling only
};

RangePass scan_ranges(const CsrMatrix& a, const std::vector<std::int32_t>& bounds, int chunks,
                      const ConvertOptions& options) {
  const auto row_of = [&](std::int32_t tile_row) {
    return static_cast<std::int32_t>(std::min<std::int64_t>(a.rows, std::int64_t{tile_row} * kTileRows));
  };
  const detail::StorageRange& range = detail::storage_range(options.precision);
  const bool per_row = options.scaling == ScalingPolicy::per_row;
  RangePass pass;
  pass.row_max.assign(static_cast<std::size_t>(a.rows), 0.0);
  pass.row_exponent.assign(per_row ? static_cast<std::size_t>(a.rows) : 0, 0);
  std::vector<RangeScan> scans(static_cast<std::size_t>(chunks));
  run_chunks(chunks, [&](int c) {
    scans[static_cast<std::size_t>(c)] = scan_range(a, row_of(bounds[static_cast<std::size_t>(c)]),
                                                    row_of(bounds[static_cast<std::size_t>(c) + 1]), range,
                                                    pass.row_max, pass.row_exponent);
  });
  Fp16Scaling& scaling = pass.scaling;
  double min_abs = std::numeric_limits<double>::infinity();
  std::int32_t min_row_exponent = std::numeric_limits<std::int32_t>::max();
  std::int32_t max_row_exponent = std::numeric_limits<std::int32_t>::min();
  for (const RangeScan& s : scans) {
    scaling.max_abs = std::max(scaling.max_abs, s.max_abs);
    min_abs = std::min(min_abs, s.min_abs_nonzero);
    scaling.overflow_count += s.overflow;
    scaling.underflow_count += s.underflow;
    pass.nonzeros += s.nonzeros;
    min_row_exponent = std::min(min_row_exponent, s.min_row_exponent);
    max_row_exponent = std::max(max_row_exponent, s.max_row_exponent);
  }
  scaling.min_abs_nonzero = pass.nonzeros > 0 ? min_abs : 0.0;
  if (per_row) {
    scaling.per_row = true;  // exponent stays 0: each row carries its own
    if (pass.nonzeros > 0) {
      scaling.min_row_exponent = min_row_exponent;
      scaling.max_row_exponent = max_row_exponent;
    }
  } else {
    scaling.exponent = detail::choose_scaling_exponent(scaling, pass.nonzeros, options.scaling, range);
  }
  return pass;
}

/// The row order a conversion uses (empty: the file's), whether it permutes the columns too, and why.
struct RowOrderChoice {
  std::vector<std::int32_t> order;
  bool symmetric = false;
  std::string why;
};

/// Reverse Cuthill-McKee where asked, or where automatic finds it stores clearly fewer tiles of `counted_layout`
/// than the file order (whose aligned tiles `rep` has counted). Fills the report's reorder time and condensed tile
/// counts.
RowOrderChoice choose_row_order(const CsrMatrix& a, const ConvertOptions& options, TileLayout counted_layout,
                                std::int64_t nonzeros, int threads, LayoutReport& rep) {
  const Reordering reorder = options.reorder;
  RowOrderChoice choice;
  // Automatic reordering is not tried where the file order's tiles are already at least half full: a
  // reordering cannot win much there, and RCM costs a pass over A + A^T.
  const bool tiles_already_full =
      rep.baseline_stored_tiles > 0 && nonzeros >= rep.baseline_stored_tiles * (kDenseTileValues / 2);
  if (reorder == Reordering::automatic && tiles_already_full)
    choice.why = "file order (aligned tiles already hold >= 256 nonzeros each)";
  if (reorder == Reordering::none || a.rows == 0 || (reorder == Reordering::automatic && tiles_already_full))
    return choice;
  const Clock::time_point t = Clock::now();
  RowOrdering ro = reverse_cuthill_mckee(a);
  rep.reorder_seconds = seconds_since(t);
  bool use = reorder == Reordering::rcm;
  if (reorder == Reordering::automatic) {
    detail::BandLayoutRequest file_order{counted_layout, nullptr, false, options.force_dense, threads};
    detail::BandLayoutRequest rcm_order{
        counted_layout, &ro.order, counted_layout == TileLayout::aligned && ro.symmetric, options.force_dense, threads};
    const std::int64_t tiles_file =
        counted_layout == TileLayout::aligned ? rep.baseline_stored_tiles : detail::count_band_tiles(a, file_order);
    const std::int64_t tiles_rcm = detail::count_band_tiles(a, rcm_order);
    if (counted_layout == TileLayout::condensed) {
      rep.condensed_tiles_file_order = tiles_file;
      rep.condensed_tiles_rcm = tiles_rcm;
    }
    // Keep the file's order unless RCM saves a clear share of the tiles: a reordered matrix pays a row map
    // and gathers C rows.
    use = tiles_rcm < tiles_file - tiles_file / 20;
    choice.why = std::string(use ? "rcm" : "file order") + " (" + layout_name(counted_layout) + " tiles: file order " +
                 std::to_string(tiles_file) + ", rcm " + std::to_string(tiles_rcm) + ")";
  }
  if (use) {
    choice.order = std::move(ro.order);
    choice.symmetric = ro.symmetric;
  }
  return choice;
}

/// A conversion other than the thesis's layout as asked: the aligned file-order tiles are counted and classified
/// as the baseline (not stored), then the row order and the layout are chosen against it.
Bcsr24Matrix convert_with_choices(const CsrMatrix& a, const std::vector<std::int32_t>& bounds,
                                  const ValueStore& store, const ConvertOptions& options, int threads,
                                  std::int32_t tile_rows, std::int64_t nonzeros, LayoutReport& rep) {
  const TileLayout layout = options.layout;
  Clock::time_point t = Clock::now();
  const Bcsr24Matrix counted = convert_aligned(a, bounds, store, options.force_dense, true);
  const std::int64_t baseline_sparse24 = counted.sparse24.row_ptr.back();
  const std::int64_t baseline_dense = counted.dense.row_ptr.back();
  rep.baseline_stored_tiles = baseline_sparse24 + baseline_dense;
  rep.baseline_sparse24_tiles = baseline_sparse24;
  rep.baseline_bytes = aligned_bytes(tile_rows, baseline_sparse24, baseline_dense, options.precision);
  rep.baseline_seconds = seconds_since(t);

  const TileLayout counted_layout = layout == TileLayout::aligned ? TileLayout::aligned : TileLayout::condensed;
  const RowOrderChoice row_order = choose_row_order(a, options, counted_layout, nonzeros, threads, rep);
  const std::vector<std::int32_t>& order = row_order.order;
  const std::string& why_order = row_order.why;

  t = Clock::now();
  const auto build = [&](TileLayout l) {
    detail::BandLayoutRequest request{l, &order, l == TileLayout::aligned && row_order.symmetric && !order.empty(),
                                      options.force_dense, threads};
    return detail::build_band_layout(a, request, store);
  };
  Bcsr24Matrix out;
  if (layout == TileLayout::aligned) {
    out = order.empty() ? convert_aligned(a, bounds, store, options.force_dense, false) : build(TileLayout::aligned);
    rep.reason = why_order.empty() ? "requested" : why_order;
  } else {
    out = build(TileLayout::condensed);
    if (layout == TileLayout::automatic) {
      const std::int64_t condensed = stored_bytes(out);
      if (rep.baseline_bytes <= condensed) {
        rep.reason =
            "aligned: " + std::to_string(rep.baseline_bytes) + " bytes vs condensed " + std::to_string(condensed);
        out = convert_aligned(a, bounds, store, options.force_dense, false);
      } else {
        rep.reason =
            "condensed: " + std::to_string(condensed) + " bytes vs aligned " + std::to_string(rep.baseline_bytes);
      }
      if (!why_order.empty()) rep.reason += "; order: " + why_order;
    } else {
      rep.reason = why_order.empty() ? "requested" : why_order;
    }
  }
  rep.pack_seconds = seconds_since(t);
  return out;
}

}  // namespace

ConvertOptions convert_options(const OperatorOptions& options) {
  ConvertOptions c;
  c.scaling = options.scaling;
  c.precision = options.precision;
  c.threads = options.threads;
  c.layout = options.layout;
  c.reorder = options.reorder;
  return c;
}

Bcsr24Matrix convert_to_bcsr24(const CsrMatrix& a, const ConvertOptions& options, LayoutReport* report) {
  const Clock::time_point start = Clock::now();
  check_csr_shape(a);
  const std::int32_t tile_rows = ceil_div(a.rows, kTileRows);

  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = options.threads > 0 ? options.threads : hardware;
  // Tiny matrices are not worth a thread; each chunk should have real work.
  const int chunks = static_cast<int>(std::clamp<std::int64_t>(std::min<std::int64_t>(threads, a.nnz() / 65536 + 1), 1,
                                                               std::max<std::int32_t>(tile_rows, 1)));
  const std::vector<std::int32_t> bounds = split_tile_rows(a, tile_rows, chunks);
  RangePass range = scan_ranges(a, bounds, chunks, options);
  Fp16Scaling& scaling = range.scaling;
  // Filled by whichever builder stores each row (identically, should two layouts be built).
  std::vector<detail::RowSums> row_sums(static_cast<std::size_t>(a.rows));
  const ValueStore store(options.precision, scaling.exponent, range.row_exponent, range.row_max, row_sums);

  LayoutReport rep;
  Bcsr24Matrix out;
  if (options.layout == TileLayout::aligned && options.reorder == Reordering::none) {
    // The thesis's layout as asked: no alternative is examined.
    const Clock::time_point t = Clock::now();
    out = convert_aligned(a, bounds, store, options.force_dense, false);
    rep.pack_seconds = seconds_since(t);
    rep.baseline_stored_tiles = out.sparse24.tiles() + out.dense.tiles();
    rep.baseline_sparse24_tiles = out.sparse24.tiles();
    rep.baseline_bytes = stored_bytes(out);
    rep.reason = "requested";
  } else {
    out = convert_with_choices(a, bounds, store, options, threads, tile_rows, range.nonzeros, rep);
  }
  // The magnitudes and scales come from pass 1; the builders counted what rounding did to each value.
  scaling.subnormal_count = out.scaling.subnormal_count;
  scaling.flushed_count = out.scaling.flushed_count;
  scaling.max_flushed_relative = out.scaling.max_flushed_relative;
  scaling.max_relative_error = out.scaling.max_relative_error;
  scaling.frobenius_relative_error = detail::frobenius_relative_error(row_sums, range.row_max);
  out.scaling = scaling;
  out.precision = options.precision;
  out.row_exponent = std::move(range.row_exponent);
  out.nnz = range.nonzeros;
  rep.layout = out.layout;
  rep.reordering = out.reordering;
  rep.total_seconds = seconds_since(start);
  if (report) *report = std::move(rep);
  return out;
}

namespace detail {

void assemble_lists(std::vector<ChunkPart>& parts, Bcsr24Matrix& out) {
  StoreTally tally;
  for (const ChunkPart& p : parts) {
    tally.merge(p.tally);
    out.sparse24_nnz += p.sparse24.nnz;
    out.dense_nnz += p.dense.nnz;
  }
  out.scaling.subnormal_count = tally.subnormal;
  out.scaling.flushed_count = tally.flushed;
  out.scaling.max_flushed_relative = tally.max_flushed_relative;
  out.scaling.max_relative_error = tally.max_relative_error;
  out.nnz = out.sparse24_nnz + out.dense_nnz;
  out.sparse24 = assemble_list(parts, &ChunkPart::sparse24, out.tile_rows, true);
  out.dense = assemble_list(parts, &ChunkPart::dense, out.tile_rows, false);
}

TileList assemble_list(std::vector<ChunkPart>& parts, ListPart ChunkPart::*which, std::int32_t tile_rows,
                       bool with_metadata) {
  TileList list;
  list.row_ptr.reserve(static_cast<std::size_t>(tile_rows) + 1);
  list.row_ptr.push_back(0);
  std::size_t tiles = 0, values = 0, values_lo = 0, metadata = 0, b_rows = 0;
  for (auto& part : parts) {
    const ListPart& p = part.*which;
    for (std::int32_t n : p.tiles_per_row) list.row_ptr.push_back(list.row_ptr.back() + n);
    tiles += p.col_idx.size();
    values += p.values.size();
    values_lo += p.values_lo.size();
    metadata += p.metadata.size();
    b_rows += p.b_rows.size();
  }
  if (parts.size() == 1) {
    ListPart& p = parts[0].*which;
    list.col_idx = std::move(p.col_idx);
    list.values = std::move(p.values);
    list.values_lo = std::move(p.values_lo);
    list.metadata = std::move(p.metadata);
    list.b_rows = std::move(p.b_rows);
  } else {
    list.col_idx.reserve(tiles);
    list.values.reserve(values);
    list.values_lo.reserve(values_lo);
    list.metadata.reserve(metadata);
    list.b_rows.reserve(b_rows);
    for (auto& part : parts) {
      ListPart& p = part.*which;
      list.col_idx.insert(list.col_idx.end(), p.col_idx.begin(), p.col_idx.end());
      list.values.insert(list.values.end(), p.values.begin(), p.values.end());
      list.values_lo.insert(list.values_lo.end(), p.values_lo.begin(), p.values_lo.end());
      list.metadata.insert(list.metadata.end(), p.metadata.begin(), p.metadata.end());
      list.b_rows.insert(list.b_rows.end(), p.b_rows.begin(), p.b_rows.end());
      p = ListPart{};  // release the part's memory early
    }
  }
  if (!with_metadata) list.metadata.clear();
  return list;
}

}  // namespace detail

TileList merge_to_dense_list(const Bcsr24Matrix& a) {
  TileList merged;
  merged.row_ptr.assign(static_cast<std::size_t>(a.tile_rows) + 1, 0);
  const std::size_t tiles = static_cast<std::size_t>(a.sparse24.tiles() + a.dense.tiles());
  const bool split = a.precision == Precision::split;
  merged.col_idx.reserve(tiles);
  merged.values.reserve(tiles * kDenseTileValues);
  if (split) merged.values_lo.reserve(tiles * kDenseTileValues);
  const bool gathered = a.gathered();
  if (gathered) merged.b_rows.reserve(tiles * kTileCols);
  // A list with no tiles has no b_rows even in a gathered matrix; a tile of it is never taken.
  const auto copy_b_rows = [&](const TileList& list, std::int32_t t) {
    const auto first = list.b_rows.begin() + static_cast<std::ptrdiff_t>(t) * kTileCols;
    merged.b_rows.insert(merged.b_rows.end(), first, first + kTileCols);
  };
  TileElements tile{}, tile_lo{};
  const auto append = [&](const TileList& list, bool sparse24, std::int32_t t) {
    merged.col_idx.push_back(list.col_idx[static_cast<std::size_t>(t)]);
    if (gathered) copy_b_rows(list, t);
    detail::unpack_list_tile(list, sparse24, t, tile, tile_lo);
    const std::size_t offset = merged.values.size();
    merged.values.resize(offset + kDenseTileValues);
    detail::pack_dense_tile(tile, merged.values.data() + offset);
    if (split) {
      merged.values_lo.resize(offset + kDenseTileValues);
      detail::pack_dense_tile(tile_lo, merged.values_lo.data() + offset);
    }
  };
  for (std::int32_t tr = 0; tr < a.tile_rows; ++tr) {
    std::int32_t s = a.sparse24.row_ptr[static_cast<std::size_t>(tr)];
    const std::int32_t s_end = a.sparse24.row_ptr[static_cast<std::size_t>(tr) + 1];
    std::int32_t d = a.dense.row_ptr[static_cast<std::size_t>(tr)];
    const std::int32_t d_end = a.dense.row_ptr[static_cast<std::size_t>(tr) + 1];
    // Both lists are sorted by column within a tile row: merge them.
    while (s < s_end || d < d_end) {
      const bool take_sparse =
          d >= d_end || (s < s_end && a.sparse24.col_idx[static_cast<std::size_t>(s)] < a.dense.col_idx[static_cast<std::size_t>(d)]);
      if (take_sparse) append(a.sparse24, true, s++);
      else append(a.dense, false, d++);
    }
    merged.row_ptr[static_cast<std::size_t>(tr) + 1] = static_cast<std::int32_t>(merged.col_idx.size());
  }
  return merged;
}

}  // namespace bcsr24
