// What the .b24 tests share (test_serialize.cpp, test_b24_versions.cpp): scratch files, sample matrices, the byte
// offsets of a version-3 file, and the checks of an identical matrix and of a refused file.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "format/bcsr24_matrix.hpp"
#include "format/convert.hpp"

namespace bcsr24::test {

/// A scratch file removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& stem) {
    static int counter = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("bcsr24_test_" + std::to_string(::getpid()) + "_" + stem + "_" + std::to_string(counter++) + ".b24"))
                .string();
  }
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Every field of the two matrices equal (doubles bit for bit).
void require_identical(const Bcsr24Matrix& a, const Bcsr24Matrix& b);

/// An XdYs matrix (20% dense, 30% 2:4 tiles) with its values times `scale`, converted with `options`.
Bcsr24Matrix sample_matrix(std::int32_t rows, std::int32_t cols, std::uint64_t seed, double scale = 1.0,
                           const ConvertOptions& options = {});

/// Aligned tiles in file order: the layout the byte offsets of the forging tests assume.
ConvertOptions aligned_options(ScalingPolicy scaling = ScalingPolicy::per_row, Precision precision = Precision::fp16);
/// An XdYs matrix (30% dense, 30% 2:4 tiles) converted with aligned_options.
Bcsr24Matrix aligned_sample(std::int32_t rows, std::int32_t cols, std::uint64_t seed,
                            ScalingPolicy scaling = ScalingPolicy::per_row, Precision precision = Precision::fp16);

/// B-row indices equal to the implicit ones of an aligned list: tile column c, slot j -> 32c + j, -1 past cols.
std::vector<std::int32_t> implicit_b_rows(const TileList& list, std::int32_t cols);

/// Byte offsets of a version-3 file's arrays (docs/FORMAT.md, section 7).
struct FileOffsets {
  std::size_t row_order, row_exponent, sparse_row_ptr, sparse_col, sparse_values, sparse_values_lo, sparse_meta,
      sparse_b_rows, dense_row_ptr, dense_col, dense_values, dense_values_lo, dense_b_rows, crc;
};
FileOffsets v3_offsets(const Bcsr24Matrix& a);

/// Expects load to fail with a ParseError (line 0) whose message names the file (and `fragment`, if given).
void require_rejected(const std::string& path, const std::string& fragment = "");

}  // namespace bcsr24::test
