// Arguments of the narrow-vector tensor-core kernel (vector_spmm.cu; docs/KERNELS.md, "The narrow-vector path"):
// plain pointers and sizes, the work schedule the plan built (device/vector_schedule.hpp), and the launch's
// geometry constants shared with the plan.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "device/plan_choices.hpp"
#include "kernels/output_addends.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels {

/// Warps per block: each walks its own run of the schedule (no block-wide barrier), so a block is just 4 warps
/// sharing a launch slot.
inline constexpr int kVectorWarps = 4;
/// Blocks per SM the registers are budgeted for (__launch_bounds__): 28 resident warps, 72 registers a thread (at 8
/// blocks, 64 registers, the pipeline and epilogue state spill). sm_80's code needs more registers for the same
/// kernel (72 spill there): 6 blocks, 85 registers. The plan asks the runtime how many blocks fit
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor), so the schedule follows whichever code runs.
inline constexpr int kVectorMinBlocksPerSm = 7;
inline constexpr int kVectorMinBlocksPerSmSm80 = 6;
/// Rows of a window (mma.m16n8k16's N with the operands swapped; format/band_vectors.hpp's kWindowRows).
inline constexpr int kVectorWindowRows = 8;
/// Output columns per column slice (blockIdx.y): at most 4 m16 tiles of 16 columns, i.e. 4 mma per K-step. A
/// narrower n uses fewer of them (the loop is bounded by the slice's own width at run time, no instantiation per
/// width), and its stages are narrower (vector_layout.hpp), so it takes less shared memory.
inline constexpr int kVectorSliceColumns = 64;
/// cp.async stages per warp: the gathered B rows (16 x slice width, 16-bit) and the values (256 B) of a K-step.
inline constexpr int kVectorStages = 3;
/// Shared memory of one stage's values: the group's 128 16-bit values.
inline constexpr int kVectorStageValueBytes = 16 * 8 * 2;
/// Shared memory of one stage's piece record (VectorPiece), copied with the last step of a piece.
inline constexpr int kVectorStagePieceBytes = 64;
/// Floats of one partial-sum slot per column slice (a split window's part, device/vector_schedule.hpp): the
/// 4 m16 tiles' accumulators, 4 per lane, in fragment order (lane-contiguous float4s: coalesced both ways).
inline constexpr int kVectorSlotFloats = 4 * 32 * 4;

/// A work piece of the schedule: a whole window, or one part of a window split into several parts whose partial
/// sums the part that finishes last adds in part order. Its 64 bytes are what the piece's epilogue needs; the
/// producer copies them into the stage of the piece's last step with that step's copies, so the epilogue's inputs
/// arrive with the data, two iterations ahead, and hold no registers in between.
struct VectorPiece {
  std::int32_t out_row[kVectorWindowRows] = {-1, -1, -1, -1, -1, -1, -1, -1};  // C row of each window row; -1: none
  std::int16_t exponent[kVectorWindowRows] = {};  // per window row: stored values are A * 2^-exponent
  std::int32_t slot = -1;         // the part's partial-sum slot (VectorSlot); -1: a whole window, written directly
  std::int32_t window = 0;        // stored rows 8 window .. 8 window + 7 (not read by the kernel)
  std::int32_t unused[2] = {};
};
static_assert(sizeof(VectorPiece) == 64, "four 16-byte copies per piece");
inline constexpr int kVectorPieceRowsOffset = 0;       // bytes into a VectorPiece (the kernel reads it raw)
inline constexpr int kVectorPieceExponentsOffset = 32;
inline constexpr int kVectorPieceSlotOffset = 48;
/// Per partial-sum slot: its window's first slot (the window's parts' slots follow it; the window's counter is
/// that slot's) and the window's number of parts. Read only by split parts, at their end.
struct VectorSlot {
  std::int32_t first_slot = 0;
  std::int32_t parts = 1;
};
static_assert(sizeof(VectorSlot) == 8, "one 8-byte load per slot");

/// A step of the schedule: the group (K-step) it computes, with kVectorLastStep set on the last step of a piece
/// (the consumer runs the piece's epilogue after it). An empty window is one step whose group is kVectorNoGroup
/// (no copy, no mma: its epilogue writes alpha * 0 + beta C and the addends).
inline constexpr std::uint32_t kVectorLastStep = 0x80000000u;
inline constexpr std::int32_t kVectorNoGroup = 0x7fffffff;

struct VectorSpmmParams {
  // The schedule (device/vector_schedule.hpp): warp w of each slice walks steps [warp_steps[w], warp_steps[w+1])
  // and pieces from warp_pieces[w], in order.
  const std::int32_t* steps = nullptr;       // group | kVectorLastStep
  const VectorPiece* pieces = nullptr;
  const std::int32_t* warp_steps = nullptr;  // warps + 1
  const std::int32_t* warp_pieces = nullptr; // warps: its first piece
  std::int32_t warps = 0;                    // per column slice
  const VectorSlot* slots = nullptr;         // per slot; null without split windows
  float* partials = nullptr;                 // kVectorSlotFloats per slot and slice; null without split windows
  unsigned* counters = nullptr;              // per slot and slice (used at each window's first slot), all 0
  const std::int32_t* col = nullptr;         // per vector: B row
  const std::uint16_t* values = nullptr;     // 128 per group, fragment order (format/band_vectors.hpp)
  std::int32_t n = 0;
  const std::uint16_t* b = nullptr;          // 16-byte aligned, ldb % 8 == 0 (the plan stages B otherwise)
  std::int64_t ldb = 0;
  void* c = nullptr;                         // float or fp16 bits
  std::int64_t ldc = 0;
  float alpha = 1.0f;                        // already multiplied by 2^scale_exponent
  float beta = 0.0f;
  OutputAddends addends;
};

/// Whether a plan of this operand mode and output type can run narrow vectors: 16-bit A and 16-bit B (fp16 or
/// bf16, fp32 accumulation), fp32 C, or fp16 C with fp16 A and B (as the tiles).
constexpr bool vectors_supported(OperandMode mode) { return mode == OperandMode::f16 || mode == OperandMode::bf16; }

/// Column slices of a product of width n.
constexpr std::int32_t vector_slices(std::int32_t n) { return (n + kVectorSliceColumns - 1) / kVectorSliceColumns; }

/// Warps of the kernel resident on the current device at once for width n (its SMs times the blocks per SM its
/// registers and n's shared memory allow, times kVectorWarps): the plan gives each slice that many warps / slices.
/// @throw InvalidArgument for a mode the kernel does not take; CudaError from the occupancy query.
std::int64_t vector_resident_warps(OperandMode mode, ElementType out, std::int32_t n, int multiprocessors);

/// Enqueues the kernel over ceil(warps / kVectorWarps) x slices blocks (nothing when there are no warps or
/// n == 0); checks the launch without synchronising.
/// @throw InvalidArgument for a mode the kernel does not take; SizeLimitError beyond one launch's blocks.
void launch_vector_kernel(OperandMode mode, ElementType out, const VectorSpmmParams& params, cudaStream_t stream);
/// Loads the kernel launch_vector_kernel would launch, where it is not loaded yet (what its first launch would do).
void load_vector_kernel(OperandMode mode, ElementType out);

}  // namespace bcsr24::kernels
