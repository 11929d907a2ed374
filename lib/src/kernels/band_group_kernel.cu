// The band-group kernel: kGroupBands consecutive tile bands per thread block, one consumer warp per band, and
// kGroupProducers producer warps that load each B block once for every band of the group that has a tile in
// its tile column (docs/KERNELS.md, "Band groups").
//
// Why: at n >= 128 the one-band kernel reads a tile's B block (32 rows x 64 columns, 4 KB) from L2 for every
// tile, 4x the tile's own bytes, and L2 throughput bounds it. Bands of a group walk their tile columns in one
// merged order ("steps"); a step carries one B block and the group's tiles in that column, so the B bytes fall
// by the tiles per step (about 2 at 10% tile density).
//
// Pipeline: kGroupStages shared-memory stages, each a B block (one TMA tensor copy, 128-byte swizzle: the
// ldmatrix reads below are free of bank conflicts) and kGroupTilesPerStep A-tile slots (bulk copies). Producer
// q fills the stages of steps q, q + kGroupProducers, ...: it waits until the stage is empty, announces the bytes
// on the stage's "full" barrier and issues the copies, whose completion completes the barrier's phase. Consumer
// warps wait only on the steps that hold their band's tiles (a warp has a tile in about one step in ten) and
// release them on the stage's "empty" barrier, whose phase needs 32 arrivals per slot: the lanes of the warps of
// the step's tiles (each lane releases its own reads) and, for the slots the step leaves unused, the producer. A consumer first checks that its
// producer has issued the step: its wait on the stage's full barrier is then on the right phase (a parity wait
// cannot tell phases two apart). The 2:4 steps and the dense steps are two loops each, without a branch on the
// tile kind; every band's tiles are summed in its step order, so the result is the same bit for bit every run.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <string>

#include "bcsr24/error.hpp"
#include "format/tile_layout.hpp"
#include "device/cuda_check.hpp"
#include "kernels/band_group_params.hpp"
#include "kernels/epilogue.cuh"
#include "kernels/ptx_sm80.cuh"
#include "kernels/ptx_sm90.cuh"

namespace bcsr24::kernels {
namespace {

constexpr int kBBlockBytes = kTileCols * kGroupSliceWidth * 2;  // 32 rows x 64 columns of 16-bit B
constexpr int kSlotBytes = kDenseTileValues * 2;                 // a dense tile; a 2:4 tile's values + metadata fit
constexpr int kStageBytes = kBBlockBytes + kGroupTilesPerStep * kSlotBytes;
constexpr int kBarrierBytes = 2 * kGroupStages * 8 + kGroupProducers * 4;
// 1 KB of slack: the 128-byte swizzle needs the B blocks 1024-byte aligned, which dynamic shared memory is not
// promised to be.
constexpr int kSharedBytes = kGroupStages * kStageBytes + kBarrierBytes + 1024;
constexpr int kThreads = (kGroupBands + kGroupProducers) * 32;
static_assert(kStageBytes % 1024 == 0, "every stage's B block stays 1024-byte aligned");
static_assert(kSparseTileValues * 2 + kSparseTileMetaWords * 4 <= kSlotBytes, "a 2:4 tile fits a slot");

// Device code for compute capability 9.0 and newer only (the sm_80 build keeps an empty kernel that plans never
// launch: kernels::band_groups_supported).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900

constexpr int kSparseMetaOffset = kSparseTileValues * 2;  // 2:4 slot: 512 bytes of values, then 64 of metadata

/// The producers' progress counters: producer q publishes "steps issued" with an atomic exchange that has release
/// semantics, after the step's barrier operations and copies; a consumer's lanes poll it with acquire loads. A
/// plain st.release orders the same way, but compute-sanitizer's racecheck reports each such store / ld.acquire
/// pair on shared memory as a hazard and accepts the atomic store (probed on the H100; docs/PERFORMANCE.md, same
/// speed). An earlier trial that also polled with atomic read-modify-writes measured 1.7x the time and wrong
/// products, for reasons not found; the loads here are plain acquire loads.
__device__ __forceinline__ void publish_release(std::uint32_t addr, std::int32_t value) {
  ptx::atom_exch_release_cta_shared(addr, value);
}

/// Shared state of one block: stage addresses and barriers.
struct GroupStages {
  unsigned char* base;   // stage 0, 1024-byte aligned
  std::uint32_t base_addr;
  std::uint32_t full0;   // barrier of stage 0 (8 bytes each)
  std::uint32_t empty0;
  std::uint32_t issued0;  // per producer (4 bytes each): steps it has issued, i.e. its last step + 1

