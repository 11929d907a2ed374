// The B block of the tile kernel (lib/src/kernels/b_block_layout.hpp): the lanes' copy fills every chunk of the
// block exactly once, the per-step destinations the kernel derives from a lane's step-0 destination are the
// ones the layout defines, and the fragment loads (ldmatrix for 16-bit B, single floats for fp32 B) are free of
// shared-memory bank conflicts, for every slice width.
#include <set>

#include <catch2/catch.hpp>

#include "kernels/b_block_layout.hpp"

namespace {

constexpr int kBanks = 32;
constexpr int kLanes = 32;

template <int kWidth, bool kF32B>
void check_block() {
  using L = bcsr24::kernels::BBlockLayout<kWidth, kF32B>;
  INFO("slice width " << kWidth << (kF32B ? ", fp32 B" : ", 16-bit B"));
  // The copy: every (row, chunk) once, each to its own 16-byte slot, at the offset the kernel derives per step.
  std::set<int> rows_chunks, slots;
  for (int lane = 0; lane < kLanes; ++lane) {
    const int chunk = L::lane_chunk(lane);
    const int row0 = L::lane_row(lane);
    REQUIRE(row0 < L::kRowStep);
    const int dst0 = L::chunk_offset(row0, chunk);
    for (int step = 0; step < L::kChunksPerRow; ++step) {
      const int row = row0 + step * L::kRowStep;
      REQUIRE(row < L::kRows);
      const int dst = L::chunk_offset(row, chunk);
      CHECK(L::step_offset(dst0, step) == dst);
      CHECK(dst % 16 == 0);
      CHECK(dst >= 0);
      CHECK(dst < L::kBytes);
      rows_chunks.insert(row * L::kChunksPerRow + chunk);
      slots.insert(dst);
    }
  }
  CHECK(rows_chunks.size() == std::size_t(L::kRows * L::kChunksPerRow));
  CHECK(slots.size() == std::size_t(L::kRows * L::kChunksPerRow));

  if constexpr (!kF32B) {
    // ldmatrix: each phase reads one logical chunk of 8 consecutive rows; the 8 chunks must sit in the 8 distinct
    // 16-byte bank groups.
    for (int first = 0; first < L::kRows; first += 8)
      for (int chunk = 0; chunk < L::kChunksPerRow; ++chunk) {
        std::set<int> groups;
        for (int row = first; row < first + 8; ++row) groups.insert((L::chunk_offset(row, chunk) / 16) % 8);
        CHECK(groups.size() == 8u);
      }
  } else {
    // One fragment load: lane 4g + t reads column 8j + g of row 8m + 2t + c; the 32 words in 32 distinct banks.
    for (int j = 0; j < kWidth / 8; ++j)
      for (int m = 0; m < 4; ++m)
        for (int c = 0; c < 2; ++c) {
          std::set<int> banks;
          for (int lane = 0; lane < kLanes; ++lane) {
            const int g = lane >> 2, t = lane & 3;
            const int row = 8 * m + 2 * t + c, col = 8 * j + g;
            const int byte = L::chunk_offset(row, col / 4) + 4 * (col % 4);
            banks.insert((byte / 4) % kBanks);
          }
          CHECK(banks.size() == std::size_t(kBanks));
        }
  }
}

}  // namespace

TEST_CASE("B block layout: the copy fills each chunk once, and fragment loads are conflict-free", "[b_block]") {
  check_block<8, false>();
  check_block<16, false>();
  check_block<32, false>();
  check_block<64, false>();
  check_block<8, true>();
  check_block<16, true>();
  check_block<32, true>();
  check_block<64, true>();
}
