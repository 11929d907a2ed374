// DistributedOperator and DistributedPlan: each rank's local and halo parts as two single-GPU operators and a
// HaloExchange (requests exchanged once over NCCL at construction); per product the exchange of B's halo rows runs
// on its own stream while the local product runs, then the halo product adds into C.
#include "bcsr24/distributed_operator.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"
#include "bcsr24_experimental/distributed_stages.hpp"
#include "device/cuda_check.hpp"
#include "device/cuda_owners.hpp"
#include "device/device_buffer.hpp"
#include "distributed/halo_exchange.hpp"
#include "distributed/halo_plan.hpp"
#include "kernels/halo_pack.hpp"
#include "agreed_partition.hpp"
#include "nccl_check.hpp"

namespace bcsr24 {

using detail::HaloElement;
using detail::HaloExchange;
using detail::HaloExchangePlan;
using experimental::DistributedStages;

namespace {

std::unique_ptr<SparseOperator> make_part(const CsrMatrix& part, const OperatorOptions& options) {
  if (part.nnz() == 0) return nullptr;
  auto op = std::make_unique<SparseOperator>(SparseOperator::from_csr(part, options));
  op->upload();
  return op;
}

ElementType resolved_input(ElementType requested, Precision precision) {
  if (requested != ElementType::automatic) return requested;
  switch (precision) {
    case Precision::split: return ElementType::f32;
    case Precision::bf16: return ElementType::bf16;
    default: return ElementType::f16;
  }
}

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

/// Every rank's stored entries and halo rows, gathered once at construction (one all-gather of 2 int64 each).
std::vector<std::int64_t> gather_rank_figures(std::int64_t nnz, std::int64_t halo_rows, const NcclCommunicator& comm) {
  std::vector<std::int64_t> all(at(comm.size) * 2);
  all[at(comm.rank) * 2] = nnz;
  all[at(comm.rank) * 2 + 1] = halo_rows;
  if (comm.size == 1) return all;
  const detail::OwnedStream stream = detail::make_stream();
  detail::DeviceBuffer<std::int64_t> d_all(all);
  BCSR24_NCCL_CHECK(ncclAllGather(d_all.get() + at(comm.rank) * 2, d_all.get(), 2, ncclInt64, comm.comm,
                                  stream.get()));
  BCSR24_CUDA_CHECK(cudaMemcpyAsync(all.data(), d_all.get(), d_all.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  BCSR24_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  return all;
}

}  // namespace

namespace distributed {

namespace {

/// Rank 0's METIS partition of `a`, the same on every rank: rank 0 computes it, then one broadcast carries
/// [status, offsets (ranks + 1), new_to_old (rows)]. A failure on rank 0 is broadcast as status 1, so the other
/// ranks throw too instead of waiting. The checks every rank can make alone (square A, METIS in this build) have
/// run on every rank before (partition_rows's own checks are deterministic), so no rank enters the broadcast
/// alone.
RowPartition broadcast_metis_partition(const CsrMatrix& a, const NcclCommunicator& comm,
                                       const detail::PartitionCost& cost, std::vector<std::int32_t>& new_to_old,
                                       PartitionMethod& used) {
  const std::size_t offsets = at(comm.size) + 1;
  std::vector<std::int32_t> message(1 + offsets + at(a.rows), 0);
  std::string failure;
  if (comm.rank == 0) {
    try {
      const RowPartition p = partition_rows(a, comm.size, PartitionMethod::metis, cost, new_to_old, &used);
      std::copy(p.offsets.begin(), p.offsets.end(), message.begin() + 1);
      std::copy(new_to_old.begin(), new_to_old.end(), message.begin() + 1 + static_cast<std::ptrdiff_t>(offsets));
      message[0] = used == PartitionMethod::metis ? 0 : 2;
    } catch (const std::exception& error) {
      failure = error.what();
      message[0] = 1;
    }
  }
  {
    const detail::OwnedStream stream = detail::make_stream();
    detail::DeviceBuffer<std::int32_t> d_message(message);
    BCSR24_NCCL_CHECK(ncclBroadcast(d_message.get(), d_message.get(), message.size(), ncclInt32, 0, comm.comm,
                                    stream.get()));
    BCSR24_CUDA_CHECK(cudaMemcpyAsync(message.data(), d_message.get(), d_message.bytes(), cudaMemcpyDeviceToHost,
                                      stream.get()));
    BCSR24_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  }
  if (message[0] == 1)
    throw Error("DistributedOperator: the METIS partition failed on rank 0" +
                (failure.empty() ? std::string() : ": " + failure));
  used = message[0] == 0 ? PartitionMethod::metis : PartitionMethod::contiguous;
  RowPartition p;
  p.offsets.assign(message.begin() + 1, message.begin() + 1 + static_cast<std::ptrdiff_t>(offsets));
  new_to_old.assign(message.begin() + 1 + static_cast<std::ptrdiff_t>(offsets), message.end());
  validate_partition(p, a.rows, "DistributedOperator: the broadcast row partition");
  return p;
}

}  // namespace

RowPartition agreed_partition(const CsrMatrix& a, const NcclCommunicator& comm, PartitionMethod method,
                              const detail::PartitionCost& cost, std::vector<std::int32_t>& new_to_old,
                              PartitionMethod& used) {
  if (comm.size < 1 || comm.rank < 0 || comm.rank >= comm.size)
    throw InvalidArgument("DistributedOperator: rank " + std::to_string(comm.rank) + " of " +
                          std::to_string(comm.size) + " is not a place in a communicator");
  if (method == PartitionMethod::automatic)
    method = metis_available() && a.rows == a.cols ? PartitionMethod::metis : PartitionMethod::contiguous;
  used = PartitionMethod::contiguous;
  if (method != PartitionMethod::metis || comm.size == 1)
    return partition_rows(a, comm.size, method, cost, new_to_old, &used);
  // The checks every rank makes alike come first, so that no rank is left alone in the broadcast.
  if (a.rows != a.cols)
    throw InvalidArgument("DistributedOperator: partition method metis needs a square A, not " +
                          std::to_string(a.rows) + " x " + std::to_string(a.cols) + " (use contiguous)");
  if (!metis_available())
    throw NotSupported("DistributedOperator: partition method metis, but this build of bcsr24 has no METIS; "
                       "use contiguous");
  check_communicator(comm, "DistributedOperator");
  return broadcast_metis_partition(a, comm, cost, new_to_old, used);
}

}  // namespace distributed

struct DistributedOperator::State {
  NcclCommunicator comm;
  RowPartition rows, cols;
  std::int32_t local_rows = 0, owned_cols = 0, halo_rows = 0;
  std::int64_t local_nnz = 0, halo_nnz = 0;
  Precision precision = Precision::fp16;
  std::unique_ptr<SparseOperator> local, halo;
  std::unique_ptr<HaloExchange> exchange;
  int device = 0;
  PartitionMethod partition = PartitionMethod::contiguous;
  std::vector<std::int32_t> row_order;    // operator row -> caller row; empty: the caller's numbering
  std::vector<std::int64_t> rank_figures;  // per rank: stored entries, halo rows
};

DistributedOperator::DistributedOperator(std::unique_ptr<State> state) : state_(std::move(state)) {}
DistributedOperator::DistributedOperator(DistributedOperator&&) noexcept = default;
DistributedOperator& DistributedOperator::operator=(DistributedOperator&&) noexcept = default;
DistributedOperator::~DistributedOperator() = default;

DistributedOperator DistributedOperator::from_rank_rows(const CsrMatrix& rows_of_rank,
                                                        const RowPartition& row_partition,
                                                        const RowPartition& col_partition,
                                                        const NcclCommunicator& comm,
                                                        const DistributedOptions& options) {
  check_communicator(comm, "DistributedOperator");
  if (row_partition.ranks() != comm.size)
    throw InvalidArgument("DistributedOperator: the row partition has " + std::to_string(row_partition.ranks()) +
                          " ranks, the communicator " + std::to_string(comm.size));
  const detail::RankBlock block = detail::split_rank_rows(rows_of_rank, comm.rank, row_partition, col_partition);
  auto s = std::make_unique<State>();
  s->comm = comm;
  s->rows = row_partition;
  s->cols = col_partition;
  s->local_rows = row_partition.count(comm.rank);
  s->owned_cols = col_partition.count(comm.rank);
  s->halo_rows = block.halo_cols();
  s->local_nnz = block.local.nnz();
  s->halo_nnz = block.halo.nnz();
  s->precision = options.part.precision;
  BCSR24_CUDA_CHECK(cudaGetDevice(&s->device));
  s->local = make_part(block.local, options.part);
  s->halo = make_part(block.halo, options.part);
  s->exchange = std::make_unique<HaloExchange>(block, col_partition, comm);
  s->rank_figures = gather_rank_figures(s->local_nnz + s->halo_nnz, s->halo_rows, comm);
  return DistributedOperator(std::move(s));
}

DistributedOperator DistributedOperator::from_global(const CsrMatrix& a, const NcclCommunicator& comm,
                                                     const DistributedOptions& options) {
  if (comm.size < 1 || comm.rank < 0 || comm.rank >= comm.size)
    throw InvalidArgument("DistributedOperator: rank " + std::to_string(comm.rank) + " of " +
                          std::to_string(comm.size) + " is not a place in a communicator");
  std::vector<std::int32_t> new_to_old;
  PartitionMethod used = PartitionMethod::contiguous;
  const RowPartition rows = distributed::agreed_partition(a, comm, options.partition, options.cost, new_to_old, used);
  const RowPartition cols = a.rows == a.cols ? rows : uniform_partition(a.cols, comm.size);
  if (used == PartitionMethod::contiguous) {
    DistributedOperator op =
        from_rank_rows(detail::extract_rows(a, rows.begin(comm.rank), rows.end(comm.rank)), rows, cols, comm, options);
    return op;
  }
  const std::vector<std::int32_t> old_to_new = invert_permutation(new_to_old);
  DistributedOperator op = from_rank_rows(
      extract_permuted_rows(a, new_to_old, old_to_new, rows.begin(comm.rank), rows.end(comm.rank)), rows, cols, comm,
      options);
  op.state_->partition = used;
  op.state_->row_order = std::move(new_to_old);
  return op;
}

DistributedOperator DistributedOperator::from_file(const std::string& path, const NcclCommunicator& comm,
                                                   const DistributedOptions& options) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".b24") == 0)
    throw InvalidArgument(path + ": a .b24 file holds tiles, not the rows a distributed operator partitions; "
                                 "pass the Matrix Market file");
  return from_global(read_matrix_market(path, options.part.matrix_market), comm, options);
}

