// A gzip Matrix Market file cut at every length and changed at every byte: every cut is a ParseError naming the
// file and the line where the text breaks off ("truncated gzip stream"), every change a ParseError or (only in
// the header fields gzip does not check) the same matrix; never a crash, never a smaller or different matrix.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"

namespace fs = std::filesystem;
using bcsr24::CsrMatrix;

namespace {

const std::string kName = "damaged.mtx.gz";

/// A 60 x 50 general coordinate file of 400 entries with full-precision values, comments before and after
/// the size line: about 9 KB of text, 4 KB compressed.
std::string sample_text() {
  std::mt19937_64 rng(35);
  std::string text = "%%MatrixMarket matrix coordinate real general\n% damaged gzip test\n%\n60 50 400\n";
  for (int k = 0; k < 400; ++k) {
    const auto row = 1 + rng() % 60, col = 1 + rng() % 50;
    const double value = double(std::int64_t(rng() >> 11) - (std::int64_t{1} << 52)) / double(std::int64_t{1} << 40);
    char line[64];
    std::snprintf(line, sizeof line, "%u %u %.17g\n", unsigned(row), unsigned(col), value);
    text += line;
  }
  return text;
}

std::string gzip(const std::string& text) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&zs, uLong(text.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = uInt(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = uInt(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

/// The oracle for a cut at `size` bytes: how much text zlib gets out of that prefix, fed in one call.
std::size_t text_bytes_of_prefix(const std::string& gz, std::size_t size, std::size_t text_size) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK);
  std::vector<char> out(text_size + 1);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = uInt(size);
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = uInt(out.size());
  const int rc = inflate(&zs, Z_NO_FLUSH);
  REQUIRE((rc == Z_OK || rc == Z_BUF_ERROR));  // a prefix is never an error, never the whole stream
  const std::size_t produced = zs.total_out;
  inflateEnd(&zs);
  return produced;
}

/// Line (1-based) of the last byte of the first `produced` bytes of an LF-only text; 0 for none.
std::int64_t line_of_last_byte(const std::string& text, std::size_t produced) {
  if (produced == 0) return 0;
  std::int64_t line = 1;
  for (std::size_t i = 0; i + 1 < produced; ++i) line += text[i] == '\n';
  return line;
}

bool same_matrix(const CsrMatrix& a, const CsrMatrix& b) {
  return a.rows == b.rows && a.cols == b.cols && a.row_ptr == b.row_ptr && a.col_idx == b.col_idx &&
         a.values.size() == b.values.size() &&
         std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(double)) == 0;
}

struct Outcome {
  std::int64_t variants = 0, refused = 0, same = 0;
  std::vector<std::string> broken;
  void note(const std::string& what) {
    if (broken.size() < 20) broken.push_back(what);
  }
  void require_clean() const {
    std::string list;
    for (const std::string& b : broken) list += "\n  " + b;
    INFO("first broken variants:" << list);
    REQUIRE(broken.empty());
  }
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("a .mtx.gz cut at every length is a ParseError at the line where the text breaks off", "[mm][gzip][damage]") {
  const std::string text = sample_text();
  const std::string gz = gzip(text);
  REQUIRE(gz.size() > 2000);
  const std::int64_t last_line = line_of_last_byte(text, text.size());
  REQUIRE(bcsr24::read_matrix_market_from_memory(gz.data(), gz.size(), kName).nnz() > 0);

  Outcome outcome;
  std::int64_t previous_line = 0, lines_named = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t size = 0; size < gz.size(); ++size) {
    const std::string variant = "cut to " + std::to_string(size) + " bytes";
    ++outcome.variants;
    try {
      bcsr24::read_matrix_market_from_memory(gz.data(), size, kName);
      outcome.note(variant + ": loaded");
      continue;
    } catch (const bcsr24::ParseError& e) {
      if (e.problem().find("not supported") != std::string::npos) {  // a gzip prefix is never refused on purpose
        outcome.note(variant + ": refused as unsupported: " + e.what());
        continue;
      }
      if (e.file() != kName) {
        outcome.note(variant + ": names '" + e.file() + "'");
        continue;
      }
      if (size == 0) {  // nothing says it was gzip: an empty file
        if (e.problem().find("empty input") == std::string::npos) outcome.note(variant + ": " + e.what());
        else ++outcome.refused;
        continue;
      }
      const std::int64_t expected = line_of_last_byte(text, text_bytes_of_prefix(gz, size, text.size()));
      if (e.problem().find("truncated gzip stream") == std::string::npos || e.line() != expected)
        outcome.note(variant + ": expected line " + std::to_string(expected) + ", got '" + e.what() + "'");
      else if (e.line() < previous_line)
        outcome.note(variant + ": line " + std::to_string(e.line()) + " before the previous cut's");
      else
        ++outcome.refused;
      previous_line = e.line();
      lines_named += e.line() > 0;
    } catch (const std::exception& e) {
      outcome.note(variant + ": not a ParseError: " + e.what());
    }
  }
  outcome.require_clean();
  REQUIRE(outcome.refused == std::int64_t(gz.size()));
  // The line numbers cover the file: none for the header's cuts, the last line for cuts in the trailer.
  CHECK(lines_named > std::int64_t(gz.size()) / 2);
  CHECK(previous_line == last_line);
  WARN(gz.size() << " cuts of a " << gz.size() << "-byte .mtx.gz (" << text.size() << " bytes, " << last_line
                 << " lines of text): all ParseErrors at the expected line, in " << seconds_since(start) << " s");

