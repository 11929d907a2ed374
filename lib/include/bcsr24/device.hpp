// GPU side: device-resident matrix, multiply plans and the kernels' names. No CUDA headers needed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bcsr24/bcsr24_matrix.hpp"

struct CUstream_st;  // = cudaStream_t without including the CUDA runtime

namespace bcsr24 {

/// A CUDA stream handle (cudaStream_t); nullptr is the legacy default stream.
using Stream = CUstream_st*;

/// The kernels (docs/KERNELS.md): the thesis's ladder of three tile kernels, the CUDA-core CSR path, and the
/// per-band hybrid of the two that a cost model picks (the default).
enum class KernelKind {
  dense_bt,         ///< every stored tile as dense, mma.sync m16n8k16, no pipelining (baseline)
  dense_pipelined,  ///< the same with a multi-stage cp.async pipeline
  split_pipelined,  ///< 2:4 tiles on mma.sp m16n8k32, dense on mma.sync, separate pipelined loops
  csr_cuda_cores,   ///< every band as CSR rows on CUDA cores (fp16 values and B, fp32 accumulation)
  automatic,        ///< each band on split_pipelined's tiles or on CSR, whichever the cost model predicts
                    ///< faster at the plan's n (default)
};

const char* kernel_name(KernelKind kind) noexcept;
/// @throw InvalidArgument for an unknown name.
KernelKind kernel_from_name(const std::string& name);
std::vector<KernelKind> all_kernels();

/// Properties of the current CUDA device, or available == false when there is none usable.
struct DeviceInfo {
  bool available = false;
  std::string name;
  int compute_capability = 0;  ///< e.g. 90
  int multiprocessors = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t global_memory_bytes = 0;
  std::string reason;  ///< why not available
};
/// Never throws; a machine without a driver or device reports available == false.
DeviceInfo query_device();

/// Which bands a DeviceMatrix also keeps as CSR rows for the CUDA-core path.
enum class CsrCopy {
  none,        ///< no CSR rows: automatic plans use tiles only, csr_cuda_cores is refused
  candidates,  ///< the bands where the cost model predicts CSR faster at some n in 1..256 (default)
  all,         ///< every band (needed by csr_cuda_cores)
};

/// What a DeviceMatrix uploads besides the 2:4 and dense tile lists.
struct UploadOptions {
  /// Every tile as dense too (needed by dense_bt and dense_pipelined; up to twice the tile memory).
  bool merged_dense = false;
  CsrCopy csr = CsrCopy::candidates;
};

/// The matrix uploaded once to the current CUDA device (RAII; move-only). Holds the 2:4 and dense lists, the
/// CSR rows of the bands that may run on CUDA cores and, when asked for, the merged all-dense list used by the
/// dense kernels.
class DeviceMatrix {
 public:
  /// @throw SizeLimitError when the lists do not fit in the device's free memory (checked before allocating);
  ///        CudaError on allocation or copy failure; NotSupported without a device of sm_80 or newer.
  DeviceMatrix(const Bcsr24Matrix& host, const UploadOptions& options);
  /// The same with {merged_dense = with_merged_dense, csr = with_merged_dense ? all : candidates}: the
  /// merged list comes with everything every kernel needs.
  explicit DeviceMatrix(const Bcsr24Matrix& host, bool with_merged_dense = true);
  ~DeviceMatrix();
  DeviceMatrix(DeviceMatrix&&) noexcept;
  DeviceMatrix& operator=(DeviceMatrix&&) noexcept;
  DeviceMatrix(const DeviceMatrix&) = delete;
  DeviceMatrix& operator=(const DeviceMatrix&) = delete;

  std::int32_t rows() const noexcept;
  std::int32_t cols() const noexcept;
  std::int32_t scale_exponent() const noexcept;
  /// How the values are stored (the host matrix's precision).
  Precision precision() const noexcept;
  bool has_merged_dense() const noexcept;
  /// Bands with a CSR copy (0 .. tile rows).
  std::int32_t csr_bands() const noexcept;
  /// Bytes of device memory held.
  std::int64_t device_bytes() const noexcept;