int DistributedOperator::rank() const noexcept { return state_->comm.rank; }
int DistributedOperator::size() const noexcept { return state_->comm.size; }
std::int32_t DistributedOperator::global_rows() const noexcept { return state_->rows.size(); }
std::int32_t DistributedOperator::global_cols() const noexcept { return state_->cols.size(); }
const RowPartition& DistributedOperator::row_partition() const noexcept { return state_->rows; }
const RowPartition& DistributedOperator::col_partition() const noexcept { return state_->cols; }
std::int32_t DistributedOperator::local_rows() const noexcept { return state_->local_rows; }
std::int32_t DistributedOperator::owned_cols() const noexcept { return state_->owned_cols; }
std::int64_t DistributedOperator::local_nnz() const noexcept { return state_->local_nnz; }
std::int64_t DistributedOperator::halo_nnz() const noexcept { return state_->halo_nnz; }
std::int32_t DistributedOperator::halo_rows() const noexcept { return state_->halo_rows; }
std::int32_t DistributedOperator::send_rows() const noexcept { return state_->exchange->send_rows(); }
PartitionMethod DistributedOperator::partition_method() const noexcept { return state_->partition; }
const std::vector<std::int32_t>& DistributedOperator::row_order() const noexcept { return state_->row_order; }
std::int64_t DistributedOperator::rank_nnz(int r) const {
  if (r < 0 || r >= state_->comm.size)
    throw InvalidArgument("DistributedOperator::rank_nnz: rank " + std::to_string(r) + " outside 0 .. " +
                          std::to_string(state_->comm.size - 1));
  return state_->rank_figures[at(r) * 2];
}
std::int32_t DistributedOperator::rank_halo_rows(int r) const {
  if (r < 0 || r >= state_->comm.size)
    throw InvalidArgument("DistributedOperator::rank_halo_rows: rank " + std::to_string(r) + " outside 0 .. " +
                          std::to_string(state_->comm.size - 1));
  return static_cast<std::int32_t>(state_->rank_figures[at(r) * 2 + 1]);
}
const SparseOperator* DistributedOperator::local_part() const noexcept { return state_->local.get(); }
const SparseOperator* DistributedOperator::halo_part() const noexcept { return state_->halo.get(); }
const NcclCommunicator& DistributedOperator::communicator() const noexcept { return state_->comm; }
std::int64_t DistributedOperator::device_bytes() const {
  std::int64_t bytes = state_->exchange->device_bytes();
  if (state_->local) bytes += state_->local->device_bytes();
  if (state_->halo) bytes += state_->halo->device_bytes();
  return bytes;
}

