// Outputs summed by several blocks without float atomics: a tile band split into parts (spmm_kernel.cuh), a window
// of narrow vectors split into parts (vector_spmm.cu) and a CSR row split by entries (csr_kernel.cuh). Each part
// stores its sums, then counts itself on the output's counter; the part that counts last adds every part's sums in
// part order, so the bits are the same whichever part finishes last, and sets the counter back to zero for the
// next run (the plan zeroes the counters once). The fences make a part's sums visible device-wide before its count
// and the other parts' sums readable after the last count; the last part reads them from L2 (__ldcg), where other
// SMs wrote them.
#pragma once

namespace bcsr24::kernels {

/// One thread's count of its part on `counter`: true for the last of `parts`, which resets the counter.
__device__ __forceinline__ bool count_part(unsigned* counter, int parts) {
  const bool last = atomicAdd(counter, 1u) == unsigned(parts - 1);
  if (last) *counter = 0;  // every part has counted: zero for the next run
  return last;
}

/// A part computed by one warp, called by all its lanes after they stored their share of its sums: true in every
/// lane of the part that counts last. `counter` is read in lane 0 only.
__device__ __forceinline__ bool warp_part_is_last(unsigned* counter, int parts, int lane) {
  __threadfence();  // this part's sums are visible device-wide before the counter counts it
  __syncwarp();
  int last = 0;
  if (lane == 0) last = count_part(counter, parts);
  if (!__shfl_sync(0xffffffffu, last, 0)) return false;
  __threadfence();  // the other parts' sums are read after their counts
  return true;
}

/// A part computed by a whole block, called by all its threads after they stored their share of its sums; `flag`
/// is an int in shared memory. True in every thread of the part that counts last.
__device__ __forceinline__ bool block_part_is_last(unsigned* counter, int parts, int& flag) {
  __threadfence();  // this part's sums are visible device-wide before the counter counts it
  __syncthreads();
  if (threadIdx.x == 0) flag = count_part(counter, parts);
  __syncthreads();
  if (!flag) return false;
  __threadfence();  // the other parts' sums are read after their counts
  return true;
}

}  // namespace bcsr24::kernels
