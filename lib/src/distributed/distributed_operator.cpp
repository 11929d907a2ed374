// DistributedOperator and DistributedPlan: each rank's local and halo parts as two single-GPU operators, the halo
// requests exchanged once over NCCL at construction, and per product: pack the rows peers need, grouped NCCL
// send/recv on a communication stream while the local product runs, then the halo product adds into C.
#include "bcsr24/distributed_operator.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"
#include "device/cuda_check.hpp"
#include "device/device_buffer.hpp"
#include "kernels/halo_pack.hpp"

namespace bcsr24 {

namespace {

[[noreturn]] void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line) {
  throw NcclError(std::string(call) + " failed (" + file + ":" + std::to_string(line) +
                  "): " + ncclGetErrorString(status));
}

#define BCSR24_NCCL_CHECK(call)                                                     \
  do {                                                                              \
    const ncclResult_t bcsr24_nccl_status_ = (call);                                \
    if (bcsr24_nccl_status_ != ncclSuccess)                                         \
      throw_nccl_error(bcsr24_nccl_status_, #call, __FILE__, __LINE__);             \
  } while (0)

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

/// A CUDA stream or event that is destroyed with its owner.
struct StreamHandle {
  cudaStream_t stream = nullptr;
  StreamHandle() { BCSR24_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
  ~StreamHandle() {
    if (stream) cudaStreamDestroy(stream);
  }
  StreamHandle(const StreamHandle&) = delete;
  StreamHandle& operator=(const StreamHandle&) = delete;
};
struct EventHandle {
  cudaEvent_t event = nullptr;
  EventHandle() { BCSR24_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming)); }
  ~EventHandle() {
    if (event) cudaEventDestroy(event);
  }
  EventHandle(const EventHandle&) = delete;
  EventHandle& operator=(const EventHandle&) = delete;
};

void check_communicator(const NcclCommunicator& comm) {
  if (!comm.comm) throw InvalidArgument("DistributedOperator: the NCCL communicator is null");
  int count = 0, rank = 0;
  BCSR24_NCCL_CHECK(ncclCommCount(comm.comm, &count));
  BCSR24_NCCL_CHECK(ncclCommUserRank(comm.comm, &rank));
  if (count != comm.size || rank != comm.rank)
    throw InvalidArgument("DistributedOperator: the communicator has rank " + std::to_string(rank) + " of " +
                          std::to_string(count) + ", but rank " + std::to_string(comm.rank) + " of " +
                          std::to_string(comm.size) + " was passed");
  int comm_device = -1, device = -1;
  BCSR24_NCCL_CHECK(ncclCommCuDevice(comm.comm, &comm_device));
  BCSR24_CUDA_CHECK(cudaGetDevice(&device));
  if (comm_device != device)
    throw InvalidArgument("DistributedOperator: the communicator of rank " + std::to_string(rank) +
                          " is on CUDA device " + std::to_string(comm_device) + " but device " +
                          std::to_string(device) + " is current; call cudaSetDevice first");
}

/// Every rank tells each peer which of the peer's columns it needs (its receive list from that peer), and learns
/// what each peer needs from it: counts first, then the lists, as grouped point-to-point calls.
std::vector<std::vector<std::int32_t>> exchange_requests(const RankBlock& block, const NcclCommunicator& comm) {
  const int ranks = comm.size, me = comm.rank;
  std::vector<std::vector<std::int32_t>> requested(at(ranks));
  if (ranks == 1) return requested;
  StreamHandle stream;
  std::vector<std::int32_t> my_counts(at(ranks));
  for (int q = 0; q < ranks; ++q) my_counts[at(q)] = block.recv_count(q);
  detail::DeviceBuffer<std::int32_t> d_my_counts(my_counts), d_peer_counts(at(ranks));
  BCSR24_CUDA_CHECK(cudaMemsetAsync(d_peer_counts.get(), 0, d_peer_counts.bytes(), stream.stream));
  BCSR24_NCCL_CHECK(ncclGroupStart());
  for (int q = 0; q < ranks; ++q) {
    if (q == me) continue;
    BCSR24_NCCL_CHECK(ncclSend(d_my_counts.get() + q, 1, ncclInt32, q, comm.comm, stream.stream));
    BCSR24_NCCL_CHECK(ncclRecv(d_peer_counts.get() + q, 1, ncclInt32, q, comm.comm, stream.stream));
  }
  BCSR24_NCCL_CHECK(ncclGroupEnd());
  std::vector<std::int32_t> peer_counts(at(ranks));
  BCSR24_CUDA_CHECK(cudaMemcpyAsync(peer_counts.data(), d_peer_counts.get(), d_peer_counts.bytes(),
                                    cudaMemcpyDeviceToHost, stream.stream));
  BCSR24_CUDA_CHECK(cudaStreamSynchronize(stream.stream));

  std::vector<std::int64_t> peer_offsets(at(ranks) + 1, 0);
  for (int q = 0; q < ranks; ++q) {
    if (peer_counts[at(q)] < 0 || peer_counts[at(q)] > block.col_end - block.col_begin)
      throw InvalidArgument("DistributedOperator: rank " + std::to_string(q) + " requests " +
                            std::to_string(peer_counts[at(q)]) + " B rows from rank " + std::to_string(me) +
                            ", which owns " + std::to_string(block.col_end - block.col_begin) +
                            " (are the partitions the same on every rank?)");
    peer_offsets[at(q) + 1] = peer_offsets[at(q)] + peer_counts[at(q)];
  }
  detail::DeviceBuffer<std::int32_t> d_mine(block.halo_global), d_theirs(at(peer_offsets.back()));
  BCSR24_NCCL_CHECK(ncclGroupStart());
  for (int q = 0; q < ranks; ++q) {
    if (q == me) continue;
    if (block.recv_count(q) > 0)
      BCSR24_NCCL_CHECK(ncclSend(d_mine.get() + block.recv_offsets[at(q)], at(block.recv_count(q)), ncclInt32, q,
                                 comm.comm, stream.stream));
    if (peer_counts[at(q)] > 0)
      BCSR24_NCCL_CHECK(ncclRecv(d_theirs.get() + peer_offsets[at(q)], at(peer_counts[at(q)]), ncclInt32, q,
                                 comm.comm, stream.stream));
  }
  BCSR24_NCCL_CHECK(ncclGroupEnd());
  std::vector<std::int32_t> all(at(peer_offsets.back()));
  if (!all.empty())
    BCSR24_CUDA_CHECK(cudaMemcpyAsync(all.data(), d_theirs.get(), d_theirs.bytes(), cudaMemcpyDeviceToHost,
                                      stream.stream));
  BCSR24_CUDA_CHECK(cudaStreamSynchronize(stream.stream));
  for (int q = 0; q < ranks; ++q)
    requested[at(q)].assign(all.begin() + peer_offsets[at(q)], all.begin() + peer_offsets[at(q) + 1]);
  return requested;
}

std::unique_ptr<SparseOperator> make_part(const CsrMatrix& part, const OperatorOptions& options) {
  if (part.nnz() == 0) return nullptr;
  auto op = std::make_unique<SparseOperator>(SparseOperator::from_csr(part, options));
  op->upload();
  return op;
}

InputType resolved_input(InputType requested, Precision precision) {
  if (requested != InputType::automatic) return requested;
  switch (precision) {
    case Precision::split: return InputType::f32;
    case Precision::bf16: return InputType::bf16;
    default: return InputType::f16;
  }
}

}  // namespace

