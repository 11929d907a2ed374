// GPU solver spaces: every block allocated once at construction; each operation enqueues on one stream;
// host synchronisation only where the algorithm needs numbers (dot products, Gram matrices).
#include "gpu_system.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>

#if BCSR24_HAS_NCCL
#include <nccl.h>

#include "bcsr24/distributed_operator.hpp"
#endif

#include "bcsr24/device.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24/error.hpp"
#include "block_kernels.hpp"
#include "cusparse_support.hpp"
#include "gpu_support.hpp"

namespace bcsr24::solver {

namespace {

using namespace device;  // gpu_support.hpp

void cublas_check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw CusparseError(std::string(cublasGetStatusString(status)) + " in " + device::where(call, file, line));
}
#if BCSR24_HAS_NCCL
void nccl_check(ncclResult_t status, const char* call, const char* file, int line) {
  if (status != ncclSuccess)
    throw NcclError(std::string(ncclGetErrorString(status)) + " in " + device::where(call, file, line));
}
#define NCCL_OK(call) nccl_check((call), #call, __FILE__, __LINE__)
#endif
#define CUBLAS_OK(call) cublas_check((call), #call, __FILE__, __LINE__)

/// What the legacy space times with CUDA events.
enum TimerCategory { inner_spmm, outer_spmm, kTimerCategories };

int round_up_8(int k) { return (k + 7) / 8 * 8; }

/// y = alpha * A x + beta * y over this rank's rows with cuSPARSE. On one GPU A is the whole matrix. On several,
/// A = [local | halo]: the local part multiplies x (the rows this rank owns) while the halo rows of x travel from
/// their owners on the exchange's stream, then the halo part adds its share.
class RowProduct {
 public:
  /// @param halo, exchange null on one GPU; on several, this rank's halo part and the exchange pattern of its
  ///        columns (a rank may send rows although its own halo part is empty, so the exchange runs regardless)
  RowProduct(cusparseHandle_t handle, const CsrMatrix& local, const CsrMatrix* halo, const HaloExchange* exchange,
             bool fp32, int n, std::int64_t ld, const void* any_x, void* any_y)
      : type_(fp32 ? CUDA_R_32F : CUDA_R_64F),
        local_(local, fp32),
        local_product_(handle, local_, local.rows, local.cols, n, ld, ld, type_, any_x, any_y),
        ld_(ld) {
    if (!exchange) return;
#if BCSR24_HAS_NCCL
    if (exchange->moves_data())
      exchange_ = std::make_unique<HaloExchangePlan>(exchange->make_plan(n, fp32 ? HaloElement::f32 : HaloElement::f64));
    if (halo && halo->nnz() > 0) {
      halo_ = std::make_unique<DeviceCsr>(*halo, fp32);
      halo_product_ = std::make_unique<CusparseProduct>(handle, *halo_, halo->rows, halo->cols, n, exchange_->ld(),
                                                        ld, type_, exchange_->halo(), any_y);
    }
#else
    throw NotSupported("a distributed solver space needs a build with NCCL");
#endif
  }

  void run(const void* x, void* y, double alpha, double beta, cudaStream_t stream) {
#if BCSR24_HAS_NCCL
    if (exchange_) exchange_->start(x, ld_, stream);
#endif
    local_product_.run(x, y, alpha, beta);
#if BCSR24_HAS_NCCL
    if (exchange_) exchange_->wait(stream);
    if (halo_product_) halo_product_->run(exchange_->halo(), y, alpha, 1.0);
#else
    (void)stream;
#endif
  }

  std::size_t bytes() const {
    std::size_t b = local_.bytes() + local_product_.bytes();
    if (halo_) b += halo_->bytes() + halo_product_->bytes();
#if BCSR24_HAS_NCCL
    if (exchange_) b += std::size_t(exchange_->device_bytes());
#endif
    return b;
  }