  struct Impl;
  const Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// Output element type.
enum class OutputType { f32, f16 };

/// Element type of B that a plan's run() takes.
enum class InputType {
  automatic,  ///< the matrix's own 16-bit type (fp16, or bf16 for a bf16 matrix); fp32 for Precision::split
  f16,        ///< fp16 (Precision::fp16 only)
  bf16,       ///< bf16 (Precision::bf16 only)
  f32,        ///< fp32, read by the kernels directly: converted while staged into shared memory (fp16 with a
              ///< power-of-two scale per tile and column, so no column overflows or flushes; bf16; or fp16
              ///< hi + lo for Precision::split). No pass over B before the product. Output must be f32.
};
const char* input_type_name(InputType type) noexcept;

/// Pipeline depth of the tile kernel where there is a choice: fp32 B with fp16 or bf16 A at 32 or more columns
/// (docs/KERNELS.md, "Pipeline depth of the fp32-B modes").
enum class TilePipeline {
  automatic,  ///< deep where the tile kernel's blocks fit in one wave of the deep kernel (small matrices), or
              ///< where long bands (>= 6 tiles per warp) fill more than one wave of the standard one
  standard,   ///< the stages that keep fp16 mode's blocks per SM (one per warp in the fp32-B modes at 32+ columns)
  deep,       ///< two stages per warp: copies overlap the math, fewer blocks per SM
};
const char* tile_pipeline_name(TilePipeline pipeline) noexcept;

/// Whether the tile bands run 16 to a thread block, each B block loaded once for every band of the block that
/// has a tile in its tile column (docs/KERNELS.md, "Band groups"). Needs compute capability 9.0 (TMA), 16-bit A
/// and B, and a layout whose tiles name their B block by tile column (aligned layouts).
enum class BandGroups {
  automatic,  ///< grouped where it saves B loads and fills the GPU: n >= 128, at most 0.6 B-block loads per tile,
              ///< enough groups for the SMs (automatic kernel only; the ladder's kernels stay one band per block)
  off,        ///< one band per block
  on,         ///< grouped (automatic and split_pipelined; InvalidArgument where the kernel cannot run)
};
const char* band_groups_name(BandGroups groups) noexcept;

/// Choices fixed when a plan is made.
struct PlanOptions {
  OutputType output = OutputType::f32;
  /// B's element type; automatic takes the matrix's 16-bit type (fp32 for Precision::split).
  InputType input = InputType::automatic;
  /// Keep a workspace of cols(A) x round_up(n, 8) fp16 so that B with any pointer alignment and any ldb
  /// works (it is copied there first). When false, run() requires B 16-byte aligned with ldb % 8 == 0
  /// and throws InvalidArgument otherwise; no workspace is allocated. A plan that runs only the CSR kernel
  /// at n < 8 (SpMV-like) reads B element by element, in any layout, and never needs the workspace.
  bool allow_unaligned_b = true;
  /// Split a band with far more tiles than the GPU's fair share per block over several blocks, whose partial
  /// sums the last of them adds in a fixed order (still bit-identical run to run). Off: one block per band, as
  /// the thesis's kernels ran (for comparisons).
  bool split_long_bands = true;
  /// The tile kernel's pipeline depth where the mode and width offer two (else ignored); automatic by default,
  /// the others for comparisons and tests.
  TilePipeline tile_pipeline = TilePipeline::automatic;
  /// Tile bands 16 to a block with shared B blocks; automatic by default, the others for comparisons and tests.
  BandGroups band_groups = BandGroups::automatic;
};

/// What a plan runs where: how the bands and their nonzeros are split between the tile kernel and the
/// CUDA-core CSR kernel, and why.
struct PlanReport {
  KernelKind kernel = KernelKind::automatic;
  std::int32_t n = 0;
  Precision precision = Precision::fp16;  ///< the matrix's
  InputType input = InputType::f16;       ///< B's element type (never automatic)
  std::int32_t tile_bands = 0, csr_bands = 0;            ///< bands (16-row tile rows) on each path
  std::int64_t sparse24_tiles = 0, dense_tiles = 0;      ///< tiles the tile kernel multiplies
  std::int64_t sparse24_nnz = 0, dense_nnz = 0, csr_nnz = 0;  ///< stored nonzeros on 2:4 tiles, dense tiles, CSR
  /// Bytes of A each path reads once per multiply (values, metadata, indices, pointers).
  std::int64_t sparse24_bytes = 0, dense_bytes = 0, csr_bytes = 0;
  std::int32_t split_bands = 0, split_parts = 0;         ///< tile bands split over several blocks, their parts
  int tile_stages = 0;  ///< pipeline stages per warp of the tile kernel's dense loop (0: no tile part)
  TilePipeline tile_pipeline = TilePipeline::standard;   ///< deep or standard (deep only where it differs)
  std::int32_t empty_bands = 0;                          ///< bands without entries: run() with beta == 1 skips them
  /// Band groups (0: one band per block) and their steps: one B-block load per step and column slice, where one
  /// band per block loads one per tile (band_group_steps / tiles = B loads per tile).
  std::int32_t band_groups = 0;
  std::int64_t band_group_steps = 0;
  std::int32_t csr_long_rows = 0;                        ///< CSR rows given one or more thread blocks of their own
  std::int32_t csr_long_blocks = 0;  ///< blocks of those rows (rows too long for one block get one per share of columns)
  std::int32_t csr_medium_rows = 0;                      ///< CSR rows given a warp of their own
  int csr_chunks = 0, csr_nz_lanes = 0;                  ///< CSR kernel shape (8-column chunks x lanes per row)
  double predicted_us = 0.0;                             ///< the cost model's time for the plan
  double tiles_only_us = 0.0, csr_only_us = -1.0;        ///< its alternatives (-1: not possible)
  std::string reason;                                    ///< one line
};

/// Everything one multiply needs that is not data: fixed n and kernel, launch geometry and a workspace for
/// padding B when its width or alignment is not a multiple of 8 fp16. Create once, run many times.
/// run() allocates nothing, never synchronises the host, and only enqueues work on the given stream.
/// A plan may be used by one host thread at a time, and its runs must not overlap on the device (one stream, or
/// streams ordered by events): they share the plan's workspace. Several plans on one DeviceMatrix are fine.
class SpmmPlan {
 public:
  /// kernel automatic (default) splits the bands between the tile kernel and the CSR kernel by the cost model
  /// (report() says how); the other kinds run one kernel on every band.
  /// @throw InvalidArgument for n < 1, a dense kernel on a matrix uploaded without the merged list or stored in
  ///        a precision other than fp16, csr_cuda_cores on a matrix without a CSR copy of every band
  ///        (UploadOptions::csr = all), an input type the matrix's precision does not take (fp16 B for a bf16
  ///        matrix, 16-bit B for split), or fp16 output with any combination but fp16 A and fp16 B.
  SpmmPlan(const DeviceMatrix& a, std::int32_t n, KernelKind kernel = KernelKind::automatic,
           const PlanOptions& options = {});
  ~SpmmPlan();
  SpmmPlan(SpmmPlan&&) noexcept;
  SpmmPlan& operator=(SpmmPlan&&) noexcept;
  SpmmPlan(const SpmmPlan&) = delete;
  SpmmPlan& operator=(const SpmmPlan&) = delete;