struct DistributedOperator::State {
  NcclCommunicator comm;
  RowPartition rows, cols;
  std::int32_t local_rows = 0, owned_cols = 0, halo_rows = 0;
  std::int64_t local_nnz = 0, halo_nnz = 0;
  Precision precision = Precision::fp16;
  std::unique_ptr<SparseOperator> local, halo;
  std::vector<std::int32_t> recv_offsets;  // ranks + 1: halo rows from peer q
  HaloSendPlan send;
  detail::DeviceBuffer<std::int32_t> send_rows;  // owned B rows to pack, peer by peer
  int device = 0;
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
  check_communicator(comm);
  if (row_partition.ranks() != comm.size)
    throw InvalidArgument("DistributedOperator: the row partition has " + std::to_string(row_partition.ranks()) +
                          " ranks, the communicator " + std::to_string(comm.size));
  const RankBlock block = split_rank_rows(rows_of_rank, comm.rank, row_partition, col_partition);
  auto s = std::make_unique<State>();
  s->comm = comm;
  s->rows = row_partition;
  s->cols = col_partition;
  s->local_rows = row_partition.count(comm.rank);
  s->owned_cols = col_partition.count(comm.rank);
  s->halo_rows = block.halo_cols();
  s->local_nnz = block.local.nnz();
  s->halo_nnz = block.halo.nnz();
  s->precision = options.part.convert.precision;
  BCSR24_CUDA_CHECK(cudaGetDevice(&s->device));
  s->local = make_part(block.local, options.part);
  s->halo = make_part(block.halo, options.part);
  s->recv_offsets = block.recv_offsets;
  s->send = build_send_plan(comm.rank, col_partition, exchange_requests(block, comm));
  s->send_rows = detail::DeviceBuffer<std::int32_t>(s->send.send_rows);
  return DistributedOperator(std::move(s));
}

