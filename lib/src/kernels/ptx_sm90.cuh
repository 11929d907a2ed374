// One small wrapper per PTX instruction of compute capability 9.0 that the band-group kernel uses: mbarrier waits
// and arrivals, bulk and tensor (TMA) copies that complete a barrier's transaction count, and their fences. The
// sm_80 instructions (cp.async, ldmatrix, mma, the acquire/release accesses) are in ptx_sm80.cuh.
//
// The wrappers exist only in device code for sm_90 and newer: an sm_80 pass sees none of them, so a kernel that
// uses them must keep its body behind the same test (band_group_kernel.cu compiles an empty kernel for sm_80).
#pragma once

#include <cuda.h>

#include <cstdint>

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900

namespace bcsr24::kernels::ptx {

/// Initialises the mbarrier at shared address `bar` to expect `count` arrivals per phase.
__device__ __forceinline__ void mbarrier_init(std::uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

/// Makes the barrier initialisations of this thread visible to the asynchronous proxy (the copy engine) before
/// any copy is told to complete on them.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/// One arrival that also announces `bytes` more of the phase's transaction count (the copies issued for the phase
/// complete it as their bytes land).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

/// `count` arrivals on the barrier (the returned phase token is not kept: waits go by parity).
__device__ __forceinline__ void mbarrier_arrive(std::uint32_t bar, std::uint32_t count = 1) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

/// Waits until the barrier's phase of parity `parity` has completed (try_wait in a loop: the instruction itself
/// may return before the phase completes).
__device__ __forceinline__ void mbarrier_wait_parity(std::uint32_t bar, std::uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar), "r"(parity)
      : "memory");
}

/// Bulk copy of `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to shared memory; its bytes
/// count towards the transaction count of barrier `bar`.
__device__ __forceinline__ void cp_async_bulk_global_to_shared(std::uint32_t dst, const void* src,
                                                               std::uint32_t bytes, std::uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

/// Tensor (TMA) copy of the box at coordinates (x, y) of the 2-d tensor map `map` into shared memory at `dst`;
/// elements outside the tensor arrive as zeros, and the box's bytes count towards barrier `bar`.
__device__ __forceinline__ void cp_async_bulk_tensor_2d_global_to_shared(std::uint32_t dst, const CUtensorMap* map,
                                                                         int x, int y, std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

/// Brings a tensor map (a kernel parameter) into the descriptor cache before its first copy.
__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

}  // namespace bcsr24::kernels::ptx

#endif  // compute capability 9.0
