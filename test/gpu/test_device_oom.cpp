// Device out of memory (white-box: the allocation hooks of device/device_memory.hpp). Every device allocation of
// an upload and of plan creation (each kernel kind, the lists the dense and CSR kinds add on their first plan,
// split bands, staged 16-bit and fp32 B) is made to fail in turn; each failure must be the typed OutOfMemory
// naming what and how much, leave nothing allocated (live allocations and free device memory back to their values
// before), and leave the operator and its other plans usable (a product after the failure, bit-identical). The
// up-front checks refuse an upload larger than what is free before allocating anything; a measured plan (the
// default) whose scratch or candidate does not fit falls back to the cost model's plan. A hidden test ([.hog],
// its own CTest entry) does that against really full device memory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24_experimental/plan_knobs.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "cuda_memory.hpp"
#include "device/device_memory.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using bcsr24::test::cuda_ok;
using bcsr24::test::DeviceBytes;

namespace {

/// Clears the failure hooks however a test section ends.
struct HookReset {
  ~HookReset() {
    detail::fail_device_allocation_at(0);
    detail::set_device_allocation_budget(-1);
  }
};

/// compute-sanitizer loads itself through CUDA_INJECTION64_PATH and allocates device memory of its own as the
/// program allocates, so free device memory is compared only without it; the live-allocation count (and the
/// sanitizer's own --leak-check) stand in there.
bool under_sanitizer() { return std::getenv("CUDA_INJECTION64_PATH") != nullptr; }

/// Free device memory and the allocations bcsr24 holds, after the device is idle.
struct MemoryState {
  std::int64_t free_bytes = 0, live = 0;
};
MemoryState memory_state() {
  cuda_ok(cudaDeviceSynchronize(), "synchronize");
  std::size_t free_bytes = 0, total = 0;
  cuda_ok(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  return {static_cast<std::int64_t>(free_bytes), detail::live_device_allocations()};
}

/// Nothing leaked since `before`: the same bcsr24 allocations live and at least as much device memory free.
void require_no_leak(const MemoryState& before, const char* when) {
  const MemoryState now = memory_state();
  INFO(when << ": live allocations " << before.live << " -> " << now.live << ", free device memory "
            << before.free_bytes << " -> " << now.free_bytes << " bytes");
  REQUIRE(now.live == before.live);
  if (!under_sanitizer()) REQUIRE(now.free_bytes >= before.free_bytes);
}

/// An OutOfMemory that says what ran out and how much was asked for.
void require_worded(const OutOfMemory& e, const std::string& what) {
  const std::string text = e.what();
  INFO(text);
  CHECK(text.find(what) != std::string::npos);
  CHECK(text.find("out of device memory") != std::string::npos);
  CHECK((text.find("bytes") != std::string::npos || text.find("iB") != std::string::npos));
}

/// `operation` must throw OutOfMemory (worded as require_worded checks); `returned` is the failure if it does not.
template <class Operation>
void require_out_of_memory(Operation&& operation, const char* returned, const std::string& what) {
  try {
    operation();
    FAIL(returned);
  } catch (const OutOfMemory& e) {
    require_worded(e, what);
  }
}

/// Device buffers for every product of these tests (made once, before any baseline is measured).
struct ProductBuffers {
  static constexpr std::size_t kBytes = 16u << 20;
  DeviceBytes b{kBytes}, c{kBytes};
};

/// C = 1.5 A B - 0.5 C0 with seeded B and C0, returned byte for byte; B and C of the types the plan takes.
std::vector<unsigned char> product(const SparseOperator& op, const SpmmPlan& plan, ProductBuffers& buffers) {
  const std::int32_t n = plan.n();
  const bool f32_b = plan.input() == ElementType::f32;
  // B's rows 16 bytes apart at least, as a plan made without allow_unaligned_b requires (padding columns zero).
  const std::int64_t ldb = (std::int64_t(n) + 7) / 8 * 8;
  const std::size_t b_count = std::size_t(op.cols()) * std::size_t(ldb), c_count = std::size_t(op.rows()) * std::size_t(n);
  REQUIRE(b_count * 4 <= ProductBuffers::kBytes);
  REQUIRE(c_count * 4 <= ProductBuffers::kBytes);
  std::mt19937_64 rng(97);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<float> b32(b_count);
  std::vector<fp16_t> b16(b_count);
  for (std::size_t i = 0; i < b_count; ++i) {
    b32[i] = std::int64_t(i % std::size_t(ldb)) < n ? float(dist(rng)) : 0.0f;
    b16[i] = op.precision() == Precision::bf16 ? double_to_bf16(b32[i]) : float_to_fp16(b32[i]);
  }
  const bool f16_c = plan.output() == ElementType::f16;
  std::vector<float> c0(c_count);
  std::vector<fp16_t> c0_16(c_count);
  for (std::size_t i = 0; i < c_count; ++i) {
    c0[i] = float(dist(rng));
    c0_16[i] = float_to_fp16(c0[i]);
  }
  cuda_ok(cudaMemcpy(buffers.b.ptr, f32_b ? static_cast<const void*>(b32.data()) : b16.data(), b_count * (f32_b ? 4 : 2),
                     cudaMemcpyHostToDevice), "copy B");
  cuda_ok(cudaMemcpy(buffers.c.ptr, f16_c ? static_cast<const void*>(c0_16.data()) : c0.data(), c_count * (f16_c ? 2 : 4),
                     cudaMemcpyHostToDevice), "copy C");
  if (f32_b)
    plan.run(static_cast<const float*>(buffers.b.ptr), ldb, static_cast<float*>(buffers.c.ptr), n, 1.5f, -0.5f);
  else
    plan.run(static_cast<const fp16_t*>(buffers.b.ptr), ldb, buffers.c.ptr, n, 1.5f, -0.5f);
  std::vector<unsigned char> out(c_count * (f16_c ? 2 : 4));
  cuda_ok(cudaMemcpy(out.data(), buffers.c.ptr, out.size(), cudaMemcpyDeviceToHost), "copy C back");
  return out;
}

/// A matrix whose upload makes every kind of list: a long band (split over blocks by tile plans), scattered rows
/// that the cost model may put on CSR, empty bands and, with per-row scaling, row exponents.
CsrMatrix mixed_matrix(std::uint64_t seed) {
  const std::int32_t rows = 300, cols = 2300;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  test::Triplets t;
  // The long band's rows are of different scales: per-row exponents.
  for (std::int32_t r = 0; r < 16; ++r)
    for (std::int32_t c = 0; c < cols; ++c)
      if ((c + r) % 3 != 0) t.add(r, c, value(rng) * (r + 1) * 1000.0);
  for (std::int32_t r = 16; r < rows; ++r) {
    if (r >= 64 && r < 96) continue;
    for (int e = 0; e < 5; ++e) {
      const auto c = static_cast<std::int32_t>(rng() % cols);
      t.add(r, c, value(rng));
    }
  }
  return t.csr(rows, cols);
}

struct Source {
  const char* name;
  OperatorOptions options;
};

std::vector<Source> sources() {
  std::vector<Source> out;
  OperatorOptions aligned;
  aligned.layout = TileLayout::aligned;
  aligned.reorder = Reordering::rcm;  // rows reordered: a row map besides the tile lists
  out.push_back({"fp16 aligned rcm", aligned});
  OperatorOptions condensed;
  condensed.layout = TileLayout::condensed;
  condensed.precision = Precision::split;  // low parts of every list, B-row indices per tile
  out.push_back({"split condensed", condensed});
  OperatorOptions bf16;
  bf16.precision = Precision::bf16;
  bf16.scaling = ScalingPolicy::automatic;
  out.push_back({"bf16 default layout", bf16});
  return out;
}

/// `options` with the cost model's plan: its allocations are the same on every call, and twins of one operator
/// make the same plan (a measured plan keeps whichever candidate ran fastest; its failures have their own test).
PlanOptions model_plan(PlanOptions options = {}) {
  options.tuning = Tuning::model;
  return options;
}

/// The device allocations `action` makes (device_allocate calls).
template <typename Action>
std::int64_t allocations_of(Action&& action) {
  const std::int64_t before = detail::device_allocation_calls();
  action();
  return detail::device_allocation_calls() - before;
}

}  // namespace

TEST_CASE("every allocation of an upload fails in turn: OutOfMemory, nothing leaked, the rest usable", "[gpu][oom]") {
  HookReset reset;
  ProductBuffers buffers;
  const CsrMatrix a = mixed_matrix(test::test_seed(3511));
  // Another operator with a plan, which every failure must leave alone.
  const SparseOperator other = SparseOperator::from_csr(test::xdys_matrix(200, 300, 10, 10, 5));
  const SpmmPlan other_plan = other.make_plan(24);
  const std::vector<unsigned char> other_bits = product(other, other_plan, buffers);
  for (const Source& source : sources()) {
    INFO(source.name);
    std::vector<unsigned char> expected;
    std::int64_t uploads = 0;
    {  // Warm-up (kernels loaded, the driver's pools grown) and the count of allocations of one upload.
      const SparseOperator twin = SparseOperator::from_csr(a, source.options);
      uploads = allocations_of([&] { twin.upload(); });
      expected = product(twin, twin.make_plan(40, KernelKind::automatic, model_plan()), buffers);
    }
    INFO(uploads << " allocations per upload");
    REQUIRE(uploads >= 5);
    const MemoryState before = memory_state();
    const SparseOperator op = SparseOperator::from_csr(a, source.options);
    for (std::int64_t k = 1; k <= uploads; ++k) {
      INFO("allocation " << k << " fails");
      detail::fail_device_allocation_at(k);
      require_out_of_memory([&] { op.upload(); }, "the upload did not fail", "SparseOperator::upload");
      detail::fail_device_allocation_at(0);
      CHECK_FALSE(op.uploaded());
      CHECK(op.device_bytes() == 0);
      require_no_leak(before, "after a failed upload");
      CHECK(product(other, other_plan, buffers) == other_bits);
    }
    // The same operator uploads once the memory is there, and multiplies as its twin did.
    op.upload();
    CHECK(product(op, op.make_plan(40, KernelKind::automatic, model_plan()), buffers) == expected);
  }
}

TEST_CASE("every allocation of plan creation fails in turn: OutOfMemory, nothing leaked, other plans usable",
          "[gpu][oom]") {
  HookReset reset;
  ProductBuffers buffers;
  const CsrMatrix a = mixed_matrix(test::test_seed(3512));
  struct PlanCase {
    const char* name;
    std::int32_t n;
    KernelKind kernel;
    PlanOptions options;
  };
  PlanOptions f32_b = model_plan(), strict = model_plan(), f16_out = model_plan();
  f32_b.input = ElementType::f32;  // fp32 B staged on unaligned input: the fp32 workspace
  strict.allow_unaligned_b = false;
  f16_out.output = ElementType::f16;
  const std::vector<PlanCase> cases = {
      {"automatic n 8", 8, KernelKind::automatic, model_plan()},
      {"automatic n 130 fp32 B", 130, KernelKind::automatic, f32_b},
      {"split_pipelined n 37 (split bands)", 37, KernelKind::split_pipelined, model_plan()},
      {"split_pipelined n 5 without workspace", 5, KernelKind::split_pipelined, strict},
      {"csr_cuda_cores n 64 (adds every band's CSR rows)", 64, KernelKind::csr_cuda_cores, model_plan()},
      {"split_pipelined n 16 fp16 C", 16, KernelKind::split_pipelined, f16_out},
      {"split_pipelined n 200", 200, KernelKind::split_pipelined, model_plan()},
  };
  const OperatorOptions options;  // fp16, automatic layout and order
  for (const PlanCase& c : cases) {
    INFO(c.name);
    std::vector<unsigned char> expected;
    std::int64_t allocations = 0;
    {  // Warm-up and count on a fresh operator: its first plan of this kind includes the lists the kind adds.
      const SparseOperator twin = SparseOperator::from_csr(a, options);
      twin.upload();
      const SpmmPlan automatic = twin.make_plan(8);
      allocations = allocations_of([&] { expected = product(twin, twin.make_plan(c.n, c.kernel, c.options), buffers); });
      (void)product(twin, automatic, buffers);
    }
    INFO(allocations << " allocations");
    REQUIRE(allocations >= 1);
    const MemoryState before = memory_state();
    for (std::int64_t k = 1; k <= allocations; ++k) {
      INFO("allocation " << k << " fails");
      {
        const SparseOperator op = SparseOperator::from_csr(a, options);
        op.upload();
        const SpmmPlan automatic = op.make_plan(8);  // a plan made before, which the failure must leave usable
        const std::vector<unsigned char> automatic_bits = product(op, automatic, buffers);
        detail::fail_device_allocation_at(k);
        require_out_of_memory([&] { (void)op.make_plan(c.n, c.kernel, c.options); }, "make_plan did not fail",
                              "SparseOperator::");
        detail::fail_device_allocation_at(0);
        CHECK(product(op, automatic, buffers) == automatic_bits);
        // Made again, the plan multiplies as on the twin.
        CHECK(product(op, op.make_plan(c.n, c.kernel, c.options), buffers) == expected);
      }
      require_no_leak(before, "after the operator of a failed plan is gone");
    }
  }
}

TEST_CASE("automatic plans at n = 1 add the CSR rows of every band; a failed allocation of them leaves the plan "
          "without them", "[gpu][oom]") {
  HookReset reset;
  ProductBuffers buffers;
  // Bands of dense 64-column blocks (tiles at every width: no CSR candidate copy) over scattered rows (candidates).
  std::mt19937_64 rng(test::test_seed(3516));
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  test::Triplets t;
  for (std::int32_t r = 0; r < 256; ++r)
    for (std::int32_t c = r / 64 * 64; c < r / 64 * 64 + 64; c += 2) t.add(r, c + (r % 2), value(rng));
  for (std::int32_t r = 256; r < 300; ++r)
    for (int e = 0; e < 5; ++e) t.add(r, static_cast<std::int32_t>(rng() % 2300), value(rng));
  const CsrMatrix a = t.csr(300, 2300);
  const OperatorOptions options;
  std::vector<unsigned char> expected;
  std::int64_t allocations = 0, copy_bytes = 0;
  {  // Warm-up and count on a fresh operator.
    const SparseOperator twin = SparseOperator::from_csr(a, options);
    twin.upload();
    (void)product(twin, twin.make_plan(8), buffers);
    const std::int64_t bytes = twin.device_bytes();
    allocations = allocations_of(
        [&] { expected = product(twin, twin.make_plan(1, KernelKind::automatic, model_plan()), buffers); });
    copy_bytes = twin.device_bytes() - bytes;
    // The copy is made once: a second plan at n = 1 finds it.
    CHECK(allocations_of([&] { (void)twin.make_plan(1, KernelKind::automatic, model_plan()); }) < allocations);
    CHECK(twin.device_bytes() == bytes + copy_bytes);
  }
  INFO(allocations << " allocations, the copy of every band " << copy_bytes << " bytes");
  REQUIRE(copy_bytes > 0);
  const MemoryState before = memory_state();
  int made_without_copy = 0, refused = 0;
  for (std::int64_t k = 1; k <= allocations; ++k) {
    INFO("allocation " << k << " fails");
    {
      const SparseOperator op = SparseOperator::from_csr(a, options);
      op.upload();
      const std::int64_t bytes = op.device_bytes();
      detail::fail_device_allocation_at(k);
      try {
        const SpmmPlan plan = op.make_plan(1, KernelKind::automatic, model_plan());
        detail::fail_device_allocation_at(0);
        // The copy's allocation failed: the plan runs on the candidates' copy and tiles, as before n = 1 had one.
        CHECK(op.device_bytes() == bytes);
        CHECK(plan.report().tile_bands > 0);
        CHECK(product(op, plan, buffers).size() == expected.size());
        ++made_without_copy;
      } catch (const OutOfMemory& e) {  // the plan's own allocation failed
        require_worded(e, "SparseOperator::");
        ++refused;
      }
      detail::fail_device_allocation_at(0);
      // Made again, the plan has the copy and multiplies as on the twin.
      CHECK(product(op, op.make_plan(1, KernelKind::automatic, model_plan()), buffers) == expected);
      CHECK(op.device_bytes() == bytes + copy_bytes);
    }
    require_no_leak(before, "after the operator is gone");
  }
  INFO(made_without_copy << " plans made without the copy, " << refused << " refused");
  CHECK(made_without_copy >= 1);
  CHECK(made_without_copy + refused == allocations);
}

TEST_CASE("every allocation of a measured plan fails in turn: the model's plan or OutOfMemory, nothing leaked",
          "[gpu][oom][tuner]") {
  HookReset reset;
  ProductBuffers buffers;
  const CsrMatrix a = mixed_matrix(test::test_seed(3514));
  PlanOptions measured;
  measured.input = ElementType::f32;  // unaligned fp32 B: candidates built without the workspace, the winner with it
  for (const std::int32_t n : {8, 130}) {
    INFO("n = " << n);
    std::vector<unsigned char> model_bits;
    std::int64_t allocations = 0;
    {  // Warm-up, the model's product and the count of one measured plan's allocations on a fresh operator.
      const SparseOperator twin = SparseOperator::from_csr(a);
      twin.upload();
      model_bits = product(twin, twin.make_plan(n, KernelKind::automatic, model_plan(measured)), buffers);
      allocations = allocations_of([&] { (void)twin.make_plan(n, KernelKind::automatic, measured); });
    }
    INFO(allocations << " allocations");
    REQUIRE(allocations >= 1);
    const MemoryState before = memory_state();
    std::int64_t refused_candidates = 0;  // failures the tuner answered with the model's plan
    for (std::int64_t k = 1; k <= allocations; ++k) {
      INFO("allocation " << k << " fails");
      {
        const SparseOperator op = SparseOperator::from_csr(a);
        op.upload();
        detail::fail_device_allocation_at(k);
        // A candidate or the scratch that does not fit leaves the model's plan; a failure in the plan kept is
        // the plan's OutOfMemory.
        try {
          const SpmmPlan plan = op.make_plan(n, KernelKind::automatic, measured);
          detail::fail_device_allocation_at(0);
          const PlanReport& report = plan.report();
          INFO(report.tuning_reason);
          if (report.tuning == Tuning::model) {
            // The model's plan because a candidate did not fit, or because the tuning budget ran out before the
            // failing allocation was reached (a cold GPU's first launches load their kernels inside the budget).
            const bool did_not_fit = report.tuning_reason.find("do not fit") != std::string::npos;
            CHECK((did_not_fit || report.tuning_reason.find("budget") != std::string::npos));
            refused_candidates += did_not_fit ? 1 : 0;
            CHECK(product(op, plan, buffers) == model_bits);
          }
        } catch (const OutOfMemory& e) {
          detail::fail_device_allocation_at(0);
          require_worded(e, "SparseOperator::make_plan");
        }
      }
      require_no_leak(before, "after the operator of a measured plan is gone");
    }
    CHECK(refused_candidates > 0);  // the path this test is for was taken at least once
  }
}

TEST_CASE("uploads and plans beyond the memory budget are refused before allocating", "[gpu][oom]") {
  HookReset reset;
  ProductBuffers buffers;
  const CsrMatrix a = mixed_matrix(test::test_seed(3513));
  {  // warm-up
    const SparseOperator twin = SparseOperator::from_csr(a);
    (void)product(twin, twin.make_plan(16), buffers);
  }
  const MemoryState before = memory_state();
  const SparseOperator op = SparseOperator::from_csr(a);
  const std::int64_t list_bytes = op.census().total_bytes();
  detail::set_device_allocation_budget(list_bytes / 2);
  const std::int64_t calls = detail::device_allocation_calls();
  try {
    op.upload();
    FAIL("the upload was not refused");
  } catch (const OutOfMemory& e) {
    require_worded(e, "the tile lists and CSR rows of the matrix need");
    CHECK(std::string(e.what()).find("test budget") != std::string::npos);
  }
  CHECK(detail::device_allocation_calls() == calls);  // refused before the first allocation
  CHECK_FALSE(op.uploaded());
  require_no_leak(before, "after a refused upload");
  // A plan's workspace beyond the budget (cols x 256 fp32 values of staged B): refused, the operator usable.
  detail::set_device_allocation_budget(-1);
  op.upload();
  const SpmmPlan small = op.make_plan(8);
  const std::vector<unsigned char> small_bits = product(op, small, buffers);
  PlanOptions f32_b;
  f32_b.input = ElementType::f32;
  const MemoryState uploaded = memory_state();
  detail::set_device_allocation_budget(std::int64_t(op.cols()) * 256 * 4 / 2);
  require_out_of_memory([&] { (void)op.make_plan(256, KernelKind::automatic, f32_b); }, "the plan was not refused",
                        "SparseOperator::make_plan (n = 256");
  detail::set_device_allocation_budget(-1);
  require_no_leak(uploaded, "after a refused plan");
  CHECK(product(op, small, buffers) == small_bits);
}

TEST_CASE("full device memory: an upload that does not fit is refused before allocating, a plan's failed cudaMalloc "
          "is OutOfMemory", "[gpu][oom][.hog]") {
  HookReset reset;
  ProductBuffers buffers;
  // 48 MiB of dense tiles, and a wide matrix whose n = 256 fp32-B plan stages 40,000 x 256 fp32 values (41 MB).
  XdYsSpec big_spec;
  big_spec.rows = 4096;
  big_spec.cols = 6144;
  big_spec.dense_percent = 100;
  const SparseOperator big = SparseOperator::from_csr(generate_xdys(big_spec));
  const SparseOperator wide = SparseOperator::from_csr(test::scattered_csr(64, 40000, 3, 7));
  const SpmmPlan wide_plan = wide.make_plan(8);
  const std::vector<unsigned char> wide_bits = product(wide, wide_plan, buffers);
  PlanOptions f32_b;
  f32_b.input = ElementType::f32;
  {  // warm-up of the fp32-B kernels
    const SparseOperator twin = SparseOperator::from_csr(test::scattered_csr(64, 4000, 3, 7));
    (void)product(twin, twin.make_plan(256, KernelKind::automatic, f32_b), buffers);
  }
  const std::int64_t keep = std::int64_t(16) << 20;  // what stays free: less than either request
  REQUIRE(big.census().total_bytes() > 2 * keep);
  REQUIRE(std::int64_t(wide.cols()) * 256 * 4 > keep);
  const MemoryState before = memory_state();
  std::vector<void*> hog;
  for (int attempt = 0; attempt < 64; ++attempt) {
    const std::int64_t free_now = memory_state().free_bytes;
    if (free_now <= keep + (std::int64_t(4) << 20)) break;
    std::size_t chunk = static_cast<std::size_t>(free_now - keep);
    void* p = nullptr;
    while (chunk > (std::size_t(2) << 20) && cudaMalloc(&p, chunk) != cudaSuccess) {
      cudaGetLastError();
      chunk /= 2;
    }
    if (p == nullptr) break;
    hog.push_back(p);
  }
  const std::int64_t left = memory_state().free_bytes;
  INFO("device memory left free: " << left << " bytes");
  CHECK(left < big.census().total_bytes());
  const std::int64_t calls = detail::device_allocation_calls();
  require_out_of_memory([&] { big.upload(); }, "the upload was not refused", "are free");
  CHECK(detail::device_allocation_calls() == calls);
  require_out_of_memory([&] { (void)wide.make_plan(256, KernelKind::automatic, f32_b); }, "the plan did not fail",
                        "cudaMalloc of");
  CHECK(product(wide, wide_plan, buffers) == wide_bits);
  for (void* p : hog) cudaFree(p);
  require_no_leak(before, "after the device was full");
  CHECK_NOTHROW(wide.make_plan(256, KernelKind::automatic, f32_b));
}