 private:
  cudaDataType type_;
  DeviceCsr local_;
  CusparseProduct local_product_;
  std::int64_t ld_;
  std::unique_ptr<DeviceCsr> halo_;
  std::unique_ptr<CusparseProduct> halo_product_;
#if BCSR24_HAS_NCCL
  std::unique_ptr<HaloExchangePlan> exchange_;
#endif
};

}  // namespace

struct GpuSystem::Impl {
  class Inner;

  std::int32_t n = 0;
  int k = 0;
  int inner_k = 0;  // k rounded up to 8: 16-byte aligned P rows for bcsr24 and 32-byte aligned slots
  int slot_count = 0;
  const InnerMatrix* inner_matrix = nullptr;

  cudaStream_t stream = nullptr;
  cusparseHandle_t sparse = nullptr;
  cublasHandle_t blas = nullptr;

  // Outer fp64 side.
  std::unique_ptr<RowProduct> outer_product;
  DeviceArray<double> blocks;  // slot_count blocks of n x k
  DeviceArray<double> inverse_diagonal, inner_row_scale;
  DeviceArray<double> coef, alpha, column_scale, column_unscale, column_mask;
  DeviceArray<double> dots_partial, dots_out;
  PinnedArray<double> dots_host;

  // Inner fp32 side: two [X P R Q] blocks of n x 4 inner_k.
  DeviceArray<float> inner_blocks[2];
  int current = 0;
  DeviceArray<float> gram_device, update_device;
  PinnedArray<float> gram_host, update_host;
  std::unique_ptr<SpmmPlan> plan;                 // bcsr24 on one GPU
  std::unique_ptr<RowProduct> inner_product32;    // cuSPARSE fp32

  // Several GPUs: this rank's communicator, the exchange pattern of its CSR parts, and the
  // distributed bcsr24 plan. Dot products and Gram matrices are summed over the ranks in place on the device.
  const RankShare* share = nullptr;
#if BCSR24_HAS_NCCL
  std::unique_ptr<HaloExchange> exchange;  // of A's columns: the outer fp64 and the inner fp32 CSR products
  std::unique_ptr<DistributedPlan> distributed_plan;
#endif
  /// In place on the device: the sum over the ranks (nothing on one GPU).
  template <typename T>
  void sum_over_ranks(T* values, std::size_t count);
  std::unique_ptr<Inner> inner;

  EventTimer timer{kTimerCategories};
  std::int64_t inner_products = 0, outer_products = 0;

  double* slot(int i) const { return blocks.get() + std::size_t(i) * std::size_t(n) * std::size_t(k); }
  float* current_block() const { return inner_blocks[current].get(); }
  float* next_block() const { return inner_blocks[1 - current].get(); }
  std::int64_t inner_ld() const { return 4 * std::int64_t(inner_k); }

  void check_slot(int i) const {
    if (i < 0 || i >= slot_count) throw InvalidArgument("GpuSystem: slot " + std::to_string(i) + " out of range");
  }
  void upload(const DeviceArray<double>& dst, const std::vector<double>& src) const {
    // From pageable memory: the call returns once the source is staged, so `src` may die right after.
    if (!src.empty())
      CUDA_OK(cudaMemcpyAsync(dst.get(), src.data(), src.size() * sizeof(double), cudaMemcpyHostToDevice, stream));
  }
  void synchronize() {
    CUDA_OK(cudaStreamSynchronize(stream));
    timer.collect();
  }
  void outer_multiply(const double* p, double* q, double alpha_value, double beta_value) {
    cudaEvent_t start = timer.record(stream);
    outer_product->run(p, q, alpha_value, beta_value, stream);
    timer.interval(outer_spmm, start, timer.record(stream));
    ++outer_products;
  }

