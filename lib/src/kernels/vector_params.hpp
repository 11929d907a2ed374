// Arguments of the narrow-vector tensor-core kernel (vector_spmm.cu; docs/KERNELS.md, "The narrow-vector path"):
// plain pointers and sizes, and the launch's geometry constants shared with the plan.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "device/plan_choices.hpp"
#include "kernels/output_addends.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels {

/// Windows per block: one warp each, independent (no block-wide barrier), so a block is just 4 windows' worth of
/// warps sharing a launch slot.
inline constexpr int kVectorWarps = 4;
/// Output columns per block (blockIdx.y): 4 m16 tiles of 16 columns, i.e. 4 mma per K-step. A narrower n uses
/// fewer of them (the loop is bounded by the slice's own width at run time, no instantiation per width).
inline constexpr int kVectorSliceColumns = 64;
/// cp.async stages per warp: the gathered B rows (16 x 64 fp16, 2 KiB) and the values (256 B) of a K-step each.
inline constexpr int kVectorStages = 3;
/// Shared memory of one stage: 16 B rows of kVectorSliceColumns 16-bit values, then the group's 128 values.
inline constexpr int kVectorStageBBytes = 16 * kVectorSliceColumns * 2;
inline constexpr int kVectorStageBytes = kVectorStageBBytes + 16 * 8 * 2;
inline constexpr int kVectorSharedBytes = kVectorWarps * kVectorStages * kVectorStageBytes;
static_assert(kVectorSharedBytes <= 48 * 1024, "fits the default dynamic shared memory: no attribute to set");

struct VectorSpmmParams {
  const std::int32_t* items = nullptr;      // per work item: a window's position in the vector copy
  std::int32_t item_count = 0;
  const std::int32_t* window = nullptr;     // per position: window index (stored rows 8w .. 8w + 7)
  const std::int32_t* group_ptr = nullptr;  // per position, + 1: groups of 16 vectors
  const std::int32_t* col = nullptr;        // per vector: B row
  const std::uint16_t* values = nullptr;    // 128 per group, fragment order (format/band_vectors.hpp)
  const std::int32_t* row_map = nullptr;    // C row of each stored row; null = identity
  const std::int16_t* stored_row_exponent = nullptr;  // per stored row; null = no per-row scaling
  std::int32_t rows = 0;                    // rows of A and C
  std::int32_t n = 0;
  const std::uint16_t* b = nullptr;         // 16-byte aligned, ldb % 8 == 0 (the plan stages B otherwise)
  std::int64_t ldb = 0;
  void* c = nullptr;                        // float or fp16 bits
  std::int64_t ldc = 0;
  float alpha = 1.0f;                       // already multiplied by 2^scale_exponent
  float beta = 0.0f;
  OutputAddends addends;
};

/// Whether a plan of this operand mode and output type can run narrow vectors: 16-bit A and 16-bit B (fp16 or
/// bf16, fp32 accumulation), fp32 C, or fp16 C with fp16 A and B (as the tiles).
constexpr bool vectors_supported(OperandMode mode) { return mode == OperandMode::f16 || mode == OperandMode::bf16; }

/// Enqueues the kernel over ceil(item_count / kVectorWarps) x ceil(n / kVectorSliceColumns) blocks (nothing when
/// there are no items); checks the launch without synchronising.
/// @throw InvalidArgument for a mode the kernel does not take; SizeLimitError beyond one launch's blocks.
void launch_vector_kernel(OperandMode mode, OutputType out, const VectorSpmmParams& params, cudaStream_t stream);

}  // namespace bcsr24::kernels