// --- plans

struct DistributedPlan::Impl {
  const DistributedOperator::State* op = nullptr;
  std::int32_t n = 0;
  ElementType input = ElementType::f16;
  std::unique_ptr<SpmmPlan> local, halo;
  std::unique_ptr<HaloExchangePlan> exchange;  // B rows in the parts' input type

  void run(const void* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
           cudaStream_t stream, DistributedStages stages, ElementType given, const OutputAddend* addends = nullptr,
           int count = 0) const {
    if (given == ElementType::f32 ? input != ElementType::f32 : input == ElementType::f32)
      throw InvalidArgument(std::string("DistributedPlan::run: the plan takes ") + element_type_name(input) +
                            " B, run() was given " + (given == ElementType::f32 ? "fp32" : "16-bit") + " B");
    if (ldb < n || ldc < n)
      throw InvalidArgument("DistributedPlan::run: ldb " + std::to_string(ldb) + " and ldc " + std::to_string(ldc) +
                            " must be >= n = " + std::to_string(n));
    if ((op->owned_cols > 0 && !b) || (op->local_rows > 0 && !c))
      throw InvalidArgument("DistributedPlan::run: B or C is null on rank " + std::to_string(op->comm.rank));
    int device = -1;
    BCSR24_CUDA_CHECK(cudaGetDevice(&device));
    if (device != op->device)
      throw InvalidArgument("DistributedPlan::run: the operator lives on CUDA device " + std::to_string(op->device) +
                            ", device " + std::to_string(device) + " is current");
    if (count > 0 && !local && !halo)
      throw InvalidArgument("DistributedPlan::run: rank " + std::to_string(op->comm.rank) +
                            " has no entries to carry the addends");
    if (stages == DistributedStages::halo_only) {
      if (halo) run_part(*halo, exchange->halo(), exchange->ld(), c, ldc, alpha, 1.0f, stream);
      return;
    }
    // The exchange waits only for what `stream` did before (B written), then runs beside the local product.
    const bool exchanges = stages != DistributedStages::local_only;
    if (exchanges) exchange->start(b, ldb, stream);
    if (stages == DistributedStages::exchange_only) {
      exchange->wait(stream);
      return;
    }
    // The addends go with the first pass over C: the local product's, else the halo product's.
    if (local)
      run_part(*local, b, ldb, c, ldc, alpha, beta, stream, addends, count);
    else
      kernels::launch_scale_rows(c, ldc, op->local_rows, n, beta, stream);  // no local entries: C = beta * C
    if (stages == DistributedStages::local_only) return;
    exchange->wait(stream);
    if (halo)
      run_part(*halo, exchange->halo(), exchange->ld(), c, ldc, alpha, 1.0f, stream, local ? nullptr : addends,
               local ? 0 : count);
  }