  ~Impl() {
    if (stream) cudaStreamSynchronize(stream);
    inner.reset();
    inner_product32.reset();
    outer_product.reset();
    plan.reset();
#if BCSR24_HAS_NCCL
    distributed_plan.reset();
#endif
    if (blas) cublasDestroy(blas);
    if (sparse) cusparseDestroy(sparse);
    if (stream) cudaStreamDestroy(stream);
  }
};

/// The inner block space on the device: Gram matrices and block updates with cuBLAS (fp32), products with
/// the chosen backend.
class GpuSystem::Impl::Inner final : public InnerBlockSpace {
 public:
  explicit Inner(Impl& s) : s_(s) {}
  int k() const override { return s_.inner_k; }

  void gram(Eigen::MatrixXd& g) override {
    const int w = 3 * s_.inner_k;
    const float one = 1.0f, zero = 0.0f;
    // Row-major n x 4k is column-major 4k x n: the Gram of columns [P R Q] is B B^T of its rows k..4k-1.
    const float* prq = s_.current_block() + s_.inner_k;
    CUBLAS_OK(cublasSgemm(s_.blas, CUBLAS_OP_N, CUBLAS_OP_T, w, w, s_.n, &one, prq, int(s_.inner_ld()), prq,
                          int(s_.inner_ld()), &zero, s_.gram_device.get(), w));
    s_.sum_over_ranks(s_.gram_device.get(), std::size_t(w) * w);
    CUDA_OK(cudaMemcpyAsync(s_.gram_host.get(), s_.gram_device.get(), std::size_t(w) * w * sizeof(float),
                            cudaMemcpyDeviceToHost, s_.stream));
    s_.synchronize();
    g.resize(w, w);
    for (int j = 0; j < w; ++j)
      for (int i = 0; i < w; ++i) g(i, j) = s_.gram_host[std::size_t(j) * w + i];
  }

  void update(const Eigen::MatrixXd& m) override {
    const int rows = 4 * s_.inner_k, cols = 3 * s_.inner_k;
    // next^T (3k x n) = m^T (3k x 4k) current^T (4k x n); m^T column-major = m row-major.
    for (int b = 0; b < rows; ++b)
      for (int a = 0; a < cols; ++a) s_.update_host[std::size_t(b) * cols + a] = static_cast<float>(m(b, a));
    CUDA_OK(cudaMemcpyAsync(s_.update_device.get(), s_.update_host.get(), std::size_t(rows) * cols * sizeof(float),
                            cudaMemcpyHostToDevice, s_.stream));
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_OK(cublasSgemm(s_.blas, CUBLAS_OP_N, CUBLAS_OP_N, cols, s_.n, rows, &one, s_.update_device.get(), cols,
                          s_.current_block(), int(s_.inner_ld()), &zero, s_.next_block(), int(s_.inner_ld())));
    s_.current = 1 - s_.current;
  }

  void product() override {
    float* block = s_.current_block();
    const float* p = block + s_.inner_k;
    float* q = block + 3 * s_.inner_k;
    cudaEvent_t start = s_.timer.record(s_.stream);
    // P goes to bcsr24 as it is, fp32: the kernels convert it while staging, with a scale per tile and column.
    if (s_.plan) {
      s_.plan->run(p, s_.inner_ld(), q, s_.inner_ld(), 1.0f, 0.0f, s_.stream);
#if BCSR24_HAS_NCCL
    } else if (s_.distributed_plan) {
      s_.distributed_plan->run(p, s_.inner_ld(), q, s_.inner_ld(), 1.0f, 0.0f, s_.stream);
#endif
    } else {
      s_.inner_product32->run(p, q, 1.0, 0.0, s_.stream);
    }
    s_.timer.interval(inner_spmm, start, s_.timer.record(s_.stream));
    ++s_.inner_products;
  }

 private:
  Impl& s_;
};

