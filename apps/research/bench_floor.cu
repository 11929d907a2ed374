// bench_floor: the data-movement floor of the one-band-per-block tile kernel on a matrix's own tile grid.
//
// Why: two issue targets compare kernels against each other (the 2:4 path against the dense path; fp32 B against
// fp16 B). Whether a ratio is reachable at all depends on how long merely moving each kernel's bytes takes, fixed
// costs of a launch included. This program runs kernels that do exactly the tile kernel's data movement and
// nothing else: one block of 4 warps per tile row, warp w takes tiles w, w + 4, ... of the row's 2:4 list and
// then of its dense list (as bcsr24_spmm_kernel does), copies each A tile (576 or 1024 bytes) and the B block it
// multiplies (32 rows x n columns, fp16 or fp32) into a per-warp ring of shared-memory stages with the kernels' own
// cp.async wrappers (kernels/ptx_sm80.cuh), and writes a 16 x n fp32 block of C per row. No mma, no conversion, no
// cross-warp reduction: a kernel that computes the product with this schedule over the same lists cannot be faster
// than this by more than noise. Timing as bench_spmm (L2 flushed by a read before each run, CUDA events, median);
// every variant is tried at several pipeline depths and the fastest is reported.
//
// Two references beside it bound other designs: a grid-stride read of the A bytes alone (nothing of the tile
// grid: no B, no C, no descriptors), and a persistent data flow in which each block streams a contiguous range
// of bands (their tiles lie back to back in the lists), a whole block copying a stage of several tiles at a time.
//
// Aligned tiles in file order only (the B block of a tile is then 32 consecutive rows of B).
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "format/convert.hpp"
#include "bcsr24/device.hpp"
#include "bcsr24/error.hpp"
#include "cuda_resources.hpp"
#include "gpu_timing.hpp"
#include "kernels/ptx_sm80.cuh"
#include "cli.hpp"
#include "matrix_source.hpp"

namespace {

using namespace bcsr24;
using bench::check_cuda;
namespace ptx = bcsr24::kernels::ptx;

constexpr int kWarps = 4;  // warps per block, as the tile kernel (kTileKernelWarps)
constexpr int kSparseABytes = kSparseTileValues * 2 + kSparseTileMetaWords * 4;  // 576
constexpr int kDenseABytes = kDenseTileValues * 2;                               // 1024
constexpr int kMaxStages = 8;

/// Tile ranges of one tile row in the two lists (the tile kernel reads one such descriptor per block).
struct FloorBand {
  std::int32_t sparse_begin, sparse_end, dense_begin, dense_end;
};

/// One warp's walk over its tiles of one list: the tile kernel's pipeline (kStages - 1 tiles ahead; the column
/// indices of the next 32 tiles held one per lane) with the arithmetic replaced by one shared-memory read.
template <int kABytes, int kBBytes, int kStages>
__device__ __forceinline__ unsigned move_list(const unsigned char* a, const std::int32_t* col, const unsigned char* b,
                                              std::int32_t first, std::int32_t count, unsigned char* ring, int lane) {
  constexpr int kStageBytes = kABytes + kBBytes;
  const std::uint32_t ring_address = ptx::smem_addr(ring);
  std::int32_t lane_col = lane < count ? col[first + lane * kWarps] : 0;
  std::int32_t chunk_base = 0;
  auto copy_tile = [&](std::int32_t i, int stage) {  // i increases by one per call
    if (i - chunk_base == kWarpSize) {
      chunk_base = i;
      lane_col = i + lane < count ? col[first + (i + lane) * kWarps] : 0;
    }
    const std::int32_t tile_col = __shfl_sync(0xffffffffu, lane_col, i - chunk_base);
    if (i >= count) return;
    const std::uint32_t dst = ring_address + std::uint32_t(stage * kStageBytes);
    const unsigned char* a_tile = a + std::size_t(first + i * kWarps) * kABytes;
#pragma unroll
    for (int c = lane; c < kABytes / 16; c += kWarpSize) ptx::cp_async_16(dst + c * 16, a_tile + c * 16, 16);
    const unsigned char* b_block = b + std::size_t(tile_col) * kBBytes;
#pragma unroll
    for (int c = lane; c < kBBytes / 16; c += kWarpSize) ptx::cp_async_16(dst + kABytes + c * 16, b_block + c * 16, 16);
  };
  unsigned sum = 0;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    copy_tile(s, s);
    ptx::cp_async_commit();
  }
  int read_stage = 0, write_stage = kStages - 1;
  for (std::int32_t i = 0; i < count; ++i) {
    copy_tile(i + kStages - 1, write_stage);
    ptx::cp_async_commit();
    ptx::cp_async_wait<kStages - 1>();
    __syncwarp();
    sum += reinterpret_cast<const unsigned*>(ring + read_stage * kStageBytes)[lane];
    __syncwarp();  // the stage is read before a later copy overwrites it
    read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
  }
  ptx::cp_async_wait<0>();
  return sum;
}

