// HaloExchange and HaloExchangePlan: halo requests exchanged once over NCCL at construction (counts, then the
// lists); per exchange, a gather kernel packs the rows peers need and one grouped NCCL send/recv per peer runs on
// the plan's communication stream, ordered after the caller's stream by an event.
#include "distributed/halo_exchange.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/distributed_operator.hpp"  // check_communicator
#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"
#include "device/cuda_owners.hpp"
#include "device/device_buffer.hpp"
#include "kernels/halo_pack.hpp"
#include "nccl_check.hpp"

namespace bcsr24 {

void check_communicator(const NcclCommunicator& comm, const char* who) {
  if (!comm.comm) throw InvalidArgument(std::string(who) + ": the NCCL communicator is null");
  int count = 0, rank = 0;
  BCSR24_NCCL_CHECK(ncclCommCount(comm.comm, &count));
  BCSR24_NCCL_CHECK(ncclCommUserRank(comm.comm, &rank));
  if (count != comm.size || rank != comm.rank)
    throw InvalidArgument(std::string(who) + ": the communicator has rank " + std::to_string(rank) + " of " +
                          std::to_string(count) + ", but rank " + std::to_string(comm.rank) + " of " +
                          std::to_string(comm.size) + " was passed");
  int comm_device = -1, device = -1;
  BCSR24_NCCL_CHECK(ncclCommCuDevice(comm.comm, &comm_device));
  BCSR24_CUDA_CHECK(cudaGetDevice(&device));
  if (comm_device != device)
    throw InvalidArgument(std::string(who) + ": the communicator of rank " + std::to_string(rank) +
                          " is on CUDA device " + std::to_string(comm_device) + " but device " +
                          std::to_string(device) + " is current; call cudaSetDevice first");
}

namespace detail {

namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

ncclDataType_t nccl_type(HaloElement element) {
  switch (element) {
    case HaloElement::f16: return ncclHalf;
    case HaloElement::bf16: return ncclBfloat16;
    case HaloElement::f32: return ncclFloat;
    case HaloElement::f64: return ncclDouble;
  }
  return ncclHalf;
}

/// Every rank tells each peer which of the peer's columns it needs (its receive list from that peer), and learns
/// what each peer needs from it: counts first, then the lists, as grouped point-to-point calls.
std::vector<std::vector<std::int32_t>> exchange_requests(const RankBlock& block, const NcclCommunicator& comm) {
  const int ranks = comm.size, me = comm.rank;
  std::vector<std::vector<std::int32_t>> requested(at(ranks));
  if (ranks == 1) return requested;
  const OwnedStream stream = make_stream();
  std::vector<std::int32_t> my_counts(at(ranks));
  for (int q = 0; q < ranks; ++q) my_counts[at(q)] = block.recv_count(q);
  detail::DeviceBuffer<std::int32_t> d_my_counts(my_counts), d_peer_counts(at(ranks));
  BCSR24_CUDA_CHECK(cudaMemsetAsync(d_peer_counts.get(), 0, d_peer_counts.bytes(), stream.get()));
  BCSR24_NCCL_CHECK(ncclGroupStart());
  for (int q = 0; q < ranks; ++q) {
    if (q == me) continue;
    BCSR24_NCCL_CHECK(ncclSend(d_my_counts.get() + q, 1, ncclInt32, q, comm.comm, stream.get()));
    BCSR24_NCCL_CHECK(ncclRecv(d_peer_counts.get() + q, 1, ncclInt32, q, comm.comm, stream.get()));
  }
  BCSR24_NCCL_CHECK(ncclGroupEnd());
  std::vector<std::int32_t> peer_counts(at(ranks));
  BCSR24_CUDA_CHECK(cudaMemcpyAsync(peer_counts.data(), d_peer_counts.get(), d_peer_counts.bytes(),
                                    cudaMemcpyDeviceToHost, stream.get()));
  BCSR24_CUDA_CHECK(cudaStreamSynchronize(stream.get()));

  std::vector<std::int64_t> peer_offsets(at(ranks) + 1, 0);
  for (int q = 0; q < ranks; ++q) {
    if (peer_counts[at(q)] < 0 || peer_counts[at(q)] > block.col_end - block.col_begin)
      throw InvalidArgument("HaloExchange: rank " + std::to_string(q) + " requests " +
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
                                 comm.comm, stream.get()));
    if (peer_counts[at(q)] > 0)
      BCSR24_NCCL_CHECK(ncclRecv(d_theirs.get() + peer_offsets[at(q)], at(peer_counts[at(q)]), ncclInt32, q,
                                 comm.comm, stream.get()));
  }
  BCSR24_NCCL_CHECK(ncclGroupEnd());
  std::vector<std::int32_t> all(at(peer_offsets.back()));
  if (!all.empty())
    BCSR24_CUDA_CHECK(cudaMemcpyAsync(all.data(), d_theirs.get(), d_theirs.bytes(), cudaMemcpyDeviceToHost,
                                      stream.get()));
  BCSR24_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  for (int q = 0; q < ranks; ++q)
    requested[at(q)].assign(all.begin() + peer_offsets[at(q)], all.begin() + peer_offsets[at(q) + 1]);
  return requested;
}

}  // namespace

