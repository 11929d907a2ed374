// cuSPARSE products for GpuBlockSpace's comparisons (cusparse_support.hpp).
#include "cusparse_support.hpp"

#include <utility>

namespace bcsr24::solver {

namespace {

using namespace device;

/// One handle for every product a factory makes, destroyed with the last of them.
struct SparseHandle {
  cusparseHandle_t handle = nullptr;
  SparseHandle() { CUSPARSE_OK(cusparseCreate(&handle)); }
  ~SparseHandle() { cusparseDestroy(handle); }
  SparseHandle(const SparseHandle&) = delete;
  SparseHandle& operator=(const SparseHandle&) = delete;
};

/// A's own device copy (in the request's precision) and the SpMM over it.
class CusparseForeignProduct final : public ForeignProduct {
 public:
  CusparseForeignProduct(std::shared_ptr<SparseHandle> handle, const ForeignProductRequest& r)
      : handle_(std::move(handle)), a_(*r.matrix, r.fp32), stream_(reinterpret_cast<cudaStream_t>(r.stream)),
        product_(handle_->handle, a_, r.matrix->rows, r.matrix->cols, r.width, r.width, r.width,
                 r.fp32 ? CUDA_R_32F : CUDA_R_64F, r.any_b, r.any_c) {}
  void run(const void* b, void* c, double alpha, double beta) override {
    CUSPARSE_OK(cusparseSetStream(handle_->handle, stream_));  // the handle is shared by spaces on other streams
    product_.run(b, c, alpha, beta);
  }
  std::int64_t bytes() const override { return std::int64_t(a_.bytes() + product_.bytes()); }

 private:
  std::shared_ptr<SparseHandle> handle_;
  DeviceCsr a_;
  cudaStream_t stream_;
  CusparseProduct product_;
};

}  // namespace

ForeignProducts cusparse_products() {
  // The handle is made by the first product asked for: a factory that is never used (a CPU run, a run without the
  // comparisons) touches no CUDA context.
  auto handle = std::make_shared<std::shared_ptr<SparseHandle>>();
  return [handle](const ForeignProductRequest& request) -> std::unique_ptr<ForeignProduct> {
    if (!*handle) *handle = std::make_shared<SparseHandle>();
    return std::make_unique<CusparseForeignProduct>(*handle, request);
  };
}

}  // namespace bcsr24::solver
