// SpmmPlan: fixes n, kernel, the split of the bands between tiles and CSR, and the launch geometry once
// (device/plan_draft.cpp decides, device/plan_build.cpp builds); run() only validates pointers and enqueues.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "bcsr24/error.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "device/cuda_check.hpp"
#include "device/spmm_plan_impl.hpp"
#include "kernels/band_group_params.hpp"
#include "kernels/csr_params.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24 {

SpmmPlan::~SpmmPlan() = default;
SpmmPlan::SpmmPlan(SpmmPlan&&) noexcept = default;
SpmmPlan& SpmmPlan::operator=(SpmmPlan&&) noexcept = default;

std::int32_t SpmmPlan::n() const noexcept { return impl_->n; }
KernelKind SpmmPlan::kernel() const noexcept { return impl_->kernel; }
ElementType SpmmPlan::output() const noexcept { return impl_->options.output; }
ElementType SpmmPlan::input() const noexcept { return impl_->options.input; }
std::int64_t SpmmPlan::workspace_bytes() const noexcept {
  const Impl& p = *impl_;
  return std::int64_t(p.staged_b_own.bytes() + p.storage.bytes());
}
const PlanReport& SpmmPlan::report() const noexcept { return impl_->report; }

namespace {

/// Null pointers, short leading dimensions and the plan's B type, for either run().
void check_run_arguments(const DeviceMatrix::Impl& a, std::int32_t n, ElementType plan_input, bool f32_b, const void* b,
                         std::int64_t ldb, const void* c, std::int64_t ldc) {
  if (f32_b != (plan_input == ElementType::f32))
    throw InvalidArgument(std::string("SpmmPlan::run: the plan takes ") + element_type_name(plan_input) + " B, not " +
                          (f32_b ? "fp32" : "16-bit") + " (PlanOptions::input)");
  if (c == nullptr && a.rows > 0) throw InvalidArgument("SpmmPlan::run: C is null");
  if (b == nullptr && a.cols > 0) throw InvalidArgument("SpmmPlan::run: B is null");
  if (ldb < n) throw InvalidArgument("SpmmPlan::run: ldb " + std::to_string(ldb) + " < n " + std::to_string(n));
  if (ldc < n) throw InvalidArgument("SpmmPlan::run: ldc " + std::to_string(ldc) + " < n " + std::to_string(n));
}

/// The addends of a run as the kernels take them: at most kMaxOutputAddends, each non-null with ld >= n, and none
/// overlapping C (rows x ldc elements of `c_bytes` each) unless it is C.
kernels::OutputAddends checked_addends(const OutputAddend* addends, int count, std::int32_t rows, std::int32_t n,
                                       const void* c, std::int64_t ldc, std::size_t c_bytes) {
  static_assert(kMaxOutputAddends == kernels::kMaxOutputAddends, "one limit for the API and the kernels");
  kernels::OutputAddends out;
  if (count < 0 || count > kMaxOutputAddends)
    throw InvalidArgument("SpmmPlan::run: " + std::to_string(count) + " addends (at most " +
                          std::to_string(kMaxOutputAddends) + ")");
  if (count > 0 && addends == nullptr) throw InvalidArgument("SpmmPlan::run: the addends are null");
  const auto c_begin = reinterpret_cast<std::uintptr_t>(c);
  const auto c_end = c_begin + std::uintptr_t(std::max<std::int64_t>(0, rows - 1) * ldc + n) * c_bytes;
  for (int t = 0; t < count; ++t) {
    const OutputAddend& a = addends[t];
    // The message is built only on the way out: run() is the hot path.
    const auto refuse = [t](const std::string& why) {
      return InvalidArgument("SpmmPlan::run: addend " + std::to_string(t) + why);
    };
    if (a.values == nullptr && rows > 0) throw refuse(" is null");
    if (a.ld < n) throw refuse(": ld " + std::to_string(a.ld) + " < n " + std::to_string(n));
    const auto d_begin = reinterpret_cast<std::uintptr_t>(a.values);
    const auto d_end = d_begin + std::uintptr_t(std::max<std::int64_t>(0, rows - 1) * a.ld + n) * sizeof(float);
    if (d_begin != c_begin && d_begin < c_end && c_begin < d_end) throw refuse(" overlaps C without being C");
    out.values[t] = a.values;
    out.ld[t] = a.ld;
    out.scale[t] = a.scale;
  }
  out.count = count;
  return out;
}

}  // namespace

void SpmmPlan::run(const fp16_t* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
                   Stream stream) const {
  impl_->run(b, ldb, c, ldc, alpha, beta, nullptr, 0, reinterpret_cast<cudaStream_t>(stream));
}

void SpmmPlan::run(const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
                   Stream stream) const {
  impl_->run(b, ldb, c, ldc, alpha, beta, nullptr, 0, reinterpret_cast<cudaStream_t>(stream));
}

void SpmmPlan::run(const fp16_t* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
                   const OutputAddend* addends, int count, Stream stream) const {
  impl_->run(b, ldb, c, ldc, alpha, beta, addends, count, reinterpret_cast<cudaStream_t>(stream));
}

void SpmmPlan::run(const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
                   const OutputAddend* addends, int count, Stream stream) const {
  impl_->run(b, ldb, c, ldc, alpha, beta, addends, count, reinterpret_cast<cudaStream_t>(stream));
}

