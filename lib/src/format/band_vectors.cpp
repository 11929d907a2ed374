// The narrow-vector layout (band_vectors.hpp): counts per band, extraction from the stored tiles (through the CSR
// rows, which already hold exactly the stored values in stored row order), decoding and the CPU oracle.
#include "format/band_vectors.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <string>

#include "bcsr24/error.hpp"
#include "format/band_csr.hpp"
#include "format/stored_value.hpp"
#include "format/tile_codec.hpp"

namespace bcsr24::detail {

namespace {

std::int32_t groups_of(std::int64_t vectors) {
  return static_cast<std::int32_t>((vectors + kVectorGroup - 1) / kVectorGroup);
}

}  // namespace

std::vector<BandVectorCounts> band_vector_counts(const Bcsr24Matrix& a) {
  std::vector<BandVectorCounts> counts(static_cast<std::size_t>(a.tile_rows));
  TileElements tile{}, tile_lo{};
  std::array<std::vector<std::int32_t>, kWindowsPerBand> columns;
  for (std::int32_t band = 0; band < a.tile_rows; ++band) {
    for (auto& c : columns) c.clear();
    for (const TileList* list : {&a.sparse24, &a.dense}) {
      const bool sparse24 = list == &a.sparse24;
      for (std::int32_t t = list->row_ptr[std::size_t(band)]; t < list->row_ptr[std::size_t(band) + 1]; ++t) {
        unpack_list_tile(*list, sparse24, t, tile, tile_lo);
        for (int c = 0; c < kTileCols; ++c) {
          const std::int64_t k = list->b_row(t, c, a.cols);
          if (k < 0) continue;
          for (int h = 0; h < kWindowsPerBand; ++h)
            for (int r = h * kWindowRows; r < (h + 1) * kWindowRows; ++r) {
              const auto at = std::size_t(r * kTileCols + c);
              if (is_stored_nonzero(a.precision, tile[at], tile_lo[at])) {
                columns[std::size_t(h)].push_back(static_cast<std::int32_t>(k));
                break;
              }
            }
        }
      }
    }
    BandVectorCounts& out = counts[std::size_t(band)];
    for (auto& c : columns) {
      // A B row can only repeat within a window across tiles of one band if a layout named it twice; count it once.
      std::sort(c.begin(), c.end());
      const auto distinct = std::unique(c.begin(), c.end()) - c.begin();
      out.vectors += static_cast<std::int32_t>(distinct);
      out.groups += groups_of(distinct);
      out.longest_window_groups = std::max(out.longest_window_groups, groups_of(distinct));
    }
  }
  return counts;
}

BandVectors extract_band_vectors(const Bcsr24Matrix& a, const std::vector<std::int32_t>& bands) {
  if (a.precision == Precision::split)
    throw InvalidArgument("extract_band_vectors: a split-precision matrix has no narrow-vector form (its low parts "
                          "would need a second product); use tiles or CSR");
  // Checks the bands (range, order) and gives the entries in stored row order, B rows increasing in each row.
  return band_vectors_from_csr(extract_band_csr(a, bands), bands);
}

BandVectors band_vectors_from_csr(const BandCsr& csr, const std::vector<std::int32_t>& bands) {
  if (csr.precision == Precision::split)
    throw InvalidArgument("band_vectors_from_csr: a split-precision matrix has no narrow-vector form");
  // Position of each band among the CSR copy's (both increasing).
  std::vector<std::size_t> at(bands.size());
  std::size_t next = 0;
  for (std::size_t i = 0; i < bands.size(); ++i) {
    while (next < csr.bands.size() && csr.bands[next] < bands[i]) ++next;
    if (next == csr.bands.size() || csr.bands[next] != bands[i] || (i > 0 && bands[i] <= bands[i - 1]))
      throw InvalidArgument("band_vectors_from_csr: band " + std::to_string(bands[i]) +
                            " is not in the CSR rows or the bands are not increasing");
    at[i] = next;
  }
  BandVectors v;
  v.bands = bands;
  v.precision = csr.precision;
  v.group_ptr.push_back(0);
  struct Entry {
    std::int32_t b_row;
    std::int32_t row;  // 0..7 in the window
    fp16_t value;
  };
  std::vector<Entry> entries;
  for (std::size_t i = 0; i < bands.size(); ++i)
    for (int h = 0; h < kWindowsPerBand; ++h) {
      entries.clear();
      for (int r = 0; r < kWindowRows; ++r) {
        const std::size_t slot = at[i] * kTileRows + std::size_t(h * kWindowRows + r);
        for (std::int32_t e = csr.row_ptr[slot]; e < csr.row_ptr[slot + 1]; ++e)
          entries.push_back({csr.b_row[std::size_t(e)], r, csr.values[std::size_t(e)]});
      }
      // Columns ascending (neighbouring vectors gather nearby B rows); rows ascending within a column.
      std::stable_sort(entries.begin(), entries.end(),
                       [](const Entry& x, const Entry& y) { return x.b_row < y.b_row; });
      std::int32_t real = 0;
      for (std::size_t e = 0; e < entries.size(); ++e) {
        if (e > 0 && entries[e].b_row == entries[e - 1].b_row) {
          if (entries[e].row == entries[e - 1].row)
            throw InvalidArgument("extract_band_vectors: band " + std::to_string(bands[i]) + " names B row " +
                                  std::to_string(entries[e].b_row) + " twice in one row");
        } else {
          ++real;
        }
      }
      const std::int32_t groups = groups_of(real);
      const std::size_t first_vector = v.col.size();
      v.col.resize(first_vector + std::size_t(groups) * kVectorGroup);
      v.values.resize(v.values.size() + std::size_t(groups) * kVectorGroupValues, 0);
      std::int32_t k = -1;  // vector index within the window
      for (std::size_t e = 0; e < entries.size(); ++e) {
        if (e == 0 || entries[e].b_row != entries[e - 1].b_row) {
          ++k;
          v.col[first_vector + std::size_t(k)] = entries[e].b_row;
        }
        const std::size_t group = (first_vector + std::size_t(k)) / kVectorGroup;
        v.values[group * kVectorGroupValues + std::size_t(vector_value_offset(k % kVectorGroup, entries[e].row))] =
            entries[e].value;
        if (is_stored_nonzero(csr.precision, entries[e].value, 0)) ++v.nnz;
      }
      // Padding vectors: zero values, the last real column (a row of B that exists; read, multiplied by zero).
      for (std::int32_t p = real; p < groups * kVectorGroup; ++p)
        v.col[first_vector + std::size_t(p)] = v.col[first_vector + std::size_t(real - 1)];
      if (v.col.size() / kVectorGroup > static_cast<std::size_t>(INT32_MAX / kVectorGroup))
        throw SizeLimitError("extract_band_vectors: more than 2^31 - 1 vectors");
      v.window.push_back(bands[i] * kWindowsPerBand + h);
      v.group_ptr.push_back(static_cast<std::int32_t>(v.col.size() / kVectorGroup));
      v.real_vectors.push_back(real);
    }
  return v;
}

std::vector<VectorEntry> decode_band_vectors(const BandVectors& v) {
  const std::size_t windows = v.window.size();
  if (v.group_ptr.size() != windows + 1 || v.real_vectors.size() != windows || v.group_ptr.front() != 0 ||
      std::int64_t(v.group_ptr.back()) * kVectorGroup != v.vectors() ||
      v.values.size() != std::size_t(v.groups()) * kVectorGroupValues)
    throw InvalidArgument("decode_band_vectors: sizes of windows, pointers, columns and values disagree");
  std::vector<VectorEntry> out;
  for (std::size_t w = 0; w < windows; ++w) {
    const std::int32_t first = v.group_ptr[w], last = v.group_ptr[w + 1];
    const std::int64_t slots = std::int64_t(last - first) * kVectorGroup;
    if (last < first || v.real_vectors[w] < 0 || v.real_vectors[w] > slots ||
        (v.real_vectors[w] > 0) != (slots > 0) || slots - v.real_vectors[w] >= kVectorGroup)
      throw InvalidArgument("decode_band_vectors: window " + std::to_string(w) + " has a bad group range");
    for (std::int64_t k = 0; k < slots; ++k) {
      const std::int64_t vector = std::int64_t(first) * kVectorGroup + k;
      const std::int32_t col = v.col[std::size_t(vector)];
      const bool real = k < v.real_vectors[w];
      if (real && k > 0 && col <= v.col[std::size_t(vector - 1)])
        throw InvalidArgument("decode_band_vectors: columns of window " + std::to_string(w) + " not increasing");
      for (int r = 0; r < kWindowRows; ++r) {
        const fp16_t bits = v.values[std::size_t(vector / kVectorGroup) * kVectorGroupValues +
                                     std::size_t(vector_value_offset(int(k % kVectorGroup), r))];
        if ((bits & 0x7FFFu) == 0) continue;
        if (!real) throw InvalidArgument("decode_band_vectors: a padding vector of window " + std::to_string(w) +
                                         " holds a value");
        out.push_back({std::int64_t(v.window[w]) * kWindowRows + r, col, bits});
      }
    }
  }
  return out;
}

void reference_spmm_band_vectors(const BandVectors& v, const Bcsr24Matrix& a, std::int32_t n, const fp16_t* b,
                                 std::int64_t ldb, float* c, std::int64_t ldc, double alpha, double beta) {
  if (n < 1 || ldb < n || ldc < n)
    throw InvalidArgument("reference_spmm_band_vectors: n = " + std::to_string(n) + ", ldb = " + std::to_string(ldb) +
                          ", ldc = " + std::to_string(ldc) + " (need n >= 1 and leading dimensions >= n)");
  const auto widen = [&](fp16_t h) {
    return v.precision == Precision::bf16 ? bf16_bits_to_double(h) : fp16_bits_to_double(h);
  };
  std::vector<double> acc(std::size_t(kWindowRows) * std::size_t(n));
  for (std::size_t w = 0; w < v.window.size(); ++w) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::int64_t vector = std::int64_t(v.group_ptr[w]) * kVectorGroup;
         vector < std::int64_t(v.group_ptr[w + 1]) * kVectorGroup; ++vector) {
      const std::int32_t kb = v.col[std::size_t(vector)];
      if (kb < 0 || kb >= a.cols)
        throw InvalidArgument("reference_spmm_band_vectors: column " + std::to_string(kb) + " out of range");
      for (int r = 0; r < kWindowRows; ++r) {
        const double value = widen(v.values[std::size_t(vector / kVectorGroup) * kVectorGroupValues +
                                            std::size_t(vector_value_offset(int(vector % kVectorGroup), r))]);
        if (value == 0.0) continue;
        for (std::int32_t j = 0; j < n; ++j) acc[std::size_t(r) * n + j] += value * widen(b[kb * ldb + j]);
      }
    }
    for (int r = 0; r < kWindowRows; ++r) {
      const std::int32_t row = a.original_row(std::int64_t(v.window[w]) * kWindowRows + r);
      if (row < 0) continue;
      const std::int32_t exponent = a.exponent_of_row(row);
      float* c_row = c + std::int64_t(row) * ldc;
      for (std::int32_t j = 0; j < n; ++j) {
        const double product = std::ldexp(alpha * acc[std::size_t(r) * n + j], exponent);
        c_row[j] = static_cast<float>(beta == 0.0 ? product : product + beta * double(c_row[j]));
      }
    }
  }
}

}  // namespace bcsr24::detail
