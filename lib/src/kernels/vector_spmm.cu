// The narrow-vector tensor-core kernel (docs/KERNELS.md, "The narrow-vector path"): bands whose tiles would hold few
// nonzeros run as 8x1 column vectors per 8-row window (format/band_vectors.hpp) on mma.m16n8k16 with the operands
// swapped, C^T(window, slice) = B^T(gathered rows, slice) x A^T(vectors): M = 16 columns of B, N = the window's 8 rows,
// K = 16 vectors. Only the B rows of columns that hold a nonzero in the window are read, as the CSR kernel reads them,
// but the products run on tensor cores with fp32 accumulation.
//
// Work distribution (device/vector_schedule.hpp): the plan cuts the windows, longest first, into pieces (a whole
// window, or a part of at most S K-steps of a longer one) and gives each warp of a column slice a contiguous run of
// pieces with about the same number of K-steps; the grid holds about as many warps as the GPU keeps resident at this
// width. A warp walks its run as one flat sequence of K-steps with one cp.async pipeline across piece boundaries: the
// producer issues step i + kVectorStages - 1 (the next piece's first steps when the current one ends: a step names its
// group directly, so crossing a window costs no extra round trip), the consumer computes step i, and after a piece's
// last step it runs that piece's epilogue while the next pieces' copies are in flight. The epilogue writes C straight
// from the accumulators (no shared staging: the stages hold copies in flight); its inputs (C rows, exponents,
// partial-sum slot: the piece's 64-byte record, built by the plan) are copied into the stage of the piece's last step
// with that step's copies, so they arrive with the data. A part of a split window publishes its partial sum to the
// plan's workspace; the part that counts last adds all parts in part order and writes C, so every output element has
// one fixed summation order (bit-identical repeats, no float atomics).
//
// Per K-step a warp gathers the 16 B rows its vectors name (cp.async, 16 bytes per piece, columns past n zero-filled by
// the copy) and the step's 256 bytes of values into one of kVectorStages stages; the B rows a step names are loaded
// into a register two iterations before its copies are issued, so no global load stands in front of a copy. The values
// are stored in the mma's B-fragment order (each lane's two registers are 8 consecutive bytes); the gathered B rows are
// read with ldmatrix.x4.trans, which hands each lane its A-fragment of B^T. A stage is as wide as the launch's widest
// slice needs (2, 4 or 8 pieces a row, vector_layout.hpp), so narrow n takes less shared memory. The epilogue is the
// tile kernel's: per-row multiplier alpha * 2^e, output addends, beta (C not read when beta == 0), fp32 or fp16 C, rows
// through the row map, any C alignment (element stores).
//
// Three instantiations (fp16 A and B with fp32 or fp16 C, bf16 with fp32 C): the slice's width is a run-time bound of
// the loops (1 to 4 m16 tiles), not a template parameter, so a narrow n costs no instantiation of its own. They are
// chosen here by (mode, output), as the band-group kernel's are, not through the kernel table.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"
#include "format/band_vectors.hpp"
#include "kernels/epilogue.cuh"
#include "kernels/part_counter.cuh"
#include "kernels/ptx_sm80.cuh"
#include "kernels/vector_layout.hpp"
#include "kernels/vector_params.hpp"

