// Compile-time geometry of the tile kernel (spmm_kernel.cuh), shared by its instantiations and the host: stages
// per warp, shared memory per block, and the blocks per SM that registers and shared memory admit on an
// architecture (sm_limits.hpp). Host code uses it to plan; no device code here.
#pragma once

#include "format/tile_layout.hpp"
#include "kernels/b_block_layout.hpp"
#include "kernels/sm_limits.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels {

/// Compile-time facts of an operand mode.
template <OperandMode kMode>
struct Operands {
  static constexpr bool kBf16 = kMode == OperandMode::bf16 || kMode == OperandMode::bf16_f32b;
  static constexpr bool kF32B = reads_f32_b(kMode);
  static constexpr bool kSplit = kMode == OperandMode::split_f32b;
  /// fp32 B converted to fp16 needs a scale (fp16's range is narrow); to bf16 it does not.
  static constexpr bool kScaledB = kMode == OperandMode::f16_f32b || kMode == OperandMode::split_f32b;
};

template <int kSliceWidth, OperandMode kMode = OperandMode::f16>
struct SliceGeometry {
  using Ops = Operands<kMode>;
  /// The B block in shared memory and how the lanes copy it (kernels/b_block_layout.hpp).
  using BLayout = BBlockLayout<kSliceWidth, Ops::kF32B>;
  static constexpr int kChunksPerRow = BLayout::kChunksPerRow;
  static constexpr int kRowBytes = BLayout::kRowBytes;
  static constexpr int kBBytes = BLayout::kBytes;
  static constexpr int kNSteps = kSliceWidth / 8;  // n8 mma steps per tile
  /// A stage holds one A tile as stored (values, split mode's low parts, 2:4 metadata), then its B block. A
  /// dense tile is 1024 bytes of values; a 2:4 tile 512 bytes and 64 of metadata, so 2:4 stages are smaller and
  /// the 2:4 loop fits more of them in flight.
  template <bool kSparse>
  struct Stage {
    static constexpr int kValueBytes = kSparse ? kSparseTileValues * 2 : kDenseTileValues * 2;
    static constexpr int kLoOffset = kValueBytes;  // split mode: the low parts follow the high parts
    static constexpr int kMetaOffset = kValueBytes * (Ops::kSplit ? 2 : 1);
    static constexpr int kABytes = kMetaOffset + (kSparse ? kSparseTileMetaWords * 4 : 0);
    static constexpr int kBytes = kABytes + kBBytes;
    static_assert(kABytes % 16 == 0 && kBytes % 16 == 0, "cp.async and ldmatrix need 16-byte alignment");
  };
  static constexpr int kStageBytes = Stage<false>::kBytes;  // the larger of the two
};

/// Pipeline depth per slice width. A block's shared memory is 4 warps x stages x (A tile + B block); up to
/// 32 columns the depth keeps it near 24 KB, so 9 blocks fit on an SM and a matrix of ~1000 tile rows runs in
/// a single wave (deeper pipelines measured slower there: the second wave costs more than the depth gains).
/// fp32 B (and split A) make a stage larger: those modes get as many stages as fit in the fp16 mode's space
/// (at least one), so that shared memory admits as many blocks per SM as in fp16 mode: on the short bands of
/// meshes the number of blocks in flight decides the time more than the pipeline depth does.
template <int kSliceWidth, OperandMode kMode = OperandMode::f16>
constexpr int pipelined_stages() {
  constexpr int fp16_stages = kSliceWidth == 8 ? 4 : (kSliceWidth == 16 ? 3 : 2);
  if constexpr (kMode == OperandMode::f16 || kMode == OperandMode::bf16) {
    return fp16_stages;
  } else {
    constexpr int budget = fp16_stages * SliceGeometry<kSliceWidth>::kStageBytes;
    constexpr int fit = budget / SliceGeometry<kSliceWidth, kMode>::kStageBytes;
    return fit < 1 ? 1 : fit;
  }
}

/// The deep pipeline (TilePipeline::deep) of the fp32-B modes with fp16 or bf16 A: two stages per warp where
/// pipelined_stages leaves one (32 and 64 columns). With one stage a warp loads a tile, waits and computes it;
/// on a large grid the other blocks of the SM hide that wait, and keeping fp16's 9 blocks per SM matters more.
/// A small matrix leaves SM slots empty, so its warps' own copies are what they wait for; overlapping them with
/// the math costs nothing there but blocks per SM that were not used (5 at 32 columns, 3 at 64): bcsstk16 at
/// n = 32 and 64 -12%, the 40^3 mesh +10%. Long bands on a large grid gain too: a warp walking many tiles
/// overlaps them (XdYs 16384^2 at n = 64: -7 to -11%; docs/PERFORMANCE.md). The plan chooses
/// (detail::tile_pipeline_for).
/// Other modes and widths: the same stages as pipelined_stages, i.e. the same instantiation.
template <int kSliceWidth, OperandMode kMode = OperandMode::f16>
constexpr int deep_pipelined_stages() {
  constexpr bool kF32BTo16Bit = kMode == OperandMode::f16_f32b || kMode == OperandMode::bf16_f32b;
  constexpr int standard = pipelined_stages<kSliceWidth, kMode>();
  return kF32BTo16Bit && standard < 2 ? 2 : standard;
}

/// Stages per warp of the tile kernel's dense loop at a width, mode and depth (kDeep: TilePipeline::deep).
template <int kSliceWidth, OperandMode kMode, bool kDeep>
constexpr int tile_stages() {
  return kDeep ? deep_pipelined_stages<kSliceWidth, kMode>() : pipelined_stages<kSliceWidth, kMode>();
}

