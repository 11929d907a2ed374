// Operators shared by host threads (docs/API.md, "Threads and streams"): eight or more threads, each with its own
// plans and two streams of its own, run thousands of products on operators of every precision, starting before the
// operators are uploaded (the first uploads and the lists some kernels add race), and every result is compared bit
// for bit with a single-threaded run of the same plan configuration and inputs on a twin operator.
//
// BCSR24_CONCURRENCY_PRODUCTS (default 1000) sets the products per thread and BCSR24_CONCURRENCY_THREADS (default
// 8) the threads; the compute-sanitizer runs of scripts/gpu_check.sh use fewer products.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "cuda_memory.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using bcsr24::test::cuda_ok;
using bcsr24::test::DeviceBytes;
using bcsr24::test::PinnedBytes;

namespace {

int env_count(const char* name, int fallback) {
  const char* text = std::getenv(name);
  return text ? std::max(1, std::atoi(text)) : fallback;
}

/// Band 0: 16 rows with two of every three columns over all columns (79 tiles at 2,500 columns: split over
/// several blocks, since a band is split when it holds more than twice the fair share of at least 32 tiles);
/// row 20: 2,000 entries (a long CSR row); bands 6 and 7 empty (beta = 1 skips them); the rest a random graph of
/// degree 4.
CsrMatrix long_band_matrix(std::uint64_t seed) {
  const std::int32_t rows = 400, cols = 2500;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  test::Triplets t;
  auto add = [&](std::int32_t r, std::int32_t c) { t.add(r, c, value(rng)); };
  for (std::int32_t r = 0; r < 16; ++r)
    for (std::int32_t c = 0; c < cols; ++c)
      if ((c + r) % 3 != 0) add(r, c);
  for (int e = 0; e < 2000; ++e) add(20, static_cast<std::int32_t>(rng() % cols));
  for (std::int32_t r = 32; r < rows; ++r) {
    if (r >= 96 && r < 128) continue;
    for (int e = 0; e < 4; ++e) add(r, static_cast<std::int32_t>(rng() % cols));
  }
  return t.csr(rows, cols);
}

/// One shared operator: its source and options (the twin for the serial run is built from the same).
struct OperatorSource {
  std::string name;
  CsrMatrix a;
  OperatorOptions options;
};

std::vector<OperatorSource> operator_sources(std::uint64_t seed) {
  std::vector<OperatorSource> out;
  // 2:4 and dense tiles with scattered entries between them, 16-bit or fp32 B, every kernel.
  out.push_back({"fp16 XdYs 333 x 451", test::xdys_matrix(333, 451, 12, 12, seed + 1), {}});
  {
    OperatorOptions options;
    options.precision = Precision::bf16;
    out.push_back({"bf16 power-law graph 517", test::power_law_graph(517, 517, 6, seed + 2), options});
  }
  {
    MeshSpec spec;
    spec.nx = 6;
    spec.ny = 5;
    spec.nz = 6;
    spec.dofs_per_node = 2;
    spec.stencil = 7;
    spec.seed = seed + 3;
    OperatorOptions options;
    options.precision = Precision::split;
    out.push_back({"split mesh 6x5x6", generate_mesh_matrix(spec), options});
  }
  out.push_back({"fp16 long band 400 x 2500", long_band_matrix(seed + 4), {}});
  return out;
}

/// What fixes a plan, and one set of inputs for it.
struct PlanConfig {
  int op = 0;
  std::int32_t n = 1;
  KernelKind kernel = KernelKind::automatic;
  PlanOptions options;
};
struct Inputs {
  std::int64_t ldb = 0, ldc = 0, b_offset = 0;  // elements; b_offset > 0: B not 16-byte aligned
  float alpha = 1.0f, beta = 0.0f;
};

std::string describe(const std::vector<OperatorSource>& ops, const PlanConfig& p, const Inputs& in) {
  return ops[std::size_t(p.op)].name + ", n " + std::to_string(p.n) + ", " + kernel_name(p.kernel) + ", B " +
         (p.options.input == ElementType::f32 ? "fp32" : "16-bit") + ", C " +
         (p.options.output == ElementType::f16 ? "fp16" : "fp32") + ", ldb " + std::to_string(in.ldb) + " (+" +
         std::to_string(in.b_offset) + "), ldc " + std::to_string(in.ldc) + ", alpha " + std::to_string(in.alpha) +
         ", beta " + std::to_string(in.beta);
}

/// A plan configuration the operator's precision takes: every kernel kind, 16-bit and fp32 B, fp16 output where it
/// exists, B with and without the unaligned-B workspace.
PlanConfig random_plan(std::mt19937_64& rng, int op, Precision precision) {
  PlanConfig p;
  p.op = op;
  // n in 1..256: mostly anything, sometimes the narrow (SpMV-like) and the widest cases.
  switch (rng() % 6) {
    case 0: p.n = 1 + static_cast<std::int32_t>(rng() % 7); break;
    case 1: p.n = 249 + static_cast<std::int32_t>(rng() % 8); break;
    default: p.n = 1 + static_cast<std::int32_t>(rng() % 256); break;
  }
  const std::vector<KernelKind> kinds = {KernelKind::automatic, KernelKind::split_pipelined,
                                         KernelKind::csr_cuda_cores};
  p.kernel = kinds[rng() % kinds.size()];
  const bool f32_b = precision == Precision::split || rng() % 2 == 0;
  p.options.input = f32_b ? ElementType::f32 : ElementType::automatic;
  p.options.output = precision == Precision::fp16 && !f32_b && rng() % 3 == 0 ? ElementType::f16 : ElementType::f32;
  p.options.allow_unaligned_b = rng() % 4 != 0;
  // The cost model's plan: a measured plan (the default) keeps whichever candidate ran fastest, which may differ
  // between the serial run and threads sharing the GPU, and candidates round differently. The tuner's own
  // correctness is test_tuner.cpp's.
  p.options.tuning = Tuning::model;
  return p;
}

Inputs random_inputs(std::mt19937_64& rng, const PlanConfig& p) {
  Inputs in;
  const bool f32_b = p.options.input == ElementType::f32;
  const std::int64_t per_chunk = f32_b ? 4 : 8;  // elements per 16 bytes
  if (p.options.allow_unaligned_b) {
    in.ldb = p.n + static_cast<std::int64_t>(rng() % 6);
    in.b_offset = rng() % 3 == 0 ? 1 : 0;
  } else {
    in.ldb = (p.n + per_chunk - 1) / per_chunk * per_chunk + per_chunk * static_cast<std::int64_t>(rng() % 2);
  }
  in.ldc = p.n + static_cast<std::int64_t>(rng() % 4);
  const float alphas[] = {1.0f, 0.0f, -0.75f, 2.5f};
  const float betas[] = {0.0f, 1.0f, 0.5f, -1.25f};
  in.alpha = rng() % 5 == 0 ? float(std::ldexp(double(rng() % 1000) - 500.0, -7)) : alphas[rng() % 4];
  in.beta = rng() % 5 == 0 ? float(std::ldexp(double(rng() % 1000) - 500.0, -8)) : betas[rng() % 4];
  return in;
}

/// A plan configuration with its inputs on the device: B (cols x ldb past b_offset) and the initial C image
/// (rows x ldc; NaN where the product must not read it: everywhere when beta = 0, the padding columns always).
struct Job {
  PlanConfig plan;
  std::vector<Inputs> inputs;
  std::vector<std::unique_ptr<DeviceBytes>> b, c0;
  std::vector<std::vector<unsigned char>> expected;  // the serial run's C, byte for byte
  std::size_t c_bytes(std::size_t i, std::int32_t rows) const {
    return std::size_t(rows) * std::size_t(inputs[i].ldc) * (plan.options.output == ElementType::f16 ? 2 : 4);
  }
};

void upload_inputs(Job& job, const SparseOperator& op, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const bool f32_b = job.plan.options.input == ElementType::f32;
  const bool f16_c = job.plan.options.output == ElementType::f16;
  for (const Inputs& in : job.inputs) {
    const std::size_t b_count = std::size_t(in.b_offset + std::int64_t(op.cols()) * in.ldb);
    std::vector<unsigned char> b(b_count * (f32_b ? 4 : 2));
    for (std::size_t e = 0; e < b_count; ++e) {
      const double v = dist(rng);
      if (f32_b) {
        const float f = float(v);
        std::memcpy(b.data() + e * 4, &f, 4);
      } else {
        const fp16_t h = op.precision() == Precision::bf16 ? double_to_bf16(v) : double_to_fp16(v);
        std::memcpy(b.data() + e * 2, &h, 2);
      }
    }
    const std::size_t c_count = std::size_t(op.rows()) * std::size_t(in.ldc);
    std::vector<unsigned char> c(c_count * (f16_c ? 2 : 4));
    for (std::size_t e = 0; e < c_count; ++e) {
      const bool padding = std::int64_t(e % std::size_t(in.ldc)) >= job.plan.n;
      const float f = padding || in.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : float(dist(rng));
      if (f16_c) {
        const fp16_t h = float_to_fp16(f);
        std::memcpy(c.data() + e * 2, &h, 2);
      } else {
        std::memcpy(c.data() + e * 4, &f, 4);
      }
    }
    job.b.push_back(std::make_unique<DeviceBytes>(b.size()));
    job.c0.push_back(std::make_unique<DeviceBytes>(c.size()));
    cuda_ok(cudaMemcpy(job.b.back()->ptr, b.data(), b.size(), cudaMemcpyHostToDevice), "copy B");
    cuda_ok(cudaMemcpy(job.c0.back()->ptr, c.data(), c.size(), cudaMemcpyHostToDevice), "copy C");
  }
}

/// Enqueues one product of `plan` with input set `i` of `job` into C at `c` on `stream`.
void enqueue(const SpmmPlan& plan, const Job& job, std::size_t i, void* c, cudaStream_t stream) {
  const Inputs& in = job.inputs[i];
  if (job.plan.options.input == ElementType::f32) {
    const float* b = static_cast<const float*>(job.b[i]->ptr) + in.b_offset;
    plan.run(b, in.ldb, static_cast<float*>(c), in.ldc, in.alpha, in.beta, stream);
  } else {
    const fp16_t* b = static_cast<const fp16_t*>(job.b[i]->ptr) + in.b_offset;
    plan.run(b, in.ldb, c, in.ldc, in.alpha, in.beta, stream);
  }
}

/// What one thread saw.
struct ThreadResult {
  std::int64_t products = 0, compared = 0, mismatches = 0;
  std::string first_mismatch, error;
};

/// A gate that lets every thread start at once.
struct StartGate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
};

