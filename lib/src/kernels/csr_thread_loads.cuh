// How a thread of the CSR kernel (csr_kernel.cuh) reads A and B and accumulates: the operand types, the decoding of
// A's stored values, B's chunks of 8 columns (or element by element, or the one column of n = 1), and the rounds of
// independent loads over one row's entries, over a pair of short rows' entries, or over aligned quads at n = 1.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "bcsr24/precision.hpp"
#include "kernels/csr_params.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels::csr {

constexpr int kWarp = 32;
constexpr int kBlockWarps = kCsrBlockThreads / kWarp;
/// Entries each thread has in flight per round: four independent 16-byte B loads hide L2 latency.
constexpr int kUnroll = 4;
/// Rounds of loads a row may take on its unit (group, warp, block) before it gets a larger one.
constexpr int kMaxRounds = 4;
/// How a thread reads B: a 16-byte-aligned chunk of 8 columns, up to 8 columns one by one (n < 8), or the one
/// column of n = 1.
enum class BRead { chunk, scalar, one_column };
/// Output columns a thread accumulates.
template <BRead kRead>
inline constexpr int kThreadCols = kRead == BRead::one_column ? 1 : 8;
/// Blocks of 256 threads per SM the registers must allow. Four allow 64 registers: four B chunks in flight
/// (16), their indices and values, and 8 accumulators, at half the SM's thread slots. One column needs far
/// fewer: 32 registers, 8 blocks, twice the loads in flight. Fewer than 8 columns read element by element hold
/// 8 loads per entry, 32 per round: ptxas spilled 16-20 bytes at 64 registers (4 blocks) and, with fp16 or bf16
/// values, 4-8 bytes at 80 (3 blocks); unbounded they take 96, so they get 2 blocks.
template <BRead kRead>
inline constexpr int kMinBlocksPerSm = kRead == BRead::one_column ? 8 : (kRead == BRead::scalar ? 2 : kCsrChunkBlocksPerSm);

/// Eight consecutive columns of one B row: eight 16-bit values in one 16-byte word, or eight floats.
struct F32Chunk {
  float4 lo, hi;
};
template <OperandMode kMode, BRead kRead>
using BChunk = std::conditional_t<kRead == BRead::one_column, std::conditional_t<reads_f32_b(kMode), float, std::uint16_t>,
                                  std::conditional_t<reads_f32_b(kMode), F32Chunk, uint4>>;

/// A 16-bit value (bf16 or fp16 bits) widened to fp32, exactly.
template <bool kBf16>
__device__ __forceinline__ float widen(std::uint16_t bits) {
  if constexpr (kBf16) return __bfloat162float(__ushort_as_bfloat16(bits)); else return __half2float(__ushort_as_half(bits));
}

/// A stored value of A from its bits, widened to fp32 exactly (fp16, bf16 and hi + 2^-11 lo, 22 bits, all fit
/// in 24). `lo` is read only in split precision.
template <OperandMode kMode>
__device__ __forceinline__ float decode_value(std::uint16_t hi, std::uint16_t lo) {
  if constexpr (kMode == OperandMode::split_f32b) {
    return fmaf(widen<false>(lo), 1.0f / float(1 << kSplitLoShift), widen<false>(hi));
  } else {
    return widen<kMode == OperandMode::bf16 || kMode == OperandMode::bf16_f32b>(hi);
  }
}

/// Entry i of A, widened to fp32.
template <OperandMode kMode>
__device__ __forceinline__ float entry_value(const CsrSpmmParams& p, std::int32_t i) {
  const std::uint16_t lo = kMode == OperandMode::split_f32b ? __ldg(p.values_lo + i) : std::uint16_t(0);
  return decode_value<kMode>(__ldg(p.values + i), lo);
}

/// Entry e (0..3) of a quad of 16-bit values loaded as one 8-byte word.
__device__ __forceinline__ std::uint16_t quad_bits(uint2 quad, int e) {
  const unsigned word = e < 2 ? quad.x : quad.y;
  return static_cast<std::uint16_t>(e % 2 == 0 ? word & 0xffffu : word >> 16);
}

/// Which entries of the quad at entry `base` lie in [first, end): bit e for entry base + e. Unsigned: the last quad
/// of a copy of 2^31 - 1 entries ends past INT32_MAX.
__device__ __forceinline__ unsigned quad_mask(unsigned base, unsigned first, unsigned end) {
  unsigned mask = 0;
#pragma unroll
  for (int e = 0; e < 4; ++e) mask |= unsigned(base + e >= first && base + e < end) << e;
  return mask;
}

