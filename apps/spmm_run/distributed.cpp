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
#include "distributed_results.hpp"
#include "rank_group.hpp"
#include "bcsr24/device.hpp"
#include "bcsr24/distributed_operator.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/precision.hpp"

namespace bcsr24::spmm_run {

namespace {

using json = nlohmann::ordered_json;
using namespace dist;

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

/// This rank's rows of the global B (fp16, or widened to fp32) and a C of its rows on its device, and its rows of C0
/// on the host (beta != 0).
struct RankOperands {
  DeviceBuffer b, c;
  std::vector<float> c0_rows;
};

RankOperands upload_rank_operands(const DistributedJob& job, const DistributedOperator& op, int rank, bool f32_b) {
  const std::int64_t n = job.n;
  const std::int64_t owned = op.owned_cols(), rows = op.local_rows();
  const std::size_t b_count = static_cast<std::size_t>(owned * n), c_count = static_cast<std::size_t>(rows * n);
  RankOperands x{DeviceBuffer(b_count * (f32_b ? sizeof(float) : sizeof(fp16_t))),
                 DeviceBuffer(c_count * sizeof(float)), {}};
  // The operator's rows, which a METIS partition has renumbered (row_order(); B's rows follow A's columns, the same
  // partition for a square A).
  if (b_count > 0) {
    std::vector<fp16_t> b_rows(b_count);
    take_rank_rows(job.b->data(), n, job.n, op.col_partition(), op.row_order(), rank, b_rows.data(), n);
    if (f32_b) {
      std::vector<float> widened(b_count);
      for (std::size_t i = 0; i < b_count; ++i) widened[i] = fp16_to_float(b_rows[i]);
      DIST_CUDA(cudaMemcpy(x.b.get(), widened.data(), x.b.bytes(), cudaMemcpyHostToDevice));
    } else {
      DIST_CUDA(cudaMemcpy(x.b.get(), b_rows.data(), x.b.bytes(), cudaMemcpyHostToDevice));
    }
  }
  if (job.beta != 0.0f) {
    x.c0_rows.resize(c_count);
    std::vector<fp16_t> c0_half(c_count);
    take_rank_rows(job.c0->data(), n, job.n, op.row_partition(), op.row_order(), rank, c0_half.data(), n);
    for (std::size_t i = 0; i < c_count; ++i) x.c0_rows[i] = fp16_to_float(c0_half[i]);
  }
  return x;
}

/// The timed runs of each stage: warm-up, then every run started together (host barrier, then the L2 flush) and
/// timed by events on this rank's stream; stage-major, kStages.size() x reps milliseconds. Timed runs use C as it
/// stands (beta != 0 accumulates: values change, the work does not).
template <class Multiply>
std::vector<double> time_stages(const DistributedJob& job, HostGroup& group, int device, const Multiply& multiply,
                                cudaStream_t stream, bool progress) {
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
    DIST_CUDA(cudaStreamSynchronize(stream));
    for (int rep = 0; rep < job.reps; ++rep) {
      group.barrier();
      // The flush is enqueued after the barrier, as the single-GPU baseline enqueues it: the product's launches
      // then queue behind it instead of meeting an idle GPU, whose launch latency (~5 us) the events would count.
      if (l2_flush) (*l2_flush)(stream);
      DIST_CUDA(cudaEventRecord(start.get(), stream));
      multiply(stage.stages);
      DIST_CUDA(cudaEventRecord(stop.get(), stream));
      DIST_CUDA(cudaEventSynchronize(stop.get()));
      float elapsed = 0.0f;
      DIST_CUDA(cudaEventElapsedTime(&elapsed, start.get(), stop.get()));
      ms.push_back(elapsed);
    }
  }
  timing.done(timing_watch.seconds());
  return ms;
}

RankStats rank_stats(const DistributedOperator& op, const DistributedPlan& plan, int rank, int device,
                     double build_s) {
  RankStats stats;
  stats.rank = rank;
  stats.device = device;
  stats.row_begin = static_cast<std::int32_t>(op.row_partition().begin(rank));
  stats.rows = op.local_rows();
  stats.col_begin = static_cast<std::int32_t>(op.col_partition().begin(rank));
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
  return stats;
}

/// Every rank's stats and times, gathered at rank 0 (`root`, null elsewhere).
void gather_results(HostGroup& group, const RankStats& stats, const std::vector<double>& ms,
                    const DistributedOperator& op, bool gathered_c, RootResults* root) {
  std::vector<unsigned char> all_stats, all_ms;
  group.gather(&stats, sizeof stats, all_stats);
  group.gather(ms.data(), ms.size() * sizeof(double), all_ms);
  if (!root) return;
  const std::size_t ranks = static_cast<std::size_t>(group.size());
  root->stats.resize(ranks);
  std::memcpy(root->stats.data(), all_stats.data(), ranks * sizeof(RankStats));
  root->ms.assign(ranks, std::vector<double>(ms.size()));
  for (std::size_t r = 0; r < ranks; ++r)
    std::memcpy(root->ms[r].data(), all_ms.data() + r * ms.size() * sizeof(double), ms.size() * sizeof(double));
  root->row_offsets = op.row_partition().offsets;
  root->partition = op.partition_method();
  root->gathered = gathered_c;
}

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
  plan_options.input = f32_b ? ElementType::f32 : ElementType::f16;
  plan_options.tuning = job.tuning;
  plan_options.tuning_budget_ms = job.tuning_budget_ms;
  const DistributedPlan plan = op.make_plan(job.n, plan_options);
  const double build_s = watch.seconds();
  building.done(build_s);

