// The narrow-vector tensor-core kernel (docs/KERNELS.md, "The narrow-vector path"): bands whose tiles would hold
// few nonzeros run as 8x1 column vectors per 8-row window (format/band_vectors.hpp) on mma.m16n8k16 with the
// operands swapped, C^T(window, slice) = B^T(gathered rows, slice) x A^T(vectors): M = 16 columns of B, N = the
// window's 8 rows, K = 16 vectors. Only the B rows of columns that hold a nonzero in the window are read, as the
// CSR kernel reads them, but the products run on tensor cores with fp32 accumulation.
//
// One warp per (window, 64-column slice); four independent warps per block. Per K-step a warp gathers the 16 B
// rows its vectors name (cp.async, 16 bytes per piece, columns past n zero-filled by the copy) and the step's 256
// bytes of values into one of kVectorStages stages, issued kVectorStages - 1 steps ahead; the B rows of the step
// after that are loaded one iteration early into a register, so no global load stands in front of a copy. The
// values are stored in the mma's B-fragment order (each lane's two registers are 8 consecutive bytes); the
// gathered B rows are read with ldmatrix.x4.trans, which hands each lane its A-fragment of B^T. The window's
// 8 x slice result goes through shared memory so that C is written four columns per access, with the tile
// kernel's epilogue: per-row multiplier alpha * 2^e, output addends, beta (C not read when beta == 0), fp32 or fp16
// C, rows through the row map.
//
// Three instantiations (fp16 A and B with fp32 or fp16 C, bf16 with fp32 C): the slice's width is a run-time
// bound of the loops (1 to 4 m16 tiles), not a template parameter, so a narrow n costs no instantiation of its
// own. They are chosen here by (mode, output), as the band-group kernel's are, not through the kernel table.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>
#include <string>

#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"
#include "format/band_vectors.hpp"
#include "kernels/output_access.cuh"
#include "kernels/ptx_sm80.cuh"
#include "kernels/vector_layout.hpp"
#include "kernels/vector_params.hpp"

namespace bcsr24::kernels {

namespace {

namespace layout = vector_layout;

constexpr int kWarp = 32;
constexpr int kGroupValues = detail::kVectorGroupValues;
static_assert(detail::kVectorGroup == 16 && detail::kWindowRows == 8, "the K and N of mma.m16n8k16");
static_assert(kGroupValues * 2 == kWarp * 8, "a group's values are 8 bytes per lane");
static_assert(kVectorStageBytes == kVectorStageBBytes + kGroupValues * 2, "a stage: 16 B rows, then the values");

template <bool kBf16, typename OutT>
__global__ void __launch_bounds__(kVectorWarps * kWarp) vector_spmm_kernel(const VectorSpmmParams p) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const std::int64_t item = std::int64_t(blockIdx.x) * kVectorWarps + warp;
  if (item >= p.item_count) return;  // the warps of a block never wait for each other
  const int slice0 = blockIdx.y * kVectorSliceColumns;
  const int width = min(kVectorSliceColumns, p.n - slice0);
  const int m_tiles = (width + 15) / 16;
  const int chunks = 2 * m_tiles;  // pieces of a B row this slice copies; those past n are zero-filled
  const std::int32_t position = __ldg(p.items + item);
  const std::int32_t window = __ldg(p.window + position);
  const std::int32_t first = __ldg(p.group_ptr + position);
  const std::int32_t steps = __ldg(p.group_ptr + position + 1) - first;
  unsigned char* warp_smem = smem + warp * kVectorStages * kVectorStageBytes;
  const std::uint32_t warp_base = ptx::smem_addr(warp_smem);

  // Lane r < 16: the B row of vector r of step s (0 elsewhere, and past the last step).
  auto load_cols = [&](std::int32_t s) -> std::int32_t {
    return lane < 16 && s < steps ? __ldg(p.col + (std::int64_t(first + s) * 16 + lane)) : 0;
  };
  // The copies of step s into `stage` (vector_layout.hpp: swizzled pieces, so that ldmatrix is conflict-free).
  auto issue = [&](std::int32_t s, int stage, std::int32_t cols) {
    const std::uint32_t base = warp_base + std::uint32_t(stage * kVectorStageBytes);
    for (int idx0 = 0; idx0 < 16 * chunks; idx0 += kWarp) {  // the same trip count in every lane (shuffles)
      const int idx = idx0 + lane;
      const int row = layout::copy_row(idx, chunks);
      const int chunk = layout::copy_chunk(idx, chunks);
      const std::int32_t b_row = __shfl_sync(0xffffffffu, cols, row & 15);
      if (idx < 16 * chunks) {
        const int col0 = slice0 + 8 * chunk;
        const int bytes = max(0, min(8, p.n - col0)) * 2;
        const std::uint16_t* src = p.b + std::int64_t(b_row) * p.ldb + (bytes > 0 ? col0 : 0);
        ptx::cp_async_16(base + std::uint32_t(layout::piece_offset(row, chunk)), src, bytes);
      }
    }
    ptx::cp_async_8(base + layout::values_offset(lane), p.values + (std::int64_t(first + s) * kGroupValues + lane * 4));
  };

