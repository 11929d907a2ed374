// GPU BlockSpace: every operation enqueues on one stream (CUDA events around each when timing); the host waits only
// in read_small and slot reads.
#include "gpu_block_space.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "bcsr24/device.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24/error.hpp"
#include "block_space_kernels.hpp"
#include "gpu_support.hpp"
#include "rank_link.hpp"

namespace bcsr24::solver {

namespace {

using namespace device;  // gpu_support.hpp

enum Category { inner_product, outer_product, vector_work, block_work, kCategories };

int round_up_8(int k) { return (k + 7) / 8 * 8; }

}  // namespace

const char* outer_product_name(OuterProduct product) noexcept {
  return product == OuterProduct::cusparse ? "cusparse" : "csr_kernel";
}

struct GpuBlockSpace::Impl {
  std::int32_t n = 0;
  int k = 0, kp = 0;
  const InnerMatrix* inner = nullptr;
  small::SmallLayout layout;

  cudaStream_t stream = nullptr;

  DeviceArray<double> slots;  // BlockSlots::count(memory) blocks of n x k
  int slot_count = 0;
  std::unique_ptr<DeviceCsrArrays> a64;
  std::unique_ptr<DeviceCsrArrays> mass64;  // M of a generalized eigenproblem (set_mass; null: none)
  std::unique_ptr<ForeignProduct> outer;  // fp64 A times an n x k block with cuSPARSE (null: the CSR kernel)

  DeviceArray<float> work[3];  // n x kp fp32: Chebyshev input and the two iterates; Lanczos vectors
  std::unique_ptr<SpmmPlan> plan;          // bcsr24
  std::unique_ptr<ForeignProduct> inner32;  // cuSPARSE fp32

  DeviceArray<double> inverse_diagonal, row_scale;
  RankLink* link = nullptr;               // several GPUs: sums over ranks and the products (null: one GPU)
  DeviceArray<std::int32_t> caller_rows;  // several GPUs: the Lanczos start vectors' row numbers
  DeviceArray<double> small;      // the small buffer
  DeviceArray<double> reduction;  // partial sums of the two-pass reductions
  PinnedArray<double> small_host;  // status reads
  PinnedArray<double> staging;     // write_small
  cudaEvent_t staging_done = nullptr;
  cudaEvent_t order = nullptr;  // wait_for / release_to: the caller's stream against the space's

  EventTimer timer{kCategories};
  SpaceCounters counters;

  double* slot(int i) const {
    if (i < 0 || i >= slot_count) throw InvalidArgument("GpuBlockSpace: slot " + std::to_string(i) + " out of range");
    return slots.get() + std::size_t(i) * std::size_t(n) * std::size_t(k);
  }
  double* at(std::int64_t offset) const { return small.get() + offset; }
  /// After a reduction into the small buffer: on several GPUs, its sum over the ranks (one GPU: nothing to do).
  void sum_over_ranks(std::int64_t offset, std::int64_t count) {
    if (link) timed(block_work, [&] { link->sum(at(offset), count, reinterpret_cast<Stream>(stream)); });
  }
  const double* scale_rows() const { return row_scale.get(); }  // null: ones