template <typename T>
void GpuSystem::Impl::sum_over_ranks(T* values, std::size_t count) {
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, float>, "fp64 dots or fp32 Gram matrices");
#if BCSR24_HAS_NCCL
  // One rank holds the whole sum already.
  if (share && share->comm.size > 1)
    NCCL_OK(ncclAllReduce(values, values, count, std::is_same_v<T, double> ? ncclDouble : ncclFloat, ncclSum,
                          share->comm.comm, stream));
#else
  (void)values, (void)count;
#endif
}

GpuSystem::GpuSystem(const CsrMatrix& a, const InnerMatrix& inner, int k, int slots)
    : impl_(std::make_unique<Impl>()) {
  if (a.rows != a.cols || a.rows < 1) throw InvalidArgument("GpuSystem: the matrix must be square and non-empty");
  if (inner.backend == InnerBackend::bcsr24 && !inner.op) throw InvalidArgument("GpuSystem: bcsr24 backend without operator");
  init(a, nullptr, inverse_diagonal(a), inner, k, slots);
}

GpuSystem::GpuSystem(const CsrMatrix& a_rows, const InnerMatrix& inner, int k, int slots, const RankShare& share)
    : impl_(std::make_unique<Impl>()) {
#if BCSR24_HAS_NCCL
  const int rank = share.comm.rank;
  check_communicator(share.comm, "GpuSystem");
  validate_partition(share.rows, share.rows.size(), "row partition");
  if (share.rows.ranks() != share.comm.size)
    throw InvalidArgument("GpuSystem: the row partition has " + std::to_string(share.rows.ranks()) +
                          " ranks, the communicator " + std::to_string(share.comm.size));
  // Checked for every rank (all hold the same partition), so that all ranks refuse together instead of one
  // leaving the others waiting in the collectives below.
  for (int r = 0; r < share.comm.size; ++r)
    if (share.rows.count(r) < 1)
      throw InvalidArgument("GpuSystem: rank " + std::to_string(r) + " would own no rows; use fewer GPUs");
  if (inner.backend == InnerBackend::bcsr24 && !inner.distributed)
    throw InvalidArgument("GpuSystem: bcsr24 backend on several GPUs without a distributed operator");
  Impl& s = *impl_;
  s.share = &share;
  // The same partition for the rows and the columns (= the rows of every vector) of the square A.
  const RankBlock a_block = split_rank_rows(a_rows, rank, share.rows, share.rows);
  // The inner matrix is A or D A D: the same columns, so A's exchange pattern serves its fp32 products too.
  s.exchange = std::make_unique<HaloExchange>(a_block, share.rows, share.comm);
  std::unique_ptr<RankBlock> inner_block;
  if (inner.backend == InnerBackend::cusparse_csr_f32) {
    inner_block = std::make_unique<RankBlock>(split_rank_rows(inner.csr, rank, share.rows, share.rows));
    if (inner_block->halo_global != a_block.halo_global)
      throw InvalidArgument("GpuSystem: the inner matrix's rows of rank " + std::to_string(rank) +
                            " reach other columns than A's");
  }
  init(a_block.local, &a_block.halo, inverse_diagonal(a_rows, share.rows.begin(rank)), inner, k, slots,
       inner_block ? &inner_block->local : nullptr, inner_block ? &inner_block->halo : nullptr);
#else
  (void)a_rows, (void)inner, (void)k, (void)slots, (void)share;
  throw NotSupported("this bcsr24_solve was built without NCCL: no distributed solve");
#endif
}

