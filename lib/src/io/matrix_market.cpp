// Matrix Market entry points: bytes (file or memory, gzip inflated) -> header -> body -> CSR; and the writer.
#include "bcsr24/matrix_market.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "bcsr24/error.hpp"
#include "io/input_bytes.hpp"
#include "io/mm_array_body.hpp"
#include "io/mm_coordinate_body.hpp"
#include "io/mm_header.hpp"
#include "io/mm_text.hpp"

namespace bcsr24 {

namespace io {

void throw_parse_error(const std::string& name, std::int64_t line, const std::string& problem) {
  throw ParseError(name, line, problem);
}

void throw_size_limit(const std::string& name, std::int64_t line, const std::string& problem) {
  throw SizeLimitError(name + ":" + std::to_string(line) + ": " + problem);
}

MatrixMarketInfo to_info(const MmBanner& banner) {
  MatrixMarketInfo info;
  info.format = banner.format == MmFormat::coordinate ? "coordinate" : "array";
  switch (banner.field) {
    case MmField::real: info.field = "real"; break;
    case MmField::double_: info.field = "double"; break;
    case MmField::integer: info.field = "integer"; break;
    case MmField::pattern: info.field = "pattern"; break;
    case MmField::complex: info.field = "complex"; break;
  }
  switch (banner.symmetry) {
    case MmSymmetry::general: info.symmetry = "general"; break;
    case MmSymmetry::symmetric: info.symmetry = "symmetric"; break;
    case MmSymmetry::skew_symmetric: info.symmetry = "skew-symmetric"; break;
    case MmSymmetry::hermitian: info.symmetry = "hermitian"; break;
  }
  info.rows = banner.rows;
  info.cols = banner.cols;
  info.entries = banner.entries;
  return info;
}

}  // namespace io

namespace {

/// Each value was checked finite as it was read, but summing duplicates can still overflow (two entries
/// of 1e308 at one position): refuse that too, as the fp16 conversion downstream would make it inf.
void check_sums_finite(const CsrMatrix& a, const std::string& name) {
  for (std::int32_t r = 0; r < a.rows; ++r)
    for (std::int32_t k = a.row_ptr[static_cast<std::size_t>(r)]; k < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++k)
      if (!std::isfinite(a.values[static_cast<std::size_t>(k)]))
        throw ParseError(name, 0,
                         "the duplicate entries at (" + std::to_string(r + 1) + ", " +
                             std::to_string(a.col_idx[static_cast<std::size_t>(k)] + 1) +
                             ") sum beyond the double range");
}

/// Parses uncompressed Matrix Market text.
CsrMatrix parse_text(const char* data, std::size_t size, const std::string& name, const MatrixMarketOptions& options,
                     MatrixMarketInfo* info) {
  const io::MmHeader header = io::parse_header(data, size, name);
  CsrMatrix a;
  if (header.info.format == io::MmFormat::array) {
    a = io::parse_array_body(data, size, header, name);
  } else {
    const io::Triplets t = io::parse_coordinate_body(data, size, header, name, options);
    a = csr_from_triplets(static_cast<std::int32_t>(header.info.rows), static_cast<std::int32_t>(header.info.cols), t.row,
                          t.col, t.value);
    check_sums_finite(a, name);
  }
  if (info != nullptr) *info = io::to_info(header.info);
  return a;
}

CsrMatrix parse_bytes(const char* data, std::size_t size, const std::string& name, const MatrixMarketOptions& options,
                      MatrixMarketInfo* info) {
  // Compression is told by content, not by the file name: a .mtx that is really gzip still reads.
  const io::Compression compression = io::detect_compression(data, size);
  if (compression == io::Compression::gzip) {
    const std::vector<char> text = io::gunzip(data, size, name);
    return parse_text(text.data(), text.size(), name, options, info);
  }
  io::reject_unsupported_compression(compression, name);
  return parse_text(data, size, name, options, info);
}

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

}  // namespace

CsrMatrix read_matrix_market(const std::string& path, const MatrixMarketOptions& options, MatrixMarketInfo* info) {
  const io::FileBytes bytes(path);
  return parse_bytes(bytes.data(), bytes.size(), path, options, info);
}

CsrMatrix read_matrix_market_from_memory(const char* data, std::size_t size, const std::string& name,
                                         const MatrixMarketOptions& options, MatrixMarketInfo* info) {
  if (data == nullptr && size != 0) throw InvalidArgument("read_matrix_market_from_memory: null data with nonzero size");
  return parse_bytes(data, size, name, options, info);
}

void write_matrix_market(const std::string& path, const CsrMatrix& a) {
  validate_csr(a);
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) throw Error("cannot open '" + path + "' for writing: " + std::strerror(errno));

  // Formatted by hand into a large buffer: fprintf per entry would make writing a benchmark file slow.
  // Each line is formatted into `line` first (bounded, so to_chars cannot run out of room), then appended.
  std::string out;
  constexpr std::size_t kFlushBytes = std::size_t{1} << 20;
  out.reserve(kFlushBytes + 128);
  auto flush = [&] {
    if (!out.empty() && std::fwrite(out.data(), 1, out.size(), file.get()) != out.size())
      throw Error("cannot write '" + path + "': " + std::strerror(errno));
    out.clear();
  };
  // Two 11-character indices and a 24-character shortest round-trip double fit easily.
  char line[96];
  auto append_line = [&](std::int64_t i, std::int64_t j, const double* value, std::int64_t count) {
    char* p = line;
    char* const end = line + sizeof line;
    p = std::to_chars(p, end, i).ptr;
    *p++ = ' ';
    p = std::to_chars(p, end, j).ptr;
    *p++ = ' ';
    // Shortest representation that reads back to the same double.
    p = value != nullptr ? std::to_chars(p, end, *value).ptr : std::to_chars(p, end, count).ptr;
    *p++ = '\n';
    out.append(line, static_cast<std::size_t>(p - line));
  };
  out += "%%MatrixMarket matrix coordinate real general\n";
  append_line(a.rows, a.cols, nullptr, a.nnz());
  for (std::int32_t r = 0; r < a.rows; ++r) {
    for (std::int32_t k = a.row_ptr[static_cast<std::size_t>(r)]; k < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++k) {
      append_line(static_cast<std::int64_t>(r) + 1, static_cast<std::int64_t>(a.col_idx[static_cast<std::size_t>(k)]) + 1,
                  &a.values[static_cast<std::size_t>(k)], 0);
      if (out.size() >= kFlushBytes) flush();
    }
  }
  flush();
  if (std::fclose(file.release()) != 0) throw Error("cannot write '" + path + "': " + std::strerror(errno));
}

}  // namespace bcsr24