  void run_part(const SpmmPlan& plan, const void* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha,
                float beta, cudaStream_t stream, const OutputAddend* addends = nullptr, int count = 0) const {
    if (input == ElementType::f32 && count > 0)
      plan.run(static_cast<const float*>(b), ldb, c, ldc, alpha, beta, addends, count, stream);
    else if (input == ElementType::f32)
      plan.run(static_cast<const float*>(b), ldb, c, ldc, alpha, beta, stream);
    else
      plan.run(static_cast<const fp16_t*>(b), ldb, c, ldc, alpha, beta, stream);
  }
};

DistributedPlan::DistributedPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DistributedPlan::DistributedPlan(DistributedPlan&&) noexcept = default;
DistributedPlan& DistributedPlan::operator=(DistributedPlan&&) noexcept = default;
DistributedPlan::~DistributedPlan() = default;

DistributedPlan DistributedOperator::make_plan(std::int32_t n, const PlanOptions& options) const {
  if (n < 1) throw InvalidArgument("DistributedOperator::make_plan: n = " + std::to_string(n) + ", needs n >= 1");
  if (options.output != ElementType::f32)
    throw InvalidArgument("DistributedOperator::make_plan: distributed products write fp32 C (the halo part adds "
                          "into the local part's sums)");
  const State& s = *state_;
  auto p = std::make_unique<DistributedPlan::Impl>();
  p->op = &s;
  p->n = n;
  p->input = resolved_input(options.input, s.precision);
  PlanOptions part_options = options;
  part_options.input = p->input;
  if (s.local) p->local = std::make_unique<SpmmPlan>(s.local->make_plan(n, KernelKind::automatic, part_options));
  if (s.halo) p->halo = std::make_unique<SpmmPlan>(s.halo->make_plan(n, KernelKind::automatic, part_options));
  const HaloElement element = p->input == ElementType::f32   ? HaloElement::f32
                              : p->input == ElementType::bf16 ? HaloElement::bf16
                                                            : HaloElement::f16;
  p->exchange = std::make_unique<HaloExchangePlan>(s.exchange->make_plan(n, element));
  return DistributedPlan(std::move(p));
}