/// Stages of the 2:4 loop: as many as fit in the space of the dense loop's (the tile kernel's rule), at most 8.
__host__ __device__ constexpr int sparse_stages_for(int dense_stages, int b_bytes) {
  const int fit = dense_stages * (kDenseABytes + b_bytes) / (kSparseABytes + b_bytes);
  return dense_stages == 1 ? 1 : (fit > kMaxStages ? kMaxStages : fit);
}

template <int kBBytes, int kDenseStages>
__global__ void __launch_bounds__(kWarps * kWarpSize) movement_kernel(
    const FloorBand* bands, const unsigned char* sparse_a, const std::int32_t* sparse_col,
    const unsigned char* dense_a, const std::int32_t* dense_col, const unsigned char* b, int warp_ring_bytes, int n,
    float* c) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const FloorBand band = bands[blockIdx.x];
  unsigned char* ring = smem + warp * warp_ring_bytes;
  auto share = [&](std::int32_t begin, std::int32_t end, std::int32_t& first, std::int32_t& count) {
    first = begin + warp;
    count = end > first ? (end - first + kWarps - 1) / kWarps : 0;
  };
  std::int32_t first = 0, count = 0;
  share(band.sparse_begin, band.sparse_end, first, count);
  unsigned sum = move_list<kSparseABytes, kBBytes, sparse_stages_for(kDenseStages, kBBytes)>(
      sparse_a, sparse_col, b, first, count, ring, lane);
  share(band.dense_begin, band.dense_end, first, count);
  sum += move_list<kDenseABytes, kBBytes, kDenseStages>(dense_a, dense_col, b, first, count, ring, lane);
  __syncthreads();
  // The band's 16 x n block of C (the values only keep the loads alive).
  for (int e = threadIdx.x; e < kTileRows * n; e += blockDim.x)
    c[std::size_t(blockIdx.x) * kTileRows * n + e] = float(sum & 0xffu) + float(e);
}

/// Reads `count` 16-byte words once (streaming loads, four in flight per thread): what reading a matrix's A
/// bytes costs with nothing else to do.
__global__ void read_words_kernel(const uint4* words, std::size_t count, unsigned* sink) {
  constexpr int kInFlight = 4;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  unsigned sum = 0;
  for (; i + (kInFlight - 1) * stride < count; i += kInFlight * stride) {
    uint4 v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) v[u] = __ldcs(words + i + u * stride);
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) sum += v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < count; i += stride) {
    const uint4 v = __ldcs(words + i);
    sum += v.x ^ v.y ^ v.z ^ v.w;
  }
  if (sum == 0x9e3779b9u) *sink = sum;  // keeps the loads; practically never true
}

constexpr int kStreamThreads = 128;

