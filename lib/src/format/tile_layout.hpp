// Tile geometry and the in-memory order of tile values and 2:4 metadata.
//
// This header is the single definition of where each element of a tile lives. The host packer, the CPU
// reference decoder and the GPU kernels all use it, so the three can never disagree. Values are stored in the
// order the warp's registers want them ("fragment order"), so a kernel loads its operand with one coalesced
// 16-byte access per lane and no shuffle. See docs/FORMAT.md for tables of the layout.
#pragma once

#include <cstdint>

namespace bcsr24 {

/// Tile height: the M of mma.m16n8k16 and mma.sp.m16n8k32.
inline constexpr int kTileRows = 16;
/// Tile width: the K of mma.sp.m16n8k32 (a dense tile runs as two m16n8k16 steps).
inline constexpr int kTileCols = 32;
/// fp16 values stored per dense tile.
inline constexpr int kDenseTileValues = kTileRows * kTileCols;  // 512
/// fp16 values stored per 2:4 tile: half of the columns survive compression.
inline constexpr int kSparseTileValues = kTileRows * kTileCols / 2;  // 256
/// 32-bit metadata words per 2:4 tile: 16 rows x 8 groups x 4 bits = 512 bits.
inline constexpr int kSparseTileMetaWords = 16;
/// Columns per 2:4 group.
inline constexpr int kGroupCols = 4;
/// Lanes of a warp.
inline constexpr int kWarpSize = 32;

static_assert(kDenseTileValues == kWarpSize * 16, "a dense tile is 16 fp16 per lane");
static_assert(kSparseTileValues == kWarpSize * 8, "a 2:4 tile is 8 fp16 per lane");

// ---------------------------------------------------------------------------------------------------------
// Fragment order.
//
// Lane l = 4*g + t (g = l / 4 is the "group", t = l % 4 the "thread in group") of an m16n8kK mma owns, for
// each 16-column step of A, the elements a0..a7:
//   a0,a1: row g,   cols 2t, 2t+1        a2,a3: row g+8, cols 2t, 2t+1
//   a4,a5: row g,   cols 2t+8, 2t+9      a6,a7: row g+8, cols 2t+8, 2t+9
// A dense tile is two such steps (columns 0-15 and 16-31). We store step h of every lane contiguously:
//   value index = h * 256 + lane * 8 + i        (i = register element 0..7)
// so one 16-byte load per lane and step reads 512 contiguous bytes across the warp.
//
// A 2:4 tile is compressed to 16 x 16 (column c of the compressed tile belongs to 2:4 group c / 2 of the
// original tile), and mma.sp.m16n8k32 takes it in the same a0..a7 pattern over the compressed columns:
//   value index = lane * 8 + i
// ---------------------------------------------------------------------------------------------------------

/// Row (0..15) of register element i (0..7) held by `lane`.
constexpr int fragment_row(int lane, int i) { return (lane >> 2) + ((i >> 1) & 1) * 8; }
/// Column (0..15) within a 16-column step of register element i held by `lane`.
constexpr int fragment_col(int lane, int i) { return (lane & 3) * 2 + (i & 1) + (i >> 2) * 8; }

/// Position in a dense tile's value array of element (row, col), col in 0..31.
constexpr int dense_value_index(int row, int col) {
  const int h = col >> 4;    // which k16 step
  const int c = col & 15;    // column inside the step
  const int g = row & 7;     // lane group
  const int t = (c & 7) >> 1;
  const int i = (c & 1) + ((row >> 3) << 1) + ((c >> 3) << 2);
  return h * 256 + (g * 4 + t) * 8 + i;
}

/// Position in a 2:4 tile's value array of compressed element (row, ccol), ccol in 0..15.
constexpr int sparse_value_index(int row, int ccol) {
  const int g = row & 7;
  const int t = (ccol & 7) >> 1;
  const int i = (ccol & 1) + ((row >> 3) << 1) + ((ccol >> 3) << 2);
  return (g * 4 + t) * 8 + i;
}

// ---------------------------------------------------------------------------------------------------------
// 2:4 metadata (mma.sp::ordered_metadata, m16n8k32, f16, sparsity selector 0).
//
// Each group of 4 columns keeps 2 values; the metadata of a group is two 2-bit indices (position of the kept
// values inside the group), first index in bits 0-1, second in bits 2-3, and the first strictly smaller than
// the second. Valid nibbles: 0x4 (0,1) 0x8 (0,2) 0x9 (1,2) 0xC (0,3) 0xD (1,3) 0xE (2,3).
//
// With selector 0 only lanes 4g+0 and 4g+1 supply metadata. Lane 4g+t (t = 0, 1) holds a 32-bit word:
//   bits  0..15: row g,   groups 4t..4t+3 (columns 16t..16t+15), group 4t+q in bits 4q..4q+3
//   bits 16..31: row g+8, the same groups
// We store the 16 meaningful words of a tile in the order word index = 2*g + t.
// ---------------------------------------------------------------------------------------------------------

/// Word index (0..15) and bit offset (multiple of 4) of the nibble describing group `grp` (0..7) of `row`.
constexpr int metadata_word(int row, int grp) { return (row & 7) * 2 + (grp >> 2); }
constexpr int metadata_shift(int row, int grp) { return ((row >> 3) << 4) + ((grp & 3) << 2); }
/// Word a given lane passes to mma.sp (lanes with t >= 2 read their partner's word; the hardware ignores it).
constexpr int metadata_word_of_lane(int lane) { return (lane >> 2) * 2 + (lane & 1); }

/// True for the six nibbles mma.sp::ordered_metadata accepts.
constexpr bool is_valid_metadata_nibble(unsigned nibble) {
  return nibble == 0x4 || nibble == 0x8 || nibble == 0x9 || nibble == 0xC || nibble == 0xD || nibble == 0xE;
}

}  // namespace bcsr24