  /// Runs `enqueue` between two timing events of `category`.
  template <class F>
  void timed(Category category, F&& enqueue) {
    cudaEvent_t start = timer.record(stream);
    enqueue();
    timer.interval(category, start, timer.record(stream));
  }
  void synchronize() {
    CUDA_OK(cudaStreamSynchronize(stream));
    timer.collect();
  }
  /// c = alpha A b + beta d in fp64 on n x k blocks (b distinct from c; d null when beta = 0). cuSPARSE scales c
  /// itself, so d is copied into c first; the CSR kernel reads d directly. `norms` (small-buffer offset, or -1):
  /// c's column sums of squares there too, in the CSR kernel's own pass or in a second one after cuSPARSE.
  void outer_multiply(const double* b, const double* d, double* c, double alpha, double beta,
                      std::int64_t norms = -1) {
    if (outer && beta != 0.0 && d != c)
      timed(vector_work, [&] {
        CUDA_OK(cudaMemcpyAsync(c, d, std::size_t(n) * k * sizeof(double), cudaMemcpyDeviceToDevice, stream));
      });
    timed(outer_product, [&] {
      if (outer)
        outer->run(b, c, alpha, beta);
      else
        block_gpu::csr_product({a64->row_ptr.get(), a64->col_idx.get(), a64->values64.get(), n}, b, d, c, k, alpha,
                               beta, norms >= 0 ? at(norms) : nullptr, reduction.get(), stream);
    });
    ++counters.outer_products;
    if (outer && norms >= 0)
      timed(block_work,
            [&] { block_gpu::column_dots(c, c, n, k, k, reduction.get(), at(norms), stream); });
    if (norms >= 0) sum_over_ranks(norms, k);
  }
  /// c = alpha A_inner b + beta c on fp32 blocks of width kp; with bcsr24 also + the addends (scale * block of
  /// width kp), in the product's own pass.
  void inner_multiply(const float* b, float* c, float alpha, float beta, const OutputAddend* addends = nullptr,
                      int count = 0) {
    if (!plan && !inner32) throw InvalidArgument("GpuBlockSpace: no inner operator (backend none)");
    timed(inner_product, [&] {
      if (plan)
        plan->run(b, kp, c, kp, alpha, beta, addends, count, stream);
      else if (count > 0)
        inner32->run_with_addends(b, c, alpha, beta, addends, count);
      else
        inner32->run(b, c, alpha, beta);
    });
    ++counters.inner_products;
  }
  /// Whether the inner product adds the Chebyshev terms in its own pass (bcsr24, on one GPU or several).
  bool fused_addends() const { return plan || (inner32 && inner32->takes_addends()); }
  void float_dots(const float* x, const float* y) {
    timed(block_work, [&] {
      block_gpu::column_dots(x, y, n, k, kp, reduction.get(), at(layout.column[small::dots]), stream);
    });
    sum_over_ranks(layout.column[small::dots], k);
  }
  void step(const small::SmallStep& s) {
    timed(block_work, [&] { block_gpu::small_step(small.get(), layout, s, stream); });
  }