int halo_element_bytes(HaloElement element) noexcept {
  switch (element) {
    case HaloElement::f16:
    case HaloElement::bf16: return 2;
    case HaloElement::f32: return 4;
    case HaloElement::f64: return 8;
  }
  return 2;
}

const char* halo_element_name(HaloElement element) noexcept {
  switch (element) {
    case HaloElement::f16: return "fp16";
    case HaloElement::bf16: return "bf16";
    case HaloElement::f32: return "fp32";
    case HaloElement::f64: return "fp64";
  }
  return "?";
}

// --- the pattern

struct HaloExchange::State {
  NcclCommunicator comm;
  std::int32_t halo_rows = 0;
  std::vector<std::int32_t> recv_offsets;  // ranks + 1: halo rows from peer q
  HaloSendPlan send;
  detail::DeviceBuffer<std::int32_t> send_rows;  // owned B rows to pack, peer by peer
  int device = 0;
};

HaloExchange::HaloExchange(const RankBlock& block, const RowPartition& col_partition, const NcclCommunicator& comm)
    : state_(std::make_unique<State>()) {
  check_communicator(comm, "HaloExchange");
  if (block.rank != comm.rank)
    throw InvalidArgument("HaloExchange: the block is rank " + std::to_string(block.rank) + "'s, this is rank " +
                          std::to_string(comm.rank));
  if (col_partition.ranks() != comm.size || block.recv_offsets.size() != at(comm.size) + 1)
    throw InvalidArgument("HaloExchange: the column partition has " + std::to_string(col_partition.ranks()) +
                          " ranks, the communicator " + std::to_string(comm.size));
  State& s = *state_;
  s.comm = comm;
  s.halo_rows = block.halo_cols();
  s.recv_offsets = block.recv_offsets;
  s.send = build_send_plan(comm.rank, col_partition, exchange_requests(block, comm));
  s.send_rows = detail::DeviceBuffer<std::int32_t>(s.send.send_rows);
  BCSR24_CUDA_CHECK(cudaGetDevice(&s.device));
}

HaloExchange::HaloExchange(HaloExchange&&) noexcept = default;
HaloExchange& HaloExchange::operator=(HaloExchange&&) noexcept = default;
HaloExchange::~HaloExchange() = default;

const NcclCommunicator& HaloExchange::communicator() const noexcept { return state_->comm; }
std::int32_t HaloExchange::halo_rows() const noexcept { return state_->halo_rows; }
std::int32_t HaloExchange::send_rows() const noexcept { return static_cast<std::int32_t>(state_->send.total()); }
const HaloSendPlan& HaloExchange::send_plan() const noexcept { return state_->send; }
const std::vector<std::int32_t>& HaloExchange::recv_offsets() const noexcept { return state_->recv_offsets; }
bool HaloExchange::moves_data() const noexcept { return state_->send.total() > 0 || state_->halo_rows > 0; }
std::int64_t HaloExchange::device_bytes() const noexcept { return std::int64_t(state_->send_rows.bytes()); }

// --- plans

struct HaloExchangePlan::Impl {
  const HaloExchange::State* pattern = nullptr;
  std::int32_t n = 0;
  HaloElement element = HaloElement::f16;
  int element_bytes = 2;
  std::int64_t ld = 0;
  detail::DeviceBuffer<unsigned char> send_buffer, halo_buffer;
  // The exchange's stream has the device's highest priority: its pack and NCCL kernels are launched before the
  // caller's local product but must also get SMs while that product's many blocks wait to be scheduled. At equal
  // priority they were served after it (two H200s, 151M-nonzero mesh, n = 32: 28 us of the 36 us exchange
  // exposed).
  OwnedStream comm_stream = make_stream(/*highest_priority=*/true);
  OwnedEvent b_ready = make_event(false), halo_ready = make_event(false);
};

HaloExchangePlan::HaloExchangePlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HaloExchangePlan::HaloExchangePlan(HaloExchangePlan&&) noexcept = default;
HaloExchangePlan& HaloExchangePlan::operator=(HaloExchangePlan&&) noexcept = default;
HaloExchangePlan::~HaloExchangePlan() = default;

