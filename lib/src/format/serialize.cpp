// .b24 files: a fixed little-endian header, the two tile lists' arrays, and a CRC-32 trailer (docs/FORMAT.md).
#include "bcsr24/serialize.hpp"

#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "format/tile_codec.hpp"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, ".b24 files are little-endian; this code writes native order");
#endif

namespace bcsr24 {

namespace {

constexpr char kMagic[8] = {'B', 'C', 'S', 'R', '2', '4', '\0', '\0'};
/// Fixed header size of version 1 (magic .. payload_bytes), see docs/FORMAT.md.
constexpr std::size_t kHeaderBytes = 136;
constexpr std::size_t kTrailerBytes = 4;  // CRC-32 of every byte after the magic and before the trailer
/// Scale exponents beyond this cannot come from a finite double input.
constexpr std::int32_t kMaxAbsExponent = 1100;

/// The header fields after magic and version, in file order.
struct Header {
  std::uint32_t version = 0;
  std::uint32_t reserved0 = 0;
  std::int32_t rows = 0, cols = 0, tile_rows = 0, tile_cols = 0;
  std::int64_t nnz = 0, sparse24_nnz = 0, dense_nnz = 0;
  std::int64_t sparse24_tiles = 0, dense_tiles = 0;
  std::int32_t exponent = 0;
  std::uint32_t reserved1 = 0;
  double max_abs = 0.0, min_abs_nonzero = 0.0;
  std::int64_t overflow_count = 0, underflow_count = 0, subnormal_count = 0, flushed_count = 0;
  std::uint64_t payload_bytes = 0;
};

/// Bytes of the arrays for the given sizes (both row_ptr arrays, col_idx, values, metadata).
std::uint64_t payload_bytes_for(std::int64_t tile_rows, std::int64_t sparse24_tiles, std::int64_t dense_tiles) {
  const std::uint64_t row_ptrs = 2 * (static_cast<std::uint64_t>(tile_rows) + 1) * 4;
  const std::uint64_t sparse = static_cast<std::uint64_t>(sparse24_tiles) * (4 + kSparseTileValues * 2 + kSparseTileMetaWords * 4);
  const std::uint64_t dense = static_cast<std::uint64_t>(dense_tiles) * (4 + kDenseTileValues * 2);
  return row_ptrs + sparse + dense;
}

// ---- writing -------------------------------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "wb")) {
    if (!file_) throw Error("save_bcsr24: cannot open " + path + " for writing: " + std::strerror(errno));
  }
  ~Writer() {
    if (file_) std::fclose(file_);
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Writes bytes; `checksummed` bytes also enter the CRC.
  void bytes(const void* data, std::size_t size, bool checksummed = true) {
    if (size == 0) return;
    if (std::fwrite(data, 1, size, file_) != size)
      throw Error("save_bcsr24: write to " + path_ + " failed: " + std::strerror(errno));
    if (checksummed) crc_ = crc32_z(crc_, static_cast<const Bytef*>(data), size);
  }
  template <class T>
  void value(const T& v) { bytes(&v, sizeof v); }
  template <class T>
  void array(const std::vector<T>& v) { bytes(v.data(), v.size() * sizeof(T)); }

  void finish() {
    const auto crc = static_cast<std::uint32_t>(crc_);
    bytes(&crc, sizeof crc, false);
    const int rc = std::fclose(file_);
    file_ = nullptr;
    if (rc != 0) throw Error("save_bcsr24: closing " + path_ + " failed: " + std::strerror(errno));
  }

 private:
  std::string path_;
  std::FILE* file_;
  uLong crc_ = crc32_z(0L, Z_NULL, 0);
};

void check_list_sizes(const TileList& list, std::int32_t tile_rows, int values_per_tile, int meta_per_tile,
                      const char* name) {
  const std::size_t tiles = list.col_idx.size();
  if (list.row_ptr.size() != static_cast<std::size_t>(tile_rows) + 1 ||
      list.values.size() != tiles * static_cast<std::size_t>(values_per_tile) ||
      list.metadata.size() != tiles * static_cast<std::size_t>(meta_per_tile))
    throw InvalidArgument(std::string("save_bcsr24: the ") + name + " list's array sizes are inconsistent");
}

// ---- reading -------------------------------------------------------------------------------------------

/// Reads fields in order from a byte buffer whose length has already been checked.
class Reader {
 public:
  explicit Reader(const std::vector<unsigned char>& bytes) : bytes_(bytes) {}
  template <class T>
  T value() {
    T v;
    std::memcpy(&v, bytes_.data() + offset_, sizeof v);
    offset_ += sizeof v;
    return v;
  }
  template <class T>
  std::vector<T> array(std::int64_t count) {
    std::vector<T> v(static_cast<std::size_t>(count));
    if (count > 0) std::memcpy(v.data(), bytes_.data() + offset_, v.size() * sizeof(T));
    offset_ += v.size() * sizeof(T);
    return v;
  }
  void skip(std::size_t size) { offset_ += size; }
  std::size_t offset() const { return offset_; }

