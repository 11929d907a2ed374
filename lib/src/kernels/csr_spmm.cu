// Host side of the CUDA-core CSR kernel (csr_kernel.cuh): the launch shape for n and the rows' lengths, the row
// classes, the blocks of a long row, and the launch of the kernel table's instantiation for a shape.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"
#include "kernels/csr_kernel.cuh"
#include "kernels/csr_params.hpp"
#include "kernels/kernel_table.hpp"

namespace bcsr24::kernels {

using csr::kBlockWarps;
using csr::kMaxRounds;
using csr::kUnroll;
using csr::kWarp;

namespace {

/// Threads per SM and mean row entry the 16-byte-chunk shapes (n >= 8) aim for (csr_shape_for; run 74).
constexpr int kThreadsPerSmAndEntry = 62;
/// n = 1: entries per resident thread past which the lanes per row follow the stream rule (csr_shape_for), and the
/// most lanes per row it gives to rows of up to 8 x 64 entries.
constexpr double kOneColumnStreamEntries = 8.0;
constexpr int kOneColumnStreamLanes = 8;
/// n = 1, that rule: the most entries a lane takes (8 rounds of two quads) before its row gets more lanes.
constexpr double kOneColumnStreamLaneEntries = 64.0;

int floor_pow2(double x) {
  int p = 1;
  while (p < 1024 && p * 2 <= x) p *= 2;  // callers cap it at 32 lanes
  return p;
}

}  // namespace

CsrShape csr_column_shape(std::int32_t n) {
  CsrShape s;
  const int chunks_needed = (std::min(n, kCsrPassColumns) + 7) / 8;
  while (s.chunks < chunks_needed) s.chunks *= 2;
  // Fewer than 8 columns: read only those (a 16-byte load would need B padded to 8 columns, i.e. a copy).
  s.scalar_b = n < 8;
  s.one_column = n == 1;
  return s;
}

CsrShape csr_shape_for(std::int32_t n, double mean_row_nnz, std::int64_t rows, int multiprocessors) {
  CsrShape s = csr_column_shape(n);
  const int lanes_cap = kWarp / s.chunks;
  if (s.scalar_b) {
    // About kUnroll entries per thread: enough independent loads to hide latency, few idle lanes on short rows.
    s.nz_lanes = std::min(floor_pow2(mean_row_nnz / kUnroll), lanes_cap);
    // n = 1 with more than kOneColumnStreamEntries entries per thread the device holds at once: the launch is one
    // long stream of entries, and a lane that takes at least a round of quads (8 entries), with at most
    // kOneColumnStreamLanes lanes per row, keeps more of it in flight than many lanes with a quad or less each;
    // but a row still gets the lanes that hold it to 8 rounds (64 entries) a lane. csr_cuda_cores at n = 1 (runs
    // 98 to 100, lanes forced): long_rows:20000 (rows of 512) 76.0 us with 32 lanes, 55.6 with 16, 33.2 with 8,
    // 38.3 with 4; block_diagonal:262144 (rows of 32) 28.8 with 8, 23.8 with 4, 25.1 with 2; the 40x40x40 27-point
    // mesh (rows of 77) 43.5 with 16, 41.0 with 8, 40.4 with 4, 63.2 with 2; the XdYs grids (16,384 rows of 819 to
    // 3,277) 14-23% slower with 8 lanes than with 32 (10d0s: 60.2 against 70.0). Smaller launches keep the rule
    // above: bcsstk16 (290,000 entries) took 6.2 us with 8 lanes and 7.3 with 4.
    const double resident_threads = double(std::max(multiprocessors, 1)) *
                                    csr::kMinBlocksPerSm<csr::BRead::one_column> * kCsrBlockThreads;
    if (s.one_column && double(rows) * mean_row_nnz > kOneColumnStreamEntries * resident_threads) {
      int lanes = std::min(floor_pow2(mean_row_nnz / 8.0), kOneColumnStreamLanes);
      while (lanes < lanes_cap && lanes * kOneColumnStreamLaneEntries < mean_row_nnz) lanes *= 2;
      s.nz_lanes = std::min(s.nz_lanes, lanes);
    }
    return s;
  }
  // 16-byte chunks: the fewest lanes per row that still give the launch about kThreadsPerSmAndEntry x SMs x
  // mean threads, and no more lanes than a row has entries. Each lane of a row pays the row's chain of dependent
  // loads (its start, then its entries, then B) before its loads overlap, so fewer lanes with more entries each
  // are faster where the rows alone fill the device many times over: Andrews (60,000 rows of 12.7) at n = 128
  // took 46.8 us with 2 lanes and 36.4 with 1. Rows of many entries need more threads, or the last ones, each a
  // long chain, are the launch's tail: a 27-point mesh with 3 dofs (192,000 rows of 81) at n = 16 took 82 us with
  // 1 lane and 70 with 2 (lanes forced per run over the sweep at n = 8..128, run 74; this rule is 1% from the
  // fastest of 1, 2, 4 and 8 lanes there in geometric mean, the rule before it, kUnroll entries per lane, 7%).
  const double target_threads = double(kThreadsPerSmAndEntry) * std::max(multiprocessors, 1) * mean_row_nnz;
  const int lanes_max = std::min(lanes_cap, floor_pow2(std::max(mean_row_nnz, 1.0)));
  s.nz_lanes = 1;
  while (s.nz_lanes < lanes_max && double(rows) * s.chunks * s.nz_lanes < target_threads) s.nz_lanes *= 2;
  return s;
}

CsrRowClasses csr_row_classes(const CsrShape& shape, double mean_row_nnz) {
  // Each round of kUnroll dependent loads per thread costs a memory latency (~0.5-1 us from DRAM): a row that
  // needs many more rounds than the rest is the tail of the launch. A short group takes rows of up to
  // kMaxRounds rounds (or twice the mean it was sized for, when the lanes ran out); a warp takes rows of up to
  // kMaxRounds rounds of its 32 / chunks lanes; longer rows get a block of 256 / chunks lanes, or several
  // (csr_long_row_blocks).
  CsrRowClasses c;
  c.short_max = std::max<std::int32_t>(kMaxRounds * kUnroll * shape.nz_lanes,
                                       static_cast<std::int32_t>(2.0 * mean_row_nnz));
  c.medium_max = std::max<std::int32_t>(c.short_max, kMaxRounds * kUnroll * (kWarp / shape.chunks));
  return c;
}

int csr_long_row_blocks(int chunks, std::int64_t entries) {
  // Blocks of chunks / s chunks have 256 * s / chunks lanes per chunk: double s while the row still needs more
  // than kMaxRounds rounds and there are chunks to divide. The work per thread stays ~kMaxRounds rounds, so a
  // row of a few hundred entries keeps one block (a block per chunk for it measured slower: memplus at n = 256,
  // 19.5 -> 31.9 us), while rajat01's row of 6,833 entries at n = 256 gets 32 blocks of 7 rounds instead of one
  // of ~210 (34.9 -> 13.2 us).
  int s = 1;
  while (s < chunks && entries > std::int64_t(kMaxRounds) * kUnroll * (kCsrBlockThreads / chunks) * s) s *= 2;
  // A row split by entries anyway (csr_long_row_parts) gets its parallelism from its parts. At 16 or more chunks
  // its blocks keep at least kCsrSplitRowMinChunks chunks each: a block of one chunk reads 16 bytes of each of 32
  // B rows per warp load, half of each sector; of 4 chunks, 64 consecutive bytes. Run 23 (H200, auto_csr, 2026-11-29),
  // blocks capped at chunks / 4 against not: n = 128, arrowhead:46500 26.5 -> 20.0 us, dense_rows:200000 229 ->
  // 170 us; rajat01 (longest row 6,833 entries, not split) would have gone from 8.5 to 10.1 us, so rows that are
  // not split keep their blocks. At n = 32 (4 chunks: one block) arrowhead went from 11.0 to 13.5 us: not capped.
  if (chunks >= kCsrSplitRowCapChunks && csr_long_row_parts(chunks / s, entries) > 1)
    s = std::min(s, chunks / kCsrSplitRowMinChunks);
  return s;
}

int csr_long_row_parts(int block_chunks, std::int64_t entries) {
  // A block has 256 / block_chunks lanes per chunk. A row is split only past 4 times what a block sums in kMaxRounds
  // rounds of kUnroll loads (each part costs a write of its sums, a count and the last part's reads): rows split
  // over chunks before (rajat01's longest, 6,833 entries, at n = 256) stay as they were. Every part is a chain of
  // dependent loads (its block's item, the row's start, per round the entries and then B, the count), and the row's
  // latency is one part's, so parts are one round each (the arrowhead's full row, 46,500 entries, at n = 1: 12.4 ->
  // 8.0 us, runs 61 and 63) up to kCsrSplitParts parts. Beyond that they grow instead: the 4 rows of 200,000 entries
  // of dense_rows:200000 in 196 one-round parts each filled more than a wave of 4-block-per-SM kernels at n = 8
  // (25.5 -> 29.0 us), ahead of the short rows.
  const std::int64_t block_round = std::int64_t(kUnroll) * (kCsrBlockThreads / block_chunks);
  if (entries <= 4 * kMaxRounds * block_round) return 1;
  const std::int64_t one_round_parts = (entries + block_round - 1) / block_round;
  const std::int64_t max_rounds_parts = (entries + kMaxRounds * block_round - 1) / (kMaxRounds * block_round);
  const std::int64_t parts = std::min(one_round_parts, std::max<std::int64_t>(kCsrSplitParts, max_rounds_parts));
  return static_cast<int>(std::min<std::int64_t>(parts, kCsrMaxRowParts));
}

void load_csr_kernel(const CsrKernel& kernel) {
  cudaFuncAttributes attributes;
  BCSR24_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel.fn)));
}