  ~Impl() {
    if (stream) cudaStreamSynchronize(stream);
    outer.reset();
    inner32.reset();
    plan.reset();
    if (staging_done) cudaEventDestroy(staging_done);
    if (order) cudaEventDestroy(order);
    if (stream) cudaStreamDestroy(stream);
  }
};

GpuBlockSpace::GpuBlockSpace(const CsrMatrix& a, const InnerMatrix& inner, int k, int memory, int lanczos_steps,
                             bool timing, OuterProduct outer, const ForeignProducts& foreign, RankLink* link)
    : impl_(std::make_unique<Impl>()) {
  const DeviceInfo info = query_device();
  if (!info.available) throw NotSupported("the GPU solver needs a CUDA device: " + info.reason);
  if (a.rows != a.cols || a.rows < 1)
    throw InvalidArgument(link ? "GpuBlockSpace: rank " + std::to_string(link->rank()) +
                                     " owns no rows; the distributed solver needs at least one row per rank"
                               : std::string("GpuBlockSpace: the matrix must be square and non-empty"));
  check_space_sizes(k, memory, lanczos_steps);
  const bool has_operator = link ? static_cast<bool>(inner.distributed) : static_cast<bool>(inner.op);
  if (inner.backend == InnerBackend::bcsr24 && !has_operator)
    throw InvalidArgument(link ? "GpuBlockSpace: bcsr24 backend without a distributed operator on several GPUs"
                               : "GpuBlockSpace: bcsr24 backend without operator");
  if (link && inner.backend == InnerBackend::cusparse_csr_f32)
    throw NotSupported("GpuBlockSpace: the cuSPARSE inner product runs on one GPU only");
  if (!inner.row_scale.empty() && inner.row_scale.size() != std::size_t(a.rows))
    throw InvalidArgument("GpuBlockSpace: the inner row scale has the wrong length");
  Impl& s = *impl_;
  s.n = a.rows;
  s.k = k;
  s.kp = round_up_8(k);
  s.inner = &inner;
  s.layout = small::make_layout(k, memory, lanczos_steps);
  s.timer.set_enabled(timing);
  s.link = link;
  if (link) outer = OuterProduct::csr_kernel;  // the link's product replaces both
  CUDA_OK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  // cuSPARSE only for the comparisons (its fp64 SpMM, its fp32 inner product), made by the caller's `foreign`.
  if ((outer == OuterProduct::cusparse || inner.backend == InnerBackend::cusparse_csr_f32) && !foreign)
    throw NotSupported("GpuBlockSpace: cuSPARSE products need the comparisons' factory (cusparse_support.hpp)");
  CUDA_OK(cudaEventCreateWithFlags(&s.staging_done, cudaEventDisableTiming));
  CUDA_OK(cudaEventCreateWithFlags(&s.order, cudaEventDisableTiming));

  s.slot_count = BlockSlots::count(memory);
  s.slots = DeviceArray<double>(std::size_t(s.slot_count) * std::size_t(s.n) * std::size_t(k));
  CUDA_OK(cudaMemset(s.slots.get(), 0, s.slots.bytes()));
  if (link) {
    s.outer = link->outer_product(k, reinterpret_cast<Stream>(s.stream));
    const std::vector<std::int32_t>& rows = link->caller_rows();
    s.caller_rows = DeviceArray<std::int32_t>(rows.data(), rows.size());
  } else {
    s.a64 = std::make_unique<DeviceCsrArrays>(a, false);
    if (outer == OuterProduct::cusparse)
      s.outer = foreign({&a, false, k, s.slot(0), s.slot(1), reinterpret_cast<Stream>(s.stream)});
  }
  const std::vector<double> inverse = inverse_positive_diagonal(a);
  s.inverse_diagonal = DeviceArray<double>(inverse.data(), inverse.size());
  if (!inner.row_scale.empty()) s.row_scale = DeviceArray<double>(inner.row_scale.data(), inner.row_scale.size());
  for (auto& w : s.work) {
    w = DeviceArray<float>(std::size_t(s.n) * std::size_t(s.kp));
    CUDA_OK(cudaMemset(w.get(), 0, w.bytes()));
  }
  if (inner.backend == InnerBackend::bcsr24 && link) {
    // The distributed plan has no addends: the Chebyshev terms take the second pass, as with cuSPARSE.
    s.inner32 = link->inner_product(inner, s.kp, reinterpret_cast<Stream>(s.stream));
  } else if (inner.backend == InnerBackend::bcsr24) {
    PlanOptions options;
    options.output = ElementType::f32;
    options.input = ElementType::f32;
    options.allow_unaligned_b = false;  // every fp32 block starts 256-byte aligned with rows of kp (a multiple of 8)
    s.plan = std::make_unique<SpmmPlan>(inner.op->make_plan(s.kp, KernelKind::automatic, options));
  } else if (inner.backend == InnerBackend::cusparse_csr_f32) {
    s.inner32 = foreign({inner.csr.rows > 0 ? &inner.csr : &a, true, s.kp, s.work[0].get(), s.work[1].get(),
                         reinterpret_cast<Stream>(s.stream)});
  }
  s.small = DeviceArray<double>(std::size_t(s.layout.total));
  CUDA_OK(cudaMemset(s.small.get(), 0, s.small.bytes()));
  s.reduction = DeviceArray<double>(std::size_t(block_gpu::reduction_workspace(k)));
  s.small_host = PinnedArray<double>(std::size_t(s.layout.total));
  s.staging = PinnedArray<double>(std::size_t(s.layout.total));
  CUDA_OK(cudaDeviceSynchronize());
}

GpuBlockSpace::~GpuBlockSpace() = default;

int GpuBlockSpace::k() const { return impl_->k; }
std::int32_t GpuBlockSpace::rows() const { return impl_->n; }
const small::SmallLayout& GpuBlockSpace::layout() const { return impl_->layout; }
SpaceCounters GpuBlockSpace::counters() const { return impl_->counters; }

void GpuBlockSpace::set_slot(int slot, const std::vector<double>& values) {
  Impl& s = *impl_;
  if (values.size() != std::size_t(s.n) * s.k) throw InvalidArgument("GpuBlockSpace::set_slot: expected n x k values");
  CUDA_OK(cudaMemcpyAsync(s.slot(slot), values.data(), values.size() * sizeof(double), cudaMemcpyHostToDevice,
                          s.stream));
  s.synchronize();
}

void GpuBlockSpace::load_slot(int slot, const double* source, int ld) {
  Impl& s = *impl_;
  const std::size_t width = std::size_t(s.k) * sizeof(double);
  CUDA_OK(cudaMemcpy2DAsync(s.slot(slot), width, source, std::size_t(ld) * sizeof(double), width, std::size_t(s.n),
                            cudaMemcpyDeviceToDevice, s.stream));
}

void GpuBlockSpace::load_slot(int slot, const float* source, int ld) {
  Impl& s = *impl_;
  block_gpu::widen(source, ld, s.slot(slot), s.n, s.k, s.stream);
}

void GpuBlockSpace::store_slot(int slot, double* destination, int ld) {
  Impl& s = *impl_;
  const std::size_t width = std::size_t(s.k) * sizeof(double);
  CUDA_OK(cudaMemcpy2DAsync(destination, std::size_t(ld) * sizeof(double), s.slot(slot), width, width,
                            std::size_t(s.n), cudaMemcpyDeviceToDevice, s.stream));
}

void GpuBlockSpace::store_slot(int slot, float* destination, int ld) {
  Impl& s = *impl_;
  block_gpu::narrow(s.slot(slot), destination, ld, s.n, s.k, s.stream);
}

void GpuBlockSpace::wait_for(Stream caller) {
  Impl& s = *impl_;
  CUDA_OK(cudaEventRecord(s.order, reinterpret_cast<cudaStream_t>(caller)));
  CUDA_OK(cudaStreamWaitEvent(s.stream, s.order, 0));
}

void GpuBlockSpace::release_to(Stream caller) {
  Impl& s = *impl_;
  CUDA_OK(cudaEventRecord(s.order, s.stream));
  CUDA_OK(cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(caller), s.order, 0));
}

