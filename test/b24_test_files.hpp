// Test helpers for .b24 files: raw bytes in and out, a CRC-32 to forge checksums, and writers of the old
// versions 1 and 2, written from docs/FORMAT.md independently of the library (the reader must accept what
// they write; the committed fixtures under test/fixtures/b24 were made with them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format/bcsr24_matrix.hpp"
#include "format/serialize.hpp"

namespace bcsr24::test {

std::vector<unsigned char> read_bytes(const std::string& path);
/// Writes the first `size` bytes of `bytes`.
void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes, std::size_t size);
inline void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  write_bytes(path, bytes, bytes.size());
}

/// CRC-32 (IEEE polynomial, as zlib's crc32), table-driven.
std::uint32_t crc32_ieee(const unsigned char* data, std::size_t size);
/// Rewrites the trailer of a whole .b24 image to the CRC of bytes [8, size - 4): forges a file whose checksum
/// is right whatever its content.
void fix_checksum(std::vector<unsigned char>& bytes);
void put_u32(std::vector<unsigned char>& bytes, std::size_t offset, std::uint32_t value);

/// A version-2 file of `a` (docs/FORMAT.md, "Version 2"): fp16 without row exponents, so `a` must be converted
/// with matrix-wide scaling; its layout, reordering, row_order and b_rows are kept.
std::vector<unsigned char> v2_bytes(const Bcsr24Matrix& a);
/// A version-1 file of `a` (docs/FORMAT.md, "Version 1"): aligned tiles in file order, fp16, matrix-wide scale.
std::vector<unsigned char> v1_bytes(const Bcsr24Matrix& a);

/// Catch2 checks that `got` holds the choices of `expected`, in order, field for field.
void check_same_tuned_choices(const std::vector<B24TunedChoice>& got, const std::vector<B24TunedChoice>& expected);

}  // namespace bcsr24::test