/// The persistent data flow over one list: the block's tiles [first, last) in stages of kTiles consecutive tiles,
/// every thread copying part of a stage's A bytes (contiguous) and of its B blocks (gathered by tile column). The
/// columns of the stage after the next are loaded into registers one stage ahead, so that no copy waits for them.
template <int kABytes, int kBBytes, int kTiles, int kStages>
__device__ __forceinline__ unsigned stream_list(const unsigned char* a, const std::int32_t* col, const unsigned char* b,
                                                std::int32_t first, std::int32_t last, unsigned char* ring) {
  static_assert(kBBytes >= 16, "the stream always copies B blocks");
  constexpr int kStageBytes = kTiles * (kABytes + kBBytes);
  constexpr int kBChunks = kBBytes / 16;
  constexpr int kChunksPerThread = (kTiles * kBChunks + kStreamThreads - 1) / kStreamThreads;
  const std::uint32_t ring_address = ptx::smem_addr(ring);
  const std::int32_t stages = (last - first + kTiles - 1) / kTiles;
  std::int32_t next_cols[kChunksPerThread];
  auto load_cols = [&](std::int32_t stage) {
#pragma unroll
    for (int j = 0; j < kChunksPerThread; ++j) {
      const std::int32_t tile = first + stage * kTiles + (int(threadIdx.x) + j * kStreamThreads) / kBChunks;
      next_cols[j] = stage < stages && tile < last ? col[tile] : 0;
    }
  };
  auto copy_stage = [&](std::int32_t stage) {  // issues the copies of `stage` with the columns loaded for it
    if (stage < stages) {
      const std::int32_t t0 = first + stage * kTiles;
      const int tiles = min(kTiles, last - t0);
      const std::uint32_t dst = ring_address + std::uint32_t((stage % kStages) * kStageBytes);
      const unsigned char* src = a + std::size_t(t0) * kABytes;
      for (int q = threadIdx.x; q < tiles * kABytes / 16; q += kStreamThreads)
        ptx::cp_async_16(dst + q * 16, src + q * 16, 16);
#pragma unroll
      for (int j = 0; j < kChunksPerThread; ++j) {
        const int q = threadIdx.x + j * kStreamThreads;
        if (q < tiles * kBChunks)
          ptx::cp_async_16(dst + kTiles * kABytes + q * 16,
                           b + std::size_t(next_cols[j]) * kBBytes + (q % kBChunks) * 16, 16);
      }
    }
    ptx::cp_async_commit();
  };
  for (int s = 0; s < kStages - 1; ++s) {
    load_cols(s);
    copy_stage(s);
  }
  load_cols(kStages - 1);
  unsigned sum = 0;
  for (std::int32_t s = 0; s < stages; ++s) {
    copy_stage(s + kStages - 1);
    load_cols(s + kStages);
    ptx::cp_async_wait<kStages - 1>();
    __syncthreads();
    sum += reinterpret_cast<const unsigned*>(ring + (s % kStages) * kStageBytes)[threadIdx.x];
    __syncthreads();  // the stage is read before a later copy overwrites it
  }
  ptx::cp_async_wait<0>();
  __syncthreads();
  return sum;
}

/// Block b streams the bands [band_first[b], band_first[b + 1]): their 2:4 tiles, then their dense tiles.
template <int kBBytes, int kTiles, int kStages>
__global__ void __launch_bounds__(kStreamThreads) stream_kernel(
    const std::int32_t* band_first, const FloorBand* bands, const unsigned char* sparse_a,
    const std::int32_t* sparse_col, const unsigned char* dense_a, const std::int32_t* dense_col, const unsigned char* b,
    int n, float* c) {
  extern __shared__ __align__(16) unsigned char smem[];
  const std::int32_t band_begin = band_first[blockIdx.x], band_end = band_first[blockIdx.x + 1];
  if (band_begin == band_end) return;
  const FloorBand head = bands[band_begin], tail = bands[band_end - 1];
  unsigned sum = stream_list<kSparseABytes, kBBytes, kTiles, kStages>(sparse_a, sparse_col, b, head.sparse_begin,
                                                                     tail.sparse_end, smem);
  sum += stream_list<kDenseABytes, kBBytes, kTiles, kStages>(dense_a, dense_col, b, head.dense_begin, tail.dense_end,
                                                            smem);
  // The bands' 16 x n blocks of C.
  const std::size_t c_first = std::size_t(band_begin) * kTileRows * n;
  for (std::size_t e = threadIdx.x; e < std::size_t(band_end - band_begin) * kTileRows * n; e += kStreamThreads)
    c[c_first + e] = float(sum & 0xffu) + float(e);
}

