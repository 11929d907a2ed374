// GPU benchmark: every bcsr24 kernel and the cuSPARSE/cuBLAS baselines on one matrix, timed in one run.
//
// Method (gpu_timing.hpp): CUDA events around each multiply only; warm-up runs first; L2 flushed (a read of
// twice its size, leaving no dirty lines behind) before every timed run so that matrices smaller than L2 are not measured from cache; median, min
// and max over --reps runs. Each method's output is checked against a float64 product (cuSPARSE CSR fp64
// on the same device) and its relative Frobenius error is printed next to its time: against the product with
// the B it was given (fp16 B: the fp16 values; bf16 B: the bf16 values; fp32 B: the full fp32 values).
//
// Precision variants, timed in the same run as the default: auto_f32b (fp16 A, fp32 B), auto_bf16 (bf16 A and B),
// auto_bf16_f32b, auto_split (split A, fp32 B) and auto_matrix_scale (fp16 with one scale for the whole matrix
// instead of one per row). --precision and --b-type set the precision of the plain methods.
//
// auto is measured by default (--tuning measure, Tuning::measure: the cost model's best candidates timed on the
// matrix, the fastest kept, within --tuning-budget) and its tuning printed: the budget and where it came from, each
// candidate's predicted and measured time; --tuning model, or the method auto_model, is the cost model's plan
// alone, and auto_tiles, auto_hybrid, auto_csr, auto_vectors and auto_hybrid_vectors force the bands' paths, so the
// candidates can be timed one by one.
//
// The physical limit beside every bcsr24 time: the DRAM bytes its plan moves per product (the bytes of A the plan
// reads, B once, C once), the rate that is at the median time, and its share of the device's copy bandwidth,
// measured once per process (cudaMemcpy between two buffers of 256 MiB, gpu_timing.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>

#include "bcsr24/device.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24_experimental/plan_knobs.hpp"
#include "bcsr24_testkit/metrics.hpp"
#include "bcsr24_testkit/splitmix64.hpp"
#include "cli.hpp"
#include "cuda_resources.hpp"
#include "cusparse_baselines.hpp"
#include "gpu_timing.hpp"
#include "matrix_source.hpp"