std::vector<double> GpuBlockSpace::slot(int slot) {
  Impl& s = *impl_;
  std::vector<double> out(std::size_t(s.n) * s.k);
  CUDA_OK(cudaMemcpyAsync(out.data(), s.slot(slot), out.size() * sizeof(double), cudaMemcpyDeviceToHost, s.stream));
  s.synchronize();
  ++s.counters.synchronizations;
  return out;
}

void GpuBlockSpace::zero_slot(int slot) {
  Impl& s = *impl_;
  s.timed(vector_work, [&] {
    CUDA_OK(cudaMemsetAsync(s.slot(slot), 0, std::size_t(s.n) * s.k * sizeof(double), s.stream));
  });
}

void GpuBlockSpace::multiply(int q, int p) {
  Impl& s = *impl_;
  double* pp = s.slot(p);
  double* qq = s.slot(q);
  s.outer_multiply(pp, nullptr, qq, 1.0, 0.0);
}

void GpuBlockSpace::set_mass(const CsrMatrix* m) {
  Impl& s = *impl_;
  if (m && (m->rows != s.n || m->cols != s.n))
    throw InvalidArgument("GpuBlockSpace::set_mass: M is " + std::to_string(m->rows) + " x " +
                          std::to_string(m->cols) + ", the space has " + std::to_string(s.n) + " rows");
  CUDA_OK(cudaStreamSynchronize(s.stream));  // no enqueued product may still read the old copy
  s.mass64.reset();
  if (m) s.mass64 = std::make_unique<DeviceCsrArrays>(*m, false);
}

void GpuBlockSpace::multiply_mass(int q, int p) {
  Impl& s = *impl_;
  if (!s.mass64) throw InvalidArgument("GpuBlockSpace::multiply_mass: no mass matrix was set");
  const double* pp = s.slot(p);
  double* qq = s.slot(q);
  // Always the space's CSR kernel (also when A's products are cuSPARSE's: M only exists for the eigensolver).
  s.timed(outer_product, [&] {
    block_gpu::csr_product({s.mass64->row_ptr.get(), s.mass64->col_idx.get(), s.mass64->values64.get(), s.n}, pp,
                           nullptr, qq, s.k, 1.0, 0.0, nullptr, s.reduction.get(), s.stream);
  });
  ++s.counters.outer_products;
}

void GpuBlockSpace::residual(int r, int b, int x) {
  Impl& s = *impl_;
  double* rr = s.slot(r);
  const double* bb = s.slot(b);
  const double* xx = s.slot(x);
  s.outer_multiply(xx, bb, rr, -1.0, 1.0, s.layout.column[small::r_norm2]);
}

void GpuBlockSpace::column_norms(int slot, std::int64_t offset) { column_dots(slot, slot, offset); }

