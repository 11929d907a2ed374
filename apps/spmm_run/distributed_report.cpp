// The report of spmm_run's distributed mode on rank 0 (distributed_results.hpp): per stage the slowest rank's times,
// per rank its share and its figures, the single-GPU baseline beside them, and the text form.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "distributed_results.hpp"
#include "text_report.hpp"

namespace bcsr24::spmm_run::dist {

namespace {

using json = nlohmann::ordered_json;
using bench::format;
using bench::human_bytes;
using bench::summarize;
using bench::Timings;

json timings_json(const Timings& t) {
  return {{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"max_ms", t.max_ms}};
}

json outcome_json(const std::optional<CheckOutcome>& outcome) { return outcome ? outcome->fields : json(nullptr); }

/// Per stage and run: the slowest rank (the product is as slow as its slowest rank); then over the runs. And each
/// rank's own median per stage.
struct StageFigures {
  std::array<Timings, kStages.size()> stages;
  std::vector<std::array<double, kStages.size()>> rank_medians;
};

StageFigures stage_figures(const RootResults& results, std::size_t reps) {
  const std::size_t ranks = results.stats.size();
  StageFigures f;
  f.rank_medians.resize(ranks);
  for (std::size_t s = 0; s < kStages.size(); ++s) {
    std::vector<double> slowest(reps, 0.0);
    for (std::size_t r = 0; r < ranks; ++r) {
      const auto first = results.ms[r].begin() + static_cast<std::ptrdiff_t>(s * reps);
      const std::vector<double> mine(first, first + static_cast<std::ptrdiff_t>(reps));
      for (std::size_t i = 0; i < reps; ++i) slowest[i] = std::max(slowest[i], mine[i]);
      f.rank_medians[r][s] = summarize(mine).median_ms;
    }
    f.stages[s] = summarize(slowest);
  }
  return f;
}

json rank_json(const RankStats& st, const std::array<double, kStages.size()>& rank_medians) {
  json medians = json::object();
  for (std::size_t s = 0; s < kStages.size(); ++s) medians[kStages[s].name] = rank_medians[s];
  return {{"rank", st.rank},
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
          {"median_ms", medians}};
}

/// The baseline's section: its times and memory where it ran, why not where it was skipped, null where not asked.
json baseline_json(const Baseline& baseline, const std::optional<Timings>& single, double useful_flops,
                   const std::optional<CheckOutcome>& check) {
  if (baseline.ran)
    return {{"device", baseline.device},
            {"device_name", baseline.device_name},
            {"median_ms", single->median_ms},
            {"min_ms", single->min_ms},
            {"max_ms", single->max_ms},
            {"tflops_useful", single->median_ms > 0 ? useful_flops / (single->median_ms * 1e-3) * 1e-12 : 0.0},
            {"operator_bytes", baseline.operator_bytes},
            {"plan_bytes", baseline.plan_bytes},
            {"device_bytes", baseline.operator_bytes + baseline.plan_bytes},
            {"check", outcome_json(check)}};
  if (!baseline.skipped_reason.empty())
    return {{"device", baseline.device},
            {"device_name", baseline.device_name},
            {"skipped_reason", baseline.skipped_reason}};
  return nullptr;
}

/// The text form of a report (make_report's JSON, and what it was made from).
void print_report(const json& report, const Session& session, const DistributedJob& job, const CheckFunction& check,
                  const RootResults& results, const StageFigures& figures, const Baseline& baseline,
                  const std::optional<Timings>& single, const std::optional<CheckOutcome>& distributed_check,
                  const std::optional<CheckOutcome>& baseline_check) {
  const std::size_t ranks = results.stats.size();
  const bool f32_b = fp32_b(job);
  const double all_ms = figures.stages[0].median_ms;
  const double exposed_ms = report["exposed_communication_ms"].get<double>();
  const std::int64_t exchanged_bytes = report["bytes_exchanged_per_product"].get<std::int64_t>();
  const std::int64_t max_rank_bytes = report["max_rank_device_bytes"].get<std::int64_t>();
  const std::int64_t single_bytes = baseline.ran ? baseline.operator_bytes + baseline.plan_bytes : 0;
  std::cout << "\ndistributed " << ranks << " ranks, one GPU each, "
            << (session.launch() == Launch::threads
                    ? "one thread per rank in this process (ncclCommInitAll)"
                    : "one MPI process per rank (ncclCommInitRank)")
            << ", NCCL " << report["nccl_version"].get<std::string>() << "\n"
            << "            rows by " << report["partition"].get<std::string>() << ": "
            << report["halo_rows"].get<std::int64_t>() << " halo rows in all, largest rank "
            << format("%.3f", report["nnz_imbalance"].is_null() ? 0.0 : report["nnz_imbalance"].get<double>())
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
    std::printf("%-16s %10.4f %10.4f %10.4f\n", kStages[s].name, figures.stages[s].median_ms,
                figures.stages[s].min_ms, figures.stages[s].max_ms);
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
            << (single ? ", one GPU " + format("%.4g", report["baseline"]["tflops_useful"].get<double>())
                       : std::string())
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
}

}  // namespace

json make_report(const Session& session, const DistributedJob& job, const CheckFunction& check,
                 const RootResults& results, const Baseline& baseline, const std::string& nccl_version) {
  const std::size_t ranks = results.stats.size();
  const StageFigures figures = stage_figures(results, static_cast<std::size_t>(job.reps));
  const double all_ms = figures.stages[0].median_ms;
  const double exposed_ms = std::max(0.0, all_ms - figures.stages[1].median_ms - figures.stages[3].median_ms);
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
    per_rank.push_back(rank_json(st, figures.rank_medians[r]));
  }

  json stages = json::object();
  for (std::size_t s = 0; s < kStages.size(); ++s) stages[kStages[s].name] = timings_json(figures.stages[s]);
  stages["all"]["tflops_useful"] = all_ms > 0 ? useful_flops / (all_ms * 1e-3) * 1e-12 : 0.0;

  std::optional<Timings> single;
  if (baseline.ran) single = summarize(baseline.ms);
  const std::int64_t single_bytes = baseline.ran ? baseline.operator_bytes + baseline.plan_bytes : 0;
  json report = {
      {"launch", session.launch() == Launch::threads ? "threads" : "mpi"},
      {"ranks", ranks},
      {"nccl_version", nccl_version},
      {"n", job.n},
      {"input", fp32_b(job) ? "f32" : "f16"},
      {"output", "f32"},
      {"warmup", job.warmup},
      {"reps", job.reps},
      {"flush_l2", job.flush_l2},
      {"row_partition", results.row_offsets},
      {"partition", partition_method_name(results.partition)},
      {"halo_rows", halo_rows},
      {"nnz_imbalance", all_nnz > 0 ? json(double(max_rank_nnz) * double(ranks) / double(all_nnz)) : json(nullptr)},
      {"stages", stages},
      {"exposed_communication_ms", exposed_ms},
      {"bytes_exchanged_per_product", exchanged_bytes},
      {"max_rank_device_bytes", max_rank_bytes},
      {"check", outcome_json(distributed_check)},
      {"baseline", baseline_json(baseline, single, useful_flops, baseline_check)},
      {"speedup", single && all_ms > 0 ? json(single->median_ms / all_ms) : json(nullptr)},
      {"memory_ratio",
       single && single_bytes > 0 ? json(double(max_rank_bytes) / double(single_bytes)) : json(nullptr)},
      {"per_rank", per_rank}};
  if (job.text_output)
    print_report(report, session, job, check, results, figures, baseline, single, distributed_check, baseline_check);
  return report;
}

}  // namespace bcsr24::spmm_run::dist