 private:
  const std::vector<unsigned char>& bytes_;
  std::size_t offset_ = 0;
};

std::vector<unsigned char> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw FileFormatError(path + ": cannot open .b24 file");
  const std::streamoff size = in.tellg();
  if (size < 0) throw FileFormatError(path + ": cannot determine the file size");
  // The buffer is as large as the file really is, so a corrupted count can never cause a huge allocation.
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size))
    throw FileFormatError(path + ": read error");
  return bytes;
}

/// Checks one list's row pointers and column indices (monotone, in range, strictly increasing per tile row).
void check_list_structure(const std::string& path, const TileList& list, const char* name, std::int32_t tile_cols) {
  const auto fail = [&](const std::string& why) {
    throw FileFormatError(path + ": " + name + " list: " + why);
  };
  if (list.row_ptr.front() != 0) fail("row_ptr[0] is " + std::to_string(list.row_ptr.front()) + ", expected 0");
  for (std::size_t tr = 0; tr + 1 < list.row_ptr.size(); ++tr) {
    const std::int32_t begin = list.row_ptr[tr], end = list.row_ptr[tr + 1];
    if (end < begin || end > list.tiles())
      fail("row_ptr is not monotone within [0, tiles] at tile row " + std::to_string(tr));
    for (std::int32_t t = begin; t < end; ++t) {
      const std::int32_t c = list.col_idx[static_cast<std::size_t>(t)];
      if (c < 0 || c >= tile_cols)
        fail("tile " + std::to_string(t) + " has tile column " + std::to_string(c) + " outside [0, " +
             std::to_string(tile_cols) + ")");
      if (t > begin && c <= list.col_idx[static_cast<std::size_t>(t) - 1])
        fail("tile columns of tile row " + std::to_string(tr) + " are not strictly increasing");
    }
  }
  if (list.row_ptr.back() != list.tiles())
    fail("row_ptr ends at " + std::to_string(list.row_ptr.back()) + " but the list has " +
         std::to_string(list.tiles()) + " tiles");
}

/// A tile column stored in both lists would be counted twice by the kernels.
void check_lists_disjoint(const std::string& path, const Bcsr24Matrix& a) {
  for (std::int32_t tr = 0; tr < a.tile_rows; ++tr) {
    std::int32_t s = a.sparse24.row_ptr[static_cast<std::size_t>(tr)];
    std::int32_t d = a.dense.row_ptr[static_cast<std::size_t>(tr)];
    const std::int32_t s_end = a.sparse24.row_ptr[static_cast<std::size_t>(tr) + 1];
    const std::int32_t d_end = a.dense.row_ptr[static_cast<std::size_t>(tr) + 1];
    while (s < s_end && d < d_end) {
      const std::int32_t cs = a.sparse24.col_idx[static_cast<std::size_t>(s)];
      const std::int32_t cd = a.dense.col_idx[static_cast<std::size_t>(d)];
      if (cs == cd)
        throw FileFormatError(path + ": tile (" + std::to_string(tr) + ", " + std::to_string(cs) +
                              ") is stored in both the 2:4 and the dense list");
      if (cs < cd) ++s; else ++d;
    }
  }
}