using StreamKernel = void (*)(const std::int32_t*, const FloorBand*, const unsigned char*, const std::int32_t*,
                              const unsigned char*, const std::int32_t*, const unsigned char*, int, float*);
struct StreamShape {
  int tiles, stages;
};
/// The stage shapes tried (tiles per stage, stages in the ring).
constexpr StreamShape kStreamShapes[] = {{4, 4}, {8, 4}, {8, 6}, {16, 4}};

template <int kBBytes>
StreamKernel stream_kernel_for_shape(StreamShape shape) {
  if (shape.tiles == 4) return stream_kernel<kBBytes, 4, 4>;
  if (shape.tiles == 16) return stream_kernel<kBBytes, 16, 4>;
  return shape.stages == 6 ? stream_kernel<kBBytes, 8, 6> : stream_kernel<kBBytes, 8, 4>;
}
StreamKernel stream_kernel_for(int b_bytes, StreamShape shape) {
  switch (b_bytes) {
    case 512: return stream_kernel_for_shape<512>(shape);
    case 1024: return stream_kernel_for_shape<1024>(shape);
    case 2048: return stream_kernel_for_shape<2048>(shape);
    default: return stream_kernel_for_shape<4096>(shape);
  }
}

/// Cuts the bands into `blocks` contiguous ranges of about equal bytes (A tiles and their B blocks).
std::vector<std::int32_t> stream_ranges(const std::vector<FloorBand>& bands, int blocks, int b_bytes) {
  std::vector<double> prefix(bands.size() + 1, 0.0);
  for (std::size_t r = 0; r < bands.size(); ++r)
    prefix[r + 1] = prefix[r] + double(bands[r].sparse_end - bands[r].sparse_begin) * (kSparseABytes + b_bytes) +
                    double(bands[r].dense_end - bands[r].dense_begin) * (kDenseABytes + b_bytes);
  std::vector<std::int32_t> first(std::size_t(blocks) + 1, std::int32_t(bands.size()));
  std::size_t r = 0;
  for (int q = 0; q < blocks; ++q) {
    const double target = prefix.back() * q / blocks;
    while (r < bands.size() && prefix[r] < target) ++r;
    first[std::size_t(q)] = std::int32_t(r);
  }
  return first;
}

using MovementKernel = void (*)(const FloorBand*, const unsigned char*, const std::int32_t*, const unsigned char*,
                                const std::int32_t*, const unsigned char*, int, int, float*);
/// The pipeline depths tried per variant (dense-loop stages; the 2:4 loop's follow).
constexpr int kDepths[] = {1, 2, 3, 4, 6};

template <int kBBytes>
MovementKernel kernel_for_depth(int dense_stages) {
  switch (dense_stages) {
    case 1: return movement_kernel<kBBytes, 1>;
    case 2: return movement_kernel<kBBytes, 2>;
    case 3: return movement_kernel<kBBytes, 3>;
    case 4: return movement_kernel<kBBytes, 4>;
    default: return movement_kernel<kBBytes, 6>;
  }
}
MovementKernel kernel_for(int b_bytes, int dense_stages) {
  switch (b_bytes) {
    case 0: return kernel_for_depth<0>(dense_stages);
    case 512: return kernel_for_depth<512>(dense_stages);
    case 1024: return kernel_for_depth<1024>(dense_stages);
    case 2048: return kernel_for_depth<2048>(dense_stages);
    default: return kernel_for_depth<4096>(dense_stages);
  }
}

/// One tile list on the device: random bytes for its values (a floor does not look at them) and its columns.
struct DeviceList {
  std::int64_t tiles = 0;
  std::unique_ptr<bench::DeviceBuffer> values, col;
};

__global__ void fill_bytes(std::uint32_t* p, std::size_t words, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = std::uint32_t(i) * 2654435761u ^ seed;
}