namespace bcsr24::kernels {

namespace {

namespace layout = vector_layout;

constexpr int kWarp = 32;
constexpr int kGroupValues = detail::kVectorGroupValues;
static_assert(detail::kVectorGroup == 16 && detail::kWindowRows == 8, "the K and N of mma.m16n8k16");
static_assert(kVectorWindowRows == detail::kWindowRows, "a piece's record holds a window's rows");
static_assert(offsetof(VectorPiece, out_row) == kVectorPieceRowsOffset &&
                  offsetof(VectorPiece, exponent) == kVectorPieceExponentsOffset &&
                  offsetof(VectorPiece, slot) == kVectorPieceSlotOffset,
              "the epilogue reads the record raw from shared memory");
static_assert(kGroupValues * 2 == kWarp * 8, "a group's values are 8 bytes per lane");
static_assert(kVectorStageValueBytes == kGroupValues * 2, "a stage: 16 B rows, then the values");
static_assert(kVectorSlotFloats == 4 * kWarp * 4, "a slot: 4 m16 tiles of 4 accumulators per lane");

/// Per lane, the two window rows its accumulators hold (acc_row(lane, 0) and + 1): C row (-1: none), and the two
/// 16-bit exponents in one register; read from the piece's record in the stage (VectorPiece).
struct VectorRows {
  std::int32_t out_row[2];
  std::uint32_t exponents;
  __device__ __forceinline__ int exponent(int h) const { return int(std::int16_t(exponents >> (16 * h))); }
};

/// A part of a split window: publish its partial sum; in the part that counts last, replace `acc` by the sum of
/// all parts in part order (the same order every run, whichever part arrives last) and return true.
__device__ __forceinline__ bool combine_parts(const VectorSpmmParams& p, std::int32_t own_slot, int m_tiles,
                                              int lane, float (&acc)[4][4]) {
  const int slice = blockIdx.y;
  const int2 window_slots = __ldg(reinterpret_cast<const int2*>(p.slots) + own_slot);  // first slot, parts
  const std::int32_t first_slot = window_slots.x, parts = window_slots.y;
  auto slot = [&](std::int32_t s) {
    return reinterpret_cast<float4*>(p.partials) + (std::size_t(s) * gridDim.y + slice) * (kVectorSlotFloats / 4);
  };
  float4* own = slot(own_slot);
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
    if (mt < m_tiles) own[mt * kWarp + lane] = make_float4(acc[mt][0], acc[mt][1], acc[mt][2], acc[mt][3]);
  if (!warp_part_is_last(p.counters + std::size_t(first_slot) * gridDim.y + slice, parts, lane)) return false;
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[mt][e] = 0.0f;
#pragma unroll 4
  for (std::int32_t part = 0; part < parts; ++part) {
    const float4* partial = slot(first_slot + part);
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      if (mt < m_tiles) {
        const float4 x = __ldcg(partial + mt * kWarp + lane);  // from L2: other SMs wrote them
        acc[mt][0] += x.x;
        acc[mt][1] += x.y;
        acc[mt][2] += x.z;
        acc[mt][3] += x.w;
      }
    }
  }
  return true;
}

/// C(window rows, slice) from the accumulators: for one (mt, e) the warp writes 4 rows x 8 consecutive columns.
template <typename OutT>
__device__ __forceinline__ void write_window(const VectorSpmmParams& p, const VectorRows& rows, int slice0,
                                             int m_tiles, int lane, const float (&acc)[4][4]) {
  OutT* c = static_cast<OutT*>(p.c);
  float multiplier[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) multiplier[h] = row_multiplier(p.alpha, rows.exponent(h));
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
    if (mt >= m_tiles) break;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int h = e % 2;
      const std::int32_t out_row = rows.out_row[h];  // -1: a padding row, or past A's rows
      const int out_col = slice0 + layout::acc_column(lane, mt, e);
      if (out_row < 0 || out_col >= p.n) continue;
      float v[1] = {acc[mt][e]};
      const OutputRun run{out_row, out_col, multiplier[h], rows.exponent(h), false};
      write_output_run<1>(c + std::size_t(out_row) * p.ldc + out_col, run, p.n, p.alpha, p.beta, p.addends, v);
    }
  }
}

// Device passes before sm_90 budget registers for fewer blocks (vector_params.hpp); launch bounds only shape the
// device code, so the host pass's value does not matter.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr int kMinBlocks = kVectorMinBlocksPerSmSm80;
#else
constexpr int kMinBlocks = kVectorMinBlocksPerSm;
#endif

