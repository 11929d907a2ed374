// The tile layout (format/tile_layout.hpp) against the mma fragments: the fragment order of dense and 2:4 tile values,
// and the metadata words each lane holds.
#include <catch2/catch.hpp>

#include <set>

#include "format/tile_layout.hpp"

using namespace bcsr24;

TEST_CASE("tile_layout: fragment order is a bijection that follows the mma register picture", "[convert][layout]") {
  std::set<int> dense_seen, sparse_seen;
  for (int r = 0; r < kTileRows; ++r) {
    for (int c = 0; c < kTileCols; ++c) dense_seen.insert(dense_value_index(r, c));
    for (int cc = 0; cc < 16; ++cc) sparse_seen.insert(sparse_value_index(r, cc));
  }
  REQUIRE(dense_seen.size() == 512);
  REQUIRE(*dense_seen.begin() == 0);
  REQUIRE(*dense_seen.rbegin() == 511);
  REQUIRE(sparse_seen.size() == 256);
  REQUIRE(*sparse_seen.rbegin() == 255);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 8; ++i) {
      CAPTURE(lane, i);
      // a0,a1: row g, cols 2t,2t+1; a2,a3: row g+8; a4..a7: the same 8 columns further.
      const int g = lane / 4, t = lane % 4;
      REQUIRE(fragment_row(lane, i) == g + ((i / 2) % 2) * 8);
      REQUIRE(fragment_col(lane, i) == 2 * t + i % 2 + (i / 4) * 8);
      for (int h = 0; h < 2; ++h)
        REQUIRE(dense_value_index(fragment_row(lane, i), h * 16 + fragment_col(lane, i)) == h * 256 + lane * 8 + i);
      REQUIRE(sparse_value_index(fragment_row(lane, i), fragment_col(lane, i)) == lane * 8 + i);
    }
  // Spot values of the FORMAT.md table.
  CHECK(dense_value_index(0, 0) == 0);
  CHECK(dense_value_index(0, 1) == 1);
  CHECK(dense_value_index(8, 0) == 2);
  CHECK(dense_value_index(0, 8) == 4);
  CHECK(dense_value_index(0, 2) == 8);
  CHECK(dense_value_index(1, 0) == 32);
  CHECK(dense_value_index(0, 16) == 256);
  CHECK(dense_value_index(15, 31) == 511);
}

TEST_CASE("tile_layout: metadata lane layout matches mma.sp m16n8k32 f16 with selector 0 (measured on H100)",
          "[convert][layout]") {
  // Lane 4g+0 holds columns 0-15 of row g (low 16 bits) and of row g+8 (high 16 bits); lane 4g+1 the same
  // for columns 16-31. Stored word index = 2g + t.
  for (int g = 0; g < 8; ++g) {
    for (int grp = 0; grp < 8; ++grp) {
      CAPTURE(g, grp);
      const int word = grp < 4 ? 2 * g : 2 * g + 1;
      REQUIRE(metadata_word(g, grp) == word);
      REQUIRE(metadata_word(g + 8, grp) == word);
      REQUIRE(metadata_shift(g, grp) == 4 * (grp % 4));
      REQUIRE(metadata_shift(g + 8, grp) == metadata_shift(g, grp) + 16);
    }
    REQUIRE(metadata_word_of_lane(4 * g + 0) == 2 * g);
    REQUIRE(metadata_word_of_lane(4 * g + 1) == 2 * g + 1);
  }
  // All 128 (row, group) nibbles land on distinct bits of the 16 words.
  std::set<int> bits;
  for (int r = 0; r < 16; ++r)
    for (int grp = 0; grp < 8; ++grp) bits.insert(metadata_word(r, grp) * 32 + metadata_shift(r, grp));
  REQUIRE(bits.size() == 128);
  // The six valid nibbles are exactly the ordered pairs idx0 < idx1.
  for (unsigned nibble = 0; nibble < 16; ++nibble)
    REQUIRE(is_valid_metadata_nibble(nibble) == ((nibble & 3u) < (nibble >> 2)));
}