/// One thread's products: plans made on first use (the first upload and the added lists race with the other
/// threads' products), two streams of its own, three products in flight, a plan that moves between its streams
/// only after an event, and one plan destroyed and made again half way.
void run_thread(const std::vector<const SparseOperator*>& ops, std::vector<Job>& jobs, int products,
                std::uint64_t seed, StartGate& gate, ThreadResult& result) {
  try {
    std::mt19937_64 rng(seed);
    cudaStream_t streams[2] = {nullptr, nullptr};
    for (cudaStream_t& s : streams) cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    std::vector<std::optional<SpmmPlan>> plans(jobs.size());
    std::vector<cudaEvent_t> plan_done(jobs.size(), nullptr);  // the plan's last product (its runs never overlap)
    std::vector<int> plan_stream(jobs.size(), -1);
    for (cudaEvent_t& e : plan_done) cuda_ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
    std::size_t slot_bytes = 0;
    for (const Job& job : jobs)
      for (std::size_t i = 0; i < job.inputs.size(); ++i)
        slot_bytes = std::max(slot_bytes, job.c_bytes(i, ops[std::size_t(job.plan.op)]->rows()));
    struct Slot {
      std::unique_ptr<DeviceBytes> c;
      std::unique_ptr<PinnedBytes> host;
      cudaEvent_t done = nullptr;
      int job = -1;
      std::size_t input = 0;
    };
    std::vector<Slot> slots(3);
    for (Slot& slot : slots) {
      slot.c = std::make_unique<DeviceBytes>(slot_bytes);
      slot.host = std::make_unique<PinnedBytes>(slot_bytes);
      cuda_ok(cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming), "event");
    }
    auto check = [&](Slot& slot) {
      if (slot.job < 0) return;
      cuda_ok(cudaEventSynchronize(slot.done), "product");
      const Job& job = jobs[std::size_t(slot.job)];
      const std::vector<unsigned char>& want = job.expected[slot.input];
      ++result.compared;
      if (std::memcmp(want.data(), slot.host->ptr, want.size()) != 0) {
        ++result.mismatches;
        if (result.first_mismatch.empty()) {
          std::size_t byte = 0;
          while (static_cast<const unsigned char*>(slot.host->ptr)[byte] == want[byte]) ++byte;
          result.first_mismatch = "byte " + std::to_string(byte) + " of C differs: plan " + std::to_string(slot.job) +
                                  " input " + std::to_string(slot.input);
        }
      }
      slot.job = -1;
    };

    gate.wait();
    for (int p = 0; p < products; ++p) {
      Slot& slot = slots[std::size_t(p) % slots.size()];
      check(slot);
      const std::size_t j = std::size_t(rng() % jobs.size());
      const std::size_t i = std::size_t(rng() % jobs[j].inputs.size());
      const Job& job = jobs[j];
      const int s = static_cast<int>(rng() % 2);
      if (p == products / 2 && plans[0]) {  // destroy a plan once its products are done, and make it again
        cuda_ok(cudaEventSynchronize(plan_done[0]), "plan 0");
        plans[0].reset();
        plan_stream[0] = -1;
      }
      if (!plans[j]) {
        const PlanConfig& cfg = job.plan;
        plans[j].emplace(ops[std::size_t(cfg.op)]->make_plan(cfg.n, cfg.kernel, cfg.options));
      }
      // The plan's previous product may still run on the other stream: this stream waits for it first.
      if (plan_stream[j] >= 0 && plan_stream[j] != s) cuda_ok(cudaStreamWaitEvent(streams[s], plan_done[j], 0), "wait");
      const std::size_t bytes = job.c_bytes(i, ops[std::size_t(job.plan.op)]->rows());
      cuda_ok(cudaMemcpyAsync(slot.c->ptr, job.c0[i]->ptr, bytes, cudaMemcpyDeviceToDevice, streams[s]), "C0");
      enqueue(*plans[j], job, i, slot.c->ptr, streams[s]);
      cuda_ok(cudaMemcpyAsync(slot.host->ptr, slot.c->ptr, bytes, cudaMemcpyDeviceToHost, streams[s]), "C back");
      cuda_ok(cudaEventRecord(slot.done, streams[s]), "record");
      cuda_ok(cudaEventRecord(plan_done[j], streams[s]), "record");
      plan_stream[j] = s;
      slot.job = static_cast<int>(j);
      slot.input = i;
      ++result.products;
    }
    for (Slot& slot : slots) check(slot);
    for (Slot& slot : slots) cudaEventDestroy(slot.done);
    for (cudaEvent_t e : plan_done) cudaEventDestroy(e);
    plans.clear();
    for (cudaStream_t st : streams) cudaStreamDestroy(st);
  } catch (const std::exception& e) {
    result.error = e.what();
  }
}

}  // namespace

