// RankLink over NCCL: sums by ncclAllReduce on the space's stream, the fp64 product as the local part's CSR product
// while the library's HaloExchange (distributed/halo_exchange.hpp) moves the halo rows, then the halo part's; the
// inner product through the rank's DistributedPlan (its own exchange overlapped the same way).
#include "nccl_rank_link.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>
#include <utility>

#include "bcsr24/distributed_operator.hpp"
#include "bcsr24/error.hpp"
#include "block_space_kernels.hpp"
#include "distributed/halo_exchange.hpp"
#include "distributed/halo_plan.hpp"
#include "gpu_support.hpp"

namespace bcsr24::solver {

namespace {

using namespace device;  // gpu_support.hpp
using bcsr24::detail::HaloElement;
using bcsr24::detail::HaloExchange;
using bcsr24::detail::HaloExchangePlan;
using bcsr24::detail::RankBlock;

void nccl_ok(ncclResult_t status, const char* call) {
  if (status != ncclSuccess) throw CudaError(std::string(call) + " failed: " + ncclGetErrorString(status));
}

cudaStream_t cuda(Stream stream) { return reinterpret_cast<cudaStream_t>(stream); }

block_gpu::CsrArrays arrays(const DeviceCsrArrays& a, std::int32_t rows) {
  return {a.row_ptr.get(), a.col_idx.get(), a.values64.get(), rows};
}

/// c = alpha A_rank b + beta c: the exchange of b's halo rows starts first and runs on its own stream while the
/// local part multiplies; the halo rows are then packed to the block's width for the halo part (beta = 1).
class DistributedCsrProduct final : public ForeignProduct {
 public:
  DistributedCsrProduct(const RankBlock& block, const HaloExchange& exchange, int width, Stream stream)
      : rows_(block.local.rows),
        halo_rows_(block.halo_cols()),
        width_(width),
        stream_(cuda(stream)),
        local_(block.local, false),
        halo_(block.halo, false),
        plan_(exchange.make_plan(width, HaloElement::f64)),
        packed_(std::size_t(halo_rows_) * std::size_t(width)) {}

  void run(const void* b, void* c, double alpha, double beta) override {
    const double* bb = static_cast<const double*>(b);
    double* cc = static_cast<double*>(c);
    plan_.start(bb, width_, reinterpret_cast<Stream>(stream_));
    block_gpu::csr_product(arrays(local_, rows_), bb, beta != 0.0 ? cc : nullptr, cc, width_, alpha, beta, nullptr,
                           nullptr, stream_);
    plan_.wait(reinterpret_cast<Stream>(stream_));
    if (halo_rows_ == 0) return;
    const std::size_t row_bytes = std::size_t(width_) * sizeof(double);
    CUDA_OK(cudaMemcpy2DAsync(packed_.get(), row_bytes, plan_.halo(), std::size_t(plan_.ld()) * sizeof(double),
                              row_bytes, std::size_t(halo_rows_), cudaMemcpyDeviceToDevice, stream_));
    block_gpu::csr_product(arrays(halo_, rows_), packed_.get(), cc, cc, width_, alpha, 1.0, nullptr, nullptr,
                           stream_);
  }
  std::int64_t bytes() const override {
    return std::int64_t(local_.row_ptr.bytes() + local_.col_idx.bytes() + local_.values64.bytes() +
                        halo_.row_ptr.bytes() + halo_.col_idx.bytes() + halo_.values64.bytes() + packed_.bytes()) +
           plan_.device_bytes();
  }

 private:
  std::int32_t rows_ = 0, halo_rows_ = 0;
  int width_ = 0;
  cudaStream_t stream_ = nullptr;
  DeviceCsrArrays local_, halo_;
  HaloExchangePlan plan_;
  DeviceArray<double> packed_;
};

/// The inner operator's share on this rank: fp32 blocks through its DistributedPlan.
class DistributedInnerProduct final : public ForeignProduct {
 public:
  DistributedInnerProduct(const DistributedOperator& op, int width, Stream stream)
      : width_(width), stream_(stream), plan_(op.make_plan(width, options())) {}