template <bool kBf16, typename OutT>
__global__ void __launch_bounds__(kVectorWarps * kWarp, kMinBlocks)
    vector_spmm_kernel(const VectorSpmmParams p) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const std::int32_t w = std::int32_t(blockIdx.x) * kVectorWarps + warp;
  if (w >= p.warps) return;  // the warps of a block never wait for each other
  const std::int32_t step_begin = __ldg(p.warp_steps + w);
  const std::int32_t step_count = __ldg(p.warp_steps + w + 1) - step_begin;
  if (step_count == 0) return;
  std::int32_t issue_piece = __ldg(p.warp_pieces + w);  // the piece whose record the next last step copies
  const int slice0 = blockIdx.y * kVectorSliceColumns;
  const int width = min(kVectorSliceColumns, p.n - slice0);
  const int m_tiles = (width + 15) / 16;
  const int chunks = 2 * m_tiles;  // pieces of a B row this slice copies; those past n are zero-filled
  const int stage_chunks = layout::stage_chunks(min(p.n, kVectorSliceColumns));  // as the launch sized them
  const int stage_bytes = layout::stage_bytes(stage_chunks);
  const std::uint32_t warp_base = ptx::smem_addr(smem + warp * kVectorStages * stage_bytes);

  // Step s of the run: its schedule entry (warp-uniform; no group past the run's end), its B rows (lane r < 16:
  // the B row of vector r), its copies into `stage` (vector_layout.hpp: swizzled pieces, conflict-free ldmatrix).
  auto load_step = [&](std::int32_t s) -> std::uint32_t {
    return s < step_count ? std::uint32_t(__ldg(p.steps + step_begin + s)) : std::uint32_t(kVectorNoGroup);
  };
  auto group_of = [](std::uint32_t entry) { return std::int32_t(entry & ~kVectorLastStep); };
  auto load_cols = [&](std::uint32_t entry) -> std::int32_t {
    const std::int32_t g = group_of(entry);
    return lane < 16 && g != kVectorNoGroup ? __ldg(p.col + (std::int64_t(g) * 16 + lane)) : 0;
  };
  // What the consumer needs of the step in each stage, set when it is issued: bit `stage` says it ends a piece,
  // bit 8 + stage that it has no group (one register: registers are the kernel's occupancy limit).
  unsigned stage_bits = 0;
  auto issue = [&](std::uint32_t entry, int stage, std::int32_t cols) {
    const std::int32_t g = group_of(entry);
    const bool last = (entry & kVectorLastStep) != 0;
    stage_bits &= ~(0x101u << stage);
    stage_bits |= (last ? 1u : 0u) << stage;
    stage_bits |= (g == kVectorNoGroup ? 0x100u : 0u) << stage;
    const std::uint32_t base = warp_base + std::uint32_t(stage * stage_bytes);
    if (last) {  // warp-uniform: the piece's record travels with its last step (4 lanes, 16 bytes each)
      if (lane < 4)
        ptx::cp_async_16(base + std::uint32_t(layout::piece_record_offset(stage_chunks) + 16 * lane),
                         reinterpret_cast<const unsigned char*>(p.pieces + issue_piece) + 16 * lane, 16);
      ++issue_piece;
    }
    if (g == kVectorNoGroup) return;  // warp-uniform: an empty window, or past the run's end
    for (int idx0 = 0; idx0 < 16 * chunks; idx0 += kWarp) {  // the same trip count in every lane (shuffles)
      const int idx = idx0 + lane;
      const int row = layout::copy_row(idx, chunks);
      const int chunk = layout::copy_chunk(idx, chunks);
      const std::int32_t b_row = __shfl_sync(0xffffffffu, cols, row & 15);
      if (idx < 16 * chunks) {
        const int col0 = slice0 + 8 * chunk;
        const int bytes = max(0, min(8, p.n - col0)) * 2;
        const std::uint16_t* src = p.b + std::int64_t(b_row) * p.ldb + (bytes > 0 ? col0 : 0);
        ptx::cp_async_16(base + std::uint32_t(layout::piece_offset(row, chunk, stage_chunks)), src, bytes);
      }
    }
    ptx::cp_async_8(base + std::uint32_t(layout::values_offset(lane, stage_chunks)),
                    p.values + (std::int64_t(g) * kGroupValues + lane * 4));
  };

  for (int s = 0; s < kVectorStages - 1; ++s) {
    const std::uint32_t entry = load_step(s);
    issue(entry, s, load_cols(entry));
    ptx::cp_async_commit();  // one group per step, empty or not: the wait count stays exact at the tail
  }
  // Look-ahead registers, shifted once per iteration i: the entries of steps i + 2 and i + 3 and their B rows. The
  // B rows of a step are loaded two iterations before its copies are issued (a round trip to memory, the chain
  // that bounds a warp's steps per second), right after its entry (L1 mostly: consecutive entries share a line).
  std::uint32_t entry0 = load_step(kVectorStages - 1), entry1 = load_step(kVectorStages);
  std::int32_t cols0 = load_cols(entry0), cols1 = load_cols(entry1);
  float acc[4][4] = {};
  const int fragment_row = layout::fragment_row(lane);
  for (std::int32_t i = 0; i < step_count; ++i) {
    // Into the stage computed in the previous iteration (every lane left it at that iteration's __syncwarp).
    issue(entry0, (i + kVectorStages - 1) % kVectorStages, cols0);
    ptx::cp_async_commit();
    entry0 = entry1;
    cols0 = cols1;
    entry1 = load_step(i + kVectorStages + 1);
    cols1 = load_cols(entry1);
    ptx::cp_async_wait<kVectorStages - 1>();
    __syncwarp();
    const int stage = i % kVectorStages;
    const std::uint32_t base = warp_base + std::uint32_t(stage * stage_bytes);
    if (((stage_bits >> (8 + stage)) & 1u) == 0) {
      const uint2 values = ptx::lds_64(base + std::uint32_t(layout::values_offset(lane, stage_chunks)));
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        if (mt < m_tiles) {
          // The four 8x8 matrices are the A fragment of B^T (vector_layout.hpp); the values its B fragment.
          std::uint32_t a[4];
          ptx::ldmatrix_x4_trans(a, base + std::uint32_t(layout::piece_offset(
                                              fragment_row, layout::fragment_chunk(lane, mt), stage_chunks)));
          ptx::mma_m16n8k16_f32<kBf16>(acc[mt], make_uint4(a[0], a[1], a[2], a[3]), values.x, values.y);
        }
      }
    }
    __syncwarp();
    if (((stage_bits >> stage) & 1u) != 0) {  // warp-uniform: the piece's last step
      // The piece's record arrived with this step's copies: its slot, and this lane's two rows.
      const std::uint32_t record = base + std::uint32_t(layout::piece_record_offset(stage_chunks));
      const std::int32_t slot = std::int32_t(ptx::lds_32(record + kVectorPieceSlotOffset));
      const int row0 = layout::acc_row(lane, 0);  // even: 8-byte aligned C rows, 4-byte aligned exponents
      const uint2 out_rows = ptx::lds_64(record + std::uint32_t(kVectorPieceRowsOffset + 4 * row0));
      const VectorRows rows{{std::int32_t(out_rows.x), std::int32_t(out_rows.y)},
                            ptx::lds_32(record + std::uint32_t(kVectorPieceExponentsOffset + 2 * row0))};
      __syncwarp();  // every lane has read the record before the next iteration copies into this stage
      if (slot < 0 || combine_parts(p, slot, m_tiles, lane, acc))
        write_window<OutT>(p, rows, slice0, m_tiles, lane, acc);
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mt][e] = 0.0f;
    }
  }
  ptx::cp_async_wait<0>();  // the trailing groups are empty; nothing may be in flight at exit
}

