// .b24 files: a fixed little-endian header, the row map, the row exponents, the two tile lists' arrays, the tuned
// choices (version 4) and a CRC-32 trailer (docs/FORMAT.md). Writes version 3, or 4 with tuned choices; reads 1 to 4.
#include "format/serialize.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "bcsr24/error.hpp"
#include "format/b24_content_check.hpp"
#include "format/b24_header.hpp"
#include "format/layout_check.hpp"
#include "format/serialize_memory.hpp"
#include "format/tile_codec.hpp"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, ".b24 files are little-endian; this code writes native order");
#endif

namespace bcsr24 {

namespace {

using namespace detail::b24;

static_assert(kB24FileVersion == 4 && kB24OldestFileVersion == 1, "update the reading paths of load_bcsr24");

/// Why a tuned choice cannot be stored, or "" (the same rules for writing and reading).
std::string tuned_choice_problem(const B24TunedChoice& c) {
  if (c.n < 1) return "n = " + std::to_string(c.n);
  if (c.input < 1 || c.input > 3) return "B type code " + std::to_string(c.input);
  if (c.output > 1) return "output type code " + std::to_string(c.output);
  if (c.paths < 1 || c.paths > 5) return "paths code " + std::to_string(c.paths);
  if (c.split_long_bands > 1 || c.band_groups > 1) return "a flag that is neither 0 nor 1";
  if (c.tile_pipeline < 1 || c.tile_pipeline > 2) return "pipeline code " + std::to_string(c.tile_pipeline);
  if (c.device.empty() || c.device.size() > kMaxDeviceNameBytes)
    return "a device name of " + std::to_string(c.device.size()) + " bytes (1 to 255)";
  if (!(std::isfinite(c.measured_us) && (c.measured_us >= 0.0 || c.measured_us == -1.0)))
    return "a measured time that is neither >= 0 nor -1";
  return "";
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
                      TileLayout layout, const char* name) {
  const std::size_t tiles = list.col_idx.size();
  if (list.row_ptr.size() != static_cast<std::size_t>(tile_rows) + 1 ||
      list.values.size() != tiles * static_cast<std::size_t>(values_per_tile) ||
      list.metadata.size() != tiles * static_cast<std::size_t>(meta_per_tile))
    throw InvalidArgument(std::string("save_bcsr24: the ") + name + " list's array sizes are inconsistent");
  // values_lo against values: layout_problem (the caller runs it).
  if (!list.b_rows.empty() && list.b_rows.size() != tiles * kTileCols)
    throw InvalidArgument(std::string("save_bcsr24: the ") + name + " list has " + std::to_string(list.b_rows.size()) +
                          " b_rows entries; expected 0 or 32 per tile (" + std::to_string(tiles * kTileCols) + ")");
  if (layout == TileLayout::condensed && tiles > 0 && list.b_rows.empty())
    throw InvalidArgument(std::string("save_bcsr24: condensed layout but the ") + name + " list has no b_rows");
}

// ---- reading -------------------------------------------------------------------------------------------

/// Reads fields in order from a byte buffer whose length has already been checked.
class Reader {
 public:
  explicit Reader(const unsigned char* bytes) : bytes_(bytes) {}
  template <class T>
  T value() {
    T v;
    std::memcpy(&v, bytes_ + offset_, sizeof v);
    offset_ += sizeof v;
    return v;
  }
  template <class T>
  std::vector<T> array(std::int64_t count) {
    std::vector<T> v(static_cast<std::size_t>(count));
    if (count > 0) std::memcpy(v.data(), bytes_ + offset_, v.size() * sizeof(T));
    offset_ += v.size() * sizeof(T);
    return v;
  }
  void skip(std::size_t size) { offset_ += size; }
  std::size_t offset() const { return offset_; }

