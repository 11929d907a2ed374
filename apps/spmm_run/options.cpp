// spmm_run's command line (options.hpp).
#include "options.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "cli_options.hpp"
#ifdef BCSR24_HAS_NCCL
#include "distributed.hpp"
#endif

namespace bcsr24::spmm_run {

namespace {

std::vector<std::string> kernel_choices() {
  std::vector<std::string> names;
  for (KernelKind kind : all_kernels()) names.emplace_back(kernel_name(kind));
  names.emplace_back("all");
  return names;
}

/// Why this build cannot run the distributed mode the command line asks for (empty when it can).
std::string missing_distributed_support(const Options& options) {
  if (!options.distributed()) return {};
#ifndef BCSR24_HAS_NCCL
  return std::string("built without NCCL: ") + (options.mpi ? "--mpi" : "--gpus") +
         " needs the library's distributed operator (bcsr24_distributed); reconfigure with NCCL found "
         "(BCSR24_NCCL_ROOT=..., or BCSR24_WITH_NCCL=ON to require it)";
#else
  if (options.mpi && !mpi_available())
    return "built without MPI: --mpi needs MPI found when spmm_run was configured (e.g. Debian's libopenmpi-dev); "
           "--gpus P runs the same on one host without MPI";
  return {};
#endif
}

}  // namespace

void add_options(CLI::App& app, Options& options) {
  app.description(
      "Multiply a sparse matrix A (BCSR-2:4: 16x32 tiles, 2:4 tiles on sparse tensor cores, the rest dense) by a "
      "random fp16 B of n columns, time the GPU kernels and check them against an fp64 reference.\n"
      "Without a usable GPU (or with --cpu-only) the CPU reference path runs instead and the GPU kernels are "
      "reported as skipped.\nExit status: 0 ok, 1 runtime error or relative error above 1e-2, 2 bad arguments.");
  options.source.add_options(app, apps::MatrixSource::FileOption::positional,
                             "Seed for B, C0, pattern values, --xdys matrices and the rows the check samples");
  auto* nmult = app.add_option("--nmult", options.nmult,
                               "Width of B in blocks of 8 columns, as in the thesis (n = 8 * nmult)")
                    ->check(CLI::PositiveNumber);
  app.add_option("--n", options.width, "Width of B in columns, any n >= 1 (default 128 = --nmult 16)")
      ->check(CLI::PositiveNumber)
      ->excludes(nmult);
  apps::add_checked(app, "--kernel", options.kernel,
                    "GPU kernel to run: auto puts each 16-row band on tensor-core tiles (split_pipelined: 2:4 tiles on "
                    "mma.sp, dense tiles on mma.sync) or on CUDA-core CSR (csr_cuda_cores), whichever the cost model "
                    "predicts faster; all runs each one that "
                    "applies to the precision and lists the others as not applicable",
                    CLI::IsMember(kernel_choices()));
  apps::add_checked(app, "--reps", options.reps, "Timed repetitions per kernel (median, min and max are reported)",
                    CLI::PositiveNumber);
  apps::add_checked(app, "--warmup", options.warmup, "Untimed runs per kernel before timing", CLI::NonNegativeNumber);
  apps::add_checked(app, "--cpu-reps", options.cpu_reps, "Timed repetitions of the CPU reference path",
                    CLI::PositiveNumber);
  app.add_flag("--check,!--no-check", options.check,
               "Compare every kernel with an fp64 reference of the original matrix (default on): of every row "
               "where that is cheap, else of --check-rows rows drawn at random plus the longest rows and both ends "
               "(the check's host memory stays under 1 GiB)");
  apps::add_checked(app, "--check-rows", options.check_rows,
                    "Rows drawn uniformly at random (seeded by --seed) for the sampled check; a number that covers "
                    "every row checks them all",
                    CLI::PositiveNumber);
  options.storage.add_to(app);
  options.tuning.add_to(app);
  apps::add_checked(app, "--pattern-values", options.pattern_values,
                    "Values given to the entries of a pattern (structure-only) Matrix Market file",
                    CLI::IsMember({"ones", "random"}));
  app.add_flag("--json", options.json_output, "Print one JSON object on stdout instead of text");
  app.add_option("--save", options.save_path, "Write the preprocessed matrix to this .b24 file");
  app.add_flag("--fp16-out", options.fp16_out, "GPU kernels write C in fp16 (default fp32)");
  app.add_option("--alpha", options.alpha, "C = alpha * A * B + beta * C")->capture_default_str();
  app.add_option("--beta", options.beta, "C = alpha * A * B + beta * C (C0 is random when beta != 0)")
      ->capture_default_str();
  app.add_flag("--cpu-only", options.cpu_only, "Do not touch the GPU; run the CPU reference path");
  app.add_flag("--flush-l2,!--no-flush", options.flush_l2,
               "Evict A and B from the GPU's L2 (by reading a buffer of twice its size) before each timed "
               "repetition, as bench_spmm does (default on; --no-flush times with A and B left in L2 by the "
               "previous run)");
  apps::add_distribution_options(
      app, options.gpus, options.mpi, options.partition,
      {"Distributed mode: spread A over P GPUs (devices 0..P-1), one host thread per GPU, NCCL between them; times "
       "each stage against one GPU (needs a build with NCCL)",
       "Distributed mode under MPI: mpirun -np P spmm_run ... --mpi, one process per GPU (device: local rank % device "
       "count); needs a build with NCCL and MPI",
       "Distributed modes: how rows are assigned to ranks: metis (METIS parts minimising the halo, rows renumbered "
       "inside the operator), contiguous (ranges of the file's numbering), automatic (metis when this build has "
       "METIS)"});
  app.add_flag("--baseline,!--no-baseline", options.baseline,
               "Distributed modes: also time the whole matrix on one GPU (device 0, or rank 0's) for the speedup and "
               "memory ratio (default on)");
}

void validate(const CLI::App& app, Options& options) {
  options.gpus_given = app.count("--gpus") > 0;
  if (const std::string missing = missing_distributed_support(options); !missing.empty())
    throw apps::UsageError(missing, false);
  options.source.validate();
  options.tuning.validate();
  if (!std::isfinite(options.alpha) || !std::isfinite(options.beta))
    throw apps::UsageError("--alpha and --beta must be finite");
  if (static_cast<std::int64_t>(options.nmult) * kNmultColumns > std::numeric_limits<std::int32_t>::max())
    throw apps::UsageError("--nmult is too large");
  if (options.gpus_given && options.gpus < 1)
    throw apps::UsageError("--gpus " + std::to_string(options.gpus) +
                           ": the distributed mode needs P >= 1 GPUs (leave --gpus out for the single-GPU mode)");
  if (options.distributed()) {
    const std::string mode = options.mpi ? "--mpi" : "--gpus";
    if (options.cpu_only) throw apps::UsageError(mode + " runs on GPUs; it excludes --cpu-only");
    if (options.fp16_out)
      throw apps::UsageError(mode + ": distributed products write fp32 C; --fp16-out is not available");
    if (options.kernel != "auto")
      throw apps::UsageError(mode + ": every rank's parts are planned by the cost model; --kernel " + options.kernel +
                             " is not available (leave --kernel out)");
    if (!options.save_path.empty()) throw apps::UsageError(mode + " excludes --save");
    if (options.partition == "metis" && !metis_available())
      throw apps::UsageError("--partition metis: this build of bcsr24 has no METIS (install libmetis-dev and "
                             "reconfigure); use --partition contiguous", false);
    if (options.source.kind() == apps::MatrixSource::Kind::b24)
      throw apps::UsageError(mode + ": a .b24 file holds tiles, not the rows the ranks split; give the Matrix Market "
                             "file");
  }
}

}  // namespace bcsr24::spmm_run
