// Reads a file into memory and inflates gzip content with zlib; other compressions are named and refused.
#include "io/input_bytes.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "bcsr24/error.hpp"

namespace bcsr24::io {

namespace {

/// Closes the descriptor on every exit path, including exceptions.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

FileBytes::FileBytes(const std::string& path) {
  FileDescriptor file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) throw ParseError(path, 0, std::string("cannot open file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw ParseError(path, 0, std::string("cannot stat file: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw ParseError(path, 0, "is a directory, not a Matrix Market file");

  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    // MAP_POPULATE maps the whole file up front instead of faulting it in page by page.
    void* m = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, file.fd, 0);
    if (m != MAP_FAILED) {
      mapped_ = static_cast<char*>(m);
      mapped_size_ = static_cast<std::size_t>(st.st_size);
      return;
    }
  }

  // st_size is a hint only (pipes and /proc files report 0): read until EOF, growing as needed.
  buffer_.resize(S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : std::size_t{1} << 16);
  std::size_t used = 0;
  while (true) {
    if (used == buffer_.size()) buffer_.resize(buffer_.size() * 2);
    const ::ssize_t got = ::read(file.fd, buffer_.data() + used, buffer_.size() - used);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw ParseError(path, 0, std::string("cannot read file: ") + std::strerror(errno));
    }
    if (got == 0) break;
    used += static_cast<std::size_t>(got);
  }
  buffer_.resize(used);
}

FileBytes::~FileBytes() {
  if (mapped_ != nullptr) ::munmap(mapped_, mapped_size_);
}

Compression detect_compression(const char* data, std::size_t size) noexcept {
  const auto* b = reinterpret_cast<const unsigned char*>(data);
  if (size >= 2 && b[0] == 0x1f && b[1] == 0x8b) return Compression::gzip;
  // A lone 0x1f is a gzip file cut after its first byte: no Matrix Market text starts with that control
  // character, and "truncated gzip stream" says more than "bad banner".
  if (size == 1 && b[0] == 0x1f) return Compression::gzip;
  if (size >= 3 && b[0] == 'B' && b[1] == 'Z' && b[2] == 'h') return Compression::bzip2;
  if (size >= 6 && std::memcmp(b, "\xfd" "7zXZ\x00", 6) == 0) return Compression::xz;
  if (size >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) return Compression::zstd;
  return Compression::none;
}

void reject_unsupported_compression(Compression c, const std::string& name) {
  const char* what = c == Compression::bzip2 ? "bzip2" : c == Compression::xz ? "xz" : c == Compression::zstd ? "zstd" : nullptr;
  if (what == nullptr) return;
  throw ParseError(name, 0,
                   std::string(what) + "-compressed input is not supported (only gzip is); decompress it first");
}

namespace {

/// The line (numbered as the parser numbers them: LF, CRLF and CR each end one line) that holds the last byte
/// of `text`; 0 for no text.
std::int64_t line_of_last_byte(const char* text, std::size_t size) {
  if (size == 0) return 0;
  std::int64_t line = 1;
  for (std::size_t i = 0; i + 1 < size; ++i)
    if (text[i] == '\n' || (text[i] == '\r' && text[i + 1] != '\n')) ++line;
  return line;
}

}  // namespace

std::vector<char> gunzip(const char* data, std::size_t size, const std::string& name) {
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip header and trailer (not a raw zlib stream).
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw ParseError(name, 0, "cannot initialise zlib");
  struct InflateEnd {
    z_stream* zs;
    ~InflateEnd() { inflateEnd(zs); }
  } guard{&zs};

  // Text compresses ~4-10x; start there and double, so a large file costs a few reallocations.
  constexpr std::size_t kMinOut = std::size_t{1} << 16;
  std::vector<char> out(size < kMinOut / 4 ? kMinOut : size * 4);
  std::size_t produced = 0;
  const auto* next_in = reinterpret_cast<const Bytef*>(data);
  std::size_t left_in = size;
  while (true) {
    if (produced == out.size()) out.resize(out.size() * 2);
    // zlib counts in uInt: feed and drain at most 1 GiB per call.
    constexpr std::size_t kStep = std::size_t{1} << 30;
    zs.next_in = const_cast<Bytef*>(next_in);
    zs.avail_in = static_cast<uInt>(left_in < kStep ? left_in : kStep);
    const std::size_t room = out.size() - produced;
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(room < kStep ? room : kStep);
    const uInt avail_in_before = zs.avail_in;
    const uInt avail_out_before = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const std::size_t consumed = avail_in_before - zs.avail_in;
    next_in += consumed;
    left_in -= consumed;
    produced += avail_out_before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (concatenated .gz files are valid gzip); anything else is refused
      // rather than silently ignored.
      if (left_in == 0) break;
      if (detect_compression(reinterpret_cast<const char*>(next_in), left_in) != Compression::gzip)
        throw ParseError(name, 0, "unexpected data after the end of the gzip stream");
      if (inflateReset(&zs) != Z_OK) throw ParseError(name, 0, "cannot reset zlib");
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      throw ParseError(name, 0, std::string("corrupt gzip data: ") + (zs.msg ? zs.msg : "inflate failed"));
    // No progress with room left to write: the input ran out before the end of the stream. The error names the
    // line where the text breaks off (or line 0 when none came out), which tells how much of the file arrived.
    // Damaged deflate data can look the same: a changed block header may claim more data than there is.
    const bool stalled = consumed == 0 && zs.avail_out == avail_out_before && produced < out.size();
    if (stalled) {
      const std::int64_t line = line_of_last_byte(out.data(), produced);
      throw ParseError(name, line,
                       line == 0 ? std::string("truncated gzip stream: it ends before any text")
                                 : "truncated gzip stream: the text breaks off in this line, after " +
                                       std::to_string(produced) + " bytes (the file is cut short, or damaged so "
                                       "that its data seems to go on)");
    }
  }
  out.resize(produced);
  return out;
}

}  // namespace bcsr24::io