void GpuBlockSpace::column_dots(int x, int y, std::int64_t offset) {
  Impl& s = *impl_;
  const double* xx = s.slot(x);
  const double* yy = s.slot(y);
  s.timed(block_work,
          [&] { block_gpu::column_dots(xx, yy, s.n, s.k, s.k, s.reduction.get(), s.at(offset), s.stream); });
  s.sum_over_ranks(offset, s.k);
}

void GpuBlockSpace::gram(int left, const std::vector<GramTarget>& rights) {
  Impl& s = *impl_;
  const double* l = s.slot(left);
  for (std::size_t first = 0; first < rights.size(); first += block_gpu::kGramRights) {
    const int count = static_cast<int>(std::min<std::size_t>(block_gpu::kGramRights, rights.size() - first));
    const double* blocks[block_gpu::kGramRights] = {};
    double* outs[block_gpu::kGramRights] = {};
    for (int i = 0; i < count; ++i) {
      blocks[i] = s.slot(rights[first + std::size_t(i)].slot);
      outs[i] = s.at(rights[first + std::size_t(i)].offset);
    }
    s.timed(block_work, [&] { block_gpu::gram(l, blocks, outs, count, s.n, s.k, s.reduction.get(), s.stream); });
  }
  // Over the ranks, one sum per run of adjacent targets (P^T Q and P^T R, the ring's Z^T Q_t lie side by side).
  if (!s.link) return;
  const std::int64_t kk = std::int64_t(s.k) * s.k;
  std::vector<std::int64_t> offsets;
  for (const GramTarget& target : rights) offsets.push_back(target.offset);
  std::sort(offsets.begin(), offsets.end());
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  for (std::size_t first = 0; first < offsets.size();) {
    std::size_t last = first + 1;
    while (last < offsets.size() && offsets[last] == offsets[last - 1] + kk) ++last;
    s.sum_over_ranks(offsets[first], std::int64_t(last - first) * kk);
    first = last;
  }
}

void GpuBlockSpace::combine(int dst, bool accumulate, const std::vector<CombineTerm>& terms) {
  Impl& s = *impl_;
  if (terms.size() > std::size_t(block_gpu::kMaxTerms)) throw InvalidArgument("GpuBlockSpace::combine: too many terms");
  block_gpu::CombineArgs args;
  for (const CombineTerm& t : terms) {
    if (t.slot == dst) throw InvalidArgument("GpuBlockSpace::combine: a term reads the destination");
    args.source[args.count] = s.slot(t.slot);
    args.matrix[args.count] = s.at(t.matrix);
    args.factor[args.count] = t.factor;
    ++args.count;
  }
  double* d = s.slot(dst);
  s.timed(block_work, [&] { block_gpu::combine(d, args, accumulate, s.n, s.k, s.stream); });
}

void GpuBlockSpace::small_step(const small::SmallStep& step) { impl_->step(step); }

void GpuBlockSpace::read_small(std::int64_t offset, std::int64_t count, double* out) {
  Impl& s = *impl_;
  CUDA_OK(cudaMemcpyAsync(s.small_host.get(), s.at(offset), std::size_t(count) * sizeof(double),
                          cudaMemcpyDeviceToHost, s.stream));
  s.synchronize();
  ++s.counters.synchronizations;
  std::copy(s.small_host.get(), s.small_host.get() + count, out);
}

void GpuBlockSpace::write_small(std::int64_t offset, const std::vector<double>& values) {
  Impl& s = *impl_;
  // The staging buffer is reused: wait until the previous copy out of it has finished (almost never waits).
  CUDA_OK(cudaEventSynchronize(s.staging_done));
  std::copy(values.begin(), values.end(), s.staging.get());
  CUDA_OK(cudaMemcpyAsync(s.at(offset), s.staging.get(), values.size() * sizeof(double), cudaMemcpyHostToDevice,
                          s.stream));
  CUDA_OK(cudaEventRecord(s.staging_done, s.stream));
}