  // Through files too (the memory-mapped path), at a spread of lengths.
  const fs::path dir = fs::temp_directory_path() / ("bcsr24_gzip_cut_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  for (std::size_t size = 1; size < gz.size(); size += (size < 20 || size + 20 > gz.size() ? 1 : 211)) {
    CAPTURE(size);
    const std::string path = (dir / "cut.mtx.gz").string();
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(gz.data(), std::streamsize(size));
    try {
      bcsr24::read_matrix_market(path);
      FAIL("a truncated file loaded");
    } catch (const bcsr24::ParseError& e) {
      CHECK(e.file() == path);
      CHECK_THAT(e.problem(), Catch::Contains("truncated gzip stream"));
      CHECK(e.line() == line_of_last_byte(text, text_bytes_of_prefix(gz, size, text.size())));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("a .mtx.gz with any byte changed is a ParseError or, in the unchecked header fields, the same matrix",
          "[mm][gzip][damage]") {
  const std::string text = sample_text();
  const std::string gz = gzip(text);
  const CsrMatrix original = bcsr24::read_matrix_market_from_memory(gz.data(), gz.size(), kName);

  // gzip checks the magic (bytes 0-1), the method (2), the flags' reserved bits (3), the deflate data and,
  // through its trailer, the CRC-32 and length of the text. Nothing checks the flag FTEXT, MTIME (4-7), XFL (8)
  // or OS (9): a change there may load, and must then load the same matrix.
  const auto unchecked = [](std::size_t i) { return i >= 3 && i <= 9; };
  Outcome outcome;
  std::int64_t crc_errors = 0;  // changes only the CRC-32 of the text catches
  std::string bytes = gz;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < gz.size(); ++i) {
    for (const int change : {0, 1, 2}) {
      const auto b = static_cast<unsigned char>(gz[i]);
      bytes[i] = static_cast<char>(change == 0 ? b ^ 0xFF : change == 1 ? b ^ 0x01 : b + 1);
      const std::string variant = "byte " + std::to_string(i) + (change == 0 ? " xor 0xFF" : change == 1 ? " xor 0x01" : " +1");
      ++outcome.variants;
      try {
        const CsrMatrix a = bcsr24::read_matrix_market_from_memory(bytes.data(), bytes.size(), kName);
        if (!unchecked(i)) outcome.note(variant + ": loaded");
        else if (!same_matrix(a, original)) outcome.note(variant + ": loaded a different matrix");
        else ++outcome.same;
      } catch (const bcsr24::ParseError& e) {
        // Past the magic the damage is found while inflating, before any text is parsed: a gzip error, at line 0
        // ("corrupt gzip data: ...", zlib's reason: a CRC or length mismatch, an invalid code) or, when the damage
        // makes the deflate data seem to go on past the end, a "truncated gzip stream" at the line it stops in.
        const bool gzip_error =
            e.problem().find(e.line() == 0 ? "gzip" : "truncated gzip stream") != std::string::npos;
        if (e.file() != kName || (i >= 2 && !gzip_error)) outcome.note(variant + ": " + e.what());
        else ++outcome.refused;
        crc_errors += e.problem().find("incorrect data check") != std::string::npos;
      } catch (const std::exception& e) {
        outcome.note(variant + ": not a ParseError: " + e.what());
      }
    }
    bytes[i] = gz[i];
  }
  outcome.require_clean();
  REQUIRE(outcome.refused + outcome.same == outcome.variants);
  CHECK(crc_errors > 0);
  CHECK(outcome.same <= 7 * 3);
  WARN(outcome.variants << " changed bytes of a " << gz.size() << "-byte .mtx.gz: " << outcome.refused
                        << " ParseErrors (" << crc_errors << " of them CRC mismatches), " << outcome.same << " loads of the same matrix (unchecked header fields), in "
                        << seconds_since(start) << " s");
}
