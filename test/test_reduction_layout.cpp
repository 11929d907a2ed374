// The tile kernel's cross-warp reduction layout (lib/src/kernels/reduction_layout.hpp): every row stays a
// permutation of its columns that keeps float2/float4 groups whole, the warp's float2 accumulator stores and the
// epilogue's float4 reads are free of shared-memory bank conflicts, for every slice width.
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/reduction_layout.hpp"

namespace {

using bcsr24::kernels::reduction_offset;

constexpr int kBanks = 32;
constexpr int kTileRows = 16;

template <int kWidth>
void check_layout() {
  INFO("slice width " << kWidth);
  // A permutation of each row's columns, mapping every aligned group of 4 onto an aligned group of 4.
  for (int row = 0; row < kTileRows; ++row) {
    std::set<int> seen;
    for (int col = 0; col < kWidth; ++col) {
      const int at = reduction_offset<kWidth>(row, col);
      REQUIRE(at / kWidth == row);
      REQUIRE(at % 4 == col % 4);
      if (col % 4) REQUIRE(at == reduction_offset<kWidth>(row, col - 1) + 1);
      seen.insert(at);
    }
    REQUIRE(seen.size() == std::size_t(kWidth));
  }
  // float2 stores: lane 4g + t writes columns 8j + 2t, + 1 of row g (and of row g + 8). A 64-bit access is served
  // per half-warp; its 16 lanes must cover 32 distinct banks.
  for (int j = 0; j < kWidth / 8; ++j)
    for (int upper = 0; upper < 2; ++upper)
      for (int half = 0; half < 2; ++half) {
        std::set<int> banks;
        for (int lane = 16 * half; lane < 16 * half + 16; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          const int at = reduction_offset<kWidth>(g + 8 * upper, 8 * j + 2 * t);
          banks.insert(at % kBanks);
          banks.insert((at + 1) % kBanks);
        }
        INFO("j " << j << (upper ? ", rows 8..15" : ", rows 0..7") << ", half-warp " << half);
        CHECK(banks.size() == std::size_t(kBanks));
      }
  // float4 reads: thread i reads quad q = i (rows of kWidth / 4 quads); a 128-bit access is served per quarter-warp,
  // whose 8 lanes must cover 32 distinct banks.
  const int quads = kTileRows * kWidth / 4;
  for (int first = 0; first < quads; first += 8) {
    std::set<int> banks;
    for (int q = first; q < first + 8; ++q) {
      const int at = reduction_offset<kWidth>(4 * q / kWidth, 4 * q % kWidth);
      for (int e = 0; e < 4; ++e) banks.insert((at + e) % kBanks);
    }
    INFO("quads " << first << " .. " << first + 7);
    CHECK(banks.size() == std::size_t(kBanks));
  }
}

}  // namespace

TEST_CASE("reduction buffer: row permutations, conflict-free float2 stores and float4 reads", "[layout][kernel]") {
  check_layout<8>();
  check_layout<16>();
  check_layout<32>();
  check_layout<64>();
}