  __device__ std::uint32_t stage(int s) const { return base_addr + std::uint32_t(s) * kStageBytes; }
  __device__ std::uint32_t full(int s) const { return full0 + 8u * std::uint32_t(s); }
  __device__ std::uint32_t empty(int s) const { return empty0 + 8u * std::uint32_t(s); }
  __device__ std::uint32_t issued(int q) const { return issued0 + 4u * std::uint32_t(q); }
};

/// Producer q's steps of one list: steps first, first + kGroupProducers, ... below `end` (group-relative).
template <bool kSparse>
__device__ __forceinline__ void produce_steps(const GroupStages& g, const BandGroupStep* steps, int first, int end,
                                              const TileListView& list, const CUtensorMap* b_map, int n0, int q,
                                              int lane) {
  BandGroupStep batch{}, next{};
  if (first + lane * kGroupProducers < end) next = steps[first + lane * kGroupProducers];
  int own = 0;
  for (int it = first; it < end; it += kGroupProducers, ++own) {
    if (own % 32 == 0) {  // descriptors of this producer's next 32 steps, one per lane, fetched a batch ahead
      batch = next;
      const int ahead = it + (32 + lane) * kGroupProducers;
      if (ahead < end) next = steps[ahead];
    }
    const int from = own % 32;
    const int col = __shfl_sync(0xffffffffu, batch.col, from);
    const int count = __shfl_sync(0xffffffffu, batch.count, from);
    const std::int32_t t0 = __shfl_sync(0xffffffffu, batch.tile[0], from);
    const std::int32_t t1 = __shfl_sync(0xffffffffu, batch.tile[1], from);
    const std::int32_t t2 = __shfl_sync(0xffffffffu, batch.tile[2], from);
    const std::int32_t t3 = __shfl_sync(0xffffffffu, batch.tile[3], from);
    const std::int32_t tile = lane == 0 ? t0 : lane == 1 ? t1 : lane == 2 ? t2 : t3;
    const int s = it % kGroupStages;
    const std::uint32_t round = std::uint32_t(it / kGroupStages);
    const std::uint32_t st = g.stage(s);
    constexpr std::uint32_t kABytes = kSparse ? kSparseTileValues * 2 + kSparseTileMetaWords * 4 : kSlotBytes;
    // Every lane waits: each one's copies into the stage then follow, in its own order, the consumers' release
    // of the stage. Round 0: a fresh barrier's "previous phase" counts as complete.
    ptx::mbarrier_wait_parity(g.empty(s), (round & 1u) ^ 1u);
    if (lane == 0) {
      ptx::mbarrier_arrive_expect_tx(g.full(s), kBBlockBytes + std::uint32_t(count) * kABytes);
      ptx::cp_async_bulk_tensor_2d_global_to_shared(st, b_map, n0, col * kTileCols, g.full(s));
    }
    __syncwarp();
    if (lane < count) {
      const std::uint32_t slot = st + kBBlockBytes + std::uint32_t(lane) * kSlotBytes;
      if constexpr (kSparse) {
        ptx::cp_async_bulk_global_to_shared(slot, list.values + std::size_t(tile) * kSparseTileValues,
                                            kSparseTileValues * 2, g.full(s));
        ptx::cp_async_bulk_global_to_shared(slot + kSparseMetaOffset,
                                            list.metadata + std::size_t(tile) * kSparseTileMetaWords,
                                            kSparseTileMetaWords * 4, g.full(s));
      } else {
        ptx::cp_async_bulk_global_to_shared(slot, list.values + std::size_t(tile) * kDenseTileValues, kSlotBytes,
                                            g.full(s));
      }
    }
    __syncwarp();
    if (lane == 0) {
      if (count < kGroupTilesPerStep)  // the unused slots' share of the stage's release, 32 arrivals each
        ptx::mbarrier_arrive(g.empty(s), std::uint32_t(32 * (kGroupTilesPerStep - count)));
      publish_release(g.issued(q), it + 1);  // after this step's barrier operations and copies
    }
  }
}

/// One consumer warp's tiles of one list: entries [begin, end) (step << 2 | slot), in step order.
template <bool kSparse, bool kBf16>
__device__ __forceinline__ void consume_steps(const GroupStages& g, const std::int32_t* entries, int begin, int end,
                                              float (&acc)[kGroupSliceWidth / 8][4], int lane) {
  std::int32_t batch = 0;
  for (int e = begin; e < end; ++e) {
    if ((e - begin) % 32 == 0 && e + lane < end) batch = entries[e + lane];
    const std::int32_t entry = __shfl_sync(0xffffffffu, batch, (e - begin) % 32);
    const int step = entry >> 2, slot = entry & 3;
    const int s = step % kGroupStages;
    while (ptx::ld_acquire_cta_shared(g.issued(step % kGroupProducers)) <= step) __nanosleep(20);
    ptx::mbarrier_wait_parity(g.full(s), std::uint32_t(step / kGroupStages) & 1u);
    // Lanes leave both waits independently; ldmatrix and mma below are .sync.aligned and need the whole warp.
    __syncwarp();
    const unsigned char* a_slot = g.base + std::size_t(s) * kStageBytes + kBBlockBytes + slot * kSlotBytes;
    const std::uint32_t b_row = g.stage(s) + std::uint32_t(lane) * (kGroupSliceWidth * 2);
    const uint4 a0 = *reinterpret_cast<const uint4*>(a_slot + lane * 16);
    if constexpr (kSparse) {
      const std::uint32_t meta =
          *reinterpret_cast<const std::uint32_t*>(a_slot + kSparseMetaOffset + metadata_word_of_lane(lane) * 4);
#pragma unroll
      for (int j = 0; j < kGroupSliceWidth / 8; ++j) {
        std::uint32_t b[4];
        // Row `lane` of the block, 16-byte chunk j, which the 128-byte swizzle put at chunk j ^ (row % 8).
        ptx::ldmatrix_x4_trans(b, b_row + std::uint32_t((j ^ (lane & 7)) * 16));
        ptx::mma_sp_m16n8k32_f32<kBf16>(acc[j], a0, b, meta);
      }
    } else {
      const uint4 a1 = *reinterpret_cast<const uint4*>(a_slot + 512 + lane * 16);
#pragma unroll
      for (int j = 0; j < kGroupSliceWidth / 8; ++j) {
        std::uint32_t b[4];
        ptx::ldmatrix_x4_trans(b, b_row + std::uint32_t((j ^ (lane & 7)) * 16));
        ptx::mma_m16n8k16_f32<kBf16>(acc[j], a0, b[0], b[1]);
        ptx::mma_m16n8k16_f32<kBf16>(acc[j], a1, b[2], b[3]);
      }
    }
    ptx::mbarrier_arrive(g.empty(s));  // every lane releases its own reads of the stage
  }
}

#endif  // compute capability 9.0

template <bool kBf16, typename OutT>
__global__ void __launch_bounds__(kThreads, 1)
    bcsr24_band_group_kernel(const BandGroupParams p, const __grid_constant__ CUtensorMap b_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  GroupStages g;
  {
    const std::uint32_t raw = ptx::smem_addr(smem_raw);
    const std::uint32_t pad = (1024u - (raw & 1023u)) & 1023u;
    g.base = smem_raw + pad;
    g.base_addr = raw + pad;
    g.full0 = g.base_addr + kGroupStages * kStageBytes;
    g.empty0 = g.full0 + 8 * kGroupStages;
    g.issued0 = g.empty0 + 8 * kGroupStages;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = blockIdx.x / p.n_slices;
  const int n0 = (blockIdx.x % p.n_slices) * kGroupSliceWidth;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kGroupStages; ++s) {
      ptx::mbarrier_init(g.full(s), 1);  // the producer's arrival; the copies' bytes complete it
      // 32 per slot: the lanes of the warp whose tile it holds, or the producer for a slot the step leaves unused.
      ptx::mbarrier_init(g.empty(s), 32 * kGroupTilesPerStep);
    }
    for (int q = 0; q < kGroupProducers; ++q) publish_release(g.issued(q), 0);
    ptx::fence_mbarrier_init();  // visible to the copy engine
    ptx::prefetch_tensormap(&b_map);
  }
  __syncthreads();
  const BandGroup steps_of = p.groups[group];
  const BandGroupStep* steps = p.steps + steps_of.step_begin;
  const int dense_first = steps_of.dense_begin - steps_of.step_begin;
  const int step_count = steps_of.step_end - steps_of.step_begin;