void GpuSystem::init(const CsrMatrix& a_local, const CsrMatrix* a_halo, const std::vector<double>& inverse,
                     const InnerMatrix& inner, int k, int slots, const CsrMatrix* inner_local,
                     const CsrMatrix* inner_halo) {
  const DeviceInfo device = query_device();
  if (!device.available) throw NotSupported("the GPU solver needs a CUDA device: " + device.reason);
  if (k < 1 || k > 4096) throw InvalidArgument("GpuSystem: k must be in [1, 4096]");
  Impl& s = *impl_;
  s.n = a_local.rows;
  s.k = k;
  s.inner_k = round_up_8(k);
  s.slot_count = slots;
  s.inner_matrix = &inner;
  if (!inner.row_scale.empty() && inner.row_scale.size() != std::size_t(s.n))
    throw InvalidArgument("GpuSystem: the inner row scale has " + std::to_string(inner.row_scale.size()) +
                          " entries for " + std::to_string(s.n) + " rows");
  CUDA_OK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  CUSPARSE_OK(cusparseCreate(&s.sparse));
  CUSPARSE_OK(cusparseSetStream(s.sparse, s.stream));
  CUBLAS_OK(cublasCreate(&s.blas));
  CUBLAS_OK(cublasSetStream(s.blas, s.stream));
  // Plain fp32 arithmetic in the Gram and update products (no TF32 shortcuts).
  CUBLAS_OK(cublasSetMathMode(s.blas, CUBLAS_PEDANTIC_MATH));

  const std::size_t block = std::size_t(s.n) * std::size_t(k);
  s.blocks = DeviceArray<double>(block * std::size_t(slots));
  CUDA_OK(cudaMemset(s.blocks.get(), 0, s.blocks.bytes()));
  const HaloExchange* exchange = nullptr;
#if BCSR24_HAS_NCCL
  exchange = s.exchange.get();
#endif
  s.outer_product = std::make_unique<RowProduct>(s.sparse, a_local, a_halo, exchange, false, k, k, s.slot(0),
                                                 s.slot(1));
  s.inverse_diagonal = DeviceArray<double>(inverse.data(), inverse.size());
  if (!inner.row_scale.empty()) s.inner_row_scale = DeviceArray<double>(inner.row_scale.data(), inner.row_scale.size());
  s.coef = DeviceArray<double>(std::size_t(gpu::kMaxCombineTerms) * k);
  s.alpha = DeviceArray<double>(std::size_t(k));
  s.column_scale = DeviceArray<double>(std::size_t(k));
  s.column_unscale = DeviceArray<double>(std::size_t(k));
  s.column_mask = DeviceArray<double>(std::size_t(k));
  s.dots_partial = DeviceArray<double>(std::size_t(gpu::kDotBlocks) * gpu::kMaxDotPairs * k);
  s.dots_out = DeviceArray<double>(std::size_t(gpu::kMaxDotPairs) * k);
  s.dots_host = PinnedArray<double>(std::size_t(gpu::kMaxDotPairs) * k);

  const std::size_t inner_block = std::size_t(s.n) * std::size_t(s.inner_ld());
  for (auto& b : s.inner_blocks) {
    b = DeviceArray<float>(inner_block);
    CUDA_OK(cudaMemset(b.get(), 0, b.bytes()));
  }
  const std::size_t w = 3 * std::size_t(s.inner_k);
  s.gram_device = DeviceArray<float>(w * w);
  s.gram_host = PinnedArray<float>(w * w);
  s.update_device = DeviceArray<float>(4 * std::size_t(s.inner_k) * w);
  s.update_host = PinnedArray<float>(4 * std::size_t(s.inner_k) * w);
  if (inner.backend == InnerBackend::bcsr24) {
    PlanOptions options;
    options.output = OutputType::f32;
    options.input = InputType::f32;
    options.allow_unaligned_b = false;  // P rows are 4 * inner_k floats apart, P starts inner_k (a multiple of 8) in
#if BCSR24_HAS_NCCL
    if (s.share)
      s.distributed_plan = std::make_unique<DistributedPlan>(inner.distributed->make_plan(k, options));
    else
#endif
      s.plan = std::make_unique<SpmmPlan>(inner.op->make_plan(k, KernelKind::automatic, options));
  } else {
    float* any = s.inner_blocks[0].get();
    s.inner_product32 = std::make_unique<RowProduct>(s.sparse, inner_local ? *inner_local : inner.csr, inner_halo,
                                                     exchange, true, k, s.inner_ld(), any + s.inner_k,
                                                     any + 3 * s.inner_k);
  }
  s.inner = std::make_unique<Impl::Inner>(s);
  CUDA_OK(cudaDeviceSynchronize());
}