  /// C = alpha * A * B + beta * C, as one or two kernel launches on `stream` that write disjoint rows of C
  /// (bit-identical from run to run). B: device fp16, cols(A) x n, row-major, ldb >= n. C: device, rows(A) x n,
  /// row-major, ldc >= n, float (OutputType::f32) or fp16 bits (OutputType::f16). beta == 0 does not read C;
  /// beta == 1 does not touch the rows of C that A has no entries in (report().empty_bands: no work is launched
  /// for those bands), which makes accumulating a product of a matrix with few non-empty rows cheap.
  /// The DeviceMatrix must outlive the plan, and B and C must not overlap.
  /// @throw InvalidArgument for null pointers, short leading dimensions, or unaligned B when the plan was
  ///        made without allow_unaligned_b; CudaError if the launch fails.
  /// 16-bit B: fp16 bits (InputType::f16) or bf16 bits (InputType::bf16), as the plan was made for.
  void run(const fp16_t* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
           Stream stream = nullptr) const;
  /// The same with fp32 B (a plan made with InputType::f32, or automatic on a split matrix); C is float.
  /// Unaligned B (not 16-byte aligned or ldb % 4 != 0) is copied to the workspace first, as for 16-bit B.
  void run(const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
           Stream stream = nullptr) const;

  std::int32_t n() const noexcept;
  KernelKind kernel() const noexcept;
  OutputType output() const noexcept;
  InputType input() const noexcept;  ///< never automatic
  /// Device bytes of the plan's workspace (0 without allow_unaligned_b) and work lists.
  std::int64_t workspace_bytes() const noexcept;
  /// How the plan splits the work between tiles and CSR. Never throws.
  const PlanReport& report() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bcsr24