DeviceList upload(const TileList& list, int a_bytes) {
  DeviceList d;
  d.tiles = list.tiles();
  d.values = std::make_unique<bench::DeviceBuffer>(std::size_t(d.tiles) * a_bytes);
  d.col = std::make_unique<bench::DeviceBuffer>(std::size_t(d.tiles) * 4);
  if (d.tiles > 0) {
    fill_bytes<<<1024, 256>>>(static_cast<std::uint32_t*>(d.values->get()), d.values->bytes() / 4, 0x9e3779b9u);
    check_cuda(cudaGetLastError(), "fill_bytes", __FILE__, __LINE__);
    check_cuda(cudaMemcpy(d.col->get(), list.col_idx.data(), d.col->bytes(), cudaMemcpyHostToDevice), "cudaMemcpy",
               __FILE__, __LINE__);
  }
  return d;
}

/// Which tiles a variant moves.
enum class Tiles { stored, all_dense, none };

struct Variant {
  std::string name;
  Tiles tiles;    // stored: the 2:4 and dense lists; all_dense: every tile as dense (the dense path); none: no tiles
  int b_element;  // bytes per B element; 0 = no B copies (A only)
};

struct Result {
  double median_us = 0.0, min_us = 0.0;
  int sparse_stages = 0, dense_stages = 0;
};

/// The widths of --n: 8, 16 and 32 only.
std::vector<int> parse_widths(const std::string& n_list) {
  std::vector<int> widths;
  for (std::size_t at = 0; at <= n_list.size();) {
    const std::size_t comma = std::min(n_list.find(',', at), n_list.size());
    const std::string item = n_list.substr(at, comma - at);
    const int n = item == "8" ? 8 : item == "16" ? 16 : item == "32" ? 32 : 0;
    if (n == 0) throw apps::UsageError("--n: widths 8, 16 and 32 only, got \"" + item + "\"");
    widths.push_back(n);
    at = comma + 1;
  }
  return widths;
}

/// What every measurement of one matrix reads: its lists (2:4, dense, every tile as dense, none) and band
/// descriptors on the host and the device, B and C at the widest n, and how a run is timed.
struct FloorSetup {
  const DeviceInfo& device;
  std::int32_t tile_rows;
  const DeviceList &sparse, &dense, &all_dense, &none;
  const std::vector<FloorBand>& stored_list;
  const std::vector<FloorBand>& dense_list;
  const bench::DeviceBuffer &stored_bands, &dense_bands, &empty_bands;
  const bench::DeviceBuffer &b, &c, &sink;
  std::function<bench::Timings(const std::function<void(cudaStream_t)>&)> time_runs;
};

/// Reading the A bytes alone, at several grid sizes (the fastest is reported). A matrix with both lists is read in
/// two launches, each with its own launch cost: a bound only for matrices with one list.
double read_alone(const FloorSetup& x, const DeviceList& s_list, const DeviceList& d_list) {
  double best = 0.0;
  for (const int blocks_per_sm : {2, 4, 8}) {
    auto run = [&](cudaStream_t st) {
      for (const DeviceList* list : {&s_list, &d_list}) {
        if (list->tiles == 0) continue;
        read_words_kernel<<<unsigned(x.device.multiprocessors * blocks_per_sm), 256, 0, st>>>(
            static_cast<const uint4*>(list->values->get()), list->values->bytes() / 16,
            static_cast<unsigned*>(x.sink.get()));
        check_cuda(cudaGetLastError(), "read_words_kernel launch", __FILE__, __LINE__);
      }
    };
    const double us = x.time_runs(run).median_ms * 1e3;
    if (best == 0.0 || us < best) best = us;
  }
  return best;
}

