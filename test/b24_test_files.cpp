// .b24 test helpers (b24_test_files.hpp).
#include "b24_test_files.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <fstream>
#include <iterator>

namespace bcsr24::test {

namespace {

/// Appends raw bytes of values and arrays: the writers of old versions below.
struct ByteSink {
  std::vector<unsigned char> out;
  template <class T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  }
  template <class T>
  void put_array(const std::vector<T>& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(T));
  }
};

std::array<std::uint32_t, 256> crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    table[i] = c;
  }
  return table;
}

}  // namespace

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(size));
  REQUIRE(out);
}

std::uint32_t crc32_ieee(const unsigned char* data, std::size_t size) {
  static const std::array<std::uint32_t, 256> table = crc_table();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) crc = (crc >> 8) ^ table[(crc ^ data[i]) & 0xFFu];
  return ~crc;
}

void fix_checksum(std::vector<unsigned char>& bytes) {
  const std::uint32_t crc = crc32_ieee(bytes.data() + 8, bytes.size() - 8 - 4);
  std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
}

void put_u32(std::vector<unsigned char>& bytes, std::size_t offset, std::uint32_t value) {
  std::memcpy(bytes.data() + offset, &value, 4);
}

/// The version-2 layout, written independently of the library (docs/FORMAT.md, version 2): an fp16 matrix
/// without row exponents, so it must be converted with matrix-wide scaling.
std::vector<unsigned char> v2_bytes(const Bcsr24Matrix& a) {
  REQUIRE(a.precision == Precision::fp16);
  REQUIRE(a.row_exponent.empty());
  ByteSink w;
  w.out = {'B', 'C', 'S', 'R', '2', '4', 0, 0};
  w.put(std::uint32_t{2});
  w.put(std::uint8_t(a.layout));
  w.put(std::uint8_t(a.reordering));
  w.put(std::uint16_t{0});
  w.put(a.rows);
  w.put(a.cols);
  w.put(a.tile_rows);
  w.put(a.tile_cols);
  w.put(std::int64_t{a.nnz});
  w.put(std::int64_t{a.sparse24_nnz});
  w.put(std::int64_t{a.dense_nnz});
  w.put(std::int64_t{a.sparse24.tiles()});
  w.put(std::int64_t{a.dense.tiles()});
  w.put(a.scaling.exponent);
  w.put(std::uint32_t{0});
  w.put(a.scaling.max_abs);
  w.put(a.scaling.min_abs_nonzero);
  w.put(std::int64_t{a.scaling.overflow_count});
  w.put(std::int64_t{a.scaling.underflow_count});
  w.put(std::int64_t{a.scaling.subnormal_count});
  w.put(std::int64_t{a.scaling.flushed_count});
  const std::uint64_t payload = 2 * (std::uint64_t(a.tile_rows) + 1) * 4 + std::uint64_t(a.sparse24.tiles()) * 580 +
                                std::uint64_t(a.dense.tiles()) * 1028 +
                                4 * (a.row_order.size() + a.sparse24.b_rows.size() + a.dense.b_rows.size());
  w.put(payload);
  w.put(std::int64_t(a.row_order.size()));
  w.put(std::int64_t(a.sparse24.b_rows.size()));
  w.put(std::int64_t(a.dense.b_rows.size()));
  REQUIRE(w.out.size() == 160);
  w.put_array(a.row_order);
  w.put_array(a.sparse24.row_ptr);
  w.put_array(a.sparse24.col_idx);
  w.put_array(a.sparse24.values);
  w.put_array(a.sparse24.metadata);
  w.put_array(a.sparse24.b_rows);
  w.put_array(a.dense.row_ptr);
  w.put_array(a.dense.col_idx);
  w.put_array(a.dense.values);
  w.put_array(a.dense.b_rows);
  REQUIRE(w.out.size() == 160 + payload);
  w.out.resize(w.out.size() + 4);
  fix_checksum(w.out);
  return w.out;
}

/// The version-1 layout, written independently of the library (docs/FORMAT.md, version 1 table).
std::vector<unsigned char> v1_bytes(const Bcsr24Matrix& a) {
  std::vector<unsigned char> out;
  const auto put = [&](const auto& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  };
  const auto put_array = [&](const auto& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(v[0]));
  };
  out.insert(out.end(), {'B', 'C', 'S', 'R', '2', '4', 0, 0});
  put(std::uint32_t{1});
  put(std::uint32_t{0});
  put(a.rows);
  put(a.cols);
  put(a.tile_rows);
  put(a.tile_cols);
  put(std::int64_t{a.nnz});
  put(std::int64_t{a.sparse24_nnz});
  put(std::int64_t{a.dense_nnz});
  put(std::int64_t{a.sparse24.tiles()});
  put(std::int64_t{a.dense.tiles()});
  put(a.scaling.exponent);
  put(std::uint32_t{0});
  put(a.scaling.max_abs);
  put(a.scaling.min_abs_nonzero);
  put(std::int64_t{a.scaling.overflow_count});
  put(std::int64_t{a.scaling.underflow_count});
  put(std::int64_t{a.scaling.subnormal_count});
  put(std::int64_t{a.scaling.flushed_count});
  const std::uint64_t payload = 2 * (std::uint64_t(a.tile_rows) + 1) * 4 + std::uint64_t(a.sparse24.tiles()) * 580 +
                                std::uint64_t(a.dense.tiles()) * 1028;
  put(payload);
  REQUIRE(out.size() == 136);
  put_array(a.sparse24.row_ptr);
  put_array(a.sparse24.col_idx);
  put_array(a.sparse24.values);
  put_array(a.sparse24.metadata);
  put_array(a.dense.row_ptr);
  put_array(a.dense.col_idx);
  put_array(a.dense.values);
  REQUIRE(out.size() == 136 + payload);
  out.resize(out.size() + 4);
  fix_checksum(out);
  return out;
}

void check_same_tuned_choices(const std::vector<B24TunedChoice>& got, const std::vector<B24TunedChoice>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].n == expected[i].n);
    CHECK(got[i].input == expected[i].input);
    CHECK(got[i].output == expected[i].output);
    CHECK(got[i].paths == expected[i].paths);
    CHECK(got[i].split_long_bands == expected[i].split_long_bands);
    CHECK(got[i].tile_pipeline == expected[i].tile_pipeline);
    CHECK(got[i].band_groups == expected[i].band_groups);
    CHECK(got[i].measured_us == expected[i].measured_us);
    CHECK(got[i].device == expected[i].device);
  }
}

}  // namespace bcsr24::test
