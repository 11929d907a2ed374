// DeviceMatrix and SpmmPlan contracts: upload, argument checks, move semantics.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include "format/convert.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "device/device_matrix_impl.hpp"
#include "gpu/gpu_harness.hpp"

using namespace bcsr24;

namespace {
Bcsr24Matrix small_matrix() {
  XdYsSpec spec;
  spec.rows = 64;
  spec.cols = 96;
  spec.dense_percent = 25;
  spec.sparse24_percent = 25;
  return convert_to_bcsr24(generate_xdys(spec));
}
}  // namespace

TEST_CASE("DeviceMatrix uploads and reports its size", "[gpu][device]") {
  const Bcsr24Matrix host = small_matrix();
  DeviceMatrix with = test::upload_all(host);
  DeviceMatrix without(host, UploadOptions{});
  CHECK(with.rows() == 64);
  CHECK(with.cols() == 96);
  CHECK(with.device_bytes() >= without.device_bytes());
  // The lists the other kernels need are added later without moving what plans already use.
  const SpmmPlan before = test::make_plan(without, 8);
  const auto* tiles_before = without.impl().sparse24.values.get();
  without.add_csr_of_every_band(host);
  CHECK(without.impl().sparse24.values.get() == tiles_before);
  // The CSR rows of every band come beside the candidate bands' copy that plans made before still read.
  CHECK(without.device_bytes() - with.device_bytes() == without.impl().csr.bytes());
  CHECK_NOTHROW(test::make_plan(without, 8, KernelKind::csr_cuda_cores));
  DeviceMatrix moved(std::move(with));
  CHECK(moved.rows() == 64);
}

TEST_CASE("SpmmPlan rejects bad arguments before launching", "[gpu][device]") {
  const Bcsr24Matrix host = small_matrix();
  DeviceMatrix dev(host, UploadOptions{});
  CHECK_THROWS_AS(test::make_plan(dev, 0, KernelKind::split_pipelined), InvalidArgument);

  void* b = nullptr;
  void* c = nullptr;
  REQUIRE(cudaMalloc(&b, 96 * 16 * 2 + 16) == cudaSuccess);
  REQUIRE(cudaMalloc(&c, 64 * 16 * 4) == cudaSuccess);
  const auto* bp = static_cast<const fp16_t*>(b);
  SpmmPlan plan = test::make_plan(dev, 16, KernelKind::split_pipelined);
  CHECK_THROWS_AS(plan.run(bp, 8, c, 16, 1.f, 0.f), InvalidArgument);        // ldb < n
  CHECK_THROWS_AS(plan.run(bp, 16, c, 15, 1.f, 0.f), InvalidArgument);       // ldc < n
  CHECK_THROWS_AS(plan.run(static_cast<const fp16_t*>(nullptr), 16, c, 16, 1.f, 0.f), InvalidArgument);  // null B
  CHECK_NOTHROW(plan.run(bp, 16, c, 16, 1.f, 0.f));

  PlanOptions strict;
  strict.allow_unaligned_b = false;
  SpmmPlan strict_plan = test::make_plan(dev, 16, KernelKind::split_pipelined, strict);
  // Without allow_unaligned_b the plan keeps no staging copy of B: that buffer (cols x 16 fp16) is all that differs
  // (both plans hold the same work lists, e.g. the bands with entries that beta = 1 runs).
  CHECK(plan.workspace_bytes() - strict_plan.workspace_bytes() == std::int64_t(host.cols) * 16 * 2);
  CHECK_THROWS_AS(strict_plan.run(bp + 1, 16, c, 16, 1.f, 0.f), InvalidArgument);  // misaligned pointer
  CHECK_THROWS_AS(strict_plan.run(bp, 17, c, 16, 1.f, 0.f), InvalidArgument);      // ldb % 8 != 0
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  cudaFree(b);
  cudaFree(c);
}