namespace {

using namespace bcsr24;

using experimental::BandGroups;
using experimental::BandPaths;
using experimental::PlanKnobs;
using experimental::TilePipeline;
#define BENCH_CUDA(call) bench::check_cuda((call), #call, __FILE__, __LINE__)

using bench::DeviceBuffer;
using bench::summarize;

using apps::parse_int_list;

/// What a bcsr24 method multiplies: the matrix's precision and scaling, and B's element type.
struct Variant {
  Precision precision = Precision::fp16;
  ScalingPolicy scaling = ScalingPolicy::per_row;
  InputType input = InputType::automatic;
};

/// The variant a method name selects (the suffix), or `plain` for the plain kernel names.
bool variant_of(const std::string& method, const Variant& plain, Variant& out, std::string& base) {
  struct Suffix { const char* text; Variant v; };
  const Suffix suffixes[] = {
      {"_bf16_f32b", {Precision::bf16, ScalingPolicy::per_row, InputType::f32}},  // before "_f32b": longest first
      {"_f32b", {Precision::fp16, ScalingPolicy::per_row, InputType::f32}},
      {"_bf16", {Precision::bf16, ScalingPolicy::per_row, InputType::bf16}},
      {"_split", {Precision::split, ScalingPolicy::per_row, InputType::f32}},
      {"_matrix_scale", {Precision::fp16, ScalingPolicy::automatic, InputType::f16}},
  };
  for (const Suffix& x : suffixes) {
    const std::string suffix = x.text;
    if (method.size() > suffix.size() && method.compare(method.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out = x.v;
      base = method.substr(0, method.size() - suffix.size());
      return true;
    }
  }
  out = plain;
  base = method;
  return false;
}

/// The method without its plan-option suffix (the last one: "auto_f32b_deep"), and the options it selects:
/// "_whole" runs every band as one block (PlanKnobs::split_long_bands off), "_standard" and "_deep" force the
/// tile pipeline depth (PlanKnobs::tile_pipeline), "_grouped" and "_ungrouped" switch band groups on or off
/// (PlanKnobs::band_groups), "_tiles", "_hybrid", "_csr", "_vectors" (every band as narrow vectors) and
/// "_hybrid_vectors" (the low-reuse bands as narrow vectors) force the bands' paths (PlanKnobs::paths), and
/// "_model" makes the plan by the cost model alone (Tuning::model; otherwise `tuning` stays as given: --tuning).
std::string strip_plan_suffix(const std::string& method, PlanKnobs& options, Tuning& tuning) {
  struct Suffix {
    const char* text;
    bool split_long_bands;
    TilePipeline pipeline;
    BandGroups groups;
    BandPaths paths;
    Tuning tuning;
  };
  constexpr TilePipeline kAutoPipe = TilePipeline::automatic;
  constexpr BandGroups kAutoGroups = BandGroups::automatic;
  constexpr BandPaths kAutoPaths = BandPaths::automatic;
  const Suffix suffixes[] = {{"_whole", false, kAutoPipe, kAutoGroups, kAutoPaths, Tuning::measure},
                             {"_standard", true, TilePipeline::standard, kAutoGroups, kAutoPaths, Tuning::measure},
                             {"_deep", true, TilePipeline::deep, kAutoGroups, kAutoPaths, Tuning::measure},
                             {"_ungrouped", true, kAutoPipe, BandGroups::off, kAutoPaths, Tuning::measure},
                             {"_grouped", true, kAutoPipe, BandGroups::on, kAutoPaths, Tuning::measure},
                             {"_tiles", true, kAutoPipe, kAutoGroups, BandPaths::tiles, Tuning::measure},
                             {"_hybrid", true, kAutoPipe, kAutoGroups, BandPaths::hybrid, Tuning::measure},
                             {"_csr", true, kAutoPipe, kAutoGroups, BandPaths::csr, Tuning::measure},
                             // before "_vectors": the longer suffix first
                             {"_hybrid_vectors", true, kAutoPipe, kAutoGroups, BandPaths::hybrid_vectors,
                              Tuning::measure},
                             {"_vectors", true, kAutoPipe, kAutoGroups, BandPaths::vectors, Tuning::measure},
                             {"_model", true, kAutoPipe, kAutoGroups, kAutoPaths, Tuning::model}};
  for (const Suffix& x : suffixes) {
    const std::string suffix = x.text;
    if (method.size() > suffix.size() && method.compare(method.size() - suffix.size(), suffix.size(), suffix) == 0) {
      options.split_long_bands = x.split_long_bands;
      options.tile_pipeline = x.pipeline;
      options.band_groups = x.groups;
      options.paths = x.paths;
      if (x.tuning == Tuning::model) tuning = Tuning::model;
      return method.substr(0, method.size() - suffix.size());
    }
  }
  return method;
}

/// A plan in a few words for the CSV (no double quotes): what runs where, and how it was chosen.
std::string plan_summary(const PlanReport& r) {
  const experimental::PlanDiagnostics& d = r.diagnostics;
  std::string text = std::to_string(r.tile_bands) + " tile bands, " + std::to_string(r.csr_bands) + " CSR bands";
  if (r.vector_bands > 0) text += ", " + std::to_string(r.vector_bands) + " vector bands";
  if (d.band_groups > 0) text += ", " + std::to_string(d.band_groups) + " band groups";
  if (d.split_bands > 0) text += ", " + std::to_string(d.split_bands) + " split";
  if (d.deep_tile_pipeline) text += ", deep pipeline";
  text += std::string("; ") + tuning_name(r.tuning);
  for (const experimental::PlanCandidate& c : d.candidates)
    if (c.chosen) text += ": " + c.description;
  for (char& ch : text)
    if (ch == '"') ch = '\'';
  return text;
}

/// Operators of one matrix: the plain one (--precision, --layout, --reorder), the precision variants' (made when a
/// method first needs them) and the thesis layout's (aligned tiles, file order) for split_aligned.
class Operators {
 public:
  Operators(const CsrMatrix& csr, const OperatorOptions& plain) : csr_(csr), plain_options_(plain) {
    plain_.emplace(SparseOperator::from_csr(csr, plain));
  }
  const SparseOperator& plain() const { return *plain_; }
  /// A variant's operator: the plain one when precision and scaling agree.
  const SparseOperator& variant(const Variant& v) {
    if (v.precision == plain_options_.precision && v.scaling == plain_options_.scaling) return *plain_;
    for (auto& [key, op] : variants_)
      if (key.precision == v.precision && key.scaling == v.scaling) return op;
    OperatorOptions options = plain_options_;
    options.precision = v.precision;
    options.scaling = v.scaling;
    SparseOperator op = SparseOperator::from_csr(csr_, options);
    const Fp16Scaling& sc = op.scaling();
    std::printf("variant %s%s: %lld values flushed (largest %.2e of its row's largest), stored A relative error "
                "max %.2e, Frobenius %.2e\n",
                precision_name(v.precision), v.scaling == ScalingPolicy::automatic ? " (one scale for the matrix)" : "",
                static_cast<long long>(sc.flushed_count), sc.max_flushed_relative, sc.max_relative_error,
                sc.frobenius_relative_error);
    variants_.emplace_back(v, std::move(op));
    return variants_.back().second;
  }
  /// The thesis layout in fp16 (the first call converts).
  const SparseOperator& thesis() {
    if (!thesis_) {
      OperatorOptions options;
      options.layout = TileLayout::aligned;
      options.reorder = Reordering::none;
      thesis_.emplace(SparseOperator::from_csr(csr_, options));
    }
    return *thesis_;
  }

 private:
  const CsrMatrix& csr_;
  OperatorOptions plain_options_;
  std::optional<SparseOperator> plain_, thesis_;
  std::deque<std::pair<Variant, SparseOperator>> variants_;  // a deque: appending moves no operator
};

/// The "| n | plan of auto | ..." row: how the automatic plan splits the work.
void print_plan_row(std::int32_t n, const std::string& method, const PlanReport& r) {
  const experimental::PlanDiagnostics& d = r.diagnostics;
  const double nnz = double(std::max<std::int64_t>(1, r.sparse24_nnz + r.dense_nnz + r.csr_nnz + r.vector_nnz));
  const std::int64_t tiles = std::max<std::int64_t>(1, d.sparse24_tiles + d.dense_tiles);
  char pipeline[160];
  if (d.band_groups > 0)
    std::snprintf(pipeline, sizeof pipeline, "%d band groups (%d stages per block), %.2f B-block loads per tile",
                  d.band_groups, d.tile_stages, double(d.band_group_steps) / double(tiles));
  else
    std::snprintf(pipeline, sizeof pipeline, "tile pipeline %s (%d stage%s per warp)",
                  d.deep_tile_pipeline ? "deep" : "standard", d.tile_stages, d.tile_stages == 1 ? "" : "s");
  std::printf("| %d | plan of %s | %d bands on tiles (%d split over %d blocks), %d on CSR, %d on vectors: nonzeros "
              "%.1f%% 2:4 tiles, %.1f%% dense tiles, %.1f%% CSR, %.1f%% vectors; %s; %s | | | | | | | | | | |\n",
              n, method.c_str(), r.tile_bands, d.split_bands, d.split_parts, r.csr_bands, r.vector_bands,
              100.0 * r.sparse24_nnz / nnz, 100.0 * r.dense_nnz / nnz, 100.0 * r.csr_nnz / nnz,
              100.0 * r.vector_nnz / nnz, pipeline, r.reason.c_str());
}

/// The "| n | tuning of auto | ..." row of a measured plan: how it was chosen, and every candidate's predicted and
/// measured time. Nothing for a plan the cost model made without being asked to measure.
void print_tuning_row(std::int32_t n, const std::string& method, const PlanReport& r) {
  const experimental::PlanDiagnostics& d = r.diagnostics;
  if (r.tuning_reason.empty() && d.candidates.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < d.candidates.size(); ++i) {
    const experimental::PlanCandidate& c = d.candidates[i];
    char item[400];
    if (c.measured_us >= 0)
      std::snprintf(item, sizeof item, "%s%zu. %s%s: predicted %.1f us, measured %.1f us (%d runs, built in %.2f ms)%s%s",
                    i ? "; " : "", i + 1, c.chosen ? "[chosen] " : "", c.description.c_str(), c.predicted_us,
                    c.measured_us, c.runs, c.build_ms, c.note.empty() ? "" : ", ", c.note.c_str());
    else
      std::snprintf(item, sizeof item, "%s%zu. %s%s: predicted %.1f us, %s", i ? "; " : "", i + 1,
                    c.chosen ? "[chosen] " : "", c.description.c_str(), c.predicted_us,
                    c.note.empty() ? "not measured" : c.note.c_str());
    list += item;
  }
  char budget[320] = "";
  if (r.tuning_budget_ms > 0)
    std::snprintf(budget, sizeof budget, " of a budget of %.1f ms (%s)", r.tuning_budget_ms,
                  r.tuning_budget_source.c_str());
  char batch[64] = "";
  if (d.tuning_batch > 1) std::snprintf(batch, sizeof batch, ", %d products per timed run", d.tuning_batch);
  std::printf("| %d | tuning of %s | %s, %.1f ms%s (drafts %.2f, builds %.2f, loading %.2f, setup %.2f, warm-up %.2f, "
              "timed runs %.2f ms%s): %s%s%s | | | | | | | | | | |\n",
              n, method.c_str(), tuning_name(r.tuning), r.tuning_ms, budget, d.tuning_drafting_ms, d.tuning_building_ms,
              d.tuning_loading_ms, d.tuning_setup_ms, d.tuning_warmup_ms, d.tuning_timing_ms, batch,
              r.tuning_reason.c_str(), list.empty() ? "" : "; ", list.c_str());
}

/// The command line.
struct Settings {
  apps::MatrixSource source;
  apps::StorageOptions storage;
  std::string name, n_list = "8,32,128", methods_text = "all", csv_path, b_type_text = "auto";
  int reps = 20, warmup = 5;
  apps::TuningOptions tuning;  // --tuning, --tuning-budget: how auto and its variants choose (not _model)
  bool no_check = false, no_flush = false;
};

void add_options(CLI::App& app, Settings& s) {
  s.source.add_options(app, apps::MatrixSource::FileOption::named, "seed for the synthetic matrix and B");
  app.add_option("--name", s.name, "label in the output (default: file stem or generator name)");
  app.add_option("--n", s.n_list, "comma-separated widths of B")->capture_default_str();
  app.add_option("--methods", s.methods_text,
                 "comma list of auto,split_pipelined,csr_cuda_cores,split_aligned,"
                 "cusparse_csr_f16,cusparse_csr_f32,cusparse_bsr16_f16,cusparse_bsr16_f32,cublas_dense,"
                 "cusparse_spmv_f16,cusparse_spmv_f32, or all (all but the SpMV ones); "
                 "a bcsr24 kernel with the suffix _whole runs every band as one block (PlanKnobs::split_long_bands "
                 "off), e.g. auto_whole; _standard and _deep force the tile pipeline depth of the fp32-B modes "
                 "(PlanKnobs::tile_pipeline), e.g. auto_f32b_deep; _grouped and _ungrouped switch band groups on or "
                 "off (PlanKnobs::band_groups), e.g. auto_grouped; _tiles, _hybrid, _csr, _vectors and _hybrid_vectors "
                 "force the bands' paths of auto (PlanKnobs::paths; _vectors: every band as narrow vectors on "
                 "tensor cores, _hybrid_vectors: the low-reuse bands), e.g. auto_vectors; _model makes auto's plan by the cost model alone (plain auto measures its "
                 "candidates, Tuning::measure); _f32b, _bf16, _bf16_f32b, _split and _matrix_scale select a "
                 "precision variant; cusparse_spmv_f16 and cusparse_spmv_f32 (cusparseSpMV) run at n = 1 only")
      ->capture_default_str();
  s.storage.add_to(app, false);
  app.add_option("--b-type", s.b_type_text,
                 "element type of B for the plain bcsr24 methods: auto (the matrix's 16-bit type; fp32 for split), "
                 "fp16, bf16 or fp32")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "fp16", "bf16", "fp32"}));
  app.add_option("--reps", s.reps, "timed runs per method (median reported)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup", s.warmup, "untimed runs first")->capture_default_str();
  s.tuning.add_to(app);
  app.add_option("--csv", s.csv_path, "append one row per (n, method) to this CSV file");
  app.add_flag("--no-check", s.no_check, "skip the float64 reference check");
  app.add_flag("--no-flush", s.no_flush, "do not flush L2 between timed runs");
}