 private:
  const unsigned char* bytes_;
  std::size_t offset_ = 0;
};

/// Closes the descriptor on every exit path, exceptions included.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

/// The whole file, in a buffer of the size the file really has, so that a damaged count can never cause a
/// large allocation. Only regular files: a directory reports a nonsense size (2^63 - 1 on ext4) and a device
/// may never end.
std::vector<unsigned char> read_whole_file(const std::string& path) {
  FileDescriptor file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) throw ParseError(path, 0, std::string("cannot open .b24 file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0)
    throw ParseError(path, 0, std::string("cannot stat the file: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw ParseError(path, 0, std::string(S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file") +
                                  ", not a .b24 file");
  std::vector<unsigned char> bytes(static_cast<std::size_t>(st.st_size));
  std::size_t used = 0;
  while (used < bytes.size()) {
    const ::ssize_t got = ::read(file.fd, bytes.data() + used, bytes.size() - used);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw ParseError(path, 0, std::string("read error: ") + std::strerror(errno));
    if (got == 0) break;  // shrank since fstat: what is there is checked like any short file
    used += static_cast<std::size_t>(got);
  }
  bytes.resize(used);
  return bytes;
}

}  // namespace

void save_bcsr24(const std::string& path, const Bcsr24Matrix& a, const std::vector<B24TunedChoice>& choices) {
  for (const B24TunedChoice& c : choices)
    if (const std::string problem = tuned_choice_problem(c); !problem.empty())
      throw InvalidArgument("save_bcsr24: a tuned choice has " + problem);
  if (a.layout != TileLayout::aligned && a.layout != TileLayout::condensed)
    throw InvalidArgument("save_bcsr24: the matrix's layout must be aligned or condensed (not automatic)");
  if (a.reordering != Reordering::none && a.reordering != Reordering::rcm)
    throw InvalidArgument("save_bcsr24: the matrix's reordering must be none or rcm (not automatic)");
  check_list_sizes(a.sparse24, a.tile_rows, kSparseTileValues, kSparseTileMetaWords, a.layout, "2:4");
  check_list_sizes(a.dense, a.tile_rows, kDenseTileValues, 0, a.layout, "dense");
  if (const std::string problem = detail::layout_problem(a); !problem.empty())
    throw InvalidArgument("save_bcsr24: " + problem);
  if (a.row_exponent.size() != (a.scaling.per_row ? static_cast<std::size_t>(a.rows) : 0))
    throw InvalidArgument(std::string("save_bcsr24: scaling.per_row is ") + (a.scaling.per_row ? "true" : "false") +
                          " but the matrix has " + std::to_string(a.row_exponent.size()) + " row exponents");

  Writer w(path);
  w.bytes(kMagic, sizeof kMagic, false);
  Header h;
  h.version = choices.empty() ? kB24VersionWithoutChoices : kB24FileVersion;
  h.layout = static_cast<std::uint8_t>(a.layout);
  h.reordering = static_cast<std::uint8_t>(a.reordering);
  h.precision = static_cast<std::uint8_t>(a.precision);
  for_each_shared_field(a, h, [](const auto& from, auto& to) { to = from; });
  h.sparse24_tiles = a.sparse24.tiles();
  h.dense_tiles = a.dense.tiles();
  h.row_order_count = static_cast<std::int64_t>(a.row_order.size());
  h.sparse24_b_rows_count = static_cast<std::int64_t>(a.sparse24.b_rows.size());
  h.dense_b_rows_count = static_cast<std::int64_t>(a.dense.b_rows.size());
  h.row_exponent_count = static_cast<std::int64_t>(a.row_exponent.size());
  h.payload_bytes = payload_bytes_for(h);
  w.value(h.version);
  for_each_header_field(h, h.version, [&](const auto& field) { w.value(field); });
  w.array(a.row_order);
  w.array(a.row_exponent);
  for (const TileList* list : {&a.sparse24, &a.dense}) {
    w.array(list->row_ptr);
    w.array(list->col_idx);
    w.array(list->values);
    w.array(list->values_lo);
    w.array(list->metadata);  // empty in the dense list (check_list_sizes)
    w.array(list->b_rows);
  }
  if (!choices.empty()) {
    w.value(static_cast<std::uint32_t>(choices.size()));
    for (const B24TunedChoice& c : choices) {
      w.value(c.n);
      for (const std::uint8_t code : {c.input, c.output, c.paths, c.split_long_bands, c.tile_pipeline, c.band_groups})
        w.value(code);
      w.value(static_cast<std::uint16_t>(c.device.size()));
      w.value(c.measured_us);
      w.bytes(c.device.data(), c.device.size());
    }
  }
  w.finish();
}

namespace {

/// The header fields after the version, in the order of the file's version.
Header read_header(Reader& r, std::uint32_t version) {
  Header h;
  h.version = version;
  for_each_header_field(h, version, [&](auto& field) { field = r.value<std::remove_reference_t<decltype(field)>>(); });
  return h;
}

/// The bytes of a version-4 tuned-choice section at `start`, as its count and name lengths describe it, read only
/// where they lie inside the file of `size` bytes (before its 4-byte trailer): where the section runs past the
/// file, the bytes up to the first field that does not fit, so that the described size exceeds the file's. Like
/// the header's counts, this only tells truncation from corruption: it runs before the checksum, reads no byte
/// outside the file and takes at most size / 20 steps whatever the bytes say.
std::uint64_t tuned_choice_bytes(const unsigned char* bytes, std::uint64_t start, std::size_t size) {
  std::uint64_t pos = start + kChoiceCountBytes;
  if (pos + kTrailerBytes > size) return pos - start;
  std::uint32_t count;
  std::memcpy(&count, bytes + start, sizeof count);
  for (std::uint32_t i = 0; i < count; ++i) {
    if (pos + kChoiceFixedBytes + kTrailerBytes > size) return pos + kChoiceFixedBytes - start;
    std::uint16_t name_bytes;
    std::memcpy(&name_bytes, bytes + pos + kChoiceNameLengthOffset, sizeof name_bytes);
    pos += kChoiceFixedBytes + name_bytes;
  }
  return pos - start;
}

/// Whether the header's counts describe a file of the size at hand.
struct SizeCheck {
  std::string problem;        ///< the first inconsistency, "" when there is none
  std::uint64_t described = 0;  ///< the file size the header describes, once its counts are consistent (else 0)
};

/// Every count is bounded (by the grid, by kMaxTiles or as 0 or a multiple of another count) before it enters a
/// sum, so this is safe on any header, however damaged; and as the described size must equal the real one, no
/// later step can allocate more than the file holds.
SizeCheck check_sizes(const Header& h, const unsigned char* bytes, std::size_t header_bytes, std::size_t size) {
  const auto problem = [](std::string why) { return SizeCheck{std::move(why), 0}; };
  if (h.rows < 0 || h.cols < 0) return problem("negative matrix dimensions in the header");
  if (h.tile_rows != (std::int64_t{h.rows} + kTileRows - 1) / kTileRows ||
      h.tile_cols != (std::int64_t{h.cols} + kTileCols - 1) / kTileCols)
    return problem("tile grid " + std::to_string(h.tile_rows) + " x " + std::to_string(h.tile_cols) +
                   " does not match the matrix size " + std::to_string(h.rows) + " x " + std::to_string(h.cols));
  const std::int64_t grid = std::int64_t{h.tile_rows} * h.tile_cols;
  const std::string tiles = std::to_string(h.sparse24_tiles) + " + " + std::to_string(h.dense_tiles);
  if (h.sparse24_tiles < 0 || h.dense_tiles < 0) return problem("negative tile counts " + tiles);
  // Aligned tiles are cells of the grid. Condensed bands are counted by ordinal, so bound them by the file.
  if (h.layout == static_cast<std::uint8_t>(TileLayout::aligned) &&
      (h.sparse24_tiles > grid || h.dense_tiles > grid - h.sparse24_tiles))
    return problem("tile counts " + tiles + " do not fit the " + std::to_string(grid) + "-tile grid");
  // Not bounded by the file size: a cut file must still be seen to describe a longer one.
  if (h.sparse24_tiles > kMaxTiles || h.dense_tiles > kMaxTiles)
    return problem("tile counts " + tiles + " are beyond any file (more than 2^40 tiles)");
  const std::int64_t band_rows = std::int64_t{h.tile_rows} * kTileRows;
  if (h.row_order_count != 0 && h.row_order_count != band_rows)
    return problem("row_order has " + std::to_string(h.row_order_count) + " entries; expected 0 or 16 per tile row (" +
                   std::to_string(band_rows) + ")");
  for (const auto& [count, list_tiles, name] : {std::tuple{h.sparse24_b_rows_count, h.sparse24_tiles, "2:4"},
                                                std::tuple{h.dense_b_rows_count, h.dense_tiles, "dense"}})
    if (count != 0 && count != list_tiles * kTileCols)
      return problem(std::string(name) + " list: b_rows has " + std::to_string(count) +
                     " entries; expected 0 or 32 per tile (" + std::to_string(list_tiles * kTileCols) + ")");
  if (h.row_exponent_count != (h.per_row ? std::int64_t{h.rows} : 0))
    return problem("row_exponent has " + std::to_string(h.row_exponent_count) + " entries; expected " +
                   (h.per_row ? "one per row (" + std::to_string(h.rows) + ") with" : std::string("0 without")) +
                   " the per-row flag");
  const std::uint64_t payload = payload_bytes_for(h);
  if (h.payload_bytes != payload) return problem("payload size in the header disagrees with the array sizes");
  const bool with_choices = h.version >= 4;
  const std::uint64_t described = header_bytes + payload + kTrailerBytes +
                                  (with_choices ? tuned_choice_bytes(bytes, header_bytes + payload, size) : 0);
  if (size == described) return {};
  return {std::string(size < described ? "truncated" : "trailing bytes") + ": the header" +
              (with_choices ? " and its tuned-choice section describe " : " describes ") + std::to_string(described) +
              " bytes, the file has " + std::to_string(size),
          described};
}

/// A .b24 file's problem as the error the loader throws.
[[noreturn]] void fail_load(const std::string& name, const std::string& why) {
  throw ParseError(name, 0, why);
}

/// The magic, the version and the room for the version's header and trailer; returns the version.
std::uint32_t check_magic_and_version(const unsigned char* bytes, std::size_t size, const std::string& name) {
  const auto fail = [&](const std::string& why) { fail_load(name, why); };
  if (size < sizeof kMagic) {
    // A prefix of the magic is a .b24 file cut short; anything else is some other file.
    if (size == 0) fail("truncated: the file is empty");
    if (std::memcmp(bytes, kMagic, size) == 0)
      fail("truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte magic");
  }
  if (size < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0)
    fail("not a .b24 file (the first 8 bytes are not \"BCSR24\\0\\0\")");
  if (size < kVersionEnd)
    fail("truncated: " + std::to_string(size) + " bytes, too short to hold the version");
  std::uint32_t version;
  std::memcpy(&version, bytes + sizeof kMagic, sizeof version);
  // Before the checksum: a newer version need not keep this header or trailer, and must be named as such.
  if (version < kB24OldestFileVersion || version > kB24FileVersion)
    fail("unsupported .b24 version " + std::to_string(version) + ": this build reads versions " +
         std::to_string(kB24OldestFileVersion) + " to " + std::to_string(kB24FileVersion) + " and writes version " +
         std::to_string(kB24VersionWithoutChoices) + " (" + std::to_string(kB24FileVersion) +
         " with tuned choices; re-run the conversion to regenerate the file)");
  return version;
}

/// The checksum covers every byte but the magic (compared before) and itself, so damage anywhere else, header
/// included, is named as damage here rather than as whatever odd value it produced. The header's sizes only
/// tell truncation from corruption.
void check_checksum(const unsigned char* bytes, std::size_t size, const SizeCheck& sizes, std::uint32_t version,
                    const std::string& name) {
  const auto fail = [&](const std::string& why) { fail_load(name, why); };
  std::uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes + size - kTrailerBytes, sizeof stored_crc);
  const auto crc = static_cast<std::uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), bytes + sizeof kMagic, size - sizeof kMagic - kTrailerBytes));
  if (crc == stored_crc) return;
  if (sizes.problem.empty()) fail("checksum mismatch: the file is corrupted");
  if (sizes.described != 0)
    fail(std::string(sizes.described > size ? "truncated or corrupted" : "corrupted or followed by other bytes") +
         " (checksum mismatch): the header" +
         (version >= 4 ? " and its tuned-choice section describe " : " describes ") +
         std::to_string(sizes.described) + " bytes, the file has " + std::to_string(size));
  fail("corrupted (checksum mismatch): " + sizes.problem);
}

