// SpmmPlan: one multiply width fixed once (kernel, launch geometry, workspace), then C = alpha * A * B + beta * C
// as often as needed. Plans are made by SparseOperator::make_plan. No CUDA headers needed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bcsr24/half.hpp"
#include "bcsr24/precision.hpp"

struct CUstream_st;  // = cudaStream_t without including the CUDA runtime

namespace bcsr24 {

/// A CUDA stream handle (cudaStream_t); nullptr is the legacy default stream.
using Stream = CUstream_st*;

/// The kernels (docs/KERNELS.md): the per-band choice of a cost model (the default), the tile kernel and the
/// CUDA-core CSR path.
enum class KernelKind {
  split_pipelined,  ///< 2:4 tiles on mma.sp m16n8k32, dense on mma.sync, separate pipelined loops
  csr_cuda_cores,   ///< every band as CSR rows on CUDA cores (16-bit values and B, fp32 accumulation)
  automatic,        ///< each band on split_pipelined's tiles or on CSR, whichever the cost model predicts
                    ///< faster at the plan's n (default)
};
const char* kernel_name(KernelKind kind) noexcept;
/// @throw InvalidArgument for an unknown name.
KernelKind kernel_from_name(const std::string& name);
std::vector<KernelKind> all_kernels();

/// Element type of B (PlanOptions::input) and of C (PlanOptions::output).
enum class ElementType {
  automatic,  ///< B: the matrix's own 16-bit type (fp16, or bf16 for a bf16 matrix); fp32 for Precision::split.
              ///< Not an output type.
  f16,        ///< B: fp16 (Precision::fp16 only). C: fp16 bits (fp16 A and B only)
  bf16,       ///< B: bf16 (Precision::bf16 only). Not an output type.
  f32,        ///< B: fp32, read by the kernels directly: converted while staged into shared memory (fp16 with a
              ///< power-of-two scale per tile and column, so no column overflows or flushes; bf16; or fp16
              ///< hi + lo for Precision::split). No pass over B before the product. Output must be f32.
              ///< C: float (the default).
};
/// "auto", "fp16", "bf16", "fp32".
const char* element_type_name(ElementType type) noexcept;
/// @throw InvalidArgument for an unknown name, listing the accepted ones.
ElementType element_type_from_name(const std::string& name);

/// How an automatic plan is chosen (docs/API.md, "Measured plans").
enum class Tuning {
  model,    ///< by the cost model's prediction alone: no work on the GPU while the plan is made
  measure,  ///< the model's best few candidate plans are timed on the matrix with a scratch B, the fastest is kept
            ///< (default); the choice is kept by the operator for the next plan of the same n and types
};
const char* tuning_name(Tuning tuning) noexcept;

/// Choices fixed when a plan is made.
struct PlanOptions {
  /// C's element type: f32 or f16 (make_plan refuses automatic and bf16 with InvalidArgument).
  ElementType output = ElementType::f32;
  /// B's element type; automatic takes the matrix's 16-bit type (fp32 for Precision::split).
  ElementType input = ElementType::automatic;
  /// Keep a workspace of cols(A) x round_up(n, 8) elements so that B with any pointer alignment and any ldb
  /// works (it is copied there first). When false, run() requires B 16-byte aligned with ldb a multiple of 16
  /// bytes and throws InvalidArgument otherwise; no workspace is allocated. A plan that runs only the CSR kernel
  /// at n < 8 (SpMV-like) reads B element by element, in any layout, and never needs the workspace.
  bool allow_unaligned_b = true;
  /// How KernelKind::automatic plans choose (the other kernels have nothing to choose). Measuring allocates a
  /// scratch B and C of the plan's width for the time it takes, and falls back to the model where they do not fit.
  Tuning tuning = Tuning::measure;
  /// Most milliseconds (wall clock) the measurement may take, loading kernels new to the process not counted; 0 =
  /// the default, relative to what the operator already cost: 10% of its conversion time
  /// (LayoutReport::total_seconds; for an operator loaded from a .b24 file, 500 times the model's predicted product
  /// time), at least 20 ms and at most 1 s (docs/API.md, "Measured plans"). PlanReport::tuning_budget_ms and
  /// tuning_budget_source say which budget applied.
  double tuning_budget_ms = 0.0;
};

namespace experimental {

/// One plan a measured plan chose from.
struct PlanCandidate {
  std::string description;   ///< what it runs, e.g. "hybrid (312 bands on CSR), band groups"
  double predicted_us = 0.0;  ///< the cost model's time
  double measured_us = -1.0;  ///< median of its timed runs, per product (-1: not measured)
  int runs = 0;               ///< timed runs, each of PlanDiagnostics::tuning_batch products
  double build_ms = -1.0;     ///< host time to build its plan for timing, loading its kernels not included (-1: not built)
  bool chosen = false;
  std::string note;           ///< why it was not measured, or stopped being measured, where it was not
};

/// A plan's kernel internals: what the launch geometry, the CSR kernel's shape and the measurement came to. For
/// benchmarks, tests and the curious; not a promise: fields come and go with the kernels (PlanReport is the
/// stable part).
struct PlanDiagnostics {
  std::int64_t sparse24_tiles = 0, dense_tiles = 0;  ///< tiles the tile kernel multiplies
  /// Bytes of A each path reads once per multiply (values, metadata, indices, pointers). Narrow vectors: a 4-byte
  /// column index and 16 bytes of values per stored vector, padding vectors included, and per window its index
  /// and pointer.
  std::int64_t sparse24_bytes = 0, dense_bytes = 0, csr_bytes = 0, vector_bytes = 0;
  std::int32_t split_bands = 0, split_parts = 0;  ///< tile bands split over several blocks, their parts
  int tile_stages = 0;  ///< pipeline stages per warp of the tile kernel's dense loop (0: no tile part)
  bool deep_tile_pipeline = false;  ///< the fp32-B modes' deep pipeline (docs/KERNELS.md, "Pipeline depth")
  /// Band groups (0: one band per block) and their steps: one B-block load per step and column slice, where one
  /// band per block loads one per tile (band_group_steps / tiles = B loads per tile).
  std::int32_t band_groups = 0;
  std::int64_t band_group_steps = 0;
  std::int32_t csr_long_rows = 0;    ///< CSR rows given one or more thread blocks of their own
  std::int32_t csr_long_blocks = 0;  ///< blocks of those rows (rows too long for one block get one per share of columns)
  /// Of the long rows, those also split by entries (too long for the blocks their columns allow: at n <= 8, rows
  /// of more than ~16,000 entries); their blocks are counted in csr_long_blocks.
  std::int32_t csr_split_rows = 0;
  std::int32_t csr_medium_rows = 0;  ///< CSR rows given a warp of their own
  /// n = 1: tiles of consecutive short CSR rows, a thread block each (docs/KERNELS.md, "Short-row tiles at n = 1")
  std::int32_t csr_short_tiles = 0;
  int csr_chunks = 0, csr_nz_lanes = 0;  ///< CSR kernel shape (8-column chunks x lanes per row)
  bool csr_short_pairs = false;  ///< CSR short rows two to a group (docs/KERNELS.md, "Short rows in pairs")
  /// CSR short rows taken this many at a time by a group, 0 = one (docs/KERNELS.md, "Short rows in runs")
  std::int32_t csr_short_run_rows = 0;
  double tiles_only_us = 0.0, csr_only_us = -1.0;  ///< the model's time of the alternatives (-1: not possible)
  std::vector<PlanCandidate> candidates;  ///< what a measured plan chose from (empty for the model)
  /// Products per timed run (PlanCandidate::runs): a short product is timed in batches run back to back between two
  /// events, and its time is the batch's over its products (0 where nothing was timed).
  int tuning_batch = 0;
  /// Where PlanReport::tuning_ms went: drafting the other candidates, building the plans timed other than the
  /// model's own (a plan made by the model alone builds that one too; each candidate's build is in
  /// PlanCandidate::build_ms; kernels' loading not included), loading (kernels not used before in the process, and
  /// what else CUDA sets up at a kernel's first launch beyond the launch's own run time: costs paid once per process
  /// and kernel, the one part of tuning not charged to its budget), the setup (scratch B and C, stream, events), the
  /// untimed first round (its GPU time) and the timed rounds. 0 where a step did not run.
  double tuning_drafting_ms = 0.0, tuning_building_ms = 0.0, tuning_loading_ms = 0.0, tuning_setup_ms = 0.0,
         tuning_warmup_ms = 0.0, tuning_timing_ms = 0.0;
};

}  // namespace experimental

/// What a plan runs where: how the bands and their nonzeros are split between the tile kernel, the CUDA-core CSR
/// kernel and the narrow-vector path, what the cost model predicts, and how the plan was chosen. The kernel
/// internals behind it are in `diagnostics` (experimental: not kept stable).
struct PlanReport {
  KernelKind kernel = KernelKind::automatic;
  std::int32_t n = 0;
  Precision precision = Precision::fp16;  ///< the matrix's
  ElementType input = ElementType::f16;   ///< B's element type (never automatic)
  std::int32_t tile_bands = 0, csr_bands = 0;  ///< bands (16-row tile rows) on each path
  /// Bands on the narrow-vector tensor-core path (8x1 column vectors per 8-row window, docs/KERNELS.md).
  std::int32_t vector_bands = 0;
  std::int32_t empty_bands = 0;  ///< bands without entries: run() with beta == 1 skips them
  /// Stored nonzeros on 2:4 tiles, dense tiles, CSR and narrow vectors.
  std::int64_t sparse24_nnz = 0, dense_nnz = 0, csr_nnz = 0, vector_nnz = 0;
  double predicted_us = 0.0;  ///< the cost model's time for the plan
  std::string reason;         ///< one line
  /// How the plan was chosen: Tuning::measure only where candidates were timed (or a stored choice reused).
  Tuning tuning = Tuning::model;
  /// Which candidate was kept and why, or why nothing was measured (Tuning::model asked for, a kernel or knobs
  /// forced, a stored choice, the budget, device memory); empty only for kernels other than automatic made with
  /// Tuning::model.
  std::string tuning_reason;
  /// The budget a measured plan had (0 where none applied) and where it came from, e.g. "8% of the conversion's
  /// 2412.0 ms" (PlanOptions::tuning_budget_ms).
  double tuning_budget_ms = 0.0;
  std::string tuning_budget_source;
  /// What measuring added to make_plan (after the model's own draft): drafts of the other candidates, their builds,
  /// timed runs; bounded by the tuning budget.
  double tuning_ms = 0.0;
  experimental::PlanDiagnostics diagnostics;  ///< kernel internals (not stable)
};

/// An extra term of SpmmPlan::run: C gets scale * D added in the same pass, D row-major fp32 of C's shape
/// (rows(A) x n, device memory, leading dimension ld >= n). A fused form of what would otherwise be a second pass
/// over C, for updates like the three-term recurrences of polynomial preconditioners.
struct OutputAddend {
  const float* values = nullptr;
  std::int64_t ld = 0;
  float scale = 1.0f;
};
/// Most OutputAddends one run takes.
inline constexpr int kMaxOutputAddends = 2;

namespace detail {
struct PlanAccess;  // the library's own way in (plan construction)
}

/// Everything one multiply needs that is not data: fixed n and kernel, launch geometry and a workspace for
/// padding B when its width or alignment does not suit the kernels. Made by SparseOperator::make_plan; create
/// once, run many times. run() allocates nothing, never synchronises the host, and only enqueues work on the
/// given stream. Thread safety: docs/API.md, "Threads and streams".
class SpmmPlan {
 public:
  ~SpmmPlan();
  SpmmPlan(SpmmPlan&&) noexcept;
  SpmmPlan& operator=(SpmmPlan&&) noexcept;
  SpmmPlan(const SpmmPlan&) = delete;
  SpmmPlan& operator=(const SpmmPlan&) = delete;

