// libFuzzer target: any input must give a valid CSR or a bcsr24::Error; anything else is a reader bug.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"
#include "io/input_bytes.hpp"
#include "io/mm_header.hpp"

namespace {

/// CSR needs rows + 1 row pointers by definition, so a 40-byte file may rightly ask for 8 GB
/// ("2000000000 1 0"). Inputs declaring more rows than this only exercise the header: the allocation
/// is by design, and libFuzzer's malloc limit would report it as a crash.
constexpr std::int64_t kMaxFuzzRows = std::int64_t{1} << 20;

bool declares_huge_rows(const char* data, std::size_t size) {
  try {
    std::vector<char> inflated;
    if (bcsr24::io::detect_compression(data, size) == bcsr24::io::Compression::gzip) {
      inflated = bcsr24::io::gunzip(data, size, "fuzz.mtx");
      data = inflated.data();
      size = inflated.size();
    }
    return bcsr24::io::parse_header(data, size, "fuzz.mtx").info.rows > kMaxFuzzRows;
  } catch (const bcsr24::Error&) {
    return false;  // the full read below meets the same error
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  const char* data = reinterpret_cast<const char*>(bytes);
  if (declares_huge_rows(data, size)) return 0;

  bcsr24::MatrixMarketOptions options;
  // Both pattern-value modes, chosen by the input so each is reproducible from its crash file.
  options.pattern_values = (size % 2 == 0) ? bcsr24::MatrixMarketOptions::PatternValues::ones : bcsr24::MatrixMarketOptions::PatternValues::random;
  options.seed = size;

  bcsr24::MatrixMarketInfo info;
  bcsr24::CsrMatrix a;
  try {
    a = bcsr24::read_matrix_market_from_memory(data, size, "fuzz.mtx", options, &info);
  } catch (const bcsr24::Error&) {
    return 0;  // a typed, documented refusal
  }

  // What the reader promises about every matrix it returns. validate_csr's InvalidArgument is not caught:
  // an invalid CSR from the reader is a bug and must crash the fuzzer.
  bcsr24::validate_csr(a);
  if (a.rows != info.rows || a.cols != info.cols) std::abort();
  for (double v : a.values)
    if (!std::isfinite(v)) std::abort();
  if (info.format == bcsr24::MmFormat::coordinate && info.symmetry == bcsr24::MmSymmetry::general &&
      a.nnz() > info.entries)
    std::abort();
  return 0;
}
