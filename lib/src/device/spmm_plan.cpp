// SpmmPlan: fixes n, kernel and launch geometry once; run() only validates pointers and enqueues.
#include <climits>
#include <cmath>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "bcsr24/device.hpp"
#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"
#include "device/device_buffer.hpp"
#include "device/device_matrix_impl.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24 {

struct SpmmPlan::Impl {
  const DeviceMatrix::Impl* a = nullptr;
  std::int32_t n = 0;
  KernelKind kernel = KernelKind::split_pipelined;
  PlanOptions options;
  int slice_width = 8;
  kernels::SpmmParams params;  // everything but b, ldb, c, ldc, alpha, beta
  detail::DeviceBuffer<std::uint16_t> staged_b;
  std::int64_t staged_ld = 0;
};

SpmmPlan::SpmmPlan(const DeviceMatrix& a, std::int32_t n, KernelKind kernel, const PlanOptions& options)
    : impl_(std::make_unique<Impl>()) {
  if (n < 1) throw InvalidArgument("SpmmPlan: n must be >= 1, got " + std::to_string(n));
  const DeviceMatrix::Impl& m = a.impl();
  const bool dense_kernel = kernel != KernelKind::split_pipelined;
  if (dense_kernel && !m.has_merged_dense)
    throw InvalidArgument(std::string("SpmmPlan: kernel ") + kernel_name(kernel) +
                          " needs the matrix uploaded with with_merged_dense = true");
  Impl& p = *impl_;
  p.a = &m;
  p.n = n;
  p.kernel = kernel;
  p.options = options;
  p.slice_width = kernels::slice_width_for(n);
  const std::int64_t n_slices = (std::int64_t(n) + p.slice_width - 1) / p.slice_width;
  if (std::int64_t(m.tile_rows) * n_slices > INT32_MAX)
    throw SizeLimitError("SpmmPlan: " + std::to_string(m.tile_rows) + " tile rows x " + std::to_string(n_slices) +
                         " column slices exceed the 2^31 - 1 blocks of one launch");

  kernels::SpmmParams& k = p.params;
  k.sparse24 = m.sparse24.view();
  k.dense = dense_kernel ? m.merged_dense.view() : m.dense.view();
  k.row_work = m.row_work.get();
  k.row_map = m.row_map.get();
  k.tile_rows = m.tile_rows;
  k.rows = m.rows;
  k.k = m.cols;
  k.n = n;
  k.n_slices = static_cast<std::int32_t>(n_slices);

  kernels::configure_spmm_kernel(kernel, p.slice_width, options.output, m.b_row_index);
  if (options.allow_unaligned_b) {
    p.staged_ld = (std::int64_t(n) + 7) / 8 * 8;
    p.staged_b = detail::DeviceBuffer<std::uint16_t>(static_cast<std::size_t>(std::int64_t(m.cols) * p.staged_ld));
  }
}

SpmmPlan::~SpmmPlan() = default;
SpmmPlan::SpmmPlan(SpmmPlan&&) noexcept = default;
SpmmPlan& SpmmPlan::operator=(SpmmPlan&&) noexcept = default;

std::int32_t SpmmPlan::n() const noexcept { return impl_->n; }
KernelKind SpmmPlan::kernel() const noexcept { return impl_->kernel; }
OutputType SpmmPlan::output() const noexcept { return impl_->options.output; }
std::int64_t SpmmPlan::workspace_bytes() const noexcept { return std::int64_t(impl_->staged_b.bytes()); }

void SpmmPlan::run(const fp16_t* b, std::int64_t ldb, void* c, std::int64_t ldc, float alpha, float beta,
                   Stream stream) const {
  const Impl& p = *impl_;
  if (c == nullptr && p.a->rows > 0) throw InvalidArgument("SpmmPlan::run: C is null");
  if (b == nullptr && p.a->cols > 0) throw InvalidArgument("SpmmPlan::run: B is null");
  if (ldb < p.n) throw InvalidArgument("SpmmPlan::run: ldb " + std::to_string(ldb) + " < n " + std::to_string(p.n));
  if (ldc < p.n) throw InvalidArgument("SpmmPlan::run: ldc " + std::to_string(ldc) + " < n " + std::to_string(p.n));
  if (p.a->rows == 0) return;

  kernels::SpmmParams k = p.params;
  const bool b_aligned = reinterpret_cast<std::uintptr_t>(b) % 16 == 0 && ldb % 8 == 0;
  auto* s = reinterpret_cast<cudaStream_t>(stream);
  if (b_aligned || p.a->cols == 0) {
    k.b = b;
    k.ldb = ldb;
  } else {
    if (!p.options.allow_unaligned_b)
      throw InvalidArgument("SpmmPlan::run: B must be 16-byte aligned with ldb % 8 == 0 (ldb = " +
                            std::to_string(ldb) + "), or make the plan with allow_unaligned_b");
    kernels::launch_stage_b(b, ldb, p.a->cols, p.n, p.staged_b.get(), p.staged_ld, s);
    k.b = p.staged_b.get();
    k.ldb = p.staged_ld;
  }
  k.c = c;
  k.ldc = ldc;
  // Stored values are A * 2^-e: undo the scale in alpha (a power of two, so exact unless it over/underflows).
  k.alpha = std::ldexp(alpha, p.a->scale_exponent);
  k.beta = beta;
  kernels::launch_spmm_kernel(p.kernel, p.slice_width, p.options.output, p.a->b_row_index, k, s);
}

}  // namespace bcsr24