/// A B element as fp32 (16-bit B widened exactly).
template <OperandMode kMode, typename BValue>
__device__ __forceinline__ float b_value_f32(BValue b) {
  if constexpr (reads_f32_b(kMode)) return b; else return widen<kMode == OperandMode::bf16>(b);
}

template <OperandMode kMode, BRead kRead>
__device__ __forceinline__ void fma_chunk(float (&acc)[kThreadCols<kRead>], float v, const BChunk<kMode, kRead>& b) {
  if constexpr (kRead == BRead::one_column) {
    acc[0] = fmaf(v, b_value_f32<kMode>(b), acc[0]);
  } else if constexpr (reads_f32_b(kMode)) {
    const float f[8] = {b.lo.x, b.lo.y, b.lo.z, b.lo.w, b.hi.x, b.hi.y, b.hi.z, b.hi.w};
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = fmaf(v, f[e], acc[e]);
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const unsigned pair = q == 0 ? b.x : q == 1 ? b.y : q == 2 ? b.z : b.w;
      float2 f;
      if constexpr (kMode == OperandMode::bf16) {
        f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&pair));
      } else {
        f = __half22float2(*reinterpret_cast<const __half2*>(&pair));
      }
      acc[2 * q] = fmaf(v, f.x, acc[2 * q]);
      acc[2 * q + 1] = fmaf(v, f.y, acc[2 * q + 1]);
    }
  }
}

/// The B matrix of a mode: 16-bit values or floats.
template <OperandMode kMode>
using BElement = std::conditional_t<reads_f32_b(kMode), float, std::uint16_t>;
template <OperandMode kMode>
__device__ __forceinline__ const BElement<kMode>* b_matrix(const CsrSpmmParams& p) {
  if constexpr (reads_f32_b(kMode)) return p.b_f32; else return p.b;
}

/// The 8 columns of B row `row` at `b_cols` as one chunk of 16-byte loads, or (BRead::scalar: n < 8, B in any
/// layout) the first `cols` of them one by one, the rest zero: a narrow B is read without being padded first;
/// or (BRead::one_column) the one element. fp32 B is two 16-byte loads, the second only where `cols` > 4: B's
/// rows need only be readable to n rounded up to 4 floats (ldb % 4 == 0), so the last row of a B with
/// n % 8 in [1, 4] ends inside the chunk (compute-sanitizer memcheck caught the read past it).
template <OperandMode kMode, BRead kRead>
__device__ __forceinline__ BChunk<kMode, kRead> load_b_chunk(const CsrSpmmParams& p, const BElement<kMode>* b_cols,
                                                             std::int32_t row, int cols) {
  const BElement<kMode>* src = b_cols + std::size_t(row) * p.ldb;
  constexpr bool kScalarB = kRead == BRead::scalar;
  if constexpr (kRead == BRead::one_column) {
    return __ldg(src);
  } else if constexpr (reads_f32_b(kMode)) {
    if constexpr (!kScalarB) {
      const float4* src4 = reinterpret_cast<const float4*>(src);
      return {__ldg(src4), cols > 4 ? __ldg(src4 + 1) : make_float4(0.0f, 0.0f, 0.0f, 0.0f)};
    } else {
      float f[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) f[e] = e < cols ? __ldg(src + e) : 0.0f;
      return {make_float4(f[0], f[1], f[2], f[3]), make_float4(f[4], f[5], f[6], f[7])};
    }
  } else {
    if constexpr (!kScalarB) {
      return __ldg(reinterpret_cast<const uint4*>(src));
    } else {
      std::uint16_t h[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) h[e] = e < cols ? __ldg(src + e) : std::uint16_t(0);
      return make_uint4(h[0] | (unsigned(h[1]) << 16), h[2] | (unsigned(h[3]) << 16), h[4] | (unsigned(h[5]) << 16),
                        h[6] | (unsigned(h[7]) << 16));
    }
  }
}

/// A round's B rows: entries i, i + stride, ... (kUnroll of them), those at or past `end` row 0 where kPartial.
template <bool kPartial>
__device__ __forceinline__ void load_round_rows(const CsrSpmmParams& p, std::int32_t i, std::int32_t end,
                                                std::int32_t stride, std::int32_t (&rows)[kUnroll]) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) rows[u] = !kPartial || i + u * stride < end ? __ldg(p.b_row + i + u * stride) : 0;
}