template <typename BElement>
void SpmmPlan::Impl::run(const BElement* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
                         const OutputAddend* addends, int count, cudaStream_t s) const {
  constexpr bool kF32 = std::is_same_v<BElement, float>;
  constexpr int kPerChunk = kF32 ? 4 : 8;  // B values per 16-byte load
  check_run_arguments(*a, n, options.input, kF32, b, ldb, c, ldc);
  int current = -1;
  BCSR24_CUDA_CHECK(cudaGetDevice(&current));
  if (current != a->device)
    throw InvalidArgument("SpmmPlan::run: the plan lives on CUDA device " + std::to_string(a->device) + ", device " +
                          std::to_string(current) + " is current; call cudaSetDevice(" + std::to_string(a->device) +
                          ") first");
  if (a->rows == 0) return;
  const kernels::OutputAddends checked = checked_addends(
      addends, count, a->rows, n, c, ldc, options.output == ElementType::f16 ? sizeof(std::uint16_t) : sizeof(float));

  kernels::SpmmParams k = params;
  k.addends = checked;
  const BElement* b_used = b;
  std::int64_t ldb_used = ldb;
  const bool b_aligned = reinterpret_cast<std::uintptr_t>(b) % 16 == 0 && ldb % kPerChunk == 0;
  // The tile kernel steps from one B row to the next by a 32-bit byte pitch; B with rows 4 GiB or more apart is
  // staged like unaligned B.
  const bool b_pitch_fits = ldb <= std::int64_t(UINT32_MAX / sizeof(BElement));
  if ((!b_aligned || !b_pitch_fits) && a->cols != 0 && needs_aligned_b) {
    if (!options.allow_unaligned_b && !b_aligned)
      throw InvalidArgument(std::string("SpmmPlan::run: ") + (kF32 ? "fp32 " : "") +
                            "B must be 16-byte aligned with ldb % " + std::to_string(kPerChunk) + " == 0 (ldb = " +
                            std::to_string(ldb) + "), or make the plan with allow_unaligned_b");
    if (!options.allow_unaligned_b)
      throw SizeLimitError("SpmmPlan::run: ldb " + std::to_string(ldb) + " puts B's rows 4 GiB or more apart; the " +
                           "tile kernels need a smaller pitch, or make the plan with allow_unaligned_b (B is copied)");
    BElement* staged = static_cast<BElement*>(staged_b);
    kernels::launch_stage_b(b, ldb, a->cols, n, staged, staged_ld, s);
    b_used = staged;
    ldb_used = staged_ld;
  }
  if constexpr (kF32) k.b_f32 = b_used; else k.b = b_used;
  k.b_pitch = static_cast<std::uint32_t>(ldb_used * std::int64_t(sizeof(BElement)));
  k.c = c;
  k.ldc = ldc;
  // Stored values are A * 2^-e: undo the scale in alpha (a power of two, so exact unless it over/underflows).
  k.alpha = std::ldexp(alpha, a->scale_exponent);
  k.beta = beta;
  launch(k, ldb_used, b, ldb, s);
}

void SpmmPlan::Impl::launch(kernels::SpmmParams k, std::int64_t ldb_used, const void* b_as_given,
                            std::int64_t ldb_as_given, cudaStream_t s) const {
  // The parts write disjoint rows of C (a band is on one path), so their order does not matter.
  // Rows without entries keep C: only the work with entries runs (not with addends, which every row gets).
  const bool accumulate = k.beta == 1.0f && k.addends.count == 0;
  if (run_tiles && accumulate && tiles_have_empty) {
    k.row_work = tile_work_with_entries;
    k.tile_rows = tile_items_with_entries;
  }
  if (run_tiles && grouped) {
    kernels::BandGroupParams g = group_params;
    g.c = k.c;
    g.ldc = k.ldc;
    g.alpha = k.alpha;
    g.beta = k.beta;
    g.addends = k.addends;
    kernels::launch_band_group_kernel(mode, options.output, g, k.b, k.k, k.b_pitch, group_b_map, s);
  } else if (run_tiles && k.tile_rows > 0)
    kernels::launch_tile_kernel(*tile, k, s);
  if (run_csr) {
    kernels::CsrSpmmParams c = csr_params;
    if (accumulate && csr_has_empty) {
      if (csr_short_range || csr_short_tiles)
        c.short_min_entries = 1;
      else {
        c.short_slots = csr_short_slots_with_entries;
        c.short_count = csr_short_with_entries;
      }
    }
    // A narrow B is read as it is; otherwise the (possibly staged) B of the tile part.
    const bool as_given = csr_shape.scalar_b;
    c.b = as_given ? static_cast<const std::uint16_t*>(b_as_given) : k.b;
    c.b_f32 = as_given ? static_cast<const float*>(b_as_given) : k.b_f32;
    if (options.input == ElementType::f32) c.b = nullptr; else c.b_f32 = nullptr;
    c.ldb = as_given ? ldb_as_given : ldb_used;
    c.c = k.c;
    c.ldc = k.ldc;
    c.alpha = k.alpha;
    c.beta = k.beta;
    c.addends = k.addends;
    kernels::launch_csr_kernel(*csr_kernel, c, s);
  }
  if (run_vectors) {
    kernels::VectorSpmmParams v = vector_params;
    const VectorScheduleLists& schedule = accumulate && vectors_have_empty ? vector_with_entries : vector_all;
    v.steps = schedule.steps;
    v.pieces = schedule.pieces;
    v.warp_steps = schedule.warp_steps;
    v.warp_pieces = schedule.warp_pieces;
    v.warps = schedule.warps;
    v.b = k.b;  // the tile part's B: staged where it was not aligned
    v.ldb = ldb_used;
    v.c = k.c;
    v.ldc = k.ldc;
    v.alpha = k.alpha;
    v.beta = k.beta;
    v.addends = k.addends;
    kernels::launch_vector_kernel(mode, options.output, v, s);
  }
}

}  // namespace bcsr24
