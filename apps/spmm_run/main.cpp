// spmm_run: read (or generate) one sparse matrix, convert it to BCSR-2:4, multiply it by a random tall-skinny
// fp16 B with the chosen kernels, and report the tile census, timings, throughput and error against fp64.
// docs/SPMM_RUN.md describes the options and the report.
#include <unistd.h>

#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>

#include "bcsr24/device.hpp"
#include "gpu_timing.hpp"
#include "report.hpp"
#include "runs.hpp"
#ifdef BCSR24_HAS_NCCL
#include "distributed.hpp"
#endif

namespace bcsr24::spmm_run {

namespace {

/// "multiply" section and line: C = alpha A B + beta C, n, B's values, output type.
void report_multiply(const Options& options, std::int32_t n, bool on_gpu, json& report) {
  const bool fp16_out = on_gpu && options.fp16_out;
  report["multiply"] = {{"n", n},
                        {"nmult", n % kNmultColumns == 0 ? json(n / kNmultColumns) : json(nullptr)},
                        {"alpha", options.alpha},
                        {"beta", options.beta},
                        {"output", fp16_out ? "f16" : "f32"},
                        {"seed", options.seed()},
                        {"reps", on_gpu ? options.reps : options.cpu_reps},
                        {"warmup", on_gpu ? options.warmup : 0},
                        {"flush_l2", on_gpu && options.flush_l2},
                        {"tuning", options.tuning.tuning},
                        {"tuning_budget_ms", options.tuning.budget_ms > 0 ? json(options.tuning.budget_ms) : json(nullptr)}};
  if (options.json_output) return;
  std::cout << "multiply    C = " << options.alpha << " * A * B + " << options.beta << " * C, n = " << n;
  if (n % kNmultColumns == 0) std::cout << " (nmult " << n / kNmultColumns << ")";
  std::cout << ", B random fp16 in [-1, 1) (seed " << options.seed() << "), " << (fp16_out ? "fp16" : "fp32")
            << " output\n";
}

/// The fp64 reference (unless --no-check) and the report's "check" section.
std::optional<Reference> prepare_reference(const Options& options, const LoadedMatrix& loaded,
                                           const MultiplyInputs& inputs, bool fp16_output, bool show_progress,
                                           json& report) {
  std::optional<Reference> reference;
  if (options.check) {
    const CheckProduct product{inputs.n, inputs.b.data(), inputs.c0.data(), options.alpha, options.beta};
    reference = compute_reference(*loaded.op, loaded.has_original ? &loaded.original : nullptr, product,
                                  options.check_rows, options.seed(), show_progress);
  }
  report_check(options, reference ? &*reference : nullptr, loaded.has_original, fp16_output, report);
  return reference;
}

/// Prints the failure line of every result above the threshold; returns the exit status.
int failures(const std::pair<std::string, json>* results, std::size_t count) {
  int status = apps::kExitOk;
  for (std::size_t i = 0; i < count; ++i) {
    const json& result = results[i].second;
    if (!result.is_object() || !result_failed(result)) continue;
    const std::string error = result["rel_error"].is_number() ? bench::format("%.3e", result["rel_error"].get<double>())
                                                               : std::string("NaN/inf");
    std::cerr << kProgram << ": error: kernel " << results[i].first << " relative error " << error << " exceeds "
              << bench::format("%.0e", kFailRelativeError) << "\n";
    status = apps::kExitRuntimeError;
  }
  return status;
}

int run(const Options& options) {
  const bool show_progress = !options.json_output && isatty(STDERR_FILENO);
  json report = {{"program", kProgram}};
  LoadedMatrix loaded = load_matrix(options, show_progress);
  const SparseOperator& op = *loaded.op;
  report_matrix(options, loaded, report);

  // Which path runs: the GPU kernels when a device of sm_80+ is there and wanted, else the CPU reference.
  DeviceInfo device;
  if (options.cpu_only) device.reason = "--cpu-only given";
  else device = query_device();
  report["gpu"] = {{"available", device.available},
                   {"name", device.name},
                   {"compute_capability", device.compute_capability},
                   {"reason", device.available ? "" : device.reason}};
  const KernelChoice kernels = choose_kernels(options.kernel, op.precision(), options.fp16_out && device.available);
  report_kernels(options, kernels, report);

  const MultiplyInputs inputs = make_inputs(options, op.rows(), op.cols());
  report_multiply(options, inputs.n, device.available, report);
  const std::optional<Reference> reference =
      prepare_reference(options, loaded, inputs, options.fp16_out && device.available, show_progress, report);
  loaded.original = CsrMatrix{};  // the reference holds what the check needs; the operator holds A

  std::vector<json> results;
  if (device.available) {
    // The device's copy rate, the physical limit the "of copy" column compares with: measured once per process.
    const bench::CopyBandwidth& copy = bench::copy_bandwidth();
    report["gpu"]["copy_bandwidth_gbs"] = copy.bytes_per_s > 0 ? json(copy.bytes_per_s * 1e-9) : json(nullptr);
    report["gpu"]["copy_buffer_bytes"] = copy.buffer_bytes;
    report["gpu"]["copy_runs"] = copy.runs;
    if (!copy.note.empty()) report["gpu"]["copy_note"] = copy.note;
    if (!options.json_output) {
      std::cout << "gpu         " << device.name << " (sm_" << device.compute_capability << ", "
                << device.multiprocessors << " SMs), " << options.warmup << " warm-up + " << options.reps
                << " timed runs per kernel" << (options.flush_l2 ? ", L2 flushed before each" : "") << "\n";
      if (copy.bytes_per_s > 0)
        std::cout << "            copy bandwidth " << bench::format("%.0f GB/s", copy.bytes_per_s * 1e-9)
                  << " (cudaMemcpy device to device, 2 x " << (copy.buffer_bytes >> 20) << " MiB, median of "
                  << copy.runs << ", bytes read + written" << (copy.note.empty() ? "" : "; " + copy.note) << ")\n\n";
      else
        std::cout << "            copy bandwidth not measured (" << copy.note << ")\n\n";
      print_results_header();
    }
    results = run_gpu_kernels(options, op, kernels, inputs, reference ? &*reference : nullptr, device);
  } else {
    if (!options.json_output) {
      std::cout << "GPU kernels skipped: " << device.reason << "\n"
                << "cpu         bcsr24::reference_spmm on the host format (double accumulation), "
                << options.cpu_reps << " timed run(s)\n\n";
      print_results_header();
    }
    results.push_back(run_cpu_reference(options, op, inputs, reference ? &*reference : nullptr, show_progress));
  }
  report["results"] = results;
  if (options.json_output) std::cout << report.dump(2) << std::endl;

  std::vector<std::pair<std::string, json>> named;
  for (const json& result : results) named.emplace_back(result["kernel"].get<std::string>(), result);
  return failures(named.data(), named.size());
}

#ifdef BCSR24_HAS_NCCL
/// The check of a gathered rows x n fp32 C against the reference, with the same fields, verdict and failure
/// threshold as a single-GPU kernel's.
CheckOutcome check_outcome(const Reference& reference, const std::vector<float>& c) {
  json fields = {{"rel_error", nullptr}, {"expected_rel_error", nullptr}, {"rel_error_bound", nullptr},
                 {"within_bound", nullptr}};
  const std::vector<std::int32_t>& rows = reference.checked.rows;
  const std::size_t n = static_cast<std::size_t>(reference.n);
  add_error_fields(fields,
                   relative_error(reference, [&](std::size_t k, std::size_t j) {
                     return double(c[static_cast<std::size_t>(rows[k]) * n + j]);
                   }),
                   reference.expectation(false));
  auto [error, verdict] = error_and_verdict(fields);
  return {fields, error, verdict, result_failed(fields)};
}

/// --gpus P / --mpi. Every process reads or generates the same matrix and B; only rank 0's process converts the
/// whole matrix (for the report and the single-GPU baseline), prints, computes the reference and checks.
int run_distributed_mode(const Options& options) {
  const Launch launch = options.mpi ? Launch::mpi : Launch::threads;
  Session session(launch, options.gpus);  // MPI_Init in MPI mode
  try {
    session.select_devices();  // before reading: too few GPUs fails at once
    const bool root = session.is_root();
    const bool show_progress = root && !options.json_output && isatty(STDERR_FILENO);
    json report = {{"program", kProgram}};
    LoadedMatrix loaded = load_matrix(options, show_progress, root);
    if (root) report_matrix(options, loaded, report);

    // The same global B (and C0) on every process: the same seed, as the single-GPU mode makes it.
    const MultiplyInputs inputs = make_inputs(options, loaded.original.rows, loaded.original.cols);
    std::optional<Reference> reference;
    if (root) {
      report_multiply(options, inputs.n, true, report);
      reference = prepare_reference(options, loaded, inputs, false, show_progress, report);
    }

    DistributedJob job;
    job.a = &loaded.original;
    job.converted = root ? &*loaded.op : nullptr;
    job.options = options.storage.to_operator_options();  // every rank's parts and the baseline
    job.partition = partition_method_from_name(options.partition);
    {
      PlanOptions plan_options;
      options.tuning.apply(plan_options);
      job.tuning = plan_options.tuning;
      job.tuning_budget_ms = plan_options.tuning_budget_ms;
    }
    job.n = inputs.n;
    job.b = &inputs.b;
    job.c0 = &inputs.c0;
    job.alpha = float(options.alpha);
    job.beta = float(options.beta);
    job.warmup = options.warmup;
    job.reps = options.reps;
    job.flush_l2 = options.flush_l2;
    job.baseline = options.baseline;
    job.text_output = !options.json_output;
    job.show_progress = show_progress;
    job.nnz = static_cast<std::uint64_t>(root ? loaded.op->nnz() : loaded.original.nnz());
    CheckFunction check;
    if (reference) check = [&](const std::vector<float>& c) { return check_outcome(*reference, c); };

    const json distributed = run_distributed(session, job, check);
    int status = apps::kExitOk;
    if (root) {
      report["distributed"] = distributed;
      if (options.json_output) std::cout << report.dump(2) << std::endl;
      const json& baseline = distributed.at("baseline");
      const std::pair<std::string, json> checked[] = {
          {"distributed", distributed.at("check")},
          {"single_gpu", baseline.is_object() ? baseline.value("check", json(nullptr)) : json(nullptr)}};
      status = failures(checked, 2);
    }
    return session.agree_on_status(status);
  } catch (const std::exception& error) {
    const int code = apps::report_error(kProgram, session.error_prefix() + std::string(error.what()), "",
                                        apps::kExitRuntimeError);
    session.abort_all_if_mpi(code);  // the other processes may be waiting for this one in a collective
    return code;
  }
}
#endif

}  // namespace

}  // namespace bcsr24::spmm_run

int main(int argc, char** argv) {
  using namespace bcsr24::spmm_run;
  CLI::App app{"", kProgram};
  Options options;
  return bcsr24::apps::run_main(
      app, argc, argv, [&](CLI::App& a) { add_options(a, options); },
      [&] {
        validate(app, options);
#ifdef BCSR24_HAS_NCCL
        if (options.distributed()) return run_distributed_mode(options);
#endif
        return run(options);
      });
}
