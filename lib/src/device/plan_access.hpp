// The library's own ways into SparseOperator and SpmmPlan (internal): plans made from a DeviceMatrix with the
// experimental knobs, and the host format and device copy behind an operator. Used by the operator, the
// experimental entry points, the distributed operator and white-box tests.
#pragma once

#include <cstdint>

#include "bcsr24/sparse_operator.hpp"
#include "device/device_matrix.hpp"
#include "device/plan_choices.hpp"
#include "format/bcsr24_matrix.hpp"

namespace bcsr24 {
namespace detail {

struct PlanDraft;     // device/plan_draft.hpp
class PlanStorage;    // device/plan_storage.hpp
class TunedChoices;   // device/plan_tuning.hpp

struct PlanAccess {
  /// A plan on an uploaded matrix (what SparseOperator::make_plan does after the upload). With Tuning::measure,
  /// the automatic kernel and the default knobs, the plan is measured (device/plan_tuner.hpp), reusing and
  /// recording choices in `store` where given, within a budget relative to `conversion_ms`, what converting the
  /// operator took (0: unknown); otherwise the cost model decides.
  /// @throw as SparseOperator::make_plan.
  static SpmmPlan make(const DeviceMatrix& a, std::int32_t n, KernelKind kernel, const PlanOptions& options = {},
                       const PlanKnobs& knobs = {}, TunedChoices* store = nullptr, double conversion_ms = 0.0);
  /// The plan a draft describes (the draft's options, as resolved). `loading_ms`, where given, receives the host time
  /// its kernels took to configure and load (SpmmPlan::Impl::prepare_kernels), a part of the build. With
  /// `place_later` the plan's lists get no device memory yet: the caller places them (storage(), PlanStorage::place)
  /// and, for a plan it hands out, gives them memory of their own (own_memory()).
  static SpmmPlan build(const DeviceMatrix& a, const PlanDraft& draft, double* loading_ms = nullptr,
                        bool place_later = false);
  /// A plan's device lists, for the tuner to place its candidates' together.
  static PlanStorage& storage(SpmmPlan& plan) noexcept;
  /// Gives a plan built with `place_later` device memory of its own (after the work queued on `stream`, which it
  /// waits for), and the staging workspace where `allow_unaligned_b` asks for one the plan was built without.
  /// @throw OutOfMemory naming the plan, CudaError
  static void own_memory(SpmmPlan& plan, bool allow_unaligned_b, Stream stream);
  /// A plan's report, for the tuner to add what it measured.
  static PlanReport& report(SpmmPlan& plan) noexcept;
  /// A plan's state (device/spmm_plan_impl.hpp), for white-box tests and research programs.
  static const SpmmPlan::Impl& impl(const SpmmPlan& plan) noexcept;
};

struct OperatorAccess {
  /// An operator adopting an already converted matrix (a .b24 file's, or one a test built).
  /// @throw InvalidArgument if its tile lists are inconsistent with its sizes.
  static SparseOperator from_host(Bcsr24Matrix host, const OperatorOptions& options = {});
  /// The same with the conversion's layout report (from_csr, from_file).
  static SparseOperator adopt(Bcsr24Matrix host, LayoutReport report, const OperatorOptions& options);
  static const Bcsr24Matrix& host(const SparseOperator& op) noexcept;
  /// The choices measured plans of the operator stored (and its .b24 file holds).
  static TunedChoices& tuned(const SparseOperator& op) noexcept;
  /// The device copy, uploading first if needed, with what `kernel` needs besides the default lists (and the
  /// narrow vectors of every band where `every_band_vectors`; the CSR rows of every band where `every_band_csr`,
  /// if they fit in device memory: automatic plans at n = 1 run on them where they are faster than tiles).
  static const DeviceMatrix& device(const SparseOperator& op, KernelKind kernel = KernelKind::automatic,
                                    bool every_band_vectors = false, bool every_band_csr = false);
};

}  // namespace detail
}  // namespace bcsr24