/// The header of a file whose checksum matched: what is left to catch is a writer that broke the rules.
void check_header_fields(const Header& h, bool v1, const SizeCheck& sizes, const std::string& name) {
  const auto fail = [&](const std::string& why) { fail_load(name, why); };
  // Layout and reordering: version 1 files are aligned tiles in file order.
  if (h.layout > static_cast<std::uint8_t>(TileLayout::condensed))
    fail("layout byte " + std::to_string(h.layout) + " is not a stored layout (0 = aligned, 1 = condensed)");
  if (h.reordering > static_cast<std::uint8_t>(Reordering::rcm))
    fail("reordering byte " + std::to_string(h.reordering) + " is not a stored reordering (0 = none, 1 = rcm)");
  const auto layout = static_cast<TileLayout>(h.layout);
  if (!v1 && (h.reserved2 != 0 || h.reserved1 != 0)) fail("reserved header fields are not 0");
  // Precision fields: versions 1 and 2 are fp16 without row exponents (all 0 above).
  if (h.precision > static_cast<std::uint8_t>(Precision::split))
    fail("precision byte " + std::to_string(h.precision) + " is not a stored precision (0 = fp16, 1 = bf16, 2 = split)");
  if (h.per_row > 1) fail("per-row flag " + std::to_string(h.per_row) + " is neither 0 nor 1");
  if (h.reserved3 != 0 || h.reserved4 != 0) fail("reserved header fields are not 0");
  if (!sizes.problem.empty()) fail(sizes.problem);

  // Each count is bounded by its tiles' capacity before they are added, so the sum cannot overflow.
  if (h.sparse24_nnz < 0 || h.dense_nnz < 0 || h.sparse24_nnz > h.sparse24_tiles * kSparseTileValues ||
      h.dense_nnz > h.dense_tiles * kDenseTileValues || h.sparse24_nnz + h.dense_nnz != h.nnz)
    fail("nonzero counts are inconsistent with the tile counts");
  if (h.exponent < -kMaxAbsExponent || h.exponent > kMaxAbsExponent)
    fail("scale exponent " + std::to_string(h.exponent) + " is out of range");
  if (h.min_row_exponent < -kMaxAbsExponent || h.max_row_exponent > kMaxAbsExponent ||
      h.min_row_exponent > h.max_row_exponent)
    fail("row exponent range [" + std::to_string(h.min_row_exponent) + ", " + std::to_string(h.max_row_exponent) +
         "] is out of order or out of range");
  for (const double error : {h.max_flushed_relative, h.max_relative_error, h.frobenius_relative_error})
    if (!(std::isfinite(error) && error >= 0.0)) fail("a storage error field of the header is negative or not finite");
  if (layout == TileLayout::condensed) {
    if (h.sparse24_tiles > 0 && h.sparse24_b_rows_count == 0) fail("condensed layout but the 2:4 list has no b_rows");
    if (h.dense_tiles > 0 && h.dense_b_rows_count == 0) fail("condensed layout but the dense list has no b_rows");
  }
}