/// The persistent data flow: contiguous ranges of bands per block, whole-block stages; the fastest grid and shape.
double stream_floor(const FloorSetup& x, const Variant& v, int n, std::string& shape_text) {
  const int b_bytes = kTileCols * n * v.b_element;
  const bool stored = v.tiles == Tiles::stored;
  const DeviceList& s_list = stored ? x.sparse : x.none;
  const DeviceList& d_list = stored ? x.dense : x.all_dense;
  const FloorBand* bands = static_cast<const FloorBand*>((stored ? x.stored_bands : x.dense_bands).get());
  double best = 0.0;
  for (const int blocks_per_sm : {2, 3, 4}) {
    const int blocks = x.device.multiprocessors * blocks_per_sm;
    const std::vector<std::int32_t> first = stream_ranges(stored ? x.stored_list : x.dense_list, blocks, b_bytes);
    bench::DeviceBuffer first_buffer(first.size() * sizeof(std::int32_t));
    check_cuda(cudaMemcpy(first_buffer.get(), first.data(), first_buffer.bytes(), cudaMemcpyHostToDevice),
               "cudaMemcpy", __FILE__, __LINE__);
    for (const StreamShape shape : kStreamShapes) {
      const int smem = shape.stages * shape.tiles * (kDenseABytes + b_bytes);
      if (smem > 200 * 1024) continue;
      const StreamKernel kernel = stream_kernel_for(b_bytes, shape);
      check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
                 "cudaFuncSetAttribute", __FILE__, __LINE__);
      auto run = [&](cudaStream_t st) {
        kernel<<<unsigned(blocks), kStreamThreads, smem, st>>>(
            static_cast<const std::int32_t*>(first_buffer.get()), bands,
            static_cast<const unsigned char*>(s_list.values->get()),
            static_cast<const std::int32_t*>(s_list.col->get()),
            static_cast<const unsigned char*>(d_list.values->get()),
            static_cast<const std::int32_t*>(d_list.col->get()), static_cast<const unsigned char*>(x.b.get()), n,
            static_cast<float*>(x.c.get()));
        check_cuda(cudaGetLastError(), "stream_kernel launch", __FILE__, __LINE__);
      };
      const double us = x.time_runs(run).median_ms * 1e3;
      if (best == 0.0 || us < best) {
        best = us;
        shape_text = std::to_string(blocks_per_sm) + " blocks/SM, " + std::to_string(shape.tiles) + " tiles x " +
                     std::to_string(shape.stages) + " stages";
      }
    }
  }
  return best;
}

/// One variant at width n, one band per block: the fastest pipeline depth; prints its row.
Result movement_floor(const FloorSetup& x, const Variant& v, int n) {
  const int b_bytes = kTileCols * n * v.b_element;
  const bool only_dense = v.tiles != Tiles::stored;  // no 2:4 list
  const DeviceList& s_list = only_dense ? x.none : x.sparse;
  const DeviceList& d_list = v.tiles == Tiles::stored ? x.dense : v.tiles == Tiles::all_dense ? x.all_dense : x.none;
  const FloorBand* bands = static_cast<const FloorBand*>(
      (v.tiles == Tiles::stored ? x.stored_bands : v.tiles == Tiles::all_dense ? x.dense_bands : x.empty_bands).get());
  Result best;
  for (const int dense_stages : kDepths) {
    const int sparse_stages = sparse_stages_for(dense_stages, b_bytes);
    const int dense_ring = dense_stages * (kDenseABytes + b_bytes);
    const int ring = only_dense ? dense_ring : std::max(dense_ring, sparse_stages * (kSparseABytes + b_bytes));
    const int smem = kWarps * ring;
    if (smem > 96 * 1024 || (v.tiles == Tiles::none && dense_stages != 1)) continue;
    const MovementKernel kernel = kernel_for(b_bytes, dense_stages);
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
               "cudaFuncSetAttribute", __FILE__, __LINE__);
    auto run = [&](cudaStream_t st) {
      kernel<<<unsigned(x.tile_rows), kWarps * kWarpSize, smem, st>>>(
          bands, static_cast<const unsigned char*>(s_list.values->get()),
          static_cast<const std::int32_t*>(s_list.col->get()),
          static_cast<const unsigned char*>(d_list.values->get()),
          static_cast<const std::int32_t*>(d_list.col->get()), static_cast<const unsigned char*>(x.b.get()), ring, n,
          static_cast<float*>(x.c.get()));
      check_cuda(cudaGetLastError(), "movement_kernel launch", __FILE__, __LINE__);
    };
    const bench::Timings t = x.time_runs(run);
    if (best.median_us == 0.0 || t.median_ms * 1e3 < best.median_us)
      best = {t.median_ms * 1e3, t.min_ms * 1e3, only_dense ? 0 : sparse_stages, dense_stages};
  }
  const double a_mb = (double(s_list.tiles) * kSparseABytes + double(d_list.tiles) * kDenseABytes) / 1e6;
  const double b_mb = double(s_list.tiles + d_list.tiles) * b_bytes / 1e6;
  std::printf("| %d | %s | %d / %d | %.2f | %.2f | %.1f | %.1f |\n", n, v.name.c_str(), best.sparse_stages,
              best.dense_stages, best.median_us, best.min_us, a_mb, b_mb);
  return best;
}