HaloExchangePlan HaloExchange::make_plan(std::int32_t n, HaloElement element) const {
  if (n < 1) throw InvalidArgument("HaloExchange::make_plan: n = " + std::to_string(n) + ", needs n >= 1");
  const State& s = *state_;
  auto p = std::make_unique<HaloExchangePlan::Impl>();
  p->pattern = &s;
  p->n = n;
  p->element = element;
  p->element_bytes = halo_element_bytes(element);
  p->ld = (std::int64_t(n) + 7) / 8 * 8;
  // Padding columns are zero (never read as data, but defined for the copies and for initcheck).
  const std::size_t send_bytes = at(s.send.total() * p->ld * p->element_bytes);
  const std::size_t halo_bytes = at(std::int64_t(s.halo_rows) * p->ld * p->element_bytes);
  p->send_buffer = detail::DeviceBuffer<unsigned char>(send_bytes);
  p->halo_buffer = detail::DeviceBuffer<unsigned char>(halo_bytes);
  if (send_bytes) BCSR24_CUDA_CHECK(cudaMemset(p->send_buffer.get(), 0, send_bytes));
  if (halo_bytes) BCSR24_CUDA_CHECK(cudaMemset(p->halo_buffer.get(), 0, halo_bytes));
  // The exchange runs on its own non-blocking stream, which is not ordered after these legacy-stream memsets.
  detail::wait_for_device_writes();
  return HaloExchangePlan(std::move(p));
}

void HaloExchangePlan::start(const void* b, std::int64_t ldb, Stream stream) const {
  const Impl& p = *impl_;
  const HaloExchange::State& s = *p.pattern;
  if (ldb < p.n)
    throw InvalidArgument("HaloExchangePlan::start: ldb " + std::to_string(ldb) + " must be >= n = " +
                          std::to_string(p.n));
  if (s.send.total() > 0 && !b)
    throw InvalidArgument("HaloExchangePlan::start: B is null on rank " + std::to_string(s.comm.rank) +
                          ", which sends rows");
  if (s.send.total() == 0 && s.halo_rows == 0) return;
  int device = -1;
  BCSR24_CUDA_CHECK(cudaGetDevice(&device));
  if (device != s.device)
    throw InvalidArgument("HaloExchangePlan::start: the exchange lives on CUDA device " + std::to_string(s.device) +
                          ", device " + std::to_string(device) + " is current");
  // The exchange waits only for what `stream` did before (B written), then runs beside the caller's work.
  BCSR24_CUDA_CHECK(cudaEventRecord(p.b_ready.get(), stream));
  BCSR24_CUDA_CHECK(cudaStreamWaitEvent(p.comm_stream.get(), p.b_ready.get(), 0));
  kernels::launch_pack_rows(b, ldb, s.send_rows.get(), static_cast<std::int32_t>(s.send.total()), p.n,
                            p.send_buffer.get(), p.ld, p.element_bytes, p.comm_stream.get());
  const ncclDataType_t type = nccl_type(p.element);
  BCSR24_NCCL_CHECK(ncclGroupStart());
  for (int q = 0; q < s.comm.size; ++q) {
    const std::int64_t send_count = s.send.send_count(q);
    const std::int64_t recv_count = s.recv_offsets[at(q) + 1] - s.recv_offsets[at(q)];
    if (send_count > 0)
      BCSR24_NCCL_CHECK(ncclSend(p.send_buffer.get() + s.send.send_offsets[at(q)] * p.ld * p.element_bytes,
                                 at(send_count * p.ld), type, q, s.comm.comm, p.comm_stream.get()));
    if (recv_count > 0)
      BCSR24_NCCL_CHECK(ncclRecv(p.halo_buffer.get() + s.recv_offsets[at(q)] * p.ld * p.element_bytes,
                                 at(recv_count * p.ld), type, q, s.comm.comm, p.comm_stream.get()));
  }
  BCSR24_NCCL_CHECK(ncclGroupEnd());
  BCSR24_CUDA_CHECK(cudaEventRecord(p.halo_ready.get(), p.comm_stream.get()));
}

void HaloExchangePlan::wait(Stream stream) const {
  const HaloExchange::State& s = *impl_->pattern;
  if (s.send.total() == 0 && s.halo_rows == 0) return;
  BCSR24_CUDA_CHECK(cudaStreamWaitEvent(stream, impl_->halo_ready.get(), 0));
}

const void* HaloExchangePlan::halo() const noexcept { return impl_->halo_buffer.get(); }
std::int64_t HaloExchangePlan::ld() const noexcept { return impl_->ld; }
std::int32_t HaloExchangePlan::n() const noexcept { return impl_->n; }
HaloElement HaloExchangePlan::element() const noexcept { return impl_->element; }
std::int64_t HaloExchangePlan::bytes_sent() const noexcept {
  return impl_->pattern->send.total() * impl_->ld * impl_->element_bytes;
}
std::int64_t HaloExchangePlan::bytes_received() const noexcept {
  return std::int64_t(impl_->pattern->halo_rows) * impl_->ld * impl_->element_bytes;
}
std::int64_t HaloExchangePlan::device_bytes() const noexcept {
  return std::int64_t(impl_->send_buffer.bytes() + impl_->halo_buffer.bytes());
}

}  // namespace detail

}  // namespace bcsr24