DistributedOperator DistributedOperator::from_global(const CsrMatrix& a, const NcclCommunicator& comm,
                                                     const DistributedOptions& options) {
  if (comm.size < 1 || comm.rank < 0 || comm.rank >= comm.size)
    throw InvalidArgument("DistributedOperator: rank " + std::to_string(comm.rank) + " of " +
                          std::to_string(comm.size) + " is not a place in a communicator");
  const RowPartition rows = partition_rows_by_bytes(a, comm.size, options.cost);
  const RowPartition cols = a.rows == a.cols ? rows : uniform_partition(a.cols, comm.size);
  return from_rank_rows(extract_rows(a, rows.begin(comm.rank), rows.end(comm.rank)), rows, cols, comm, options);
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
std::int32_t DistributedOperator::send_rows() const noexcept {
  return static_cast<std::int32_t>(state_->send.total());
}
const SparseOperator* DistributedOperator::local_part() const noexcept { return state_->local.get(); }
const SparseOperator* DistributedOperator::halo_part() const noexcept { return state_->halo.get(); }
const NcclCommunicator& DistributedOperator::communicator() const noexcept { return state_->comm; }
std::int64_t DistributedOperator::device_bytes() const {
  std::int64_t bytes = std::int64_t(state_->send_rows.bytes());
  if (state_->local) bytes += state_->local->device().device_bytes();
  if (state_->halo) bytes += state_->halo->device().device_bytes();
  return bytes;
}

// --- plans

struct DistributedPlan::Impl {
  const DistributedOperator::State* op = nullptr;
  std::int32_t n = 0;
  InputType input = InputType::f16;
  int element_bytes = 2;
  ncclDataType_t nccl_type = ncclHalf;
  std::int64_t ld = 0;  // of the send buffer and the halo rows: n rounded up to 8 (aligned for the tile kernels)
  std::unique_ptr<SpmmPlan> local, halo;
  detail::DeviceBuffer<unsigned char> send_buffer, halo_buffer;
  StreamHandle comm_stream;
  EventHandle b_ready, halo_ready;

  bool exchanges() const { return op->send.total() > 0 || op->halo_rows > 0; }

  void run(const void* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
           cudaStream_t stream, DistributedStages stages, InputType given) const {
    if (given == InputType::f32 ? input != InputType::f32 : input == InputType::f32)
      throw InvalidArgument(std::string("DistributedPlan::run: the plan takes ") + input_type_name(input) +
                            " B, run() was given " + (given == InputType::f32 ? "fp32" : "16-bit") + " B");
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
    if (stages == DistributedStages::halo_only) {
      if (halo) run_part(*halo, halo_buffer.get(), ld, c, ldc, alpha, 1.0f, stream);
      return;
    }
    const bool exchange = stages != DistributedStages::local_only && exchanges();
    if (exchange) {
      // The exchange waits only for what `stream` did before (B written), then runs beside the local product.
      BCSR24_CUDA_CHECK(cudaEventRecord(b_ready.event, stream));
      BCSR24_CUDA_CHECK(cudaStreamWaitEvent(comm_stream.stream, b_ready.event, 0));
      kernels::launch_pack_rows(b, ldb, op->send_rows.get(), static_cast<std::int32_t>(op->send.total()), n,
                                send_buffer.get(), ld, element_bytes, comm_stream.stream);
      const int ranks = op->comm.size;
      BCSR24_NCCL_CHECK(ncclGroupStart());
      for (int q = 0; q < ranks; ++q) {
        const std::int64_t send_count = op->send.send_count(q);
        const std::int64_t recv_count = op->recv_offsets[at(q) + 1] - op->recv_offsets[at(q)];
        if (send_count > 0)
          BCSR24_NCCL_CHECK(ncclSend(send_buffer.get() + op->send.send_offsets[at(q)] * ld * element_bytes,
                                     at(send_count * ld), nccl_type, q, op->comm.comm, comm_stream.stream));
        if (recv_count > 0)
          BCSR24_NCCL_CHECK(ncclRecv(halo_buffer.get() + op->recv_offsets[at(q)] * ld * element_bytes,
                                     at(recv_count * ld), nccl_type, q, op->comm.comm, comm_stream.stream));
      }
      BCSR24_NCCL_CHECK(ncclGroupEnd());
      BCSR24_CUDA_CHECK(cudaEventRecord(halo_ready.event, comm_stream.stream));
    }
    if (stages == DistributedStages::exchange_only) {
      if (exchange) BCSR24_CUDA_CHECK(cudaStreamWaitEvent(stream, halo_ready.event, 0));
      return;
    }
    if (local)
      run_part(*local, b, ldb, c, ldc, alpha, beta, stream);
    else
      kernels::launch_scale_rows(c, ldc, op->local_rows, n, beta, stream);  // no local entries: C = beta * C
    if (stages == DistributedStages::local_only) return;
    if (exchange) BCSR24_CUDA_CHECK(cudaStreamWaitEvent(stream, halo_ready.event, 0));
    if (halo) run_part(*halo, halo_buffer.get(), ld, c, ldc, alpha, 1.0f, stream);
  }

  void run_part(const SpmmPlan& plan, const void* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha,
                float beta, cudaStream_t stream) const {
    if (input == InputType::f32)
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
  if (options.output != OutputType::f32)
    throw InvalidArgument("DistributedOperator::make_plan: distributed products write fp32 C (the halo part adds "
                          "into the local part's sums)");
  const State& s = *state_;
  auto p = std::make_unique<DistributedPlan::Impl>();
  p->op = &s;
  p->n = n;
  p->input = resolved_input(options.input, s.precision);
  p->element_bytes = p->input == InputType::f32 ? 4 : 2;
  p->nccl_type = p->input == InputType::f32 ? ncclFloat : (p->input == InputType::bf16 ? ncclBfloat16 : ncclHalf);
  p->ld = (std::int64_t(n) + 7) / 8 * 8;
  PlanOptions part_options = options;
  part_options.input = p->input;
  if (s.local) p->local = std::make_unique<SpmmPlan>(s.local->make_plan(n, KernelKind::automatic, part_options));
  if (s.halo) p->halo = std::make_unique<SpmmPlan>(s.halo->make_plan(n, KernelKind::automatic, part_options));
  // Padding columns are zero (never read as data, but defined for the copies and for initcheck).
  const std::size_t send_bytes = at(s.send.total() * p->ld * p->element_bytes);
  const std::size_t halo_bytes = at(std::int64_t(s.halo_rows) * p->ld * p->element_bytes);
  p->send_buffer = detail::DeviceBuffer<unsigned char>(send_bytes);
  p->halo_buffer = detail::DeviceBuffer<unsigned char>(halo_bytes);
  if (send_bytes) BCSR24_CUDA_CHECK(cudaMemset(p->send_buffer.get(), 0, send_bytes));
  if (halo_bytes) BCSR24_CUDA_CHECK(cudaMemset(p->halo_buffer.get(), 0, halo_bytes));
  return DistributedPlan(std::move(p));
}

void DistributedPlan::run(const fp16_t* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
                          Stream stream, DistributedStages stages) const {
  impl_->run(b, ldb, c, ldc, alpha, beta, stream, stages, InputType::f16);
}
void DistributedPlan::run(const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, float beta,
                          Stream stream, DistributedStages stages) const {
  impl_->run(b, ldb, c, ldc, alpha, beta, stream, stages, InputType::f32);
}

std::int32_t DistributedPlan::n() const noexcept { return impl_->n; }
InputType DistributedPlan::input() const noexcept { return impl_->input; }
std::int64_t DistributedPlan::bytes_sent() const noexcept {
  return impl_->op->send.total() * impl_->ld * impl_->element_bytes;
}
std::int64_t DistributedPlan::bytes_received() const noexcept {
  return std::int64_t(impl_->op->halo_rows) * impl_->ld * impl_->element_bytes;
}
std::int64_t DistributedPlan::device_bytes() const noexcept {
  std::int64_t bytes = std::int64_t(impl_->send_buffer.bytes() + impl_->halo_buffer.bytes());
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

}  // namespace bcsr24