  void run(const void* b, void* c, double alpha, double beta) override {
    plan_.run(static_cast<const float*>(b), width_, static_cast<float*>(c), width_, static_cast<float>(alpha),
              static_cast<float>(beta), stream_);
  }
  bool takes_addends() const override { return true; }
  void run_with_addends(const void* b, void* c, double alpha, double beta, const OutputAddend* addends,
                        int count) override {
    plan_.run(static_cast<const float*>(b), width_, static_cast<float*>(c), width_, static_cast<float>(alpha),
              static_cast<float>(beta), addends, count, stream_);
  }
  std::int64_t bytes() const override { return plan_.device_bytes(); }

 private:
  static PlanOptions options() {
    PlanOptions o;
    o.input = ElementType::f32;
    o.output = ElementType::f32;
    o.allow_unaligned_b = false;  // the space's fp32 blocks start 256-byte aligned with rows of a multiple of 8
    return o;
  }
  int width_ = 0;
  Stream stream_ = nullptr;
  DistributedPlan plan_;
};

class NcclRankLink final : public RankLink {
 public:
  NcclRankLink(const CsrMatrix& rows_of_rank, const RowPartition& rows, const std::vector<std::int32_t>& order,
               const NcclCommunicator& comm)
      : comm_(comm),
        block_(bcsr24::detail::split_rank_rows(rows_of_rank, comm.rank, rows, rows)),
        exchange_(block_, rows, comm) {
    const std::int32_t begin = rows.begin(comm.rank), count = rows.count(comm.rank);
    if (!order.empty() && order.size() != std::size_t(rows.size()))
      throw InvalidArgument("distributed solver: the row order has " + std::to_string(order.size()) +
                            " entries for " + std::to_string(rows.size()) + " rows");
    caller_rows_.resize(std::size_t(count));
    for (std::int32_t i = 0; i < count; ++i)
      caller_rows_[std::size_t(i)] = order.empty() ? begin + i : order[std::size_t(begin + i)];
  }

  int rank() const override { return comm_.rank; }
  int ranks() const override { return comm_.size; }
  std::int32_t rows() const override { return block_.local.rows; }
  const std::vector<std::int32_t>& caller_rows() const override { return caller_rows_; }
  const CsrMatrix& local_part() const override { return block_.local; }

  void sum(double* device, std::int64_t count, Stream stream) override {
    if (comm_.size == 1 || count == 0) return;
    nccl_ok(ncclAllReduce(device, device, std::size_t(count), ncclDouble, ncclSum, comm_.comm, cuda(stream)),
            "ncclAllReduce");
  }

  std::unique_ptr<ForeignProduct> outer_product(int width, Stream stream) override {
    return std::make_unique<DistributedCsrProduct>(block_, exchange_, width, stream);
  }

  std::unique_ptr<ForeignProduct> inner_product(const InnerMatrix& inner, int width, Stream stream) override {
    if (!inner.distributed) throw InvalidArgument("distributed solver: the inner matrix has no distributed operator");
    return std::make_unique<DistributedInnerProduct>(*inner.distributed, width, stream);
  }

 private:
  NcclCommunicator comm_;
  RankBlock block_;
  HaloExchange exchange_;
  std::vector<std::int32_t> caller_rows_;
};

}  // namespace

std::unique_ptr<RankLink> make_nccl_rank_link(const CsrMatrix& rows_of_rank, const RowPartition& rows,
                                              const std::vector<std::int32_t>& order, const NcclCommunicator& comm) {
  validate_partition(rows, rows.size(), "distributed solver: row partition");
  for (int r = 0; r < rows.ranks(); ++r)
    if (rows.count(r) == 0)
      throw InvalidArgument("distributed solver: rank " + std::to_string(r) + " of " + std::to_string(rows.ranks()) +
                            " owns no rows (" + std::to_string(rows.size()) +
                            " rows in all); use fewer ranks than rows, or a partition without empty ranks");
  return std::make_unique<NcclRankLink>(rows_of_rank, rows, order, comm);
}

}  // namespace bcsr24::solver