using VectorKernelFn = void (*)(VectorSpmmParams);

VectorKernelFn choose(OperandMode mode, ElementType out) {
  if (mode == OperandMode::f16)
    return out == ElementType::f16 ? vector_spmm_kernel<false, __half> : vector_spmm_kernel<false, float>;
  if (mode == OperandMode::bf16 && out == ElementType::f32) return vector_spmm_kernel<true, float>;
  throw InvalidArgument(std::string("narrow-vector kernel: no instantiation for ") + operand_mode_name(mode) + " with " +
                        (out == ElementType::f16 ? "fp16" : "fp32") +
                        " C (it takes fp16 or bf16 A with B of the same type; fp16 C with fp16 only)");
}

}  // namespace

std::int64_t vector_resident_warps(OperandMode mode, ElementType out, std::int32_t n, int multiprocessors) {
  const VectorKernelFn fn = choose(mode, out);
  int blocks = 0;
  BCSR24_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, fn, kVectorWarps * kWarp, std::size_t(layout::shared_bytes(std::min(n, kVectorSliceColumns)))));
  return std::int64_t(std::max(blocks, 1)) * kVectorWarps * std::max(multiprocessors, 1);
}

void load_vector_kernel(OperandMode mode, ElementType out) {
  cudaFuncAttributes attributes;
  BCSR24_CUDA_CHECK(cudaFuncGetAttributes(&attributes, choose(mode, out)));
}

void launch_vector_kernel(OperandMode mode, ElementType out, const VectorSpmmParams& params, cudaStream_t stream) {
  const VectorKernelFn fn = choose(mode, out);
  if (params.warps == 0 || params.n == 0) return;
  const std::int64_t blocks = (std::int64_t(params.warps) + kVectorWarps - 1) / kVectorWarps;
  const std::int64_t slices = vector_slices(params.n);
  if (blocks > INT32_MAX || slices > 65535)
    throw SizeLimitError("narrow-vector kernel: " + std::to_string(blocks) + " blocks x " + std::to_string(slices) +
                         " column slices exceed one launch");
  const int shared = layout::shared_bytes(std::min(params.n, kVectorSliceColumns));
  fn<<<dim3(unsigned(blocks), unsigned(slices)), kVectorWarps * kWarp, shared, stream>>>(params);
  BCSR24_CUDA_CHECK_LAUNCH();
}

}  // namespace bcsr24::kernels