void DistributedPlan::run(const fp16_t* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
                          Stream stream) const {
  impl_->run(b, ldb, c, ldc, alpha, beta, stream, DistributedStages::all, ElementType::f16);
}
void DistributedPlan::run(const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
                          Stream stream) const {
  impl_->run(b, ldb, c, ldc, alpha, beta, stream, DistributedStages::all, ElementType::f32);
}

void DistributedPlan::run(const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
                          const OutputAddend* addends, int count, Stream stream) const {
  if (count < 0 || count > kMaxOutputAddends || (count > 0 && !addends))
    throw InvalidArgument("DistributedPlan::run: " + std::to_string(count) + " addends (at most " +
                          std::to_string(kMaxOutputAddends) + ", non-null)");
  impl_->run(b, ldb, c, ldc, alpha, beta, stream, DistributedStages::all, ElementType::f32, addends, count);
}

std::int32_t DistributedPlan::n() const noexcept { return impl_->n; }
ElementType DistributedPlan::input() const noexcept { return impl_->input; }
std::int64_t DistributedPlan::bytes_sent() const noexcept { return impl_->exchange->bytes_sent(); }
std::int64_t DistributedPlan::bytes_received() const noexcept { return impl_->exchange->bytes_received(); }
std::int64_t DistributedPlan::device_bytes() const noexcept {
  std::int64_t bytes = impl_->exchange->device_bytes();
  if (impl_->local) bytes += impl_->local->workspace_bytes();
  if (impl_->halo) bytes += impl_->halo->workspace_bytes();
  return bytes;
}
const PlanReport* DistributedPlan::local_report() const noexcept {
  return impl_->local ? &impl_->local->report() : nullptr;
}
const PlanReport* DistributedPlan::halo_report() const noexcept {
  return impl_->halo ? &impl_->halo->report() : nullptr;
}

// --- the library's own way in, and the experimental stages

const HaloExchange& detail::DistributedAccess::halo_exchange(const DistributedOperator& op) noexcept {
  return *op.state_->exchange;
}

void detail::DistributedAccess::run_stages(const DistributedPlan& plan, DistributedStages stages, const void* b,
                                           bool f32_b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha,
                                           float beta, Stream stream) {
  plan.impl_->run(b, ldb, c, ldc, alpha, beta, stream, stages, f32_b ? ElementType::f32 : ElementType::f16);
}

void experimental::run_stages(const DistributedPlan& plan, DistributedStages stages, const fp16_t* b,
                              std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta, Stream stream) {
  detail::DistributedAccess::run_stages(plan, stages, b, false, ldb, c, ldc, alpha, beta, stream);
}
void experimental::run_stages(const DistributedPlan& plan, DistributedStages stages, const float* b,
                              std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta, Stream stream) {
  detail::DistributedAccess::run_stages(plan, stages, b, true, ldb, c, ldc, alpha, beta, stream);
}

}  // namespace bcsr24
