// spmm_run's distributed mode: the launchers (host threads or MPI processes), one rank per GPU building its share
// of A with bcsr24::DistributedOperator, a checked run, the timed stages and the single-GPU baseline, and the
// report. See spmm_run_distributed.hpp and docs/SPMM_RUN.md, "Distributed mode".
#include "distributed.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>
#include "mpi_c_api.hpp"

#include "cuda_resources.hpp"
#include "text_report.hpp"
#include "gpu_timing.hpp"
#include "rank_group.hpp"
#include "bcsr24/device.hpp"
#include "bcsr24/distributed_operator.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/precision.hpp"

namespace bcsr24::spmm_run {

namespace {

using json = nlohmann::ordered_json;

/// Exit status when rank threads are left stuck (spmm_run's runtime-error status).
constexpr int kExitStuck = 1;

// ------------------------------------------------------------------------------------------------------------
// Checked calls and small RAII owners
// ------------------------------------------------------------------------------------------------------------

using bench::CudaEvent;
using bench::format;
using bench::human_bytes;
using bench::ProgressLine;
using bench::Stopwatch;
using bench::summarize;
using bench::Timings;
using bench::CudaStream;
using bench::DeviceBuffer;
#define DIST_CUDA(call) bench::check_cuda((call), #call, __FILE__, __LINE__)


std::string device_name(int device) {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return "?";
  return properties.name;
}

/// fp16 matrices take B in fp16; bf16 and split ones in fp32 (the same values, widened exactly), as spmm_run's
/// single-GPU path gives them.
bool fp32_b(const DistributedJob& job) { return job.options.precision != Precision::fp16; }

std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "?";
  // NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z since 2.9.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

// ------------------------------------------------------------------------------------------------------------
// Host-side collectives of the ranks: threads of this process, or MPI processes
// ------------------------------------------------------------------------------------------------------------

using ranks::CommunicatorGuard;
using ranks::HostGroup;

// ------------------------------------------------------------------------------------------------------------
// One rank: build, check, time
// ------------------------------------------------------------------------------------------------------------

struct Stage {
  DistributedStages stages;
  const char* name;
};
/// The order every rank times them in (all first: halo_only reuses the halo rows the previous exchanges left).
constexpr std::array<Stage, 4> kStages = {{{DistributedStages::all, "all"},
                                           {DistributedStages::local_only, "local_only"},
                                           {DistributedStages::exchange_only, "exchange_only"},
                                           {DistributedStages::halo_only, "halo_only"}}};

/// One rank's figures, gathered as bytes on rank 0 (the ranks run the same program).
struct RankStats {
  std::int32_t rank = 0, device = 0;
  std::int32_t row_begin = 0, rows = 0, col_begin = 0, owned_cols = 0, halo_rows = 0, send_rows = 0;
  std::int64_t local_nnz = 0, halo_nnz = 0, bytes_sent = 0, bytes_received = 0, operator_bytes = 0, plan_bytes = 0;
  double build_s = 0.0;
  char device_name[128] = {};
  char host[64] = {};
};
static_assert(std::is_trivially_copyable_v<RankStats>, "RankStats travels as bytes");

/// What rank 0 collects.
struct RootResults {
  std::vector<RankStats> stats;          // by rank
  std::vector<std::vector<double>> ms;   // by rank: stage-major, kStages.size() x reps
  std::vector<std::int32_t> row_offsets;
  PartitionMethod partition = PartitionMethod::contiguous;  // the method the operator used
  std::vector<float> c;                  // the whole C of the checked run, when gathered (the file's numbering)
  bool gathered = false;
};


/// Everything one rank does, on its own device and stream. The NCCL operations (inside from_global and every
/// run of the stages all and exchange_only) and the host collectives come in the same order on every rank.
void rank_main(const DistributedJob& job, HostGroup& group, ncclComm_t comm, int device, bool want_c,
               RootResults* root) {
  CommunicatorGuard guard(comm);  // declared first: destroyed after the operator and plan below
  DIST_CUDA(cudaSetDevice(device));
  const int rank = group.rank();
  const bool progress = job.show_progress && rank == 0;

  ProgressLine building(progress, "distributed: building the operators on " + std::to_string(group.size()) + " ranks");
  Stopwatch watch;
  DistributedOptions options;
  options.part = job.options;
  options.partition = job.partition;
  const DistributedOperator op =
      DistributedOperator::from_global(*job.a, NcclCommunicator{comm, rank, group.size()}, options);
  const bool f32_b = fp32_b(job);
  PlanOptions plan_options;
  plan_options.input = f32_b ? InputType::f32 : InputType::f16;
  plan_options.tuning = job.tuning;
  plan_options.tuning_budget_ms = job.tuning_budget_ms;
  const DistributedPlan plan = op.make_plan(job.n, plan_options);
  const double build_s = watch.seconds();
  building.done(build_s);

  // This rank's rows of the global B and C0, on its device: the operator's rows, which a METIS partition has
  // renumbered (row_order(); B's rows follow A's columns, the same partition for a square A).
  const std::int64_t n = job.n;
  const std::int64_t col_begin = op.col_partition().begin(rank), owned = op.owned_cols();
  const std::int64_t row_begin = op.row_partition().begin(rank), rows = op.local_rows();
  const std::size_t b_count = static_cast<std::size_t>(owned * n), c_count = static_cast<std::size_t>(rows * n);
  DeviceBuffer b_device(b_count * (f32_b ? sizeof(float) : sizeof(fp16_t)));
  if (b_count > 0) {
    std::vector<fp16_t> b_rows(b_count);
    take_rank_rows(job.b->data(), n, job.n, op.col_partition(), op.row_order(), rank, b_rows.data(), n);
    if (f32_b) {
      std::vector<float> widened(b_count);
      for (std::size_t i = 0; i < b_count; ++i) widened[i] = fp16_to_float(b_rows[i]);
      DIST_CUDA(cudaMemcpy(b_device.get(), widened.data(), b_device.bytes(), cudaMemcpyHostToDevice));
    } else {
      DIST_CUDA(cudaMemcpy(b_device.get(), b_rows.data(), b_device.bytes(), cudaMemcpyHostToDevice));
    }
  }
  DeviceBuffer c_device(c_count * sizeof(float));
  std::vector<float> c0_rows;
  if (job.beta != 0.0f) {
    std::vector<fp16_t> c0_half(c_count);
    take_rank_rows(job.c0->data(), n, job.n, op.row_partition(), op.row_order(), rank, c0_half.data(), n);
    c0_rows.resize(c_count);
    for (std::size_t i = 0; i < c_count; ++i) c0_rows[i] = fp16_to_float(c0_half[i]);
  }
  const CudaStream stream;
  // Our stream does not synchronise with the legacy default stream, which the uploads may have used.
  DIST_CUDA(cudaDeviceSynchronize());

  float* const c = static_cast<float*>(c_device.get());
  auto reset_c = [&] {
    if (c_count == 0) return;
    if (job.beta == 0.0f)
      DIST_CUDA(cudaMemsetAsync(c, 0xFF, c_device.bytes(), stream.get()));  // NaN: unwritten rows show
    else
      DIST_CUDA(cudaMemcpyAsync(c, c0_rows.data(), c_device.bytes(), cudaMemcpyHostToDevice, stream.get()));
  };
  auto multiply = [&](DistributedStages stages) {
    if (f32_b)
      plan.run(static_cast<const float*>(b_device.get()), n, c, n, job.alpha, job.beta, stream.get(), stages);
    else
      plan.run(static_cast<const fp16_t*>(b_device.get()), n, c, n, job.alpha, job.beta, stream.get(), stages);
  };

  // The checked run: the whole product from a poisoned (or C0) C, gathered on rank 0 when it checks.
  reset_c();
  multiply(DistributedStages::all);
  std::vector<float> c_rows(c_count);
  if (c_count > 0)
    DIST_CUDA(cudaMemcpyAsync(c_rows.data(), c, c_device.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  DIST_CUDA(cudaStreamSynchronize(stream.get()));
  std::vector<float> unused;
  const bool gather_c = group.broadcast(want_c);
  if (gather_c) {
    std::vector<float>& gathered = root ? root->c : unused;
    ranks::gather_rows(group, c_rows, op.row_partition(), job.n, gathered);
    if (root && !op.row_order().empty()) {  // back to the file's numbering for the check
      std::vector<float> in_order(gathered.size());
      for (int r = 0; r < group.size(); ++r)
        put_rank_rows(gathered.data() + std::size_t(op.row_partition().begin(r)) * std::size_t(n), n, job.n,
                      op.row_partition(), op.row_order(), r, in_order.data(), n);
      gathered = std::move(in_order);
    }
  }

  // The timed runs of each stage: warm-up, then every run started together (host barrier, then the L2 flush) and
  // timed by events on this rank's stream. Timed runs use C as it stands (beta != 0 accumulates: values change,
  // the work does not).
  std::optional<bench::L2Flush> l2_flush;
  if (job.flush_l2) {
    int l2_bytes = 0;
    DIST_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
    if (l2_bytes > 0) l2_flush.emplace(static_cast<std::size_t>(l2_bytes) * 2);
  }
  ProgressLine timing(progress, "distributed: timing " + std::to_string(kStages.size()) + " stages x " +
                                std::to_string(job.reps) + " runs");
  Stopwatch timing_watch;
  const CudaEvent start, stop;
  std::vector<double> ms;
  ms.reserve(kStages.size() * static_cast<std::size_t>(job.reps));
  for (const Stage& stage : kStages) {
    for (int i = 0; i < job.warmup; ++i) multiply(stage.stages);
    DIST_CUDA(cudaStreamSynchronize(stream.get()));
    for (int rep = 0; rep < job.reps; ++rep) {
      group.barrier();
      // The flush is enqueued after the barrier, as the single-GPU baseline enqueues it: the product's launches
      // then queue behind it instead of meeting an idle GPU, whose launch latency (~5 us) the events would count.
      if (l2_flush) (*l2_flush)(stream.get());
      DIST_CUDA(cudaEventRecord(start.get(), stream.get()));
      multiply(stage.stages);
      DIST_CUDA(cudaEventRecord(stop.get(), stream.get()));
      DIST_CUDA(cudaEventSynchronize(stop.get()));
      float elapsed = 0.0f;
      DIST_CUDA(cudaEventElapsedTime(&elapsed, start.get(), stop.get()));
      ms.push_back(elapsed);
    }
  }
  timing.done(timing_watch.seconds());

  RankStats stats;
  stats.rank = rank;
  stats.device = device;
  stats.row_begin = static_cast<std::int32_t>(row_begin);
  stats.rows = op.local_rows();
  stats.col_begin = static_cast<std::int32_t>(col_begin);
  stats.owned_cols = op.owned_cols();
  stats.halo_rows = op.halo_rows();
  stats.send_rows = op.send_rows();
  stats.local_nnz = op.local_nnz();
  stats.halo_nnz = op.halo_nnz();
  stats.bytes_sent = plan.bytes_sent();
  stats.bytes_received = plan.bytes_received();
  stats.operator_bytes = op.device_bytes();
  stats.plan_bytes = plan.device_bytes();
  stats.build_s = build_s;
  std::snprintf(stats.device_name, sizeof stats.device_name, "%s", device_name(device).c_str());
  std::snprintf(stats.host, sizeof stats.host, "%s", ranks::host_name().c_str());

  std::vector<unsigned char> all_stats, all_ms;
  group.gather(&stats, sizeof stats, all_stats);
  group.gather(ms.data(), ms.size() * sizeof(double), all_ms);
  if (root) {
    const std::size_t ranks = static_cast<std::size_t>(group.size());
    root->stats.resize(ranks);
    std::memcpy(root->stats.data(), all_stats.data(), ranks * sizeof(RankStats));
    root->ms.assign(ranks, std::vector<double>(ms.size()));
    for (std::size_t r = 0; r < ranks; ++r)
      std::memcpy(root->ms[r].data(), all_ms.data() + r * ms.size() * sizeof(double), ms.size() * sizeof(double));
    root->row_offsets = op.row_partition().offsets;
    root->partition = op.partition_method();
    root->gathered = gather_c;
  }
  DIST_CUDA(cudaDeviceSynchronize());
  guard.finished_cleanly();
}

// ------------------------------------------------------------------------------------------------------------
// The single-GPU baseline: the whole matrix as one SparseOperator on the root's device
// ------------------------------------------------------------------------------------------------------------

struct Baseline {
  bool ran = false;
  std::string skipped_reason;
  int device = 0;
  std::string device_name;
  std::vector<double> ms;
  std::int64_t operator_bytes = 0, plan_bytes = 0;
  std::vector<float> c;  // the checked run's C, when kept
};

/// Runs before any communicator exists, so it can never interleave with NCCL work. A matrix that does not fit on
/// one GPU (the reason to distribute it) is reported as a skipped baseline, not an error.
Baseline run_baseline(const DistributedJob& job, int device, bool keep_c) {
  Baseline baseline;
  baseline.device = device;
  baseline.device_name = device_name(device);
  DIST_CUDA(cudaSetDevice(device));
  ProgressLine progress(job.show_progress, "distributed: single-GPU baseline on device " + std::to_string(device));
  Stopwatch watch;
  try {
    const SparseOperator op = std::move(*job.converted);  // freed, device copy and all, when the baseline ends
    op.upload();
    const bool f32_b = fp32_b(job);
    PlanOptions plan_options;
    plan_options.input = f32_b ? InputType::f32 : InputType::f16;
    plan_options.tuning = job.tuning;
    plan_options.tuning_budget_ms = job.tuning_budget_ms;
    const SpmmPlan plan = op.make_plan(job.n, KernelKind::automatic, plan_options);

    const std::int64_t n = job.n;
    const std::size_t b_count = job.b->size(), c_count = static_cast<std::size_t>(op.rows()) * std::size_t(n);
    DeviceBuffer b_device(b_count * (f32_b ? sizeof(float) : sizeof(fp16_t)));
    if (f32_b) {
      std::vector<float> widened(b_count);
      for (std::size_t i = 0; i < b_count; ++i) widened[i] = fp16_to_float((*job.b)[i]);
      DIST_CUDA(cudaMemcpy(b_device.get(), widened.data(), b_device.bytes(), cudaMemcpyHostToDevice));
    } else {
      DIST_CUDA(cudaMemcpy(b_device.get(), job.b->data(), b_device.bytes(), cudaMemcpyHostToDevice));
    }
    DeviceBuffer c_device(c_count * sizeof(float));
    float* const c = static_cast<float*>(c_device.get());
    const CudaStream stream;
    DIST_CUDA(cudaDeviceSynchronize());
    auto multiply = [&](cudaStream_t s) {
      if (f32_b)
        plan.run(static_cast<const float*>(b_device.get()), n, c, n, job.alpha, job.beta, s);
      else
        plan.run(static_cast<const fp16_t*>(b_device.get()), n, c, n, job.alpha, job.beta, s);
    };
    if (job.beta == 0.0f) {
      DIST_CUDA(cudaMemsetAsync(c, 0xFF, c_device.bytes(), stream.get()));
    } else {
      std::vector<float> c0(c_count);
      for (std::size_t i = 0; i < c_count; ++i) c0[i] = fp16_to_float((*job.c0)[i]);
      DIST_CUDA(cudaMemcpy(c, c0.data(), c_device.bytes(), cudaMemcpyHostToDevice));
    }
    multiply(stream.get());
    if (keep_c) {
      baseline.c.resize(c_count);
      DIST_CUDA(cudaMemcpyAsync(baseline.c.data(), c, c_device.bytes(), cudaMemcpyDeviceToHost, stream.get()));
    }
    DIST_CUDA(cudaStreamSynchronize(stream.get()));

    std::optional<bench::L2Flush> l2_flush;
    if (job.flush_l2) {
      int l2_bytes = 0;
      DIST_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
      if (l2_bytes > 0) l2_flush.emplace(static_cast<std::size_t>(l2_bytes) * 2);
    }
    baseline.ms = bench::time_gpu_runs(multiply, job.warmup, job.reps, l2_flush ? &*l2_flush : nullptr, stream.get());
    baseline.operator_bytes = op.device_bytes();
    baseline.plan_bytes = plan.workspace_bytes();
    baseline.ran = true;
  } catch (const SizeLimitError& error) {
    baseline.skipped_reason = error.what();
  } catch (const CudaError& error) {
    // Out of memory leaves the device usable: report it. Anything sticky is an error of the run.
    if (cudaDeviceSynchronize() != cudaSuccess) throw;
    cudaGetLastError();
    baseline.skipped_reason = error.what();
    baseline.c.clear();
  }
  progress.done(watch.seconds());
  return baseline;
}

// ------------------------------------------------------------------------------------------------------------
// Launchers
// ------------------------------------------------------------------------------------------------------------

/// --gpus P: communicators for devices 0..P-1 made in one call here, then one thread per rank.
RootResults run_threads(const DistributedJob& job, int ranks, bool want_c) {
  RootResults root;
  ranks::run_rank_threads(
      ranks,
      [&](HostGroup& group, ncclComm_t comm, int device) {
        rank_main(job, group, comm, device, want_c, group.rank() == 0 ? &root : nullptr);
      },
      "spmm_run", kExitStuck);
  return root;
}

#ifdef BCSR24_HAS_MPI
/// --mpi: this process's rank (rank_group's launcher makes the communicator).
RootResults run_mpi(const Session& session, const DistributedJob& job, bool want_c) {
  RootResults root;
  ranks::run_mpi_rank(session, [&](HostGroup& group, ncclComm_t comm, int device) {
    rank_main(job, group, comm, device, want_c, session.is_root() ? &root : nullptr);
  });
  return root;
}
#endif

// ------------------------------------------------------------------------------------------------------------
// Report (root)
// ------------------------------------------------------------------------------------------------------------

json timings_json(const Timings& t) {
  return {{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"max_ms", t.max_ms}};
}

json outcome_json(const std::optional<CheckOutcome>& outcome) { return outcome ? outcome->fields : json(nullptr); }

json make_report(const Session& session, const DistributedJob& job, const CheckFunction& check,
                 const RootResults& results, const Baseline& baseline) {
  const std::size_t ranks = results.stats.size();
  const std::size_t reps = static_cast<std::size_t>(job.reps);

  // Per stage and run: the slowest rank (the product is as slow as its slowest rank); then over the runs.
  std::array<Timings, kStages.size()> stage_timings;
  std::vector<std::array<double, kStages.size()>> rank_medians(ranks);
  for (std::size_t s = 0; s < kStages.size(); ++s) {
    std::vector<double> slowest(reps, 0.0);
    for (std::size_t r = 0; r < ranks; ++r) {
      const auto first = results.ms[r].begin() + static_cast<std::ptrdiff_t>(s * reps);
      const std::vector<double> mine(first, first + static_cast<std::ptrdiff_t>(reps));
      for (std::size_t i = 0; i < reps; ++i) slowest[i] = std::max(slowest[i], mine[i]);
      rank_medians[r][s] = summarize(mine).median_ms;
    }
    stage_timings[s] = summarize(slowest);
  }
  const double all_ms = stage_timings[0].median_ms;
  const double exposed_ms =
      std::max(0.0, all_ms - stage_timings[1].median_ms - stage_timings[3].median_ms);
  const double useful_flops = 2.0 * double(job.nnz) * double(job.n);

  std::optional<CheckOutcome> distributed_check, baseline_check;
  if (check && results.gathered) distributed_check = check(results.c);
  if (check && baseline.ran && !baseline.c.empty()) baseline_check = check(baseline.c);

  std::int64_t max_rank_bytes = 0, exchanged_bytes = 0, halo_rows = 0, max_rank_nnz = 0, all_nnz = 0;
  json per_rank = json::array();
  for (std::size_t r = 0; r < ranks; ++r) {
    const RankStats& st = results.stats[r];
    max_rank_bytes = std::max(max_rank_bytes, st.operator_bytes + st.plan_bytes);
    exchanged_bytes += st.bytes_received;
    halo_rows += st.halo_rows;
    max_rank_nnz = std::max(max_rank_nnz, st.local_nnz + st.halo_nnz);
    all_nnz += st.local_nnz + st.halo_nnz;
    json medians = json::object();
    for (std::size_t s = 0; s < kStages.size(); ++s) medians[kStages[s].name] = rank_medians[r][s];
    per_rank.push_back({{"rank", st.rank},
                        {"device", st.device},
                        {"device_name", st.device_name},
                        {"host", st.host},
                        {"row_begin", st.row_begin},
                        {"rows", st.rows},
                        {"col_begin", st.col_begin},
                        {"owned_cols", st.owned_cols},
                        {"local_nnz", st.local_nnz},
                        {"halo_nnz", st.halo_nnz},
                        {"halo_rows", st.halo_rows},
                        {"send_rows", st.send_rows},
                        {"bytes_sent", st.bytes_sent},
                        {"bytes_received", st.bytes_received},
                        {"operator_bytes", st.operator_bytes},
                        {"plan_bytes", st.plan_bytes},
                        {"device_bytes", st.operator_bytes + st.plan_bytes},
                        {"build_s", st.build_s},
                        {"median_ms", medians}});
  }

  json stages = json::object();
  for (std::size_t s = 0; s < kStages.size(); ++s) stages[kStages[s].name] = timings_json(stage_timings[s]);
  stages["all"]["tflops_useful"] = all_ms > 0 ? useful_flops / (all_ms * 1e-3) * 1e-12 : 0.0;

  json baseline_json = nullptr;
  std::optional<Timings> single;
  std::int64_t single_bytes = 0;
  if (baseline.ran) {
    single = summarize(baseline.ms);
    single_bytes = baseline.operator_bytes + baseline.plan_bytes;
    baseline_json = {{"device", baseline.device},
                     {"device_name", baseline.device_name},
                     {"median_ms", single->median_ms},
                     {"min_ms", single->min_ms},
                     {"max_ms", single->max_ms},
                     {"tflops_useful", single->median_ms > 0 ? useful_flops / (single->median_ms * 1e-3) * 1e-12 : 0.0},
                     {"operator_bytes", baseline.operator_bytes},
                     {"plan_bytes", baseline.plan_bytes},
                     {"device_bytes", single_bytes},
                     {"check", outcome_json(baseline_check)}};
  } else if (!baseline.skipped_reason.empty()) {
    baseline_json = {{"device", baseline.device},
                     {"device_name", baseline.device_name},
                     {"skipped_reason", baseline.skipped_reason}};
  }
  const bool f32_b = fp32_b(job);
  json report = {
      {"launch", session.launch() == Launch::threads ? "threads" : "mpi"},
      {"ranks", ranks},
      {"nccl_version", nccl_version()},
      {"n", job.n},
      {"input", f32_b ? "f32" : "f16"},
      {"output", "f32"},
      {"warmup", job.warmup},
      {"reps", job.reps},
      {"flush_l2", job.flush_l2},
      {"partition", partition_method_name(results.partition)},
      {"row_partition", results.row_offsets},
      {"halo_rows", halo_rows},
      {"nnz_imbalance", all_nnz > 0 ? json(double(max_rank_nnz) * double(ranks) / double(all_nnz)) : json(nullptr)},
      {"stages", stages},
      {"exposed_communication_ms", exposed_ms},
      {"bytes_exchanged_per_product", exchanged_bytes},
      {"max_rank_device_bytes", max_rank_bytes},
      {"check", outcome_json(distributed_check)},
      {"baseline", baseline_json},
      {"speedup", single && all_ms > 0 ? json(single->median_ms / all_ms) : json(nullptr)},
      {"memory_ratio",
       single && single_bytes > 0 ? json(double(max_rank_bytes) / double(single_bytes)) : json(nullptr)},
      {"per_rank", per_rank}};
  if (!job.text_output) return report;

  // --- text
  std::cout << "\ndistributed " << ranks << " ranks, one GPU each, "
            << (session.launch() == Launch::threads
                    ? "one thread per rank in this process (ncclCommInitAll)"
                    : "one MPI process per rank (ncclCommInitRank)")
            << ", NCCL " << report["nccl_version"].get<std::string>() << "\n"
            << "            rows by " << partition_method_name(results.partition) << ": " << halo_rows
            << " halo rows in all, largest rank "
            << format("%.3f", all_nnz > 0 ? double(max_rank_nnz) * double(ranks) / double(all_nnz) : 0.0)
            << " x the mean entries\n"
            << "            B " << (f32_b ? "fp32" : "fp16") << ", C fp32; " << job.warmup << " warm-up + " << job.reps
            << " timed runs per stage, each started by a barrier of all ranks"
            << (job.flush_l2 ? ", L2 flushed before each" : "") << "\n";
  std::printf("%4s %6s  %-24s %10s %12s %12s %10s %10s %12s %12s %12s %8s\n", "rank", "device", "name/host", "rows",
              "local nnz", "halo nnz", "halo rows", "sent rows", "sent/prod.", "recv/prod.", "device mem", "build s");
  for (const RankStats& st : results.stats) {
    const std::string where = std::string(st.device_name) + " @" + st.host;
    std::printf("%4d %6d  %-24.24s %10d %12lld %12lld %10d %10d %12s %12s %12s %8.2f\n", st.rank, st.device,
                where.c_str(), st.rows, static_cast<long long>(st.local_nnz), static_cast<long long>(st.halo_nnz),
                st.halo_rows, st.send_rows, human_bytes(double(st.bytes_sent)).c_str(),
                human_bytes(double(st.bytes_received)).c_str(),
                human_bytes(double(st.operator_bytes + st.plan_bytes)).c_str(), st.build_s);
  }
  std::printf("\n%-16s %10s %10s %10s  %s\n", "stage", "median ms", "min ms", "max ms",
              "(each run: the slowest rank)");
  for (std::size_t s = 0; s < kStages.size(); ++s)
    std::printf("%-16s %10.4f %10.4f %10.4f\n", kStages[s].name, stage_timings[s].median_ms,
                stage_timings[s].min_ms, stage_timings[s].max_ms);
  if (single)
    std::printf("%-16s %10.4f %10.4f %10.4f  (device %d, %s: the whole matrix, SparseOperator + SpmmPlan)\n",
                "single GPU", single->median_ms, single->min_ms, single->max_ms, baseline.device,
                baseline.device_name.c_str());
  else if (!baseline.skipped_reason.empty())
    std::cout << "single GPU       skipped: " << baseline.skipped_reason << "\n";
  else
    std::cout << "single GPU       not run (--no-baseline)\n";
  std::cout << "\nspeedup     "
            << (single && all_ms > 0 ? format("%.2fx", single->median_ms / all_ms) +
                                           " over one GPU (single-GPU median / distributed all median)"
                                     : std::string("n/a"))
            << "; useful TFLOPS " << format("%.4g", report["stages"]["all"]["tflops_useful"].get<double>())
            << (single ? ", one GPU " + format("%.4g", baseline_json["tflops_useful"].get<double>()) : std::string())
            << "\n"
            << "exposed     communication " << format("%.4f ms", exposed_ms)
            << " = max(0, all - local_only - halo_only); halo exchange " << human_bytes(double(exchanged_bytes))
            << " per product\n"
            << "memory      largest rank " << human_bytes(double(max_rank_bytes)) << " (operator + plan)";
  if (single && single_bytes > 0)
    std::cout << " = " << format("%.2f", double(max_rank_bytes) / double(single_bytes)) << " x one GPU's "
              << human_bytes(double(single_bytes));
  std::cout << "\nresult      ";
  if (!check)
    std::cout << "not checked";
  else
    std::cout << "distributed rel. error "
              << (distributed_check ? distributed_check->error_text + " " + distributed_check->verdict
                                    : std::string("not gathered"))
              << (baseline_check ? "; single GPU " + baseline_check->error_text + " " + baseline_check->verdict
                                 : std::string());
  std::cout << std::endl;
  return report;
}

}  // namespace

// ------------------------------------------------------------------------------------------------------------

json run_distributed(const Session& session, const DistributedJob& job, const CheckFunction& check) {
  if (!job.a || !job.b || (job.beta != 0.0f && !job.c0) || job.n < 1 || job.reps < 1 || job.warmup < 0)
    throw InvalidArgument("run_distributed: incomplete job");
  if (job.b->size() != static_cast<std::size_t>(job.a->cols) * static_cast<std::size_t>(job.n))
    throw InvalidArgument("run_distributed: B has " + std::to_string(job.b->size()) + " values, expected cols x n");
  const bool root = session.is_root();
  const bool want_c = root && static_cast<bool>(check);

  // The baseline first, on the root, before any communicator exists: no NCCL call can interleave with it.
  Baseline baseline;
  if (root && job.baseline) {
    if (!job.converted) throw InvalidArgument("run_distributed: the baseline needs the converted matrix");
    baseline = run_baseline(job, session.device(), want_c);
  }

  RootResults results;
  if (session.launch() == Launch::threads) {
    results = run_threads(job, session.ranks(), want_c);
  } else {
#ifdef BCSR24_HAS_MPI
    RANKS_MPI(MPI_Barrier(MPI_COMM_WORLD));  // the other ranks wait here while rank 0 times the baseline
    results = run_mpi(session, job, want_c);
#else
    throw NotSupported("built without MPI: --mpi needs spmm_run built with MPI");
#endif
  }
  if (!root) return nullptr;
  return make_report(session, job, check, results, baseline);
}

}  // namespace bcsr24::spmm_run