  float acc[4][4] = {};
  for (int s = 0; s < kVectorStages - 1; ++s) {
    if (s < steps) issue(s, s, load_cols(s));
    ptx::cp_async_commit();  // one group per step, empty or not: the wait count stays exact at the tail
  }
  std::int32_t cols_ahead = load_cols(kVectorStages - 1);
  const int fragment_row = layout::fragment_row(lane);
  for (std::int32_t i = 0; i < steps; ++i) {
    const std::int32_t ahead = i + kVectorStages - 1;
    // Into the stage computed in the previous iteration (every lane left it at that iteration's __syncwarp).
    if (ahead < steps) issue(ahead, ahead % kVectorStages, cols_ahead);
    ptx::cp_async_commit();
    cols_ahead = load_cols(ahead + 1);
    ptx::cp_async_wait<kVectorStages - 1>();
    __syncwarp();
    const int stage = i % kVectorStages;
    const std::uint32_t base = warp_base + std::uint32_t(stage * kVectorStageBytes);
    const uint2 values = *reinterpret_cast<const uint2*>(warp_smem + stage * kVectorStageBytes + layout::values_offset(lane));
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      if (mt < m_tiles) {
        // The four 8x8 matrices are the A fragment of B^T (vector_layout.hpp); the values its B fragment.
        std::uint32_t a[4];
        ptx::ldmatrix_x4_trans(
            a, base + std::uint32_t(layout::piece_offset(fragment_row, layout::fragment_chunk(lane, mt))));
        ptx::mma_m16n8k16_f32<kBf16>(acc[mt], make_uint4(a[0], a[1], a[2], a[3]), values.x, values.y);
      }
    }
    __syncwarp();
  }
  ptx::cp_async_wait<0>();
  __syncwarp();

  // Through the warp's first stage, so that C is written four columns per access.
  float* result = reinterpret_cast<float*>(warp_smem);
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
    if (mt < m_tiles) {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        result[layout::acc_row(lane, e) * layout::kResultStride + layout::acc_column(lane, mt, e)] = acc[mt][e];
    }
  }
  __syncwarp();
  OutT* c = static_cast<OutT*>(p.c);
  const bool c_quad_aligned = reinterpret_cast<std::uintptr_t>(c) % (4 * sizeof(OutT)) == 0 && p.ldc % 4 == 0;
  const int quads = (width + 3) / 4;
  for (int idx = lane; idx < 8 * quads; idx += kWarp) {
    const int r = idx / quads, q = idx - r * quads;
    const std::int64_t stored_row = std::int64_t(window) * 8 + r;
    // Reordered layouts write a stored row to the C row it came from; padding rows (-1) and rows past A's are skipped.
    const std::int32_t out_row = p.row_map != nullptr ? __ldg(p.row_map + stored_row)
                                                      : (stored_row < p.rows ? std::int32_t(stored_row) : -1);
    const int out_col = slice0 + 4 * q;
    if (out_row < 0 || out_row >= p.rows || out_col >= p.n) continue;
    const int exponent = p.stored_row_exponent != nullptr ? __ldg(p.stored_row_exponent + stored_row) : 0;
    const float4 sum = *reinterpret_cast<const float4*>(result + r * layout::kResultStride + 4 * q);
    float v[4] = {sum.x, sum.y, sum.z, sum.w};
    // Stored values are A * 2^-e: the row's multiplier alpha * 2^e undoes it, or, where that is not a normal float
    // (NaN), 2^e then alpha in two steps (as the tile epilogue).
    const float multiplier = row_multiplier(p.alpha, exponent);
    if (multiplier == multiplier) {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] *= multiplier;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = p.alpha * scale_by_power_of_two(v[e], exponent);
    }
    add_output_addends<4>(p.addends, out_row, out_col, p.n, v);
    OutT* out = c + std::size_t(out_row) * p.ldc + out_col;
    if (c_quad_aligned && out_col + 3 < p.n) {
      if (p.beta != 0.0f) {  // beta == 0 must not read C: it may hold NaN or garbage
        float old[4];
        load_output4<OutT>(out, old);
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] += p.beta * old[e];
      }
      store_output4<OutT>(out, v);
      continue;
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (out_col + e >= p.n) break;
      store_output<OutT>(out + e, p.beta == 0.0f ? v[e] : v[e] + p.beta * load_output<OutT>(out + e));
    }
  }
}

using VectorKernelFn = void (*)(VectorSpmmParams);

VectorKernelFn choose(OperandMode mode, OutputType out) {
  if (mode == OperandMode::f16)
    return out == OutputType::f16 ? vector_spmm_kernel<false, __half> : vector_spmm_kernel<false, float>;
  if (mode == OperandMode::bf16 && out == OutputType::f32) return vector_spmm_kernel<true, float>;
  throw InvalidArgument(std::string("narrow-vector kernel: no instantiation for ") + operand_mode_name(mode) + " with " +
                        (out == OutputType::f16 ? "fp16" : "fp32") +
                        " C (it takes fp16 or bf16 A with B of the same type; fp16 C with fp16 only)");
}

}  // namespace

void launch_vector_kernel(OperandMode mode, OutputType out, const VectorSpmmParams& params, cudaStream_t stream) {
  const VectorKernelFn fn = choose(mode, out);
  if (params.item_count == 0 || params.n == 0) return;
  const std::int64_t blocks = (std::int64_t(params.item_count) + kVectorWarps - 1) / kVectorWarps;
  const std::int64_t slices = (std::int64_t(params.n) + kVectorSliceColumns - 1) / kVectorSliceColumns;
  if (blocks > INT32_MAX || slices > 65535)
    throw SizeLimitError("narrow-vector kernel: " + std::to_string(blocks) + " blocks x " + std::to_string(slices) +
                         " column slices exceed one launch");
  fn<<<dim3(unsigned(blocks), unsigned(slices)), kVectorWarps * kWarp, kVectorSharedBytes, stream>>>(params);
  BCSR24_CUDA_CHECK_LAUNCH();
}

}  // namespace bcsr24::kernels