/// The tuned-choice section of a version 4 file. Its sizes matched the file's before (check_sizes): what is left
/// to check is its content.
std::vector<B24TunedChoice> read_tuned_choices(Reader& r, const unsigned char* bytes, std::size_t size,
                                               const std::string& name) {
  const auto fail = [&](const std::string& why) { fail_load(name, why); };
  const auto count = r.value<std::uint32_t>();
  if (count == 0) fail("tuned-choice section: no choices (version 4 files have at least one)");
  std::vector<B24TunedChoice> read;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::string which = "tuned-choice section: choice " + std::to_string(i) + " of " + std::to_string(count);
    if (size - kTrailerBytes - r.offset() < kChoiceFixedBytes) fail("internal error: " + which + " is cut short");
    B24TunedChoice c;
    c.n = r.value<std::int32_t>();
    for (std::uint8_t* code : {&c.input, &c.output, &c.paths, &c.split_long_bands, &c.tile_pipeline, &c.band_groups})
      *code = r.value<std::uint8_t>();
    const auto name_bytes = r.value<std::uint16_t>();
    c.measured_us = r.value<double>();
    if (size - kTrailerBytes - r.offset() < name_bytes)
      fail("internal error: " + which + "'s device name is cut short");
    c.device.assign(reinterpret_cast<const char*>(bytes + r.offset()), name_bytes);
    r.skip(name_bytes);
    if (const std::string problem = tuned_choice_problem(c); !problem.empty()) fail(which + " has " + problem);
    read.push_back(std::move(c));
  }
  return read;
}

}  // namespace