/// Values must be finite, metadata nibbles valid, and the padding of edge tiles zero (kernels may multiply it).
void check_tile_contents(const std::string& path, const Bcsr24Matrix& a) {
  for (std::size_t i = 0; i < a.sparse24.values.size() || i < a.dense.values.size(); ++i) {
    if ((i < a.sparse24.values.size() && (a.sparse24.values[i] & 0x7C00u) == 0x7C00u) ||
        (i < a.dense.values.size() && (a.dense.values[i] & 0x7C00u) == 0x7C00u))
      throw FileFormatError(path + ": a stored value is infinite or NaN");
  }
  for (std::int64_t t = 0; t < a.sparse24.tiles(); ++t)
    if (!detail::sparse24_metadata_valid(a.sparse24.metadata.data() + t * kSparseTileMetaWords))
      throw FileFormatError(path + ": 2:4 tile " + std::to_string(t) + " has a metadata nibble mma.sp rejects");

  const std::int32_t last_rows = a.rows - (a.tile_rows - 1) * kTileRows;  // rows used in the last tile row
  const std::int32_t last_cols = a.cols - (a.tile_cols - 1) * kTileCols;  // columns used in the last tile column
  detail::TileElements tile;
  const auto check_padding = [&](std::int32_t tr, std::int32_t tc, const char* name) {
    const int used_rows = tr == a.tile_rows - 1 ? last_rows : kTileRows;
    const int used_cols = tc == a.tile_cols - 1 ? last_cols : kTileCols;
    for (int r = 0; r < kTileRows; ++r)
      for (int c = 0; c < kTileCols; ++c)
        if ((r >= used_rows || c >= used_cols) && (tile[static_cast<std::size_t>(r * kTileCols + c)] & 0x7FFFu) != 0)
          throw FileFormatError(path + ": " + name + " tile (" + std::to_string(tr) + ", " + std::to_string(tc) +
                                ") has a nonzero outside the matrix");
  };
  for (std::int32_t tr = 0; tr < a.tile_rows; ++tr) {
    for (std::int32_t t = a.sparse24.row_ptr[static_cast<std::size_t>(tr)]; t < a.sparse24.row_ptr[static_cast<std::size_t>(tr) + 1]; ++t) {
      const std::int32_t tc = a.sparse24.col_idx[static_cast<std::size_t>(t)];
      if (tr != a.tile_rows - 1 && tc != a.tile_cols - 1) continue;  // interior tiles have no padding
      detail::unpack_sparse24_tile(a.sparse24.values.data() + std::size_t(t) * kSparseTileValues,
                                   a.sparse24.metadata.data() + std::size_t(t) * kSparseTileMetaWords, tile);
      check_padding(tr, tc, "2:4");
    }
    for (std::int32_t t = a.dense.row_ptr[static_cast<std::size_t>(tr)]; t < a.dense.row_ptr[static_cast<std::size_t>(tr) + 1]; ++t) {
      const std::int32_t tc = a.dense.col_idx[static_cast<std::size_t>(t)];
      if (tr != a.tile_rows - 1 && tc != a.tile_cols - 1) continue;
      detail::unpack_dense_tile(a.dense.values.data() + std::size_t(t) * kDenseTileValues, tile);
      check_padding(tr, tc, "dense");
    }
  }
}

}  // namespace