  const std::int64_t n = job.n;
  const RankOperands operands = upload_rank_operands(job, op, rank, f32_b);
  const std::size_t c_count = static_cast<std::size_t>(op.local_rows() * n);
  const CudaStream stream;
  // Our stream does not synchronise with the legacy default stream, which the uploads may have used.
  DIST_CUDA(cudaDeviceSynchronize());

  float* const c = static_cast<float*>(operands.c.get());
  auto reset_c = [&] {
    if (c_count == 0) return;
    if (job.beta == 0.0f)
      DIST_CUDA(cudaMemsetAsync(c, 0xFF, operands.c.bytes(), stream.get()));  // NaN: unwritten rows show
    else
      DIST_CUDA(
          cudaMemcpyAsync(c, operands.c0_rows.data(), operands.c.bytes(), cudaMemcpyHostToDevice, stream.get()));
  };
  auto multiply = [&](DistributedStages stages) {
    if (f32_b)
      experimental::run_stages(plan, stages, static_cast<const float*>(operands.b.get()), n, c, n, job.alpha, job.beta,
                               stream.get());
    else
      experimental::run_stages(plan, stages, static_cast<const fp16_t*>(operands.b.get()), n, c, n, job.alpha,
                               job.beta, stream.get());
  };

  // The checked run: the whole product from a poisoned (or C0) C, gathered on rank 0 when it checks.
  reset_c();
  multiply(DistributedStages::all);
  std::vector<float> c_rows(c_count);
  if (c_count > 0)
    DIST_CUDA(cudaMemcpyAsync(c_rows.data(), c, operands.c.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  DIST_CUDA(cudaStreamSynchronize(stream.get()));
  std::vector<float> unused;
  const bool gather_c = group.broadcast(want_c);
  if (gather_c) {
    std::vector<float>& gathered = root ? root->c : unused;
    ranks::gather_rows(group, c_rows, op.row_partition(), job.n, gathered);
    if (root && !op.row_order().empty()) {  // back to the file's numbering for the check
      std::vector<float> in_order(gathered.size());
      for (int r = 0; r < group.size(); ++r)
        put_rank_rows(gathered.data() + std::size_t(op.row_partition().begin(r)) * std::size_t(job.n), job.n, job.n,
                      op.row_partition(), op.row_order(), r, in_order.data(), job.n);
      gathered = std::move(in_order);
    }
  }

  const std::vector<double> ms = time_stages(job, group, device, multiply, stream.get(), progress);
  gather_results(group, rank_stats(op, plan, rank, device, build_s), ms, op, gather_c, root);
  DIST_CUDA(cudaDeviceSynchronize());
  guard.finished_cleanly();
}

// ------------------------------------------------------------------------------------------------------------
// The single-GPU baseline: the whole matrix as one SparseOperator on the root's device
// ------------------------------------------------------------------------------------------------------------

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
    plan_options.input = f32_b ? ElementType::f32 : ElementType::f16;
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
  return make_report(session, job, check, results, baseline, nccl_version());
}

}  // namespace bcsr24::spmm_run