/// A round's values of A, widened (zero past `end` where kPartial).
template <OperandMode kMode, bool kPartial>
__device__ __forceinline__ void load_round_values(const CsrSpmmParams& p, std::int32_t i, std::int32_t end,
                                                  std::int32_t stride, float (&vals)[kUnroll]) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    vals[u] = !kPartial || i + u * stride < end ? entry_value<kMode>(p, i + u * stride) : 0.0f;
}

/// acc += a round's values times their B rows' chunks at `b_cols`, the B loads all issued before the first
/// product; kPartial: entries past the row's end are zero values times zero B (adding nothing).
template <OperandMode kMode, BRead kRead, bool kPartial>
__device__ __forceinline__ void fma_round(const CsrSpmmParams& p, const BElement<kMode>* b_cols, int cols,
                                          const std::int32_t (&rows)[kUnroll], const float (&vals)[kUnroll],
                                          std::int32_t i, std::int32_t end, std::int32_t stride,
                                          float (&acc)[kThreadCols<kRead>]) {
  BChunk<kMode, kRead> bv[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    bv[u] = !kPartial || i + u * stride < end ? load_b_chunk<kMode, kRead>(p, b_cols, rows[u], cols)
                                              : BChunk<kMode, kRead>{};
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) fma_chunk<kMode, kRead>(acc, vals[u], bv[u]);
}

/// acc += entries first, first + stride, ... < end of the row, times the 8 columns of B at `b_cols` (the
/// first `cols_left` of them where fewer are left, the one with BRead::one_column). Entries go in rounds of kUnroll
/// independent loads; the last, partial round is predicated rather than run one entry at a time, so the
/// remaining entries cost one memory latency, not one each. (Predicating every round measured 8-13% slower on
/// Andrews at n = 64 and 256.)
template <OperandMode kMode, BRead kRead>
__device__ __forceinline__ void accumulate_entries(const CsrSpmmParams& p, const BElement<kMode>* b_cols,
                                                   int cols_left, std::int32_t first, std::int32_t end,
                                                   std::int32_t stride, float (&acc)[kThreadCols<kRead>]) {
  const int cols = cols_left < 8 ? cols_left : 8;
  auto round = [&](std::int32_t i, auto partial) {
    constexpr bool kPartial = decltype(partial)::value;
    std::int32_t rows[kUnroll];
    float vals[kUnroll];
    load_round_rows<kPartial>(p, i, end, stride, rows);
    load_round_values<kMode, kPartial>(p, i, end, stride, vals);
    fma_round<kMode, kRead, kPartial>(p, b_cols, cols, rows, vals, i, end, stride, acc);
  };
  std::int32_t i = first;
  for (; i + (kUnroll - 1) * stride < end; i += kUnroll * stride) round(i, std::false_type{});
  if (i < end) round(i, std::true_type{});
}

/// Quads of entries a lane of a one-column row loads per round: 8 B rows in flight, as many as two rounds of
/// kUnroll single entries; split values (a second 8-byte load per quad) keep one quad, as ptxas spilled 56 bytes at
/// the one-column kernel's 32 registers with two.
template <OperandMode kMode>
inline constexpr int kQuadsPerRound = kMode == OperandMode::split_f32b ? 1 : 2;

