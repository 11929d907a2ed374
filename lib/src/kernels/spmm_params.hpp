// Arguments of the SpMM kernels: plain pointers and sizes, shared by the launcher and the kernels.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "device/plan_choices.hpp"
#include "format/bcsr24_matrix.hpp"
#include "kernels/output_addends.hpp"

namespace bcsr24::kernels {

/// What A and B hold and how they meet on the tensor cores: the plan's Precision and B element type
/// (docs/PRECISION.md). The kernels are instantiated per mode.
enum class OperandMode : std::uint8_t {
  f16,         ///< fp16 A, fp16 B as given (cp.async + ldmatrix)
  bf16,        ///< bf16 A, bf16 B as given
  f16_f32b,    ///< fp16 A, fp32 B converted to fp16 while staged, with a power-of-two scale per tile and column
  bf16_f32b,   ///< bf16 A, fp32 B converted to bf16 while staged (bf16 has fp32's range: no scale)
  split_f32b,  ///< fp16 A_hi + 2^-11 A_lo, fp32 B split the same way while staged: three products per step
};
const char* operand_mode_name(OperandMode mode) noexcept;
/// fp32 B: the kernels read B as floats (SpmmParams::b_f32, CsrSpmmParams::b_f32).
constexpr bool reads_f32_b(OperandMode mode) {
  return mode == OperandMode::f16_f32b || mode == OperandMode::bf16_f32b || mode == OperandMode::split_f32b;
}

/// Device view of one tile list (see tile_layout.hpp for the order of values and metadata).
struct TileListView {
  const std::int32_t* row_ptr = nullptr;
  const std::int32_t* col_idx = nullptr;
  const std::uint16_t* values = nullptr;    // fp16 or bf16 bits, 512 (dense) or 256 (2:4) per tile
  const std::uint16_t* values_lo = nullptr; // split precision: the low parts, same layout
  const std::uint32_t* metadata = nullptr;  // 2:4 list only: 16 words per tile
  const std::int32_t* b_rows = nullptr;     // gathered layouts: 32 B rows per tile (-1 = padding column)
};

/// TileRowWork::split of a band computed by one block.
inline constexpr std::int32_t kUnsplit = -1;
/// Bits of TileRowWork::split that hold the part index; the bits above hold the group.
inline constexpr int kSplitPartBits = 8;

/// What one block needs to know about its work item, in one aligned 32-byte load: the tile row and the tile
/// ranges of the 2:4 list, the dense list and the merged all-dense list it multiplies. A band split into parts
/// (device/tile_schedule.hpp) has one item per part, each with a share of every list.
struct alignas(32) TileRowWork {
  std::int32_t tile_row;
  std::int32_t sparse24_begin, sparse24_end;
  std::int32_t dense_begin, dense_end;
  std::int32_t merged_begin, merged_end;
  std::int32_t split;  ///< kUnsplit, or (group << kSplitPartBits) | part for a part of a split band
};
static_assert(sizeof(TileRowWork) == 32, "one sector");

/// A split band: where its parts' partial sums go and how many there are. The part that finishes last (an
/// atomic counter per group and column slice decides) adds them in part order and writes C.
struct SplitGroup {
  std::int32_t first_partial;  ///< partial-sum slot of part 0
  std::int32_t parts;
};

struct SpmmParams {
  TileListView sparse24;            // split kernel only
  TileListView dense;               // dense list (split kernel) or every tile as dense (dense kernels)
  const TileRowWork* row_work = nullptr;  // one per tile row, longest rows first, so they start early
  std::int32_t tile_rows = 0;
  std::int32_t rows = 0;            // M
  const std::int32_t* row_map = nullptr;  // reordered layouts: C row of each stored row (-1 = padding); null = identity
  std::int32_t k = 0;               // cols of A = rows of B; B rows >= k are never read (zero-filled)
  std::int32_t n = 0;
  std::int32_t n_slices = 0;        // ceil(n / slice width)
  const std::uint16_t* b = nullptr; // 16-bit modes: 16-byte aligned, ldb % 8 == 0 (the plan stages B otherwise)
  const float* b_f32 = nullptr;     // fp32-B modes: 16-byte aligned, ldb % 4 == 0 (likewise)
  std::uint32_t b_pitch = 0;        // bytes between B rows: ldb x element size (the plan stages B whose pitch
                                    // does not fit 32 bits)
  void* c = nullptr;                // float or fp16 bits
  std::int64_t ldc = 0;
  float alpha = 1.0f;               // already multiplied by 2^scale_exponent
  float beta = 0.0f;
  OutputAddends addends;            // added to every C element written (split bands: by the last part)
  // Per stored row (tile_rows * 16 entries, so any row of a band may be read): the sum is multiplied by 2^e;
  // null = none. Indexed like row_map, not by C row, so the epilogue's two loads do not depend on each other.
  const std::int16_t* stored_row_exponent = nullptr;
  // Split bands (none when row_work has no split item): per group, and the plan's workspace of
  // partial-sum slots (16 x slice width floats per slot and column slice) and counters (per group and column
  // slice, zero between runs: the last part resets its counter).
  const SplitGroup* split_groups = nullptr;
  float* split_partials = nullptr;
  unsigned* split_counters = nullptr;
};

/// Warps per block of the tile kernel: enough to split long tile rows, few enough that short rows waste little.
/// The warps of a block take a band's tiles in turn (warp w: tiles w, w + 4, ...).
inline constexpr int kTileKernelWarps = 4;

/// Output columns one thread block computes: the accumulators of one warp are 16 x width fp32. The tile kernel
/// for a plan's width, mode and the rest is an entry of the kernel table (kernel_table.hpp).
int slice_width_for(std::int32_t n, OperandMode mode = OperandMode::f16);
/// How a kernel instantiation finds B rows (BRowIndex as a template argument).
inline constexpr int kImplicitRows = 0, kFullRows = 1;

/// Copies 16-bit B (any alignment and ldb) into a staging buffer of leading dimension round_up(n, 8).
void launch_stage_b(const std::uint16_t* b, std::int64_t ldb, std::int32_t k, std::int32_t n,
                    std::uint16_t* staged, std::int64_t staged_ld, cudaStream_t stream);
/// The same for fp32 B (leading dimension round_up(n, 4)).
void launch_stage_b(const float* b, std::int64_t ldb, std::int32_t k, std::int32_t n, float* staged,
                    std::int64_t staged_ld, cudaStream_t stream);

}  // namespace bcsr24::kernels