void GpuBlockSpace::precondition_chebyshev(int z, int r, const ChebyshevPolynomial& p) {
  Impl& s = *impl_;
  const double* scale = s.at(s.layout.column[small::scale]);
  float* f = s.work[0].get();
  const double* rr = s.slot(r);
  double* zz = s.slot(z);
  s.timed(vector_work, [&] { block_gpu::chebyshev_start(rr, s.scale_rows(), scale, f, s.n, s.k, s.kp, s.stream); });
  // The iterates z_1 = f / theta, z_2, ...: z_{j+2} = alpha_j A z_{j+1} + (1 - omega_j) z_j + omega_j z_{j+1}
  // + (omega_j / theta) f with alpha_j = -omega_j / theta and z_0 = 0. z_1 is never stored: the first product runs on
  // f itself, z_2 = -(omega_0 / theta^2) A f + (2 omega_0 / theta) f, and the second folds (1 - omega_1) z_1 into its
  // f term, z_3 = alpha_1 A z_2 + omega_1 z_2 + (1 / theta) f; from then on z_j is overwritten by z_{j+2} in place.
  float* current = f;                  // z_{j+1} (f standing for z_1)
  float* previous = s.work[2].get();  // z_j (unused before z_2 exists)
  const std::int64_t count = std::int64_t(s.n) * s.kp;
  for (std::size_t j = 0; j < p.omega.size(); ++j) {
    const double omega = p.omega[j];
    double alpha = -omega / p.theta, beta = 1.0 - omega, c_current = omega, c_f = omega / p.theta;
    if (j == 0) {
      alpha /= p.theta;
      beta = 0.0;
      c_current = 0.0;
      c_f = 2.0 * omega / p.theta;
    } else if (j == 1) {
      beta = 0.0;
      c_f = 1.0 / p.theta;
    }
    float* output = j == 0 ? s.work[1].get() : previous;
    if (s.fused_addends()) {
      // bcsr24 adds the terms in the product's epilogue (an addend may be B itself, as f is at j = 0).
      OutputAddend terms[2];
      int count_terms = 0;
      if (c_current != 0.0) terms[count_terms++] = {current, s.kp, static_cast<float>(c_current)};
      terms[count_terms++] = {f, s.kp, static_cast<float>(c_f)};
      s.inner_multiply(current, output, static_cast<float>(alpha), static_cast<float>(beta), terms, count_terms);
    } else {
      // cuSPARSE's product has no such terms: a second pass adds them.
      s.inner_multiply(current, output, static_cast<float>(alpha), static_cast<float>(beta));
      s.timed(vector_work, [&] {
        block_gpu::chebyshev_update(output, c_current != 0.0 ? current : nullptr, f, c_current, c_f, count, s.stream);
      });
    }
    if (j > 0) previous = current;
    current = output;
  }
  // Without products (degree 1) the preconditioner is z_1 = f / theta.
  const double factor = p.omega.empty() ? 1.0 / p.theta : 1.0;
  s.timed(vector_work, [&] {
    block_gpu::chebyshev_finish(current, factor, s.scale_rows(), scale, zz, s.n, s.k, s.kp, s.stream);
  });
}

void GpuBlockSpace::precondition_jacobi(int z, int r) {
  Impl& s = *impl_;
  const double* rr = s.slot(r);
  double* zz = s.slot(z);
  s.timed(vector_work, [&] {
    block_gpu::jacobi(rr, s.inverse_diagonal.get(), s.at(s.layout.column[small::active]), zz, s.n, s.k, s.stream);
  });
}

void GpuBlockSpace::precondition_identity(int z, int r) {
  Impl& s = *impl_;
  const double* rr = s.slot(r);
  double* zz = s.slot(z);
  s.timed(vector_work, [&] {
    block_gpu::jacobi(rr, nullptr, s.at(s.layout.column[small::active]), zz, s.n, s.k, s.stream);
  });
}