void save_bcsr24(const std::string& path, const Bcsr24Matrix& a) {
  check_list_sizes(a.sparse24, a.tile_rows, kSparseTileValues, kSparseTileMetaWords, "2:4");
  check_list_sizes(a.dense, a.tile_rows, kDenseTileValues, 0, "dense");

  Writer w(path);
  w.bytes(kMagic, sizeof kMagic, false);
  Header h;
  h.version = kB24FileVersion;
  h.rows = a.rows;
  h.cols = a.cols;
  h.tile_rows = a.tile_rows;
  h.tile_cols = a.tile_cols;
  h.nnz = a.nnz;
  h.sparse24_nnz = a.sparse24_nnz;
  h.dense_nnz = a.dense_nnz;
  h.sparse24_tiles = a.sparse24.tiles();
  h.dense_tiles = a.dense.tiles();
  h.exponent = a.scaling.exponent;
  h.max_abs = a.scaling.max_abs;
  h.min_abs_nonzero = a.scaling.min_abs_nonzero;
  h.overflow_count = a.scaling.overflow_count;
  h.underflow_count = a.scaling.underflow_count;
  h.subnormal_count = a.scaling.subnormal_count;
  h.flushed_count = a.scaling.flushed_count;
  h.payload_bytes = payload_bytes_for(a.tile_rows, h.sparse24_tiles, h.dense_tiles);
  // Field by field (never the struct as a whole: no padding bytes reach the file).
  w.value(h.version);
  w.value(h.reserved0);
  w.value(h.rows);
  w.value(h.cols);
  w.value(h.tile_rows);
  w.value(h.tile_cols);
  w.value(h.nnz);
  w.value(h.sparse24_nnz);
  w.value(h.dense_nnz);
  w.value(h.sparse24_tiles);
  w.value(h.dense_tiles);
  w.value(h.exponent);
  w.value(h.reserved1);
  w.value(h.max_abs);
  w.value(h.min_abs_nonzero);
  w.value(h.overflow_count);
  w.value(h.underflow_count);
  w.value(h.subnormal_count);
  w.value(h.flushed_count);
  w.value(h.payload_bytes);
  w.array(a.sparse24.row_ptr);
  w.array(a.sparse24.col_idx);
  w.array(a.sparse24.values);
  w.array(a.sparse24.metadata);
  w.array(a.dense.row_ptr);
  w.array(a.dense.col_idx);
  w.array(a.dense.values);
  w.finish();
}