/// Every variant at width n, one band per block and then as the persistent stream, with the ratios.
void run_width(const FloorSetup& x, const std::vector<Variant>& variants, int n) {
  std::vector<Result> results;
  for (const Variant& v : variants) results.push_back(movement_floor(x, v, n));
  std::printf("| %d | ratios | all dense / 2:4 + dense, fp16 B: %.2f; no B: %.2f; fp32 B / fp16 B: %.2f | | | | |\n",
              n, results[1].median_us / results[0].median_us, results[4].median_us / results[3].median_us,
              results[2].median_us / results[0].median_us);
  // The same three variants with the persistent data flow (variants 0-2 above).
  double streamed[3] = {};
  for (int k = 0; k < 3; ++k) {
    std::string shape;
    streamed[k] = stream_floor(x, variants[std::size_t(k)], n, shape);
    std::printf("| %d | persistent stream: %s | %s | %.2f | | | |\n", n, variants[std::size_t(k)].name.c_str(),
                shape.c_str(), streamed[k]);
  }
  std::printf("| %d | ratios, persistent stream | all dense / 2:4 + dense, fp16 B: %.2f; "
              "fp32 B / fp16 B: %.2f | | | | |\n",
              n, streamed[1] / streamed[0], streamed[2] / streamed[0]);
  std::fflush(stdout);
}