  /// C = alpha * A * B + beta * C, as one or two kernel launches on `stream` that write disjoint rows of C
  /// (bit-identical from run to run). B: device memory, cols(A) x n, row-major, ldb >= n. C: device, rows(A) x n,
  /// row-major, ldc >= n, float (ElementType::f32) or fp16 bits (ElementType::f16). beta == 0 does not read C;
  /// beta == 1 does not touch the rows of C that A has no entries in (report().empty_bands: no work is launched
  /// for those bands). The operator must outlive the plan, and B and C must not overlap.
  /// 16-bit B: fp16 bits (ElementType::f16) or bf16 bits (ElementType::bf16), as the plan was made for.
  /// @throw InvalidArgument for null pointers, short leading dimensions, the wrong B type, unaligned B when the
  ///        plan was made without allow_unaligned_b, or when another CUDA device than the operator's is current;
  ///        CudaError if the launch fails.
  void run(const fp16_t* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
           Stream stream = nullptr) const;
  /// The same with fp32 B (a plan made with input ElementType::f32, or automatic on a split matrix); C is float.
  /// Unaligned B (not 16-byte aligned or ldb % 4 != 0) is copied to the workspace first, as for 16-bit B.
  void run(const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
           Stream stream = nullptr) const;
  /// C = alpha * A * B + sum_t addends[t].scale * D_t + beta * C (t < count <= kMaxOutputAddends), as run() above
  /// in one pass: each element of C is computed from its own row and column of every D_t, once. With addends,
  /// beta == 1 no longer skips the rows without entries (they get the addends). A D_t may be C itself (or B) but
  /// must not otherwise overlap C.
  /// @throw InvalidArgument as run(), and for more than kMaxOutputAddends addends, a null D or ld < n, or a D that
  ///        overlaps C without being C
  void run(const fp16_t* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
           const OutputAddend* addends, int count, Stream stream = nullptr) const;
  void run(const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
           const OutputAddend* addends, int count, Stream stream = nullptr) const;

  std::int32_t n() const noexcept;
  KernelKind kernel() const noexcept;
  ElementType output() const noexcept;
  ElementType input() const noexcept;  ///< never automatic
  /// Device bytes of the plan's workspace (0 without allow_unaligned_b) and work lists.
  std::int64_t workspace_bytes() const noexcept;
  /// How the plan splits the work between tiles and CSR. Never throws.
  const PlanReport& report() const noexcept;

 private:
  struct Impl;
  explicit SpmmPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend struct detail::PlanAccess;
};

}  // namespace bcsr24