GpuSystem::~GpuSystem() = default;

int GpuSystem::k() const { return impl_->k; }

void GpuSystem::set_slot(int slot, const std::vector<double>& values) {
  Impl& s = *impl_;
  s.check_slot(slot);
  if (values.size() != std::size_t(s.n) * s.k) throw InvalidArgument("GpuSystem::set_slot: expected n x k values");
  CUDA_OK(cudaMemcpyAsync(s.slot(slot), values.data(), values.size() * sizeof(double), cudaMemcpyHostToDevice, s.stream));
  s.synchronize();
}

std::vector<double> GpuSystem::slot(int slot) {
  Impl& s = *impl_;
  s.check_slot(slot);
  std::vector<double> out(std::size_t(s.n) * s.k);
  CUDA_OK(cudaMemcpyAsync(out.data(), s.slot(slot), out.size() * sizeof(double), cudaMemcpyDeviceToHost, s.stream));
  s.synchronize();
  return out;
}

void GpuSystem::synchronize() { impl_->synchronize(); }

GpuTimings GpuSystem::timings() const {
  const Impl& s = *impl_;
  return {s.timer.ms(inner_spmm), s.timer.ms(outer_spmm), s.inner_products, s.outer_products};
}

std::int64_t GpuSystem::device_bytes() const {
  const Impl& s = *impl_;
  std::size_t bytes = s.outer_product->bytes() + s.blocks.bytes() + s.inverse_diagonal.bytes() +
                      s.inner_row_scale.bytes() + s.dots_partial.bytes() + s.inner_blocks[0].bytes() +
                      s.inner_blocks[1].bytes();
  if (s.inner_product32) bytes += s.inner_product32->bytes();
  if (s.plan) bytes += std::size_t(s.inner_matrix->op->device_bytes() + s.plan->workspace_bytes());
#if BCSR24_HAS_NCCL
  if (s.exchange) bytes += std::size_t(s.exchange->device_bytes());
  if (s.distributed_plan)
    bytes += std::size_t(s.inner_matrix->distributed->device_bytes() + s.distributed_plan->device_bytes());
#endif
  return static_cast<std::int64_t>(bytes);
}

std::int32_t GpuSystem::halo_rows() const {
#if BCSR24_HAS_NCCL
  if (impl_->exchange) return impl_->exchange->halo_rows();
#endif
  return 0;
}

std::int32_t GpuSystem::send_rows() const {
#if BCSR24_HAS_NCCL
  if (impl_->exchange) return impl_->exchange->send_rows();
#endif
  return 0;
}

void GpuSystem::residual(int r, int b, int x) {
  Impl& s = *impl_;
  s.check_slot(r);
  s.check_slot(b);
  s.check_slot(x);
  CUDA_OK(cudaMemcpyAsync(s.slot(r), s.slot(b), std::size_t(s.n) * s.k * sizeof(double), cudaMemcpyDeviceToDevice,
                          s.stream));
  s.outer_multiply(s.slot(x), s.slot(r), -1.0, 1.0);
}

void GpuSystem::multiply(int q, int p) {
  Impl& s = *impl_;
  s.check_slot(q);
  s.check_slot(p);
  s.outer_multiply(s.slot(p), s.slot(q), 1.0, 0.0);
}