/// The measurements on the source's tile grid at each width.
int run_floor(const apps::MatrixSource& source, const std::string& n_list, int reps) {
  source.validate();
  const std::vector<int> widths = parse_widths(n_list);
  const DeviceInfo dev_info = query_device();
  if (!dev_info.available) throw NotSupported("no usable GPU: " + dev_info.reason);
  const std::string name = source.name();
  const CsrMatrix csr = source.load();
  ConvertOptions options;
  options.layout = TileLayout::aligned;  // B blocks are 32 consecutive rows of B
  options.reorder = Reordering::none;
  const Bcsr24Matrix host = convert_to_bcsr24(csr, options);
  const TileList merged = merge_to_dense_list(host);
  TileList empty_list;  // a list without tiles: the 2:4 side of the all-dense variant
  empty_list.row_ptr.assign(std::size_t(host.tile_rows) + 1, 0);

  const DeviceList sparse = upload(host.sparse24, kSparseABytes), dense = upload(host.dense, kDenseABytes),
                   all_dense = upload(merged, kDenseABytes), none = upload(empty_list, kDenseABytes);
  auto band_list = [&](const TileList& s, const TileList& d) {
    std::vector<FloorBand> bands(static_cast<std::size_t>(host.tile_rows));
    for (std::size_t r = 0; r < bands.size(); ++r)
      bands[r] = {s.row_ptr[r], s.row_ptr[r + 1], d.row_ptr[r], d.row_ptr[r + 1]};
    return bands;
  };
  // The band descriptors on the host (the persistent stream cuts them into ranges) and on the device.
  const std::vector<FloorBand> stored_list = band_list(host.sparse24, host.dense),
                               dense_list = band_list(empty_list, merged),
                               empty_band_list = band_list(empty_list, empty_list);
  auto band_buffer = [&](const std::vector<FloorBand>& bands) {
    auto buffer = std::make_unique<bench::DeviceBuffer>(bands.size() * sizeof(FloorBand));
    check_cuda(cudaMemcpy(buffer->get(), bands.data(), buffer->bytes(), cudaMemcpyHostToDevice), "cudaMemcpy",
               __FILE__, __LINE__);
    return buffer;
  };
  const auto stored_bands = band_buffer(stored_list);
  const auto dense_bands = band_buffer(dense_list);
  const auto empty_bands = band_buffer(empty_band_list);
  // B: every tile column's 32 rows at the widest n and fp32 (the B block of tile column j starts at j * block).
  bench::DeviceBuffer b(std::size_t(host.tile_cols) * kTileCols * 32 * 4);
  fill_bytes<<<256, 256>>>(static_cast<std::uint32_t*>(b.get()), b.bytes() / 4, 0x85ebca6bu);
  bench::DeviceBuffer c(std::size_t(host.tile_rows) * kTileRows * 32 * 4);
  check_cuda(cudaDeviceSynchronize(), "fill", __FILE__, __LINE__);
  bench::CudaStream stream;
  const bench::L2Flush flush(std::size_t(std::max<std::int64_t>(dev_info.l2_bytes, 1 << 20)) * 2);
  bench::DeviceBuffer sink(16);
  const FloorSetup setup{dev_info, host.tile_rows, sparse, dense, all_dense, none, stored_list, dense_list,
                         *stored_bands, *dense_bands, *empty_bands, b, c, sink,
                         [&](const std::function<void(cudaStream_t)>& run) {
                           return bench::summarize(bench::time_gpu_runs(run, 3, reps, &flush, stream.get()));
                         }};

  std::printf("bench_floor: %s, %d x %d, %d tile rows; %lld 2:4 tiles, %lld dense tiles; device %s\n",
              name.c_str(), host.rows, host.cols, host.tile_rows, static_cast<long long>(sparse.tiles),
              static_cast<long long>(dense.tiles), dev_info.name.c_str());
  std::printf("| n | variant | stages 2:4 / dense | median us | min us | A MB (DRAM) | B MB (through L2) |\n");
  std::printf("|---:|---|---|---:|---:|---:|---:|\n");
  // The ratio lines (run_width) index this list.
  const std::vector<Variant> variants = {{"2:4 + dense tiles, fp16 B", Tiles::stored, 2},
                                         {"all tiles dense, fp16 B", Tiles::all_dense, 2},
                                         {"2:4 + dense tiles, fp32 B", Tiles::stored, 4},
                                         {"2:4 + dense tiles, no B", Tiles::stored, 0},
                                         {"all tiles dense, no B", Tiles::all_dense, 0},
                                         {"no tiles: launch, band descriptors, C", Tiles::none, 0}};
  const double read_stored = read_alone(setup, sparse, dense), read_all_dense = read_alone(setup, none, all_dense);
  std::printf("A bytes read alone (no tile grid, no B, no C): 2:4 + dense %.2f us (%.1f MB), all dense %.2f us "
              "(%.1f MB); ratio %.2f\n\n",
              read_stored, double(sparse.values->bytes() + dense.values->bytes()) / 1e6, read_all_dense,
              double(all_dense.values->bytes()) / 1e6, read_all_dense / read_stored);
  for (const int n : widths) run_width(setup, variants, n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_floor: time the tile kernel's data movement alone (no arithmetic) on a matrix's tile grid",
               "bench_floor"};
  apps::MatrixSource source;
  std::string n_list = "8,16,32";
  int reps = 30;
  return apps::run_main(
      app, argc, argv,
      [&](CLI::App& a) {
        source.add_options(a, apps::MatrixSource::FileOption::named, "seed for the synthetic matrix");
        a.add_option("--n", n_list, "columns of B: 8, 16 and/or 32, comma-separated");
        a.add_option("--reps", reps, "timed runs per variant and depth (median reported)")->check(CLI::PositiveNumber);
      },
      [&] { return run_floor(source, n_list, reps); });
}