void launch_csr_kernel(const CsrKernel& kernel, const CsrSpmmParams& params, cudaStream_t stream) {
  if (params.long_count + params.medium_count + params.short_count == 0 || params.n == 0) return;
  const CsrShape& shape = kernel.key.shape;
  const int rows_per_group = params.short_run_rows > 1 ? params.short_run_rows : params.short_pairs ? 2 : 1;
  const int rows_per_block = kCsrBlockThreads / (shape.chunks * shape.nz_lanes) * rows_per_group;
  // Short rows: a block per tile at n = 1 with tiles, else kCsrBlockThreads / group rows a block.
  const std::int64_t short_blocks = params.short_tiles
                                        ? std::int64_t(params.short_count)
                                        : (std::int64_t(params.short_count) + rows_per_block - 1) / rows_per_block;
  const std::int64_t blocks = std::int64_t(params.long_count) +
                              (std::int64_t(params.medium_count) + kBlockWarps - 1) / kBlockWarps + short_blocks;
  const std::int64_t passes = (std::int64_t(params.n) + kCsrPassColumns - 1) / kCsrPassColumns;
  if (blocks > INT32_MAX || passes > 65535)
    throw SizeLimitError("CSR kernel: " + std::to_string(blocks) + " blocks x " + std::to_string(passes) +
                         " column passes exceed one launch");
  kernel.fn<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(passes)), kCsrBlockThreads, 0, stream>>>(
      params);
  BCSR24_CUDA_CHECK_LAUNCH();
}

}  // namespace bcsr24::kernels
