// Builds a plan from its draft (device/plan_draft.hpp): PlanAccess's entry points, and SpmmPlan::Impl::build,
// which makes the tile part and the CSR part (their own files) and the buffer that unaligned B is staged in.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "bcsr24/error.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "device/plan_access.hpp"
#include "device/plan_draft.hpp"
#include "device/plan_tuner.hpp"
#include "device/spmm_plan_impl.hpp"
#include "format/tile_layout.hpp"

namespace bcsr24 {

SpmmPlan detail::PlanAccess::build(const DeviceMatrix& a, const PlanDraft& draft, double* loading_ms,
                                    bool place_later) {
  auto impl = std::make_unique<SpmmPlan::Impl>();
  // A failure part way leaves nothing allocated: the buffers made so far belong to impl, freed as it goes.
  try {
    impl->build(a, draft, place_later);
    const auto before = std::chrono::steady_clock::now();
    impl->prepare_kernels();
    if (loading_ms != nullptr)
      *loading_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - before).count();
  } catch (const OutOfMemory& e) {
    throw OutOfMemory("SparseOperator::make_plan (n = " + std::to_string(draft.n) + ", kernel " +
                      kernel_name(draft.kernel) + ", its work lists and workspace): " + e.what());
  }
  return SpmmPlan(std::move(impl));
}

detail::PlanStorage& detail::PlanAccess::storage(SpmmPlan& plan) noexcept { return plan.impl_->storage; }

void detail::PlanAccess::own_memory(SpmmPlan& plan, bool allow_unaligned_b, Stream stream) {
  SpmmPlan::Impl& p = *plan.impl_;
  try {
    p.storage.own_memory(stream);
    if (allow_unaligned_b && !p.options.allow_unaligned_b) p.allow_unaligned_b();
  } catch (const OutOfMemory& e) {
    throw OutOfMemory("SparseOperator::make_plan (n = " + std::to_string(p.n) + ", kernel " + kernel_name(p.kernel) +
                      ", its work lists and workspace): " + e.what());
  }
}

SpmmPlan detail::PlanAccess::make(const DeviceMatrix& a, std::int32_t n, KernelKind kernel,
                                   const PlanOptions& options, const PlanKnobs& knobs, TunedChoices* store,
                                   double conversion_ms) {
  const bool measure = options.tuning == Tuning::measure;
  if (measure && kernel == KernelKind::automatic && experimental::default_knobs(knobs))
    return tune_plan(a, n, options, store, conversion_ms);
  SpmmPlan plan = build(a, draft_plan(a, n, kernel, options, knobs));
  // Why nothing was measured, wherever a choice existed to measure.
  std::string& why = plan.impl_->report.tuning_reason;
  if (kernel != KernelKind::automatic) {
    if (measure) why = std::string("kernel ") + kernel_name(kernel) + " requested: nothing to measure";
  } else if (!experimental::default_knobs(knobs)) {
    why = "plan knobs forced: the cost model decides the rest";
  } else {
    why = "Tuning::model requested: the cost model's plan, nothing measured";
  }
  return plan;
}

PlanReport& detail::PlanAccess::report(SpmmPlan& plan) noexcept { return plan.impl_->report; }

const SpmmPlan::Impl& detail::PlanAccess::impl(const SpmmPlan& plan) noexcept { return *plan.impl_; }

SpmmPlan::SpmmPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

void SpmmPlan::Impl::prepare_kernels() const {
  if (grouped)
    kernels::configure_band_group_kernel(mode, options.output);
  else if (run_tiles)
    kernels::configure_tile_kernel(*tile);
  if (run_csr) kernels::load_csr_kernel(*csr_kernel);
  if (run_vectors) kernels::load_vector_kernel(mode, options.output);
}

void SpmmPlan::Impl::build(const DeviceMatrix& matrix, const detail::PlanDraft& draft, bool place_later) {
  const DeviceMatrix::Impl& m = matrix.impl();
  const KernelKind requested = draft.kernel;
  a = &m;
  n = draft.n;
  kernel = requested;
  options = draft.options;
  mode = draft.mode;
  slice_width = draft.slice_width;
  tile_pipeline = draft.tile_pipeline;
  csr = draft.csr;
  vectors = draft.vectors;
  report = draft.report;

  using Clock = std::chrono::steady_clock;
  auto since_ms = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  Clock::time_point t = Clock::now();
  build_tile_part(m, draft);
  build_times.tile_ms = since_ms(t);
  t = Clock::now();
  build_csr_part(m, draft.to_csr, draft.knobs);
  build_times.csr_ms = since_ms(t);
  t = Clock::now();
  build_vector_part(m, draft.to_vectors, draft.knobs);
  build_times.vector_ms = since_ms(t);
  // Unaligned B (allow_unaligned_b) is copied into a buffer of aligned rows where some part reads it in 16-byte
  // pieces (the tiles, the vectors; CSR unless n < 8): a workspace of the plan's storage.
  needs_aligned_b = run_tiles || run_vectors || (run_csr && !csr_shape.scalar_b);
  if (options.allow_unaligned_b && needs_aligned_b) {
    const std::size_t element = options.input == ElementType::f32 ? sizeof(float) : sizeof(std::uint16_t);
    storage.add_workspace<unsigned char>(staging_elements() * element, [this](unsigned char* d) { staged_b = d; });
  }
  t = Clock::now();
  if (!place_later) storage.upload();  // the parts' lists, counters and workspaces, in one allocation and one copy
  build_times.upload_ms = since_ms(t);
  if (m.precision == Precision::split) {  // the low parts double the value bytes of the tiles
    report.diagnostics.sparse24_bytes += report.diagnostics.sparse24_tiles * kSparseTileValues * 2;
    report.diagnostics.dense_bytes += report.diagnostics.dense_tiles * kDenseTileValues * 2;
  }
}

std::size_t SpmmPlan::Impl::staging_elements() {
  const int per_chunk = options.input == ElementType::f32 ? 4 : 8;  // values per 16-byte load
  staged_ld = (std::int64_t(n) + per_chunk - 1) / per_chunk * per_chunk;
  return static_cast<std::size_t>(std::int64_t(a->cols) * staged_ld);
}

void SpmmPlan::Impl::allow_unaligned_b() {
  if (needs_aligned_b) {
    const std::size_t element = options.input == ElementType::f32 ? sizeof(float) : sizeof(std::uint16_t);
    staged_b_own = detail::DeviceBuffer<unsigned char>(staging_elements() * element);
    staged_b = staged_b_own.get();
  }
  options.allow_unaligned_b = true;
}

}  // namespace bcsr24