int run(Settings& s) {
  s.source.validate();
  s.tuning.validate();
  const DeviceInfo dev_info = query_device();
  if (!dev_info.available) throw NotSupported("no usable GPU: " + dev_info.reason);
  if (s.name.empty()) s.name = s.source.name();

  const bench::Stopwatch prep_watch;
  const CsrMatrix csr = s.source.load();
  Variant plain;
  plain.precision = precision_from_name(s.storage.precision);
  plain.input = s.b_type_text == "fp16"   ? InputType::f16
                : s.b_type_text == "bf16" ? InputType::bf16
                : s.b_type_text == "fp32" ? InputType::f32
                                          : InputType::automatic;
  OperatorOptions plain_options = s.storage.to_operator_options();
  Operators operators(csr, plain_options);
  const SparseOperator& op = operators.plain();
  const TileCensus& census = op.census();
  const LayoutReport& layout_report = op.layout_report();
  const Fp16Scaling& scaling = op.scaling();
  const double prep_s = prep_watch.seconds();
  const bool chosen_is_thesis_layout = census.layout == TileLayout::aligned && census.reordering == Reordering::none;

  // split_aligned: the default kernel on the thesis layout (aligned tiles, file order), timed in the same run as
  // the chosen layout so the two compare directly; listed only when the chosen layout differs.
  std::vector<std::string> methods =
      s.methods_text == "all"
          ? std::vector<std::string>{"auto", "split_pipelined", "csr_cuda_cores", "split_aligned", "cusparse_csr_f16",
                                     "cusparse_csr_f32", "cusparse_bsr16_f16", "cusparse_bsr16_f32", "cublas_dense"}
          : apps::split_list(s.methods_text);
  if (chosen_is_thesis_layout)
    methods.erase(std::remove(methods.begin(), methods.end(), "split_aligned"), methods.end());

  std::printf("device: %s (sm_%d, %d SMs, L2 %lld MiB)\n", dev_info.name.c_str(), dev_info.compute_capability,
              dev_info.multiprocessors, static_cast<long long>(dev_info.l2_bytes >> 20));
  // The physical limit every bcsr24 time is compared with ("of copy"): measured once, before anything is uploaded.
  const bench::CopyBandwidth& copy = bench::copy_bandwidth();
  if (copy.bytes_per_s > 0)
    std::printf("copy bandwidth: %.0f GB/s (cudaMemcpy device to device, 2 x %zu MiB, median of %d, bytes read + "
                "written%s%s)\n",
                copy.bytes_per_s * 1e-9, copy.buffer_bytes >> 20, copy.runs, copy.note.empty() ? "" : "; ",
                copy.note.c_str());
  else
    std::printf("copy bandwidth: not measured (%s)\n", copy.note.c_str());
  std::printf("matrix: %s  %d x %d  nnz %lld  (read+convert %.2f s)\n", s.name.c_str(), csr.rows, csr.cols,
              static_cast<long long>(csr.nnz()), prep_s);
  std::printf("precision: %s; rows scaled by 2^%d .. 2^%d; %lld values flushed (largest %.2e of its row's "
              "largest); stored A relative error max %.2e, Frobenius %.2e\n",
              precision_name(op.precision()), scaling.min_row_exponent, scaling.max_row_exponent,
              static_cast<long long>(scaling.flushed_count), scaling.max_flushed_relative, scaling.max_relative_error,
              scaling.frobenius_relative_error);
  std::printf("tiles: %lld dense, %lld 2:4 (%.1f%%), %lld zero; %.1f nnz/tile; lists %.1f MiB; scale 2^%d\n",
              static_cast<long long>(census.dense_tiles), static_cast<long long>(census.sparse24_tiles),
              100.0 * census.sparse24_share(), static_cast<long long>(census.zero_tiles), census.nnz_per_tile(),
              double(census.sparse24_bytes + census.dense_bytes) / (1 << 20), scaling.exponent);
  std::printf("layout: %s, %s (%s); thesis layout: %lld tiles, %.1f%% 2:4, %.1f MiB; preprocessing %.3f s "
              "(reorder %.3f s, baseline count %.3f s, build %.3f s)\n",
              layout_name(census.layout), reordering_name(census.reordering), layout_report.reason.c_str(),
              static_cast<long long>(layout_report.baseline_stored_tiles),
              layout_report.baseline_stored_tiles > 0
                  ? 100.0 * double(layout_report.baseline_sparse24_tiles) / double(layout_report.baseline_stored_tiles)
                  : 0.0,
              double(layout_report.baseline_bytes) / (1 << 20), layout_report.total_seconds,
              layout_report.reorder_seconds, layout_report.baseline_seconds, layout_report.pack_seconds);

  std::size_t free_bytes = 0, total_bytes = 0;
  BENCH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  bench::Baselines baselines(csr, std::int64_t(free_bytes / 4), std::int64_t(free_bytes / 4));
  std::unique_ptr<bench::L2Flush> flush;
  if (!s.no_flush)
    flush = std::make_unique<bench::L2Flush>(std::size_t(std::max<std::int64_t>(dev_info.l2_bytes, 1 << 20)) * 2);
  const bench::CudaStream stream_owner;
  const cudaStream_t stream = stream_owner.get();

  // The CSV's columns: rows are appended to a file of the same columns only (a file an older bench_spmm wrote has
  // fewer; readers take the columns by name from the header).
  const std::string csv_header =
      "matrix,rows,cols,nnz,n,method,median_ms,min_ms,max_ms,tflops_thesis,tflops_useful,bandwidth_gbs,"
      "floor_fraction,rel_error,dense_tiles,sparse24_tiles,zero_tiles,sparse24_share,device,layout,"
      "predicted_us,tuning_ms,plan,plan_bytes,plan_gbs,copy_fraction,copy_gbs,tuning_budget_ms";
  const bool new_csv = !s.csv_path.empty() && (!std::filesystem::exists(s.csv_path) ||
                                               std::filesystem::file_size(s.csv_path) == 0);
  std::ofstream csv;
  if (!s.csv_path.empty()) {
    if (!new_csv) {
      std::ifstream existing(s.csv_path);
      std::string first_line;
      std::getline(existing, first_line);
      if (first_line != csv_header)
        throw apps::UsageError("--csv " + s.csv_path + " has other columns (written by another version of "
                               "bench_spmm?); give a new file");
    }
    csv.open(s.csv_path, std::ios::app);
    if (!csv) throw Error("cannot open " + s.csv_path);
    if (new_csv) csv << csv_header << '\n';
  }

  std::printf("\n| n | method | median ms | min ms | max ms | TFLOPS (thesis) | TFLOPS (useful) | GB/s | floor/t | "
              "plan MiB | plan GB/s | of copy | rel error |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  const std::int64_t k_pad = (std::int64_t(csr.cols) + 15) / 16 * 16;
  const std::int64_t m_pad = (std::int64_t(csr.rows) + 15) / 16 * 16;
  for (std::int32_t n : parse_int_list(s.n_list)) {
    if (n < 1) throw apps::UsageError("--n values must be >= 1");
    // B in fp16, fp32 and fp64 (the same fp16 values), rows past cols zero; C with rows rounded up to 16. The
    // precision variants get the unrounded fp32 values (b_full) or their bf16 rounding, with references of their own.
    SplitMix64 random{s.source.seed * 1000003 + std::uint64_t(n)};
    std::vector<fp16_t> b16(std::size_t(k_pad) * n, 0), b_bf16(b16.size(), 0);
    std::vector<float> b32(b16.size(), 0.0f), b_full(b16.size(), 0.0f);
    std::vector<double> b64(b16.size(), 0.0);
    for (std::int64_t i = 0; i < std::int64_t(csr.cols) * n; ++i) {
      const double v = random.symmetric_unit();
      b16[i] = double_to_fp16(v);
      b32[i] = fp16_to_float(b16[i]);
      b64[i] = b32[i];
      b_full[i] = float(v);
      b_bf16[i] = double_to_bf16(b_full[i]);
    }
    const auto upload = [](const auto& host) {
      DeviceBuffer device(std::max<std::size_t>(host.size() * sizeof(host[0]), 16));
      BENCH_CUDA(cudaMemcpy(device.get(), host.data(), host.size() * sizeof(host[0]), cudaMemcpyHostToDevice));
      return device;
    };
    const DeviceBuffer d_b16 = upload(b16), d_b32 = upload(b32), d_b64 = upload(b64), d_b_full = upload(b_full),
                       d_b_bf16 = upload(b_bf16);
    DeviceBuffer d_c(std::size_t(m_pad) * n * 4);
    // The float64 product with the exact values of a B (computed the first time a method is given that B).
    struct Reference {
      std::vector<double> c;
      double norm = 0;
      bool ready = false;
    };
    Reference ref_fp16, ref_full, ref_bf16;
    auto reference_for = [&](Reference& r, auto value_of) -> const Reference& {
      if (r.ready) return r;
      std::vector<double> exact(b64.size(), 0.0);
      for (std::int64_t i = 0; i < std::int64_t(csr.cols) * n; ++i) exact[std::size_t(i)] = value_of(std::size_t(i));
      const DeviceBuffer d_exact = upload(exact);
      r.c = baselines.reference(n, static_cast<const double*>(d_exact.get()));
      for (double v : r.c) r.norm += v * v;
      r.norm = std::sqrt(r.norm);
      r.ready = true;
      return r;
    };
    const SpmmCost chosen_cost = spmm_cost(census, csr.rows, csr.cols, n);

    for (const std::string& method : methods) {
      std::function<void(cudaStream_t)> run;
      std::unique_ptr<SpmmPlan> plan;
      Variant variant;
      const Reference* method_ref = nullptr;  // null: the fp16-B reference
      const bool thesis_layout_method = method == "split_aligned";
      const TileCensus& method_census = thesis_layout_method ? operators.thesis().census() : census;
      const SpmmCost cost = thesis_layout_method ? spmm_cost(method_census, csr.rows, csr.cols, n) : chosen_cost;
      std::string base;
      PlanKnobs knobs;
      PlanOptions defaults;
      s.tuning.apply(defaults);
      Tuning tuning = defaults.tuning;
      variant_of(strip_plan_suffix(method, knobs, tuning), plain, variant, base);
      if (thesis_layout_method) {
        plan = std::make_unique<SpmmPlan>(operators.thesis().make_plan(n, KernelKind::split_pipelined));
        run = [&, n](cudaStream_t st) {
          plan->run(static_cast<const fp16_t*>(d_b16.get()), n, d_c.get(), n, 1.0f, 0.0f, reinterpret_cast<Stream>(st));
        };
      } else if (base == "split_pipelined" || base == "csr_cuda_cores" || base == "auto") {
        PlanOptions plan_options;
        plan_options.input = variant.input;
        s.tuning.apply(plan_options);
        plan_options.tuning = tuning;  // --tuning, or model for a _model method
        const SparseOperator& variant_op = operators.variant(variant);
        try {
          plan = std::make_unique<SpmmPlan>(
              experimental::make_plan(variant_op, n, kernel_from_name(base), plan_options, knobs));
        } catch (const InvalidArgument& e) {  // a forced choice this matrix cannot run (e.g. _csr, _grouped)
          std::printf("| %d | %s | n/a: %s | | | | | | | | | | |\n", n, method.c_str(), e.what());
          continue;
        }
        if (base == "auto") {
          print_plan_row(n, method, plan->report());
          print_tuning_row(n, method, plan->report());
        }
        const InputType input = plan->input();
        if (input == InputType::f32) {
          if (!s.no_check) method_ref = &reference_for(ref_full, [&](std::size_t i) { return double(b_full[i]); });
          run = [&, n](cudaStream_t st) {
            plan->run(static_cast<const float*>(d_b_full.get()), n, static_cast<float*>(d_c.get()), n, 1.0f, 0.0f,
                      reinterpret_cast<Stream>(st));
          };
        } else {
          if (input == InputType::bf16 && !s.no_check)
            method_ref = &reference_for(ref_bf16, [&](std::size_t i) { return double(bf16_to_float(b_bf16[i])); });
          const void* b_given = input == InputType::bf16 ? d_b_bf16.get() : d_b16.get();
          run = [&, n, b_given](cudaStream_t st) {
            plan->run(static_cast<const fp16_t*>(b_given), n, d_c.get(), n, 1.0f, 0.0f, reinterpret_cast<Stream>(st));
          };
        }
      } else {
        bench::Baseline which{};
        bool known = false;
        for (bench::Baseline b : bench::all_baselines())
          if (method == bench::baseline_name(b)) {
            which = b;
            known = true;
          }
        if (!known) throw apps::UsageError("unknown method " + method);
        std::string why;
        if (!baselines.prepare(which, n, d_b16.get(), static_cast<const float*>(d_b32.get()),
                               static_cast<float*>(d_c.get()), why)) {
          std::printf("| %d | %s | n/a: %s | | | | | | | | | | |\n", n, method.c_str(), why.c_str());
          continue;
        }
        run = [&, which](cudaStream_t st) { baselines.run(which, st); };
      }
      // Correctness first: poison C (all-ones bytes are NaN), run once, compare with float64.
      double rel = std::numeric_limits<double>::quiet_NaN();
      if (!s.no_check) {
        if (!method_ref) method_ref = &reference_for(ref_fp16, [&](std::size_t i) { return b64[i]; });
        BENCH_CUDA(cudaMemset(d_c.get(), 0xff, std::size_t(m_pad) * n * 4));
        run(stream);
        BENCH_CUDA(cudaStreamSynchronize(stream));
        std::vector<float> c(std::size_t(csr.rows) * n);
        BENCH_CUDA(cudaMemcpy(c.data(), d_c.get(), c.size() * 4, cudaMemcpyDeviceToHost));
        double err = 0;
        for (std::size_t i = 0; i < c.size(); ++i)
          err += (double(c[i]) - method_ref->c[i]) * (double(c[i]) - method_ref->c[i]);
        rel = method_ref->norm > 0 ? std::sqrt(err) / method_ref->norm : std::sqrt(err);
      }
      const bench::Timings t = summarize(bench::time_gpu_runs(run, s.warmup, s.reps, flush.get(), stream));
      const double sec = t.median_ms * 1e-3;
      const double thesis = cost.thesis_flops / sec * 1e-12, useful = cost.useful_flops / sec * 1e-12;
      const double gbs = cost.min_bytes / sec * 1e-9;
      const double floor_frac = (cost.min_bytes / kReferenceBandwidth) / sec;
      // The bytes the plan moves (bcsr24 methods only: a baseline has no plan report) against the copy rate.
      const double plan_bytes = plan ? plan_dram_bytes(plan->report(), csr.rows, csr.cols) : -1.0;
      const double plan_gbs = plan ? plan_bytes / sec * 1e-9 : -1.0;
      const double copy_fraction = plan && copy.bytes_per_s > 0 ? plan_bytes / sec / copy.bytes_per_s : -1.0;
      const auto cell = [](double value, const char* pattern) {
        return value >= 0 ? bench::format(pattern, value) : std::string();
      };
      std::printf("| %d | %s | %.4f | %.4f | %.4f | %.2f | %.3f | %.0f | %.2f | %s | %s | %s | %.2e |\n", n,
                  method.c_str(), t.median_ms, t.min_ms, t.max_ms, thesis, useful, gbs, floor_frac,
                  cell(plan_bytes / double(1 << 20), "%.2f").c_str(), cell(plan_gbs, "%.0f").c_str(),
                  cell(copy_fraction * 100.0, "%.1f%%").c_str(), rel);
      std::fflush(stdout);
      if (csv.is_open())
        csv << s.name << ',' << csr.rows << ',' << csr.cols << ',' << csr.nnz() << ',' << n << ',' << method << ','
            << t.median_ms << ',' << t.min_ms << ',' << t.max_ms << ',' << thesis << ',' << useful << ',' << gbs << ','
            << floor_frac << ',' << rel << ',' << method_census.dense_tiles << ',' << method_census.sparse24_tiles
            << ',' << method_census.zero_tiles << ',' << method_census.sparse24_share() << ',' << '"' << dev_info.name
            << '"' << ','
            << (thesis_layout_method ? "aligned/none"
                                     : std::string(layout_name(census.layout)) + "/" + reordering_name(census.reordering))
            << ',' << (plan ? std::to_string(plan->report().predicted_us) : std::string()) << ','
            << (plan && plan->report().tuning == Tuning::measure ? std::to_string(plan->report().tuning_ms)
                                                                 : std::string())
            << ',' << '"' << (plan ? plan_summary(plan->report()) : std::string()) << '"' << ','
            << cell(plan_bytes, "%.0f") << ',' << cell(plan_gbs, "%.6g") << ',' << cell(copy_fraction, "%.6g") << ','
            << cell(copy.bytes_per_s > 0 ? copy.bytes_per_s * 1e-9 : -1.0, "%.6g") << ','
            << (plan && plan->report().tuning_budget_ms > 0 ? std::to_string(plan->report().tuning_budget_ms)
                                                            : std::string())
            << '\n';
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_spmm: time bcsr24's kernels against cuSPARSE and cuBLAS on one matrix", "bench_spmm"};
  Settings settings;
  return apps::run_main(
      app, argc, argv, [&](CLI::App& a) { add_options(a, settings); }, [&] { return run(settings); });
}