/// Stages of the 2:4 loop: its stages are smaller (576 bytes of A instead of 1024), so it gets as many as fit
/// in the space of the dense loop's stages (5 instead of 4 at 8 columns).
template <int kSliceWidth, int kStages, OperandMode kMode = OperandMode::f16>
constexpr int sparse24_stages() {
  using G = SliceGeometry<kSliceWidth, kMode>;
  return kStages == 1 ? 1 : kStages * G::kStageBytes / G::template Stage<true>::kBytes;
}

/// Shared memory of one warp's pipeline.
template <int kSliceWidth, int kStages, bool kHasSparseList, OperandMode kMode = OperandMode::f16>
constexpr int warp_pipeline_bytes() {
  using G = SliceGeometry<kSliceWidth, kMode>;
  constexpr int dense = kStages * G::kStageBytes;
  constexpr int sparse =
      kHasSparseList ? sparse24_stages<kSliceWidth, kStages, kMode>() * G::template Stage<true>::kBytes : 0;
  return dense > sparse ? dense : sparse;
}

/// After the main loops: per row of the band, its C row, its output multiplier and its row exponent (4 bytes
/// each), then the split-band epilogue's "this part is the last" flag (padded to 16 bytes). The flag lives here,
/// in dynamic shared memory: with a static __shared__ variable beside the dynamic share, the split-band
/// instantiation ran up to 2x slower on the H100 (every block, split or not: 10d0s 16384^2 at n = 32 with split
/// bands, 52.4 us against 27.4 us with the flag here), although the occupancy API reports 9 blocks per SM for both.
constexpr int kBandRowBytes = kTileRows * 12 + 16;

template <int kSliceWidth, int kStages, bool kHasSparseList, OperandMode kMode = OperandMode::f16>
constexpr int spmm_shared_bytes() {
  constexpr int pipeline = kTileKernelWarps * warp_pipeline_bytes<kSliceWidth, kStages, kHasSparseList, kMode>();
  // The cross-warp reduction buffer, then the band's output rows and row exponents (kBandRowBytes).
  constexpr int reduction = kTileKernelWarps * kTileRows * kSliceWidth * 4 + kBandRowBytes;
  return pipeline > reduction ? pipeline : reduction;
}

/// Blocks per SM the register allocation is built for (the kernel's __launch_bounds__ lets ptxas use at most
/// 65536 / (blocks x 128) registers per thread); shared memory may admit fewer (blocks_per_sm).
/// Up to 32 columns, shared memory admits 9 blocks of ~24 KB on the H100; letting the 2:4 + dense kernel take
/// more registers than 65536 / (9 x 128) = 56 would cut that to 7 and put a matrix of ~1000 tile rows into a
/// second wave (measured: 14% slower at n = 32). At 64 columns shared memory admits 5 blocks, and registers are
/// capped to match. Modes with fp32 B (and split A) have larger stages; they take fewer stages instead
/// (pipelined_stages), and the block count follows what shared memory then admits (also for
/// deep_pipelined_stages). Split mode's second A fragment, low B fragment and per-tile sums do not fit in 56
/// registers from 16 columns on: there it runs 7 blocks (72 registers).
/// No instantiation may spill registers (scripts/check_spills.sh): where these budgets made ptxas spill, the
/// instantiation gets the largest block count at which it does not (below), on the architecture of compute
/// capability `cc` (ptxas allocates differently for each). The budget does not depend on whether the plan splits
/// bands, so that a plan's block slots are known before its schedule is.
template <int kSliceWidth, OperandMode kMode, int kStages, bool kHasSparseList, int kRows>
constexpr int register_blocks_per_sm(int cc) {
  // fp16 A, fp32 B at 64 columns in one stage: on sm_80, whose shared memory admits 4 blocks, 8-12 bytes spilled
  // at 128 registers; 3 blocks.
  if (kMode == OperandMode::f16_f32b && kSliceWidth == 64 && kStages == 1 && cc < 90) return 3;
  // fp16 A, fp32 B: at 32 columns in one stage 8-84 bytes spilled at 56 registers; with full B-row indices 64
  // registers (8 blocks) suffice, aligned tiles need 72 (7 blocks). At 16 columns (two stages) the full index
  // spilled 4-8 bytes at 56 registers.
  if constexpr (kMode == OperandMode::f16_f32b && kSliceWidth == 32 && kStages == 1)
    return kRows == kImplicitRows ? 7 : 8;
  if constexpr (kMode == OperandMode::f16_f32b && kSliceWidth == 16 && kStages == 2 && kRows != kImplicitRows)
    return 8;
  // bf16 A, fp32 B, 32 columns in one stage: 8-32 bytes spilled at 56 registers; none at 64 (8 blocks).
  if constexpr (kMode == OperandMode::bf16_f32b && kSliceWidth == 32 && kStages == 1) return 8;
  // Split mode at 32 columns: 8-16 bytes spilled at 72 registers (7 blocks) and at 80 (6 blocks); none at 96.
  if constexpr (kMode == OperandMode::split_f32b && kSliceWidth == 32) return 5;
  if constexpr (kMode == OperandMode::split_f32b && kSliceWidth >= 16) return 7;
  return kSliceWidth <= 32 ? 9 : 5;
}

/// Blocks of one instantiation that an SM with limits `sm` holds: the register budget, or as many as its shared
/// memory admits where that is fewer (at least one).
constexpr int blocks_per_sm(int register_blocks, int shared_bytes, SmLimits sm) {
  const int fit = sm.shared_bytes / (shared_bytes + sm.reserved_per_block);
  return fit < register_blocks ? (fit < 1 ? 1 : fit) : register_blocks;
}

}  // namespace bcsr24::kernels