void GpuBlockSpace::lanczos(int steps, std::uint64_t seed) {
  Impl& s = *impl_;
  if (steps > s.layout.lanczos_steps) throw InvalidArgument("GpuBlockSpace::lanczos: more steps than the layout holds");
  float* previous = s.work[0].get();
  float* current = s.work[1].get();
  float* next = s.work[2].get();
  const double* inv_beta = s.at(s.layout.column[small::lanczos_inv_beta]);
  s.timed(vector_work, [&] {
    CUDA_OK(cudaMemsetAsync(previous, 0, s.work[0].bytes(), s.stream));
    block_gpu::lanczos_fill(current, s.caller_rows.get(), s.n, s.k, s.kp, seed, s.stream);
  });
  s.float_dots(current, current);
  small::SmallStep step;
  step.kind = small::StepKind::lanczos_start;
  s.step(step);
  s.timed(vector_work, [&] { block_gpu::lanczos_scale(current, inv_beta, s.n, s.k, s.kp, s.stream); });
  for (int j = 0; j < steps; ++j) {
    s.inner_multiply(current, next, 1.0f, 0.0f);
    s.float_dots(current, next);
    step.kind = small::StepKind::lanczos_alpha;
    step.slot = j;
    s.step(step);
    const double* alpha = s.at(s.layout.lanczos_alpha + std::int64_t(j) * s.k);
    const double* beta = j > 0 ? s.at(s.layout.lanczos_beta + std::int64_t(j - 1) * s.k) : nullptr;
    s.timed(vector_work, [&] {
      block_gpu::lanczos_orthogonalize(next, current, previous, alpha, beta, s.at(s.layout.column[small::dots]), s.n,
                                       s.k, s.kp, s.reduction.get(), s.stream);
    });
    s.sum_over_ranks(s.layout.column[small::dots], s.k);
    step.kind = small::StepKind::lanczos_beta;
    s.step(step);
    s.timed(vector_work, [&] { block_gpu::lanczos_scale(next, inv_beta, s.n, s.k, s.kp, s.stream); });
    float* spare = previous;
    previous = current;
    current = next;
    next = spare;
  }
}

void GpuBlockSpace::pcg_direction(int p, int r, bool first) {
  Impl& s = *impl_;
  double* pp = s.slot(p);
  const double* rr = s.slot(r);
  s.timed(vector_work, [&] {
    block_gpu::pcg_direction(pp, rr, s.inverse_diagonal.get(), s.at(s.layout.column[small::beta]), first,
                             s.at(s.layout.column[small::rho]), s.n, s.k, s.reduction.get(), s.stream);
  });
  if (first) s.sum_over_ranks(s.layout.column[small::rho], s.k);
}

void GpuBlockSpace::pcg_update(int x, int p, int r, int q) {
  Impl& s = *impl_;
  double* xx = s.slot(x);
  const double* pp = s.slot(p);
  double* rr = s.slot(r);
  const double* qq = s.slot(q);
  s.timed(vector_work, [&] {
    block_gpu::pcg_update(xx, pp, rr, qq, s.at(s.layout.column[small::alpha]), s.inverse_diagonal.get(),
                          s.at(s.layout.column[small::rho_next]), s.at(s.layout.column[small::r_norm2]), s.n, s.k,
                          s.reduction.get(), s.stream);
  });
  s.sum_over_ranks(s.layout.column[small::rho_next], s.k);
  s.sum_over_ranks(s.layout.column[small::r_norm2], s.k);
}

void GpuBlockSpace::synchronize() { impl_->synchronize(); }

BlockTimings GpuBlockSpace::timings() const {
  const EventTimer& timer = impl_->timer;
  return {timer.ms(inner_product), timer.ms(outer_product), timer.ms(vector_work), timer.ms(block_work)};
}

void GpuBlockSpace::reset_timings() {
  impl_->synchronize();
  impl_->timer.reset();
}

std::int64_t GpuBlockSpace::device_bytes() const {
  const Impl& s = *impl_;
  std::size_t bytes = s.slots.bytes() + (s.a64 ? s.a64->bytes() : 0) + (s.mass64 ? s.mass64->bytes() : 0) +
                      s.caller_rows.bytes() +
                      (s.outer ? std::size_t(s.outer->bytes()) : 0) +
                      s.inverse_diagonal.bytes() +
                      s.row_scale.bytes() + s.small.bytes() + s.reduction.bytes();
  for (const auto& w : s.work) bytes += w.bytes();
  if (s.plan) bytes += std::size_t(s.plan->workspace_bytes());  // the operator's own tile lists are not counted
  if (s.inner32) bytes += std::size_t(s.inner32->bytes());
  return static_cast<std::int64_t>(bytes);
}

std::string GpuBlockSpace::plan_summary() const {
  const Impl& s = *impl_;
  if (!s.plan) return "";
  const PlanReport& r = s.plan->report();
  char text[512];
  std::snprintf(text, sizeof text, "n = %d: %d bands on tiles, %d on the CSR kernel; predicted %.1f us; %s", r.n,
                r.tile_bands, r.csr_bands, r.predicted_us, r.reason.c_str());
  return text;
}

}  // namespace bcsr24::solver
