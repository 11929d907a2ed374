// One small wrapper per PTX instruction the kernels use (sm_80+): cp.async, ldmatrix, mma, mma.sp (fp16 and bf16),
// and the block-scope acquire/release accesses. The sm_90 instructions are in ptx_sm90.cuh.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "bcsr24 kernels need sm_80 or newer (cp.async, mma.sp::ordered_metadata)"
#endif

namespace bcsr24::kernels::ptx {

/// Shared-memory address as the 32-bit value PTX's .shared state space expects.
__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// 16-byte global -> shared copy that bypasses L1 (.cg). Only `src_bytes` (0..16) are read; the rest of
/// the 16 destination bytes are zero-filled, which is how we pad B past its last row or column.
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}

/// 8-byte global -> shared copy (.ca: cp.async takes 8-byte copies only through L1). The narrow-vector kernel
/// brings each lane's 8 bytes of a group's values with it.
__device__ __forceinline__ void cp_async_8(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

/// Waits until at most `kPending` committed groups of this thread are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

/// Four transposed 8x8 fp16 matrices from shared memory. Lane l supplies the address of row l % 8 of
/// matrix l / 8; lane 4g+t receives, of each matrix, the elements [row 2t, 2t+1][column g], which is the
/// mma B-fragment order when the matrices are K-major rows of B.
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/// 4 bytes from shared memory at a 32-bit shared address (4-byte aligned).
__device__ __forceinline__ std::uint32_t lds_32(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

/// 8 bytes from shared memory at a 32-bit shared address (8-byte aligned): no 64-bit generic pointer to keep live.
__device__ __forceinline__ uint2 lds_64(std::uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}

/// D = A * B + D, dense m16n8k16, fp16 (or, kBf16, bf16) inputs, fp32 accumulators.
template <bool kBf16 = false>
__device__ __forceinline__ void mma_m16n8k16_f32(float (&d)[4], const uint4& a, std::uint32_t b0, std::uint32_t b1) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
  }
}

/// D = A * B + D, 2:4-sparse m16n8k32: A is the compressed 16x16 fragment, `meta` its ordered metadata,
/// sparsity selector 0 (lanes 4g and 4g+1 supply the metadata). fp16 (or, kBf16, bf16) inputs.
template <bool kBf16 = false>
__device__ __forceinline__ void mma_sp_m16n8k32_f32(float (&d)[4], const uint4& a, const std::uint32_t (&b)[4],
                                                    std::uint32_t meta) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(meta));
  } else {
    asm volatile(
        "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(meta));
  }
}

/// Atomic exchange with release semantics at block scope on a shared-memory word (the old value is dropped).
__device__ __forceinline__ void atom_exch_release_cta_shared(std::uint32_t addr, std::int32_t value) {
  asm volatile("atom.release.cta.shared::cta.exch.b32 _, [%0], %1;" ::"r"(addr), "r"(value) : "memory");
}

/// Load with acquire semantics at block scope from a shared-memory word.
__device__ __forceinline__ std::int32_t ld_acquire_cta_shared(std::uint32_t addr) {
  std::int32_t value;
  asm volatile("ld.acquire.cta.shared::cta.b32 %0, [%1];" : "=r"(value) : "r"(addr) : "memory");
  return value;
}

}  // namespace bcsr24::kernels::ptx