  if (warp >= kGroupBands) {
    const int q = warp - kGroupBands;
    // This producer's first dense step: the first at or after dense_first that is q mod kGroupProducers.
    const int dense_start = dense_first + ((q - dense_first) % kGroupProducers + kGroupProducers) % kGroupProducers;
    produce_steps<true>(g, steps, q, dense_first, p.sparse24, &b_map, n0, q, lane);
    produce_steps<false>(g, steps, dense_start, step_count, p.dense, &b_map, n0, q, lane);
    return;
  }

  float acc[kGroupSliceWidth / 8][4];
#pragma unroll
  for (int j = 0; j < kGroupSliceWidth / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
  const int w = group * kGroupBands + warp;
  const std::int32_t tile_row = p.group_rows[w];
  if (tile_row < 0) return;  // the last group may have fewer bands
  const std::int32_t sparse_begin = p.entry_ptr[2 * w], dense_begin = p.entry_ptr[2 * w + 1],
                     dense_end = p.entry_ptr[2 * w + 2];
  // beta == 1 leaves a band without entries as it is (SpmmPlan::run promises not to touch those rows of C).
  if (sparse_begin == dense_end && p.beta == 1.0f && p.addends.count == 0) return;
  consume_steps<true, kBf16>(g, p.entries, sparse_begin, dense_begin, acc, lane);
  consume_steps<false, kBf16>(g, p.entries, dense_begin, dense_end, acc, lane);

  // Epilogue: this warp owns its band's 16 x 64 result. Accumulator element (j, e) of lane 4r + t is row r +
  // 8 * (e / 2), column 8j + 2t + e % 2.
  OutT* c = static_cast<OutT*>(p.c);
  const int r = lane >> 2, t = lane & 3;
  // Columns 2t and 2t + 1 in one access where C's rows keep pairs aligned.
  const bool pairs_aligned = reinterpret_cast<std::uintptr_t>(c) % (2 * sizeof(OutT)) == 0 && p.ldc % 2 == 0;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const std::int32_t stored_row = tile_row * kTileRows + r + 8 * half;
    const std::int32_t out_row = p.row_map ? p.row_map[stored_row] : stored_row;
    if (out_row < 0 || out_row >= p.rows) continue;
    const int exponent = p.stored_row_exponent ? p.stored_row_exponent[stored_row] : 0;
    const float multiplier = row_multiplier(p.alpha, exponent);
    OutT* out = c + std::size_t(out_row) * p.ldc;
#pragma unroll
    for (int j = 0; j < kGroupSliceWidth / 8; ++j) {
      const int col = n0 + 8 * j + 2 * t;
      if (col >= p.n) continue;
      float v[2] = {acc[j][2 * half], acc[j][2 * half + 1]};
      const OutputRun run{out_row, col, multiplier, exponent, pairs_aligned};
      write_output_run<2>(out + col, run, p.n, p.alpha, p.beta, p.addends, v);
    }
  }
#endif
}

/// The kernel instantiation of a mode and output type.
using GroupKernel = void (*)(const BandGroupParams, const CUtensorMap);
GroupKernel choose(OperandMode mode, ElementType out) {
  if (mode == OperandMode::f16)
    return out == ElementType::f16 ? bcsr24_band_group_kernel<false, __half> : bcsr24_band_group_kernel<false, float>;
  if (mode == OperandMode::bf16 && out == ElementType::f32) return bcsr24_band_group_kernel<true, float>;
  throw InvalidArgument(std::string("band groups: no kernel for operand mode ") + operand_mode_name(mode) +
                        " with this output type (16-bit A and B, fp32 C; fp16 C with fp16 A and B)");
}

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    BCSR24_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                                       &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr)
      throw CudaError("band groups: the driver has no cuTensorMapEncodeTiled (CUDA 12.0 or newer needed)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

}  // namespace

