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

/// The kernel ladder (docs/KERNELS.md).
enum class KernelKind {
  dense_bt,         ///< every stored tile as dense, mma.sync m16n8k16, no pipelining (baseline)
  dense_pipelined,  ///< the same with a multi-stage cp.async pipeline
  split_pipelined,  ///< 2:4 tiles on mma.sp m16n8k32, dense on mma.sync, separate pipelined loops (default)
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

/// The matrix uploaded once to the current CUDA device (RAII; move-only). Holds the 2:4 and dense lists and,
/// when asked for, the merged all-dense list used by the dense kernels.
class DeviceMatrix {
 public:
  /// @param with_merged_dense also upload every tile as dense (needed by dense_bt / dense_pipelined).
  /// @throw SizeLimitError when the lists do not fit in the device's free memory (checked before allocating);
  ///        CudaError on allocation or copy failure; NotSupported without a device of sm_80 or newer.
  explicit DeviceMatrix(const Bcsr24Matrix& host, bool with_merged_dense = true);
  ~DeviceMatrix();
  DeviceMatrix(DeviceMatrix&&) noexcept;
  DeviceMatrix& operator=(DeviceMatrix&&) noexcept;
  DeviceMatrix(const DeviceMatrix&) = delete;
  DeviceMatrix& operator=(const DeviceMatrix&) = delete;

  std::int32_t rows() const noexcept;
  std::int32_t cols() const noexcept;
  std::int32_t scale_exponent() const noexcept;
  bool has_merged_dense() const noexcept;
  /// Bytes of device memory held.
  std::int64_t device_bytes() const noexcept;

  struct Impl;
  const Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// Output element type.
enum class OutputType { f32, f16 };

/// Choices fixed when a plan is made.
struct PlanOptions {
  OutputType output = OutputType::f32;
  /// Keep a workspace of cols(A) x round_up(n, 8) fp16 so that B with any pointer alignment and any ldb
  /// works (it is copied there first). When false, run() requires B 16-byte aligned with ldb % 8 == 0
  /// and throws InvalidArgument otherwise; no workspace is allocated.
  bool allow_unaligned_b = true;
};

/// Everything one multiply needs that is not data: fixed n and kernel, launch geometry and a workspace for
/// padding B when its width or alignment is not a multiple of 8 fp16. Create once, run many times.
/// run() allocates nothing, never synchronises the host, and only enqueues work on the given stream.
/// A plan may be used by one host thread at a time; several plans on one DeviceMatrix are fine.
class SpmmPlan {
 public:
  /// @throw InvalidArgument for n < 1, or a dense kernel on a matrix uploaded without the merged list.
  SpmmPlan(const DeviceMatrix& a, std::int32_t n, KernelKind kernel, const PlanOptions& options = {});
  ~SpmmPlan();
  SpmmPlan(SpmmPlan&&) noexcept;
  SpmmPlan& operator=(SpmmPlan&&) noexcept;
  SpmmPlan(const SpmmPlan&) = delete;
  SpmmPlan& operator=(const SpmmPlan&) = delete;

  /// C = alpha * A * B + beta * C. B: device fp16, cols(A) x n, row-major, ldb >= n. C: device, rows(A) x n,
  /// row-major, ldc >= n, float (OutputType::f32) or fp16 bits (OutputType::f16). beta == 0 does not read C.
  /// The DeviceMatrix must outlive the plan, and B and C must not overlap.
  /// @throw InvalidArgument for null pointers, short leading dimensions, or unaligned B when the plan was
  ///        made without allow_unaligned_b; CudaError if the launch fails.
  void run(const fp16_t* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
           Stream stream = nullptr) const;

  std::int32_t n() const noexcept;
  KernelKind kernel() const noexcept;
  OutputType output() const noexcept;
  /// Device bytes of the plan's workspace (0 without allow_unaligned_b).
  std::int64_t workspace_bytes() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bcsr24