void GpuSystem::dots(const std::vector<std::pair<int, int>>& pairs, std::vector<double>& out) {
  Impl& s = *impl_;
  out.clear();
  for (std::size_t first = 0; first < pairs.size(); first += gpu::kMaxDotPairs) {
    gpu::DotBatch batch;
    batch.count = static_cast<int>(std::min<std::size_t>(gpu::kMaxDotPairs, pairs.size() - first));
    for (int i = 0; i < batch.count; ++i) {
      s.check_slot(pairs[first + i].first);
      s.check_slot(pairs[first + i].second);
      batch.x[i] = s.slot(pairs[first + i].first);
      batch.y[i] = s.slot(pairs[first + i].second);
    }
    gpu::column_dots(batch, s.n, s.k, s.dots_partial.get(), s.dots_out.get(), s.stream);
    const std::size_t values = std::size_t(batch.count) * s.k;
    s.sum_over_ranks(s.dots_out.get(), values);
    CUDA_OK(cudaMemcpyAsync(s.dots_host.get(), s.dots_out.get(), values * sizeof(double), cudaMemcpyDeviceToHost,
                            s.stream));
    s.synchronize();
    out.insert(out.end(), s.dots_host.get(), s.dots_host.get() + values);
  }
}

void GpuSystem::combine(int dst, int z, const std::vector<int>& p, const std::vector<double>& coef) {
  Impl& s = *impl_;
  if (p.size() > std::size_t(gpu::kMaxCombineTerms))
    throw InvalidArgument("GpuSystem::combine: at most " + std::to_string(gpu::kMaxCombineTerms) + " directions");
  s.check_slot(dst);
  s.check_slot(z);
  gpu::CombineTerms terms;
  terms.count = static_cast<int>(p.size());
  for (std::size_t t = 0; t < p.size(); ++t) {
    s.check_slot(p[t]);
    terms.p[t] = s.slot(p[t]);
  }
  s.upload(s.coef, coef);
  gpu::combine(s.slot(dst), s.slot(z), terms, s.coef.get(), s.n, s.k, s.stream);
}

void GpuSystem::update(int x, int p, int r, int q, const std::vector<double>& alpha) {
  Impl& s = *impl_;
  for (int i : {x, p, r, q}) s.check_slot(i);
  s.upload(s.alpha, alpha);
  gpu::update_solution(s.slot(x), s.slot(p), s.slot(r), s.slot(q), s.alpha.get(), s.n, s.k, s.stream);
}

InnerStats GpuSystem::precondition_inner(int z, int r, const std::vector<double>& column_scale,
                                         const InnerOptions& options) {
  Impl& s = *impl_;
  s.check_slot(z);
  s.check_slot(r);
  std::vector<double> unscale(column_scale.size());
  for (std::size_t j = 0; j < unscale.size(); ++j) unscale[j] = column_scale[j] != 0.0 ? 1.0 / column_scale[j] : 0.0;
  s.upload(s.column_scale, column_scale);
  s.upload(s.column_unscale, unscale);
  // X, P, Q start at zero in both blocks (finite values everywhere: the block update multiplies them by 0).
  for (auto& b : s.inner_blocks) CUDA_OK(cudaMemsetAsync(b.get(), 0, b.bytes(), s.stream));
  s.current = 0;
  gpu::fp64_to_fp32(s.slot(r), s.inner_row_scale.get(), s.column_scale.get(), s.current_block() + 2 * s.inner_k,
                    s.inner_ld(), s.n, s.k, s.stream);
  const InnerStats stats = block_cg(*s.inner, options);
  gpu::fp32_to_fp64(s.current_block(), s.inner_ld(), s.inner_row_scale.get(), s.column_unscale.get(), s.slot(z), s.n,
                    s.k, s.stream);
  return stats;
}

void GpuSystem::precondition_jacobi(int z, int r, const std::vector<double>& column_mask) {
  Impl& s = *impl_;
  s.check_slot(z);
  s.check_slot(r);
  s.upload(s.column_mask, column_mask);
  gpu::scale_fp64(s.slot(r), s.inverse_diagonal.get(), s.column_mask.get(), s.slot(z), s.n, s.k, s.stream);
}

}  // namespace bcsr24::solver