bool band_groups_supported(OperandMode mode, int device) {
  if (mode != OperandMode::f16 && mode != OperandMode::bf16) return false;
  int major = 0, block_shared = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
  // The 24 stages take ~193 KiB of shared memory: the sm_90 and sm_100 SMs (228 KiB) hold a block, the 100 KiB SMs
  // of other chips of compute capability 9.0 and newer (sm_120) do not.
  if (cudaDeviceGetAttribute(&block_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
    return false;
  return major >= 9 && block_shared >= kSharedBytes;
}

void configure_band_group_kernel(OperandMode mode, ElementType out) {
  BCSR24_CUDA_CHECK(
      cudaFuncSetAttribute(choose(mode, out), cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes));
}

void launch_band_group_kernel(OperandMode mode, ElementType out, const BandGroupParams& params,
                              const std::uint16_t* b, std::int32_t k, std::uint32_t b_pitch, BandGroupBMap& map,
                              cudaStream_t stream) {
  static_assert(sizeof(CUtensorMap) == sizeof(map.descriptor) && alignof(CUtensorMap) <= alignof(BandGroupBMap),
                "BandGroupBMap holds one CUtensorMap");
  if (params.n_groups == 0) return;
  CUtensorMap* b_map = reinterpret_cast<CUtensorMap*>(map.descriptor);
  if (!map.valid || map.b != b || map.pitch != b_pitch || map.k != k || map.n != params.n || map.mode != mode) {
    map.valid = false;
    const cuuint64_t dims[2] = {cuuint64_t(params.n), cuuint64_t(k)};  // columns, rows
    const cuuint64_t strides[1] = {cuuint64_t(b_pitch)};
    const cuuint32_t box[2] = {kGroupSliceWidth, kTileCols};
    const cuuint32_t element_strides[2] = {1, 1};
    const CUresult made = tensor_map_encoder()(
        b_map, mode == OperandMode::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
        const_cast<std::uint16_t*>(b), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (made != CUDA_SUCCESS)
      throw CudaError("band groups: cuTensorMapEncodeTiled failed (" + std::to_string(int(made)) + ") for B of " +
                      std::to_string(k) + " x " + std::to_string(params.n) + ", pitch " + std::to_string(b_pitch) +
                      " bytes");
    map.b = b;
    map.pitch = b_pitch;
    map.k = k;
    map.n = params.n;
    map.mode = mode;
    map.valid = true;
  }
  const unsigned blocks = unsigned(params.n_groups) * unsigned(params.n_slices);
  choose(mode, out)<<<blocks, kThreads, kSharedBytes, stream>>>(params, *b_map);
  BCSR24_CUDA_CHECK(cudaGetLastError());
}

}  // namespace bcsr24::kernels