/// n = 1: acc += entries first .. end - 1 of the copy times B's one column, read as aligned quads: quad q is
/// entries 4q .. 4q + 3, one 16-byte load of their B rows and one 8-byte load of their values (the copy's entry
/// arrays are padded to whole quads, device_matrix.cpp upload_csr). The row's `lanes` lanes take its quads in
/// turn from `lane` on; entries of a quad outside the row are masked (value 0, B not read). Two loads per 4 entries
/// instead of eight, each of whole 16- or 8-byte pieces: with 2 lanes per row (power_law:1000000) a single-entry
/// load read 8 bytes or fewer of each of 16 rows (147 -> 142 us there, run 68).
template <OperandMode kMode>
__device__ __forceinline__ void accumulate_quads(const CsrSpmmParams& p, std::int32_t first, std::int32_t end,
                                                 int lane, int lanes, float& acc) {
  const BElement<kMode>* const b = b_matrix<kMode>(p);
  const std::int32_t quad_end = (end + 3) / 4;
#pragma unroll 1  // a round's loads are its own unrolling; ptxas unrolled this loop further and spilled
  for (std::int32_t q0 = first / 4 + lane; q0 < quad_end; q0 += kQuadsPerRound<kMode> * lanes) {
    int4 rows[kQuadsPerRound<kMode>];
    uint2 bits[kQuadsPerRound<kMode>], lo_bits[kQuadsPerRound<kMode>] = {};  // lo: split precision only
#pragma unroll
    for (int u = 0; u < kQuadsPerRound<kMode>; ++u) {
      const std::int32_t q = q0 + u * lanes;
      const bool inside = q < quad_end;
      rows[u] = inside ? __ldg(reinterpret_cast<const int4*>(p.b_row) + q) : make_int4(0, 0, 0, 0);
      bits[u] = inside ? __ldg(reinterpret_cast<const uint2*>(p.values) + q) : make_uint2(0, 0);
      if constexpr (kMode == OperandMode::split_f32b)
        lo_bits[u] = inside ? __ldg(reinterpret_cast<const uint2*>(p.values_lo) + q) : make_uint2(0, 0);
    }
    // Entries of a quad outside the row: their B element is not read and their value is not multiplied (a
    // neighbouring row's value may be inf or NaN).
    unsigned in_row[kQuadsPerRound<kMode>];
    BElement<kMode> bv[kQuadsPerRound<kMode>][4];
#pragma unroll
    for (int u = 0; u < kQuadsPerRound<kMode>; ++u) {
      in_row[u] = quad_mask(unsigned(q0 + u * lanes) * 4u, unsigned(first), unsigned(end));
      const int r[4] = {rows[u].x, rows[u].y, rows[u].z, rows[u].w};
#pragma unroll
      for (int e = 0; e < 4; ++e)
        bv[u][e] = (in_row[u] >> e) & 1u ? __ldg(b + std::size_t(r[e]) * p.ldb) : BElement<kMode>(0);
    }
#pragma unroll
    for (int u = 0; u < kQuadsPerRound<kMode>; ++u)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float v = decode_value<kMode>(quad_bits(bits[u], e), quad_bits(lo_bits[u], e));
        acc = fmaf((in_row[u] >> e) & 1u ? v : 0.0f, b_value_f32<kMode>(bv[u][e]), acc);
      }
  }
}

/// acc_a += the first `len_a` entries of the stream, acc_b += the rest: a pair of short rows as one stream of
/// `len_a + len_b` entries (entry j is row a's first_a + j, or row b's first_b + j - len_a), taken from `lane` on in
/// steps of `stride`, in rounds of kUnroll independent loads like accumulate_entries. Two rows of two entries
/// fill one round where each alone left half of it idle, and the pair pays one chain of dependent loads (its
/// rows' starts, one round, B) where two groups paid one each. An entry's product goes to its own row's sums only
/// (a branch, not a multiplication by zero: B may hold inf or NaN in a row the other row does not read).
template <OperandMode kMode>
__device__ __forceinline__ void accumulate_pair_entries(const CsrSpmmParams& p, const BElement<kMode>* b_cols,
                                                        std::int32_t first_a, std::int32_t len_a, std::int32_t first_b,
                                                        std::int32_t total, int lane, int stride, int cols_left,
                                                        float (&acc_a)[8], float (&acc_b)[8]) {
  const int cols = cols_left < 8 ? cols_left : 8;
  auto entry = [&](std::int32_t j) { return j < len_a ? first_a + j : first_b + (j - len_a); };
  for (std::int32_t j0 = lane; j0 < total; j0 += kUnroll * stride) {
    std::int32_t rows[kUnroll];
    float vals[kUnroll];
    BChunk<kMode, BRead::chunk> bv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int32_t j = j0 + u * stride;
      const std::int32_t i = entry(j);
      rows[u] = j < total ? __ldg(p.b_row + i) : 0;
      vals[u] = j < total ? entry_value<kMode>(p, i) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      bv[u] = j0 + u * stride < total ? load_b_chunk<kMode, BRead::chunk>(p, b_cols, rows[u], cols)
                                      : BChunk<kMode, BRead::chunk>{};
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (j0 + u * stride < len_a)
        fma_chunk<kMode, BRead::chunk>(acc_a, vals[u], bv[u]);
      else
        fma_chunk<kMode, BRead::chunk>(acc_b, vals[u], bv[u]);
    }
  }
}

}  // namespace bcsr24::kernels::csr