TEST_CASE("threads sharing operators: every product bit-identical to a single-threaded run", "[gpu][concurrency]") {
  const std::uint64_t seed = test::test_seed(3501);
  const int threads = std::max(env_count("BCSR24_CONCURRENCY_THREADS", 8), 2);
  const int products = env_count("BCSR24_CONCURRENCY_PRODUCTS", 1000);
  const int plans_per_thread = 6, inputs_per_plan = 3;
  INFO("seed " << seed << ", " << threads << " threads x " << products << " products");
  const std::vector<OperatorSource> sources = operator_sources(seed);
  const int ops = static_cast<int>(sources.size());

  // Every thread's plans and inputs, decided up front from the seed.
  std::vector<std::vector<Job>> jobs(static_cast<std::size_t>(threads));
  std::vector<SparseOperator> twins;
  for (const OperatorSource& s : sources) twins.push_back(SparseOperator::from_csr(s.a, s.options));
  for (int t = 0; t < threads; ++t) {
    std::mt19937_64 rng(seed * 1000003 + std::uint64_t(t));
    for (int j = 0; j < plans_per_thread; ++j) {
      Job job;
      // Each thread has a plan on every operator; its other plans are on random ones.
      const int op = j < ops ? j : static_cast<int>(rng() % std::uint64_t(ops));
      job.plan = random_plan(rng, op, sources[std::size_t(op)].options.precision);
      for (int i = 0; i < inputs_per_plan; ++i) job.inputs.push_back(random_inputs(rng, job.plan));
      upload_inputs(job, twins[std::size_t(job.plan.op)], rng());
      jobs[std::size_t(t)].push_back(std::move(job));
    }
  }

  // The serial run: one thread, the default stream, the twin operators.
  std::int64_t serial_products = 0;
  for (std::vector<Job>& thread_jobs : jobs)
    for (Job& job : thread_jobs) {
      const SparseOperator& op = twins[std::size_t(job.plan.op)];
      const SpmmPlan plan = op.make_plan(job.plan.n, job.plan.kernel, job.plan.options);
      for (std::size_t i = 0; i < job.inputs.size(); ++i) {
        INFO(describe(sources, job.plan, job.inputs[i]));
        const std::size_t bytes = job.c_bytes(i, op.rows());
        DeviceBytes c(bytes);
        REQUIRE(cudaMemcpy(c.ptr, job.c0[i]->ptr, bytes, cudaMemcpyDeviceToDevice) == cudaSuccess);
        enqueue(plan, job, i, c.ptr, nullptr);
        std::vector<unsigned char> out(bytes);
        REQUIRE(cudaMemcpy(out.data(), c.ptr, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
        // The product wrote its columns (NaN poison overwritten when beta = 0) and something is nonzero, so
        // two runs that both wrote nothing cannot agree by accident.
        const Inputs& in = job.inputs[i];
        bool finite = true, nonzero = false;
        for (std::int32_t r = 0; r < op.rows(); ++r)
          for (std::int32_t col = 0; col < job.plan.n; ++col) {
            const std::size_t e = std::size_t(r) * std::size_t(in.ldc) + std::size_t(col);
            float v;
            if (job.plan.options.output == ElementType::f16) {
              fp16_t h;
              std::memcpy(&h, out.data() + e * 2, 2);
              v = fp16_to_float(h);
            } else {
              std::memcpy(&v, out.data() + e * 4, 4);
            }
            finite = finite && std::isfinite(v);
            nonzero = nonzero || v != 0.0f;
          }
        CHECK(finite);
        if (in.alpha != 0.0f || in.beta != 0.0f) CHECK(nonzero);
        job.expected.push_back(std::move(out));
        ++serial_products;
      }
    }

  // The shared operators, built once from the same sources and not uploaded: the threads' first plans upload them.
  std::vector<SparseOperator> shared;
  for (const OperatorSource& s : sources) shared.push_back(SparseOperator::from_csr(s.a, s.options));
  std::vector<const SparseOperator*> shared_ptrs;
  for (std::size_t o = 0; o < shared.size(); ++o) {
    INFO(sources[o].name);
    const CsrMatrix x = shared[o].stored_csr(), y = twins[o].stored_csr();  // the twins hold the same matrix
    REQUIRE(x.row_ptr == y.row_ptr);
    REQUIRE(x.col_idx == y.col_idx);
    REQUIRE(x.values == y.values);
    REQUIRE_FALSE(shared[o].uploaded());
    shared_ptrs.push_back(&shared[o]);
  }

  StartGate gate;
  std::vector<ThreadResult> results(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back(run_thread, std::cref(shared_ptrs), std::ref(jobs[std::size_t(t)]), products,
                         seed * 7919 + std::uint64_t(t), std::ref(gate), std::ref(results[std::size_t(t)]));
  const auto start = std::chrono::steady_clock::now();
  gate.release();
  for (std::thread& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);

  std::int64_t total = 0, compared = 0, mismatches = 0;
  for (int t = 0; t < threads; ++t) {
    const ThreadResult& r = results[std::size_t(t)];
    INFO("thread " << t << ": " << r.error << " " << r.first_mismatch);
    CHECK(r.error.empty());
    CHECK(r.mismatches == 0);
    CHECK(r.products == products);
    CHECK(r.compared == r.products);
    total += r.products;
    compared += r.compared;
    mismatches += r.mismatches;
  }
  for (const SparseOperator& op : shared) CHECK(op.uploaded());
  std::printf("concurrency: %d threads, %lld products compared bit for bit (%lld mismatches) in %.1f s; %lld serial "
              "products on %d operators, seed %llu\n",
              threads, static_cast<long long>(compared), static_cast<long long>(mismatches), seconds,
              static_cast<long long>(serial_products), ops, static_cast<unsigned long long>(seed));
  CHECK(total == std::int64_t(threads) * products);
}
