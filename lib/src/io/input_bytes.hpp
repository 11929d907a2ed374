// Getting a Matrix Market file's text into memory: reading the file and inflating gzip content.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace bcsr24::io {

/// The whole content of a file, as stored (possibly compressed). Regular files are memory-mapped: the
/// parser reads the page cache directly, with no copy and no fresh buffer to fault in (on the
/// development VM, faulting in a 100 MB buffer costs as much as parsing a third of it). Pipes and
/// special files, or a failed mmap, fall back to reading into a buffer.
class FileBytes {
 public:
  /// @throw ParseError (line 0) when the file cannot be opened or read.
  explicit FileBytes(const std::string& path);
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  const char* data() const noexcept { return mapped_ != nullptr ? mapped_ : buffer_.data(); }
  std::size_t size() const noexcept { return mapped_ != nullptr ? mapped_size_ : buffer_.size(); }

 private:
  char* mapped_ = nullptr;
  std::size_t mapped_size_ = 0;
  std::vector<char> buffer_;
};

/// Compression recognised by its magic bytes, whatever the file name says (a lone 0x1f byte counts as gzip cut
/// short).
enum class Compression { none, gzip, bzip2, xz, zstd };

Compression detect_compression(const char* data, std::size_t size) noexcept;

/// The inflated content of gzip data (all members of a multi-member file).
/// @throw ParseError for corrupt gzip data (line 0: "corrupt gzip data: " and zlib's reason, e.g. "incorrect
///        data check" for a CRC mismatch) and for truncated data ("truncated gzip stream", at the line of the
///        text where it breaks off, or line 0 when no text came out).
std::vector<char> gunzip(const char* data, std::size_t size, const std::string& name);

/// Throws ParseError (line 0) for compressions we recognise but do not inflate.
void reject_unsupported_compression(Compression c, const std::string& name);

}  // namespace bcsr24::io