namespace detail {

Bcsr24Matrix load_bcsr24_bytes(const unsigned char* bytes, std::size_t size, const std::string& name,
                               std::vector<B24TunedChoice>* choices) {
  if (choices != nullptr) choices->clear();
  const auto fail = [&](const std::string& why) { fail_load(name, why); };
  const std::uint32_t version = check_magic_and_version(bytes, size, name);
  Reader r(bytes);
  r.skip(kVersionEnd);  // the magic and the version, checked above
  const bool v1 = version == 1;
  const std::size_t header_bytes = v1 ? kHeaderBytesV1 : version >= 3 ? kHeaderBytesV3 : kHeaderBytesV2;
  if (size < header_bytes + kTrailerBytes)
    fail("truncated: " + std::to_string(size) + " bytes, shorter than the " +
         std::to_string(header_bytes + kTrailerBytes) + "-byte header and trailer of a version " +
         std::to_string(version) + " file");
  const Header h = read_header(r, version);
  if (r.offset() != header_bytes) fail("internal error: header size mismatch");
  const SizeCheck sizes = check_sizes(h, bytes, header_bytes, size);
  check_checksum(bytes, size, sizes, version, name);
  // From here on the file is as it was written: what is left to catch is a writer that broke the rules.
  check_header_fields(h, v1, sizes, name);

  Bcsr24Matrix a;
  for_each_shared_field(a, h, [](auto& to, const auto& from) { to = from; });
  a.precision = static_cast<Precision>(h.precision);
  a.layout = static_cast<TileLayout>(h.layout);
  a.reordering = static_cast<Reordering>(h.reordering);
  a.row_order = r.array<std::int32_t>(h.row_order_count);
  a.row_exponent = r.array<std::int16_t>(h.row_exponent_count);
  const std::int64_t low_parts = is_split(h) ? 1 : 0;
  const auto read_list = [&](TileList& list, std::int64_t tiles, std::int64_t values_per_tile,
                             std::int64_t meta_per_tile, std::int64_t b_rows_count) {
    list.row_ptr = r.array<std::int32_t>(std::int64_t{h.tile_rows} + 1);
    list.col_idx = r.array<std::int32_t>(tiles);
    list.values = r.array<fp16_t>(tiles * values_per_tile);
    list.values_lo = r.array<fp16_t>(low_parts * tiles * values_per_tile);
    list.metadata = r.array<std::uint32_t>(tiles * meta_per_tile);
    list.b_rows = r.array<std::int32_t>(b_rows_count);
  };
  read_list(a.sparse24, h.sparse24_tiles, kSparseTileValues, kSparseTileMetaWords, h.sparse24_b_rows_count);
  read_list(a.dense, h.dense_tiles, kDenseTileValues, 0, h.dense_b_rows_count);
  if (h.version >= 4) {
    std::vector<B24TunedChoice> read = read_tuned_choices(r, bytes, size, name);
    if (choices != nullptr) *choices = std::move(read);
  }
  if (r.offset() != size - kTrailerBytes) fail("internal error: payload size mismatch");
  for (std::size_t i = 0; i < a.row_exponent.size(); ++i)
    if (a.row_exponent[i] < -kMaxAbsExponent || a.row_exponent[i] > kMaxAbsExponent)
      fail("row_exponent of row " + std::to_string(i) + " is " + std::to_string(a.row_exponent[i]) + ", out of range");

  if (const std::string problem = layout_problem(a); !problem.empty()) fail(problem);
  check_loaded_tiles(name, a);
  return a;
}

}  // namespace detail

Bcsr24Matrix load_bcsr24(const std::string& path, std::vector<B24TunedChoice>* choices) {
  const std::vector<unsigned char> bytes = read_whole_file(path);
  return detail::load_bcsr24_bytes(bytes.data(), bytes.size(), path, choices);
}

}  // namespace bcsr24