Bcsr24Matrix load_bcsr24(const std::string& path) {
  const std::vector<unsigned char> bytes = read_whole_file(path);
  const auto fail = [&](const std::string& why) { throw FileFormatError(path + ": " + why); };

  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    fail("not a .b24 file (the first 8 bytes are not \"BCSR24\\0\\0\")");
  if (bytes.size() < kHeaderBytes + kTrailerBytes)
    fail("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
         std::to_string(kHeaderBytes + kTrailerBytes) + "-byte header and trailer");

  Reader r(bytes);
  r.skip(sizeof kMagic);
  Header h;
  h.version = r.value<std::uint32_t>();
  if (h.version != kB24FileVersion)
    fail(".b24 version " + std::to_string(h.version) + "; this build reads version " + std::to_string(kB24FileVersion) +
         " (re-run the conversion to regenerate the file)");
  h.reserved0 = r.value<std::uint32_t>();
  h.rows = r.value<std::int32_t>();
  h.cols = r.value<std::int32_t>();
  h.tile_rows = r.value<std::int32_t>();
  h.tile_cols = r.value<std::int32_t>();
  h.nnz = r.value<std::int64_t>();
  h.sparse24_nnz = r.value<std::int64_t>();
  h.dense_nnz = r.value<std::int64_t>();
  h.sparse24_tiles = r.value<std::int64_t>();
  h.dense_tiles = r.value<std::int64_t>();
  h.exponent = r.value<std::int32_t>();
  h.reserved1 = r.value<std::uint32_t>();
  h.max_abs = r.value<double>();
  h.min_abs_nonzero = r.value<double>();
  h.overflow_count = r.value<std::int64_t>();
  h.underflow_count = r.value<std::int64_t>();
  h.subnormal_count = r.value<std::int64_t>();
  h.flushed_count = r.value<std::int64_t>();
  h.payload_bytes = r.value<std::uint64_t>();
  if (r.offset() != kHeaderBytes) fail("internal error: header size mismatch");

  // Sizes first, so every later count is known to fit in the file that is really there.
  if (h.rows < 0 || h.cols < 0) fail("negative matrix dimensions in the header");
  if (h.tile_rows != (std::int64_t{h.rows} + kTileRows - 1) / kTileRows ||
      h.tile_cols != (std::int64_t{h.cols} + kTileCols - 1) / kTileCols)
    fail("tile grid " + std::to_string(h.tile_rows) + " x " + std::to_string(h.tile_cols) +
         " does not match the matrix size " + std::to_string(h.rows) + " x " + std::to_string(h.cols));
  const std::int64_t grid = std::int64_t{h.tile_rows} * h.tile_cols;
  if (h.sparse24_tiles < 0 || h.dense_tiles < 0 || h.sparse24_tiles > grid || h.dense_tiles > grid - h.sparse24_tiles)
    fail("tile counts " + std::to_string(h.sparse24_tiles) + " + " + std::to_string(h.dense_tiles) +
         " do not fit the " + std::to_string(grid) + "-tile grid");
  const std::uint64_t payload = payload_bytes_for(h.tile_rows, h.sparse24_tiles, h.dense_tiles);
  if (h.payload_bytes != payload) fail("payload size in the header disagrees with the tile counts");
  const std::uint64_t expected = kHeaderBytes + payload + kTrailerBytes;
  if (bytes.size() != expected)
    fail(std::string(bytes.size() < expected ? "truncated" : "trailing bytes") + ": the header describes " +
         std::to_string(expected) + " bytes, the file has " + std::to_string(bytes.size()));

  std::uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + bytes.size() - kTrailerBytes, sizeof stored_crc);
  const auto crc = static_cast<std::uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), bytes.data() + sizeof kMagic, bytes.size() - sizeof kMagic - kTrailerBytes));
  if (crc != stored_crc) fail("checksum mismatch: the file is corrupted");

  // Each count is bounded by its tiles' capacity before they are added, so the sum cannot overflow.
  if (h.sparse24_nnz < 0 || h.dense_nnz < 0 || h.sparse24_nnz > h.sparse24_tiles * kSparseTileValues ||
      h.dense_nnz > h.dense_tiles * kDenseTileValues || h.sparse24_nnz + h.dense_nnz != h.nnz)
    fail("nonzero counts are inconsistent with the tile counts");
  if (h.exponent < -kMaxAbsExponent || h.exponent > kMaxAbsExponent)
    fail("scale exponent " + std::to_string(h.exponent) + " is out of range");

  Bcsr24Matrix a;
  a.rows = h.rows;
  a.cols = h.cols;
  a.tile_rows = h.tile_rows;
  a.tile_cols = h.tile_cols;
  a.nnz = h.nnz;
  a.sparse24_nnz = h.sparse24_nnz;
  a.dense_nnz = h.dense_nnz;
  a.scaling.exponent = h.exponent;
  a.scaling.max_abs = h.max_abs;
  a.scaling.min_abs_nonzero = h.min_abs_nonzero;
  a.scaling.overflow_count = h.overflow_count;
  a.scaling.underflow_count = h.underflow_count;
  a.scaling.subnormal_count = h.subnormal_count;
  a.scaling.flushed_count = h.flushed_count;
  a.sparse24.row_ptr = r.array<std::int32_t>(std::int64_t{h.tile_rows} + 1);
  a.sparse24.col_idx = r.array<std::int32_t>(h.sparse24_tiles);
  a.sparse24.values = r.array<fp16_t>(h.sparse24_tiles * kSparseTileValues);
  a.sparse24.metadata = r.array<std::uint32_t>(h.sparse24_tiles * kSparseTileMetaWords);
  a.dense.row_ptr = r.array<std::int32_t>(std::int64_t{h.tile_rows} + 1);
  a.dense.col_idx = r.array<std::int32_t>(h.dense_tiles);
  a.dense.values = r.array<fp16_t>(h.dense_tiles * kDenseTileValues);

  check_list_structure(path, a.sparse24, "2:4", a.tile_cols);
  check_list_structure(path, a.dense, "dense", a.tile_cols);
  check_lists_disjoint(path, a);
  check_tile_contents(path, a);
  return a;
}

}  // namespace bcsr24
